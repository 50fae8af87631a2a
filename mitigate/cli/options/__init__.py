"""The command line's options, each declared once, in the groups commands compose.

Each command's options are one frozen dataclass (beside the command, e.g.
:class:`mitigate.cli._judge.JudgeOptions`) made of the groups here and its own options; its
fields are the command-line options. :mod:`~mitigate.cli.options._declare` says how an option is
declared once and how a command rewords it (:class:`~mitigate.cli.options._declare.Override`);
building an options value checks every field against its declaration and each group's combination
checks, so a command holds only values that passed, and nothing is loaded or called before.

The groups, by module:

- :mod:`~mitigate.cli.options._task`: the benchmark, criterion and items (:class:`TaskOptions`), the
  training data, the replayed judges;
- :mod:`~mitigate.cli.options._backend`: the judge's LM, its server and limits (:class:`ServerOptions`,
  :class:`BackendOptions`), ``--batch`` (:class:`BatchOptions`), checked against the backend registry;
- :mod:`~mitigate.cli.options._prompt`: the template and its overrides (:class:`PromptOptions`,
  :class:`TemplateOverrides`) and how the judge answers (:class:`AnswerOptions`, with ``--samples``
  :class:`SampledAnswerOptions`, and ``--reducer`` :class:`ReducedAnswerOptions`);
- :mod:`~mitigate.cli.options._run`: the pipeline, concurrency, cache, progress, resuming, the dry run
  (:class:`RunOptions`);
- :mod:`~mitigate.cli.options._results`: ``--out``, the bootstrap and seed (:class:`StatsOptions`), the
  pass threshold (:class:`ThresholdOptions`), the bias probes (:class:`ProbeBattery`);
- :mod:`~mitigate.cli.options._names`: help texts that list what is registered, filled when printed.

Importing this package loads neither pydantic nor the registry (``mitigate --help`` stays fast):
the checks that read the registry (the backend's facts) import it when they run.
"""
