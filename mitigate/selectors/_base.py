"""The selector contract: frozen, seeded choosers of demonstrations.

Like a scikit-learn estimator, a :class:`Selector`'s parameters are its fields and fitting returns a fitted
copy::

    sel = Stratified(seed=3).fit(train, criterion="coherence")   # remembers the labelled pool
    demos = sel.select(2)                                 # -> list[Demo], human scores shown
    demos = knn.select(4, query=item)                     # query-dependent selectors need the item
    kept = sel.with_choice(2)                             # keeps those 2 demos, not the pool

:class:`Fixed` (``"fixed"``) shows the pool items the user names.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, ClassVar, Self

from mitigate.constraints import Interval, Satisfies, check_param
from mitigate.data import Benchmark, Item, labelled_items
from mitigate.errors import ConfigError, DataError
from mitigate.judge import FitContext, Fittable, Judge
from mitigate.parse import Verdict
from mitigate.prompt import Demo
from mitigate.registry import Component, Tags, build, register
from mitigate.scale import Scale


def selector_from_spec(spec: dict[str, Any] | Selector) -> Selector:
    """Rebuild a selector from :meth:`Selector.spec` output (a selector passes through)."""
    if isinstance(spec, Selector):
        return spec
    sel = build("selector", spec)
    if not isinstance(sel, Selector):
        raise ConfigError(f"expected a selector spec; {spec!r} names a {type(sel).__name__}")
    return sel


GOLD_VERDICT: dict[str, Verdict] = {"A": "first", "B": "second", "tie": "tie"}
"""The verdict a demo shows for a gold preference (``A``: the item's ``output``, shown first)."""


def demo_item(item: Item) -> Item:
    """``item`` as a fitted selector keeps it: without per-annotator scores and metadata."""
    if not item.annotators and not item.meta:
        return item
    return item.model_copy(update={"annotators": {}, "meta": {}})


def demo_of(
    item: Item, criterion: str, *, human_scale: Scale | None = None, prompt_scale: Scale | None = None
) -> Demo:
    """The demo ``item`` makes: its human score, or its gold preference as a verdict."""
    if criterion not in item.human and criterion in item.preference:
        return Demo(item=item, verdict=GOLD_VERDICT[item.preference[criterion]])
    return Demo.from_item(item, criterion, human_scale=human_scale, prompt_scale=prompt_scale)


def resolve_criterion(train: Benchmark, judge: Judge | None, criterion: str | None) -> str:
    """The human-label criterion demos are scored on: ``criterion``; else the benchmark's only one; else
    the only criterion of the judge's prompts the benchmark labels. ConfigError when still ambiguous;
    DataError when no item is labelled for it."""
    if criterion is None:
        if len(train.criteria) == 1:
            criterion = train.criteria[0]
        else:
            names: list[str] = []
            if judge is not None:
                names = list(dict.fromkeys(c.name for leaf in judge.leaves() for c in leaf.prompt.criteria))
            known = [n for n in names if n in train.criteria]
            if len(known) != 1:
                raise ConfigError(
                    f"cannot tell which human label to show in demos: benchmark {train.name!r} has criteria "
                    f"{list(train.criteria)} and the judge's prompts score {names}; name one with "
                    "criterion=..."
                )
            criterion = known[0]
    if not labelled_items(train.items, criterion):
        found = sorted({c for it in train.items for c in (*it.human, *it.preference)})
        raise DataError(
            f"expected human scores for criterion {criterion!r} (or gold preferences) in benchmark "
            f"{train.name!r}; its items have labels for {found or 'nothing'}",
            criterion=criterion,
        )
    return criterion


class Selector(Component, Fittable):
    """Base of every demo selector: a frozen value; ``fit`` returns a fitted copy.

    Subclasses implement :meth:`_pick`. Tags: ``query_dependent`` (:meth:`select` needs the judged item),
    ``calls_judge_while_fitting``. Fitted: ``criterion_``, ``scale_``, ``n_pool_`` and ``pool_`` (or, after
    :meth:`with_choice`, ``chosen_``).
    """

    declared_tags: ClassVar[Tags] = Tags(needs_fitting=True)

    pool_: tuple[Item, ...] | None = None
    chosen_: tuple[Item, ...] | None = None
    criterion_: str | None = None
    scale_: Scale | None = None
    n_pool_: int | None = None

    @classmethod
    def examples(cls) -> list[Selector]:
        """Fitted instances the contract checks exercise (override when defaults are not enough)."""
        return [cls().fit(example_pool(), criterion="score")]

    @property
    def is_fitted(self) -> bool:
        return (self.pool_ is not None or self.chosen_ is not None) and self.criterion_ is not None

    def describe(self) -> str:
        """A short label such as ``stratified(seed=0)`` for logs and search reports."""
        params = {k: v for k, v in self.model_dump(mode="json").items() if not k.endswith("_")}
        inner = ", ".join(f"{k}={v!r}" for k, v in params.items())
        return f"{self.registry_name or type(self).__name__}({inner})"

    def unfitted(self) -> Self:
        """A copy with the fitted state (fields ending in ``_``) cleared: the parameters only."""
        return type(self).model_validate({k: v for k, v in self.model_dump().items() if not k.endswith("_")})

    async def learn(self, train: Benchmark | Sequence[Item], judge: Judge | None, ctx: FitContext) -> Self:
        """A fitted copy remembering the items of ``train`` labelled for the criterion."""
        return self.model_copy(update=self.fit_state(train, ctx.criterion, judge))

    def fit_state(
        self, pool: Benchmark | Sequence[Item], criterion: str | None, judge: Judge | None = None
    ) -> dict[str, Any]:
        """The base fitted fields for ``pool``; subclasses add theirs."""
        name = type(self).__name__
        if isinstance(pool, Benchmark):
            items, scale, what = list(pool.items), pool.scale, f"benchmark {pool.name!r}"
            if criterion is None and len(pool.criteria) == 1:
                criterion = pool.criteria[0]
        else:
            items, scale, what = list(pool), None, "a list of items"
            if not all(isinstance(it, Item) for it in items):
                raise ConfigError(
                    f"{name}.fit expected a Benchmark or a sequence of Items; got {type(pool).__name__}"
                )
        if criterion is None:
            criterion = _criterion_of_judge(name, items, judge, what)
        kept = labelled_items(items, criterion)
        if not kept:
            found = sorted({c for it in items for c in (*it.human, *it.preference)})
            raise ConfigError(
                f"{name}.fit expected pool items with a human {criterion!r} score or gold preference; got "
                f"none among {len(items)} items (their labels: {found or 'none'})"
            )
        ids = [it.id for it in kept]
        if len(set(ids)) != len(ids):
            dup = next(i for i in ids if ids.count(i) > 1)
            raise ConfigError(
                f"{name}.fit expected unique item ids in the pool; {dup!r} appears more than once"
            )
        pool_ = tuple(demo_item(it) for it in kept)
        return {
            "pool_": pool_,
            "chosen_": None,
            "criterion_": criterion,
            "scale_": scale,
            "n_pool_": len(kept),
        }

    def with_choice(self, k: int) -> Self:
        """The fitted copy keeping only the ``k`` items ``select(k)`` chooses (``chosen_``), not the pool.
        It answers ``select(k)`` with the same demos and refuses any other ``k`` or a query; a
        query-dependent selector is returned as it is."""
        if self.tags.query_dependent:
            return self
        picks = self._choose(k, None)
        if self.chosen_ is not None:
            return self
        return self.model_copy(update={"pool_": None, "chosen_": tuple(picks)})

    def select(self, k: int, query: Item | None = None, *, prompt_scale: Scale | None = None) -> list[Demo]:
        """``k`` demos (human scores) from the fitted pool, never the query item itself."""
        picks = self._choose(k, query)
        criterion = str(self.criterion_)
        return [demo_of(it, criterion, human_scale=self.scale_, prompt_scale=prompt_scale) for it in picks]

    def _choose(self, k: int, query: Item | None) -> list[Item]:
        """The ``k`` items :meth:`select` shows, after its checks (k, fitted, query)."""
        name = type(self).__name__
        check_param(name, "k", k, [Interval(int, 1)])
        if not self.is_fitted:
            raise ConfigError(
                f"{name} is not fitted; expected `sel = sel.fit(pool, criterion=...)` before select()"
            )
        if query is not None and not isinstance(query, Item):
            raise ConfigError(
                f"{name}.select expected query to be an Item or None; got {type(query).__name__}"
            )
        if self.tags.query_dependent and query is None:
            raise ConfigError(
                f"{name} chooses demos by similarity to the item being judged; expected query=<Item>, got "
                "None (wrap the judge with Demos(selector=..., per_item=True) to select per item)"
            )
        if self.chosen_ is not None:
            if k != len(self.chosen_) or query is not None:
                asked = f"select({k}{', query=...' if query is not None else ''})"
                n = len(self.chosen_)
                raise ConfigError(
                    f"{name} keeps only the {n} demos it chose (with_choice({n})), not its pool; expected "
                    f"select({n}) without a query, got {asked} (fit it again to choose another set)"
                )
            return list(self.chosen_)
        assert self.pool_ is not None and self.criterion_ is not None
        candidates = [it for it in self.pool_ if query is None or it.id != query.id]
        if k > len(candidates):
            extra = " (the query item itself is left out)" if len(candidates) < len(self.pool_) else ""
            raise ConfigError(
                f"The 'k' parameter of {name} asks for {k} demos, but the fitted pool has only "
                f"{len(candidates)} items with a human {self.criterion_!r} score{extra}."
            )
        return self._pick(k, candidates, query)

    def _pick(self, k: int, candidates: list[Item], query: Item | None) -> list[Item]:
        """Choose ``k`` of ``candidates`` (at least ``k`` are given)."""
        raise NotImplementedError(f"{type(self).__name__} must implement _pick()")


def _criterion_of_judge(owner: str, items: Sequence[Item], judge: Judge | None, what: str) -> str:
    """The one criterion of ``judge``'s prompts that ``items`` label (else ConfigError)."""
    leaves = judge.leaves() if judge is not None else []
    names = list(dict.fromkeys(c.name for leaf in leaves for c in leaf.prompt.criteria))
    known = [n for n in names if labelled_items(items, n)]
    if len(known) != 1:
        labels = sorted({c for it in items for c in (*it.human, *it.preference)})
        raise ConfigError(
            f"{owner}.fit needs criterion=... for {what} (human labels {labels}); the judge's prompts score "
            f"{names or 'nothing (no judge given)'}"
        )
    return known[0]


def example_pool() -> list[Item]:
    """A tiny labelled pool (criterion ``"score"``) used by the selectors' ``examples()``."""
    texts = [
        ("ex-1", "The cat sat on the mat.", 1.0),
        ("ex-2", "A dog ran in the park.", 3.0),
        ("ex-3", "The cat slept on the warm mat.", 5.0),
        ("ex-4", "Stocks fell sharply on Monday.", 3.0),
    ]
    return [
        Item(id=i, output=t, inputs={"source": f"Source of {i}."}, human={"score": s}) for i, t, s in texts
    ]


def _unique_ids(value: Any) -> bool:
    return (
        isinstance(value, list | tuple)
        and len(value) > 0
        and all(isinstance(i, str) for i in value)
        and len(set(value)) == len(value)
    )


@register("selector", "fixed")
class Fixed(Selector):
    """The pool items whose ids the user gives, in that order.

    Parameters:
        ids: the item ids (unique, at least one); ``fit`` names every one that is not a labelled pool item.
    """

    ids: tuple[str, ...]
    parameter_constraints: ClassVar = {
        "ids": [Satisfies(_unique_ids, "a non-empty list of unique ids of pool items")]
    }

    @classmethod
    def examples(cls) -> list[Selector]:
        return [cls(ids=("ex-3", "ex-1", "ex-2")).fit(example_pool(), criterion="score")]

    async def learn(self, train: Benchmark | Sequence[Item], judge: Judge | None, ctx: FitContext) -> Self:
        """A fitted copy; ConfigError naming the ids that are not labelled pool items."""
        state = self.fit_state(train, ctx.criterion, judge)
        known = {it.id for it in state["pool_"]}
        unknown = [i for i in self.ids if i not in known]
        if unknown:
            present = {it.id for it in (train.items if isinstance(train, Benchmark) else train)}
            missing = [i for i in unknown if i not in present]
            unlabelled = [i for i in unknown if i in present]
            parts = [f"not in the pool: {missing}"] if missing else []
            if unlabelled:
                parts.append(f"without a human {state['criterion_']!r} score: {unlabelled}")
            raise ConfigError(
                f"Fixed expected ids of labelled pool items; got ids {'; '.join(parts)} "
                f"(the pool has {len(known)} labelled items, e.g. {sorted(known)[:5]})",
                unknown=unknown,
            )
        return self.model_copy(update=state)

    def _pick(self, k: int, candidates: list[Item], query: Item | None) -> list[Item]:
        by_id = {it.id: it for it in candidates}
        ordered = [by_id[i] for i in self.ids if i in by_id]
        if k > len(ordered):
            raise ConfigError(
                f"The 'k' parameter of Fixed asks for {k} demos, but it holds {len(ordered)} usable ids "
                f"{[it.id for it in ordered]}."
            )
        return ordered[:k]
