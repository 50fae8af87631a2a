"""Prompting baselines that Ghazarian et al. 2024 compare perturbed-guideline demos against.

- :class:`ConsistencyHint` (``"consistency-hint"``) — tell the judge, in the prompt, that
  the order in which the guideline lists its options and the length of their descriptions
  must not affect the score (the paper's instruction baseline; the wording is this
  project's own).
- :class:`SelfConsistency` (``"self-consistency"``) — sample N chain-of-thought answers at a
  temperature above 0 and take the majority score (self-consistency decoding).
"""

from __future__ import annotations

from typing import Self

from pydantic import model_validator

from mitigate.errors import ConfigError
from mitigate.judge import Judge, PromptJudge
from mitigate.prompt import GUIDELINE_MARK, SLOT_RE, JudgePrompt, PromptMessage
from mitigate.strategies.base import Mitigation, PromptMitigation, register

__all__ = ["DEFAULT_COT", "DEFAULT_HINT", "ConsistencyHint", "SelfConsistency", "append_instruction"]

DEFAULT_HINT = (
    "Important: the order in which the score options are listed, and how long or detailed each "
    "option's description is, say nothing about which score is right. Decide only from what each "
    "option means; you would give the same score if the options were listed in another order or "
    "described at another length."
)
"""The default :class:`ConsistencyHint` text."""

DEFAULT_COT = (
    "Think step by step first: compare the text with each option of the guideline and explain your "
    "reasoning, then give the score in the format asked for above as your final line."
)
"""The chain-of-thought instruction :class:`SelfConsistency` adds when ``cot=True``."""


def _check_text(owner: str, text: str) -> None:
    if not text.strip():
        raise ConfigError(f"The 'text' parameter of {owner} must be a non-empty instruction. Got {text!r} instead.")
    if SLOT_RE.search(text) or GUIDELINE_MARK in text:
        raise ConfigError(
            f"The 'text' parameter of {owner} must not contain template slots such as {{{{output}}}}. "
            f"Got {text[:60]!r} instead."
        )


def append_instruction(prompt: JudgePrompt, text: str) -> JudgePrompt:
    """A copy of ``prompt`` whose last message ends with ``text`` as a new paragraph."""
    msgs = list(prompt.messages)
    last = msgs[-1]
    msgs[-1] = PromptMessage(role=last.role, template=last.template.rstrip() + "\n\n" + text)
    return prompt.model_copy(update={"messages": tuple(msgs)})


@register("consistency-hint")
class ConsistencyHint(PromptMitigation):
    """Add an instruction that option order and description length must not affect the score.

    The prompting baseline of Ghazarian et al. 2024. Where the prompt has a parsed scoring
    guideline, ``text`` is inserted as its own paragraph right after the guideline (so it
    is read together with the options); otherwise it is appended to the last message.

    Parameters:
        text: the instruction (default :data:`DEFAULT_HINT`, this project's wording); must
            not contain ``{{slots}}``.
    """

    text: str = DEFAULT_HINT

    @model_validator(mode="after")
    def _check(self) -> Self:
        _check_text("ConsistencyHint", self.text)
        return self

    def apply(self, prompt: JudgePrompt) -> JudgePrompt:
        """A copy with the hint after the guideline (or at the end of the last message)."""
        if prompt.guideline is None:
            return append_instruction(prompt, self.text)
        msgs = tuple(
            PromptMessage(role=m.role, template=m.template.replace(GUIDELINE_MARK, GUIDELINE_MARK + "\n\n" + self.text))
            if GUIDELINE_MARK in m.template
            else m
            for m in prompt.messages
        )
        return prompt.model_copy(update={"messages": msgs})


@register("self-consistency")
class SelfConsistency(Mitigation):
    """Majority vote over N sampled (chain-of-thought) answers.

    Every inner prompt judge (reached through ``map_leaves``, so this works after a
    fan-out) is set to ``n`` samples at ``temperature`` with the "majority" reducer (ties go
    to the lower score; parse failures are left out of the vote and recorded). With
    ``cot=True`` the prompt also gets :data:`DEFAULT_COT`, asking the judge to reason step
    by step before its final score line. Stureborg et al. 2024 note that chain-of-thought
    needs a temperature above 0 and several samples to pay off.

    Parameters:
        n: samples per item (>= 1).
        temperature: sampling temperature (0–2).
        cot: add the step-by-step instruction.
        max_tokens: when set, the answer length limit for every leaf (reasoning needs room).
    """

    n: int = 5
    temperature: float = 0.7
    cot: bool = True
    max_tokens: int | None = None

    @model_validator(mode="after")
    def _check(self) -> Self:
        if isinstance(self.n, bool) or self.n < 1:
            raise ConfigError(f"The 'n' parameter of SelfConsistency must be an int >= 1. Got {self.n!r} instead.")
        if not 0.0 <= self.temperature <= 2.0:
            raise ConfigError(
                f"The 'temperature' parameter of SelfConsistency must be a float in [0, 2]. Got {self.temperature} instead."
            )
        if self.max_tokens is not None and self.max_tokens < 1:
            raise ConfigError(
                f"The 'max_tokens' parameter of SelfConsistency must be an int >= 1 or None. Got {self.max_tokens} instead."
            )
        return self

    def _leaf(self, leaf: PromptJudge) -> Judge:
        if self.cot and leaf.config.scoring == "expected":
            raise ConfigError(
                "SelfConsistency(cot=True) asks for reasoning before the score, but this judge scores by expected "
                "value over the first scale number it generates (ExpectedScore); expected cot=False with ExpectedScore"
            )
        if self.cot:
            from mitigate.strategies.sampling import warn_if_reasoning_forbidden

            warn_if_reasoning_forbidden(leaf.prompt, "SelfConsistency(cot=True)")
        judge = leaf.with_prompt(append_instruction(leaf.prompt, DEFAULT_COT)) if self.cot else leaf
        changes: dict[str, object] = {"n": self.n, "temperature": self.temperature, "reducer": "majority"}
        if self.max_tokens is not None:
            changes["max_tokens"] = self.max_tokens
        return judge.with_config(**changes)

    def wrap(self, judge: Judge) -> Judge:
        """A new judge whose every leaf samples ``n`` answers and takes the majority."""
        return judge.map_leaves(self._leaf)
