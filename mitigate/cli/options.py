"""The typed, frozen options of each command, with their declared constraints.

Each command's options are one frozen dataclass: its fields are the command-line options, in
the order ``--help`` lists them, annotated the Typer way; :func:`mitigate.cli.app.command`
turns the fields into the command's parameters. Building a value checks it
(``__post_init__``): a value out of its declared range, an unknown choice, or a combination
that cannot work (``--batch`` without a run folder, ``--base-url`` for the local backend ...)
is a :class:`~mitigate.errors.ConfigError` naming the option, so a command holds only values
that passed, and nothing is loaded or called before the check.
"""

# no ``from __future__ import annotations``: the field annotations are read by Typer and must be real objects

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, ClassVar, Protocol

import typer

from mitigate.constraints import ConstraintLike, Interval, Options, check_param
from mitigate.errors import ConfigError
from mitigate.lm.defaults import (
    DEFAULT_DEADLINE,
    DEFAULT_MAX_PROMPT_CHARS,
    DEFAULT_MAX_RESPONSE_BYTES,
    DEFAULT_MAX_SAMPLES,
)

NETWORK_BACKENDS = ("openai", "anthropic", "dspy")
"""Backends that call a server (``--base-url`` and ``--timeout`` apply to them)."""
BATCH_BACKENDS = ("openai", "anthropic")
"""Backends whose provider has a batch API (``--batch``)."""

# --------------------------------------------------------------------------- help texts shared by commands


def registered_names(kind: str | None = None) -> str:
    """A help text's stand-in for the names registered for ``kind`` ("engine", "selector" ...; None: the kinds).

    :func:`fill_registered_names` replaces it when the command's help is printed, so listing the
    commands, or running one, never imports the registry or the package of that kind (issue 29:
    a fast start).
    """
    return "{registered}" if kind is None else f"{{registered:{kind}}}"


_REGISTERED = re.compile(r"\{registered(?::([a-z-]+))?\}")


def fill_registered_names(text: str, *, shipped: bool = False) -> str:
    """``text`` with each :func:`registered_names` stand-in replaced by the names registered now, comma-separated.

    Benchmarks include their ``<prefix>:<path>`` forms. ``shipped``: only what mitigate itself
    registers (not plugins' or tests' components), for the generated docs/cli.md.
    """
    from mitigate.registry import KIND_PACKAGES, registered  # imports the kind's package, for this help alone

    def names(kind: str) -> list[str]:
        table = registered(kind)
        found = [n for n, obj in table.items()
                 if not shipped or str(getattr(obj, "__module__", "")).startswith("mitigate.")]
        if kind == "benchmark":
            from mitigate.data.registry import PATH_LOADERS

            found += [f"{prefix}:<path>" for prefix in PATH_LOADERS]
        return found

    return _REGISTERED.sub(lambda m: ", ".join(names(m.group(1)) if m.group(1) else KIND_PACKAGES), text)


BENCHMARK_HELP = f"benchmark name: {registered_names('benchmark')} (a <path> form reads a file or a release on disk)"
BASE_URL_HELP = "server URL for the openai, anthropic or dspy backend"
TIMEOUT_HELP = ("seconds an attempt may go without anything from the server (connecting, before the answer starts, "
                "between two pieces of it); past it the attempt is retried within --deadline (openai, anthropic, dspy; "
                "default: the deadline)")
DEADLINE_HELP = ("seconds one request may spend on the server over all its attempts, connect to last byte (openai, "
                 "anthropic, dspy); past it the request fails, not retried: the server is hung or trickling its "
                 "answer; counts for --stop-after")
MAX_RESPONSE_HELP = "largest answer body read, in bytes (openai, anthropic); reading stops past it"
MAX_PROMPT_HELP = ("longest prompt sent, in characters (about 4 per token; openai, anthropic, dspy); a longer one is "
                   "refused before any request")
MAX_SAMPLES_HELP = "most --samples asked for in one request; more is refused before any request"
SCORING_HELP = ("parse (read the score), expected (logprob-weighted) or auto (expected for the embedded default "
                "model, else parse)")
CONSTRAIN_HELP = "answer constraint: auto, format, answer, json or off (see JudgeConfig.constrain)"
PATIENCE_HELP = "longest wait between retries, in seconds; a server asking for a longer Retry-After stops the run"
STOP_AFTER_HELP = ("stop the run after this many failures in a row that would repeat for every item (refused "
                   "key or model, unreachable server ...); 0 never stops")
TRANSPORT_HELP = ("HTTP client of an openai: backend: auto (direct when aiohttp is installed), direct (plain "
                  "aiohttp, the least CPU per call), sdk (the openai SDK), or the SDK over aiohttp or httpx")
GUIDED_HELP = ("how an openai: backend sends an answer constraint (--constrain): openai (response_format JSON "
               "schema), or the guided decoding of the OpenAI-compatible server at --base-url: vllm "
               "(structured_outputs), vllm-legacy (guided_regex), sglang (regex) or llamacpp (grammar)")
BATCH_HELP = ("send the LM calls through the provider's batch API (openai: or anthropic:, half the price, results "
              "within 24 h); resumable: rerun the same command to pick up the same batches")
BATCH_RETRIES_HELP = "follow-up batches for requests that failed or expired"

ANSWER_FORMAT_HELP = ("override the answer line read from the template: the line with {value} where the answer "
                      "goes, e.g. 'Rating: [[{value}]]' or '[RESULT] {value}', or json:KEY for a JSON answer "
                      "with the answer under KEY (see 'mitigate prompts inspect')")
