"""Choosing demonstrations per judged item: the ``per-item-demos`` mitigation.

A prompt mitigation never sees the item, so a query-dependent selector such as
:class:`~mitigate.selectors.knn.KNN` cannot be one. :class:`PerItemDemos` wraps the judge
instead: for every item, it asks the fitted selector for ``k`` demos given that item, adds
them to every inner prompt (after any demos the prompts already hold), and delegates. The
chosen ids are recorded in ``Judgment.meta["demo_ids"]``.

It is a :class:`~mitigate.judge.CompositeJudge`, so a prompt mitigation placed after it in
a pipeline still reaches every inner prompt through ``map_prompts``.
"""

from __future__ import annotations

from typing import Any

from pydantic import field_serializer, field_validator

from mitigate.data.schema import Item
from mitigate.errors import ConfigError
from mitigate.judge import CompositeJudge, Judge, Judgment, PromptJudge
from mitigate.prompt import Demo
from mitigate.selectors.base import Selector, check_int, selector_from_spec
from mitigate.strategies.base import Mitigation, register

__all__ = ["PerItemDemos", "PerItemDemosJudge"]

INNER = "inner"


class PerItemDemosJudge(CompositeJudge):
    """The judge :class:`PerItemDemos` builds: selects demos for each item, then delegates to ``inner``."""

    kind = "per-item-demos"

    def __init__(self, inner: Judge, selector: Selector, k: int) -> None:
        super().__init__({INNER: inner})
        self.selector = selector
        self.k = k

    def params(self) -> dict[str, Any]:
        """The selector's spec and ``k``."""
        return {"selector": self.selector.spec(), "k": self.k}

    def demos_for(self, item: Item, leaf: PromptJudge) -> list[Demo]:
        """The demos shown to ``leaf`` when judging ``item`` (scores on the leaf prompt's scale)."""
        return self.selector.select(self.k, query=item, prompt_scale=leaf.prompt.scale)

    async def judge(self, item: Item) -> Judgment:
        """Judge ``item`` with its own demos added to every inner prompt."""
        chosen: list[str] = []

        def with_demos(leaf: PromptJudge) -> Judge:
            demos = self.demos_for(item, leaf)
            if not chosen:
                chosen.extend(d.item.id for d in demos)
            return leaf.with_prompt(leaf.prompt.with_demos((*leaf.prompt.demos, *demos)))

        inner = self.children[INNER].map_leaves(with_demos)
        judgment = await inner.judge(item)
        return judgment.model_copy(update={"meta": {**judgment.meta, "demo_ids": chosen}})


@register("per-item-demos")
class PerItemDemos(Mitigation):
    """Show each judged item its own ``k`` demos, chosen by a fitted selector given that item.

    Parameters:
        selector: a fitted selector (any; meant for query-dependent ones such as
            :class:`~mitigate.selectors.knn.KNN`). It serialises as its own spec.
        k: how many demos per item.

    The judged item is never among its own demos (selectors leave the query out).
    """

    selector: Selector
    k: int = 4

    @field_validator("selector", mode="before")
    @classmethod
    def _selector(cls, v: Any) -> Selector:
        sel = selector_from_spec(v)
        if not sel.is_fitted:
            raise ConfigError(
                f"The 'selector' parameter of PerItemDemos must be a fitted selector. Got an unfitted "
                f"{type(sel).__name__} instead (call .fit(pool, criterion) first)."
            )
        return sel

    @field_validator("k")
    @classmethod
    def _k(cls, v: int) -> int:
        return check_int("PerItemDemos", "k", v, 1)

    @field_serializer("selector")
    def _dump_selector(self, selector: Selector) -> dict[str, Any]:
        return selector.spec()

    @classmethod
    def examples(cls) -> list[Mitigation]:
        """A KNN selector over the example pool, 2 demos per item."""
        from mitigate.selectors.knn import KNN

        return [cls(selector=KNN.examples()[0], k=2)]

    def wrap(self, judge: Judge) -> Judge:
        """A :class:`PerItemDemosJudge` over ``judge`` (which is not changed)."""
        if not isinstance(judge, Judge):
            raise ConfigError(f"PerItemDemos.wrap expected a Judge; got {type(judge).__name__}")
        return PerItemDemosJudge(judge, self.selector, self.k)
