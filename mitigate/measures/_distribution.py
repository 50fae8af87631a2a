"""Score distribution (Stureborg et al. 2024): histogram, scale coverage, round numbers, entropy;
and the anchoring checks of multi-criterion outputs: inter-criterion correlation, anchoring,
correlation by position.

Stureborg et al. find judges use few points of a scale, favour round numbers on wide
scales, and, when one answer scores several criteria, anchor later scores on earlier
ones. Conventions: :mod:`mitigate.measures._base`.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np

from mitigate.errors import ConfigError, DataError
from mitigate.measures._base import (
    EntryData,
    Measure,
    MeasureInfo,
    ReportedMeasure,
    Scores,
    finish,
    nearest_points,
    resample_interval,
    undefined,
)
from mitigate.measures._stats import as_float_array, correlation_function
from mitigate.registry import register
from mitigate.scale import Scale


def _on_scale(scores: Scores, scale: Scale) -> tuple[np.ndarray, int, int]:
    x = as_float_array(scores, "scores")
    finite = x[np.isfinite(x)]
    inside = finite[(finite >= scale.min - 1e-9) & (finite <= scale.max + 1e-9)]
    return inside, len(x) - len(finite), len(finite) - len(inside)


def score_histogram(scores: Scores, scale: Scale | tuple[float, float]) -> dict[float, int]:
    """Count of scores at each point of ``scale`` (scores rounded to the nearest point, halves up).

    Every point appears, with 0 when unused. Missing and out-of-scale scores are ignored.
    """
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
    *,
    ci: bool,
    n_boot: int,
    alpha: float,
    seed: int,
) -> Measure:
    s = Scale.of(scale)
    inside, missing, outside = _on_scale(scores, s)
    failed = missing + outside
    if len(inside) == 0:
        return undefined(name, 0, failed, "no score within the scale", n_out_of_scale=outside)
    extra = {"n_out_of_scale": outside, **extra_fn(inside)}
    interval = resample_interval(stat, inside, n_boot=n_boot, alpha=alpha, seed=seed) if ci else None
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

    ``extra["histogram"]`` holds the counts per point (see :func:`score_histogram`). Scores
    outside the scale are counted in ``n_failed`` and ``extra["n_out_of_scale"]``.
    """
    s = Scale.of(scale)
    points = len(s.points())

    def stat(x: np.ndarray) -> float:
        return len(np.unique(nearest_points(x, s))) / points

    return _distribution_measure(
        "scale-coverage",
        scores,
        s,
        stat,
        lambda x: {"histogram": score_histogram(x, s), "n_points": points},
        ci=ci,
        n_boot=n_boot,
        alpha=alpha,
        seed=seed,
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
    """Excess of round numbers (Stureborg et al. 2024): how much more often scores are multiples of
    ``multiple``.

    Observed share = share of scores that are whole multiples of ``multiple`` (5 counts 5,
    10, 15 ...; use ``multiple=10`` for tens). Expected share = the share of the scale's
    integer points that are such multiples, i.e. the share under a uniform distribution
    over the integer scores (1-100 with multiple 5: 20/100 = 0.2; with 10: 10/100 = 0.1).
    ``value`` = observed - expected (0 = no excess); ``extra`` has both and their ratio.
    """
    if multiple < 1:
        raise ConfigError(
            f"The 'multiple' parameter of round_number_excess must be an int >= 1. Got {multiple} instead."
        )
    s = Scale.of(scale)
    ints = np.array(s.integer_points(), dtype=float)
    if len(ints) == 0:
        raise ConfigError(f"round_number_excess needs a scale with integer points; got {s.describe()}")
    expected = float(np.mean(ints % multiple == 0))

    def observed(x: np.ndarray) -> float:
        return float(np.mean((np.abs(x - np.round(x)) < 1e-9) & (np.round(x) % multiple == 0)))

    def extra(x: np.ndarray) -> dict[str, Any]:
        obs = observed(x)
        return {
            "observed": obs,
            "expected": expected,
            "ratio": obs / expected if expected else math.nan,
            "multiple": multiple,
        }

    return _distribution_measure(
        f"round_number_excess_{multiple}",
        scores,
        s,
        lambda x: observed(x) - expected,
        extra,
        ci=ci,
        n_boot=n_boot,
        alpha=alpha,
        seed=seed,
    )


def score_entropy(
    scores: Scores,
    scale: Scale | tuple[float, float],
    *,
    ci: bool = False,
    n_boot: int = 1000,
    alpha: float = 0.05,
    seed: int = 0,
) -> Measure:
    """Shannon entropy in bits of the score distribution over the scale's points (scores rounded to points).

    Low entropy means the judge piles its scores on few values (Stureborg et al. 2024).
    ``extra["max_bits"]`` is log2 of the number of points (a uniform spread) and
    ``extra["normalised"]`` the ratio.
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
        "score-entropy", scores, s, stat, extra, ci=ci, n_boot=n_boot, alpha=alpha, seed=seed
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

    ``scores`` maps criterion -> one score per item. Only items scored on every criterion
    are used. ``extra["pairs"]`` holds each pair's correlation ("a|b"). Pairs with an
    undefined correlation are left out of the mean.
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

    interval = resample_interval(stat, mat, n_boot=n_boot, alpha=alpha, seed=seed) if ci else None
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
    """Anchoring (Stureborg et al. 2024): judge's mean inter-criterion correlation beside the humans'.

    When one output scores several criteria, later scores anchor on earlier ones and the
    criteria correlate more than the humans' do. ``value`` = judge mean pairwise
    correlation - human mean pairwise correlation (positive = judge's criteria are more
    entangled), over items complete on every criterion for both. ``extra`` holds both
    means and per-pair tables.
    """
    fn = correlation_function(method)
    names, jm = _criterion_matrix(judge, "judge")
    hnames, hm = _criterion_matrix(human, "human")
    if names != hnames:
        raise DataError(
            f"expected the same criteria, in the same order, for judge and human; got {names} and {hnames}"
        )
    if len(names) < 2:
        raise ConfigError(f"anchoring needs at least 2 criteria; got {names}")
    if jm.shape != hm.shape:
        raise DataError(f"expected as many judge as human items; got {jm.shape[0]} and {hm.shape[0]}")
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
        return undefined(
            name,
            len(jm),
            failed,
            "no pair of criteria has a defined correlation for judge and humans",
            **extra,
        )

    def stat(a: np.ndarray, b: np.ndarray) -> float:
        return _mean_pairwise(a, fn)[0] - _mean_pairwise(b, fn)[0]

    interval = resample_interval(stat, jm, hm, n_boot=n_boot, alpha=alpha, seed=seed) if ci else None
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

    ``positions`` is either the fixed order criteria appear in (a list of names) or, when
    the order varies per item, criterion -> per-item position (0 = first). For each
    criterion and position, the judge-human correlation over the items where the criterion
    sat there; ``extra["by_position"]`` is the mean over criteria at each position and
    ``extra["by_criterion"]`` the detail. ``value`` = correlation at the first position -
    at the last (positive = agreement decays later in the output). With a fixed order
    each position holds one criterion, so position and criterion are confounded; vary the
    order to separate them.
    """
    fn = correlation_function(method)
    names, jm = _criterion_matrix(judge, "judge")
    hnames, hm = _criterion_matrix(human, "human")
    if names != hnames:
        raise DataError(
            f"expected the same criteria, in the same order, for judge and human; got {names} and {hnames}"
        )
    if jm.shape != hm.shape:
        raise DataError(f"expected as many judge as human items; got {jm.shape[0]} and {hm.shape[0]}")
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

    interval = resample_interval(stat, jm, hm, pm, n_boot=n_boot, alpha=alpha, seed=seed) if ci else None
    return finish(name, value, used, failed, interval=interval, extra=extra)


# ---------------------------------------------------------------------------------------
# reported per entry by compare


@register("measure", "scale-coverage")
class ScaleCoverage(ReportedMeasure):
    """Share of the scale's points the judge used (:func:`scale_coverage`)."""

    paper = "Stureborg et al. 2024"

    info = MeasureInfo(label="scale used", direction="higher", group="bias", headline=True)
    on_humans = True

    def compute(self, entry: EntryData) -> Measure:
        """Coverage of the entry's own scale."""
        return scale_coverage(entry.scores, entry.scale, **entry.ci)


@register("measure", "score-entropy")
class ScoreEntropy(ReportedMeasure):
    """Entropy in bits of the judge's scores over the scale's points (:func:`score_entropy`)."""

    paper = "Stureborg et al. 2024"

    info = MeasureInfo(label="entropy bits", direction="higher", group="bias", headline=True)
    on_humans = True

    def compute(self, entry: EntryData) -> Measure:
        """Entropy on the entry's own scale."""
        return score_entropy(entry.scores, entry.scale, **entry.ci)


@register("measure", "round-number-excess-5")
class RoundNumberExcess5(ReportedMeasure):
    """Excess share of multiples of 5 over a uniform spread (:func:`round_number_excess`)."""

    paper = "Stureborg et al. 2024"

    info = MeasureInfo(label="round-number excess", direction="zero", group="bias", headline=True)

    def compute(self, entry: EntryData) -> Measure:
        """Multiples of 5; NaN on scales with fewer than 10 integer points."""
        if len(entry.scale.integer_points()) < 10:
            return undefined(
                "round-number-excess-5",
                0,
                0,
                f"round numbers are not meaningful on {entry.scale.describe()} (needs 10 or more "
                "integer points)",
            )
        return round_number_excess(entry.scores, entry.scale, 5, **entry.ci)
