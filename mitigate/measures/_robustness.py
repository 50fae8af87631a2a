"""How far a bias probe moves a judge, and whether more than the judge's own rerun noise (docs/probes.md).

Three runs on the same items give per item ``y_i`` (original text), ``ŷ_i`` (probed text) and ``r_i``
(a rerun of the original); values are scores, or for a pairwise judge the preference for the probed
text (+1, -1, 0). Measures: CALM's robustness rate (Ye et al. 2025), the mean shift, the share of
changes in the predicted direction, the noise floor (the rerun's flip rate), and the probe-vs-noise
test: an exact one-sided McNemar test on the discordant (probe flip, rerun flip) counts. A probe is
detected when its p < ``alpha`` and, for a directional probe, most changes go the predicted way.
"""

from __future__ import annotations

import math
from typing import Literal

import numpy as np
from pydantic import BaseModel, ConfigDict

from mitigate.constraints import Interval, check_param
from mitigate.errors import ConfigError, DataError
from mitigate.measures._base import Measure, Scores, finish, share, undefined
from mitigate.measures._stats import as_float_array, bootstrap_ci, permutation_test_mean_diff

Direction = Literal["up", "down", "any"]


def preference_for(verdict: str | None, side: Literal["a", "b"]) -> float | None:
    """A pairwise verdict (``"first"`` = the item's ``output``, ``"second"``, ``"tie"``) as the preference
    for the probed ``side``: +1 prefers it, -1 prefers the other text, 0 a tie, None no verdict."""
    if verdict is None:
        return None
    if verdict == "tie":
        return 0.0
    if verdict not in ("first", "second"):
        raise DataError(f"expected a verdict 'first', 'second' or 'tie'; got {verdict!r}")
    return 1.0 if (verdict == "first") == (side == "a") else -1.0


def _pair(original: Scores, probed: Scores) -> tuple[np.ndarray, np.ndarray, int]:
    y = as_float_array(original, "original")
    p = as_float_array(probed, "probed")
    if len(y) != len(p):
        raise DataError(f"expected one probed value per original value; got {len(y)} and {len(p)}")
    ok = np.isfinite(y) & np.isfinite(p)
    return y[ok], p[ok], int((~ok).sum())


def _check_tolerance(tolerance: float) -> None:
    check_param("the probe measures", "tolerance", tolerance, [Interval(float, 0)])


def _changed(y: np.ndarray, p: np.ndarray, tolerance: float) -> np.ndarray:
    return np.abs(p - y) > tolerance + 1e-12


def robustness_rate(
    original: Scores,
    probed: Scores,
    *,
    tolerance: float = 0.0,
    ci: bool = False,
    n_boot: int = 1000,
    alpha: float = 0.05,
    seed: int = 0,
    name: str = "robustness_rate",
) -> Measure:
    """CALM's robustness rate: the share of items whose value the probe left unchanged; ``of_all`` counts an
    item where either run failed as changed."""
    _check_tolerance(tolerance)
    y, p, failed = _pair(original, probed)
    if len(y) == 0:
        return undefined(name, 0, failed, "no item has a value in both runs")
    same = (~_changed(y, p, tolerance)).astype(float)
    interval = bootstrap_ci(np.mean, same, n_boot=n_boot, alpha=alpha, seed=seed) if ci else None
    return share(name, same, failed, interval=interval)


def noise_floor(
    original: Scores,
    rerun: Scores,
    *,
    tolerance: float = 0.0,
    ci: bool = False,
    n_boot: int = 1000,
    alpha: float = 0.05,
    seed: int = 0,
) -> Measure:
    """The judge's own flip rate: the share of items whose value changed on an unperturbed rerun (1 − RR(y,
    r))."""
    _check_tolerance(tolerance)
    y, r, failed = _pair(original, rerun)
    if len(y) == 0:
        return undefined("noise_floor", 0, failed, "no item has a value in both runs")
    flips = _changed(y, r, tolerance).astype(float)
    interval = bootstrap_ci(np.mean, flips, n_boot=n_boot, alpha=alpha, seed=seed) if ci else None
    return share("noise_floor", flips, failed, failure_counts_as_hit=True, interval=interval)


def score_shift(
    original: Scores,
    probed: Scores,
    *,
    ci: bool = False,
    n_boot: int = 1000,
    alpha: float = 0.05,
    seed: int = 0,
    name: str = "mean_shift",
) -> Measure:
    """mean(probed − original) over the items with both values, with a paired bootstrap interval."""
    y, p, failed = _pair(original, probed)
    if len(y) == 0:
        return undefined(name, 0, failed, "no item has a value in both runs")
    d = p - y
    interval = bootstrap_ci(np.mean, d, n_boot=n_boot, alpha=alpha, seed=seed) if ci else None
    return finish(name, float(d.mean()), len(d), failed, interval=interval)


def directional_share(
    original: Scores, probed: Scores, direction: Direction, *, tolerance: float = 0.0
) -> Measure:
    """Of the items the probe changed, the share that moved in ``direction`` (``up``: probed > original)."""
    _check_tolerance(tolerance)
    if direction not in ("up", "down", "any"):
        raise ConfigError(f"expected a direction 'up', 'down' or 'any'; got {direction!r}")
    y, p, failed = _pair(original, probed)
    name = "directional_share"
    if direction == "any":
        return undefined(name, len(y), failed, "the probe predicts no direction")
    moved = _changed(y, p, tolerance)
    if not moved.any():
        return undefined(name, 0, failed, "the probe changed no item")
    d = (p - y)[moved]
    hits = (d > 0) if direction == "up" else (d < 0)
    return share(name, hits.astype(float), failed)


