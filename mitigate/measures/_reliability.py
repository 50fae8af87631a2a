"""Reliability (Stureborg et al. 2024): Krippendorff's alpha across samples of one judge and across settings
(settings on different scales binned to the coarsest first, as the paper does). Alpha comes from the
``krippendorff`` package. Conventions: :mod:`mitigate.measures._base`.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from mitigate.errors import ConfigError, DataError
from mitigate.judge import Judgment
from mitigate.measures._base import EntryData, Measure, Scores, finish, reported_measure, undefined
from mitigate.measures._stats import as_float_array, bootstrap_ci
from mitigate.scale import Scale


def _alpha(mat: np.ndarray, level: Any) -> tuple[float, str | None]:
    import krippendorff

    if mat.shape[0] < 2:
        return math.nan, f"needs at least 2 rows (samples or settings); got {mat.shape[0]}"
    pairable = (np.isfinite(mat).sum(axis=0) >= 2).sum()
    if pairable == 0:
        return math.nan, "no item has values in 2 or more rows"
    values = mat[np.isfinite(mat)]
    if np.all(values == values[0]):
        return math.nan, "every value is the same, so alpha is undefined (no variation to agree on)"
    try:
        with np.errstate(all="ignore"), warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return float(krippendorff.alpha(reliability_data=mat, level_of_measurement=level)), None
    except ValueError as exc:
        return math.nan, f"krippendorff could not compute alpha: {exc}"


def krippendorff_alpha(
    ratings: Sequence[Scores] | np.ndarray,
    level: str = "interval",
    *,
    ci: bool = False,
    n_boot: int = 1000,
    alpha: float = 0.05,
    seed: int = 0,
) -> Measure:
    """Krippendorff's alpha; rows are samples or settings, columns items.

    Missing cells (None/NaN) are counted in ``n_failed``; ``n`` is the number of items with 2 or
    more values. The bootstrap resamples items.
    """
    if level not in ("nominal", "ordinal", "interval", "ratio"):
        raise ConfigError(f"expected level in ['nominal', 'ordinal', 'interval', 'ratio']; got {level!r}")
    rows = [as_float_array(r, f"row {i}") for i, r in enumerate(ratings)]
    if not rows:
        raise DataError("expected at least one row of ratings; got none")
    if len({len(r) for r in rows}) > 1:
        raise DataError(
            f"expected every row to rate the same items; got row lengths {[len(r) for r in rows]}"
        )
    mat = np.vstack(rows)
    failed = int((~np.isfinite(mat)).sum())
    used = int((np.isfinite(mat).sum(axis=0) >= 2).sum())
    name = f"krippendorff_alpha_{level}"
    value, reason = _alpha(mat, level)
    if reason is not None:
        return undefined(name, used, failed, reason)

    def stat(cols: np.ndarray) -> float:
        return _alpha(cols.T, level)[0]

    interval = bootstrap_ci(stat, mat.T, n_boot=n_boot, alpha=alpha, seed=seed) if ci else None
    return finish(name, value, used, failed, interval=interval, extra={"n_rows": mat.shape[0]})


def alpha_across_samples(
    samples: Sequence[Scores] | np.ndarray,
    level: str = "interval",
    *,
    ci: bool = False,
    n_boot: int = 1000,
    alpha: float = 0.05,
    seed: int = 0,
) -> Measure:
    """Inter-sample agreement: Krippendorff's alpha across N samples of one judge (rows: samples, columns:
    items), all on its scale (settings on different scales: :func:`alpha_across_settings`)."""
    m = krippendorff_alpha(samples, level, ci=ci, n_boot=n_boot, alpha=alpha, seed=seed)
    return m.model_copy(update={"name": "alpha-across-samples"})


def bin_to_scale(
    values: Scores, source: Scale | tuple[float, float], target: Scale | tuple[float, float]
) -> np.ndarray:
    """Scores on ``source`` binned onto the coarser ``target`` scale, as Stureborg et al. 2024 bin wider
    scales to 1-5.

    The source's points are split, in order, into as many equal-width bins as the target has
    points (1-100 onto 1-5: 1-20 -> 1, ..., 81-100 -> 5). NaN and None stay NaN. A value outside
    ``source`` is a DataError; a ``target`` finer than ``source`` a ConfigError.
    """
    src, tgt = Scale.of(source), Scale.of(target)
    n_src, n_tgt = len(src.points()), len(tgt.points())
    if n_tgt > n_src:
        raise ConfigError(
            "expected a target scale no finer than the source to bin onto; got "
            f"{tgt.describe()} ({n_tgt} points) for scores on {src.describe()} "
            f"({n_src} points)"
        )
    x = as_float_array(values, "values")
    finite = np.isfinite(x)
    outside = finite & ((x < src.min - 1e-9) | (x > src.max + 1e-9))
    if outside.any():
        raise DataError(f"expected scores on {src.describe()} to bin; got {x[outside][0]:g}")
    position = (x - src.min) / src.step
    with np.errstate(invalid="ignore"):
        k = np.clip(np.floor(position * n_tgt / n_src + 1e-9), 0, n_tgt - 1)
    return np.where(finite, np.round(tgt.min + k * tgt.step, 6), np.nan)


def alpha_across_settings(
    settings: Mapping[str, Scores],
    level: str = "interval",
    *,
    scales: Mapping[str, Scale | tuple[float, float]] | None = None,
    ci: bool = False,
    n_boot: int = 1000,
    alpha: float = 0.05,
    seed: int = 0,
) -> Measure:
    """Agreement across settings (temperature, CoT, scale ...): Krippendorff's alpha, one row per setting.

    Settings on different scales are given in ``scales`` (setting -> its scale): every setting
    not on the coarsest one is binned onto it with :func:`bin_to_scale`, and ``extra["binned_to"]``
    names that scale. Without ``scales``, settings whose scores look to be on different scales
    (the smallest of 1-5, 1-10 and 1-100 holding them) are refused with a DataError.
    """
    names = list(settings)
    rows: list[Scores] = [settings[k] for k in names]
    binned_to: str | None = None
    described: dict[str, str] | None = None
    if scales is None:
        inferred = {k: _inferred_top(r) for k, r in zip(names, rows, strict=True)}
        if len({v for v in inferred.values() if v is not None}) > 1:
            seen = ", ".join(
                f"{k}: up to {_observed_max(r):g} (looks 1-{inferred[k]})"
                for k, r in zip(names, rows, strict=True)
                if inferred[k] is not None
            )
            raise DataError(
                "expected the settings on one scale, or scales={setting: scale} to bin them "
                f"onto the coarsest; got scores that look to be on different scales ({seen})"
            )
    else:
        missing = [k for k in names if k not in scales]
        if missing:
            raise DataError(f"expected a scale for every setting; missing {missing}")
        own = {k: Scale.of(scales[k]) for k in names}
        described = {k: s.describe() for k, s in own.items()}
        if len({(s.min, s.max, s.step) for s in own.values()}) > 1:
            common = min(own.values(), key=lambda s: len(s.points()))
            rows = [
                r if own[k] == common else bin_to_scale(r, own[k], common)
                for k, r in zip(names, rows, strict=True)
            ]
            binned_to = common.describe()
    m = krippendorff_alpha(rows, level, ci=ci, n_boot=n_boot, alpha=alpha, seed=seed)
    return m.model_copy(
        update={
            "name": "alpha_across_settings",
            "extra": {**m.extra, "settings": names, "scales": described, "binned_to": binned_to},
        }
    )


def _observed_max(scores: Scores) -> float:
    arr = np.asarray(scores, dtype=float)
    finite = arr[np.isfinite(arr)]
    return float(finite.max()) if finite.size else math.nan


def _inferred_top(scores: Scores) -> int | None:
    """The top of the smallest common scale (5, 10, 100) holding ``scores``; None when none does or none is
    scored."""
    top = _observed_max(scores)
    if not math.isfinite(top):
        return None
    return next((t for t in (5, 10, 100) if top <= t), None)


# reported per entry by compare


def sample_rows(judgments: Sequence[Judgment], criterion: str) -> np.ndarray:
    """Samples x items matrix of the judgments' repeated samples on ``criterion`` (NaN where absent)."""
    rows = max((len(j.samples.get(criterion, ())) for j in judgments), default=0)
    mat = np.full((rows, len(judgments)), np.nan)
    for c, j in enumerate(judgments):
        for r, v in enumerate(j.samples.get(criterion, ())):
            if v is not None:
                mat[r, c] = v
    return mat


@reported_measure(
    "alpha-across-samples", "α samples", "higher", "consistency", headline=True, paper="Stureborg et al. 2024"
)
def _alpha_across_samples(entry: EntryData) -> Measure:
    """Krippendorff's alpha across repeated samples of the judge (:func:`alpha_across_samples`).

    α samples compares samples of one judge on one scale; settings on different scales
    (alpha_across_settings) are binned to the coarsest scale first, as Stureborg et al. 2024 do
    """
    mat = sample_rows(entry.judgments, entry.criterion)
    if mat.shape[0] < 2:
        why = "every judgment holds at most 1 sample (set n > 1 to measure it)"
        return undefined("alpha-across-samples", 0, 0, why)
    return alpha_across_samples(list(mat), **entry.ci)
