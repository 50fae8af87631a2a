"""Splitting a benchmark by document (outputs about one source never straddle two splits): train / test for
``compare --train`` (:func:`train_test_split`), train / dev / test for the demo search
(:func:`split_items`)."""

from __future__ import annotations

import math
import random as _random
from collections.abc import Sequence
from typing import Literal

from pydantic import BaseModel, ConfigDict

from mitigate.constraints import Interval, check_param
from mitigate.data._schema import Benchmark, Item
from mitigate.errors import ConfigError, DataError
from mitigate.scale import Scale


class Split(BaseModel):
    """Train (the demo pool), dev (where candidates are scored) and test (held out) items."""

    model_config = ConfigDict(frozen=True, extra="forbid")
    train: tuple[Item, ...]
    dev: tuple[Item, ...]
    test: tuple[Item, ...]
    scale: Scale | None = None

    def ids(self) -> dict[str, tuple[str, ...]]:
        """The item ids of each split."""
        return {name: tuple(i.id for i in getattr(self, name)) for name in ("train", "dev", "test")}


def split_items(
    data: Benchmark | Sequence[Item],
    fractions: tuple[float, float, float] = (0.5, 0.25, 0.25),
    *,
    seed: int = 0,
    criterion: str | None = None,
    group_by: Literal["auto", "doc_id", "none"] = "auto",
) -> Split:
    """A seeded train/dev/test split of ``data`` by document (:func:`split_by_document`; ``group_by="auto"``:
    by ``doc_id`` when every item has one), keeping only items labelled on ``criterion`` when given; DataError
    when a split would be empty."""
    items = list(data.items) if isinstance(data, Benchmark) else list(data)
    scale = data.scale if isinstance(data, Benchmark) else None
    if len(fractions) != 3 or any((not math.isfinite(f)) or f <= 0 for f in fractions):
        raise ConfigError(f"expected three positive split fractions (train, dev, test); got {fractions!r}")
    if criterion is not None:
        items = labelled_items(items, criterion)
    if group_by == "doc_id" and not all(it.doc_id for it in items):
        raise DataError("split_items(group_by='doc_id') needs a doc_id on every item; some have none")
    parts, groups = split_by_document(items, fractions, seed=seed, by_doc=group_by != "none")
    if any(not p for p in parts):
        sizes = [len(p) for p in parts]
        raise DataError(
            f"expected train, dev and test splits that are not empty; got sizes {sizes} from {len(items)} "
            f"items in {groups} groups (use more data or other fractions)"
        )
    return Split(train=tuple(parts[0]), dev=tuple(parts[1]), test=tuple(parts[2]), scale=scale)


def split_by_document(
    items: Sequence[Item], fractions: Sequence[float], *, seed: int = 0, by_doc: bool = True
) -> tuple[list[list[Item]], int]:
    """``items`` in ``len(fractions)`` parts, and the number of groups: the documents (each item alone when
    ``by_doc`` is off or an item has no ``doc_id``), shuffled with ``seed``, fill the parts in turn up to
    each one's share."""
    use_docs = by_doc and bool(items) and all(it.doc_id for it in items)
    groups: dict[str, list[Item]] = {}
    for it in items:
        groups.setdefault(str(it.doc_id) if use_docs else it.id, []).append(it)
    keys = list(groups)
    _random.Random(seed).shuffle(keys)
    total = sum(fractions)
    targets = [len(items) * f / total for f in fractions]
    parts: list[list[Item]] = [[] for _ in fractions]
    last = len(parts) - 1
    part = 0
    for key in keys:
        while part < last and len(parts[part]) >= targets[part] - 1e-9:
            part += 1
        parts[part].extend(groups[key])
    return parts, len(keys)


def train_test_split(
    bench: Benchmark, fraction: float, *, seed: int = 0, criterion: str | None = None
) -> tuple[Benchmark, Benchmark]:
    """Split ``bench`` into train and test by document (:func:`split_by_document`), both in the benchmark's
    order; with ``criterion`` train keeps only items labelled on it. ConfigError for a fraction outside
    (0, 1), DataError when either side would be empty."""
    if not (isinstance(fraction, float | int) and 0 < fraction < 1):
        raise ConfigError(f"expected a train fraction strictly between 0 and 1 (e.g. 0.5); got {fraction!r}")
    (train, test), groups = split_by_document(bench.items, (fraction, 1 - fraction), seed=seed)
    if criterion is not None:
        train = [it for it in train if labelled(it, criterion)]
    if not train or not test:
        raise DataError(
            f"a train fraction of {fraction} leaves {len(train)} labelled train and {len(test)} "
            f"test items of {bench.name!r} ({groups} documents); expected both to be non-empty"
        )
    keep_order = {it.id: i for i, it in enumerate(bench.items)}
    for side in (train, test):
        side.sort(key=lambda it: keep_order[it.id])
    return (
        bench.model_copy(update={"name": f"{bench.name}-train", "items": tuple(train)}),
        bench.model_copy(update={"name": bench.name, "items": tuple(test)}),
    )


def labelled(item: Item, criterion: str) -> bool:
    """Whether ``item`` carries a label on ``criterion``: a finite human score or a gold preference."""
    value = item.human.get(criterion)
    return (value is not None and math.isfinite(value)) or criterion in item.preference


def labelled_items(items: Sequence[Item], criterion: str) -> list[Item]:
    """The items of ``items`` carrying a label on ``criterion`` (see :func:`labelled`), in order."""
    return [it for it in items if labelled(it, criterion)]


def select_items(items: Sequence[Item], limit: int | None) -> list[Item]:
    """The items a comparison judges: all, or the first ``limit``; grouped by document (in order of first
    appearance) when every item has a ``doc_id``, so a small limit still holds every system's output for the
    first documents (per-document correlation and #CP need them)."""
    check_param("compare", "limit", limit, [Interval(int, 1), None])
    ordered = list(items)
    if ordered and all(i.doc_id is not None for i in ordered):
        groups: dict[str, list[Item]] = {}
        for it in ordered:
            groups.setdefault(str(it.doc_id), []).append(it)
        ordered = [it for group in groups.values() for it in group]
    return ordered if limit is None else ordered[:limit]
