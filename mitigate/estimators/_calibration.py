"""Judge -> human calibration maps fitted on labelled items: isotonic (monotone) and linear.

A calibration map turns a judge value into a predicted human label. :func:`fit_calibration`
fits one on pairs (judge value, label) and returns it as a function of judge values; the
``calibrated`` estimator (:mod:`mitigate.estimators._mean`) fits one per cross-fitting fold.

- ``isotonic``: the non-decreasing step function closest to the labels in squared error
  (pool-adjacent-violators over the distinct judge values, each weighted by its count),
  interpolated linearly between the distinct values and held constant beyond the smallest
  and largest. A judge whose values run against the labels gets a flat map (the labels'
  mean): isotonic calibration never turns a judge around.
- ``linear``: least squares ``a + b * judge`` (the mean alone when the judge values do not vary).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Literal

import numpy as np

from mitigate.errors import ConfigError

Calibration = Literal["isotonic", "linear"]
"""The calibration maps :func:`fit_calibration` fits."""

CALIBRATIONS: tuple[str, ...] = ("isotonic", "linear")

Map = Callable[[np.ndarray], np.ndarray]
"""A fitted calibration: judge values in, predicted labels out (same shape)."""


def pool_adjacent_violators(values: np.ndarray, weights: np.ndarray) -> np.ndarray:
    """The non-decreasing sequence closest to ``values`` in weighted squared error (values in their order)."""
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


def _isotonic(x: np.ndarray, y: np.ndarray) -> Map:
    levels, inverse = np.unique(x, return_inverse=True)
    counts = np.bincount(inverse).astype(float)
    fitted = pool_adjacent_violators(np.bincount(inverse, weights=y) / counts, counts)
    if len(levels) == 1:
        value = float(fitted[0])
        return lambda q: np.full(np.shape(q), value)
    return lambda q: np.interp(q, levels, fitted)


def _linear(x: np.ndarray, y: np.ndarray) -> Map:
    xm, ym = float(x.mean()), float(y.mean())
    sxx = float(((x - xm) ** 2).sum())
    if sxx <= 1e-12 * max(1.0, xm * xm) * len(x):
        return lambda q: np.full(np.shape(q), ym)
    slope = float(((x - xm) * (y - ym)).sum()) / sxx
    return lambda q: ym + slope * (np.asarray(q, dtype=float) - xm)


def fit_calibration(judge: np.ndarray, labels: np.ndarray, kind: Calibration = "isotonic") -> Map:
    """A calibration map of ``kind`` fitted on the pairs (``judge[i]``, ``labels[i]``), all finite.

    ConfigError for an unknown kind; at least one pair is needed (the caller refuses fewer).
    """
    x = np.asarray(judge, dtype=float)
    y = np.asarray(labels, dtype=float)
    if x.shape != y.shape or x.ndim != 1 or not len(x):
        raise ConfigError(
            "expected two equal-length, non-empty 1-D arrays to calibrate; got shapes "
            f"{x.shape} and {y.shape}"
        )
    if kind == "isotonic":
        return _isotonic(x, y)
    if kind == "linear":
        return _linear(x, y)
    raise ConfigError(
        f"The 'calibration' parameter must be one of {list(CALIBRATIONS)}. Got {kind!r} instead."
    )
