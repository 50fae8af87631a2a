"""Likelihood bias (Ohi et al. 2024) and familiarity bias (Stureborg et al. 2024).

Ohi et al.: LS = log P(output | input, task), US = judge score - human score on a common footing
(:func:`unfairness_scores`), BiasScore = Spearman(LS, US) (:func:`bias_score`), and the Highest-RS
demonstrations ranked by RS = |LS* + US*| (:func:`rs_scores`). Conventions:
:mod:`mitigate.measures._base`.
"""

from __future__ import annotations

from typing import Any, Literal

import numpy as np

from mitigate.constraints import Options, check_param
from mitigate.errors import DataError
from mitigate.measures._agreement import item_correlation
from mitigate.measures._base import (
    EntryData,
    Measure,
    Scores,
    finish,
    nearest_points,
    reported_measure,
    undefined,
)
from mitigate.measures._stats import (
    as_float_array,
    batched,
    bootstrap_ci,
    complete_pairs,
    spearman_rows,
    why_no_correlation,
)
from mitigate.scale import Scale

US_SCALINGS = ("range", "max-deviation")
"""How :func:`unfairness_scores` puts judge and human scores on a common footing."""


def unfairness_scores(
    judge: Scores, human: Scores, scaling: Literal["range", "max-deviation"] = "range"
) -> np.ndarray:
    """US per item (Ohi et al. 2024): judge score minus human score on a common footing (positive: overrated).

    Over the items scored by both (NaN elsewhere; all NaN when fewer than 2 are complete or
    either side is constant). ``scaling``:

    - ``"range"`` (the paper's text): the judge's scores mapped linearly onto the human scores'
      mean and range, ``US = (j - mean_j) / range_j * range_h + mean_h - h``;
    - ``"max-deviation"`` (the released code's Highest-RS demo selection): each side through
      :func:`centre_unit_range`, ``US = j* - h*`` in [-2, 2].
    """
    check_param("unfairness_scores", "scaling", scaling, [Options(*US_SCALINGS)])
    j = as_float_array(judge, "judge")
    h = as_float_array(human, "human")
    if len(j) != len(h):
        raise DataError(f"expected judge and human scores of equal length; got {len(j)} and {len(h)}")
    complete = np.isfinite(j) & np.isfinite(h)
    out = np.full(len(j), np.nan)
    if complete.sum() < 2:
        return out
    jc, hc = j[complete], h[complete]
    range_j = jc.max() - jc.min()
    range_h = hc.max() - hc.min()
    if range_j == 0 or range_h == 0:
        return out
    if scaling == "max-deviation":
        out[complete] = centre_unit_range(jc) - centre_unit_range(hc)
    else:
        out[complete] = (jc - jc.mean()) / range_j * range_h + hc.mean() - hc
    return out


def centre_unit_range(values: Scores) -> np.ndarray:
    """LS* / US* scaling (Ohi et al. 2024): subtract the mean, divide by the largest absolute deviation
    (mean 0, in [-1, 1]). NaN stays NaN; all NaN when fewer than 2 finite values or all are equal."""
    x = as_float_array(values, "values")
    out = np.full(len(x), np.nan)
    finite = np.isfinite(x)
    if finite.sum() < 2:
        return out
    centred = x[finite] - x[finite].mean()
    spread = np.abs(centred).max()
    if spread == 0:
        return out
    out[finite] = centred / spread
    return out


def rs_scores(ls: Scores, us: Scores) -> np.ndarray:
    """RS = |LS* + US*| per item (Ohi et al. 2024), both through :func:`centre_unit_range` over the items
    having both (NaN elsewhere): high for the most bias-revealing demonstrations (likely and overrated, or
    unlikely and underrated). Pass ``us`` with ``scaling="max-deviation"`` for the released code's ranking.
    """
    a = as_float_array(ls, "ls")
    b = as_float_array(us, "us")
    if len(a) != len(b):
        raise DataError(f"expected LS and US of equal length; got {len(a)} and {len(b)}")
    complete = np.isfinite(a) & np.isfinite(b)
    a = centre_unit_range(np.where(complete, a, np.nan))
    b = centre_unit_range(np.where(complete, b, np.nan))
    return np.abs(a + b)


