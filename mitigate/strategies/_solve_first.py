"""Solve first (Krumdick et al. 2025): the judge answers the task itself, then judges with its answer as
the reference (:mod:`mitigate.strategies._own_reference`)."""

from __future__ import annotations

from typing import ClassVar, Literal

from mitigate.constraints import Interval, IsInstance, Options
from mitigate.judge import Judge
from mitigate.registry import register
from mitigate.strategies._base import Mitigation
from mitigate.strategies._own_reference import own_reference


@register("mitigation", "solve-first")
class SolveFirst(Mitigation):
    """The judge answers the task first, then judges with its own answer as the reference (Krumdick et al.
    2025).

    Parameters:
        task: one sentence saying what the task is, shown above the task inputs in the first call.
        max_tokens: the budget of the judge's own answer.
        on_reference_slot: for a template with its own reference slot, "fill" it or "refuse" the template.

    Two calls per judged item; a template showing no task input besides the judged text(s) is refused.
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
        return [cls(), cls(task="Summarise the article.", max_tokens=200, on_reference_slot="refuse")]

    def wrap(self, judge: Judge) -> Judge:
        """Every prompt judge of ``judge`` writing its own reference first."""
        return own_reference(judge, "solve", self.task, self.max_tokens, self.on_reference_slot)
