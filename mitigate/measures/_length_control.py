"""Length-controlled win rates (Dubois et al. 2024, "Length-controlled AlpacaEval").

The judge's preferences are fitted by a generalised linear model on the length difference,

    logit P(A preferred over B) = θ + φ · tanh(Δ / σ),     Δ = len(A) − len(B),

σ the standard deviation of Δ over the pairs, and the win rate read off it at Δ = 0: σ(θ).
AlpacaEval's instruction-difficulty term (shared across a leaderboard) is left out. Ties count
as half a win (soft targets), and a small L2 penalty keeps the fit finite when one side always
wins. Conventions: :mod:`mitigate.measures._base`.
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Sequence
from typing import Any

import numpy as np

from mitigate.errors import DataError
from mitigate.measures._base import Measure, Scores, finish, undefined
from mitigate.measures._stats import as_float_array, bootstrap_ci

L2 = 1e-3
"""Ridge penalty of the GLM (on θ and φ), as a share of the number of pairs."""


def _sigmoid(x: np.ndarray) -> np.ndarray:
    return 1.0 / (1.0 + np.exp(-x))


def fit_logit(pref: np.ndarray, x: np.ndarray, *, iters: int = 50) -> np.ndarray:
    """``[θ, φ_1, ...]`` of ``logit P = θ + x·φ`` by Newton's method with soft targets in [0, 1] and a small
    L2 penalty."""
    design = np.column_stack([np.ones(len(pref)), x])
    w = np.zeros(design.shape[1])
    lam = L2 * len(pref)
    for _ in range(iters):
        p = _sigmoid(design @ w)
        grad = design.T @ (p - pref) + lam * w
        hess = (design * (p * (1 - p))[:, None]).T @ design + lam * np.eye(design.shape[1])
        step = np.linalg.solve(hess, grad)
        w -= step
        if np.max(np.abs(step)) < 1e-10:
            break
    return w


def fit_length_glm(
    pref: np.ndarray, delta: np.ndarray, scale: float, *, iters: int = 50
) -> tuple[float, float]:
    """``(θ, φ)`` of ``logit P(A) = θ + φ·tanh(Δ/scale)`` (:func:`fit_logit`)."""
    theta, phi = fit_logit(pref, np.tanh(delta / scale) if scale > 0 else np.zeros_like(delta), iters=iters)
    return float(theta), float(phi)


def length_controlled_win_rate(
    preference: Scores,
    length_a: Scores,
    length_b: Scores,
    *,
    ci: bool = False,
    n_boot: int = 1000,
    alpha: float = 0.05,
    seed: int = 0,
) -> Measure:
    """The length-controlled win rate of A over B (σ(θ), see the module docstring), with the raw win rate.

    ``preference``: per pair 1 when the judge preferred A, 0 B, 0.5 a tie, or a probability
    (None/NaN: dropped, counted in ``n_failed``); ``length_a``/``length_b`` the two outputs'
    lengths. ``extra`` holds ``raw_win_rate`` (and ``raw_ci``), ``theta``, ``phi`` (> 0: the judge
    prefers the longer output), ``sigma`` and ``mean_length_diff``. The interval refits the GLM on
    each bootstrap resample.
    """
    pref = as_float_array(preference, "preference")
    la, lb = as_float_array(length_a, "length_a"), as_float_array(length_b, "length_b")
    if not len(pref) == len(la) == len(lb):
        raise DataError(
            f"expected one length of each output per preference; got {len(pref)}, {len(la)}, {len(lb)}"
        )
    ok = np.isfinite(pref) & np.isfinite(la) & np.isfinite(lb)
    bad = pref[ok][(pref[ok] < 0) | (pref[ok] > 1)]
    if len(bad):
        raise DataError(f"expected preferences in [0, 1] (1: A preferred, 0: B, 0.5: tie); got {bad[0]!r}")
    name = "lc_win_rate"
    failed = int((~ok).sum())
    pref, delta = pref[ok], (la - lb)[ok]
    if len(pref) < 3:
        return undefined(
            name, len(pref), failed, f"only {len(pref)} pairs have a preference; expected at least 3"
        )
    sigma = float(np.std(delta))

    def lc(p: np.ndarray, d: np.ndarray) -> float:
        return float(_sigmoid(np.asarray(fit_length_glm(p, d, sigma)[0])))

    theta, phi = fit_length_glm(pref, delta, sigma)
    extra: dict[str, Any] = {
        "raw_win_rate": float(pref.mean()),
        "theta": theta,
        "phi": phi,
        "sigma": sigma,
        "mean_length_diff": float(delta.mean()),
        "n_ties": int(np.sum(pref == 0.5)),
    }
    interval = None
    if ci:
        interval = bootstrap_ci(lc, pref, delta, n_boot=n_boot, alpha=alpha, seed=seed, paired=True)
        raw_ci = bootstrap_ci(lambda p: float(np.mean(p)), pref, n_boot=n_boot, alpha=alpha, seed=seed)
        extra["raw_ci"] = [float(raw_ci[0]), float(raw_ci[1])]
    reason = (
        None
        if sigma > 0
        else "every pair has the same length difference; the length effect is not identified"
    )
    return finish(
        name,
        float(_sigmoid(np.asarray(theta))),
        len(pref),
        failed,
        interval=interval,
        extra=extra,
        reason=reason,
    )


def pairs_against(
    scores: Scores,
    systems: Sequence[Hashable | None],
    docs: Sequence[Hashable | None],
    lengths: Scores,
    system: Hashable,
    baseline: Hashable | None = None,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Pointwise scores turned into pairs ``system`` vs ``baseline`` (None: every other system) on the same
    document, as :func:`length_controlled_win_rate` takes them: ``(preference, length_a, length_b)``, the
    preference 1 when ``system``'s score is higher, 0 lower, 0.5 equal, NaN when either is missing.
    """
    s = as_float_array(scores, "scores")
    ln = as_float_array(lengths, "lengths")
    if not len(s) == len(systems) == len(docs) == len(ln):
        raise DataError(
            f"expected one system, document and length per score; got {len(s)}, {len(systems)}, "
            f"{len(docs)}, {len(ln)}"
        )
    index: dict[tuple[Hashable, Hashable], int] = {}
    for i, (sy, d) in enumerate(zip(systems, docs, strict=True)):
        if sy is not None and d is not None:
            index[(sy, d)] = i
    pref, la, lb = [], [], []
    others = (
        [baseline] if baseline is not None else [x for x in dict.fromkeys(systems) if x not in (None, system)]
    )
    for d in dict.fromkeys(d for d in docs if d is not None):
        a = index.get((system, d))
        for other in others:
            b = index.get((other, d))
            if a is None or b is None:
                continue
            x, y = s[a], s[b]
            both = math.isfinite(x) and math.isfinite(y)
            pref.append((1.0 if x > y else 0.0 if x < y else 0.5) if both else math.nan)
            la.append(ln[a])
            lb.append(ln[b])
    return np.array(pref, dtype=float), np.array(la, dtype=float), np.array(lb, dtype=float)