REASONING_HELP = ("override whether the template asks for reasoning before its answer line: before (the answer "
                  "line comes last, after free text) or none (the answer alone)")
OUTPUT_SLOT_HELP = "override the slot that holds the judged text (default: read from the template)"
SLOT_FIELD_HELP = ("SLOT=FIELD: fill the template's {{SLOT}} from the item's FIELD (an input name, output, "
                   "output_b or reference); repeat for several")
CONST_HELP = ("NAME=VALUE (or NAME=@file) filled into the template once, e.g. a rubric or a Jinja variable; "
              "repeat for several")
DRY_RUN_HELP = ("print the exact requests (messages, constraint, temperature, n, logprobs, diff against the "
                "unmitigated prompt) for the first item of each entry, and make no LM call")

# --------------------------------------------------------------------------- option types shared by commands

Benchmark = Annotated[str, typer.Option("--benchmark", "-b", help=BENCHMARK_HELP)]
BaseUrl = Annotated[str | None, typer.Option(help=BASE_URL_HELP)]
Timeout = Annotated[float | None, typer.Option(help=TIMEOUT_HELP)]
Deadline = Annotated[float, typer.Option(help=DEADLINE_HELP)]
MaxResponseBytes = Annotated[int, typer.Option(help=MAX_RESPONSE_HELP)]
MaxPromptChars = Annotated[int, typer.Option(help=MAX_PROMPT_HELP)]
MaxSamples = Annotated[int, typer.Option(help=MAX_SAMPLES_HELP)]
Patience = Annotated[float, typer.Option(help=PATIENCE_HELP)]
Temperature = Annotated[float, typer.Option(help="sampling temperature")]
Scoring = Annotated[str, typer.Option(help=SCORING_HELP)]
Constrain = Annotated[str, typer.Option(help=CONSTRAIN_HELP)]
MaxTokens = Annotated[int, typer.Option(help="max tokens per answer")]
Concurrency = Annotated[int, typer.Option(help="judgments in flight at once")]
Progress = Annotated[bool, typer.Option(help="show progress bars")]
Transport = Annotated[str | None, typer.Option(help=TRANSPORT_HELP)]
Guided = Annotated[str | None, typer.Option(help=GUIDED_HELP)]
BatchRetries = Annotated[int, typer.Option(help=BATCH_RETRIES_HELP)]
AnswerFormatOverride = Annotated[str | None, typer.Option("--answer-format", help=ANSWER_FORMAT_HELP)]
ReasoningOverride = Annotated[str | None, typer.Option("--reasoning", help=REASONING_HELP)]
OutputSlot = Annotated[str | None, typer.Option("--output-slot", help=OUTPUT_SLOT_HELP)]
SlotField = Annotated[list[str] | None, typer.Option("--slot-field", help=SLOT_FIELD_HELP)]
Const = Annotated[list[str] | None, typer.Option("--const", help=CONST_HELP)]
SystemFile = Annotated[Path | None, typer.Option("--system", help="optional system message template file")]
DryRun = Annotated[bool, typer.Option("--dry-run", help=DRY_RUN_HELP)]
NBoot = Annotated[int, typer.Option(help="bootstrap resamples per interval (0: none)")]
Threshold = Annotated[float | None, typer.Option(help="pass threshold: a score at or above it passes; reports the pass "
                                                  "rate over the samples per item and overall, and the items whose "
                                                  "samples straddle it")]
RequirePassRate = Annotated[float | None, typer.Option(
    "--require-pass-rate", help="with --threshold: the pass rate required; the gate passes only when the 95% "
    "interval's lower end reaches it (judge exits 1 otherwise)")]

# --------------------------------------------------------------------------- the checks


def check(command: str, option: str, value: object, *constraints: ConstraintLike) -> object:
    """``value`` when a constraint accepts it; ConfigError "The '--x' parameter of mitigate cmd must be ..." otherwise."""
    return check_param(f"mitigate {command}", option, value, constraints)


class LMRunOptions(Protocol):
    """What every command that calls a judge LM has: the fields :func:`check_lm_options` and ``build_judge`` read."""

    COMMAND: ClassVar[str]
    benchmark: str
    criterion: str | None
    limit: int
    backend: str
    base_url: str | None
    timeout: float | None
    deadline: float
    max_response_bytes: int
    max_prompt_chars: int
    max_samples: int
    patience: float
    prompt: Path | None
    temperature: float
    scoring: str
    constrain: str
    max_tokens: int
    concurrency: int
    cache: bool
    progress: bool
    transport: str | None
    guided: str | None

    @property
    def samples_per_item(self) -> int:
        """Samples per item of the judge (1 where the command has no --samples)."""
        ...

    @property
    def reducer_name(self) -> str:
        """How samples reduce to one score ("mean" where the command has no --reducer)."""
        ...

    @property
    def system_file(self) -> Path | None:
        """The system message template file (None where the command has no --system)."""
        ...

    @property
    def scale_range(self) -> tuple[float, float] | None:
        """The answer scale (None: the prompt's own, and where the command has no --scale)."""
        ...

    @property
    def lm_cache(self) -> bool:
        """Whether the judge LM caches its calls on disk."""
        ...


