"""Train / dev / test splits of labelled items for the demo search.

The train split is the demo pool, dev is where candidates are scored, and test is held out
to report the winner on data it was not chosen on. :func:`split_items` splits by group
(``doc_id``) so outputs about the same source never straddle two splits.
"""

from __future__ import annotations

import math
import random as _random
from collections.abc import Sequence
from typing import Literal

from pydantic import BaseModel, ConfigDict

from mitigate.data.schema import Benchmark, Item
from mitigate.errors import ConfigError, DataError
from mitigate.scale import Scale

__all__ = ["Split", "split_items"]


class Split(BaseModel):
    """Train (the demo pool), dev (where candidates are scored) and test (held out) items."""

    model_config = ConfigDict(frozen=True, extra="forbid")
    train: tuple[Item, ...]
    dev: tuple[Item, ...]
    test: tuple[Item, ...]
    scale: Scale | None = None

    def ids(self) -> dict[str, tuple[str, ...]]:
        """The item ids of each split."""
        return {"train": tuple(i.id for i in self.train), "dev": tuple(i.id for i in self.dev),
                "test": tuple(i.id for i in self.test)}


def split_items(
    data: Benchmark | Sequence[Item],
    fractions: tuple[float, float, float] = (0.5, 0.25, 0.25),
    *,
    seed: int = 0,
    criterion: str | None = None,
    group_by: Literal["auto", "doc_id", "none"] = "auto",
) -> Split:
    """A seeded train/dev/test split of ``data`` with the given ``fractions``.

    With ``criterion``, only items with a finite human score for it are kept. Items are
    split by group so that outputs about the same source never straddle two splits
    (``group_by="auto"``: by ``doc_id`` when every item has one). Groups are shuffled
    with ``seed`` and filled into train, dev, test in turn until each reaches its share.
    DataError when a split would be empty.
    """
    items = list(data.items) if isinstance(data, Benchmark) else list(data)
    scale = data.scale if isinstance(data, Benchmark) else None
    if len(fractions) != 3 or any((not math.isfinite(f)) or f <= 0 for f in fractions):
        raise ConfigError(f"expected three positive split fractions (train, dev, test); got {fractions!r}")
    if criterion is not None:
        items = [it for it in items if criterion in it.human and math.isfinite(it.human[criterion])]
    use_docs = group_by == "doc_id" or (group_by == "auto" and items and all(it.doc_id for it in items))
    if group_by == "doc_id" and not all(it.doc_id for it in items):
        raise DataError("split_items(group_by='doc_id') needs a doc_id on every item; some have none")
    groups: dict[str, list[Item]] = {}
    for it in items:
        groups.setdefault(str(it.doc_id) if use_docs else it.id, []).append(it)
    keys = list(groups)
    _random.Random(seed).shuffle(keys)
    total = sum(fractions)
    targets = [len(items) * f / total for f in fractions]
    parts: list[list[Item]] = [[], [], []]
    part = 0
    for key in keys:
        while part < 2 and len(parts[part]) >= targets[part] - 1e-9:
            part += 1
        parts[part].extend(groups[key])
    if any(not p for p in parts):
        sizes = [len(p) for p in parts]
        raise DataError(
            f"expected train, dev and test splits that are not empty; got sizes {sizes} from {len(items)} items in "
            f"{len(keys)} groups (use more data or other fractions)"
        )
    return Split(train=tuple(parts[0]), dev=tuple(parts[1]), test=tuple(parts[2]), scale=scale)
