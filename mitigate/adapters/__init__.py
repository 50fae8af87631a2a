"""A mitigated judge inside the harnesses people already run, and their judge logs back into mitigate.

One module per harness, each importing its harness only when used (install the matching extra):

- :mod:`mitigate.adapters.inspect_ai` (``pip install 'mitigate[inspect]'``): a judge as an
  inspect-ai scorer; inspect eval logs (``.eval`` / ``.json``) as recorded judgments.
- :mod:`mitigate.adapters.deepeval` (``pip install 'mitigate[deepeval]'``): a judge as a DeepEval metric.
- :mod:`mitigate.adapters.promptfoo` (no extra: promptfoo runs it as plain Python): a judge as a
  promptfoo Python assertion; promptfoo result files (``promptfoo eval -o results.json``) as
  recorded judgments.

:mod:`mitigate.adapters._common` holds what they share: turning a harness's test case into an
:class:`~mitigate.data._schema.Item` and a :class:`~mitigate.judge.Judgment` into one outcome
(score, score scaled to 0-1, the judge's raw answer, or the parse failure).
"""