def check_lm_options(o: LMRunOptions) -> None:
    """The numeric and choice options shared by judge, compare and search, and the backend they apply to."""
    cmd = o.COMMAND
    check(cmd, "--limit", o.limit, Interval(int, 0, None))
    check(cmd, "--max-tokens", o.max_tokens, Interval(int, 1, None))
    check(cmd, "--concurrency", o.concurrency, Interval(int, 1, None))
    check(cmd, "--temperature", o.temperature, Interval(float, 0.0, 2.0))
    check(cmd, "--scoring", o.scoring, Options("auto", "parse", "expected"))
    check(cmd, "--constrain", o.constrain, Options("auto", "format", "answer", "json", "off"))
    check(cmd, "--timeout", o.timeout, Interval(float, 0.0, None, closed="neither"), None)
    check(cmd, "--patience", o.patience, Interval(float, 0.0, None, closed="neither"))
    check(cmd, "--deadline", o.deadline, Interval(float, 0.0, None, closed="neither"))
    check(cmd, "--max-response-bytes", o.max_response_bytes, Interval(int, 1, None))
    check(cmd, "--max-prompt-chars", o.max_prompt_chars, Interval(int, 1, None))
    check(cmd, "--max-samples", o.max_samples, Interval(int, 1, None))
    if o.samples_per_item > o.max_samples:
        raise ConfigError(f"expected --samples at most --max-samples ({o.max_samples}); got --samples "
                          f"{o.samples_per_item}")
    check(cmd, "--transport", o.transport, Options("auto", "direct", "sdk", "aiohttp", "httpx"), None)
    check(cmd, "--guided", o.guided, Options("openai", "vllm", "vllm-legacy", "sglang", "llamacpp"), None)
    kind = backend_kind(o.backend)
    for option, value in (("--base-url", o.base_url), ("--timeout", o.timeout)):
        if value not in (None, "") and kind in ("local", "replay", "fake"):
            raise ConfigError(f"{option} applies to the {', '.join(NETWORK_BACKENDS)} backends; "
                              f"got --backend {o.backend!r}")
    for option, value in (("--transport", o.transport), ("--guided", o.guided)):
        if value is not None and kind != "openai":
            raise ConfigError(f"{option} applies to openai:<model> backends (the OpenAI API and OpenAI-compatible "
                              f"servers such as vLLM); got --backend {o.backend!r}")
    if o.guided not in (None, "openai") and not o.base_url:
        raise ConfigError(f"--guided {o.guided} names the guided decoding of an OpenAI-compatible server; "
                          "expected --base-url with it; got none")


def check_batch(command: str, backend: str, batch: bool, retries: int, *, calls_lm: bool = True,
                folder: Path | None, folder_option: str | None = None) -> None:
    """--batch and --batch-retries against the backend and the run folder they need.

    ``folder_option`` names the option that gives the batch record its folder when the
    command may run without one (judge's ``--run-dir``); None when the folder is always there.
    """
    check(command, "--batch-retries", retries, Interval(int, 0, None))
    if not batch:
        if retries:
            raise ConfigError(f"--batch-retries applies with --batch; got --batch-retries {retries} without --batch")
        return
    if calls_lm and backend_kind(backend) not in BATCH_BACKENDS:
        raise ConfigError(f"batch mode needs an 'openai:<model>' or 'anthropic:<model>' backend (--batch goes "
                          f"through the provider's batch API); got --backend {backend!r}")
    if folder_option is not None and folder is None:
        raise ConfigError(f"--batch needs {folder_option} (the batch record lives there, so a killed run resumes); "
                          "got none")


class PromptOverrides(Protocol):
    """The options that correct what mitigate reads from a template (judge, compare, search, prompts render)."""

    COMMAND: ClassVar[str]
    answer_format: str | None
    reasoning: str | None
    output_slot: str | None
    slot_field: list[str] | None
    const: list[str] | None


def parse_pairs(option: str, values: list[str] | None, what: str) -> dict[str, str]:
    """``NAME=VALUE`` values as a dict; ConfigError naming ``option`` for one without ``=`` or a name."""
    out: dict[str, str] = {}
    for value in values or []:
        key, sep, rest = value.partition("=")
        if not sep or not key.strip() or (option == "--slot-field" and not rest.strip()):
            raise ConfigError(f"expected {option} as {what}; got {value!r}")
        out[key.strip()] = rest.strip() if option == "--slot-field" else rest
    return out


def check_prompt_overrides(o: PromptOverrides) -> None:
    """--answer-format, --reasoning, --slot-field and --const, refused when malformed (one line naming the option)."""
    check(o.COMMAND, "--reasoning", o.reasoning, Options("before", "none"), None)
    fmt = o.answer_format
    if fmt is not None:
        key = fmt[len("json:"):].strip() if fmt.startswith("json:") else None
        if (key is None and fmt.count("{value}") != 1) or key == "":
            raise ConfigError("expected --answer-format as an answer line with one {value} (e.g. 'Rating: [[{value}]]') "
                              f"or json:KEY; got {fmt!r}")
    if o.output_slot is not None and not o.output_slot.strip().isidentifier():
        raise ConfigError(f"expected --output-slot as a slot name such as output or response; got {o.output_slot!r}")
    parse_pairs("--slot-field", o.slot_field, "SLOT=FIELD (e.g. response=output)")
    parse_pairs("--const", o.const, "NAME=VALUE or NAME=@file")


def check_threshold(command: str, threshold: float | None, require: float | None) -> None:
    """--threshold and --require-pass-rate: a finite threshold; a rate in (0, 1] that needs a threshold."""
    if threshold is not None and threshold != threshold:
        raise ConfigError(f"expected --threshold as a number; got {threshold}")
    if require is not None:
        check(command, "--require-pass-rate", require, Interval(float, 0.0, 1.0, closed="right"))
        if threshold is None:
            raise ConfigError(f"--require-pass-rate applies with --threshold; got --require-pass-rate {require:g} "
                              "without --threshold")


def backend_kind(spec: str) -> str:
    """The kind of a backend spec: "openai" for "openai:gpt-4o-mini", "local" for "local:model.gguf"."""
    return spec.partition(":")[0].strip().lower()


