"""Demonstrations the user names: :class:`Fixed` (selector ``"fixed"``), the pool items with the given ids,
in order."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, ClassVar, Self

from mitigate.constraints import Satisfies
from mitigate.data import Benchmark, Item
from mitigate.errors import ConfigError
from mitigate.judge import FitContext, Judge
from mitigate.registry import register
from mitigate.selectors._base import Selector, example_pool


def _unique_ids(value: Any) -> bool:
    return (
        isinstance(value, list | tuple)
        and len(value) > 0
        and all(isinstance(i, str) for i in value)
        and len(set(value)) == len(value)
    )


@register("selector", "fixed")
class Fixed(Selector):
    """The pool items whose ids the user gives (unique, at least one), in that order; ``select(k)`` returns
    the first ``k``.

    ``fit`` raises ConfigError naming every id that is not in the pool or has no human label.
    """

    ids: tuple[str, ...]
    parameter_constraints: ClassVar = {
        "ids": [Satisfies(_unique_ids, "a non-empty list of unique ids of pool items")]
    }

    @classmethod
    def examples(cls) -> list[Selector]:
        """A fitted instance over the example pool."""
        return [cls(ids=("ex-3", "ex-1", "ex-2")).fit(example_pool(), criterion="score")]

    async def learn(self, train: Benchmark | Sequence[Item], judge: Judge | None, ctx: FitContext) -> Self:
        """A fitted copy; ConfigError naming the ids that are not labelled pool items."""
        pool = train
        state = self.fit_state(pool, ctx.criterion, judge)
        known = {it.id for it in state["pool_"]}
        unknown = [i for i in self.ids if i not in known]
        if unknown:
            every = pool.items if isinstance(pool, Benchmark) else list(pool)
            present = {it.id for it in every}
            unlabelled = [i for i in unknown if i in present]
            missing = [i for i in unknown if i not in present]
            parts = []
            if missing:
                parts.append(f"not in the pool: {missing}")
            if unlabelled:
                parts.append(f"without a human {state['criterion_']!r} score: {unlabelled}")
            raise ConfigError(
                f"Fixed expected ids of labelled pool items; got ids {'; '.join(parts)} "
                f"(the pool has {len(known)} labelled items, e.g. {sorted(known)[:5]})",
                unknown=unknown,
            )
        return self.model_copy(update=state)

    def _pick(self, k: int, candidates: list[Item], query: Item | None) -> list[Item]:
        """The first ``k`` of ``ids`` among the candidates."""
        by_id = {it.id: it for it in candidates}
        ordered = [by_id[i] for i in self.ids if i in by_id]
        if k > len(ordered):
            raise ConfigError(
                f"The 'k' parameter of Fixed asks for {k} demos, but it holds {len(ordered)} usable ids "
                f"{[it.id for it in ordered]}."
            )
        return ordered[:k]
