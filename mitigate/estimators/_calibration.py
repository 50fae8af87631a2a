"""Judge -> human calibration maps fitted on labelled items, for the ``calibrated`` estimator."""

from __future__ import annotations

from collections.abc import Callable
from typing import Literal

import numpy as np

from mitigate.constraints import Options, check_param
from mitigate.errors import ConfigError

Calibration = Literal["isotonic", "linear"]
"""The calibration maps :func:`fit_calibration` fits."""
CALIBRATIONS: tuple[str, ...] = ("isotonic", "linear")

CalibrationMap = Callable[[np.ndarray], np.ndarray]


def pool_adjacent_violators(values: np.ndarray, weights: np.ndarray) -> np.ndarray:
    """The non-decreasing sequence closest to ``values`` in weighted squared error (values in their order).

    Kept by hand rather than scikit-learn's ``IsotonicRegression``: many times faster per fit, and the
    tests pin its maps to scikit-learn's.
    """
    means: list[float] = []
    mass: list[float] = []
    counts: list[int] = []
    for v, w in zip(values.tolist(), weights.tolist(), strict=True):
        means.append(v)
        mass.append(w)
        counts.append(1)
        while len(means) > 1 and means[-2] > means[-1]:
            total = mass[-2] + mass[-1]
            merged = (means[-2] * mass[-2] + means[-1] * mass[-1]) / total
            count = counts[-2] + counts[-1]
            del means[-1], mass[-1], counts[-1]
            means[-1], mass[-1], counts[-1] = merged, total, count
    return np.repeat(np.array(means, dtype=float), counts)


def fit_calibration(judge: np.ndarray, labels: np.ndarray, kind: str = "isotonic") -> CalibrationMap:
    """A calibration map fitted on the pairs (``judge[i]``, ``labels[i]``), all finite.

    ``isotonic``: the non-decreasing step function closest to the labels (pool-adjacent-violators
    over the distinct judge values, weighted by their counts), interpolated linearly between them
    and constant beyond; a judge running against the labels gets a flat map. ``linear``: least
    squares ``a + b * judge`` (the mean alone when the judge values do not vary).
    """
    check_param("fit_calibration", "calibration", kind, [Options(*CALIBRATIONS)])
    x = np.asarray(judge, dtype=float)
    y = np.asarray(labels, dtype=float)
    if x.shape != y.shape or x.ndim != 1 or not len(x):
        raise ConfigError(
            "expected two equal-length, non-empty 1-D arrays to calibrate; got shapes "
            f"{x.shape} and {y.shape}"
        )
    if kind == "isotonic":
        levels, inverse = np.unique(x, return_inverse=True)
        counts = np.bincount(inverse).astype(float)
        fitted = pool_adjacent_violators(np.bincount(inverse, weights=y) / counts, counts)
        if len(levels) == 1:
            return lambda q: np.full(np.shape(q), float(fitted[0]))
        return lambda q: np.interp(q, levels, fitted)
    xm, ym = float(x.mean()), float(y.mean())
    sxx = float(((x - xm) ** 2).sum())
    if sxx <= 1e-12 * max(1.0, xm * xm) * len(x):
        return lambda q: np.full(np.shape(q), ym)
    slope = float(((x - xm) * (y - ym)).sum()) / sxx
    return lambda q: ym + slope * (np.asarray(q, dtype=float) - xm)
