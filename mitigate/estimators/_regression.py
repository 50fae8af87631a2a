"""The vectorised cores of a group's mean estimate (a batch of draws along the leading axes, the labelled
items along the last), the judge slope shared over groups, the Student-t quantile, and the interval of a
group whose labels are all equal; what :mod:`mitigate.estimators._mean` and the simulations run."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import NamedTuple

import numpy as np

FLAT = 1e-12
"""Relative size below which a spread counts as none."""


def constant_interval(
    value: float, n: int, N: int, bounds: tuple[float, float], confidence: float, target: str
) -> tuple[float, float]:
    """An interval for a group's mean when its ``n`` labels, drawn at random from its ``N`` items, all equal
    ``value`` on a scale ``bounds``: the exact (Clopper-Pearson, two-sided convention) upper bound ``K`` on
    how many items are labelled otherwise, each put at the scale's far end. Had more than ``K`` items another
    label, ``n`` labels drawn at random would all be ``value`` with probability below (1 - confidence) / 2
    (hypergeometric for ``items``; binomial for ``population``). Valid whatever the judge; wide with few
    labels."""
    alpha = (1 - confidence) / 2
    if target == "population":
        share = 1 - alpha ** (1 / n)
    else:
        k = 0  # the largest K with P(n draws all avoid K of N items) > alpha
        while k < N - n:
            p = math.prod((N - (k + 1) - i) / (N - i) for i in range(n))
            if p <= alpha:
                break
            k += 1
        share = k / N
    return value - share * (value - bounds[0]), value + share * (bounds[1] - value)


class RegressionFit(NamedTuple):
    """What :func:`regression_fit` returns, each with the batch's leading shape."""

    estimate: np.ndarray
    variance: np.ndarray
    df: np.ndarray
    beta: np.ndarray
    s2: np.ndarray
    resid: np.ndarray


def t_quantile(confidence: float, df: float | np.ndarray) -> np.ndarray:
    """The two-sided Student-t quantile for ``confidence`` at ``df`` degrees of freedom (normal when
    infinite; NaN when not positive): scipy's ``stdtrit``, which ``scipy.stats.t.ppf`` calls after checks
    that cost 100 times the quantile."""
    from scipy.special import stdtrit  # lazy: scipy is slow to import

    df_arr = np.asarray(df, dtype=float)
    return np.where(df_arr > 0, stdtrit(np.where(df_arr > 0, df_arr, 1.0), (1 + confidence) / 2), np.nan)


# the vectorised cores (a batch of draws along the leading axes; the labelled items along the last)


def regression_fit(
    y: np.ndarray, X: np.ndarray, x_mean_all: np.ndarray, N: int, *, population: bool = False
) -> RegressionFit:
    """The regression (difference) estimate of a group's mean from ``n`` labels drawn at random.

    ``y``: labels, shape (..., n); ``X``: the prediction's columns on the labelled items,
    (..., n, p); ``x_mean_all``: the columns' mean over all ``N`` items, (..., p). A column that
    is zero on every labelled item gets coefficient 0 (least squares by pseudo-inverse), and
    ``df`` is ``n`` minus the rank of ``X``. ``population`` adds the items' spread (see the
    module docstring).
    """
    n = y.shape[-1]
    xtx = np.swapaxes(X, -1, -2) @ X
    inv = np.linalg.pinv(xtx, hermitian=True)
    beta = (inv @ (np.swapaxes(X, -1, -2) @ y[..., None]))[..., 0]
    resid = y - (X @ beta[..., None])[..., 0]
    rank = np.linalg.matrix_rank(xtx, hermitian=True)
    df = (n - rank).astype(float)
    s2 = np.where(df > 0, (resid**2).sum(-1) / np.where(df > 0, df, 1.0), np.nan)
    n_u = N - n
    x_lab = X.sum(-2)
    unlabelled_sum = N * x_mean_all - x_lab
    estimate = (y.sum(-1) + (unlabelled_sum * beta).sum(-1)) / N
    if n_u > 0:
        x_u = unlabelled_sum / n_u
        quad = (x_u[..., None, :] @ inv @ x_u[..., :, None])[..., 0, 0]
        variance = s2 * ((n_u / N) ** 2 * quad + n_u / N**2)
    else:
        variance = np.zeros_like(estimate)
    if population:
        variance = variance + y.var(-1, ddof=1) / N
    return RegressionFit(estimate, variance, df, beta, s2, resid)


def _slope_column(
    f_lab: np.ndarray, f_all_mean: np.ndarray, ref: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """The centred judge column on the labelled items and its mean over all items; zeroed where it is flat."""
    col = f_lab - ref[..., None]
    spread = col.max(-1) - col.min(-1)
    flat = spread <= FLAT * (1.0 + np.abs(ref))
    col = np.where(flat[..., None], 0.0, col)
    return col, f_all_mean - ref


def ppi_srs(
    y: np.ndarray, f: np.ndarray, f_mean_all: float | np.ndarray, N: int, *, population: bool = False
) -> RegressionFit:
    """``ppi`` on labels drawn at random, vectorised: ``y`` and ``f`` (..., n) labels and judge values of the
    labelled items (all judged), ``f_mean_all`` the judge's mean over all ``N`` items."""
    y = np.asarray(y, dtype=float)
    f = np.asarray(f, dtype=float)
    ref = f.mean(-1)
    col, col_mean = _slope_column(f, np.broadcast_to(np.asarray(f_mean_all, dtype=float), ref.shape), ref)
    X = np.stack([np.ones_like(col), col], -1)
    x_all = np.stack([np.ones_like(col_mean), col_mean], -1)
    return regression_fit(y, X, x_all, N, population=population)


def human_srs(y: np.ndarray, N: int, *, population: bool = False) -> RegressionFit:
    """``human`` on labels drawn at random, vectorised: ``y`` (..., n) the labels."""
    y = np.asarray(y, dtype=float)
    X = np.ones((*y.shape, 1))
    return regression_fit(y, X, np.ones((*y.shape[:-1], 1)), N, population=population)


class Slope(NamedTuple):
    """A judge slope tuned once over several groups (``ppi`` with ``tune="overall"``) and its variance."""

    value: float
    variance: float


def shared_slope(groups: Sequence[tuple[np.ndarray, np.ndarray]]) -> Slope | None:
    """The slope of the labels on the judge values within groups, pooled over ``groups`` ((labels, judge)
    arrays): least squares with one intercept per group (PPI++'s "overall" tuning), and its variance.

    None when the judge values do not vary within any group or too few labels are left for the
    residual variance.
    """
    sxy = sxx = 0.0
    parts: list[tuple[np.ndarray, np.ndarray]] = []
    for y, f in groups:
        use = np.isfinite(y) & np.isfinite(f)
        if use.sum() < 2:
            continue
        yc, fc = y[use] - y[use].mean(), f[use] - f[use].mean()
        sxy += float((yc * fc).sum())
        sxx += float((fc * fc).sum())
        parts.append((yc, fc))
    count = sum(len(yc) for yc, _ in parts)
    df = count - len(parts) - 1
    if not parts or sxx <= FLAT * count or df < 1:
        return None
    value = sxy / sxx
    ss = sum(float(((yc - value * fc) ** 2).sum()) for yc, fc in parts)
    return Slope(value, ss / df / sxx)
