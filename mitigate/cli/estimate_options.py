"""The typed, frozen options of ``mitigate estimate`` (see :mod:`mitigate.cli.options` for how options work).

Kept beside the command rather than in :mod:`mitigate.cli.options` until the options are
declared once in shared groups; the shared option types and checks come from there.
"""

# no ``from __future__ import annotations``: the field annotations are read by Typer and must be real objects

from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, ClassVar

import typer

from mitigate.cli.options import (
    AnswerFormatOverride,
    BaseUrl,
    Benchmark,
    Concurrency,
    Const,
    Constrain,
    Deadline,
    Guided,
    MaxPromptChars,
    MaxResponseBytes,
    MaxSamples,
    MaxTokens,
    OutputSlot,
    Patience,
    Progress,
    ReasoningOverride,
    Scoring,
    SlotField,
    SystemFile,
    Temperature,
    Timeout,
    Transport,
    check,
    check_lm_options,
    check_prompt_overrides,
)
from mitigate.constraints import Interval, Options
from mitigate.errors import ConfigError
from mitigate.lm.defaults import (
    DEFAULT_DEADLINE,
    DEFAULT_MAX_PROMPT_CHARS,
    DEFAULT_MAX_RESPONSE_BYTES,
    DEFAULT_MAX_SAMPLES,
)

METHOD_HELP = ("ppi (PPI++ with power tuning: the judge's values corrected by the labels), calibrated (a "
               "cross-fitted judge-to-human calibration), human (the labels alone) or judge (the judge's mean alone, "
               "NOT bias-corrected); the labels-alone and judge-alone values are always shown beside")


