"""The judge's template and how it answers: ``--prompt``, ``--system``, what corrects the template's reading,
and the answer's sampling and scoring."""

from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Literal

from mitigate.cli.options._declare import CommandOptions, option
from mitigate.constraints import Interval
from mitigate.errors import ConfigError

Scoring = Literal["auto", "parse", "expected"]
"""``--scoring``: ``JudgeConfig.scoring``, or auto (:func:`mitigate.judge.answer_mode`)."""
Constrain = Literal["auto", "format", "answer", "json", "off"]
"""``--constrain``: ``JudgeConfig.constrain``."""
Reducer = Literal["mean", "median", "majority"]
"""``--reducer``: :data:`mitigate.judge.Reducer`."""
Reasoning = Literal["before", "none"]
"""``--reasoning``: whether the template asks for reasoning before its answer line."""

PROMPT = option(
    "prompt",
    help="judge prompt template file with {{slots}} (default: the built-in prompt for the criterion)",
)
SYSTEM = option("system", help="optional system message template file")
SCALE = option("scale", help="answer scale MIN,MAX (default: from the prompt)")
ANSWER_FORMAT = option(
    "answer_format",
    "--answer-format",
    help="override the answer line read from the template: the line with {value} where the answer goes, "
    "e.g. 'Rating: [[{value}]]' or '[RESULT] {value}', or json:KEY for a JSON answer with the answer "
    "under KEY (see 'mitigate prompts inspect')",
)
REASONING = option(
    "reasoning",
    "--reasoning",
    help="override whether the template asks for reasoning before its answer line: before (the answer "
    "line comes last, after free text) or none (the answer alone)",
)
OUTPUT_SLOT = option(
    "output_slot",
    "--output-slot",
    help="override the slot that holds the judged text (default: read from the template)",
)
SLOT_FIELD = option(
    "slot_field",
    "--slot-field",
    help="SLOT=FIELD: fill the template's {{SLOT}} from the item's "
    "FIELD (an input name, output, output_b or reference); repeat for several",
)
CONST = option(
    "const",
    "--const",
    help="NAME=VALUE (or NAME=@file) filled into the template once, e.g. a rubric or a "
    "Jinja variable; repeat for several",
)
TEMPERATURE = option("temperature", help="sampling temperature", accepts=(Interval(float, 0.0, 2.0),))
SAMPLES = option("samples", help="samples per item (reduced by --reducer)", accepts=(Interval(int, 1, None),))
REDUCER = option("reducer", help="mean, median or majority")
SCORING = option(
    "scoring",
    help="parse (read the score), expected (logprob-weighted) or auto (expected for the "
    "embedded default model, else parse)",
)
CONSTRAIN = option(
    "constrain", help="answer constraint: auto, format, answer, json or off (see JudgeConfig.constrain)"
)
MAX_TOKENS = option("max_tokens", help="max tokens per answer", accepts=(Interval(int, 1, None),))

Prompt = Annotated[Path | None, PROMPT]
System = Annotated[Path | None, SYSTEM]
Scale = Annotated[str | None, SCALE]
Const = Annotated[list[str] | None, CONST]
Temperature = Annotated[float, TEMPERATURE]
Samples = Annotated[int, SAMPLES]
ReducerOption = Annotated[Reducer, REDUCER]


def parse_pairs(option: str, values: list[str] | None, what: str) -> dict[str, str]:
    """``NAME=VALUE`` values as a dict; ConfigError naming ``option`` for one without ``=`` or a name."""
    out: dict[str, str] = {}
    for value in values or []:
        key, sep, rest = value.partition("=")
        if not sep or not key.strip() or (option == "--slot-field" and not rest.strip()):
            raise ConfigError(f"expected {option} as {what}; got {value!r}")
        out[key.strip()] = rest.strip() if option == "--slot-field" else rest
    return out


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


@dataclass(frozen=True)
class TemplateOverrides(CommandOptions):
    """The system message, and what corrects what mitigate reads from a template."""

    system: System = None
    answer_format: Annotated[str | None, ANSWER_FORMAT] = None
    reasoning: Annotated[Reasoning | None, REASONING] = None
    output_slot: Annotated[str | None, OUTPUT_SLOT] = None
    slot_field: Annotated[list[str] | None, SLOT_FIELD] = None
    const: Const = None

    @property
    def system_file(self) -> Path | None:
        return self.system

    def check_group(self) -> None:
        """--answer-format, --output-slot, --slot-field and --const, refused when malformed."""
        fmt = self.answer_format
        if fmt is not None:
            key = fmt[len("json:") :].strip() if fmt.startswith("json:") else None
            if (key is None and fmt.count("{value}") != 1) or key == "":
                raise ConfigError(
                    "expected --answer-format as an answer line with one {value} (e.g. "
                    f"'Rating: [[{{value}}]]') or json:KEY; got {fmt!r}"
                )
        if self.output_slot is not None and not self.output_slot.strip().isidentifier():
            raise ConfigError(
                f"expected --output-slot as a slot name such as output or response; got {self.output_slot!r}"
            )
        parse_pairs("--slot-field", self.slot_field, "SLOT=FIELD (e.g. response=output)")
        parse_pairs("--const", self.const, "NAME=VALUE or NAME=@file")


@dataclass(frozen=True)
class PromptOptions(TemplateOverrides):
    """The judge's template file (``--prompt``) and its overrides."""

    prompt: Prompt = None


@dataclass(frozen=True)
class AnswerOptions(CommandOptions):
    """How the judge answers: its temperature, how an answer becomes a score, its constraint and length."""

    temperature: Temperature = 0.0
    scoring: Annotated[Scoring, SCORING] = "auto"
    constrain: Annotated[Constrain, CONSTRAIN] = "auto"
    max_tokens: Annotated[int, MAX_TOKENS] = 128

    @property
    def samples_per_item(self) -> int:
        """Samples per item: one (a command with --samples says)."""
        return 1

    @property
    def reducer_name(self) -> str:
        """How samples reduce to one score: the mean (a command with --reducer says)."""
        return "mean"

    @property
    def scale_range(self) -> tuple[float, float] | None:
        """The answer scale: None, the prompt's own (a command with --scale says)."""
        return None


@dataclass(frozen=True)
class SampledAnswerOptions(AnswerOptions):
    """How the judge answers, and how many answers it samples per item (``--samples``)."""

    samples: Samples = 1

    @property
    def samples_per_item(self) -> int:
        return self.samples


@dataclass(frozen=True)
class ReducedAnswerOptions(SampledAnswerOptions):
    """How the judge answers, how many answers per item, and how they reduce to one score (``--reducer``)."""

    reducer: ReducerOption = "mean"

    @property
    def reducer_name(self) -> str:
        return self.reducer