def mcnemar_one_sided(b: int, c: int) -> float:
    """Exact one-sided McNemar p-value P(X >= b), X ~ Binomial(b + c, 1/2); 1.0 when b + c = 0."""
    if b < 0 or c < 0:
        raise ConfigError(f"expected discordant counts b, c >= 0; got b={b}, c={c}")
    n = b + c
    if n == 0:
        return 1.0
    return float(sum(math.comb(n, k) for k in range(b, n + 1)) / 2**n)


def flip_test(original: Scores, probed: Scores, rerun: Scores, *, tolerance: float = 0.0) -> Measure:
    """Does the probe change verdicts more often than an unperturbed rerun does? (exact one-sided McNemar)

    ``value`` is the probe's flip rate minus the rerun's on the items with all three values;
    ``extra`` holds ``p_value``, the discordant counts ``b`` and ``c``, and both flip rates.
    """
    _check_tolerance(tolerance)
    y, p, r = (
        as_float_array(v, k) for v, k in ((original, "original"), (probed, "probed"), (rerun, "rerun"))
    )
    if not len(y) == len(p) == len(r):
        raise DataError(f"expected one value per item in each run; got {len(y)}, {len(p)} and {len(r)}")
    ok = np.isfinite(y) & np.isfinite(p) & np.isfinite(r)
    failed = int((~ok).sum())
    y, p, r = y[ok], p[ok], r[ok]
    if len(y) == 0:
        return undefined("probe_vs_noise", 0, failed, "no item has a value in all three runs")
    cp, cr = _changed(y, p, tolerance), _changed(y, r, tolerance)
    b, c = int(np.sum(cp & ~cr)), int(np.sum(~cp & cr))
    extra = {
        "p_value": mcnemar_one_sided(b, c),
        "b": b,
        "c": c,
        "flip_probe": float(cp.mean()),
        "flip_rerun": float(cr.mean()),
        "test": "exact one-sided McNemar on (probe flip, rerun flip)",
    }
    return finish("probe_vs_noise", float(cp.mean() - cr.mean()), len(y), failed, extra=extra)


class ProbeEffect(BaseModel):
    """Every measure of one probe on one judge, and whether the probe is detected above the noise floor.

    ``reading`` says it in words: for a bias probe (``ideal="unchanged"``) a detection means the
    judge is *moved by the bias*; for an error probe (``ideal="down"``) that it *noticed the error*.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")
    probe: str
    direction: Direction
    ideal: Literal["unchanged", "down"] = "unchanged"
    alpha: float = 0.05
    robustness: Measure
    noise: Measure
    shift: Measure
    noise_shift: Measure
    directional: Measure
    test: Measure
    detected: bool
    reading: str


def probe_effect(
    original: Scores,
    probed: Scores,
    rerun: Scores,
    *,
    probe: str,
    direction: Direction,
    ideal: Literal["unchanged", "down"] = "unchanged",
    tolerance: float = 0.0,
    alpha: float = 0.05,
    n_boot: int = 1000,
    seed: int = 0,
    n_perm: int = 5000,
) -> ProbeEffect:
    """The :class:`ProbeEffect` of one probe from the three runs (``n_boot=0``: no intervals)."""
    check_param("probe_effect", "alpha", alpha, [Interval(float, 0, 1, closed="neither")])
    ci = n_boot > 0
    boot = max(n_boot, 1)
    rr = robustness_rate(original, probed, tolerance=tolerance, ci=ci, n_boot=boot, alpha=alpha, seed=seed)
    floor = noise_floor(original, rerun, tolerance=tolerance, ci=ci, n_boot=boot, alpha=alpha, seed=seed)
    shift = score_shift(original, probed, ci=ci, n_boot=boot, alpha=alpha, seed=seed)
    noise_shift = score_shift(original, rerun, name="noise_shift", ci=ci, n_boot=boot, alpha=alpha, seed=seed)
    directional = directional_share(original, probed, direction, tolerance=tolerance)
    test = flip_test(original, probed, rerun, tolerance=tolerance)
    if test.ok:
        perm = permutation_test_mean_diff(probed, rerun, paired=True, n_perm=n_perm, seed=seed)
        test = test.model_copy(
            update={"extra": {**test.extra, "shift_p": perm.p_value, "shift_beyond_noise": perm.observed}}
        )
    p = test.extra.get("p_value", math.nan)
    leaning = direction == "any" or (directional.ok and directional.value > 0.5)
    detected = bool(test.ok and p < alpha and leaning)
    if not test.ok:
        reading = f"not measurable: {test.reason}"
    elif detected:
        reading = "noticed the error" if ideal == "down" else "moved by the bias"
    elif p < alpha:
        reading = "changes above noise, but not mostly in the predicted direction"
    else:
        reading = "overlooked the error" if ideal == "down" else "not moved above noise"
    return ProbeEffect(
        probe=probe,
        direction=direction,
        ideal=ideal,
        alpha=alpha,
        robustness=rr,
        noise=floor,
        shift=shift,
        noise_shift=noise_shift,
        directional=directional,
        test=test,
        detected=detected,
        reading=reading,
    )
