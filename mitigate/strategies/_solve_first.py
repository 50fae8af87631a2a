"""Solve first: the judge answers the task itself, then judges with its answer as the reference.

Krumdick et al. (2025, "No free labels") found that judges agree with experts mainly on the
questions they can answer themselves; Zheng et al. (2023) had GPT-4 answer a math question
first and judge with its own answer as a reference. :class:`SolveFirst` (``solve-first``) does
this for any template: one call writes the judge's own answer from the task inputs the template
shows, and the judge's request shows it as the reference (the template's own reference slot, or
a section under a heading in the template's layout; :mod:`mitigate.strategies._own_reference`).
"""

from __future__ import annotations

from typing import ClassVar, Literal

from mitigate.constraints import Interval, IsInstance, Options
from mitigate.judge import Judge, PromptJudge
from mitigate.registry import register
from mitigate.strategies._base import Mitigation
from mitigate.strategies._own_reference import OwnReferenceJudge


@register("mitigation", "solve-first")
class SolveFirst(Mitigation):
    """The judge answers the task first, then judges with its own answer as the reference (Krumdick et al.
    2025).

    Parameters:
        task: one sentence saying what the task is ("Summarise the article."), shown in the
            first call above the task inputs; None shows the inputs alone.
        max_tokens: the budget of the judge's own answer.
        on_reference_slot: what happens with a template that has its own reference slot:
            "fill" puts the judge's answer there (never a second reference; an item bringing
            its own reference is refused), "refuse" refuses such a template.

    Two calls per judged item (each prompt judge of the pipeline answers for itself). A template
    showing no task input besides the judged text(s) is refused.
    """

    paper = "Krumdick et al. 2025; Zheng et al. 2023"

    task: str | None = None
    max_tokens: int = 512
    on_reference_slot: Literal["fill", "refuse"] = "fill"
    parameter_constraints: ClassVar = {
        "task": [IsInstance(str), None],
        "max_tokens": [Interval(int, 1)],
        "on_reference_slot": [Options("fill", "refuse")],
    }

    @classmethod
    def examples(cls) -> list[Mitigation]:
        """Defaults, and a stated task with a short answer budget that refuses templates with a reference
        slot."""
        return [cls(), cls(task="Summarise the article.", max_tokens=200, on_reference_slot="refuse")]

    def wrap(self, judge: Judge) -> Judge:
        """Every prompt judge of ``judge`` writing its own answer first."""
        return judge.map_leaves(self._leaf)

    def _leaf(self, leaf: PromptJudge) -> Judge:
        return OwnReferenceJudge(
            leaf, mode="solve", task=self.task, max_tokens=self.max_tokens, policy=self.on_reference_slot
        )
