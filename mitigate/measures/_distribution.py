"""Score distribution (Stureborg et al. 2024): histogram, scale coverage, round numbers, entropy; and the
anchoring checks of multi-criterion outputs: inter-criterion correlation, anchoring, correlation by position.
Conventions: :mod:`mitigate.measures._base`.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np

from mitigate.constraints import Interval, check_param
from mitigate.errors import ConfigError, DataError
from mitigate.measures._base import (
    EntryData,
    Measure,
    Scores,
    finish,
    nearest_points,
    reported_measure,
    undefined,
)
from mitigate.measures._stats import as_float_array, bootstrap_ci, correlation_function
from mitigate.scale import Scale


def _on_scale(scores: Scores, scale: Scale) -> tuple[np.ndarray, int, int]:
    x = as_float_array(scores, "scores")
    finite = x[np.isfinite(x)]
    inside = finite[(finite >= scale.min - 1e-9) & (finite <= scale.max + 1e-9)]
    return inside, len(x) - len(finite), len(finite) - len(inside)


def score_histogram(scores: Scores, scale: Scale | tuple[float, float]) -> dict[float, int]:
    """Count of scores at each point of ``scale`` (every point, scores rounded to the nearest, halves up;
    missing and out-of-scale scores ignored)."""
    s = Scale.of(scale)
    inside, _, _ = _on_scale(scores, s)
    counts = dict.fromkeys((float(p) for p in s.points()), 0)
    for v in nearest_points(inside, s):
        counts[float(v)] += 1
    return counts


def _distribution_measure(
    name: str,
    scores: Scores,
    scale: Scale | tuple[float, float],
    stat: Callable[[np.ndarray], float],
    extra_fn: Callable[[np.ndarray], dict[str, Any]],
    ci: bool,
    **resampling: Any,
) -> Measure:
    inside, missing, outside = _on_scale(scores, Scale.of(scale))
    failed = missing + outside
    if len(inside) == 0:
        return undefined(name, 0, failed, "no score within the scale", n_out_of_scale=outside)
    extra = {"n_out_of_scale": outside, **extra_fn(inside)}
    interval = bootstrap_ci(stat, inside, **resampling) if ci else None
    return finish(name, stat(inside), len(inside), failed, interval=interval, extra=extra)


def scale_coverage(
    scores: Scores,
    scale: Scale | tuple[float, float],
    *,
    ci: bool = False,
    n_boot: int = 1000,
    alpha: float = 0.05,
    seed: int = 0,
) -> Measure:
    """Share of the scale's points used at least once (Stureborg et al. 2024: judges use few points).

    ``extra["histogram"]`` holds the counts per point; scores outside the scale are counted in
    ``n_failed`` and ``extra["n_out_of_scale"]``.
    """
    s = Scale.of(scale)
    points = len(s.points())

    def stat(x: np.ndarray) -> float:
        return len(np.unique(nearest_points(x, s))) / points

    def extra(x: np.ndarray) -> dict[str, Any]:
        return {"histogram": score_histogram(x, s), "n_points": points}

    return _distribution_measure(
        "scale-coverage", scores, s, stat, extra, ci, n_boot=n_boot, alpha=alpha, seed=seed
    )


def round_number_excess(
    scores: Scores,
    scale: Scale | tuple[float, float],
    multiple: int = 5,
    *,
    ci: bool = False,
    n_boot: int = 1000,
    alpha: float = 0.05,
    seed: int = 0,
) -> Measure:
    """Excess of round numbers (Stureborg et al. 2024): the share of scores that are whole multiples of
    ``multiple`` minus that share under a uniform spread over the scale's integer points (1-100 with
    multiple 5: 0.2). ``extra`` has both shares and their ratio.
    """
    check_param("round_number_excess", "multiple", multiple, [Interval(int, 1)])
    s = Scale.of(scale)
    ints = np.array(s.integer_points(), dtype=float)
    if len(ints) == 0:
        raise ConfigError(f"round_number_excess needs a scale with integer points; got {s.describe()}")
    expected = float(np.mean(ints % multiple == 0))

    def observed(x: np.ndarray) -> float:
        return float(np.mean((np.abs(x - np.round(x)) < 1e-9) & (np.round(x) % multiple == 0)))

    def excess(x: np.ndarray) -> float:
        return observed(x) - expected

    def extra(x: np.ndarray) -> dict[str, Any]:
        obs = observed(x)
        return {
            "observed": obs,
            "expected": expected,
            "ratio": obs / expected if expected else math.nan,
            "multiple": multiple,
        }

    name = f"round_number_excess_{multiple}"
    return _distribution_measure(name, scores, s, excess, extra, ci, n_boot=n_boot, alpha=alpha, seed=seed)


def score_entropy(
    scores: Scores,
    scale: Scale | tuple[float, float],
    *,
    ci: bool = False,
    n_boot: int = 1000,
    alpha: float = 0.05,
    seed: int = 0,
) -> Measure:
    """Shannon entropy in bits of the score distribution over the scale's points (Stureborg et al. 2024).

    ``extra["max_bits"]`` is log2 of the number of points and ``extra["normalised"]`` the ratio.
    """
    s = Scale.of(scale)
    max_bits = math.log2(len(s.points()))

    def stat(x: np.ndarray) -> float:
        _, counts = np.unique(nearest_points(x, s), return_counts=True)
        p = counts / counts.sum()
        return float(-(p * np.log2(p)).sum()) + 0.0

    def extra(x: np.ndarray) -> dict[str, Any]:
        return {"max_bits": max_bits, "normalised": stat(x) / max_bits if max_bits else math.nan}

    return _distribution_measure(
        "score-entropy", scores, s, stat, extra, ci, n_boot=n_boot, alpha=alpha, seed=seed
    )


def _criterion_matrix(scores: Mapping[str, Scores], what: str) -> tuple[list[str], np.ndarray]:
    if not scores:
        raise DataError(f"expected {what} scores for at least one criterion; got none")
    names = list(scores)
    cols = [as_float_array(scores[c], f"{what}[{c!r}]") for c in names]
    lengths = {len(c) for c in cols}
    if len(lengths) > 1:
        raise DataError(
            f"expected the same number of items for every criterion in {what}; got "
            + ", ".join(f"{c}={len(v)}" for c, v in zip(names, cols, strict=True))
        )
    return names, np.column_stack(cols) if cols else np.empty((0, 0))


def _judge_human(
    judge: Mapping[str, Scores], human: Mapping[str, Scores]
) -> tuple[list[str], np.ndarray, np.ndarray]:
    """The criteria and the judge's and humans' items x criteria matrices, checked to match."""
    names, jm = _criterion_matrix(judge, "judge")
    hnames, hm = _criterion_matrix(human, "human")
    if names != hnames:
        raise DataError(
            f"expected the same criteria, in the same order, for judge and human; got {names} and {hnames}"
        )
    if jm.shape != hm.shape:
        raise DataError(f"expected as many judge as human items; got {jm.shape[0]} and {hm.shape[0]}")
    return names, jm, hm


def _mean_pairwise(
    mat: np.ndarray, fn: Callable[[Any, Any], float]
) -> tuple[float, dict[tuple[int, int], float]]:
    pairs: dict[tuple[int, int], float] = {}
    for a, b in itertools.combinations(range(mat.shape[1]), 2):
        pairs[(a, b)] = fn(mat[:, a], mat[:, b])
    finite = [v for v in pairs.values() if math.isfinite(v)]
    return (float(np.mean(finite)) if finite else math.nan), pairs


def inter_criterion_correlation(
    scores: Mapping[str, Scores],
    method: str = "kendall",
    *,
    ci: bool = False,
    n_boot: int = 1000,
    alpha: float = 0.05,
    seed: int = 0,
) -> Measure:
    """Mean pairwise correlation between criteria (Stureborg et al. 2024's anchoring check).

    ``scores`` maps criterion -> one score per item; items scored on every criterion are used.
    ``extra["pairs"]`` holds each pair's correlation ("a|b"); undefined ones are left out of the mean.
    """
    fn = correlation_function(method)
    names, mat = _criterion_matrix(scores, "criterion")
    if len(names) < 2:
        raise ConfigError(f"inter-criterion correlation needs at least 2 criteria; got {names}")
    keep = np.isfinite(mat).all(axis=1)
    mat = mat[keep]
    failed = int((~keep).sum())
    mean, pairs = _mean_pairwise(mat, fn)
    extra = {"pairs": {f"{names[a]}|{names[b]}": v for (a, b), v in pairs.items()}}
    name = f"inter_criterion_{method}"
    if not math.isfinite(mean):
        return undefined(name, len(mat), failed, "no pair of criteria has a defined correlation", **extra)

    def stat(m: np.ndarray) -> float:
        return _mean_pairwise(m, fn)[0]

    interval = bootstrap_ci(stat, mat, n_boot=n_boot, alpha=alpha, seed=seed) if ci else None
    return finish(name, mean, len(mat), failed, interval=interval, extra=extra)


def anchoring(
    judge: Mapping[str, Scores],
    human: Mapping[str, Scores],
    method: str = "kendall",
    *,
    ci: bool = False,
    n_boot: int = 1000,
    alpha: float = 0.05,
    seed: int = 0,
) -> Measure:
    """Anchoring (Stureborg et al. 2024): the judge's mean inter-criterion correlation minus the humans'.

    Positive means the judge's criteria are more entangled than the humans'; over items complete
    on every criterion for both. ``extra`` holds both means and per-pair tables.
    """
    fn = correlation_function(method)
    names, jm, hm = _judge_human(judge, human)
    if len(names) < 2:
        raise ConfigError(f"anchoring needs at least 2 criteria; got {names}")
    keep = np.isfinite(jm).all(axis=1) & np.isfinite(hm).all(axis=1)
    jm, hm = jm[keep], hm[keep]
    failed = int((~keep).sum())
    jmean, jpairs = _mean_pairwise(jm, fn)
    hmean, hpairs = _mean_pairwise(hm, fn)
    extra = {
        "judge_mean": jmean,
        "human_mean": hmean,
        "judge_pairs": {f"{names[a]}|{names[b]}": v for (a, b), v in jpairs.items()},
        "human_pairs": {f"{names[a]}|{names[b]}": v for (a, b), v in hpairs.items()},
    }
    name = f"anchoring_{method}"
    if not (math.isfinite(jmean) and math.isfinite(hmean)):
        why = "no pair of criteria has a defined correlation for judge and humans"
        return undefined(name, len(jm), failed, why, **extra)

    def stat(a: np.ndarray, b: np.ndarray) -> float:
        return _mean_pairwise(a, fn)[0] - _mean_pairwise(b, fn)[0]

    interval = bootstrap_ci(stat, jm, hm, n_boot=n_boot, alpha=alpha, seed=seed) if ci else None
    return finish(name, jmean - hmean, len(jm), failed, interval=interval, extra=extra)


def correlation_by_position(
    judge: Mapping[str, Scores],
    human: Mapping[str, Scores],
    positions: Sequence[str] | Mapping[str, Sequence[int | None]],
    method: str = "kendall",
    *,
    ci: bool = False,
    n_boot: int = 1000,
    alpha: float = 0.05,
    seed: int = 0,
) -> Measure:
    """Agreement with humans by a criterion's position in a multi-criterion output (Stureborg et al. 2024).

    ``positions``: the fixed order criteria appear in, or criterion -> per-item position (0 =
    first). ``extra["by_position"]`` is the mean judge-human correlation over criteria at each
    position, ``extra["by_criterion"]`` the detail; ``value`` = the first position's minus the
    last's. With a fixed order position and criterion are confounded; vary it to separate them.
    """
    fn = correlation_function(method)
    names, jm, hm = _judge_human(judge, human)
    n_items = jm.shape[0]
    if isinstance(positions, Mapping):
        missing = [c for c in names if c not in positions]
        if missing:
            raise DataError(f"expected a position for every criterion; missing {missing}")
        pm = np.column_stack([as_float_array(positions[c], f"positions[{c!r}]") for c in names])
        if pm.shape[0] != n_items:
            raise DataError(f"expected one position per item ({n_items}); got {pm.shape[0]}")
    else:
        order = list(positions)
        if sorted(order) != sorted(names):
            raise DataError(f"expected the order to list exactly the criteria {names}; got {order}")
        pm = np.tile(np.array([float(order.index(c)) for c in names]), (n_items, 1))
    complete = np.isfinite(jm) & np.isfinite(hm) & np.isfinite(pm)
    failed = int((~complete).sum())

    def table(
        a: np.ndarray, b: np.ndarray, p: np.ndarray
    ) -> tuple[dict[int, float], dict[str, dict[int, float]]]:
        ok = np.isfinite(a) & np.isfinite(b) & np.isfinite(p)
        detail: dict[str, dict[int, float]] = {}
        collected: dict[int, list[float]] = {}
        for c, cname in enumerate(names):
            for pos in sorted(set(p[ok[:, c], c].astype(int).tolist())):
                sel = ok[:, c] & (p[:, c] == pos)
                r = fn(a[sel, c], b[sel, c])
                detail.setdefault(cname, {})[pos] = r
                if math.isfinite(r):
                    collected.setdefault(pos, []).append(r)
        return {pos: float(np.mean(v)) for pos, v in sorted(collected.items())}, detail

    def summary(by_pos: dict[int, float]) -> float:
        if len(by_pos) < 2:
            return math.nan
        keys = sorted(by_pos)
        return by_pos[keys[0]] - by_pos[keys[-1]]

    by_pos, detail = table(jm, hm, pm)
    extra = {"by_position": by_pos, "by_criterion": detail}
    name = f"{method}_first_minus_last_position"
    value = summary(by_pos)
    used = int(complete.sum())
    if not math.isfinite(value):
        return undefined(name, used, failed, "needs a defined correlation at 2 or more positions", **extra)

    def stat(a: np.ndarray, b: np.ndarray, p: np.ndarray) -> float:
        return summary(table(a, b, p)[0])

    interval = bootstrap_ci(stat, jm, hm, pm, n_boot=n_boot, alpha=alpha, seed=seed) if ci else None
    return finish(name, value, used, failed, interval=interval, extra=extra)


# reported per entry by compare


@reported_measure(
    "scale-coverage",
    "scale used",
    "higher",
    "bias",
    headline=True,
    paper="Stureborg et al. 2024",
    on_humans=True,
)
def _scale_coverage(entry: EntryData) -> Measure:
    """Share of the scale's points the judge used (:func:`scale_coverage`)."""
    return scale_coverage(entry.scores, entry.scale, **entry.ci)


@reported_measure(
    "score-entropy",
    "entropy bits",
    "higher",
    "bias",
    headline=True,
    paper="Stureborg et al. 2024",
    on_humans=True,
)
def _score_entropy(entry: EntryData) -> Measure:
    """Entropy in bits of the judge's scores over the scale's points (:func:`score_entropy`)."""
    return score_entropy(entry.scores, entry.scale, **entry.ci)


@reported_measure(
    "round-number-excess-5",
    "round-number excess",
    "zero",
    "bias",
    headline=True,
    paper="Stureborg et al. 2024",
)
def _round_number_excess_5(entry: EntryData) -> Measure:
    """Excess share of multiples of 5 over a uniform spread (:func:`round_number_excess`)."""
    if len(entry.scale.integer_points()) < 10:
        why = (
            f"round numbers are not meaningful on {entry.scale.describe()} (needs 10 or more integer points)"
        )
        return undefined("round-number-excess-5", 0, 0, why)
    return round_number_excess(entry.scores, entry.scale, 5, **entry.ci)
