"""Agreement with humans: correlations at item, document and system level, P_i and M (Shen et al. 2023), #CP,
accuracy. Conventions: :mod:`mitigate.measures._base`."""

from __future__ import annotations

import itertools
import math
import warnings
from collections.abc import Hashable, Sequence
from typing import Any

import numpy as np

from mitigate.errors import DataError
from mitigate.measures._base import (
    EntryData,
    Labels,
    Measure,
    Scores,
    batched_nanmean,
    check_labels,
    finish,
    is_missing,
    labels_equal,
    mean_interval,
    reported_measure,
    undefined,
)
from mitigate.measures._stats import (
    as_float_array,
    bootstrap_ci,
    complete_pairs,
    correlation_function,
    kendall_columns,
    why_no_correlation,
)


def _pivot(
    row_labels: Sequence[Hashable], col_labels: Sequence[Hashable], *columns: np.ndarray
) -> tuple[list[Hashable], list[Hashable], list[np.ndarray]]:
    """Arrange per-item values into row x column matrices (NaN where no item sits)."""
    rows = list(dict.fromkeys(row_labels))
    cols = list(dict.fromkeys(col_labels))
    r_index = {r: i for i, r in enumerate(rows)}
    c_index = {c: j for j, c in enumerate(cols)}
    mats = [np.full((len(rows), len(cols)), np.nan) for _ in columns]
    seen: set[tuple[int, int]] = set()
    for k, (r, c) in enumerate(zip(row_labels, col_labels, strict=True)):
        key = (r_index[r], c_index[c])
        if key in seen:
            raise DataError(
                f"expected one item per (document, system); got two for document {r!r}, system {c!r}"
            )
        seen.add(key)
        for mat, col in zip(mats, columns, strict=True):
            mat[key] = col[k]
    return rows, cols, mats


def _item_rows(doc_ids: Sequence[Hashable | None] | None, columns: Sequence[Hashable]) -> list[Hashable]:
    """Row label of each item in a document x system matrix: its document, or without document ids its rank
    within its system (so resampling rows keeps every system's item count)."""
    if doc_ids is not None:
        return check_labels(doc_ids, len(columns), "document id")
    seen: dict[Hashable, int] = {}
    rows: list[Hashable] = []
    for c in columns:
        rows.append(seen.get(c, 0))
        seen[c] = seen.get(c, 0) + 1
    return rows


def item_correlation(
    judge: Scores,
    human: Scores,
    method: str = "kendall",
    *,
    ci: bool = False,
    n_boot: int = 1000,
    alpha: float = 0.05,
    seed: int = 0,
) -> Measure:
    """Pooled item-level correlation: one correlation over all items (Shen et al. 2023, section 4.2.2).

    ``method`` is ``"kendall"`` (tau-b), ``"spearman"`` or ``"pearson"``. Missing pairs are
    dropped; fewer than 3 pairs or a constant side gives NaN.
    """
    fn = correlation_function(method)
    j = as_float_array(judge, "judge")
    h = as_float_array(human, "human")
    x, y = complete_pairs(j, h)
    failed = len(j) - len(x)
    name = f"{method}-item"
    reason = why_no_correlation(x, y)
    if reason is not None:
        return undefined(name, len(x), failed, reason)
    interval = bootstrap_ci(method, x, y, n_boot=n_boot, alpha=alpha, seed=seed) if ci else None
    return finish(name, fn(x, y), len(x), failed, interval=interval)


def document_correlation(
    judge: Scores,
    human: Scores,
    doc_ids: Sequence[Hashable | None],
    method: str = "kendall",
    *,
    ci: bool = False,
    n_boot: int = 1000,
    alpha: float = 0.05,
    seed: int = 0,
) -> Measure:
    """Per-document ("summary-level") correlation: the mean over documents of the judge-human correlation
    across each document's outputs. Shen et al. 2023 do not report it: they pool the 1,200 summaries.

    Documents whose correlation is undefined are left out of the mean and counted in
    ``extra["n_documents_undefined"]``. The bootstrap resamples documents.
    """
    fn = correlation_function(method)
    j = as_float_array(judge, "judge")
    h = as_float_array(human, "human")
    docs = check_labels(doc_ids, len(j), "document id")
    if len(j) != len(h):
        raise DataError(f"expected judge and human scores of equal length; got {len(j)} and {len(h)}")
    complete = np.isfinite(j) & np.isfinite(h)
    failed = int((~complete).sum())
    groups: dict[Hashable, list[int]] = {}
    for i, d in enumerate(docs):
        groups.setdefault(d, []).append(i)
    per_doc: list[float] = []
    used = 0
    n_undefined = 0
    for idx in groups.values():
        r = fn(j[idx], h[idx])
        if math.isfinite(r):
            per_doc.append(r)
            used += int(complete[idx].sum())
        else:
            n_undefined += 1
    name = f"{method}-document"
    extra = {"n_documents": len(per_doc), "n_documents_undefined": n_undefined}
    if not per_doc:
        return undefined(
            name, 0, failed, f"no document has a defined correlation ({n_undefined} undefined)", **extra
        )
    values = np.array(per_doc)
    interval = bootstrap_ci(batched_nanmean, values, n_boot=n_boot, alpha=alpha, seed=seed) if ci else None
    return finish(name, float(values.mean()), used, failed, interval=interval, extra=extra)


