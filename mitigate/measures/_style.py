"""Length and style control: a judge's win rate read as if both texts had the same length (Dubois et al. 2024,
"Length-controlled AlpacaEval") or the same style (Arena-Hard's covariates, Li et al. 2024).

The win rate is read off a GLM of the preferences, ``logit P(A preferred) = θ + Σ_k φ_k · tanh(Δ_k / σ_k)``
(Δ_k the difference of feature k between the texts, σ_k its standard deviation over the pairs), at
Δ = 0: σ(θ); ties count as half a win and a small L2 penalty keeps the fit finite. Length control has
one feature, length; style control adds markdown headers, bold spans and list items
(:func:`style_features`). :func:`score_style_regression` is the pointwise form: least squares of the
score on the squashed features, whose slopes :class:`~mitigate.strategies.StyleControl`
removes. Conventions: :mod:`mitigate.measures._base`.
"""

from __future__ import annotations

import math
import re
from collections.abc import Hashable, Mapping, Sequence
from typing import Any

import numpy as np

from mitigate.errors import ConfigError, DataError
from mitigate.measures._base import Measure, Scores, finish, undefined, word_count
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
    name = "lc_win_rate"
    pref, delta, failed = _preference_pairs(pref, la[:, None], lb[:, None], "length of each output")
    if len(pref) < 3:
        return undefined(
            name, len(pref), failed, f"only {len(pref)} pairs have a preference; expected at least 3"
        )
    delta = delta[:, 0]
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
    value = float(_sigmoid(np.asarray(theta)))
    return finish(name, value, len(pref), failed, interval=interval, extra=extra, reason=reason)


def _preference_pairs(
    pref: np.ndarray, a: np.ndarray, b: np.ndarray, what: str
) -> tuple[np.ndarray, np.ndarray, int]:
    """The preferences (checked in [0, 1]) and the differences ``a - b`` (one row per pair) where all are
    finite, and the number of pairs dropped."""
    if not len(pref) == len(a) == len(b):
        raise DataError(f"expected one {what} per preference; got {len(pref)}, {len(a)}, {len(b)}")
    ok = np.isfinite(pref) & np.isfinite(a).all(axis=1) & np.isfinite(b).all(axis=1)
    bad = pref[ok][(pref[ok] < 0) | (pref[ok] > 1)]
    if len(bad):
        raise DataError(f"expected preferences in [0, 1] (1: A preferred, 0: B, 0.5: tie); got {bad[0]!r}")
    return pref[ok], (a - b)[ok], int((~ok).sum())


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


STYLE_FEATURES: tuple[str, ...] = ("length", "headers", "bold", "lists")
"""The covariates, in the order they are reported."""

_HEADER = re.compile(r"^\s{0,3}#{1,6}\s+\S", re.MULTILINE)
_BOLD = re.compile(r"\*\*(?=\S)(.+?)(?<=\S)\*\*|__(?=\S)(.+?)(?<=\S)__", re.DOTALL)
_LIST = re.compile(r"^\s*(?:[-*+]|\d{1,3}[.)])\s+\S", re.MULTILINE)


def style_features(text: str) -> dict[str, float]:
    """The style counts of ``text``: words, markdown headers, bold spans and list items."""
    return {
        "length": float(word_count(text)),
        "headers": float(len(_HEADER.findall(text))),
        "bold": float(len(_BOLD.findall(text))),
        "lists": float(len(_LIST.findall(text))),
    }


def _check_features(features: Sequence[str]) -> list[str]:
    out = list(features)
    unknown = [f for f in out if f not in STYLE_FEATURES]
    if not out or unknown:
        raise ConfigError(f"expected style features among {list(STYLE_FEATURES)}; got {out}")
    return out


def style_matrix(texts: Sequence[str], features: Sequence[str] = STYLE_FEATURES) -> np.ndarray:
    """One row per text, one column per feature (in ``features`` order)."""
    cols = _check_features(features)
    rows = [[style_features(t)[f] for f in cols] for t in texts]
    return np.array(rows, dtype=float).reshape(len(texts), len(cols))


def _as_rows(features: Sequence[Mapping[str, float]] | np.ndarray, cols: list[str], what: str) -> np.ndarray:
    if isinstance(features, np.ndarray):
        arr = np.asarray(features, dtype=float)
        if arr.ndim != 2 or arr.shape[1] != len(cols):
            raise DataError(f"expected {what} with one column per feature {cols}; got shape {arr.shape}")
        return arr
    try:
        rows = [[float(row[c]) for c in cols] for row in features]
        return np.array(rows, dtype=float).reshape(len(features), len(cols))
    except KeyError as exc:
        raise DataError(f"expected {what} holding the features {cols}; a row lacks {exc.args[0]!r}") from None


