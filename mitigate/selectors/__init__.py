"""Choosing which demonstrations go into a judge prompt: the one way demos are chosen.

Importing this package registers every selector (kind ``"selector"``): :class:`Random`, :class:`Stratified`,
:class:`KNN`, :class:`HighestRS` and :class:`Fixed`. It imports nothing from :mod:`mitigate.strategies` or
:mod:`mitigate.search`, which sit above it (a top-level ``selectors`` would shadow the standard library's).
"""

from typing import TYPE_CHECKING

from mitigate._lazy import lazy_exports

if TYPE_CHECKING:
    from mitigate.selectors._base import (
        GOLD_VERDICT,
        Fixed,
        Selector,
        demo_item,
        demo_of,
        example_pool,
        resolve_criterion,
        selector_from_spec,
    )
    from mitigate.selectors._highest_rs import HighestRS, judge_score, rank_by_rs
    from mitigate.selectors._knn import KNN, item_text
    from mitigate.selectors._stratified import Random, Stratified, balanced_quotas, stratified_pick

__getattr__, __dir__, __all__ = lazy_exports(__name__)