def _system_means(jm: np.ndarray, hm: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return np.nanmean(jm, axis=0), np.nanmean(hm, axis=0)


def _complete_matrices(
    judge: Scores,
    human: Scores,
    systems: Sequence[Hashable | None],
    doc_ids: Sequence[Hashable | None] | None,
) -> tuple[list[Hashable], list[Hashable], np.ndarray, np.ndarray, int, int]:
    j = as_float_array(judge, "judge")
    h = as_float_array(human, "human")
    if len(j) != len(h):
        raise DataError(f"expected judge and human scores of equal length; got {len(j)} and {len(h)}")
    syst = check_labels(systems, len(j), "system")
    rows_of = _item_rows(doc_ids, syst)
    complete = np.isfinite(j) & np.isfinite(h)
    j = np.where(complete, j, np.nan)
    h = np.where(complete, h, np.nan)
    rows, cols, (jm, hm) = _pivot(rows_of, syst, j, h)
    return rows, cols, jm, hm, int(complete.sum()), int((~complete).sum())


def system_correlation(
    judge: Scores,
    human: Scores,
    systems: Sequence[Hashable | None],
    method: str = "kendall",
    *,
    doc_ids: Sequence[Hashable | None] | None = None,
    ci: bool = False,
    n_boot: int = 1000,
    alpha: float = 0.05,
    seed: int = 0,
) -> Measure:
    """System-level correlation: between the judge's and the humans' mean score per system.

    Means are over items scored by both. ``extra["systems"]`` holds each system's two means.
    With ``doc_ids`` the bootstrap resamples documents; without, each system's items.
    """
    fn = correlation_function(method)
    _, cols, jm, hm, used, failed = _complete_matrices(judge, human, systems, doc_ids)
    qj, qh = _system_means(jm, hm)
    means = {str(c): {"judge": float(a), "human": float(b)} for c, a, b in zip(cols, qj, qh, strict=True)}
    extra = {"systems": means}
    name = f"{method}-system"
    x, y = complete_pairs(qj, qh)
    reason = why_no_correlation(x, y)
    if reason is not None:
        return undefined(name, used, failed, f"over systems: {reason}", **extra)

    def stat(a: np.ndarray, b: np.ndarray) -> float:
        ma, mb = _system_means(a, b)
        return fn(ma, mb)

    interval = bootstrap_ci(stat, jm, hm, n_boot=n_boot, alpha=alpha, seed=seed) if ci else None
    return finish(name, fn(x, y), used, failed, interval=interval, extra=extra)


def per_system_correlation(
    judge: Scores,
    human: Scores,
    systems: Sequence[Hashable | None],
    method: str = "kendall",
    *,
    ci: bool = False,
    n_boot: int = 1000,
    alpha: float = 0.05,
    seed: int = 0,
) -> dict[str, Measure]:
    """P_i (Shen et al. 2023): system -> the judge-human correlation over its items (a :class:`Measure`)."""
    j = as_float_array(judge, "judge")
    h = as_float_array(human, "human")
    syst = check_labels(systems, len(j), "system")
    if len(j) != len(h):
        raise DataError(f"expected judge and human scores of equal length; got {len(j)} and {len(h)}")
    out: dict[str, Measure] = {}
    for s in dict.fromkeys(syst):
        idx = [i for i, t in enumerate(syst) if t == s]
        m = item_correlation(j[idx], h[idx], method, ci=ci, n_boot=n_boot, alpha=alpha, seed=seed)
        out[str(s)] = m.model_copy(update={"name": f"{method}_system_{s}"})
    return out


def meta_correlation(
    judge: Scores,
    human: Scores,
    systems: Sequence[Hashable | None],
    method: str = "kendall",
    meta_method: str | None = None,
    *,
    doc_ids: Sequence[Hashable | None] | None = None,
    ci: bool = False,
    n_boot: int = 1000,
    alpha: float = 0.05,
    seed: int = 0,
) -> Measure:
    """Meta-correlation M = corr(Q_i, P_i) over systems (Shen et al. 2023).

    Q_i is system i's mean human score and P_i the judge-human correlation over its items
    (``method``); ``meta_method`` (default: ``method``) correlates the two across systems. A
    negative M means the judge agrees with humans less on better systems. Systems with undefined
    P_i are left out.
    """
    fn = correlation_function(method)
    meta_fn = correlation_function(meta_method or method)
    _, cols, jm, hm, used, failed = _complete_matrices(judge, human, systems, doc_ids)

    def parts(a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        _, q = _system_means(a, b)
        if method == "kendall" and a.shape[0] <= 400:  # short columns: batched sign matrices
            return q, kendall_columns(a, b)
        return q, np.array([fn(a[:, k], b[:, k]) for k in range(a.shape[1])])

    q, p = parts(jm, hm)
    extra = {
        "systems": {str(c): {"quality": float(a), "P": float(b)} for c, a, b in zip(cols, q, p, strict=True)}
    }
    name = f"meta_{meta_method or method}"
    x, y = complete_pairs(q, p)
    reason = why_no_correlation(x, y)
    if reason is not None:
        return undefined(name, used, failed, f"over systems with a defined P_i: {reason}", **extra)

    def stat(a: np.ndarray, b: np.ndarray) -> float:
        return meta_fn(*parts(a, b))

    interval = bootstrap_ci(stat, jm, hm, n_boot=n_boot, alpha=alpha, seed=seed) if ci else None
    return finish(name, meta_fn(x, y), used, failed, interval=interval, extra=extra)


def accuracy(
    predicted: Labels,
    gold: Labels,
    *,
    ci: bool = False,
    n_boot: int = 1000,
    alpha: float = 0.05,
    seed: int = 0,
) -> Measure:
    """Share of items whose predicted label equals the gold label (by :func:`labels_equal`).

    Items without a gold label are left out; those without a prediction are counted in
    ``n_failed``, and as wrong in ``of_all``.
    """
    pred = list(predicted)
    gold_l = list(gold)
    if len(pred) != len(gold_l):
        raise DataError(
            f"expected predicted and gold labels of equal length; got {len(pred)} and {len(gold_l)}"
        )
    scored = [(p, g) for p, g in zip(pred, gold_l, strict=True) if not is_missing(p) and not is_missing(g)]
    hits = np.array([float(labels_equal(p, g)) for p, g in scored])
    failed = len(pred) - len(hits)
    unscorable = sum(1 for p, g in zip(pred, gold_l, strict=True) if is_missing(p) and not is_missing(g))
    if len(hits) == 0:
        return undefined("accuracy", 0, failed, "no item has both a prediction and a gold label")
    interval = mean_interval(hits, ci, n_boot, alpha, seed)
    count = int(hits.sum())
    of_all = count / (len(hits) + unscorable)
    return finish(
        "accuracy", float(hits.mean()), len(hits), failed, interval=interval, count=count, of_all=of_all
    )


def _preference_points(m: np.ndarray, valid: np.ndarray) -> np.ndarray:
    """points[a, b]: documents where a's output beats b's (1) or ties (0.5), over valid documents."""
    diff = m[:, :, None] - m[:, None, :]
    with np.errstate(invalid="ignore"):
        win = np.where(diff > 1e-9, 1.0, np.where(np.abs(diff) <= 1e-9, 0.5, 0.0))
    return np.where(valid, win, 0.0).sum(axis=0)


def _cp_table(jm: np.ndarray, hm: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    ok = np.isfinite(jm) & np.isfinite(hm)
    valid = ok[:, :, None] & ok[:, None, :]
    return _preference_points(jm, valid), _preference_points(hm, valid), valid.sum(axis=0), ok


def correct_preferences(
    judge: Scores,
    human: Scores,
    systems: Sequence[Hashable | None],
    doc_ids: Sequence[Hashable | None],
    *,
    ci: bool = False,
    n_boot: int = 1000,
    alpha: float = 0.05,
    seed: int = 0,
) -> Measure:
    """#CP, correct preferences over system pairs (Shen et al. 2023).

    For each pair of systems and each document where both outputs have judge and human scores,
    the higher-scored output gets 1 point (0.5 each on a tie), separately for judge and humans,
    summed over documents; the pair is correct when both totals prefer the same system (or both
    tie). ``value`` is the number of correct pairs; ``extra`` holds ``n_pairs`` (comparable pairs),
    ``share`` and the per-pair table ``pairs``. The bootstrap resamples documents.
    """
    _, cols, jm, hm, used, failed = _complete_matrices(judge, human, systems, doc_ids)
    name = "correct-preferences"
    if len(cols) < 2:
        return undefined(name, used, failed, f"needs at least 2 systems; got {len(cols)}")

    def count(a: np.ndarray, b: np.ndarray) -> tuple[int, int, list[dict[str, Any]]]:
        pj, ph, ndocs, _ = _cp_table(a, b)
        correct = 0
        comparable = 0
        rows: list[dict[str, Any]] = []
        for s, t in itertools.combinations(range(len(cols)), 2):
            row = {"a": str(cols[s]), "b": str(cols[t]), "n_documents": int(ndocs[s, t])}
            if ndocs[s, t] == 0:
                rows.append({**row, "correct": None})
                continue
            jd = np.sign(round(pj[s, t] - pj[t, s], 6))
            hd = np.sign(round(ph[s, t] - ph[t, s], 6))
            comparable += 1
            correct += int(jd == hd)
            points = {"judge_a": pj[s, t], "judge_b": pj[t, s], "human_a": ph[s, t], "human_b": ph[t, s]}
            rows.append({**row, **{k: float(v) for k, v in points.items()}, "correct": bool(jd == hd)})
        return correct, comparable, rows

    correct, comparable, table = count(jm, hm)
    if comparable == 0:
        why = "no pair of systems shares a document scored by judge and humans"
        return undefined(name, used, failed, why, pairs=table)
    extra = {"n_pairs": comparable, "share": correct / comparable, "pairs": table}

    def stat(a: np.ndarray, b: np.ndarray) -> float:
        c, k, _ = count(a, b)
        return float(c) if k == comparable else math.nan

    interval = bootstrap_ci(stat, jm, hm, n_boot=n_boot, alpha=alpha, seed=seed) if ci else None
    return finish(name, float(correct), used, failed, interval=interval, extra=extra)


# reported per entry by compare


def _correlation(entry: EntryData, level: str, method: str) -> Measure:
    """The correlation at ``level``; NaN when the items lack the documents or systems it needs."""
    if level == "item":
        return item_correlation(entry.scores, entry.human, method, **entry.ci)
    if level == "document":
        if not entry.has_docs:
            return undefined(f"{method}-document", 0, 0, "items carry no doc_id")
        return document_correlation(entry.scores, entry.human, entry.docs, method, **entry.ci)
    if not entry.has_systems:
        return undefined(f"{method}-system", 0, 0, "items carry no system label")
    docs = entry.docs if entry.has_docs else None
    return system_correlation(entry.scores, entry.human, entry.systems, method, doc_ids=docs, **entry.ci)


def _reported_correlation(method: str, level: str, label: str, headline: bool, doc: str) -> None:
    """Register the correlation ``method`` at ``level`` as the reported measure ``{method}-{level}``."""

    def fn(entry: EntryData) -> Measure:
        return _correlation(entry, level, method)

    fn.__name__, fn.__doc__ = f"_{method}_{level}", doc
    reported_measure(f"{method}-{level}", label, "higher", "accuracy", headline=headline)(fn)


_PAIRS = "between judge and human scores, pooled over every item"
_DOCS = "across each document's outputs, averaged over documents"
_SYSTEMS = "between the systems' mean judge and human scores"
for _args in (
    ("spearman", "item", "Spearman item", True, f"Spearman {_PAIRS} (:func:`item_correlation`)."),
    ("kendall", "item", "Kendall item", True, f"Kendall tau-b {_PAIRS}."),
    ("pearson", "item", "Pearson item", False, f"Pearson {_PAIRS}."),
    ("spearman", "document", "Spearman per-doc", True, f"Spearman {_DOCS} (:func:`document_correlation`)."),
    ("kendall", "document", "Kendall per-doc", False, f"Kendall tau-b {_DOCS}."),
    ("pearson", "document", "Pearson per-doc", False, f"Pearson {_DOCS}."),
    ("spearman", "system", "Spearman system", False, f"Spearman {_SYSTEMS} (:func:`system_correlation`)."),
    ("kendall", "system", "Kendall system", True, f"Kendall tau-b {_SYSTEMS}."),
    ("pearson", "system", "Pearson system", False, f"Pearson {_SYSTEMS}."),
):
    _reported_correlation(*_args)


@reported_measure("correct-preferences", "#CP", "higher", "accuracy", headline=True, paper="Shen et al. 2023")
def _correct_preferences(entry: EntryData) -> Measure:
    """#CP: system pairs the judge orders as the humans do (Shen et al. 2023; :func:`correct_preferences`)."""
    if not (entry.has_systems and entry.has_docs):
        return undefined("correct-preferences", 0, 0, "#CP needs items with both system and doc_id")
    return correct_preferences(entry.scores, entry.human, entry.systems, entry.docs, **entry.ci)


@reported_measure(
    "meta-spearman", "meta M", "zero", "bias", headline=True, paper="Shen et al. 2023", uses_labels=True
)
def _meta_spearman(entry: EntryData) -> Measure:
    """Meta-correlation M = Spearman(Q_i, P_i) over systems (Shen et al. 2023; :func:`meta_correlation`)."""
    if not entry.has_systems:
        return undefined("meta-spearman", 0, 0, "items carry no system label")
    docs = entry.docs if entry.has_docs else None
    return meta_correlation(entry.scores, entry.human, entry.systems, "spearman", doc_ids=docs, **entry.ci)
