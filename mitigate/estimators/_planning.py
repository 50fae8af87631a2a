"""How many labels a group needs for an interval of a given half-width, predicted from a labelled pilot.

The pilot's spread under a method (:func:`mitigate.estimators._mean.pilot_spread`: the
residual variance ``s2`` on ``n - p`` degrees of freedom) predicts the half-width the method
would give with ``n`` labels drawn at random from the group's ``N`` items::

    half_width(n) = t(n - p) * sqrt(s2 * (1 - n/N) / n * (1 + (p - 1) / (n - 1))  [+ s2_labels / N])

The factor ``1 + (p - 1)/(n - 1)`` is the expected share the fitted slope adds (the
regression estimator's extrapolation term, averaged over draws); the bracket is the
``population`` target's item spread. The planner assumes the pilot's spread holds for the
rest of the group; with few pilot labels that spread is itself uncertain, so read the
answer as an estimate (the tests check the prediction against realised half-widths).
"""

from __future__ import annotations

import math

import numpy as np
from pydantic import BaseModel, ConfigDict

from mitigate.estimators._mean import t_quantile


class MethodPlan(BaseModel):
    """One method's label budget for one group.

    ``labelled``: labels now; ``needed``: total labels for the half-width (None when not
    reachable even with every item labelled); ``more``: how many to add; ``half_width_now``
    the half-width predicted at the pilot's size; ``note`` why there is no answer, if any.
    """

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
