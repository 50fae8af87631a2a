"""The parts a judge prompt is built from: criterion, scoring options, guideline, demonstration, message.

Each is a frozen pydantic value; :class:`~mitigate.prompt.judge_prompt.JudgePrompt` holds them,
:mod:`mitigate.prompt.read` recovers them from a template's text.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

from pydantic import BaseModel, ConfigDict, model_validator

from mitigate.data.schema import Item
from mitigate.errors import DataError, TemplateError
from mitigate.lm.base import Role
from mitigate.parse.answers import Verdict
from mitigate.prompt.template_syntax import DOUBLE_SLOT_RE
from mitigate.scale import Scale

__all__ = ["DEFAULT_DEMO_TEMPLATE", "DEMOS_MARK", "GUIDELINE_MARK", "SLOT_RE", "Criterion", "Demo", "Guideline",
           "Layout", "PromptMessage", "ScoreOption", "format_number", "slot_names"]

SLOT_RE = DOUBLE_SLOT_RE
"""A template slot in canonical form: ``{{name}}``."""

GUIDELINE_MARK = "\x00guideline\x00"
"""Where the guideline block stood in a parsed template (internal; never reaches an LM)."""

DEMOS_MARK = "\x00demos\x00"
"""Where the demos block goes while slots are filled (internal; demos are inserted verbatim after)."""


class Criterion(BaseModel):
    """One thing a judge scores: its name, what it means, and optionally its own guideline."""

    model_config = ConfigDict(frozen=True, extra="forbid")
    name: str
    definition: str = ""

    @model_validator(mode="after")
    def _check(self) -> Criterion:
        if not self.name.strip():
            raise TemplateError("a criterion needs a non-empty name; got an empty string")
        return self


class ScoreOption(BaseModel):
    """One line of a scoring guideline: what a given score means.

    The line renders as ``head + description + tail`` so a lengthened description keeps
    the original formatting. ``position`` is the option's index in the original guideline
    (kept through reorderings so answers can be mapped back). ``score`` is None for a
    lettered option whose score the template does not state (AutoEvals' "(A) ..." choices);
    pass ``letters={...}`` to :meth:`JudgePrompt.from_template` to score them.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")
    label: str
    score: float | None
    description: str
    head: str = ""
    tail: str = ""
    position: int = 0

    @property
    def text(self) -> str:
        """The line as it appears in the prompt."""
        return f"{self.head}{self.description}{self.tail}"

    def with_description(self, description: str) -> ScoreOption:
        """A copy whose description is replaced (e.g. lengthened); returns a new option."""
        return self.model_copy(update={"description": description})


class Guideline(BaseModel):
    """The ordered score options and the exact text that separated them in the template."""

    model_config = ConfigDict(frozen=True, extra="forbid")
    options: tuple[ScoreOption, ...]
    separators: tuple[str, ...] = ()

    @model_validator(mode="after")
    def _check(self) -> Guideline:
        if len(self.options) < 2:
            raise TemplateError(f"a guideline needs at least 2 options; got {len(self.options)}")
        if self.separators and len(self.separators) != len(self.options) - 1:
            raise TemplateError(
                f"a guideline with {len(self.options)} options needs {len(self.options) - 1} separators; "
                f"got {len(self.separators)}"
            )
        return self

    def render(self) -> str:
        """The guideline text: options in their current order, original separators in place."""
        seps = self.separators or ("\n",) * (len(self.options) - 1)
        out = [self.options[0].text]
        for sep, opt in zip(seps, self.options[1:], strict=True):
            out.append(sep)
            out.append(opt.text)
        return "".join(out)

    def reordered(self, order: Sequence[int]) -> Guideline:
        """A copy with options in ``order`` (indices into the current tuple); separators stay put."""
        if sorted(order) != list(range(len(self.options))):
            raise TemplateError(
                f"expected a permutation of 0..{len(self.options) - 1}; got {list(order)}"
            )
        return self.model_copy(update={"options": tuple(self.options[i] for i in order)})


class Demo(BaseModel):
    """A worked example shown to the judge: an item and its gold score (and optional reason).

    ``guideline`` lets a demo be shown under its own (e.g. perturbed) guideline, as in
    Ghazarian et al.'s perturbed-guideline demonstrations. A demo for a pairwise prompt
    shows a pairwise item (``output`` and ``output_b``) and its gold ``verdict`` ("first",
    "second" or "tie") instead of a score.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")
    item: Item
    score: float | dict[str, float] | None = None
    reason: str | None = None
    guideline: Guideline | None = None
    verdict: Verdict | None = None

    @model_validator(mode="after")
    def _check(self) -> Demo:
        if (self.score is None) == (self.verdict is None):
            raise TemplateError(
                f"a demo shows either a gold score or (for a pairwise prompt) a gold verdict; demo {self.item.id!r} "
                f"got {'both' if self.score is not None else 'neither'}"
            )
        if self.verdict is not None and self.item.output_b is None:
            raise TemplateError(
                f"a demo with a verdict compares two outputs; expected item {self.item.id!r} to have output_b, got None"
            )
        return self

    @classmethod
    def from_item(
        cls,
        item: Item,
        criterion: str,
        reason: str | None = None,
        *,
        human_scale: Scale | None = None,
        prompt_scale: Scale | None = None,
    ) -> Demo:
        """A demo showing ``item`` with its human score for ``criterion``.

        When both scales are given the human score is mapped linearly from ``human_scale``
        onto ``prompt_scale`` (e.g. a WebNLG 0–100 rating shown to a 1–5 judge) and rounded
        to the prompt scale's step, so the demo answers the way the judge is asked to.
        """
        if criterion not in item.human:
            raise DataError(
                f"item {item.id!r} has no human score for {criterion!r}; expected one of {sorted(item.human)}",
                item_id=item.id,
            )
        score = item.human[criterion]
        if human_scale is not None and prompt_scale is not None and human_scale != prompt_scale:
            score = prompt_scale.snap(prompt_scale.min + human_scale.normalise(score) * (prompt_scale.max - prompt_scale.min))
        return cls(item=item, score=score, reason=reason)


DEFAULT_DEMO_TEMPLATE = "{inputs}{output_name}: {output}\n{guideline}{reason}{criterion}: {score}"
"""How a demonstration is shown by default: its inputs, the judged text, then "<Criterion> score: N"."""

class PromptMessage(BaseModel):
    """One message of a prompt template (role + text with ``{{slots}}``)."""

    model_config = ConfigDict(frozen=True, extra="forbid")
    role: Role
    template: str


Layout = Literal["invariant_first", "as_written"]


def format_number(v: float) -> str:
    """A score as prompts write it: "3" for 3.0, "2.5" for 2.5."""
    return str(int(v)) if float(v).is_integer() else f"{v:g}"


def slot_names(text: str) -> list[str]:
    """The names of the ``{{slot}}`` placeholders in ``text``, in order."""
    return [m.group(1).strip() for m in SLOT_RE.finditer(text)]