def parse_scale(text: str | None) -> tuple[float, float] | None:
    """``--scale`` "1,5" (or 1:5, 1-5) as (1.0, 5.0); None when not given."""
    if text is None:
        return None
    parts = text.replace(":", ",").replace("-", ",").split(",")
    try:
        lo, hi = (float(p) for p in parts)
    except ValueError:
        raise ConfigError(f"expected --scale as MIN,MAX such as 1,5; got {text!r}") from None
    return lo, hi


# --------------------------------------------------------------------------- the commands' options


@dataclass(frozen=True)
class JudgeOptions:
    """``mitigate judge``: judge the first items of a benchmark and print each judgment beside the human score."""

    COMMAND: ClassVar[str] = "judge"
    HELP_FIRST: ClassVar[dict[str, tuple[str, ...]]] = {
        "What to judge": ("benchmark", "criterion", "limit", "prompt"),
        "The judge": ("backend", "base_url", "pipeline", "samples", "temperature"),
        "Results": ("out", "run_dir", "dry_run", "config_file"),
    }
    """The options ``--help`` shows, grouped (``--help-all`` and docs/cli.md: every option)."""

    benchmark: Benchmark = "summeval"
    criterion: Annotated[str | None, typer.Option("--criterion", "-c", help="criterion to score "
                                                  "(default: the benchmark's first)")] = None
    limit: Annotated[int, typer.Option("--limit", "-n", help="judge only the first N items, document by "
                                       "document (0 = all)")] = 5
    backend: Annotated[str, typer.Option("--backend", help="openai:<model>, anthropic:<model>, dspy:<model>, "
                                         "local, local:<path.gguf>, replay:<path>, fake")] = "local"
    base_url: BaseUrl = None
    timeout: Timeout = None
    deadline: Deadline = DEFAULT_DEADLINE
    max_response_bytes: MaxResponseBytes = DEFAULT_MAX_RESPONSE_BYTES
    max_prompt_chars: MaxPromptChars = DEFAULT_MAX_PROMPT_CHARS
    max_samples: MaxSamples = DEFAULT_MAX_SAMPLES
    patience: Patience = 60.0
    stop_after: Annotated[int, typer.Option(help=STOP_AFTER_HELP)] = 3
    prompt: Annotated[Path | None, typer.Option(help="judge prompt template file with {{slots}}")] = None
    system: Annotated[Path | None, typer.Option(help="optional system message template file")] = None
    scale: Annotated[str | None, typer.Option(help="answer scale MIN,MAX (default: from the prompt)")] = None
    temperature: Temperature = 0.0
    samples: Annotated[int, typer.Option(help="samples per item (reduced by --reducer)")] = 1
    reducer: Annotated[str, typer.Option(help="mean, median or majority")] = "mean"
    scoring: Scoring = "auto"
    constrain: Constrain = "auto"
    max_tokens: MaxTokens = 128
    concurrency: Concurrency = 4
    run_dir: Annotated[Path | None, typer.Option(help="folder for the journal and results (resumable)")] = None
    restart: Annotated[bool, typer.Option(help="discard an existing journal in --run-dir")] = False
    cache: Annotated[bool, typer.Option(help="cache LM calls on disk (identical re-runs make no calls)")] = True
    progress: Annotated[bool, typer.Option(help="show a progress bar")] = True
    pipeline: Annotated[str | None, typer.Option(
        "--pipeline", help="mitigations wrapping the judge: pipeline text such as \"name(k=v) | name2\", or "
        "@file.json (a spec file such as 'mitigate search --out' writes)")] = None
    transport: Transport = None
    guided: Guided = None
    batch: Annotated[bool, typer.Option(help=BATCH_HELP + " (needs --run-dir)")] = False
    batch_retries: BatchRetries = 0
    out: Annotated[Path | None, typer.Option(
        "--out", "-o", help="also write one row per item (scores, verdicts, failures with raw text, flags, "
        "usage) to this file: JSON lines, or CSV when it ends in .csv")] = None
    answer_format: AnswerFormatOverride = None
    reasoning: ReasoningOverride = None
    output_slot: OutputSlot = None
    slot_field: SlotField = None
    const: Const = None
    dry_run: DryRun = False
    threshold: Threshold = None
    require_pass_rate: RequirePassRate = None

    def __post_init__(self) -> None:
        """Refuse a value out of range or a combination that cannot work (ConfigError naming the option)."""
        check_prompt_overrides(self)
        check(self.COMMAND, "--samples", self.samples, Interval(int, 1, None))
        check(self.COMMAND, "--reducer", self.reducer, Options("mean", "median", "majority"))
        check(self.COMMAND, "--stop-after", self.stop_after, Interval(int, 0, None))
        check_threshold(self.COMMAND, self.threshold, self.require_pass_rate)
        check_lm_options(self)
        check_batch(self.COMMAND, self.backend, self.batch, self.batch_retries, folder=self.run_dir,
                    folder_option="--run-dir")
        parse_scale(self.scale)

    @property
    def samples_per_item(self) -> int:
        """``--samples``."""
        return self.samples

    @property
    def reducer_name(self) -> str:
        """``--reducer``."""
        return self.reducer

    @property
    def scale_range(self) -> tuple[float, float] | None:
        """``--scale`` as (min, max), None when the prompt says."""
        return parse_scale(self.scale)

    @property
    def system_file(self) -> Path | None:
        """``--system``."""
        return self.system

    @property
    def lm_cache(self) -> bool:
        """``--cache``."""
        return self.cache


