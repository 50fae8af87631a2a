"""Which unlabelled items to label next: active selection with known inclusion probabilities.

Active statistical inference (Zrnic & Candès 2024) labels the items where the prediction is
least sure more often, and weights each label by the inverse of the probability it had of
being chosen, which keeps the estimate unbiased whatever the probabilities. Here:

1. **Uncertainty proxy** (:func:`uncertainty`): the pilot's squared residuals (label minus
   the method's prediction), averaged per judge value (per quantile bin of the judge values
   when they take many values; items without a judge value form their own bin) and shrunk
   towards the overall mean with a pseudo-count of 2; the proxy is its square root, the
   expected size of an item's residual. With equal probabilities the proxy plays no role;
   with probabilities proportional to the residual size the variance of the weighted
   residual sum is smallest (the Neyman choice).
2. **Probabilities** (:func:`inclusion_probabilities`): ``m`` labels over a pool of
   ``N_pool`` items get ``pi_i = m * ((1 - floor) * u_i / sum(u) + floor / N_pool)``, capped
   at 1 (the excess is spread over the others); the floor keeps every item's weight at most
   ``N_pool / (floor * m)``, so a proxy that is wrong costs bounded variance.
3. **Draw** (:func:`systematic_draw`): randomised systematic sampling with those
   probabilities: the pool in a random order, a random start, one item per unit of
   cumulated probability. Every item is chosen with exactly its ``pi_i`` and the draw holds
   exactly ``m`` items.
4. **Allocation across groups** (:func:`allocate`): one label at a time to the group whose
   predicted variance drops most (greedy, which is optimal for these convex, separable
   variances), so the labels go where the intervals are widest.

The estimate then uses the weights ``1 / pi_i`` (:func:`mitigate.estimators._mean.estimate_mean`,
``weights=``), counting the pilot exactly.
"""

from __future__ import annotations

import heapq
from collections.abc import Callable, Mapping

import numpy as np

from mitigate.errors import ConfigError

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
    """The expected residual size of each pool item, from the pilot's residuals at the same judge value.

    ``judge_pool``: the judge values of the unlabelled items (NaN: none); ``judge_pilot`` and
    ``residuals``: the labelled items' judge values and residuals. All-zero residuals give a
    uniform proxy.
    """
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
    floor, each <= 1.

    ConfigError for ``m`` outside [0, pool size] or ``floor`` outside (0, 1].
    """
    u = np.asarray(proxy, dtype=float)
    size = len(u)
    if isinstance(m, bool) or not isinstance(m, (int, np.integer)) or not 0 <= m <= size:
        raise ConfigError(
            f"expected a number of items to select between 0 and the {size} unlabelled; got {m!r}"
        )
    if not 0 < floor <= 1:
        raise ConfigError(f"The 'floor' parameter must be a float in (0, 1]. Got {floor!r} instead.")
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
    """How many of ``total`` new labels each group gets: greedily, where the predicted variance drops most.

    ``variance[g](n)`` is group ``g``'s predicted variance with ``n`` labels, ``labelled[g]``
    its labels now, ``room[g]`` its unlabelled items. A group gets no label or at least
    ``first`` (a weighted round needs two labels for its variance), as long as ``total``
    allows. ConfigError when ``total`` exceeds the room.
    """
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
