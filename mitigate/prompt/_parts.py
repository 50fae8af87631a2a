"""The parts a judge prompt is built from (frozen values): criterion, scoring options, guideline,
demonstration, message."""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from typing import Literal

from pydantic import BaseModel, ConfigDict, model_validator

from mitigate.data import Item
from mitigate.errors import DataError, TemplateError
from mitigate.lm import Role
from mitigate.parse import Verdict
from mitigate.scale import Scale

SLOT_RE = re.compile(r"\{\{\s*([A-Za-z_][A-Za-z0-9_ ]*?)\s*\}\}")
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
    """One line of a scoring guideline, rendered as ``head + description + tail``: what a given score means.

    ``position`` is the option's index in the original guideline (kept through reorderings); ``score``
    is None for a lettered option whose score the template does not state (pass ``letters={...}``).
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
        """A copy whose description is replaced (e.g. lengthened)."""
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
        return self.options[0].text + "".join(s + o.text for s, o in zip(seps, self.options[1:], strict=True))

    def reordered(self, order: Sequence[int]) -> Guideline:
        """A copy with options in ``order`` (indices into the current tuple); separators stay put."""
        if sorted(order) != list(range(len(self.options))):
            raise TemplateError(f"expected a permutation of 0..{len(self.options) - 1}; got {list(order)}")
        return self.model_copy(update={"options": tuple(self.options[i] for i in order)})


class Demo(BaseModel):
    """A worked example shown to the judge: an item and its gold score (and optional reason), or for a
    pairwise prompt a pairwise item and its gold ``verdict``; ``guideline`` shows it under its own
    (perturbed) guideline.

    ``scale`` is the scale the gold label is written on (None: the prompt's). A prompt showing the demo
    puts ``score`` on its own scale and ``label`` keeps the gold label, so a later move maps from the
    label and never rounds twice.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")
    item: Item
    score: float | dict[str, float] | None = None
    reason: str | None = None
    guideline: Guideline | None = None
    verdict: Verdict | None = None
    scale: Scale | None = None
    label: float | dict[str, float] | None = None

    @model_validator(mode="after")
    def _check(self) -> Demo:
        if (self.score is None) == (self.verdict is None):
            raise TemplateError(
                "a demo shows either a gold score or (for a pairwise prompt) a gold verdict; demo "
                f"{self.item.id!r} got {'both' if self.score is not None else 'neither'}"
            )
        if self.verdict is not None and self.item.output_b is None:
            raise TemplateError(
                f"a demo with a verdict compares two outputs; expected item {self.item.id!r} to have "
                "output_b, got None"
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
        """A demo showing ``item`` with its human score for ``criterion``, mapped from ``human_scale`` onto
        ``prompt_scale`` (rounded to its step) when both are given."""
        if criterion not in item.human:
            raise DataError(
                f"item {item.id!r} has no human score for {criterion!r}; expected one of "
                f"{sorted(item.human)}",
                item_id=item.id,
            )
        score, scale = item.human[criterion], human_scale
        if human_scale is not None and prompt_scale is not None:
            score, scale = rescale_score(score, human_scale, prompt_scale), prompt_scale
        return cls(item=item, score=score, reason=reason, scale=scale)

    def on_scale(self, scale: Scale, *, who: str = "the prompt") -> Demo:
        """This demo with its gold score(s) on ``scale`` and its step (:func:`rescale_score`); one without a
        scale of its own must lie within ``scale`` (TemplateError otherwise). A verdict demo is unchanged."""
        if self.score is None:
            return self
        src = self.scale or scale
        gold = self.label if self.label is not None else self.score

        def move(value: float) -> float:
            if not src.contains(value):
                where = (
                    f"{who}'s scale {scale.describe()}"
                    if self.scale is None
                    else f"its scale {src.describe()}"
                )
                raise TemplateError(
                    f"demo {self.item.id!r} shows the score {format_number(value)}, outside {where}; "
                    "expected a score within it (give Demo(scale=<the label scale>) to map labels from "
                    "another scale linearly)"
                )
            return rescale_score(value, src, scale)

        score = {k: move(v) for k, v in gold.items()} if isinstance(gold, dict) else move(gold)
        if score == self.score and self.scale in (None, scale):
            return self
        if self.scale is None or self.scale == scale:
            return self.model_copy(update={"score": score, "scale": scale, "label": None})
        return self.model_copy(update={"score": score, "label": gold})

    def labelled_on(self, scale: Scale) -> Demo:
        """This demo with its gold score declared to be on ``scale`` (when it declares none of its own)."""
        if self.score is None or self.scale is not None:
            return self
        return self.model_copy(update={"scale": scale})


DEFAULT_DEMO_TEMPLATE = "{inputs}{output_name}: {output}\n{guideline}{reason}{criterion}: {score}"
"""How a demonstration is shown by default: its inputs, the judged text, then "<Criterion> score: N"."""


class PromptMessage(BaseModel):
    """One message of a prompt template (role + text with ``{{slots}}``)."""

    model_config = ConfigDict(frozen=True, extra="forbid")
    role: Role
    template: str


Layout = Literal["invariant_first", "as_written"]


def rescale_score(value: float, old: Scale, new: Scale) -> float:
    """``value`` mapped linearly from scale ``old`` onto ``new``, rounded half up to ``new``'s step
    (1-10 -> 1-5: 8 -> 4.11 -> 4)."""
    if old.max == old.min:
        raise TemplateError(f"cannot map a score from the one-point scale {old.describe()}")
    x = new.min + (value - old.min) * (new.max - new.min) / (old.max - old.min)
    k = math.floor((min(max(x, new.min), new.max) - new.min) / new.step + 0.5 + 1e-9)
    r = round(new.min + k * new.step, 6)
    return float(int(r)) if r == int(r) else r


def format_number(v: float) -> str:
    """A number as prompts write it: at most six decimals, no trailing zeros ("3" for 3.0, "2.5")."""
    r = round(float(v), 6)
    return str(int(r)) if r.is_integer() else f"{r:g}"


def slot_names(text: str) -> list[str]:
    """The names of the ``{{slot}}`` placeholders in ``text``, in order."""
    return [m.group(1).strip() for m in SLOT_RE.finditer(text)]


_FIELD_ALIASES: dict[str, tuple[str, ...]] = {
    "document": ("source", "article", "text"),
    "source": ("document", "article", "context"),
    "article": ("source", "document"),
    "context": ("dialogue", "source", "history"),
    "dialogue": ("context", "history"),
    "input": ("source", "document", "context", "triples"),
    "triples": ("input", "source", "data"),
    "data": ("triples", "input", "source"),
}


def field_text(item: Item, field: str) -> str | None:
    """The item's text for ``field`` as prompts read it (aliases such as document/source tried); None if
    absent."""
    for name in (field, *_FIELD_ALIASES.get(field.lower(), ())):
        try:
            return item.field(name)
        except DataError:
            continue
    return None


def answer_label(name: str) -> str:
    """A criterion name as written in answer lines ("coherence" -> "Coherence")."""
    return name[:1].upper() + name[1:]
