"""The selector contract: frozen, seeded choosers of demonstrations, and their registry.

A :class:`Selector` decides which labelled items a judge prompt shows as few-shot
demonstrations. Like a scikit-learn estimator its parameters are its fields, and fitting
returns a fitted copy::

    sel = Stratified(seed=3).fit(train, "coherence")     # remembers the labelled pool
    demos = sel.select(2)                                 # -> list[Demo], human scores shown
    demos = knn.select(4, query=item)                     # query-dependent selectors need the item

- ``fit(pool, criterion)`` keeps the pool items that carry a finite human score for
  ``criterion`` (fitted state in fields ending in ``_``: ``pool_``, ``criterion_``,
  ``scale_``), so a fitted selector serialises with :meth:`Selector.spec` and
  :func:`selector_from_spec` rebuilds it.
- ``select(k, query=None)`` returns ``k`` :class:`~mitigate.prompt.Demo` objects built with
  :meth:`Demo.from_item` (the *human* score), never including the query item itself (a
  demo that is the judged item would hand the judge its gold label). The same fitted
  selector, ``k`` and query always give the same demos.

Every concrete selector registers itself with :func:`register_selector` under a
kebab-case name.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any, ClassVar, Self, TypeVar

from pydantic import BaseModel, ConfigDict

from mitigate.data.schema import Benchmark, Item
from mitigate.errors import ConfigError
from mitigate.prompt import Demo
from mitigate.scale import Scale

__all__ = [
    "Selector",
    "check_int",
    "register_selector",
    "registered_selectors",
    "selector_from_spec",
]

S = TypeVar("S", bound="Selector")

_SELECTORS: dict[str, type[Selector]] = {}


def register_selector(name: str) -> Any:
    """Class decorator: make a selector buildable from its spec under ``name``."""

    def deco(cls: type[S]) -> type[S]:
        if name in _SELECTORS and _SELECTORS[name] is not cls:
            raise ConfigError(f"selector name {name!r} is already registered by {_SELECTORS[name].__name__}")
        cls.registry_name = name
        _SELECTORS[name] = cls
        return cls

    return deco


def registered_selectors() -> dict[str, type[Selector]]:
    """Registered selector names -> classes."""
    return dict(_SELECTORS)


def selector_from_spec(spec: dict[str, Any] | Selector) -> Selector:
    """Rebuild a selector from :meth:`Selector.spec` output (a selector passes through)."""
    if isinstance(spec, Selector):
        return spec
    if not isinstance(spec, dict) or "name" not in spec:
        raise ConfigError(f"expected a selector spec {{'name': ..., 'params': {{...}}}}; got {spec!r}")
    cls = _SELECTORS.get(spec["name"])
    if cls is None:
        raise ConfigError(f"unknown selector {spec['name']!r}; expected one of {sorted(_SELECTORS)}")
    return cls.model_validate(spec.get("params", {}))


def check_int(owner: str, what: str, value: Any, minimum: int) -> int:
    """``value`` when it is an int >= ``minimum``; ConfigError in scikit-learn style otherwise."""
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise ConfigError(f"The '{what}' parameter of {owner} must be an int >= {minimum}. Got {value!r} instead.")
    return value


def _labelled(items: Sequence[Item], criterion: str) -> list[Item]:
    return [it for it in items if criterion in it.human and math.isfinite(it.human[criterion])]


class Selector(BaseModel):
    """Base of every demo selector: a frozen value; ``fit`` returns a fitted copy.

    Subclasses implement :meth:`_pick` (choose ``k`` items from the candidates) and may
    extend :meth:`fit`. ``query_dependent`` is True for selectors whose choice depends on
    the judged item (KNN): those need ``query=`` in :meth:`select` and are used in judging
    through :class:`~mitigate.selectors.per_item.PerItemDemos`.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")
    registry_name: ClassVar[str] = ""
    query_dependent: ClassVar[bool] = False

    pool_: tuple[Item, ...] | None = None
    criterion_: str | None = None
    scale_: Scale | None = None

    # ------------------------------------------------------------------ contract
    @classmethod
    def examples(cls) -> list[Selector]:
        """Fitted instances the shared contract tests exercise (override when defaults are not enough)."""
        return [cls().fit(example_pool(), "score")]

    def spec(self) -> dict[str, Any]:
        """``{"name": ..., "params": {...}}``: what :func:`selector_from_spec` rebuilds this from."""
        if not self.registry_name:
            raise ConfigError(f"{type(self).__name__} is not registered; decorate it with @register_selector('<name>')")
        return {"name": self.registry_name, "params": self.model_dump(mode="json")}

    @property
    def is_fitted(self) -> bool:
        """True once :meth:`fit` has run (or fitted state was given)."""
        return self.pool_ is not None and self.criterion_ is not None

    def describe(self) -> str:
        """A short label such as ``stratified(seed=0)`` for logs and search reports."""
        params = {k: v for k, v in self.model_dump(mode="json").items() if not k.endswith("_")}
        inner = ", ".join(f"{k}={v!r}" for k, v in params.items())
        return f"{self.registry_name or type(self).__name__}({inner})"

    # ------------------------------------------------------------------ fit / select
    def fit(self, pool: Benchmark | Sequence[Item], criterion: str | None = None) -> Self:
        """A fitted copy remembering the items of ``pool`` that carry a human score for ``criterion``.

        ``criterion`` may be omitted when ``pool`` is a benchmark with one criterion. The
        benchmark's human ``scale`` is kept (``scale_``) so :meth:`select` can map scores
        onto a judge prompt's scale. ConfigError when no item is labelled.
        """
        return self.model_copy(update=self._fit_state(pool, criterion))

    def _fit_state(self, pool: Benchmark | Sequence[Item], criterion: str | None) -> dict[str, Any]:
        """The base fitted fields (``pool_``, ``criterion_``, ``scale_``); subclasses add theirs."""
        name = type(self).__name__
        if isinstance(pool, Benchmark):
            items, scale = list(pool.items), pool.scale
            if criterion is None:
                if len(pool.criteria) != 1:
                    raise ConfigError(
                        f"{name}.fit needs criterion=... for benchmark {pool.name!r}, which has criteria "
                        f"{list(pool.criteria)}"
                    )
                criterion = pool.criteria[0]
        else:
            items, scale = list(pool), None
            if not all(isinstance(it, Item) for it in items):
                raise ConfigError(f"{name}.fit expected a Benchmark or a sequence of Items; got {type(pool).__name__}")
            if criterion is None:
                raise ConfigError(f"{name}.fit needs criterion=... when the pool is a list of items")
        labelled = _labelled(items, criterion)
        if not labelled:
            found = sorted({c for it in items for c in it.human})
            raise ConfigError(
                f"{name}.fit expected pool items with a human {criterion!r} score; got none among {len(items)} "
                f"items (their labels: {found or 'none'})"
            )
        ids = [it.id for it in labelled]
        if len(set(ids)) != len(ids):
            dup = next(i for i in ids if ids.count(i) > 1)
            raise ConfigError(f"{name}.fit expected unique item ids in the pool; {dup!r} appears more than once")
        return {"pool_": tuple(labelled), "criterion_": criterion, "scale_": scale}

    def select(
        self, k: int, query: Item | None = None, *, prompt_scale: Scale | None = None
    ) -> list[Demo]:
        """``k`` demos (human scores) chosen from the fitted pool; the query item is never among them.

        ``prompt_scale``: when given and the pool came from a benchmark whose human scale
        differs, each shown score is mapped onto it (see :meth:`Demo.from_item`).
        """
        name = type(self).__name__
        check_int(name, "k", k, 1)
        if not self.is_fitted:
            raise ConfigError(f"{name} is not fitted; expected `sel = sel.fit(pool, criterion)` before select()")
        if query is not None and not isinstance(query, Item):
            raise ConfigError(f"{name}.select expected query to be an Item or None; got {type(query).__name__}")
        if self.query_dependent and query is None:
            raise ConfigError(
                f"{name} chooses demos by similarity to the item being judged; expected query=<Item>, got None "
                "(wrap the judge with PerItemDemos(selector=...) to select per item)"
            )
        assert self.pool_ is not None and self.criterion_ is not None
        candidates = [it for it in self.pool_ if query is None or it.id != query.id]
        if k > len(candidates):
            extra = " (the query item itself is left out)" if len(candidates) < len(self.pool_) else ""
            raise ConfigError(
                f"The 'k' parameter of {name} asks for {k} demos, but the fitted pool has only {len(candidates)} "
                f"items with a human {self.criterion_!r} score{extra}."
            )
        picks = self._pick(k, candidates, query)
        return [
            Demo.from_item(it, self.criterion_, human_scale=self.scale_, prompt_scale=prompt_scale)
            for it in picks
        ]

    def _pick(self, k: int, candidates: list[Item], query: Item | None) -> list[Item]:
        """Choose ``k`` of ``candidates`` (at least ``k`` are given)."""
        raise NotImplementedError(f"{type(self).__name__} must implement _pick()")


def example_pool() -> list[Item]:
    """A tiny labelled pool (criterion ``"score"``) used by the selectors' ``examples()``."""
    texts = [
        ("ex-1", "The cat sat on the mat.", 1.0),
        ("ex-2", "A dog ran in the park.", 3.0),
        ("ex-3", "The cat slept on the warm mat.", 5.0),
        ("ex-4", "Stocks fell sharply on Monday.", 3.0),
    ]
    return [Item(id=i, output=t, inputs={"source": f"Source of {i}."}, human={"score": s}) for i, t, s in texts]