@dataclass(frozen=True)
class CompareOptions:
    """``mitigate compare``: pipelines, recorded and released judges on one benchmark, side by side."""

    COMMAND: ClassVar[str] = "compare"
    HELP_FIRST: ClassVar[dict[str, tuple[str, ...]]] = {
        "What to compare": ("benchmark", "criterion", "limit", "pipeline", "recorded", "released", "train"),
        "The judge": ("backend", "base_url", "prompt"),
        "Results": ("out", "dry_run", "config_file", "save_config"),
    }
    """The options ``--help`` shows, grouped (``--help-all`` and docs/cli.md: every option)."""

    benchmark: Benchmark = "summeval"
    criterion: Annotated[str | None, typer.Option("--criterion", "-c", help="criterion to score "
                                                  "(default: the benchmark's first)")] = None
    pipeline: Annotated[list[str] | None, typer.Option(
        "--pipeline", "-p", help="a mitigation pipeline to compare, e.g. baseline, \"name(k=v) | name2\" or "
        "@file.json, optionally named for the report: \"NAME=pipeline\"; repeat for several (the first entry is "
        "the reference)")] = None
    recorded: Annotated[list[Path] | None, typer.Option(
        "--recorded", help="a recorded-judgments file (JSON lines or .csv, see docs/recorded_format.md): every "
        "judge in it that answered the criterion becomes an entry, replayed with no LM call; repeat for "
        "several; listed after the pipelines")] = None
    released: Annotated[list[str] | None, typer.Option(
        "--released", help="a released judge to replay, e.g. chatgpt-rts, gpt4-rts (summeval), chatgpt-h2h "
        "(summeval-h2h), or every judge of a release on disk: llmbar:<path>, judgebench:<path> (with "
        "-b llmbar:<path> / judgebench:<path>; '#GPT-4/*' after the path picks judges); repeat for several; "
        "listed last")] = None
    backend: Annotated[str, typer.Option("--backend", help="LM for the pipelines: openai:<model>, "
                                         "anthropic:<model>, dspy:<model>, local, local:<path.gguf>")] = "local"
    base_url: BaseUrl = None
    timeout: Timeout = None
    deadline: Deadline = DEFAULT_DEADLINE
    max_response_bytes: MaxResponseBytes = DEFAULT_MAX_RESPONSE_BYTES
    max_prompt_chars: MaxPromptChars = DEFAULT_MAX_PROMPT_CHARS
    max_samples: MaxSamples = DEFAULT_MAX_SAMPLES
    patience: Patience = 60.0
    prompt: Annotated[Path | None, typer.Option(help="judge prompt template file with {{slots}} "
                                                "(default: the built-in prompt for the criterion)")] = None
    limit: Annotated[int, typer.Option("--limit", "-n", help="judge only the first N items, document by "
                                       "document (0 = all)")] = 0
    train: Annotated[str | None, typer.Option(
        "--train", help="fit on train, compare on test: a fraction such as 0.5 (the benchmark split by document "
        "with --seed) or a training benchmark sharing no document with -b; every pipeline that learns from data "
        "(random, stratified, highest-RS, perturbed demos) is fitted on it first")] = None
    out: Annotated[Path, typer.Option("--out", "-o", help="folder for journals, results.json, report.md "
                                      "and plots (a rerun resumes)")] = Path("reports/compare")
    likelihood: Annotated[bool, typer.Option(help="compute LS with the embedded model and report "
                                             "BiasScore")] = False
    concurrency: Concurrency = 4
    temperature: Annotated[float, typer.Option(help="sampling temperature of the base judge")] = 0.0
    samples: Annotated[int, typer.Option(help="samples per item of the base judge")] = 1
    max_tokens: MaxTokens = 128
    scoring: Scoring = "auto"
    constrain: Constrain = "auto"
    n_boot: NBoot = 1000
    seed: Annotated[int, typer.Option(help="seed of the bootstrap and permutation tests")] = 0
    restart: Annotated[bool, typer.Option(help="discard existing journals in --out")] = False
    cache: Annotated[bool, typer.Option(help="cache LM calls on disk")] = True
    progress: Progress = True
    transport: Transport = None
    guided: Guided = None
    batch: Annotated[bool, typer.Option(help=BATCH_HELP + "; the pipelines' requests share batches")] = False
    batch_retries: BatchRetries = 0
    system: SystemFile = None
    answer_format: AnswerFormatOverride = None
    reasoning: ReasoningOverride = None
    output_slot: OutputSlot = None
    slot_field: SlotField = None
    const: Const = None
    dry_run: DryRun = False
    probes: Annotated[str | None, typer.Option(
        "--probes", help="also run the bias battery over every pipeline entry: 'all' or probe names such as "
        "authority,bandwagon (see 'mitigate probe'); adds a 'Bias probes' table per entry")] = None
    rewriter: Annotated[str | None, typer.Option(help="LM spec writing the LM-assisted probes' rewrites")] = None
    probe_tolerance: Annotated[float, typer.Option(
        "--probe-tolerance", help="with --probes: score changes up to this size count as unchanged (0: CALM's "
        "robustness rate; set it for continuous scores such as --scoring expected)")] = 0.0
    threshold: Threshold = None
    require_pass_rate: RequirePassRate = None

    def __post_init__(self) -> None:
        """Refuse a value out of range or a combination that cannot work (ConfigError naming the option)."""
        check_prompt_overrides(self)
        check(self.COMMAND, "--samples", self.samples, Interval(int, 1, None))
        check(self.COMMAND, "--probe-tolerance", self.probe_tolerance, Interval(float, 0.0, None))
        check_threshold(self.COMMAND, self.threshold, self.require_pass_rate)
        check_lm_options(self)
        check_batch(self.COMMAND, self.backend, self.batch, self.batch_retries, folder=self.out,
                    calls_lm=bool(self.pipeline))  # released or recorded judges alone make no call
        check(self.COMMAND, "--n-boot", self.n_boot, Interval(int, 0, None))
        self.train_split  # noqa: B018 - a bad --train fraction is refused here

    @property
    def samples_per_item(self) -> int:
        """``--samples``."""
        return self.samples

    @property
    def reducer_name(self) -> str:
        """compare has no --reducer: the mean."""
        return "mean"

    @property
    def system_file(self) -> Path | None:
        """``--system``."""
        return self.system

    scale_range = None
    """compare has no --scale: the prompt's own."""

    @property
    def lm_cache(self) -> bool:
        """``--cache``."""
        return self.cache

    @property
    def train_split(self) -> float | str | None:
        """``--train``: a fraction strictly between 0 and 1, a benchmark name / ``jsonl:<path>``, or None."""
        if self.train is None:
            return None
        try:
            fraction = float(self.train)
        except ValueError:
            return self.train
        check(self.COMMAND, "--train", fraction, Interval(float, 0.0, 1.0, closed="neither"))
        return fraction


