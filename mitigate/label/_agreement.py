"""What the labels say once given: the judge's agreement with them per system, and the corrected per-system
estimates they make possible.

Agreement (per criterion, per group and over all): Spearman's ρ and Cohen's κ (quadratic-weighted on a
scale, plain on a pair's A/B/tie) with percentile bootstrap intervals, and the confusion matrix of judge
against label; κ and the matrix only when every judge value is on the label's grid (a judge on another scale
would have to be binned, a guess). The estimates are :func:`mitigate.estimators.estimate_columns` over the
benchmark with the session's labels added and the design weights that keep them unbiased: every label of a
finished session, or, while a seeded per-system draw is under way, each system's labelled prefix in the shown
order (a uniform draw of its own size). An unfinished ``--select`` round gives no estimate: its unequal
probabilities hold only for the whole round.
"""

from __future__ import annotations

import functools
import itertools
import math
from typing import Any

import numpy as np

from mitigate.data import Benchmark, apply_labels
from mitigate.errors import MitigateError
from mitigate.label._session import LabelSession


def kappa(x: np.ndarray, y: np.ndarray, categories: list[float], *, weighted: bool) -> float:
    """Cohen's κ of two codings over ``categories`` (quadratic weights when ``weighted``); NaN when chance
    agreement is total."""
    k = len(categories)
    table = confusion(x, y, categories)
    if table.sum() == 0:
        return math.nan
    observed = table / table.sum()
    expected = np.outer(observed.sum(1), observed.sum(0))
    i, j = np.indices((k, k))
    w = ((i - j) / max(k - 1, 1)) ** 2 if weighted else (i != j).astype(float)
    chance = float((w * expected).sum())
    return math.nan if chance == 0 else 1 - float((w * observed).sum()) / chance


def confusion(x: np.ndarray, y: np.ndarray, categories: list[float]) -> np.ndarray:
    """How often each pair of categories was given (rows: ``x``'s, columns: ``y``'s)."""
    index = {c: i for i, c in enumerate(categories)}
    table = np.zeros((len(categories), len(categories)))
    np.add.at(table, ([index[float(a)] for a in x], [index[float(b)] for b in y]), 1)
    return table


def _finite(v: float) -> float | None:
    return None if v is None or not math.isfinite(v) else round(float(v), 4)


def agreement_rows(labels: np.ndarray, judge: np.ndarray, categories: list[float], *, pairwise: bool) -> dict:
    """One group's agreement: n, ρ and κ with 95% bootstrap intervals, and the confusion matrix (rows: the
    label, columns: the judge) when the judge's values lie on the categories."""
    from mitigate.measures import bootstrap_ci, spearman

    ok = np.isfinite(labels) & np.isfinite(judge)
    x, y = labels[ok], judge[ok]
    out: dict[str, Any] = {"n": int(ok.sum())}
    rho = spearman(x, y) if len(x) > 2 else math.nan
    low, high = bootstrap_ci("spearman", x, y, seed=0) if len(x) > 2 else (math.nan, math.nan)
    out["spearman"] = {"value": _finite(rho), "low": _finite(low), "high": _finite(high)}
    if len(x) < 3:
        out["note"] = "fewer than 3 labelled items with a judge value"
        return out
    on_grid = all(any(abs(v - c) < 1e-9 for c in categories) for v in y)
    if not on_grid:
        out["note"] = "the judge's values are not on the label scale: κ and the matrix need them there"
        return out
    y = np.array([min(categories, key=lambda c: abs(c - v)) for v in y])
    stat = functools.partial(kappa, categories=categories, weighted=not pairwise)
    value = stat(x, y)
    klow, khigh = bootstrap_ci(stat, x, y, seed=0, n_boot=500)
    name = "kappa" if pairwise else "kappa_quadratic"
    out[name] = {"value": _finite(value), "low": _finite(klow), "high": _finite(khigh)}
    out["confusion"] = confusion(x, y, categories).astype(int).tolist()
    return out


def _with_labels(session: LabelSession, criterion: str, rows: list[dict[str, Any]]) -> Benchmark:
    labels = {r["id"]: r["labels"][criterion] for r in rows if r["labels"].get(criterion) is not None}
    return apply_labels(session.bench, criterion, labels, source=str(session.path))


def design(
    session: LabelSession, criterion: str
) -> tuple[list[dict[str, Any]], dict[str, float], str | None]:
    """The labelled rows an estimate may use now, their weights, and why some are left out (None: all)."""
    done = [r for r in session.rows if r["labels"].get(criterion) is not None]
    if len(done) == len(session.rows):
        return done, {r["id"]: float(r["weight"]) for r in session.rows}, None
    if any(r.get("draw") != "random" for r in session.rows):
        left = len(session.rows) - len(done)
        return [], {}, f"the --select round is unfinished ({left} left): its weights hold for the whole round"
    used: list[dict[str, Any]] = []
    weights: dict[str, float] = {}
    for g in session.groups():
        group_rows = [r for r in session.rows if r["group"] == g]
        prefix = list(itertools.takewhile(lambda r: r["labels"].get(criterion) is not None, group_rows))
        if not prefix:
            continue
        pool = len(group_rows) / float(group_rows[0]["probability"])
        used += prefix
        weights |= {r["id"]: pool / len(prefix) for r in prefix}
    skipped = len(done) - len(used)
    note = f"{skipped} labels after a skipped item wait for it" if skipped else None
    return used, weights, note


def summary(
    session: LabelSession, judge: Any, *, plan: float | None = None, confidence: float = 0.95
) -> dict[str, Any]:
    """Per criterion: agreement per group and overall, the corrected estimates (or why none yet), and with
    ``plan`` (a half-width) how many more labels each group needs by the PPI plan."""
    from mitigate.estimators import columns, estimate_columns, plan_labels

    out: dict[str, Any] = {"criteria": {}, "progress": session.progress(blind=False)}
    by = "pair" if session.bench.pairwise else "system"
    for criterion in session.criteria:
        scale = session.scale(criterion)
        categories = [0.0, 0.5, 1.0] if session.bench.pairwise else scale.points()
        bench = _with_labels(session, criterion, session.rows)
        in_session = {r["id"] for r in session.rows}
        cols = columns(bench, criterion, judge, by=by)
        ids, groups = np.array(cols.ids), np.array(cols.groups)
        labels = np.array(cols.labels, dtype=float)  # None: NaN
        values = np.array(cols.judge_values, dtype=float)
        mine = np.array([i in in_session for i in ids])
        agree = {
            str(g): agreement_rows(
                labels[mine & (groups == g)], values[mine & (groups == g)], categories, pairwise=cols.pairwise
            )
            for g in dict.fromkeys(groups[mine])
        }
        agree["all"] = agreement_rows(labels[mine], values[mine], categories, pairwise=cols.pairwise)
        entry: dict[str, Any] = {"agreement": agree, "categories": categories, "judge": cols.judge}
        used, weights, note = design(session, criterion)
        entry["estimate_note"] = note
        if used:
            est_bench = _with_labels(session, criterion, used)
            est_cols = columns(est_bench, criterion, judge, by=by, weights=weights)
            try:
                result = estimate_columns(est_cols, method="ppi", confidence=confidence)
                entry["estimate"] = result.to_json()["groups"]
                if plan is not None:
                    planned = plan_labels(est_cols, plan, confidence=confidence).to_json()["groups"]
                    entry["plan"] = {g["group"]: g["ppi"] for g in planned}
            except MitigateError as exc:
                entry["estimate_note"] = str(exc)
        out["criteria"][criterion] = entry
    return out
