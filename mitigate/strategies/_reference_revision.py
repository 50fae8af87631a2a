"""Reference revision (RevisEval): the judge revises the judged text into a reference, then judges against it.

Zhang et al. (2025, "RevisEval") found that a reference adapted to the response — the response
revised to correct its mistakes and fill its gaps — guides a judge better than a fixed reference
or none. :class:`ReferenceRevision` (``reference-revision``) does this for any template: one call
revises the judged text (both texts, for a pairwise prompt) into a reference answer, and the
judge's request shows it as the reference (the template's own reference slot, or a section under
a heading in the template's layout; :mod:`mitigate.strategies._own_reference`).
"""

from __future__ import annotations

from typing import ClassVar, Literal

from mitigate.constraints import Interval, Options
from mitigate.judge import Judge, PromptJudge
from mitigate.registry import register
from mitigate.strategies._base import Mitigation
from mitigate.strategies._own_reference import OwnReferenceJudge


@register("mitigation", "reference-revision")
class ReferenceRevision(Mitigation):
    """The judge revises the judged text into a reference, then judges against it (Zhang et al. 2025,
    RevisEval).

    Parameters:
        max_tokens: the budget of the revision.
        on_reference_slot: what happens with a template that has its own reference slot:
            "fill" puts the revision there (never a second reference; an item bringing its own
            reference is refused), "refuse" refuses such a template.

    Two calls per judged item (each prompt judge of the pipeline revises for itself). For a
    pairwise prompt the reviser sees both texts, in the order the judge will see them.
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
        """Defaults, and a short revision budget that refuses templates with a reference slot."""
        return [cls(), cls(max_tokens=200, on_reference_slot="refuse")]

    def wrap(self, judge: Judge) -> Judge:
        """Every prompt judge of ``judge`` revising the judged text into its reference first."""
        return judge.map_leaves(self._leaf)

    def _leaf(self, leaf: PromptJudge) -> Judge:
        return OwnReferenceJudge(
            leaf, mode="revise", max_tokens=self.max_tokens, policy=self.on_reference_slot
        )
