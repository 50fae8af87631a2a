"""Paired differences between two judges on the same items (``mitigate compare``, ``mitigate diff``): the
difference, its interval and its test.

:func:`paired_mean_difference` tests a mean by sign flips; :func:`paired_statistic_difference` a
statistic against a reference by swapping A's and B's values per item (``"permutation"``: valid when
their values are exchangeable, as on one scale, :func:`swap_refusal`) or from the bootstrap's own
resamples (``"bootstrap"``). ``clusters`` makes the resampling and the flips take whole clusters.
Every function returns a :class:`PairedDifference`, NaN with ``reason`` when the data cannot support it.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable, Sequence
from typing import Any, Literal

import numpy as np
from pydantic import BaseModel, ConfigDict, field_validator

from mitigate.constraints import Options, check_param
from mitigate.errors import ConfigError
from mitigate.measures._base import batched_nanmean
from mitigate.measures._stats import (
    ROW_CORRELATIONS,
    as_float_array,
    batched,
    bootstrap_ci,
    complete_mask,
    correlation_function,
    paired_permutation_test,
    pearson_rows,
    permutation_test_mean_diff,
    ranks_from_codes,
    resampled,
)
from mitigate.scale import Scale

PairedTest = Literal["permutation", "bootstrap"]
"""How :func:`paired_statistic_difference` tests the difference (see the module docstring)."""


class PairedDifference(BaseModel):
    """B minus A on the items both judged: the difference, each side's value, an interval, a two-sided p.

    ``low``/``high`` are None without an interval, ``p_value`` None without a test; ``n`` counts
    the items (pairs) used and ``test`` names how p was found.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")
    observed: float
    a: float | None = None
    b: float | None = None
    low: float | None = None
    high: float | None = None
    p_value: float | None = None
    n: int = 0
    test: str = ""
    reason: str | None = None
    p_threshold: float | None = None
    """With a ``threshold`` t: the bootstrap p that B - A lies on the far side of t from the observed
    difference (two-sided convention, as ``p_value`` is for 0: p < alpha exactly when t lies outside the
    1 - alpha interval); None without one."""

    @field_validator("observed", mode="before")
    @classmethod
    def _nan(cls, v: Any) -> Any:
        return math.nan if v is None else v

    @property
    def ok(self) -> bool:
        """True when the difference is a finite number."""
        return math.isfinite(self.observed)


def _finite(v: float | None) -> float | None:
    return float(v) if v is not None and math.isfinite(v) else None


def _between_points(values: np.ndarray, scale: Scale) -> bool:
    """True when some finite value lies off ``scale``'s grid (a continuous score such as an expected
    value)."""
    return any(not scale.on_grid(float(v)) for v in values[np.isfinite(values)])


def swap_refusal(
    a: Sequence[float | None] | np.ndarray,
    b: Sequence[float | None] | np.ndarray,
    scale_a: Scale,
    scale_b: Scale,
) -> str | None:
    """Why swapping A's and B's raw values on an item is not a valid null for them (different ranges or steps,
    or one judge's values on the scale's points and the other's between them); None when it is."""
    if (scale_a.min, scale_a.max, scale_a.step) != (scale_b.min, scale_b.max, scale_b.step):
        return (
            f"the entries answer on different scales ({scale_a.describe()} by {scale_a.step:g} and "
            f"{scale_b.describe()} by {scale_b.step:g})"
        )
    x, y = as_float_array(a, "a"), as_float_array(b, "b")
    off_a, off_b = _between_points(x, scale_a), _between_points(y, scale_b)
    if off_a != off_b:
        return (
            "one entry's scores fall between the scale's points (continuous, e.g. an expected score) and "
            "the other's sit on them"
        )
    return None


# resampling whole clusters


def _padded(arrays: Sequence[np.ndarray], clusters: Sequence[Any]) -> list[np.ndarray]:
    """Each per-item array as a clusters x width matrix (NaN padding), rows in order of first appearance."""
    order = list(dict.fromkeys(clusters))
    index = {c: i for i, c in enumerate(order)}
    rows: dict[int, list[int]] = {}
    for k, c in enumerate(clusters):
        rows.setdefault(index[c], []).append(k)
    width = max((len(v) for v in rows.values()), default=0)
    out = []
    for arr in arrays:
        mat = np.full((len(order), width), np.nan)
        for r, ks in rows.items():
            mat[r, : len(ks)] = arr[ks]
        out.append(mat)
    return out


def _flat(fn: Callable[..., float]) -> Callable[..., float]:
    """``fn`` of the flattened rows of NaN-padded cluster matrices (``fn`` must drop NaN)."""
    return lambda *rows: fn(*[r.reshape(-1) for r in rows])


