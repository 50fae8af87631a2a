"""Prompting baselines that Ghazarian et al. 2024 compare perturbed-guideline demos against: an instruction
(:class:`ConsistencyHint`, this project's wording) and self-consistency decoding
(:class:`SelfConsistency`)."""

from __future__ import annotations

from typing import ClassVar

from mitigate.constraints import Interval, Satisfies
from mitigate.judge import Judge, PromptJudge
from mitigate.prompt import GUIDELINE_MARK, SLOT_RE, JudgePrompt
from mitigate.registry import Tags, register
from mitigate.strategies._base import Mitigation, PromptMitigation
from mitigate.strategies._edits import DEFAULT_COT, DEFAULT_HINT, consistency_hint, insert_after_guideline
from mitigate.strategies._sampling import resampled


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
