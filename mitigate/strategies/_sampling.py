"""Sampling control, probability-weighted scores and score granularity (Stureborg et al. 2024):
:class:`Sampling`, :class:`ExpectedScore` and :class:`Granularity`; and the prompting baselines Ghazarian et
al. 2024 compare perturbed-guideline demos against, an instruction (:class:`ConsistencyHint`, this project's
wording) and self-consistency decoding (:class:`SelfConsistency`)."""

from __future__ import annotations

import math
import re
import warnings
from typing import Any, ClassVar, Literal

from pydantic import model_validator

from mitigate.constraints import Interval, Options, Satisfies
from mitigate.errors import ConfigError, PromptConflictWarning, TemplateError
from mitigate.judge import Judge, PromptJudge
from mitigate.prompt import (
    GUIDELINE_MARK,
    SLOT_RE,
    Demo,
    Guideline,
    JudgePrompt,
    PromptMessage,
    format_number,
    scale_mentions,
)
from mitigate.registry import Tags, register
from mitigate.scale import Scale
from mitigate.strategies._base import Mitigation, PromptMitigation
from mitigate.strategies._edits import (
    COT_LEAD,
    DEFAULT_COT,
    DEFAULT_HINT,
    RTS_LEAD,
    SCALE_LEAD,
    addenda,
    consistency_hint,
    insert_after_guideline,
    is_multi_criterion_template,
    multi_criterion_prompt,
    scale_note,
    set_addendum,
    set_cot,
)

# --------------------------------------------------------------------------- sampling


@register("mitigation", "sampling")
class Sampling(Mitigation):
    """Set temperature, number of samples, their reducer and chain-of-thought on every leaf judge.

    Parameters:
        temperature: sampling temperature, 0 to 2 (0 = greedy).
        n: samples per call (``n > 1`` at temperature 0 is refused: the samples would be copies).
        cot: True adds a paragraph asking for reasoning, then the answer line in the prompt's own format (the
            format's reasoning becomes "before"; :func:`~mitigate.strategies._edits.allow_reasoning`); False
            removes one a previous ``Sampling(cot=True)`` added.
        reducer: "mean", "median" or "majority" over the ``n`` sample scores.
        max_tokens: the answer budget per sample (None keeps each leaf's; CoT needs more).
    """

    paper = "Stureborg et al. 2024"

    temperature: float = 0.0
    n: int = 1
    cot: bool = False
    reducer: Literal["mean", "median", "majority"] = "mean"
    max_tokens: int | None = None
    parameter_constraints: ClassVar = {
        "temperature": [Interval(float, 0, 2)],
        "n": [Interval(int, 1)],
        "cot": [bool],
        "reducer": [Options("mean", "median", "majority")],
        "max_tokens": [Interval(int, 1), None],
    }

    @model_validator(mode="after")
    def _copies(self) -> Sampling:
        if self.n > 1 and self.temperature == 0:
            raise ConfigError(
                f"Sampling with n={self.n} and temperature={self.temperature} would draw {self.n} identical "
                "samples on most backends; expected temperature > 0 when n > 1 (or n=1 at temperature 0)"
            )
        return self

    @classmethod
    def examples(cls) -> list[Mitigation]:
        return [cls(), cls(temperature=0.7, n=5, cot=True, reducer="median", max_tokens=512)]

    @property
    def tags(self) -> Tags:
        """``adds_reasoning`` with ``cot=True``."""
        return Tags(adds_reasoning=self.cot)

    def wrap(self, judge: Judge) -> Judge:
        """A new judge whose every leaf uses these sampling settings (and CoT on/off)."""
        return judge.map_leaves(self._leaf)

    def _leaf(self, leaf: PromptJudge) -> Judge:
        leaf = leaf if self.cot else leaf.with_prompt(set_cot(leaf.prompt, False))
        changes = {"temperature": self.temperature, "n": self.n, "reducer": self.reducer}
        return resampled(leaf, "Sampling", COT_LEAD if self.cot else None, self.max_tokens, **changes)


def resampled(
    leaf: PromptJudge, who: str, lead: str | None, max_tokens: int | None, **changes: Any
) -> PromptJudge:
    """``leaf`` with the config ``changes`` (and ``max_tokens`` when set) and, with a ``lead``, that
    chain-of-thought paragraph (:func:`~mitigate.strategies._edits.set_cot`; refused for a judge scoring by
    expected value)."""
    if lead is not None:
        if leaf.config.scoring == "expected":
            raise ConfigError(
                f"{who}(cot=True) asks for reasoning before the score, but this judge scores by expected "
                "value over the first scale number it generates (ExpectedScore); expected cot=False with "
                "ExpectedScore"
            )
        leaf = leaf.with_prompt(set_cot(leaf.prompt, True, lead=lead))
    if max_tokens is not None:
        changes["max_tokens"] = max_tokens
    return leaf.with_config(**changes)


