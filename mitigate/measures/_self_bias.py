"""Self-bias: self-preference and length preference (Liu et al. 2024), source sensitivity (Stureborg et al.
2024). Conventions: :mod:`mitigate.measures._base`.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Hashable, Sequence
from typing import Any

import numpy as np

from mitigate.errors import ConfigError, DataError
from mitigate.measures._agreement import item_correlation
from mitigate.measures._base import (
    EntryData,
    Measure,
    Scores,
    check_labels,
    finish,
    mean_interval,
    reported_measure,
    undefined,
    word_count,
)
from mitigate.measures._stats import as_float_array, bootstrap_ci, complete_pairs


def _row_minmax(matrix: np.ndarray) -> np.ndarray:
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        low = np.nanmin(matrix, axis=1, keepdims=True)
        high = np.nanmax(matrix, axis=1, keepdims=True)
        return np.where(high > low, (matrix - low) / (high - low), np.nan)


def _self_bias(norm: np.ndarray, evaluators: list[Hashable], generators: list[Hashable]) -> dict[str, float]:
    out: dict[str, float] = {}
    for e_i, e in enumerate(evaluators):
        if e not in generators:
            continue
        g_i = generators.index(e)
        others = [norm[e_i, k] for k in range(len(generators)) if k != g_i and math.isfinite(norm[e_i, k])]
        if math.isfinite(norm[e_i, g_i]) and others:
            out[str(e)] = float(norm[e_i, g_i] - np.mean(others))
    return out


def self_preference(
    scores: Scores,
    evaluators: Sequence[Hashable | None],
    generators: Sequence[Hashable | None],
    *,
    texts: Sequence[Hashable | None] | None = None,
    ci: bool = False,
    n_boot: int = 1000,
    alpha: float = 0.05,
    seed: int = 0,
) -> Measure:
    """Self-preference (Liu et al. 2024): the evaluator x generator matrix of mean scores, min-max normalised
    per row.

    Inputs are parallel lists: each judgment's score, its evaluator and the generator of the
    judged text. ``extra`` holds the mean score ``matrix`` and its ``normalised`` rows; ``value``
    is the mean over evaluators that are also generators of (normalised score of its own outputs
    - mean normalised score of the others): positive = the evaluator favours itself.

    ``texts`` names the judged text of each judgment: the bootstrap resamples texts, keeping the
    evaluators' rows paired, so a bootstrap over more than one evaluator needs it (ConfigError).
    """
    x = as_float_array(scores, "scores")
    ev = check_labels(evaluators, len(x), "evaluator")
    gen = check_labels(generators, len(x), "generator")
    ok = np.isfinite(x)
    failed = int((~ok).sum())
    ev_names = list(dict.fromkeys(ev))
    gen_names = list(dict.fromkeys(gen))
    e_idx = np.array([ev_names.index(e) for e in ev])
    g_idx = np.array([gen_names.index(g) for g in gen])

    def matrix(sel: np.ndarray) -> np.ndarray:
        sums = np.zeros((len(ev_names), len(gen_names)))
        counts = np.zeros_like(sums)
        keep = sel[ok[sel]]
        np.add.at(sums, (e_idx[keep], g_idx[keep]), x[keep])
        np.add.at(counts, (e_idx[keep], g_idx[keep]), 1)
        with np.errstate(all="ignore"):
            return np.where(counts > 0, sums / counts, np.nan)

    raw = matrix(np.arange(len(x)))
    norm = _row_minmax(raw)
    per = _self_bias(norm, ev_names, gen_names)
    extra = {
        "evaluators": [str(e) for e in ev_names],
        "generators": [str(g) for g in gen_names],
        "matrix": raw.tolist(),
        "normalised": norm.tolist(),
        "self_bias": per,
    }
    name = "self_preference"
    used = int(ok.sum())
    if not per:
        why = "no evaluator is also a generator with a defined normalised row and other generators"
        return undefined(name, used, failed, why, **extra)

    interval = None
    if ci:
        if texts is None and len(ev_names) > 1:
            raise ConfigError(
                f"expected texts= (the id of the judged text, one per judgment) to bootstrap self-preference "
                f"over {len(ev_names)} evaluators: the bootstrap resamples texts, keeping each text's "
                f"judgments by every evaluator together; got texts=None"
            )
        text_ids = check_labels(texts, len(x), "text id") if texts is not None else list(range(len(x)))
        groups: dict[Hashable, list[int]] = {}
        for i, t in enumerate(text_ids):
            groups.setdefault(t, []).append(i)
        members = [np.array(v) for v in groups.values()]

        def stat(drawn: np.ndarray) -> float:
            idx = np.concatenate([members[t] for t in drawn.astype(int)])
            b = _self_bias(_row_minmax(matrix(idx)), ev_names, gen_names)
            return float(np.mean(list(b.values()))) if b else math.nan

        interval = bootstrap_ci(stat, np.arange(len(members)), n_boot=n_boot, alpha=alpha, seed=seed)
        extra["n_texts"] = len(members)
    return finish(name, float(np.mean(list(per.values()))), used, failed, interval=interval, extra=extra)


def length_correlation(
    scores: Scores,
    lengths: Sequence[int | float | str | None] | np.ndarray,
    *,
    ci: bool = False,
    n_boot: int = 1000,
    alpha: float = 0.05,
    seed: int = 0,
) -> Measure:
    """Length preference (Liu et al. 2024): Spearman(score, output length in words); ``lengths`` are word
    counts or the texts themselves."""
    values = [word_count(v) if isinstance(v, str) else v for v in lengths]
    m = item_correlation(scores, values, "spearman", ci=ci, n_boot=n_boot, alpha=alpha, seed=seed)
    return m.model_copy(update={"name": "length-spearman"})


def source_sensitivity(
    with_source: Scores,
    without_source: Scores,
    human: Scores | None = None,
    method: str = "kendall",
    *,
    ci: bool = False,
    n_boot: int = 1000,
    alpha: float = 0.05,
    seed: int = 0,
) -> Measure:
    """How much the same judge's scores move when the source document is removed from the prompt.

    ``value`` is the mean absolute change over items scored both ways; ``extra`` has the share
    of items changed, the paired Wilcoxon p-value and, with ``human``, each variant's correlation
    with humans (``method``).
    """
    a = as_float_array(with_source, "with_source")
    b = as_float_array(without_source, "without_source")
    if len(a) != len(b):
        raise DataError(f"expected scores with and without source of equal length; got {len(a)} and {len(b)}")
    x, y = complete_pairs(a, b)
    failed = len(a) - len(x)
    name = "source_sensitivity"
    if len(x) == 0:
        return undefined(name, 0, failed, "no item was scored both with and without the source")
    diff = x - y
    changed = np.abs(diff) > 1e-9
    extra: dict[str, Any] = {"share_changed": float(changed.mean()), "mean_change": float(diff.mean())}
    if changed.any():
        from scipy.stats import wilcoxon  # imported here: scipy costs about a second to import

        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            extra["wilcoxon_p"] = float(wilcoxon(x, y).pvalue)
    else:
        extra["wilcoxon_p"] = math.nan
        extra["wilcoxon_reason"] = "every difference is 0"
    if human is not None:
        extra[f"{method}_with_source"] = item_correlation(a, human, method).value
        extra[f"{method}_without_source"] = item_correlation(b, human, method).value
    absdiff = np.abs(diff)
    interval = mean_interval(absdiff, ci, n_boot, alpha, seed)
    return finish(name, float(absdiff.mean()), len(x), failed, interval=interval, extra=extra)


# reported per entry by compare


@reported_measure(
    "length-spearman", "length ρ", "zero", "bias", headline=True, paper="Liu et al. 2024", on_humans=True
)
def _length_spearman(entry: EntryData) -> Measure:
    """Spearman(score, output length in words) (Liu et al. 2024; :func:`length_correlation`)."""
    return length_correlation(entry.scores, [i.output for i in entry.items], **entry.ci)