def cluster_interval(
    fn: Callable[..., float], arrays: Sequence[np.ndarray], clusters: Sequence[Any], *, n_boot: int, seed: int
) -> tuple[float | None, float | None]:
    """Paired percentile bootstrap interval of ``fn(*arrays)``, resampling whole clusters (``fn`` must drop
    NaN); (None, None) without resamples or items."""
    if n_boot <= 0 or not arrays or len(arrays[0]) == 0:
        return None, None
    low, high = bootstrap_ci(_flat(fn), *_padded(arrays, clusters), n_boot=n_boot, seed=seed)
    return _finite(low), _finite(high)


def threshold_p(values: np.ndarray, observed: float, threshold: float | None) -> float | None:
    """Twice the share (+1 corrected) of resampled differences ``values`` on the far side of ``threshold``
    from ``observed``: the bootstrap p of "the difference is ``threshold``" (None without a threshold)."""
    values = values[np.isfinite(values)]
    if threshold is None or not len(values) or not math.isfinite(observed):
        return None
    tail = int((values <= threshold).sum()) if observed > threshold else int((values >= threshold).sum())
    return min(1.0, 2 * (1 + tail) / (1 + len(values)))


def _mean_difference(b: np.ndarray, a: np.ndarray) -> float:
    d = b - a
    d = d[np.isfinite(d)]
    return float(d.mean()) if len(d) else math.nan


# a mean (or share) of B minus that of A


def paired_mean_difference(
    b: Sequence[float | None] | np.ndarray,
    a: Sequence[float | None] | np.ndarray,
    *,
    clusters: Sequence[Any] | None = None,
    n_boot: int = 1000,
    n_perm: int = 5000,
    seed: int = 0,
    min_n: int = 1,
    threshold: float | None = None,
) -> PairedDifference:
    """Mean of ``b`` minus mean of ``a`` over the items where both are finite, with interval and sign-flip p.

    ``clusters``: one label per item; the sign flips and the bootstrap then take whole clusters.
    ``n_boot`` 0: no interval. Fewer than ``min_n`` complete pairs: NaN with the reason. ``threshold``: also
    the bootstrap p of a difference of that size (``p_threshold``, e.g. a non-inferiority margin).
    """
    x_all = as_float_array(a, "a")
    y_all = as_float_array(b, "b")
    if len(x_all) != len(y_all) or (clusters is not None and len(clusters) != len(x_all)):
        raise ConfigError(
            "expected one value per item from both judges (and one cluster each); got "
            f"{len(y_all)} and {len(x_all)}" + ("" if clusters is None else f", {len(clusters)} clusters")
        )
    keep = np.isfinite(x_all) & np.isfinite(y_all)
    x, y = x_all[keep], y_all[keep]
    if len(x) < max(min_n, 1):
        return PairedDifference(
            observed=math.nan,
            n=len(x),
            test="paired sign-flip permutation",
            reason=f"needs at least {max(min_n, 1)} items with a value from both; got {len(x)}",
        )
    groups = None if clusters is None else [c for c, k in zip(clusters, keep, strict=True) if k]
    test = permutation_test_mean_diff(y, x, n_perm=n_perm, seed=seed, paired=True, groups=groups)
    low = high = None
    if n_boot > 0 and groups is not None:
        low, high = cluster_interval(_mean_difference, [y, x], groups, n_boot=n_boot, seed=seed)
    elif n_boot > 0:
        lo, hi = bootstrap_ci(batched_nanmean, y - x, n_boot=n_boot, seed=seed)
        if math.isfinite(lo) and math.isfinite(hi):
            low, high = lo, hi
    p_threshold = None
    if threshold is not None and n_boot > 0:
        mats = _padded([y, x], groups if groups is not None else list(range(len(x))))
        draws = resampled(_flat(_mean_difference), *mats, n_boot=n_boot, seed=seed)
        p_threshold = threshold_p(draws, float(test.observed), threshold)
    return PairedDifference(
        observed=test.observed,
        a=float(x.mean()),
        b=float(y.mean()),
        low=low,
        high=high,
        p_value=_finite(test.p_value),
        n=len(x),
        test="paired sign-flip permutation",
        p_threshold=p_threshold,
    )


# a statistic against a reference, of B minus A


def _batched_difference(
    stat: str, *arrays: np.ndarray
) -> tuple[Callable[..., np.ndarray] | None, tuple[Any, ...]]:
    """``stat(b, ref) - stat(a, ref)`` on every resample at once, for the named correlations that batch, and
    the arrays to resample for it: for Spearman the value codes of (a, b) and of ref, ranked by counting (the
    ranks sorting gives, exactly, at a fraction of its cost)."""
    rows = ROW_CORRELATIONS.get(stat)
    if rows is None:
        return None, arrays
    if stat == "spearman":
        a, b, h = arrays
        values, codes = np.unique(np.concatenate([a, b]), return_inverse=True)
        levels, ch = np.unique(h, return_inverse=True)

        @batched
        def ranked(ca: np.ndarray, cb: np.ndarray, c: np.ndarray) -> np.ndarray:
            hr = ranks_from_codes(c, len(levels))
            return pearson_rows(ranks_from_codes(cb, len(values)), hr) - pearson_rows(
                ranks_from_codes(ca, len(values)), hr
            )

        return ranked, (codes[: len(a)], codes[len(a) :], ch)

    @batched
    def diff(a: np.ndarray, b: np.ndarray, h: np.ndarray) -> np.ndarray:
        return rows(b, h) - rows(a, h)

    return diff, arrays