# --------------------------------------------------------------------------- expected score


@register("mitigation", "expected-score")
class ExpectedScore(Mitigation):
    """Probability-weighted score over the scale from the answer's top token logprobs (G-Eval style).

    Every leaf gets ``scoring="expected"`` (:func:`mitigate.parse.expected_score`; a backend without logprobs
    raises :class:`~mitigate.errors.CapabilityError`). The score is read at the first scale number generated:
    a prompt asking for reasoning first is refused, a leaf at ``constrain="auto"`` gets ``constrain="answer"``
    where the backend can constrain, and otherwise a format that reasons first gets a
    :class:`~mitigate.errors.PromptConflictWarning`.

    Parameters:
        top_logprobs: alternatives per position to request, 1 to 20 (use >= 10 for 1–10).
    """

    paper = "Stureborg et al. 2024"

    top_logprobs: int = 10
    parameter_constraints: ClassVar = {"top_logprobs": [Interval(int, 1, 20)]}

    def wrap(self, judge: Judge) -> Judge:
        """A new judge whose every leaf scores by expected value over the top logprobs."""
        return judge.map_leaves(self._leaf)

    def _leaf(self, leaf: PromptJudge) -> Judge:
        if leaf.prompt.answer == "pairwise":
            raise ConfigError(
                f"{self.owner()} weighs the scale's numbers by their probabilities; expected a prompt that "
                "scores one output, got a pairwise prompt, which answers with a verdict (for the "
                "probabilities of a pairwise verdict use pairwise-distribution)"
            )
        why = asks_for_reasoning(leaf.prompt)
        if why is not None:
            raise ConfigError(
                f"{self.owner()} reads the first scale number the judge generates, so it needs a direct "
                f"answer; got a prompt that asks for {why} (place expected-score in a pipeline without chain "
                "of thought or the RTS form)"
            )
        changes: dict[str, Any] = {"scoring": "expected", "top_logprobs": self.top_logprobs}
        if leaf.config.constrain == "auto" and "format" in leaf.lm.constraint_modes():
            changes["constrain"] = "answer"  # the answer line comes first, whatever the template asks
        elif leaf.config.constrain != "answer":
            _warn_if_template_asks_for_reasoning(leaf.prompt)
        return leaf.with_config(**changes)


def _warn_if_template_asks_for_reasoning(prompt: JudgePrompt) -> None:
    fmt = prompt.format
    if fmt.reasoning == "before":
        warnings.warn(
            f"ExpectedScore reads the probabilities of the first scale number the judge generates, but the "
            f"prompt's own answer format is {fmt.describe()}: if the judge reasons first, that number is not "
            "its score. Expected a prompt that asks for the score directly, or a backend that can constrain "
            "the answer (constrain='answer')",
            PromptConflictWarning,
            stacklevel=4,
        )


def asks_for_reasoning(prompt: JudgePrompt) -> str | None:
    """What a mitigation added to ``prompt`` that asks for reasoning before the score (else None)."""
    if COT_LEAD in addenda(prompt):
        return "chain-of-thought reasoning (Sampling(cot=True))"
    text = "\n".join(m.template for m in prompt.messages)
    if DEFAULT_COT in text:
        return "chain-of-thought reasoning (SelfConsistency(cot=True))"
    if RTS_LEAD in text:
        return "a reason before the score (the RTS form)"
    return None


# --------------------------------------------------------------------------- granularity

GRANULARITIES: dict[str, Scale] = {
    "1-5": Scale(min=1, max=5),
    "1-10": Scale(min=1, max=10),
    "1-100": Scale(min=1, max=100),
    "modifiers": Scale(min=1, max=5, modifiers=True),
}
"""The scales :class:`Granularity` can ask for, by name."""


def _rescale(value: float, old: Scale, new: Scale) -> float:
    """Linear map of ``value`` from ``old`` onto ``new``, rounded half up to a whole number."""
    x = new.min + (value - old.min) * (new.max - new.min) / (old.max - old.min)
    return float(math.floor(x + 0.5))


