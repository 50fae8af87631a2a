"""Reference revision (RevisEval, Zhang et al. 2025): the judge revises the judged text into a reference,
then judges against it (:mod:`mitigate.strategies._own_reference`)."""

from __future__ import annotations

from typing import ClassVar, Literal

from mitigate.constraints import Interval, Options
from mitigate.judge import Judge
from mitigate.registry import register
from mitigate.strategies._base import Mitigation
from mitigate.strategies._own_reference import own_reference


@register("mitigation", "reference-revision")
class ReferenceRevision(Mitigation):
    """The judge revises the judged text into a reference, then judges against it (Zhang et al. 2025,
    RevisEval).

    Parameters:
        max_tokens: the budget of the revision.
        on_reference_slot: for a template with its own reference slot, "fill" it or "refuse" the template.

    Two calls per judged item; for a pairwise prompt the reviser sees both texts, in the judge's order.
    """

    paper = "Zhang et al. 2025 (RevisEval)"

    max_tokens: int = 512
    on_reference_slot: Literal["fill", "refuse"] = "fill"
    parameter_constraints: ClassVar = {
        "max_tokens": [Interval(int, 1)],
        "on_reference_slot": [Options("fill", "refuse")],
    }

    @classmethod
    def examples(cls) -> list[Mitigation]:
        return [cls(), cls(max_tokens=200, on_reference_slot="refuse")]

    def wrap(self, judge: Judge) -> Judge:
        """Every prompt judge of ``judge`` writing its own reference first."""
        return own_reference(judge, "revise", None, self.max_tokens, self.on_reference_slot)