def paired_statistic_difference(
    b: Sequence[float | None] | np.ndarray,
    a: Sequence[float | None] | np.ndarray,
    reference: Sequence[float | None] | np.ndarray,
    stat: str | Callable[[np.ndarray, np.ndarray], float] = "spearman",
    *,
    test: PairedTest = "permutation",
    clusters: Sequence[Any] | None = None,
    n_boot: int = 1000,
    n_perm: int = 5000,
    seed: int = 0,
    min_n: int = 3,
    threshold: float | None = None,
) -> PairedDifference:
    """``stat(b, reference) - stat(a, reference)`` on the items where all three are finite, with interval and
    p.

    ``stat``: a correlation name or a function ``f(judge, reference) -> float``. ``test``:
    ``"permutation"`` or ``"bootstrap"`` (p from ``max(n_boot, n_perm)`` resamples); see the module
    docstring for when each holds. ``threshold`` (bootstrap test): also the bootstrap p of a difference of
    that size (``p_threshold``).
    """
    check_param("paired_statistic_difference", "test", test, [Options("permutation", "bootstrap")])
    fn = correlation_function(stat) if isinstance(stat, str) else stat
    keep, finite = complete_mask(a, b, reference)
    x, y, h = (v[keep] for v in finite)
    groups = None if clusters is None else [c for c, k in zip(clusters, keep, strict=True) if k]

    def difference(a_: np.ndarray, b_: np.ndarray, h_: np.ndarray) -> float:
        return fn(b_, h_) - fn(a_, h_)

    name = f"paired {test}"
    if test == "bootstrap":
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            sa, sb = _finite(fn(x, h)), _finite(fn(y, h))
        if sa is None or sb is None:
            why = (
                f"needs at least {min_n} items with a value from both judges and the reference; got {len(x)}"
                if len(x) < min_n
                else "the statistic is undefined for at least one judge (constant scores?)"
            )
            return PairedDifference(observed=math.nan, a=sa, b=sb, n=len(x), test=name, reason=why)
        mats = _padded([x, y, h], groups if groups is not None else list(range(len(x))))
        values = resampled(_flat(difference), *mats, n_boot=max(n_boot, n_perm, 1), seed=seed)
        values = values[np.isfinite(values)]
        low = high = p = None
        if len(values):
            lo, hi = np.percentile(values, [2.5, 97.5])
            low, high = (float(lo), float(hi)) if n_boot > 0 else (None, None)
            tail = min(int((values <= 0).sum()), int((values >= 0).sum()))
            p = min(1.0, 2 * (1 + tail) / (1 + len(values)))
        return PairedDifference(
            observed=sb - sa,
            a=sa,
            b=sb,
            low=low,
            high=high,
            p_value=p,
            n=len(x),
            test=name,
            p_threshold=threshold_p(values, sb - sa, threshold),
        )
    if len(x) < min_n:
        why = f"needs at least {min_n} items with a value from both and the reference; got {len(x)}"
        return PairedDifference(observed=math.nan, n=len(x), test=name, reason=why)
    perm = paired_permutation_test(y, x, h, stat, n_perm=n_perm, seed=seed, groups=groups)
    a_value, b_value = _finite(perm.observed_b), _finite(perm.observed_a)
    if not math.isfinite(perm.observed):
        why = perm.reason or "the statistic is undefined for at least one judge (constant scores)"
        return PairedDifference(observed=math.nan, a=a_value, b=b_value, n=len(x), test=name, reason=why)
    low = high = None
    if n_boot > 0 and groups is not None:
        low, high = cluster_interval(difference, [x, y, h], groups, n_boot=n_boot, seed=seed)
    elif n_boot > 0:
        batched_diff, arrays = (
            _batched_difference(stat, x, y, h) if isinstance(stat, str) else (None, (x, y, h))
        )
        lo, hi = bootstrap_ci(batched_diff or difference, *arrays, n_boot=n_boot, seed=seed)
        if math.isfinite(lo) and math.isfinite(hi):
            low, high = lo, hi
    return PairedDifference(
        observed=perm.observed,
        a=a_value,
        b=b_value,
        low=low,
        high=high,
        p_value=_finite(perm.p_value),
        n=len(x),
        test=name,
    )
