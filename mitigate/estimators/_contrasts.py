"""Paired contrasts between groups: the difference of two groups' means, with intervals that hold jointly.

Groups are estimated on disjoint items from their own labels, so two groups' estimates are independent but
for the judge slope they may share (``ppi`` tuned over all groups): the variance of ``a - b`` is
``se_a^2 + se_b^2 - 2 gap_a gap_b Var(slope)`` (:attr:`MeanEstimate.slope_gap`), on Welch-Satterthwaite's
degrees of freedom. The intervals are Bonferroni-adjusted over the contrasts asked for, so all hold at once
with probability at least ``confidence``. A group whose labels were all equal has no standard error: a
contrast with it joins the two groups' own intervals, each at half the contrast's error rate (valid by the
union bound).

:func:`rank_by_contrasts` turns every pairwise contrast into rank intervals: a group's rank lies between
``1 +`` (the groups surely above it) and ``K -`` (those surely below), which holds jointly because all
``K(K-1)/2`` contrast intervals do, and is narrower than comparing per-group intervals.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Mapping, Sequence

from pydantic import BaseModel, ConfigDict

from mitigate.errors import ConfigError
from mitigate.estimators._mean import MeanEstimate
from mitigate.estimators._ranking import GroupRank, Ranking, kendall_tau
from mitigate.estimators._regression import t_quantile


class Contrast(BaseModel):
    """``a - b``: the difference of two groups' estimates, its standard error and degrees of freedom, and its
    interval at the family's joint ``confidence`` (Bonferroni over ``family`` contrasts)."""

    model_config = ConfigDict(frozen=True, extra="forbid")
    a: str
    b: str
    estimate: float
    low: float
    high: float
    se: float | None
    df: float | None
    confidence: float
    family: int

    @property
    def separated(self) -> bool:
        """True when the interval excludes 0 (one group is surely above the other)."""
        return self.low > 0 or self.high < 0


def contrast(
    a: str, b: str, ea: MeanEstimate, eb: MeanEstimate, level: float, slope_var: float, span: float = math.inf
) -> Contrast:
    """``a - b`` with its interval at ``level`` (already adjusted for the family), cut to ``±span`` (the
    labels' range: no difference is larger)."""
    d = ea.estimate - eb.estimate
    se: float | None = None
    df: float | None = None
    if ea.constant_labels is not None or eb.constant_labels is not None:
        split = 1 - (1 - level) / 2
        (la, ha), (lb, hb) = ea.interval(split), eb.interval(split)
        low, high = la - hb, ha - lb
    else:
        va, vb = ea.se**2, eb.se**2
        var = max(va + vb - 2 * ea.slope_gap * eb.slope_gap * slope_var, 0.0)
        parts = [(v, k) for v, k in ((va, ea.df), (vb, eb.df)) if v > 0 and k > 0]
        denominator = sum(v * v / k for v, k in parts)
        df = float((va + vb) ** 2 / denominator) if denominator > 0 else math.inf
        se = math.sqrt(var)
        half = float(t_quantile(level, df)) * se
        low, high = d - half, d + half
    return Contrast(
        a=a,
        b=b,
        estimate=d,
        low=max(low, -span),
        high=min(high, span),
        se=se,
        df=df,
        confidence=level,
        family=1,
    )


def contrasts(
    estimates: Mapping[str, MeanEstimate],
    pairs: Sequence[tuple[str, str]],
    confidence: float,
    slope_var: float = 0.0,
    span: float = math.inf,
) -> tuple[Contrast, ...]:
    """Every ``(a, b)`` of ``pairs`` as a contrast ``a - b``, the intervals holding jointly at ``confidence``
    (Bonferroni over the pairs); ``slope_var``: the variance of a slope the groups share (``ppi``); ``span``:
    the labels' range (the intervals are cut to ±span)."""
    for a, b in pairs:
        for g in (a, b):
            if g not in estimates:
                raise ConfigError(f"expected contrasts between groups, among {list(estimates)}; got {g!r}")
        if a == b:
            raise ConfigError(f"expected a contrast between two different groups; got {a!r} twice")
    level = 1 - (1 - confidence) / max(len(pairs), 1)
    out = []
    for a, b in pairs:
        c = contrast(a, b, estimates[a], estimates[b], level, slope_var, span)
        out.append(c.model_copy(update={"confidence": confidence, "family": len(pairs)}))
    return tuple(out)


def parse_contrasts(text: str, groups: Sequence[str]) -> list[tuple[str, str]]:
    """``--contrasts`` text: ``all`` (every pair) or pairs ``A:B`` separated by commas; ConfigError naming the
    groups for a bad one."""
    if text.strip() == "all":
        return list(itertools.combinations(groups, 2))
    pairs = []
    for part in [p.strip() for p in text.split(",") if p.strip()]:
        a, sep, b = part.partition(":")
        if not sep or a.strip() not in groups or b.strip() not in groups or a.strip() == b.strip():
            raise ConfigError(
                f"expected --contrasts 'all' or pairs A:B of two different groups among {list(groups)}; "
                f"got {part!r}"
            )
        pairs.append((a.strip(), b.strip()))
    if not pairs:
        raise ConfigError(f"expected --contrasts 'all' or pairs A:B; got {text!r}")
    return pairs


def rank_by_contrasts(
    estimates: Mapping[str, MeanEstimate],
    confidence: float,
    slope_var: float = 0.0,
    others: Mapping[str, Mapping[str, float]] | None = None,
    span: float = math.inf,
) -> Ranking:
    """The ranking of ``estimates`` (highest first) with rank intervals and separable pairs from every
    pairwise contrast, jointly at ``confidence`` (see the module docstring)."""
    points = {g: e.estimate for g, e in estimates.items()}
    groups = sorted(points, key=lambda g: (-points[g], g))
    k = len(groups)
    found = (
        contrasts(estimates, list(itertools.combinations(groups, 2)), confidence, slope_var, span)
        if k > 1
        else ()
    )
    above = {(c.a, c.b) for c in found if c.low > 0} | {(c.b, c.a) for c in found if c.high < 0}
    ranks = [
        GroupRank(
            group=g,
            rank=i + 1,
            low=1 + sum((h, g) in above for h in groups),
            high=k - sum((g, h) in above for h in groups),
        )
        for i, g in enumerate(groups)
    ]
    separable = tuple(pair for pair in itertools.combinations(groups, 2) if pair in above)
    kendall = {name: kendall_tau(points, other) for name, other in (others or {}).items()}
    return Ranking(
        confidence=confidence,
        order=tuple(groups),
        ranks=tuple(ranks),
        separable=separable,
        kendall=kendall,
        by="contrasts",
    )
