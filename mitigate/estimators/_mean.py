"""A group's mean human label, estimated from a judge's value on every item and human labels on some
(docs/estimate.md explains each choice).

Every bias-corrected method is one *difference estimator*: the labels of the labelled items, plus the
predictions of the others, plus (number of others) * the labelled items' mean residual, over ``N``;
unbiased whatever the predictions when the labelled items are a random draw. ``human`` predicts a
constant; ``ppi`` a line ``c + b * judge`` (PPI++ with power tuning, ``lam = b * N_u / N``; the slope may
be shared over groups, :func:`shared_slope`); ``calibrated`` a cross-fitted :func:`fit_calibration` map;
``judge`` is the judge's own mean, not bias-corrected. Labels drawn in a selection round carry the
inverse of their inclusion probability (Horvitz-Thompson, Hájek's variance, each round averaged with
the estimate before it by label counts). What cannot be estimated is a DataError naming the group.

The vectorised cores, the shared slope and the all-equal interval live in
:mod:`mitigate.estimators._regression`.

Size: over 600 lines because the four methods share the interval, the checks and the selection-round
weighting.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Literal, NamedTuple

import numpy as np
from pydantic import BaseModel, ConfigDict

from mitigate.constraints import Interval, Options, check_param
from mitigate.errors import DataError
from mitigate.estimators._calibration import CALIBRATIONS, Calibration, fit_calibration
from mitigate.estimators._regression import FLAT, Slope, constant_interval, regression_fit, t_quantile

Method = Literal["ppi", "calibrated", "human", "judge"]
"""How a group's mean is estimated (see the module docstring)."""
METHODS: tuple[str, ...] = ("ppi", "calibrated", "human", "judge")

Target = Literal["items", "population"]
"""What the estimate is of: the mean over the group's items, or over the distribution they come from."""
TARGETS: tuple[str, ...] = ("items", "population")

MIN_LABELS = {"human": 2, "ppi": 3, "calibrated": 3, "judge": 0}
"""Fewest labels per group each method needs: one more than the coefficients it fits."""


class Remedies(BaseModel):
    """What a refusal or a note suggests doing instead, in the words of the interface the user called ("":
    nothing). The defaults name ``mitigate estimate``'s options; ``mitigate compare`` passes its own."""

    model_config = ConfigDict(frozen=True, extra="forbid")
    regroup: str = "group differently: --by none"
    """After "label some of its items": another grouping."""
    fewer_coefficients: str = "use --method human"
    """For a group with fewer labels than the method fits."""
    more_labels: str = "label more of its items, drawn at random, or group differently"
    """For a group whose labels show no spread."""
    per_group_slope: str = "--tune group: one slope per group"
    """Beside the note that ``ppi`` tuned one slope over every group."""

    @staticmethod
    def after(text: str, remedy: str, sep: str = "; ") -> str:
        """``text`` followed by ``sep`` and ``remedy``, or ``text`` alone when there is no remedy."""
        return f"{text}{sep}{remedy}" if remedy else text


