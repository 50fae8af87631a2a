"""Groups ranked by their estimates, with simultaneous intervals for the ranks, separable pairs and Kendall's
tau.

Each group's interval is widened to the Bonferroni level ``1 - (1 - confidence) / K`` for ``K``
groups, so all hold at once with probability at least ``confidence`` whatever the dependence between
the groups' estimates. Then ``a`` is surely above ``b`` (*separable*) when ``a``'s low end is above
``b``'s high end, and a group's rank lies between ``1 +`` (the groups surely above it) and ``K -``
(the groups surely below it), jointly at ``confidence``. Rank 1 is the highest estimate.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from mitigate.constraints import Interval, check_param
from mitigate.errors import ConfigError
from mitigate.estimators._mean import MeanEstimate


class GroupRank(BaseModel):
    """One group's place: ``rank`` by its estimate (1 = highest), ``low``..``high`` its simultaneous rank
    interval."""

    model_config = ConfigDict(frozen=True, extra="forbid")
    group: str
    rank: int
    low: int
    high: int


class Ranking(BaseModel):
    """Groups ordered by estimate, highest first, with simultaneous rank intervals (see the module docstring),
    the ``separable`` pairs ``(above, below)`` and the ``kendall`` tau-b with each named other ordering."""

    model_config = ConfigDict(frozen=True, extra="forbid")
    confidence: float
    order: tuple[str, ...]
    ranks: tuple[GroupRank, ...]
    separable: tuple[tuple[str, str], ...] = ()
    kendall: dict[str, float | None] = Field(default_factory=dict)
    by: Literal["groups", "contrasts"] = "groups"
    """How the rank intervals were found: per-group intervals widened by Bonferroni over the groups, or every
    pairwise contrast (narrower; :func:`mitigate.estimators._contrasts.rank_by_contrasts`)."""

    def rank_of(self, group: str) -> GroupRank:
        """The rank of ``group``; ConfigError listing the groups otherwise."""
        for r in self.ranks:
            if r.group == group:
                return r
        raise ConfigError(f"expected a ranked group, one of {list(self.order)}; got {group!r}")


def kendall_tau(a: Mapping[str, float], b: Mapping[str, float]) -> float | None:
    """Kendall's tau-b between two scorings of the groups they share; None when undefined."""
    from scipy import stats  # lazy: scipy is slow to import

    shared = [g for g in a if g in b and math.isfinite(a[g]) and math.isfinite(b[g])]
    if len(shared) < 2:
        return None
    x = [a[g] for g in shared]
    y = [b[g] for g in shared]
    if len(set(x)) < 2 or len(set(y)) < 2:
        return None
    tau = float(stats.kendalltau(x, y).statistic)
    return tau if math.isfinite(tau) else None


def rank_estimates(
    estimates: Mapping[str, MeanEstimate],
    confidence: float,
    others: Mapping[str, Mapping[str, float]] | None = None,
) -> Ranking:
    """The ranking of ``estimates`` (group -> estimate) with rank intervals jointly at ``confidence``;
    ``others``: named scorings of the same groups to compare with by Kendall's tau."""
    return rank_intervals(
        {g: e.estimate for g, e in estimates.items()},
        lambda level: {g: e.interval(level) for g, e in estimates.items()},
        confidence,
        others,
    )


def rank_intervals(
    points: Mapping[str, float],
    bounds_at: Callable[[float], Mapping[str, tuple[float, float]]],
    confidence: float,
    others: Mapping[str, Mapping[str, float]] | None = None,
) -> Ranking:
    """The ranking of ``points`` (group -> point estimate) with rank intervals jointly at ``confidence``;
    ``bounds_at(level)`` gives each group's interval at the (Bonferroni) ``level``."""
    check_param("rank_intervals", "confidence", confidence, [Interval(float, 0, 1, closed="neither")])
    groups = sorted(points, key=lambda g: (-points[g], g))
    k = len(groups)
    level = 1 - (1 - confidence) / max(k, 1)
    bounds = dict(bounds_at(level))
    ranks = []
    separable = []
    for i, g in enumerate(groups):
        low, high = bounds[g]
        above = sum(1 for h in groups if h != g and bounds[h][0] > high)
        below = sum(1 for h in groups if h != g and bounds[h][1] < low)
        ranks.append(GroupRank(group=g, rank=i + 1, low=1 + above, high=k - below))
        separable += [(g, h) for h in groups[i + 1 :] if low > bounds[h][1]]
    kendall = {name: kendall_tau(dict(points), other) for name, other in (others or {}).items()}
    return Ranking(
        confidence=confidence,
        order=tuple(groups),
        ranks=tuple(ranks),
        separable=tuple(separable),
        kendall=kendall,
    )
