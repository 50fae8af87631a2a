"""The command line's options, each declared once, in the groups commands compose.

Each command's options are one frozen dataclass (beside the command, e.g.
:class:`mitigate.cli.judge.JudgeOptions`) made of the groups here and its own options; its
fields are the command-line options. :mod:`~mitigate.cli.options.declare` says how an option is
declared once and how a command rewords it (:class:`~mitigate.cli.options.declare.Override`);
building an options value checks every field against its declaration and each group's combination
checks, so a command holds only values that passed, and nothing is loaded or called before.

The groups, by module:

- :mod:`~mitigate.cli.options.task`: the benchmark, criterion and items (:class:`TaskOptions`), the
  training data, the replayed judges;
- :mod:`~mitigate.cli.options.backend`: the judge's LM, its server and limits (:class:`ServerOptions`,
  :class:`BackendOptions`), ``--batch`` (:class:`BatchOptions`), checked against the backend registry;
- :mod:`~mitigate.cli.options.prompt`: the template and its overrides (:class:`PromptOptions`,
  :class:`TemplateOverrides`) and how the judge answers (:class:`AnswerOptions`, with ``--samples``
  :class:`SampledAnswerOptions`, and ``--reducer`` :class:`ReducedAnswerOptions`);
- :mod:`~mitigate.cli.options.run`: the pipeline, concurrency, cache, progress, resuming, the dry run
  (:class:`RunOptions`);
- :mod:`~mitigate.cli.options.results`: ``--out``, the bootstrap and seed (:class:`StatsOptions`), the
  pass threshold (:class:`ThresholdOptions`), the bias probes (:class:`ProbeBattery`);
- :mod:`~mitigate.cli.options.names`: help texts that list what is registered, filled when printed.

Importing this package loads neither pydantic nor the registry (``mitigate --help`` stays fast):
the checks that read the registry (the backend's facts) import it when they run.
"""

from mitigate.cli.options.backend import (
    DEFAULT_BACKEND,
    BackendOptions,
    BatchOptions,
    LMRunOptions,
    ServerOptions,
    backend_kind,
    check_backend,
    check_batch,
)
from mitigate.cli.options.declare import CommandOptions, Override, argument, check, option, parameters
from mitigate.cli.options.names import fill_registered_names, registered_names
from mitigate.cli.options.prompt import (
    AnswerOptions,
    PromptOptions,
    ReducedAnswerOptions,
    SampledAnswerOptions,
    TemplateOverrides,
    parse_pairs,
    parse_scale,
)
from mitigate.cli.options.results import ProbeBattery, StatsOptions, ThresholdOptions
from mitigate.cli.options.run import RunOptions
from mitigate.cli.options.task import DEFAULT_BENCHMARK, TaskOptions

__all__ = [
    "DEFAULT_BACKEND", "DEFAULT_BENCHMARK", "AnswerOptions", "BackendOptions", "BatchOptions",
    "CommandOptions",
    "LMRunOptions", "Override", "ProbeBattery", "PromptOptions", "ReducedAnswerOptions", "RunOptions",
    "SampledAnswerOptions", "ServerOptions", "StatsOptions",
    "TaskOptions", "TemplateOverrides", "ThresholdOptions", "argument", "backend_kind", "check",
    "check_backend",
    "check_batch", "fill_registered_names", "option", "parameters", "parse_pairs", "parse_scale",
    "registered_names",
]