def _relabel(guideline: Guideline, old: Scale, new: Scale) -> Guideline:
    """Move each numeric guideline anchor to the matching point of the new scale ("Score 3" -> "Score 6")."""
    options = []
    scores: list[float] = []
    for opt in guideline.options:
        if opt.score is None:
            raise ConfigError(
                "expected every guideline option to state its score to move it to "
                f"{new.describe()}; option {opt.label!r} states none"
            )
        if not old.contains(opt.score):
            raise ConfigError(
                f"expected guideline scores within the prompt's scale {old.describe()}; got option "
                f"{opt.label!r} with score {format_number(opt.score)}"
            )
        score = _rescale(opt.score, old, new)
        scores.append(score)
        update: dict[str, Any] = {"score": score}
        if opt.label == format_number(opt.score) and score != opt.score:
            update["label"] = format_number(score)
            update["head"] = re.sub(
                rf"(?<![\d.]){re.escape(opt.label)}(?!\d|\.\d)", format_number(score), opt.head, count=1
            )
        options.append(opt.model_copy(update=update))
    if len(set(scores)) != len(scores):
        raise ConfigError(
            f"expected the guideline's {len(scores)} anchors to stay distinct on the scale {new.describe()}; "
            f"they map to {[format_number(s) for s in scores]}"
        )
    return guideline.model_copy(update={"options": tuple(options)})


def _rewrite_mentions(text: str, old: Scale, new: Scale) -> str:
    """Replace the old scale's ends in ``text``: scale statements and anchors
    (:func:`~mitigate.prompt.scale_mentions`), the top score named as such ("a score of 5"), any other
    "1-5" / "1 to 5", and enumerations ("1, 2, 3, 4 or 5")."""
    lo, hi, nlo, nhi = (
        format_number(old.min),
        format_number(old.max),
        format_number(new.min),
        format_number(new.max),
    )
    if (lo, hi) == (nlo, nhi):
        return text
    ends = {"lo": (old.min, nlo), "hi": (old.max, nhi)}
    for mention in reversed(scale_mentions(text)):
        was, now = ends[mention.end]
        if mention.value == was:
            a, b = mention.span
            text = text[:a] + now + text[b:]
    # the top score named as such: "a reference answer that gets a score of 5", "Reference Answer (Score 5)"
    top = re.compile(
        rf"(\b(?:score|rating|grade)\s+of\s+|\(\s*(?:score|rating|grade)\s+){re.escape(hi)}(?![\d.]\d|\d)",
        re.IGNORECASE,
    )
    text = top.sub(lambda m: m.group(1) + nhi, text)
    span = re.compile(rf"(?<![\d.]){re.escape(lo)}(\s*(?:-|–|—|to)\s*){re.escape(hi)}(?!\d|\.\d)")
    text = span.sub(lambda m: f"{nlo}{m.group(1)}{nhi}", text)
    pts = [str(p) for p in old.integer_points()]
    if 3 <= len(pts) <= 11:
        middle = "".join(rf"\s*[,/]\s*{p}" for p in pts[1:-1])
        enum = re.compile(rf"(?<![\d.]){pts[0]}{middle}\s*,?\s*(?:or|and|/)\s*{pts[-1]}(?!\d|\.\d)")
        text = enum.sub(f"a whole number from {nlo} to {nhi}", text)
    return text


@register("mitigation", "granularity")
class Granularity(PromptMitigation):
    """Ask the judge for scores at another granularity (Stureborg et al. 2024: 1–10 works best).

    ``scale`` is one of :data:`GRANULARITIES` ("modifiers": 1–5 with "weak N" / "strong N" = N ∓ 0.33). The
    prompt's anchors, statements of the scale's ends and demos move to the new scale and an "Answer scale:
    ..." paragraph is added (a built-in multi-criterion prompt is rebuilt); letter and verdict prompts are
    refused.
    """

    paper = "Stureborg et al. 2024"

    scale: Literal["1-5", "1-10", "1-100", "modifiers"] = "1-10"
    parameter_constraints: ClassVar = {"scale": [Options(*GRANULARITIES)]}

    @classmethod
    def examples(cls) -> list[Mitigation]:
        return [cls(scale=name) for name in GRANULARITIES]  # type: ignore[arg-type]

    def target(self) -> Scale:
        """The scale this granularity asks for."""
        return GRANULARITIES[self.scale]

    def apply(self, prompt: JudgePrompt) -> JudgePrompt:
        """A copy of ``prompt`` on the new scale, with its text asking for that scale."""
        if prompt.answer != "score":
            raise ConfigError(
                f"Granularity rewrites a numeric score scale; expected a prompt with answer='score', "
                f"got answer={prompt.answer!r}"
            )
        new = self.target()
        old = prompt.scale
        demos = tuple(_rescale_demo(d, old, new) for d in prompt.demos)
        if is_multi_criterion_template(prompt):
            return multi_criterion_prompt(prompt.with_scale(new), prompt.criteria).with_demos(demos)
        out = prompt.with_scale(new).with_demos(demos)
        if out.guideline is not None:
            out = out.with_guideline(_relabel(out.guideline, old, new))
        out = out.map_templates(
            lambda m: PromptMessage(role=m.role, template=_rewrite_mentions(m.template, old, new))
        )
        # the closing stub was rewritten with the template ("- Fluency (1-10):"): the format follows
        if out.format.stub:
            stub = _rewrite_mentions(out.format.stub, old, new)
            out = out.model_copy(update={"answer_format": out.format.with_stub(stub)})
        return set_addendum(out, SCALE_LEAD, scale_note(new, out.format))


