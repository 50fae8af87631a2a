"""How many labels a group needs, and which items to label next.

:func:`labels_needed` predicts the half-width with ``n`` labels drawn at random from a labelled pilot's
spread ``s2`` (on ``n - p`` degrees of freedom)::

    half_width(n) = t(n - p) * sqrt(s2 * (1 - n/N) / n * (1 + (p - 1) / (n - 1))  [+ s2_labels / N])

Active selection (Zrnic & Candès 2024) labels the items where the prediction is least sure more often
and weights each label by 1 / its inclusion probability, which keeps the estimate unbiased: an
uncertainty proxy per item (:func:`uncertainty`), probabilities proportional to it above a uniform
floor (:func:`inclusion_probabilities`), randomised systematic sampling (:func:`systematic_draw`), and
the labels spread over the groups where the predicted variance drops most (:func:`allocate`).
"""

from __future__ import annotations

import heapq
import math
from collections.abc import Callable, Mapping

import numpy as np
from pydantic import BaseModel, ConfigDict

from mitigate.constraints import Interval, check_param
from mitigate.errors import ConfigError
from mitigate.estimators._regression import t_quantile


class MethodPlan(BaseModel):
    """One method's label budget for one group: labels now, the total ``needed`` for the half-width (None when
    not reachable), how many ``more``, the half-width predicted now, and a ``note`` without an answer."""

    model_config = ConfigDict(frozen=True, extra="forbid")
    method: str
    labelled: int
    needed: int | None = None
    more: int | None = None
    half_width_now: float | None = None
    note: str | None = None


def half_width_at(
    n: np.ndarray | int,
    s2: float,
    p: int,
    N: int,
    confidence: float,
    *,
    s2_labels: float = 0.0,
    population: bool = False,
) -> np.ndarray:
    """The predicted half-width at ``n`` labels (see the module docstring); NaN where ``n <= p``."""
    n_arr = np.asarray(n, dtype=float)
    df = n_arr - p
    ok = df >= 1
    safe_n = np.where(ok, n_arr, p + 1.0)
    fpc = np.clip(1 - safe_n / N, 0.0, 1.0)
    slope = 1 + (p - 1) / np.maximum(safe_n - 1, 1.0)
    variance = s2 * fpc / safe_n * slope + (s2_labels / N if population else 0.0)
    out = t_quantile(confidence, np.where(ok, df, 1.0)) * np.sqrt(variance)
    return np.where(ok, out, np.nan)


def labels_needed(
    half_width: float,
    s2: float,
    p: int,
    N: int,
    labelled: int,
    confidence: float,
    *,
    s2_labels: float = 0.0,
    population: bool = False,
    method: str = "",
) -> MethodPlan:
    """The fewest labels (at least ``labelled`` and ``p + 1``, at most ``N``) predicted to reach
    ``half_width``."""
    now = half_width_at(labelled, s2, p, N, confidence, s2_labels=s2_labels, population=population)
    now_value = float(now) if np.isfinite(now) else None
    if not math.isfinite(s2):
        return MethodPlan(
            method=method, labelled=labelled, note="the pilot's spread is unknown (too few labels)"
        )
    sizes = np.arange(max(labelled, p + 1), N + 1)
    widths = half_width_at(sizes, s2, p, N, confidence, s2_labels=s2_labels, population=population)
    hits = np.nonzero(widths <= half_width + 1e-12)[0]
    if not len(hits):
        best = float(widths[-1]) if len(widths) else math.nan
        return MethodPlan(
            method=method,
            labelled=labelled,
            half_width_now=now_value,
            note=f"not reachable: even {N} labels give ±{best:.3g}",
        )
    needed = int(sizes[hits[0]])
    return MethodPlan(
        method=method,
        labelled=labelled,
        needed=needed,
        more=max(0, needed - labelled),
        half_width_now=now_value,
    )


DEFAULT_FLOOR = 0.2
"""Share of the labels spread uniformly over the pool, whatever the proxy."""

SHRINK = 2.0
"""Pseudo-count pulling a judge value's mean squared residual towards the overall mean."""

MAX_LEVELS = 10
"""Judge values taking more distinct values than this are binned by quantiles into :data:`BINS` bins."""
BINS = 5


def _levels(values: np.ndarray) -> np.ndarray:
    """A level per item: its judge value's bin (-1 for no judge value)."""
    judged = np.isfinite(values)
    out = np.full(len(values), -1, dtype=int)
    distinct = np.unique(values[judged])
    if len(distinct) <= MAX_LEVELS:
        out[judged] = np.searchsorted(distinct, values[judged])
        return out
    edges = np.quantile(values[judged], np.linspace(0, 1, BINS + 1)[1:-1])
    out[judged] = np.searchsorted(edges, values[judged], side="right")
    return out