@dataclass(frozen=True)
class SearchOptions:
    """``mitigate search``: the demo set that maximises agreement (+ consistency - bias) on dev."""

    COMMAND: ClassVar[str] = "search"
    HELP_FIRST: ClassVar[dict[str, tuple[str, ...]]] = {
        "What to search": ("benchmark", "criterion", "limit", "engine", "selector", "k", "budget"),
        "The judge": ("backend", "base_url", "prompt", "pipeline"),
        "Results": ("out", "dry_run", "config_file"),
    }
    """The options ``--help`` shows, grouped (``--help-all`` and docs/cli.md: every option)."""

    benchmark: Benchmark = "summeval"
    criterion: Annotated[str | None, typer.Option("--criterion", "-c", help="criterion to optimise "
                                                  "(default: the benchmark's first)")] = None
    limit: Annotated[int, typer.Option("--limit", "-n", help="use only the first N labelled items, document "
                                       "by document, so each document keeps every system's output (0 = all)")] = 0
    engine: Annotated[str, typer.Option(help=f"search engine: {registered_names('engine')}")] = "random"
    budget: Annotated[int, typer.Option(help="distinct LM requests the search may make (cache hits count "
                                        "too, so a rerun retraces the same search)")] = 200
    k: Annotated[list[int] | None, typer.Option("--k", help="demos per set; repeat for several sizes")] = None
    selector: Annotated[list[str] | None, typer.Option(
        "--selector", help=f"candidate generator: {registered_names('selector')} (fixed needs ids: use "
        "the Python API); repeat for several (default: random and stratified)")] = None
    perturbed: Annotated[bool, typer.Option(help="also search demos shown under reordered guidelines "
                                            "(Ghazarian et al. 2024)")] = False
    agreement: Annotated[str, typer.Option(help="spearman, kendall, pearson or accuracy (exact match)")] = "spearman"
    consistency_weight: Annotated[float, typer.Option(help="lambda: weight of consistency under "
                                                      "guideline perturbation")] = 0.0
    consistency: Annotated[str, typer.Option(help="kappa (chance-corrected; a judge giving one answer to "
                                             "everything cannot win) or raw (the paper's share)")] = "kappa"
    bias_weight: Annotated[float, typer.Option(help="mu: weight of |BiasScore| (needs --likelihood)")] = 0.0
    likelihood: Annotated[str, typer.Option(help="backend computing LS for BiasScore")] = "local"
    splits: Annotated[str, typer.Option(help="train,dev,test fractions")] = "0.5,0.25,0.25"
    backend: Annotated[str, typer.Option("--backend", help="openai:<model>, anthropic:<model>, dspy:<model>, "
                                         "local, local:<path.gguf>")] = "local"
    base_url: BaseUrl = None
    timeout: Timeout = None
    deadline: Deadline = DEFAULT_DEADLINE
    max_response_bytes: MaxResponseBytes = DEFAULT_MAX_RESPONSE_BYTES
    max_prompt_chars: MaxPromptChars = DEFAULT_MAX_PROMPT_CHARS
    max_samples: MaxSamples = DEFAULT_MAX_SAMPLES
    patience: Patience = 60.0
    prompt: Annotated[Path | None, typer.Option(help="judge prompt template file with {{slots}}")] = None
    temperature: Temperature = 0.0
    scoring: Scoring = "auto"
    constrain: Constrain = "auto"
    max_tokens: MaxTokens = 128
    concurrency: Concurrency = 4
    n_boot: NBoot = 1000
    seed: Annotated[int, typer.Option(help="seed of the split, the draws and the bootstrap")] = 0
    out: Annotated[Path, typer.Option("--out", "-o", help="where to write the winning pipeline spec "
                                      "(load it with 'mitigate judge --pipeline @<file>')")] = Path("search_pipeline.json")
    cache: Annotated[bool, typer.Option(help="cache LM calls on disk")] = True
    progress: Progress = True
    plot: Annotated[bool, typer.Option(help="also write a PNG of the search beside --out")] = True
    pipeline: Annotated[str, typer.Option(
        "--pipeline", help="mitigations wrapping the judge before demos are searched: pipeline text or @file.json; "
        "the saved spec holds them followed by the winner")] = "baseline"
    transport: Transport = None
    guided: Guided = None
    system: SystemFile = None
    answer_format: AnswerFormatOverride = None
    reasoning: ReasoningOverride = None
    output_slot: OutputSlot = None
    slot_field: SlotField = None
    const: Const = None
    dry_run: DryRun = False

    def __post_init__(self) -> None:
        """Refuse a value out of range or a combination that cannot work (ConfigError naming the option)."""
        check_prompt_overrides(self)
        check_lm_options(self)
        check(self.COMMAND, "--n-boot", self.n_boot, Interval(int, 0, None))
        check(self.COMMAND, "--budget", self.budget, Interval(int, 1, None))
        check(self.COMMAND, "--consistency-weight", self.consistency_weight, Interval(float, 0.0, None))
        check(self.COMMAND, "--bias-weight", self.bias_weight, Interval(float, 0.0, None))
        from mitigate.registry import names  # the engines are imported when a search is asked for

        check(self.COMMAND, "--engine", self.engine, Options(*names("engine")))  # plugins' engines too
        for size in self.k or []:
            check(self.COMMAND, "--k", size, Interval(int, 1, None))
        self.split_fractions  # noqa: B018 - bad --splits are refused here

    @property
    def samples_per_item(self) -> int:
        """search has no --samples: one per item."""
        return 1

    @property
    def reducer_name(self) -> str:
        """search has no --reducer: the mean."""
        return "mean"

    @property
    def system_file(self) -> Path | None:
        """``--system``."""
        return self.system

    scale_range = None
    """search has no --scale: the prompt's own."""
    lm_cache = False
    """The judge LM has no disk cache of its own: the search adds its cache (``--cache``)."""

    @property
    def split_fractions(self) -> tuple[float, float, float]:
        """``--splits`` as (train, dev, test) fractions."""
        expected = f"expected --splits as three fractions such as 0.5,0.25,0.25; got {self.splits!r}"
        try:
            fractions = tuple(float(x) for x in self.splits.split(","))
        except ValueError:
            raise ConfigError(expected) from None
        if len(fractions) != 3:
            raise ConfigError(expected)
        return fractions[0], fractions[1], fractions[2]


