"""Demonstrations the user names, and the prompt mitigation that shows a fixed demo list.

- :class:`Fixed` (selector ``"fixed"``): the pool items with the given ids, in the given order.
- :class:`FixedDemos` (mitigation ``"fixed-demos"``): a prompt mitigation holding a list of
  :class:`~mitigate.prompt.Demo` values and putting them into every prompt. It is what a
  demonstration search saves as its winning pipeline (:mod:`mitigate.selectors.search`), so
  ``mitigate judge --pipeline spec.json`` reproduces the searched prompt exactly.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Self

from pydantic import field_validator

from mitigate.data.schema import Benchmark, Item
from mitigate.errors import ConfigError
from mitigate.prompt import Demo, JudgePrompt
from mitigate.selectors.base import Selector, example_pool, register_selector
from mitigate.strategies.base import Mitigation, PromptMitigation, register

__all__ = ["Fixed", "FixedDemos"]


@register_selector("fixed")
class Fixed(Selector):
    """The pool items whose ids the user gives, in that order.

    Parameters:
        ids: the item ids (unique, at least one). ``fit`` raises ConfigError naming every
            id that is not in the pool or has no human score for the criterion.

    ``select(k)`` returns the first ``k`` of them (the query item, when given, is skipped).
    """

    ids: tuple[str, ...]

    @field_validator("ids")
    @classmethod
    def _ids(cls, v: tuple[str, ...]) -> tuple[str, ...]:
        if not v:
            raise ConfigError("The 'ids' parameter of Fixed must name at least one item id. Got () instead.")
        dup = sorted({i for i in v if v.count(i) > 1})
        if dup:
            raise ConfigError(f"The 'ids' parameter of Fixed must hold unique ids. Got {dup} more than once.")
        return v

    @classmethod
    def examples(cls) -> list[Selector]:
        """A fitted instance over the example pool."""
        return [cls(ids=("ex-3", "ex-1", "ex-2")).fit(example_pool(), "score")]

    def fit(self, pool: Benchmark | Sequence[Item], criterion: str | None = None) -> Self:
        """A fitted copy; ConfigError naming the ids that are not labelled pool items."""
        state = self._fit_state(pool, criterion)
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


@register("fixed-demos")
class FixedDemos(PromptMitigation):
    """Show exactly these demonstrations in every prompt (replacing any the prompt had).

    Parameters:
        demos: the demonstrations, in display order (each an item and its gold score;
            a dict score holds one score per criterion and each prompt shows its own).

    The winning demo set of a search is saved as this mitigation.
    """

    demos: tuple[Demo, ...]

    @field_validator("demos")
    @classmethod
    def _demos(cls, v: tuple[Demo, ...]) -> tuple[Demo, ...]:
        if not v:
            raise ConfigError("The 'demos' parameter of FixedDemos must hold at least one Demo. Got () instead.")
        return v

    @classmethod
    def examples(cls) -> list[Mitigation]:
        """One instance with two small demos."""
        pool = example_pool()
        return [cls(demos=(Demo.from_item(pool[0], "score"), Demo.from_item(pool[2], "score")))]

    @classmethod
    def from_selector(cls, selector: Selector, k: int, **kw: Any) -> FixedDemos:
        """The demos a fitted, query-free selector picks (``selector.select(k, **kw)``)."""
        return cls(demos=tuple(selector.select(k, **kw)))

    def apply(self, prompt: JudgePrompt) -> JudgePrompt:
        """``prompt`` with these demos (a dict score shows the prompt's own criterion)."""
        from mitigate.strategies.perturbed_demos import _score_for

        return prompt.with_demos(
            tuple(d.model_copy(update={"score": _score_for(d, prompt)}) if isinstance(d.score, dict) else d
                  for d in self.demos)
        )