class MeanEstimate(BaseModel):
    """One group's estimate: the point, the interval ``estimate ± t(df) * se`` at ``confidence``, and how it
    was made.

    ``n`` counts the group's items, ``n_labelled`` those with a label, ``n_judged`` those with a
    judge value; ``lam`` is the PPI++ weight of the judge (``ppi``); ``bias_corrected`` False for
    the judge-only mean; ``notes`` say what the reader should know.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")
    method: Method
    estimate: float
    low: float
    high: float
    se: float
    df: float
    confidence: float
    target: Target
    n: int
    n_labelled: int
    n_judged: int
    bias_corrected: bool
    lam: float | None = None
    notes: tuple[str, ...] = ()
    slope_gap: float = 0.0
    """How much an error in a slope shared over groups moves this estimate (its coefficient): two groups'
    estimates covary by ``gap_a * gap_b * Var(slope)``."""
    constant_labels: tuple[float, float, float] | None = None
    """When every label of the group was equal: (that value, the scale's min, max); the interval then bounds
    the share of its items labelled otherwise (:func:`constant_interval`), and ``se``/``df`` are NaN."""

    @property
    def half_width(self) -> float:
        """Half the interval's width."""
        return (self.high - self.low) / 2

    def interval(self, confidence: float) -> tuple[float, float]:
        """The interval at another ``confidence`` (e.g. a Bonferroni-adjusted one), same point, se and df."""
        if self.constant_labels is not None:
            value, lo, hi = self.constant_labels
            return constant_interval(value, self.n_labelled, self.n, (lo, hi), confidence, self.target)
        half = float(t_quantile(confidence, self.df)) * self.se
        return self.estimate - half, self.estimate + half


# one group


def _as_array(values: Sequence[float | None] | np.ndarray, name: str) -> np.ndarray:
    try:
        arr = np.array([math.nan if v is None else v for v in values], dtype=float)
    except (TypeError, ValueError):
        raise DataError(
            f"expected numbers (or None for a missing value) in {name}; got {list(values)[:5]!r}"
        ) from None
    if arr.ndim != 1:
        raise DataError(f"expected one value per item in {name}; got an array of shape {arr.shape}")
    if np.isinf(arr).any():
        raise DataError(f"expected finite numbers in {name}; got an infinite value")
    return arr


def check_settings(method: str, confidence: float, target: str, calibration: str, folds: int) -> None:
    """Refuse an unknown method, target or calibration, a confidence outside (0, 1) or fewer than 2 folds."""
    for name, value, allowed in (
        ("method", method, Options(*METHODS)),
        ("target", target, Options(*TARGETS)),
        ("calibration", calibration, Options(*CALIBRATIONS)),
        ("confidence", confidence, Interval(float, 0, 1, closed="neither")),
        ("folds", folds, Interval(int, 2)),
    ):
        check_param("the estimate", name, value, [allowed])


def estimate_mean(
    labels: Sequence[float | None] | np.ndarray,
    judge: Sequence[float | None] | np.ndarray,
    *,
    method: Method = "ppi",
    confidence: float = 0.95,
    target: Target = "items",
    weights: Sequence[float | None] | np.ndarray | None = None,
    rounds: Sequence[int] | np.ndarray | None = None,
    calibration: Calibration = "isotonic",
    folds: int = 5,
    seed: int = 0,
    group: str | None = None,
    bounds: tuple[float, float] | None = None,
    slope: Slope | None = None,
    remedies: Remedies | None = None,
) -> MeanEstimate:
    """The estimate of one group's mean label (see the module docstring).

    ``labels`` and ``judge`` hold one value per item (None or NaN: unlabelled, or no judge value);
    ``weights`` the inverse inclusion probability of the items labelled in a selection round,
    ``rounds`` which round each item was labelled in (0: before any; default: 1 for every weighted
    item). ``calibration`` and ``folds`` apply to ``calibrated``; ``seed`` draws its folds.
    ``bounds``: the labels' scale (min, max), to which the interval is cut. ``slope``: for ``ppi``, a
    judge slope tuned over several groups (:func:`shared_slope`). DataError naming ``group`` when it
    cannot be estimated (suggesting ``remedies``); ConfigError for a bad setting.
    """
    check_settings(method, confidence, target, calibration, folds)
    fix = remedies or Remedies()
    y = _as_array(labels, "labels")
    f = _as_array(judge, "judge values")
    if len(y) != len(f):
        raise DataError(f"expected one judge value per item; got {len(y)} labels and {len(f)} judge values")
    w = None if weights is None else _as_array(weights, "weights")
    if w is not None and len(w) != len(y):
        raise DataError(f"expected one weight (or None) per item; got {len(w)} weights for {len(y)} items")
    where = f"group {group!r}" if group is not None else "the items"
    N = len(y)
    judged = np.isfinite(f)
    labelled = np.isfinite(y)
    n, n_judged = int(labelled.sum()), int(judged.sum())
    notes: list[str] = []
    if n_judged < N and method != "human":
        kept = "they stay in the estimate, predicted from the labels of such items (or the intercept)"
        kept = "the judge-only mean leaves them out" if method == "judge" else kept
        notes.append(f"{N - n_judged} of {N} items have no judge value (parse failure or error): {kept}")
    values = y[labelled]
    unweighted = w is None or not np.isfinite(w).any()
    if method != "judge" and bounds is not None and unweighted and _constant(values, n, N, target):
        return _constant_estimate(values, N, method, confidence, target, bounds, n_judged, where, notes)
    if method == "judge":
        estimate, se, df = _judge_only(f[judged], where, notes)
        lam, gap = None, 0.0
    else:
        _check_labels(y, n, N, method, target, where, fix, slope)
        rnd = _round_of(rounds, w, labelled, where)
        if w is not None and (rnd > 0).any():
            raw = _by_rounds(y, f, w, rnd, method, calibration, folds, seed, where, notes)
        elif method == "calibrated":
            raw = _calibrated(y, f, calibration, folds, seed, notes)
        else:
            raw = _regression(y, f, method, notes, slope)
        if target == "population":
            raw = raw._replace(variance=raw.variance + _label_spread(y, w, rnd) / N)
        _check_spread(raw, n, N, method, where)
        estimate, se, df, lam = float(raw.estimate), math.sqrt(max(raw.variance, 0.0)), float(raw.df), raw.lam
        gap = raw.gap
    half = float(t_quantile(float(confidence), df)) * se
    low, high = float(estimate - half), float(estimate + half)
    if method != "judge" and bounds is not None and (low < bounds[0] or high > bounds[1]):
        low, high = max(low, float(bounds[0])), min(high, float(bounds[1]))
        notes.append(f"interval cut to the labels' scale [{bounds[0]:g}, {bounds[1]:g}]")
    if group is not None:
        notes = [n if n.startswith(where) else f"{where}: {n}" for n in notes]
    return MeanEstimate(
        method=method,
        estimate=estimate,
        low=low,
        high=high,
        se=se,
        df=df,
        confidence=float(confidence),
        target=target,
        n=N,
        n_labelled=n,
        n_judged=n_judged,
        bias_corrected=method != "judge",
        lam=lam,
        notes=tuple(notes),
        slope_gap=gap if method == "ppi" else 0.0,
    )


def _constant(values: np.ndarray, n: int, N: int, target: str) -> bool:
    """True when the labels (at least two, not every item's for the items target) are all equal."""
    exact = n == N and target == "items"
    return n >= 2 and not exact and np.ptp(values) <= FLAT * (1.0 + abs(float(values.mean())))


def _constant_estimate(
    values: np.ndarray,
    N: int,
    method: Method,
    confidence: float,
    target: Target,
    bounds: tuple[float, float],
    n_judged: int,
    where: str,
    notes: list[str],
) -> MeanEstimate:
    """The estimate of a group whose labels are all equal (see :func:`constant_interval`)."""
    value, n = float(values[0]), len(values)
    low, high = constant_interval(value, n, N, (float(bounds[0]), float(bounds[1])), confidence, target)
    notes = [n if n.startswith(where) else f"{where}: {n}" for n in notes]
    notes.append(
        f"{where}: the {n} labels are all {value:g}, so no spread to correct the judge with; the interval "
        f"bounds the share of its items labelled otherwise (exact for {n} labels drawn at random, each such "
        "item put at the scale's far end), whatever the judge: valid, and wide"
    )
    return MeanEstimate(
        method=method,
        estimate=value,
        low=float(low),
        high=float(high),
        se=math.nan,
        df=math.nan,
        confidence=float(confidence),
        target=target,
        n=N,
        n_labelled=n,
        n_judged=n_judged,
        bias_corrected=True,
        notes=tuple(notes),
        constant_labels=(value, float(bounds[0]), float(bounds[1])),
    )


class _Raw(NamedTuple):
    """An estimate before its interval: the point, its variance (items target) and degrees of freedom."""

    estimate: float
    variance: float
    df: float
    lam: float | None = None
    fitted: bool = False
    gap: float = 0.0


def _check_labels(
    y: np.ndarray, n: int, N: int, method: str, target: str, where: str, fix: Remedies, slope: Slope | None
) -> None:
    """Refuse a group with too few labels for ``method``, or labels without spread."""
    if n == 0:
        raise DataError(
            f"{where} has no labelled item; expected at least {MIN_LABELS[method]} labels to "
            f"estimate its mean with {method!r} "
            f"({Remedies.after('label some of its items', fix.regroup, ', or ')})"
        )
    need = 2 if method == "ppi" and slope is not None else MIN_LABELS[method]
    if n == 1:
        raise DataError(
            f"{where} has a single label; expected at least {need} for {method!r} (one label "
            "shows no spread, so no interval can be formed)"
        )
    if n < need:
        raise DataError(
            Remedies.after(
                f"{where} has {n} labels; {method!r} needs at least {need} (it fits {need - 1} "
                "coefficients and needs one more for the spread)",
                fix.fewer_coefficients,
            )
        )
    labels = y[np.isfinite(y)]
    if _constant(labels, n, N, target):
        raise DataError(
            Remedies.after(
                f"{where}: its {n} labels are all {float(labels[0]):g}, which shows no spread to build an "
                "interval from",
                fix.more_labels,
            )
        )


def _check_spread(raw: _Raw, n: int, N: int, method: str, where: str) -> None:
    """Refuse an estimate whose variance gives no interval (too few degrees of freedom, or no spread)."""
    if not (math.isfinite(raw.variance) and raw.df >= 1):
        raise DataError(
            f"{where}: too few labels for an interval with {method!r} ({n} labels); label more of its items"
        )
    if raw.variance <= 0 and n != N:
        what = (
            "the judge's values, as fitted, predict each of its labels exactly"
            if raw.fitted
            else "its residuals show no spread"
        )
        raise DataError(
            f"{where}: {what}, which leaves no spread to build an interval from; label more of its items"
        )


def _judge_only(values: np.ndarray, where: str, notes: list[str]) -> tuple[float, float, float]:
    """The judge's mean over the items it scored, its standard error and degrees of freedom."""
    if len(values) < 2:
        raise DataError(
            f"{where} has {len(values)} judge value(s); expected at least 2 for the judge-only "
            "mean and its interval"
        )
    notes.append("not bias-corrected: the judge's own mean, with the spread of its values as the interval")
    return float(values.mean()), float(values.std(ddof=1)) / math.sqrt(len(values)), float(len(values) - 1)


def _round_of(
    rounds: Sequence[int] | np.ndarray | None, w: np.ndarray | None, labelled: np.ndarray, where: str
) -> np.ndarray:
    """Each item's selection round (0: labelled before any round, or unlabelled), checked against the
    weights."""
    N = len(labelled)
    weighted = np.zeros(N, dtype=bool) if w is None else np.isfinite(w)
    if rounds is None:
        rnd = weighted.astype(int)
    else:
        rnd = np.asarray(rounds)
        if rnd.shape != (N,) or not np.issubdtype(rnd.dtype, np.integer) or (rnd < 0).any():
            raise DataError(f"expected one selection round (an int >= 0) per item; got {rounds!r}"[:300])
        if ((rnd > 0) != weighted).any():
            raise DataError(
                f"{where}: expected a selection weight exactly on the items of a selection round (round >= 1)"
            )
    if (weighted & ~labelled).any():
        raise DataError(
            f"{where}: {int((weighted & ~labelled).sum())} items carry a selection weight but no "
            "label; expected every selected item labelled (an unlabelled selected item would "
            "bias the weights)"
        )
    if w is not None and weighted.any() and (w[weighted] < 1 - 1e-9).any():
        raise DataError(
            f"{where}: expected selection weights >= 1 (the inverse of an inclusion "
            f"probability); got {float(np.min(w[weighted])):g}"
        )
    return rnd


def _label_spread(y: np.ndarray, w: np.ndarray | None, rnd: np.ndarray) -> float:
    """The labels' variance for the population target: of the labels drawn at random, else weighted by
    1/probability."""
    plain = np.isfinite(y) & (rnd == 0)
    if plain.sum() >= 2:
        return float(y[plain].var(ddof=1))
    chosen = np.isfinite(y)
    weights = np.where(rnd[chosen] > 0, np.nan_to_num(w[chosen] if w is not None else 1.0, nan=1.0), 1.0)
    values = y[chosen]
    mean = float((weights * values).sum() / weights.sum())
    k = len(values)
    return float((weights * (values - mean) ** 2).sum() / weights.sum() * k / (k - 1))


def _ppi_design(f: np.ndarray, fit_rows: np.ndarray, ref: float) -> tuple[np.ndarray, bool]:
    """The ppi columns for every item: intercept, centred judge value (0 without one, zeroed when it does not
    vary on ``fit_rows``), and an intercept of the items without a judge value when there are any; and
    whether the slope column was kept."""
    judged = np.isfinite(f)
    slope = np.where(judged, f - ref, 0.0)
    fit_judged = judged & fit_rows
    keep = fit_judged.sum() >= 2 and np.ptp(slope[fit_judged]) > FLAT * (1.0 + abs(ref))
    cols = [np.ones(len(f)), slope if keep else np.zeros(len(f))]
    if not judged.all():
        cols.append((~judged).astype(float))
    return np.stack(cols, -1), bool(keep)


def _intercepts(judged: np.ndarray) -> np.ndarray:
    """The intercept column, and one of the items without a judge value when there are any."""
    N = len(judged)
    return np.ones((N, 1)) if judged.all() else np.stack([np.ones(N), (~judged).astype(float)], -1)


def _design(
    y: np.ndarray, f: np.ndarray, method: str, slope: Slope | None
) -> tuple[np.ndarray, np.ndarray, bool, np.ndarray]:
    """``human`` or ``ppi`` on the labelled items of ``y``: the labels to fit (less a shared ``slope``'s
    part), the prediction's columns for every item, whether the judge's column was kept, and the judge values
    centred on their labelled mean (0 where there is none)."""
    labelled, judged = np.isfinite(y), np.isfinite(f)
    ref = float(f[labelled & judged].mean()) if (labelled & judged).any() else 0.0
    centred = np.where(judged, f - ref, 0.0)
    if method == "human":
        return y[labelled], np.ones((len(y), 1)), False, centred
    if slope is not None:
        return y[labelled] - slope.value * centred[labelled], _intercepts(judged), slope.value != 0, centred
    X, keep = _ppi_design(f, labelled, ref)
    return y[labelled], X, keep, centred


def _regression(
    y: np.ndarray, f: np.ndarray, method: str, notes: list[str], slope: Slope | None = None
) -> _Raw:
    """``human`` or ``ppi`` on the labelled items of ``y`` (labels drawn at random); ``slope``: a shared
    one, fitting only the intercepts and adding the slope's uncertainty."""
    labelled = np.isfinite(y)
    N, n_u = len(y), int((~labelled).sum())
    y_l, X, keep, centred = _design(y, f, method, slope)
    fit = regression_fit(y_l, X[labelled], X.mean(0), N)
    if method == "ppi" and slope is not None:
        gap = (centred[~labelled].mean() - centred[labelled].mean()) * n_u / N if n_u else 0.0
        return _Raw(
            float(fit.estimate) + slope.value * float(centred.mean()),
            float(fit.variance) + gap**2 * slope.variance,
            float(fit.df),
            slope.value * n_u / N,
            keep,
            float(gap),
        )
    if method == "ppi" and not keep:
        notes.append(
            "the judge's values do not vary on the labelled items (or too few are judged): its "
            "slope is set to 0, so the estimate is the labels-alone one"
        )
    lam = float(fit.beta[1]) * n_u / N if method == "ppi" else None
    return _Raw(float(fit.estimate), float(fit.variance), float(fit.df), lam, keep)


def _predictor(
    y: np.ndarray, f: np.ndarray, method: str, calibration: str
) -> Callable[[np.ndarray], np.ndarray]:
    """The prediction of ``method`` fitted on labelled items (``y``, ``f``; ``f`` NaN where no judge
    value)."""
    judged = np.isfinite(f)
    mean_all = float(y.mean())
    mean_failed = float(y[~judged].mean()) if (~judged).any() else mean_all
    if method == "human":
        return lambda q: np.full(len(q), mean_all)
    if method == "ppi":
        ref = float(f[judged].mean()) if judged.any() else 0.0
        X, _ = _ppi_design(f, np.ones(len(f), dtype=bool), ref)
        beta = np.linalg.pinv(X.T @ X, hermitian=True) @ (X.T @ y)
        slope = beta[1]
        failed_level = beta[0] + (beta[2] if len(beta) > 2 else 0.0)
        return lambda q: np.where(np.isfinite(q), beta[0] + slope * (np.nan_to_num(q) - ref), failed_level)
    if judged.any():
        cal = fit_calibration(f[judged], y[judged], calibration)
        return lambda q: np.where(np.isfinite(q), cal(np.nan_to_num(q)), mean_failed)
    return lambda q: np.full(len(q), mean_failed)


def crossfit(
    y_l: np.ndarray, f_l: np.ndarray, f_u: np.ndarray, calibration: str, folds: int, seed: int
) -> tuple[np.ndarray, np.ndarray, int]:
    """K-fold cross-fitting of a calibration map on the labelled items: each one's residual under the map
    fitted without its fold, the other items' predictions averaged over the K maps, and K."""
    n = len(y_l)
    k = min(folds, n)
    fold = np.random.default_rng(seed).permutation(n) % k
    resid = np.empty(n)
    pred_u = np.zeros(len(f_u))
    for j in range(k):
        out = fold == j
        g = _predictor(y_l[~out], f_l[~out], "calibrated", calibration)
        resid[out] = y_l[out] - g(f_l[out])
        pred_u += g(f_u) / k
    return resid, pred_u, k


def _calibrated(
    y: np.ndarray, f: np.ndarray, calibration: str, folds: int, seed: int, notes: list[str]
) -> _Raw:
    """``calibrated`` on the labelled items of ``y`` (labels drawn at random)."""
    labelled = np.isfinite(y)
    N, n = len(y), int(labelled.sum())
    y_l = y[labelled]
    resid, pred_u, k = crossfit(y_l, f[labelled], f[~labelled], calibration, folds, seed)
    estimate = (y_l.sum() + pred_u.sum() + (N - n) * resid.mean()) / N
    variance = resid.var(ddof=1) * (1 - n / N) / n
    notes.append(f"{calibration} calibration, {k}-fold cross-fitted")
    return _Raw(float(estimate), float(variance), float(n - 1), None, True)


def _round_estimate(
    y: np.ndarray, pred: np.ndarray, before: np.ndarray, chosen: np.ndarray, pi: np.ndarray, where: str
) -> _Raw:
    """One selection round's estimate given the labels before it: those exactly, the others predicted, the
    round's residuals weighted by 1 / probability (Horvitz-Thompson); Hájek's variance for a fixed-size draw.
    """
    N, m = len(y), int(chosen.sum())
    if m < 2:
        raise DataError(
            f"{where}: a selection round of {m} item; expected at least 2 weighted labels per "
            "round for an interval"
        )
    z = y[chosen] - pred[chosen]
    total = y[before].sum() + pred[~before].sum() + (z / pi).sum()
    c = 1.0 - pi
    ratio = z / pi
    centre = (c * ratio).sum() / c.sum() if c.sum() > 0 else 0.0
    variance = m / (m - 1) * (c * (ratio - centre) ** 2).sum() / N**2
    return _Raw(float(total / N), float(variance), float(m - 1))


def _combine(a: _Raw, count: int, b: _Raw, m: int) -> _Raw:
    """``a`` (from ``count`` labels) and ``b`` (from ``m`` more), uncorrelated, weighted by their label
    counts; degrees of freedom by Welch-Satterthwaite."""
    wa, wb = count / (count + m), m / (count + m)
    va, vb = wa * wa * a.variance, wb * wb * b.variance
    parts = [(v, d) for v, d in ((va, a.df), (vb, b.df)) if v > 0]
    df = (va + vb) ** 2 / sum(v * v / d for v, d in parts) if parts else min(a.df, b.df)
    return _Raw(wa * a.estimate + wb * b.estimate, va + vb, float(df))


def _by_rounds(
    y: np.ndarray,
    f: np.ndarray,
    w: np.ndarray,
    rnd: np.ndarray,
    method: str,
    calibration: str,
    folds: int,
    seed: int,
    where: str,
    notes: list[str],
) -> _Raw:
    """The estimate from labels known before any round (drawn at random) and one or more selection rounds (see
    the module docstring)."""
    labelled = np.isfinite(y)
    pilot = labelled & (rnd == 0)
    count = int(pilot.sum())
    raw: _Raw | None = None
    if count >= MIN_LABELS[method] and np.ptp(y[pilot]) > 0:
        sub = np.where(pilot, y, np.nan)
        calibrated = method == "calibrated"
        raw = (
            _calibrated(sub, f, calibration, folds, seed, [])
            if calibrated
            else _regression(sub, f, method, [])
        )
    for k in range(1, int(rnd.max()) + 1):
        chosen = rnd == k
        if not chosen.any():
            continue
        before = labelled & (rnd < k)
        fit_on = before if raw is not None and int(before.sum()) >= MIN_LABELS[method] else before | chosen
        if raw is None:
            notes.append(
                f"fewer than {MIN_LABELS[method]} labels (or labels without spread) before the "
                "first selection round: its prediction is fitted on the round's own labels "
                "(approximately unbiased)"
            )
        pred = _predictor(y[fit_on], f[fit_on], method, calibration)(f)
        this = _round_estimate(y, pred, before, chosen, 1.0 / w[chosen], where)
        m = int(chosen.sum())
        raw = this if raw is None else _combine(raw, count, this, m)
        count += m
    assert raw is not None
    rounds = int(rnd.max())
    notes.append(
        f"{int((rnd > 0).sum())} labels from {rounds} selection round{'s' if rounds > 1 else ''}, "
        f"weighted by their inverse inclusion probabilities, combined with the {int(pilot.sum())} "
        "labels drawn at random"
    )
    return _Raw(raw.estimate, raw.variance, raw.df)


class Spread(NamedTuple):
    """A labelled pilot's spread under one method, what the label planner and the selection read: each
    labelled item's residual (out-of-fold for ``calibrated``), their variance ``s2`` on ``n - p`` degrees
    of freedom (``p`` coefficients fitted) and the labels' own variance."""

    residuals: np.ndarray
    s2: float
    p: int
    s2_labels: float


def pilot_spread(
    labels: Sequence[float | None] | np.ndarray,
    judge: Sequence[float | None] | np.ndarray,
    method: str,
    *,
    calibration: str = "isotonic",
    folds: int = 5,
    seed: int = 0,
    slope: Slope | None = None,
) -> Spread:
    """The spread of the labelled items under ``method`` (``human``, ``ppi`` or ``calibrated``), labels drawn
    at random; ``slope``: for ``ppi``, the slope shared over groups. Needs ``MIN_LABELS[method]`` labels."""
    y = _as_array(labels, "labels")
    f = _as_array(judge, "judge values")
    labelled = np.isfinite(y)
    y_l = y[labelled]
    n = len(y_l)
    s2_labels = float(y_l.var(ddof=1)) if n >= 2 else math.nan
    if method == "calibrated":
        resid, _, _ = crossfit(y_l, f[labelled], f[~labelled], calibration, folds, seed)
        return Spread(resid, float(resid.var(ddof=1)), 1, s2_labels)
    y_fit, X, _, _ = _design(y, f, method, slope)
    fit = regression_fit(y_fit, X[labelled], X.mean(0), len(y))
    return Spread(fit.resid, float(fit.s2), int(n - fit.df), s2_labels)