def uncertainty(judge_pool: np.ndarray, judge_pilot: np.ndarray, residuals: np.ndarray) -> np.ndarray:
    """The expected residual size of each unlabelled item (``judge_pool``: its judge value, NaN for none),
    from the labelled items' residuals at the same judge value; all-zero residuals give a uniform proxy."""
    pool = np.asarray(judge_pool, dtype=float)
    pilot = np.asarray(judge_pilot, dtype=float)
    sq = np.asarray(residuals, dtype=float) ** 2
    overall = float(sq.mean()) if len(sq) else 0.0
    if overall <= 0:
        return np.ones(len(pool))
    levels = _levels(np.concatenate([pilot, pool]))
    pilot_levels, pool_levels = levels[: len(pilot)], levels[len(pilot) :]
    out = np.empty(len(pool))
    for level in np.unique(pool_levels):
        here = pilot_levels == level
        mean_sq = (sq[here].sum() + SHRINK * overall) / (here.sum() + SHRINK)
        out[pool_levels == level] = np.sqrt(mean_sq)
    return out


def inclusion_probabilities(proxy: np.ndarray, m: int, floor: float = DEFAULT_FLOOR) -> np.ndarray:
    """Inclusion probabilities summing to ``m`` over the pool, proportional to ``proxy`` above a uniform
    floor, each <= 1; ConfigError for ``m`` outside [0, pool size] or ``floor`` outside (0, 1]."""
    u = np.asarray(proxy, dtype=float)
    size = len(u)
    if isinstance(m, bool) or not isinstance(m, (int, np.integer)) or not 0 <= m <= size:
        raise ConfigError(
            f"expected a number of items to select between 0 and the {size} unlabelled; got {m!r}"
        )
    check_param("inclusion_probabilities", "floor", floor, [Interval(float, 0, 1, closed="right")])
    if (u < 0).any() or not np.isfinite(u).all():
        raise ConfigError("expected an uncertainty proxy of finite values >= 0")
    if m == 0:
        return np.zeros(size)
    share = u / u.sum() if u.sum() > 0 else np.full(size, 1.0 / size)
    share = (1 - floor) * share + floor / size
    pi = np.zeros(size)
    free = np.ones(size, dtype=bool)
    left = float(m)
    while True:  # cap at 1 and spread the excess over the rest, until none exceeds 1
        pi[free] = left * share[free] / share[free].sum()
        over = free & (pi >= 1.0)
        if not over.any():
            break
        pi[over] = 1.0
        free &= ~over
        left = m - float((~free).sum())
        if not free.any() or left <= 0:
            pi[free] = 0.0
            break
    return pi


def systematic_draw(pi: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """Indices drawn by randomised systematic sampling with inclusion probabilities ``pi`` (summing to an
    integer)."""
    p = np.asarray(pi, dtype=float)
    total = float(p.sum())
    m = int(round(total))
    if abs(total - m) > 1e-6:
        raise ConfigError(
            f"expected inclusion probabilities summing to a whole number of items; got {total:g}"
        )
    if m == 0:
        return np.zeros(0, dtype=int)
    order = rng.permutation(len(p))
    cumulative = np.cumsum(p[order])
    cumulative *= m / cumulative[-1]  # exact total: rounding cannot add or lose an item
    points = rng.random() + np.arange(m)
    chosen = np.searchsorted(cumulative, points, side="right")
    return np.sort(order[chosen])


def allocate(
    variance: Mapping[str, Callable[[int], float]],
    labelled: Mapping[str, int],
    room: Mapping[str, int],
    total: int,
    *,
    first: int = 2,
) -> dict[str, int]:
    """How many of ``total`` new labels each group gets: greedily, where the predicted variance
    ``variance[g](n)`` drops most; a group gets no label or at least ``first`` (a round needs two)."""
    if total > sum(room.values()):
        raise ConfigError(
            f"expected at most the {sum(room.values())} unlabelled items to select; got {total}"
        )
    given = dict.fromkeys(variance, 0)

    def step(g: str) -> int:
        return min(first, room[g]) if given[g] == 0 else 1

    def gain(g: str) -> float:
        n, k = labelled[g] + given[g], step(g)
        now, after = variance[g](n), variance[g](n + k)
        if not np.isfinite(now):
            return float("inf")  # too few labels to say: labelling here comes first
        return float(now - after) / k

    heap = [(-gain(g), g) for g in variance if room[g] > 0]
    heapq.heapify(heap)
    left = total
    while left > 0 and heap:
        _, g = heapq.heappop(heap)
        k = step(g)
        if k > left:  # too few left to start this group with ``first`` labels
            continue
        given[g] += k
        left -= k
        if given[g] < room[g]:
            heapq.heappush(heap, (-gain(g), g))
    for g in sorted(given, key=lambda name: -given[name]):  # what is left goes to groups already started
        extra = min(left, room[g] - given[g]) if given[g] else 0
        given[g] += extra
        left -= extra
    return given
