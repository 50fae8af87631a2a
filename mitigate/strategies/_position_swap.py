"""Position swap for pairwise judges: judge both orders and reconcile (Shen et al. 2023);
``measures.position_bias`` reads the two verdicts recorded."""

from __future__ import annotations

from typing import Any, ClassVar, Literal

from mitigate.constraints import Options
from mitigate.data import Item
from mitigate.errors import ConfigError, DataError
from mitigate.judge import CompositeJudge, Judge, Judgment, PlannedRequest, merge_judgments
from mitigate.parse import Verdict
from mitigate.registry import register
from mitigate.strategies._base import Mitigation, gather_children

FLIP: dict[str, Verdict] = {"first": "second", "second": "first", "tie": "tie"}
"""A verdict as seen from the other order of the two outputs."""

FLAG = "position_inconsistent"
"""Flag set when the verdict changes with the order of the two outputs."""


def swap_item(item: Item) -> Item:
    """A copy of a pairwise ``item`` with ``output`` and ``output_b`` exchanged."""
    if item.output_b is None:
        raise DataError(
            f"position swap needs a pairwise item with 'output' and 'output_b'; item {item.id!r} "
            "has no output_b",
            item_id=item.id,
        )
    return item.model_copy(update={"output": item.output_b, "output_b": item.output})


class PositionSwapJudge(CompositeJudge):
    """Runs a pairwise judge on the item (child "original") and on its swapped copy ("swapped"), and
    reconciles the verdicts.

    A flip gives "tie" (or no verdict with ``on_flip="abstain"``) and the flag ``position_inconsistent``;
    ``meta["orders"]`` holds both raw verdicts (the swapped one in swapped positions).
    """

    kind = "position-swap"

    def __init__(self, children: dict[str, Judge], *, on_flip: Literal["tie", "abstain"] = "tie") -> None:
        super().__init__(children)
        if set(children) != {"original", "swapped"}:
            raise ConfigError(f"expected children 'original' and 'swapped'; got {sorted(children)}")
        self.on_flip = on_flip

    def params(self) -> dict[str, Any]:
        return {"on_flip": self.on_flip}

    def _check_pairwise(self) -> None:
        answers = sorted({leaf.prompt.answer for leaf in self.leaves()})
        if answers != ["pairwise"]:
            raise ConfigError(
                "PositionSwap needs pairwise prompt judges (answer='pairwise'); got prompts "
                f"answering {answers}"
            )

    def requests(self, item: Item) -> list[PlannedRequest]:
        self._check_pairwise()
        return [
            *self.child_requests("original", item),
            *self.child_requests("swapped", swap_item(item), swapped=True),
        ]

    async def judge(self, item: Item) -> Judgment:
        self._check_pairwise()
        swapped = swap_item(item)
        first, second = await gather_children(
            [lambda: self.children["original"].judge(item), lambda: self.children["swapped"].judge(swapped)]
        )
        v1, v2 = first.verdict, second.verdict
        consistent = None if v1 is None or v2 is None else v1 == FLIP[v2]
        verdict: Verdict | None = v1 if consistent else None
        if consistent is False and self.on_flip == "tie":
            verdict = "tie"
        flags = [*first.flags, *second.flags, *([FLAG] if consistent is False else [])]
        meta = {"orders": {"original": v1, "swapped": v2}, "position_consistent": consistent}
        return merge_judgments(
            item.id, [first, second], verdict=verdict, flags=tuple(dict.fromkeys(flags)), meta=meta
        )


@register("mitigation", "position-swap")
class PositionSwap(Mitigation):
    """Judge each pair in both orders; keep verdicts that survive the swap.

    Parameters:
        on_flip: what a verdict that changes with the order becomes: "tie" or "abstain" (no verdict).

    The wrapped judge must be pairwise (ConfigError when judging) and items need ``output_b`` (DataError).
    """

    paper = "Shen et al. 2023"

    on_flip: Literal["tie", "abstain"] = "tie"
    parameter_constraints: ClassVar = {"on_flip": [Options("tie", "abstain")]}

    @classmethod
    def examples(cls) -> list[Mitigation]:
        return [cls(), cls(on_flip="abstain")]

    def wrap(self, judge: Judge) -> Judge:
        """A new judge running ``judge`` on the item and on its swapped copy."""
        return PositionSwapJudge({"original": judge, "swapped": judge}, on_flip=self.on_flip)