@dataclass(frozen=True)
class EstimateOptions:
    """``mitigate estimate``: each system's mean label from a judge on every item and human labels on a few."""

    COMMAND: ClassVar[str] = "estimate"
    HELP_FIRST: ClassVar[dict[str, tuple[str, ...]]] = {
        "What to estimate": ("benchmark", "criterion", "recorded", "released", "labels", "labels_per_group"),
        "How": ("method", "by", "confidence"),
        "Label budget": ("plan", "select", "select_out"),
        "Results": ("json", "out", "plot"),
    }
    """The options ``--help`` shows, grouped (``--help-all`` and docs/cli.md: every option)."""

    benchmark: Benchmark = "summeval"
    criterion: Annotated[str | None, typer.Option("--criterion", "-c", help="criterion to estimate "
                                                  "(default: the benchmark's first)")] = None
    recorded: Annotated[Path | None, typer.Option(
        "--recorded", help="the judge's recorded judgments (JSON lines or .csv, see docs/recorded_format.md)")] = None
    judge: Annotated[str | None, typer.Option(
        "--judge", help="with --recorded: which judge of the file (needed when it holds several)")] = None
    released: Annotated[str | None, typer.Option(
        "--released", help="a released judge to replay, e.g. chatgpt-rts, gpt4-rts (summeval), chatgpt-h2h "
        "(summeval-h2h)")] = None
    pipeline: Annotated[str | None, typer.Option(
        "--pipeline", "-p", help="judge every item live with this pipeline (e.g. baseline, \"name(k=v) | name2\" or "
        "@file.json) on --backend")] = None
    method: Annotated[str, typer.Option(help=METHOD_HELP)] = "ppi"
    by: Annotated[str, typer.Option(
        "--by", help="group by system (the default when every item names its system), pair (pairwise: each "
        "system pair) or none (one estimate over all items)")] = "auto"
    confidence: Annotated[float, typer.Option(help="confidence level of the intervals")] = 0.95
    target: Annotated[str, typer.Option(
        help="items: the mean over each group's items had every one been labelled; population: the mean of the "
        "distribution the items were drawn from (wider)")] = "items"
    labels: Annotated[list[Path] | None, typer.Option(
        "--labels", help="a labels file (CSV or JSON lines with id,label[,weight]; a filled --select file is one) "
        "whose labels are added to the benchmark's; repeat for several (filled --select files in the order they "
        "were selected)")] = None
    labels_per_group: Annotated[int | None, typer.Option(
        "--labels-per-group", help="experiment on a labelled benchmark: keep this many labels per group, drawn "
        "with --seed, and hide the rest (their mean is shown as 'all labels')")] = None
    labelled_fraction: Annotated[float | None, typer.Option(
        "--labelled-fraction", help="experiment: keep this share of each group's labels (drawn with --seed)")] = None
    tune: Annotated[str, typer.Option(
        help="with --method ppi: overall (one judge slope fitted on every group's labels, each group keeping its own "
        "intercept) or group (one slope per group, from its own labels)")] = "overall"
    calibration: Annotated[str, typer.Option(help="with --method calibrated: isotonic or linear")] = "isotonic"
    folds: Annotated[int, typer.Option(help="with --method calibrated: cross-fitting folds")] = 5
    seed: Annotated[int, typer.Option(help="seed of the hidden labels, the folds and the selection")] = 0
    plan: Annotated[float | None, typer.Option(
        "--plan", help="also say how many labels each group needs for intervals of ±HALF_WIDTH, per method")] = None
    select: Annotated[int | None, typer.Option(
        "--select", help="also choose N unlabelled items to label next and write them to --select-out, with the "
        "weights that keep the estimate unbiased")] = None
    select_out: Annotated[Path, typer.Option(
        "--select-out", help="where --select writes the items to label (.csv, or JSON lines otherwise)")] = Path(
        "selection.csv")
    floor: Annotated[float, typer.Option(
        help="with --select: share of the labels spread evenly over the unlabelled items (the rest goes where the "
        "judge is least reliable)")] = 0.2
    plot: Annotated[Path | None, typer.Option("--plot", help="write a plot of the estimates (PNG, SVG or PDF)")] = None
    json: Annotated[bool, typer.Option("--json", help="print one JSON object instead of the table")] = False
    out: Annotated[Path | None, typer.Option("--out", "-o", help="also write the JSON object to this file")] = None
    limit: Annotated[int, typer.Option("--limit", "-n", help="only the first N items, document by document "
                                       "(0 = all)")] = 0
    backend: Annotated[str, typer.Option("--backend", help="LM of --pipeline: openai:<model>, anthropic:<model>, "
                                         "dspy:<model>, local, local:<path.gguf>")] = "local"
    prompt: Annotated[Path | None, typer.Option(
        help="judge prompt template file (default: the built-in prompt for the criterion); with --recorded, reads "
        "rows that hold only the judge's raw text")] = None
    run_dir: Annotated[Path | None, typer.Option(help="with --pipeline: folder for the journal (a rerun "
                                                 "resumes)")] = None
    base_url: BaseUrl = None
    timeout: Timeout = None
    deadline: Deadline = DEFAULT_DEADLINE
    max_response_bytes: MaxResponseBytes = DEFAULT_MAX_RESPONSE_BYTES
    max_prompt_chars: MaxPromptChars = DEFAULT_MAX_PROMPT_CHARS
    max_samples: MaxSamples = DEFAULT_MAX_SAMPLES
    patience: Patience = 60.0
    temperature: Temperature = 0.0
    samples: Annotated[int, typer.Option(help="samples per item of the live judge")] = 1
    scoring: Scoring = "auto"
    constrain: Constrain = "auto"
    max_tokens: MaxTokens = 128
    concurrency: Concurrency = 4
    cache: Annotated[bool, typer.Option(help="cache LM calls on disk")] = True
    progress: Progress = True
    transport: Transport = None
    guided: Guided = None
    system: SystemFile = None
    answer_format: AnswerFormatOverride = None
    reasoning: ReasoningOverride = None
    output_slot: OutputSlot = None
    slot_field: SlotField = None
    const: Const = None

    def __post_init__(self) -> None:
        """Refuse a value out of range or a combination that cannot work (ConfigError naming the option)."""
        cmd = self.COMMAND
        check_prompt_overrides(self)
        check(cmd, "--method", self.method, Options("ppi", "calibrated", "human", "judge"))
        check(cmd, "--by", self.by, Options("auto", "system", "pair", "none"))
        check(cmd, "--target", self.target, Options("items", "population"))
        check(cmd, "--calibration", self.calibration, Options("isotonic", "linear"))
        check(cmd, "--tune", self.tune, Options("overall", "group"))
        check(cmd, "--confidence", self.confidence, Interval(float, 0.0, 1.0, closed="neither"))
        check(cmd, "--folds", self.folds, Interval(int, 2, None))
        check(cmd, "--floor", self.floor, Interval(float, 0.0, 1.0, closed="right"))
        check(cmd, "--plan", self.plan, Interval(float, 0.0, None, closed="neither"), None)
        check(cmd, "--select", self.select, Interval(int, 1, None), None)
        check(cmd, "--labels-per-group", self.labels_per_group, Interval(int, 2, None), None)
        check(cmd, "--labelled-fraction", self.labelled_fraction, Interval(float, 0.0, 1.0, closed="right"), None)
        check(cmd, "--samples", self.samples, Interval(int, 1, None))
        check_lm_options(self)
        given = [flag for flag, value in (("--recorded", self.recorded), ("--released", self.released),
                                          ("--pipeline", self.pipeline)) if value is not None]
        if len(given) != 1:
            raise ConfigError("expected one judge: --recorded FILE, --released NAME or --pipeline PIPELINE (a live "
                              f"judge on --backend); got {' and '.join(given) if given else 'none'}")
        if self.judge is not None and self.recorded is None:
            raise ConfigError(f"--judge names a judge of a --recorded file; got --judge {self.judge!r} without "
                              "--recorded")
        if self.labels_per_group is not None and self.labelled_fraction is not None:
            raise ConfigError("expected one of --labels-per-group and --labelled-fraction; got both")
        if self.run_dir is not None and self.pipeline is None:
            raise ConfigError("--run-dir keeps the journal of a live judge; expected --pipeline with it")
        if self.method == "judge" and self.select is not None:
            raise ConfigError("--select chooses labels for a bias-corrected method; got --method judge (use ppi, "
                              "calibrated or human)")

    @property
    def samples_per_item(self) -> int:
        """``--samples``."""
        return self.samples

    @property
    def reducer_name(self) -> str:
        """estimate has no --reducer: the mean."""
        return "mean"

    @property
    def system_file(self) -> Path | None:
        """``--system``."""
        return self.system

    scale_range = None
    """estimate has no --scale: the prompt's own."""

    @property
    def lm_cache(self) -> bool:
        """``--cache``."""
        return self.cache
