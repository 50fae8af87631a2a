"""Sampling control, probability-weighted scores and score granularity (Stureborg et al. 2024).

Stureborg et al. 2024 ("Large language models are inconsistent and biased evaluators")
report that a judge's sampling setup changes how well it agrees with humans:

- chain-of-thought (CoT) answers need temperature > 0 and averaging over several samples,
  while a direct (non-CoT) score is best read at temperature 0 (:class:`Sampling`);
- a probability-weighted score over the scale, as in G-Eval, helps (:class:`ExpectedScore`);
- a 1–10 scale works best among 1–5, 1–10 and 1–100, and word modifiers ("weak 3",
  "strong 3" = 3 ∓/± 0.33) are another way to get finer scores (:class:`Granularity`).

:class:`Sampling` and :class:`ExpectedScore` change every leaf judge's
:class:`~mitigate.judge.JudgeConfig` through ``map_leaves``, so placed after a fan-out
(``SingleAttribute() | Sampling(...)``) they reach every per-criterion call.
"""

from __future__ import annotations

import math
import re
import warnings
from typing import Any, ClassVar, Literal

from pydantic import model_validator

from mitigate.constraints import Interval, Options
from mitigate.errors import ConfigError, PromptConflictWarning, TemplateError
from mitigate.judge import Judge, PromptJudge
from mitigate.prompt import Demo, Guideline, JudgePrompt, PromptMessage, scale_mentions
from mitigate.registry import Tags, register
from mitigate.scale import Scale
from mitigate.strategies._base import Mitigation, PromptMitigation
from mitigate.strategies._edits import (
    COT_LEAD,
    DEFAULT_COT,
    RTS_LEAD,
    SCALE_LEAD,
    addenda,
    allow_reasoning,
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

    Stureborg et al. 2024: with CoT the judge should sample at temperature > 0 and average
    several samples; without CoT, temperature 0 and one sample is best.

    Parameters:
        temperature: sampling temperature, 0 to 2 (0 = greedy).
        n: samples per call (>= 1); their scores are combined by ``reducer``.
        cot: True adds a chain-of-thought paragraph to the end of each prompt's last user
            message, before its answer stub ("Before answering, explain your reasoning step
            by step. End your answer with a final line ..." in the prompt's own answer format:
            "Score: N", "[RESULT] N", "Rating: [[N]]", "[[A]]" ...) and sets the format's
            reasoning to "before" (the last answer line is read; a constrained backend lets the
            reasoning through); False removes that paragraph if a previous
            ``Sampling(cot=True)`` added it. It cannot remove reasoning requests written into
            the user's own template. A template that asks for the answer alone contradicts
            the added paragraph (a model may obey the template: Qwen2.5 0.5B wrote only
            "Score: N" on 48 of 48 SummEval items): words in the answer stub ("Evaluation
            Form (scores ONLY):") are rewritten, words elsewhere ("Do NOT provide any
            explanation", "only the score", "nothing else") make the combination a one-line
            ConfigError (:func:`~mitigate.strategies._edits.allow_reasoning`).
        reducer: "mean", "median" or "majority" over the ``n`` sample scores.
        max_tokens: the answer budget per sample (None keeps each leaf's; CoT needs more).

    ``n > 1`` with ``temperature=0`` is refused (ConfigError): greedy decoding gives the
    same answer n times on most backends, so the samples would be copies and averaging
    them would only cost more. This holds with and without CoT.
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
        """Direct scoring at temperature 0, and CoT with 5 samples averaged by median."""
        return [cls(), cls(temperature=0.7, n=5, cot=True, reducer="median", max_tokens=512)]

    @property
    def tags(self) -> Tags:
        """``adds_reasoning`` with ``cot=True``."""
        return Tags(adds_reasoning=self.cot)

    def wrap(self, judge: Judge) -> Judge:
        """A new judge whose every leaf uses these sampling settings (and CoT on/off)."""
        return judge.map_leaves(self._leaf)

    def _leaf(self, leaf: PromptJudge) -> Judge:
        if self.cot and leaf.config.scoring == "expected":
            raise ConfigError(
                "Sampling(cot=True) asks for reasoning before the score, but this judge scores by expected "
                "value over the first scale number it generates (ExpectedScore); expected cot=False with "
                "ExpectedScore"
            )
        prompt = set_cot(allow_reasoning(leaf.prompt) if self.cot else leaf.prompt, self.cot)
        changes: dict[str, Any] = {"temperature": self.temperature, "n": self.n, "reducer": self.reducer}
        if self.max_tokens is not None:
            changes["max_tokens"] = self.max_tokens
        return leaf.with_prompt(prompt).with_config(**changes)


# --------------------------------------------------------------------------- expected score


@register("mitigation", "expected-score")
class ExpectedScore(Mitigation):
    """Probability-weighted score over the scale from the answer's top token logprobs (G-Eval style).

    Every leaf gets ``scoring="expected"`` and ``top_logprobs``: the judge asks its backend
    for token logprobs and computes sum(p(v) * v) over the scale's integer points at the
    score position (:func:`mitigate.parse.expected_score`). A backend without logprobs
    raises :class:`~mitigate.errors.CapabilityError`; nothing falls back to parsing the text.

    Use it with direct answers (no CoT): the score position is the first generated number on
    the scale, which in a reasoning text may not be the score. Where the backend can
    constrain decoding, a leaf left at ``constrain="auto"`` gets ``constrain="answer"``: the
    answer line of the prompt's format ("[RESULT] N", "Rating: [[N]]") is forced first, so
    the first number is the score even when the template asks for reasoning first. Without
    that, a template whose answer format puts reasoning first gets a
    :class:`~mitigate.errors.PromptConflictWarning`. It needs one criterion per call
    (combine with ``SingleAttribute``); a multi-criterion leaf records a parse failure per
    criterion. Multi-token numbers ("10" on 1–10) are handled by ``expected_score``.

    Parameters:
        top_logprobs: alternatives per position to request, 1 to 20 (every scale point
            should fit in it: use >= 10 for 1–10).
    """

    paper = "Stureborg et al. 2024"

    top_logprobs: int = 10
    parameter_constraints: ClassVar = {"top_logprobs": [Interval(int, 1, 20)]}

    def wrap(self, judge: Judge) -> Judge:
        """A new judge whose every leaf scores by expected value over the top logprobs.

        Refuses (ConfigError) a leaf whose prompt asks for reasoning before the score (a
        chain-of-thought paragraph, or the RTS form): the first scale number of such an answer
        need not be the score, so the expected value would silently read the wrong position.
        """
        return judge.map_leaves(self._leaf)

    def _leaf(self, leaf: PromptJudge) -> Judge:
        why = asks_for_reasoning(leaf.prompt)
        if why is not None:
            raise ConfigError(
                "ExpectedScore reads the first scale number the judge generates, so it needs a direct "
                f"answer; got a prompt that asks for {why} (place ExpectedScore in a pipeline without chain "
                "of thought or the RTS form)"
            )
        changes: dict[str, Any] = {"scoring": "expected", "top_logprobs": self.top_logprobs}
        if leaf.config.constrain == "auto" and "format" in leaf.lm.constraint_modes():
            changes["constrain"] = "answer"  # the answer line comes first, whatever the template asks
        elif leaf.config.constrain != "answer":
            _warn_if_template_asks_for_reasoning(leaf.prompt)
        return leaf.with_config(**changes)


def _warn_if_template_asks_for_reasoning(prompt: JudgePrompt) -> None:
    """Warn when the template's answer format puts reasoning first, which expected scoring cannot read."""
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
    """What in ``prompt`` asks the judge to reason before its score (None when nothing does).

    Recognises the reasoning requests mitigations add: ``Sampling(cot=True)``'s paragraph,
    ``SelfConsistency(cot=True)``'s instruction and the RTS form's "reason, then score".
    Reasoning requests written into a user's own template are not recognised here (they
    get a :class:`~mitigate.errors.PromptConflictWarning` from :class:`ExpectedScore`
    instead, since wording cannot be matched with certainty).
    """
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


def _num(x: float) -> str:
    return f"{round(x, 6):g}"


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
                f"{opt.label!r} with score {_num(opt.score)}"
            )
        score = _rescale(opt.score, old, new)
        scores.append(score)
        update: dict[str, Any] = {"score": score}
        if opt.label == _num(opt.score) and score != opt.score:
            update["label"] = _num(score)
            update["head"] = re.sub(
                rf"(?<![\d.]){re.escape(opt.label)}(?!\d|\.\d)", _num(score), opt.head, count=1
            )
        options.append(opt.model_copy(update=update))
    if len(set(scores)) != len(scores):
        raise ConfigError(
            f"expected the guideline's {len(scores)} anchors to stay distinct on the scale {new.describe()}; "
            f"they map to {[_num(s) for s in scores]}"
        )
    return guideline.model_copy(update={"options": tuple(options)})


def _rewrite_mentions(text: str, old: Scale, new: Scale) -> str:
    """Replace the old scale's ends in ``text``: every scale statement and anchor
    (:func:`~mitigate.prompt.read._clues.scale_mentions`: "on a scale of 1 to 5", "Coherence (1-5)",
    "where 5 is the highest", "1 being the worst"), the top score named as such ("a score of 5",
    "(Score 5)"), any other "1-5" / "1 to 5", and enumerations ("1, 2, 3, 4 or 5")."""
    lo, hi, nlo, nhi = _num(old.min), _num(old.max), _num(new.min), _num(new.max)
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

    ``scale`` is one of :data:`GRANULARITIES`: "1-5", "1-10", "1-100", or "modifiers"
    (1–5 where "weak N" / "strong N" mean N ∓ 0.33 / N ± 0.33; the parser reads them when
    ``Scale.modifiers`` is set). The prompt gets the new scale (``prompt.with_scale``) and
    its text is rewritten to ask for it:

    - a prompt built by :func:`~mitigate.strategies._edits.multi_criterion_prompt`
      is rebuilt on the new scale;
    - a free-form template has its numeric guideline anchors moved to the matching points of
      the new scale (1–5 -> 1–10: 1, 3, 6, 8, 10), every statement of the scale's ends
      rewritten ("1-5", "on a scale of 1 to 5", "(1-5)", "where 5 is the highest", "1 being
      the worst"; :func:`~mitigate.prompt.read._clues.scale_mentions`) as well as enumerations
      ("1, 2, 3, 4 or 5"), and an "Answer scale: ..." paragraph added before its answer stub
      that states the range, the template's own answer line when it is not "Score: N"
      ('written as "[RESULT] N"'), and for "modifiers" that "weak"/"strong" may qualify a
      score (examples in that line). Prompts answering with a letter or a pairwise verdict
      are refused.

    Demos the prompt already holds (e.g. from ``highest-rs-demos`` or ``perturbed-demos``
    placed before this) move with it: their gold scores are mapped the same way and a demo's
    own guideline is relabelled, so demos never show answers on the old scale.

    With :class:`ExpectedScore` on 1–10, "10" is two tokens ("1" then "0") in common
    tokenizers: ``parse.expected_score`` splits the probability of a generated "1" between 1
    and 10 by the next position's alternatives, so 10 keeps its weight. On 1–100 the same
    rule reads multi-digit numbers only along the generated digits, so expected scores
    there are approximate.
    """

    paper = "Stureborg et al. 2024"

    scale: Literal["1-5", "1-10", "1-100", "modifiers"] = "1-10"
    parameter_constraints: ClassVar = {"scale": [Options(*GRANULARITIES)]}

    @classmethod
    def examples(cls) -> list[Mitigation]:
        """Each granularity."""
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
    """A demo moved onto the new scale like the prompt: gold score mapped linearly, its guideline relabelled.

    Demos already in the prompt were written for its old scale; left alone they would show
    answers the judge is no longer asked for. The score is mapped from the demo's gold label
    on its own scale (:meth:`~mitigate.prompt._parts.Demo.on_scale`: one rounding, whatever the
    order of composition). When the range does not change (e.g. 1-5 -> "modifiers") the demo
    is kept as it is.
    """
    if (old.min, old.max) == (new.min, new.max):
        return demo
    try:
        moved = demo.labelled_on(old).on_scale(new)
    except TemplateError as exc:
        raise ConfigError(str(exc)) from None
    if demo.guideline is not None:
        moved = moved.model_copy(update={"guideline": _relabel(demo.guideline, old, new)})
    return moved