def style_controlled_win_rate(
    preference: Scores,
    features_a: Sequence[Mapping[str, float]] | np.ndarray,
    features_b: Sequence[Mapping[str, float]] | np.ndarray,
    *,
    features: Sequence[str] = STYLE_FEATURES,
    ci: bool = False,
    n_boot: int = 1000,
    alpha: float = 0.05,
    seed: int = 0,
) -> Measure:
    """The win rate of A over B read at equal style (see the module docstring), with each feature's
    coefficient.

    ``preference``: 1 A preferred, 0 B, 0.5 tie (None/NaN: dropped, counted in ``n_failed``);
    ``features_a``/``features_b``: per pair, the :func:`style_features` of each text (or a matrix with
    one column per feature). ``extra``: ``coefficients`` (feature -> φ), ``sigma``, ``constant``,
    ``raw_win_rate`` and ``theta``. The interval refits on each bootstrap resample.
    """
    cols = _check_features(features)
    pref = as_float_array(preference, "preference")
    fa, fb = _as_rows(features_a, cols, "features_a"), _as_rows(features_b, cols, "features_b")
    name = "style_controlled_win_rate"
    pref, delta, failed = _preference_pairs(pref, fa, fb, "feature row of each text")
    if len(pref) < 3:
        return undefined(
            name, len(pref), failed, f"only {len(pref)} pairs have a preference; expected at least 3"
        )
    sigma = delta.std(axis=0)
    keep = sigma > 0
    used = [c for c, k in zip(cols, keep, strict=True) if k]
    constant = [c for c, k in zip(cols, keep, strict=True) if not k]
    x = np.tanh(delta[:, keep] / sigma[keep]) if used else np.zeros((len(pref), 0))
    w = fit_logit(pref, x)
    extra = {
        "coefficients": {c: float(v) for c, v in zip(used, w[1:], strict=True)},
        "sigma": {c: float(s) for c, s in zip(cols, sigma, strict=True)},
        "constant": constant,
        "raw_win_rate": float(pref.mean()),
        "theta": float(w[0]),
    }
    interval = None
    if ci:

        def controlled(p: np.ndarray, xx: np.ndarray) -> float:
            return float(_sigmoid(fit_logit(p, xx)[0]))

        interval = bootstrap_ci(controlled, pref, x, n_boot=n_boot, alpha=alpha, seed=seed, paired=True)
    reason = None if used else "no style feature differs between the texts; nothing is controlled"
    value = float(_sigmoid(w[0]))
    return finish(name, value, len(pref), failed, interval=interval, extra=extra, reason=reason)


def squashed(matrix: np.ndarray, mean: np.ndarray, sd: np.ndarray) -> np.ndarray:
    """``tanh((f − mean) / sd)`` per column; a column with sd 0 is all zeros."""
    safe = np.where(sd > 0, sd, 1.0)
    return np.where(sd > 0, np.tanh((matrix - mean) / safe), 0.0)


def score_style_regression(
    scores: Scores,
    texts: Sequence[str],
    *,
    human: Scores | None = None,
    features: Sequence[str] = STYLE_FEATURES,
) -> Measure:
    """OLS of the judge's score (or score − human) on the squashed style features; ``value`` = R².

    ``extra``: ``coefficients`` (feature -> slope per unit of z), ``intercept``, each feature's
    ``mean`` and ``sd``, ``constant`` (features that never vary) and ``target``.
    """
    cols = _check_features(features)
    y = as_float_array(scores, "scores")
    if len(y) != len(texts):
        raise DataError(f"expected one text per score; got {len(texts)} texts for {len(y)} scores")
    target = "score"
    if human is not None:
        h = as_float_array(human, "human")
        if len(h) != len(y):
            raise DataError(f"expected one human score per score; got {len(h)} for {len(y)}")
        y, target = y - h, "score - human"
    f = style_matrix(texts, cols)
    ok = np.isfinite(y)
    name = "style_regression_r2"
    failed = int((~ok).sum())
    y, f = y[ok], f[ok]
    if len(y) < 3:
        return undefined(name, len(y), failed, f"only {len(y)} items have a score; expected at least 3")
    mean, sd = f.mean(axis=0), f.std(axis=0)
    keep = sd > 0
    z = squashed(f, mean, sd)[:, keep]
    design = np.column_stack([np.ones(len(y)), z])
    coef, *_ = np.linalg.lstsq(design, y, rcond=None)
    resid = y - design @ coef
    total = float(np.sum((y - y.mean()) ** 2))
    r2 = float(1 - np.sum(resid**2) / total) if total > 0 else float("nan")
    used = [c for c, k in zip(cols, keep, strict=True) if k]
    extra = {
        "coefficients": {c: float(v) for c, v in zip(used, coef[1:], strict=True)},
        "intercept": float(coef[0]),
        "mean": {c: float(m) for c, m in zip(cols, mean, strict=True)},
        "sd": {c: float(s) for c, s in zip(cols, sd, strict=True)},
        "constant": [c for c, k in zip(cols, keep, strict=True) if not k],
        "target": target,
    }
    reason = None if total > 0 else "every score is the same; there is nothing to explain"
    return finish(name, r2, len(y), failed, extra=extra, reason=reason)