@dataclass(frozen=True)
class PromptsOptions:
    """``mitigate prompts``: list the built-in prompts, print one, or inspect a template file."""

    COMMAND: ClassVar[str] = "prompts"

    name: Annotated[str | None, typer.Argument(help="print this built-in prompt's text, 'inspect' or 'render'")] = None
    file: Annotated[Path | None, typer.Argument(help="with 'inspect': the template file to read; with 'render': a "
                                                "template file or a built-in prompt name")] = None
    system: Annotated[Path | None, typer.Option(help="with 'inspect' or 'render': a system message template "
                                                "file")] = None
    const: Annotated[list[str] | None, typer.Option(
        "--const", help="with 'inspect' or 'render': NAME=VALUE (or NAME=@file) filled into the template once, e.g. "
        "a rubric or a Jinja variable; repeat for several")] = None
    pipeline: Annotated[str | None, typer.Option(
        "--pipeline", help="with 'render': the mitigations wrapping the judge (pipeline text or @file.json)")] = None
    benchmark: Annotated[str | None, typer.Option(
        "--benchmark", "-b", help="with 'render': take the item from this benchmark (default: an item whose slots "
        "show their names)")] = None
    criterion: Annotated[str | None, typer.Option("--criterion", "-c", help="with 'render': the criterion "
                                                  "(default: the benchmark's first)")] = None
    item: Annotated[str | None, typer.Option("--item", help="with 'render' and -b: the id of the item to render "
                                             "(default: the first)")] = None
    train: Annotated[str | None, typer.Option(
        "--train", help="with 'render' and -b: fit the pipeline first, on this fraction of the benchmark (split by "
        "document, seed 0) or on this training benchmark; pipelines that call the judge while fitting need "
        "--backend")] = None
    backend: Annotated[str | None, typer.Option(
        "--backend", help="with 'render': the judge backend whose requests are shown (its constraint fields, "
        "logprob scoring ...); default: the embedded model's requests, without loading it")] = None
    guided: Guided = None
    base_url: BaseUrl = None
    scale: Annotated[str | None, typer.Option(help="with 'render': answer scale MIN,MAX (default: from the "
                                              "prompt)")] = None
    scoring: Scoring = "auto"
    constrain: Constrain = "auto"
    temperature: Temperature = 0.0
    max_tokens: MaxTokens = 128
    answer_format: AnswerFormatOverride = None
    reasoning: ReasoningOverride = None
    output_slot: OutputSlot = None
    slot_field: SlotField = None

    def __post_init__(self) -> None:
        """Refuse a malformed override or a render option without 'render' (ConfigError naming the option)."""
        check_prompt_overrides(self)
        check(self.COMMAND, "--scoring", self.scoring, Options("auto", "parse", "expected"))
        check(self.COMMAND, "--constrain", self.constrain, Options("auto", "format", "answer", "json", "off"))
        check(self.COMMAND, "--temperature", self.temperature, Interval(float, 0.0, 2.0))
        check(self.COMMAND, "--max-tokens", self.max_tokens, Interval(int, 1, None))
        parse_scale(self.scale)
        if self.name != "render":
            given = [opt for opt, v in (("--pipeline", self.pipeline), ("-b", self.benchmark), ("--item", self.item),
                                        ("--train", self.train), ("--backend", self.backend)) if v is not None]
            if given:
                raise ConfigError(f"{', '.join(given)} apply to 'mitigate prompts render'; got them with "
                                  f"{self.name or 'no subcommand'!r}")
        if (self.item is not None or self.train is not None) and self.benchmark is None:
            raise ConfigError("--item and --train take their items from a benchmark; expected -b with them; got none")