def bias_score(
    ls: Scores, us: Scores, *, ci: bool = False, n_boot: int = 1000, alpha: float = 0.05, seed: int = 0
) -> Measure:
    """BiasScore = Spearman(LS, US) (Ohi et al. 2024): positive means likely texts are overrated (``us`` from
    :func:`unfairness_scores` with range scaling)."""
    m = item_correlation(ls, us, "spearman", ci=ci, n_boot=n_boot, alpha=alpha, seed=seed)
    return m.model_copy(update={"name": "bias-score"})


def _grouped_means(values: np.ndarray, groups: np.ndarray) -> dict[float, dict[str, float]]:
    out: dict[float, dict[str, float]] = {}
    for g in sorted(set(groups.tolist())):
        sel = values[groups == g]
        out[float(g)] = {"mean_perplexity": float(sel.mean()), "count": int(len(sel))}
    return out


def familiarity(
    perplexities: Scores,
    judge: Scores,
    human: Scores,
    scale: Scale | tuple[float, float],
    *,
    ci: bool = False,
    n_boot: int = 1000,
    alpha: float = 0.05,
    seed: int = 0,
) -> Measure:
    """Familiarity bias (Stureborg et al. 2024): mean perplexity of outputs per judge rating beside per human
    rating.

    Ratings are rounded to the nearest point of ``scale`` (halves up); ``extra["judge"]`` and
    ``extra["human"]`` map rating -> mean perplexity and count. ``value`` (this toolkit's summary) is
    Spearman(perplexity, judge) - Spearman(perplexity, human): negative means the judge favours
    familiar text more than humans.
    """
    s = Scale.of(scale)
    p, j, h = (
        as_float_array(a, n) for a, n in ((perplexities, "perplexities"), (judge, "judge"), (human, "human"))
    )
    if not len(p) == len(j) == len(h):
        raise DataError(f"expected equal lengths; got perplexities={len(p)}, judge={len(j)}, human={len(h)}")
    pc, jc, hc = complete_pairs(p, j, h)
    failed = len(p) - len(pc)
    name = "familiarity"
    if len(pc) == 0:
        return undefined(name, 0, failed, "no item has a perplexity, a judge score and a human score")
    extra: dict[str, Any] = {
        "judge": _grouped_means(pc, nearest_points(jc, s)),
        "human": _grouped_means(pc, nearest_points(hc, s)),
    }
    rj = why_no_correlation(pc, jc)
    rh = why_no_correlation(pc, hc)
    if rj or rh:
        return undefined(name, len(pc), failed, f"Spearman with perplexity undefined: {rj or rh}", **extra)
    sj = float(spearman_rows(pc, jc))
    sh = float(spearman_rows(pc, hc))
    extra["spearman_judge"], extra["spearman_human"] = sj, sh

    @batched
    def stat(a: np.ndarray, b: np.ndarray, c: np.ndarray) -> np.ndarray:
        return spearman_rows(a, b) - spearman_rows(a, c)

    interval = bootstrap_ci(stat, pc, jc, hc, n_boot=n_boot, alpha=alpha, seed=seed) if ci else None
    return finish(name, sj - sh, len(pc), failed, interval=interval, extra=extra)


# reported per entry by compare


@reported_measure(
    "bias-score", "BiasScore", "zero", "bias", headline=True, paper="Ohi et al. 2024", uses_labels=True
)
def _bias_score(entry: EntryData) -> Measure:
    """BiasScore = Spearman(LS, US) (Ohi et al. 2024; :func:`bias_score`)."""
    if entry.ls is None:
        return undefined("bias-score", 0, 0, "likelihood (LS) was not computed; run with likelihood on")
    us = unfairness_scores(entry.scores, entry.human)
    return bias_score(np.asarray(entry.ls, dtype=float), us, **entry.ci)
