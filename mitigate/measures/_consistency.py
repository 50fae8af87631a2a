"""Consistency under guideline perturbation (Ghazarian et al. 2024): share, chance level, kappa, accuracy.

Ghazarian et al. score each item under several perturbed prompts and report the share of items
whose answer does not change, and accuracy per prompt. Outputs are compared with
:func:`~mitigate.measures._base.labels_equal`. Conventions: :mod:`mitigate.measures._base`.
"""

from __future__ import annotations

import math
import warnings
from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from mitigate.errors import ConfigError
from mitigate.judge import Judgment
from mitigate.measures._base import (
    EntryData,
    Measure,
    finish,
    is_missing,
    label_key,
    labels_equal,
    mean_interval,
    reported_measure,
    share,
    undefined,
)
from mitigate.measures._stats import batched, bootstrap_ci


def _perturbation_frame(
    outputs: Mapping[str, Mapping[str, Any]],
) -> tuple[list[str], list[str], list[list[Any]]]:
    if len(outputs) < 2:
        raise ConfigError(f"consistency needs outputs under at least 2 prompts; got {len(outputs)}")
    names = list(outputs)
    ids = list(dict.fromkeys(i for per in outputs.values() for i in per))
    table = [[outputs[p].get(i) for p in names] for i in ids]
    return names, ids, table


def perturbation_consistency(
    outputs: Mapping[str, Mapping[str, Any]],
    *,
    ci: bool = False,
    n_boot: int = 1000,
    alpha: float = 0.05,
    seed: int = 0,
) -> Measure:
    """Consistency (Ghazarian et al. 2024): share of items whose output is identical under every prompt.

    ``outputs`` maps perturbation name -> item id -> score or label. An item without an output
    under some perturbation is counted in ``n_failed`` (inconsistent in ``of_all``).
    ``extra["percent"]`` gives the paper's percentage. A judge that gives one answer to everything
    is perfectly consistent, so ``extra`` also holds the ``chance`` level and ``kappa``
    (:func:`consistency_kappa`).
    """
    names, ids, table = _perturbation_frame(outputs)
    complete = [row for row in table if not any(is_missing(v) for v in row)]
    same = [float(all(labels_equal(row[0], v) for v in row[1:])) for row in complete]
    failed = len(ids) - len(same)
    name = "perturbation-consistency"
    if not same:
        return undefined(
            name, 0, failed, "no item has an output under every perturbation", perturbations=names
        )
    arr = np.array(same)
    interval = mean_interval(arr, ci, n_boot, alpha, seed)
    value, chance, kappa = consistency_kappa(complete)
    extra = {"percent": 100 * value, "perturbations": names, "chance": chance, "kappa": kappa}
    return share(name, arr, failed, interval=interval, extra=extra)


def consistency_kappa(rows: Sequence[Sequence[Any]]) -> tuple[float, float, float]:
    """(share of rows identical across prompts, chance level, kappa) for complete rows of outputs (one row per
    item, one column per prompt). Kappa = (share − chance) / (1 − chance), NaN when chance is 1."""
    if not rows:
        return math.nan, math.nan, math.nan
    same = float(np.mean([all(labels_equal(r[0], v) for v in r[1:]) for r in rows]))
    chance = chance_consistency(rows)
    kappa = (same - chance) / (1.0 - chance) if chance < 1.0 - 1e-12 else math.nan
    return same, chance, kappa


def chance_consistency(rows: Sequence[Sequence[Any]]) -> float:
    """The consistency expected by chance: per answer, the product over prompts of that prompt's share of it,
    summed (answers binned by :func:`~mitigate.measures._base.label_key`); NaN for no rows."""
    if not rows:
        return math.nan
    shares: list[dict[Any, float]] = []
    for c in range(len(rows[0])):
        counts = Counter(label_key(row[c]) for row in rows)
        shares.append({k: v / len(rows) for k, v in counts.items()})
    return float(sum(math.prod(col.get(key, 0.0) for col in shares) for key in shares[0]))


def accuracy_under_perturbation(
    outputs: Mapping[str, Mapping[str, Any]],
    gold: Mapping[str, Any],
    *,
    ci: bool = False,
    n_boot: int = 1000,
    alpha: float = 0.05,
    seed: int = 0,
) -> Measure:
    """Accuracy per perturbation, averaged over perturbations (Ghazarian et al. 2024).

    ``outputs`` maps perturbation -> item id -> output; ``gold`` maps item id -> gold label.
    ``extra["per_perturbation"]`` lists each one's accuracy; ``n``/``n_failed`` count judgments.
    """
    names, ids, table = _perturbation_frame(outputs)
    mat = np.full((len(ids), len(names)), np.nan)
    for r, (item_id, row) in enumerate(zip(ids, table, strict=True)):
        g = gold.get(item_id)
        if is_missing(g):
            continue
        for c, v in enumerate(row):
            if not is_missing(v):
                mat[r, c] = float(labels_equal(v, g))
    per = {}
    for c, p in enumerate(names):
        col = mat[:, c]
        k = int(np.isfinite(col).sum())
        per[p] = {"accuracy": float(np.nanmean(col)) if k else math.nan, "n": k}
    used = int(np.isfinite(mat).sum())
    failed = mat.size - used
    name = "accuracy_under_perturbation"
    if any(v["n"] == 0 for v in per.values()):
        why = "a perturbation has no item with both an output and a gold label"
        return undefined(name, used, failed, why, per_perturbation=per)
    value = float(np.mean([v["accuracy"] for v in per.values()]))

    @batched
    def stat(m: np.ndarray) -> np.ndarray:
        with np.errstate(all="ignore"), warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return np.nanmean(m, axis=1).mean(axis=-1)

    interval = bootstrap_ci(stat, mat, n_boot=n_boot, alpha=alpha, seed=seed) if ci else None
    return finish(name, value, used, failed, interval=interval, extra={"per_perturbation": per})


# reported per entry by compare


def perturbation_outputs(judgments: Sequence[Judgment]) -> dict[str, dict[str, Any]]:
    """Perturbation name -> item id -> score, read from each judgment's ``meta["perturbations"]``."""
    outputs: dict[str, dict[str, Any]] = {}
    for j in judgments:
        per = j.meta.get("perturbations")
        if isinstance(per, Mapping):
            for name, score in per.items():
                outputs.setdefault(str(name), {})[j.item_id] = score
    return outputs


@reported_measure(
    "perturbation-consistency",
    "consistency",
    "higher",
    "consistency",
    headline=True,
    paper="Ghazarian et al. 2024",
)
def _perturbation_consistency(entry: EntryData) -> Measure:
    """Share of items scored alike under every perturbed guideline (:func:`perturbation_consistency`).

    consistency is of scored items; the details give it of all items too, an item without a score under
    some perturbation counted as inconsistent, and the chance level and kappa
    """
    outputs = perturbation_outputs(entry.judgments)
    if len(outputs) < 2:
        why = "no judgment carries scores under 2 or more perturbations in meta['perturbations']"
        return undefined("perturbation-consistency", 0, 0, why)
    return perturbation_consistency(outputs, **entry.ci)
