"""Prompting baselines that Ghazarian et al. 2024 compare perturbed-guideline demos against.

- :class:`ConsistencyHint` (``"consistency-hint"``) — tell the judge, in the prompt, that
  the order in which the guideline lists its options and the length of their descriptions
  must not affect the score (the paper's instruction baseline; the wording is this
  project's own).
- :class:`SelfConsistency` (``"self-consistency"``) — sample N chain-of-thought answers at a
  temperature above 0 and take the majority score (self-consistency decoding).
"""

from __future__ import annotations

from typing import ClassVar

from mitigate.constraints import Interval, Satisfies
from mitigate.errors import ConfigError
from mitigate.judge import Judge, PromptJudge
from mitigate.prompt import GUIDELINE_MARK, SLOT_RE, JudgePrompt
from mitigate.registry import Tags, register
from mitigate.strategies._base import Mitigation, PromptMitigation
from mitigate.strategies._edits import (
    DEFAULT_COT,
    DEFAULT_HINT,
    allow_reasoning,
    consistency_hint,
    insert_after_guideline,
    set_cot,
)


def _instruction(text: object) -> bool:
    """True for a non-empty instruction without template slots or the guideline mark."""
    return (
        isinstance(text, str)
        and bool(text.strip())
        and not SLOT_RE.search(text)
        and GUIDELINE_MARK not in text
    )


@register("mitigation", "consistency-hint")
class ConsistencyHint(PromptMitigation):
    """Add an instruction that option order and description length must not affect the score.

    The prompting baseline of Ghazarian et al. 2024. Where the prompt has a parsed scoring
    guideline, ``text`` is inserted as its own paragraph right after the guideline (so it
    is read together with the options); otherwise it is added at the end of the last user
    message, before the template's answer stub.

    Parameters:
        text: the instruction (default :data:`DEFAULT_HINT`, this project's wording); must
            not contain ``{{slots}}``.
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
        """A copy with the hint after the guideline (or at the end of the last message); unchanged when it has
        it.

        The default text speaks of score options, so it goes only to a prompt that lists some; a pairwise
        prompt gets :data:`~mitigate.strategies._edits.PAIRWISE_HINT` (order and length of the two outputs, no
        score) and a prompt without options :data:`~mitigate.strategies._edits.NO_OPTIONS_HINT`
        (:func:`~mitigate.strategies._edits.consistency_hint`). A text of your own is added as written.
        """
        text = consistency_hint(prompt) if self.text == DEFAULT_HINT else self.text
        if any(text in t for t in prompt.template_text()):
            return prompt
        return insert_after_guideline(prompt, text)


@register("mitigation", "self-consistency")
class SelfConsistency(Mitigation):
    """Majority vote over N sampled (chain-of-thought) answers.

    Every inner prompt judge (reached through ``map_leaves``, so this works after a
    fan-out) is set to ``n`` samples at ``temperature`` with the "majority" reducer (ties go
    to the lower score; parse failures are left out of the vote and recorded). With
    ``cot=True`` the prompt also gets a paragraph starting :data:`DEFAULT_COT`, asking the
    judge to reason step by step before its final answer line, worded in the prompt's own
    answer format (:func:`~mitigate.strategies._edits.self_consistency_instruction`), before
    the template's answer stub; the format's reasoning becomes "before". Stureborg et al.
    2024 note that chain-of-thought needs a temperature above 0 and several samples to pay off.

    Parameters:
        n: samples per item (>= 1).
        temperature: sampling temperature (0–2).
        cot: add the step-by-step instruction.
        max_tokens: when set, the answer length limit for every leaf (reasoning needs room).
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
        if self.cot and leaf.config.scoring == "expected":
            raise ConfigError(
                "SelfConsistency(cot=True) asks for reasoning before the score, but this judge scores by "
                "expected value over the first scale number it generates (ExpectedScore); expected cot=False "
                "with ExpectedScore"
            )
        judge = (
            leaf.with_prompt(
                set_cot(allow_reasoning(leaf.prompt, "SelfConsistency(cot=True)"), True, lead=DEFAULT_COT)
            )
            if self.cot
            else leaf
        )
        changes: dict[str, object] = {"n": self.n, "temperature": self.temperature, "reducer": "majority"}
        if self.max_tokens is not None:
            changes["max_tokens"] = self.max_tokens
        return judge.with_config(**changes)

    def wrap(self, judge: Judge) -> Judge:
        """A new judge whose every leaf samples ``n`` answers and takes the majority."""
        return judge.map_leaves(self._leaf)