@dataclass(frozen=True)
class ReportOptions:
    """``mitigate report``: re-render a comparison's report from its results.json (``--html``: report.html too)."""

    COMMAND: ClassVar[str] = "report"

    folder: Annotated[Path, typer.Argument(help="a folder written by 'mitigate compare'")]
    html: Annotated[bool, typer.Option("--html", help="also rebuild report.html (self-contained, with the "
                                       "per-item view)")] = False


@dataclass(frozen=True)
class ProbeOptions:
    """``mitigate probe``: the bias battery: judge items as they are, again (the noise floor) and under each probe."""

    COMMAND: ClassVar[str] = "probe"
    HELP_FIRST: ClassVar[dict[str, tuple[str, ...]]] = {
        "What to probe": ("benchmark", "criterion", "limit", "probes"),
        "The judge": ("backend", "base_url", "prompt", "pipeline", "rewriter"),
        "Results": ("out", "config_file"),
    }
    """The options ``--help`` shows, grouped (``--help-all`` and docs/cli.md: every option)."""

    benchmark: Benchmark = "summeval"
    criterion: Annotated[str | None, typer.Option("--criterion", "-c", help="criterion to score "
                                                  "(default: the benchmark's first)")] = None
    probes: Annotated[str, typer.Option("--probes", help="'all' (every rule-based probe, plus the LM-assisted "
                                        "ones with --rewriter) or names such as authority,bandwagon")] = "all"
    limit: Annotated[int, typer.Option("--limit", "-n", help="probe the first N items, document by document "
                                       "(0 = all)")] = 20
    backend: Annotated[str, typer.Option("--backend", help="the judge's LM: openai:<model>, anthropic:<model>, "
                                         "dspy:<model>, local, local:<path.gguf>, replay:<path>")] = "local"
    rewriter: Annotated[str | None, typer.Option(help="LM spec that writes the LM-assisted probes' rewrites "
                                                 "(sentiment, assertiveness, fallacy, factual-error)")] = None
    side: Annotated[str, typer.Option(help="pairwise items: probe the first text (a) or the second (b)")] = "a"
    base_url: BaseUrl = None
    timeout: Timeout = None
    deadline: Deadline = DEFAULT_DEADLINE
    max_response_bytes: MaxResponseBytes = DEFAULT_MAX_RESPONSE_BYTES
    max_prompt_chars: MaxPromptChars = DEFAULT_MAX_PROMPT_CHARS
    max_samples: MaxSamples = DEFAULT_MAX_SAMPLES
    patience: Patience = 60.0
    prompt: Annotated[Path | None, typer.Option(help="judge prompt template file with {{slots}} "
                                                "(default: the built-in prompt for the criterion)")] = None
    system: Annotated[Path | None, typer.Option(help="optional system message template file")] = None
    pipeline: Annotated[str | None, typer.Option(
        "--pipeline", help="mitigations wrapping the judge (pipeline text or @file.json); they must not need "
        "fitting")] = None
    temperature: Annotated[float, typer.Option(help="sampling temperature (the rerun for the noise floor uses the "
                                               "same)")] = 0.0
    samples: Annotated[int, typer.Option(help="samples per item (reduced by --reducer)")] = 1
    reducer: Annotated[str, typer.Option(help="mean, median or majority")] = "mean"
    scoring: Scoring = "auto"
    constrain: Constrain = "auto"
    max_tokens: MaxTokens = 128
    tolerance: Annotated[float, typer.Option(help="score changes up to this size count as unchanged (0: CALM's "
                                             "robustness rate)")] = 0.0
    alpha: Annotated[float, typer.Option(help="level of the probe-vs-rerun test")] = 0.05
    n_boot: NBoot = 1000
    seed: Annotated[int, typer.Option(help="seed of the probes' wording and of the bootstrap")] = 0
    concurrency: Concurrency = 4
    cache: Annotated[bool, typer.Option(help="cache LM calls on disk")] = True
    progress: Progress = True
    transport: Transport = None
    guided: Guided = None
    out: Annotated[Path | None, typer.Option("--out", "-o", help="write the whole report (every rewrite "
                                             "included) to this JSON file")] = None
    answer_format: AnswerFormatOverride = None
    reasoning: ReasoningOverride = None
    output_slot: OutputSlot = None
    slot_field: SlotField = None
    const: Const = None

    def __post_init__(self) -> None:
        """Refuse a value out of range or a combination that cannot work (ConfigError naming the option)."""
        check_prompt_overrides(self)
        check(self.COMMAND, "--samples", self.samples, Interval(int, 1, None))
        check(self.COMMAND, "--reducer", self.reducer, Options("mean", "median", "majority"))
        check(self.COMMAND, "--side", self.side, Options("a", "b"))
        check(self.COMMAND, "--tolerance", self.tolerance, Interval(float, 0.0, None))
        check(self.COMMAND, "--alpha", self.alpha, Interval(float, 0.0, 1.0, closed="neither"))
        check(self.COMMAND, "--n-boot", self.n_boot, Interval(int, 0, None))
        check_lm_options(self)

    @property
    def samples_per_item(self) -> int:
        """``--samples``."""
        return self.samples

    @property
    def reducer_name(self) -> str:
        """``--reducer``."""
        return self.reducer

    @property
    def scale_range(self) -> tuple[float, float] | None:
        """probe has no --scale: the prompt's own."""
        return None

    @property
    def system_file(self) -> Path | None:
        """``--system``."""
        return self.system

    @property
    def lm_cache(self) -> bool:
        """``--cache``."""
        return self.cache
