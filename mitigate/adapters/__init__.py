"""A mitigated judge inside the harnesses people already run, and their judge logs back into mitigate.

One module per harness, each importing its harness only when used: :mod:`~mitigate.adapters.inspect_ai` (a
scorer; eval logs as recorded judgments), :mod:`~mitigate.adapters.deepeval` (a metric),
:mod:`~mitigate.adapters.promptfoo` (a Python assertion; result files as recorded judgments).
:mod:`~mitigate.adapters._common` turns a harness's test case into an item and a judgment into one outcome.
"""