def _rescale_demo(demo: Demo, old: Scale, new: Scale) -> Demo:
    """A demo moved onto the new scale like the prompt: gold score mapped from its own scale
    (:meth:`~mitigate.prompt.Demo.on_scale`), its guideline relabelled; kept as it is when the range does
    not change."""
    if (old.min, old.max) == (new.min, new.max):
        return demo
    try:
        moved = demo.labelled_on(old).on_scale(new)
    except TemplateError as exc:
        raise ConfigError(str(exc)) from None
    if demo.guideline is not None:
        moved = moved.model_copy(update={"guideline": _relabel(demo.guideline, old, new)})
    return moved


def _instruction(text: object) -> bool:
    return (
        isinstance(text, str)
        and bool(text.strip())
        and not SLOT_RE.search(text)
        and GUIDELINE_MARK not in text
    )


@register("mitigation", "consistency-hint")
class ConsistencyHint(PromptMitigation):
    """Add an instruction that option order and description length must not affect the score.

    Parameters:
        text: the instruction (no ``{{slots}}``), after a parsed guideline or else at the end; the default is
            worded for the prompt (:func:`~mitigate.strategies._edits.consistency_hint`).
    """

    paper = "Ghazarian et al. 2024 (baseline)"

    text: str = DEFAULT_HINT
    parameter_constraints: ClassVar = {
        "text": [
            Satisfies(
                _instruction,
                "a non-empty instruction (it must not contain template slots such as {{output}})",
            )
        ]
    }

    def apply(self, prompt: JudgePrompt) -> JudgePrompt:
        """A copy with the hint added; unchanged when it has it."""
        text = consistency_hint(prompt) if self.text == DEFAULT_HINT else self.text
        if any(text in t for t in prompt.template_text()):
            return prompt
        return insert_after_guideline(prompt, text)


@register("mitigation", "self-consistency")
class SelfConsistency(Mitigation):
    """Majority vote over N sampled (chain-of-thought) answers.

    Every leaf judge samples ``n`` answers at ``temperature`` with the "majority" reducer (ties go to the
    lower score); with ``cot`` the prompt also asks for reasoning before the final answer line (a paragraph
    starting :data:`DEFAULT_COT`).

    Parameters:
        n: samples per item (>= 1).
        temperature: sampling temperature (0–2).
        cot: add the step-by-step instruction.
        max_tokens: when set, the answer length limit for every leaf.
    """

    paper = "Ghazarian et al. 2024 (baseline)"

    n: int = 5
    temperature: float = 0.7
    cot: bool = True
    max_tokens: int | None = None
    parameter_constraints: ClassVar = {
        "n": [Interval(int, 1)],
        "temperature": [Interval(float, 0, 2)],
        "cot": [bool],
        "max_tokens": [Interval(int, 1), None],
    }

    @property
    def tags(self) -> Tags:
        """``adds_reasoning`` with ``cot=True``."""
        return Tags(adds_reasoning=self.cot)

    def _leaf(self, leaf: PromptJudge) -> Judge:
        changes = {"n": self.n, "temperature": self.temperature, "reducer": "majority"}
        lead = DEFAULT_COT if self.cot else None
        return resampled(leaf, "SelfConsistency", lead, self.max_tokens, **changes)

    def wrap(self, judge: Judge) -> Judge:
        """A new judge whose every leaf samples ``n`` answers and takes the majority."""
        return judge.map_leaves(self._leaf)
