"""The measure stage: every entry's measures, its difference from the first, its corrected estimates
(:func:`measure` -> :class:`~mitigate.report.CompareResult`).

Per entry: every registered reported measure of the task (agreement with humans, score distribution, length
bias, inter-sample agreement, likelihood bias, consistency under perturbation; pairwise: accuracy, position
consistency, preference fairness ...), P_i per system and the score (or verdict) histogram; against the first
entry, the paired difference in item-level Spearman (pairwise: in accuracy) with a paired bootstrap interval
and a paired p-value (:mod:`mitigate.measures`). On a partly labelled benchmark the measures that read labels
use the labelled items only, and each entry also gets its bias-corrected estimate per system (PPI++ by
default) beside the judge's raw mean.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import replace
from typing import Any, Literal

import numpy as np

from mitigate.data import Item, labelled
from mitigate.errors import DataError
from mitigate.estimators import (
    EstimateResult,
    Method,
    Remedies,
    columns_from_items,
    estimate_columns,
    judge_values,
)
from mitigate.harness._entry import identical_entries, scoring_of
from mitigate.harness._judging import Judged
from mitigate.harness._planning import ComparePlan
from mitigate.judge import Judgment, judge_scale
from mitigate.measures import (
    EntryData,
    Measure,
    Task,
    abstained,
    complete_pairs,
    human_scores,
    measure_table,
    paired_mean_difference,
    paired_statistic_difference,
    per_system_correlation,
    score_histogram,
    swap_refusal,
    verdicts_as_text,
)
from mitigate.report import CompareResult, Comparison, EntryResult, ItemRecords, score_of
from mitigate.scale import Scale

ABSTAINED = "abstain"
"""A verdict slot where the judge abstained (a majority panel without a majority): no verdict, and not
correct."""

REMEDIES = Remedies(
    regroup="",
    fewer_coefficients="label more of its items (--labels FILE)",
    more_labels="label more of its items (--labels FILE)",
    per_group_slope="",
)
"""What compare's estimate notes suggest: compare groups by system with one method and one tuning, so only
more labels."""


def _histogram(scores: Sequence[float | None], scale: Scale) -> dict[str, int]:
    return {f"{k:g}": v for k, v in score_histogram(scores, scale).items()}


def _counts(labels: Sequence[str | None]) -> dict[str, int]:
    """How often each pairwise verdict (or gold preference) occurs; failures are not counted."""
    return {k: sum(1 for v in labels if v == k) for k in ("A", "B", "tie")}


def spearman_comparison(
    first: str,
    a: Sequence[float | None],
    b: Sequence[float | None],
    human: np.ndarray,
    *,
    n_boot: int,
    n_perm: int,
    seed: int,
    scales: tuple[Scale, Scale] | None = None,
) -> Comparison:
    """Item-level Spearman with humans of ``b`` minus that of ``a`` (the first entry), on the items both
    scored; p from the paired permutation test when the two answer in one currency (``scales``), the paired
    bootstrap test otherwise (``test_reason`` says why)."""
    why = None if scales is None else swap_refusal(a, b, *scales)
    test: Literal["permutation", "bootstrap"] = "permutation" if why is None else "bootstrap"
    d = paired_statistic_difference(
        b, a, human, "spearman", test=test, n_boot=n_boot, n_perm=n_perm, seed=seed
    )
    common: dict[str, Any] = {"against": first, "n": d.n, "test": d.test, "test_reason": why}
    if d.n < 3:
        reason = f"needs at least 3 items scored by both entries and humans; got {d.n}"
        return Comparison(observed=math.nan, reason=reason, **common)
    if not d.ok:
        reason = d.reason or "Spearman is undefined for at least one entry (constant scores)"
        return Comparison(observed=math.nan, reason=reason, **common)
    return Comparison(
        observed=d.observed,
        ci_low=d.low,
        ci_high=d.high,
        p_value=d.p_value,
        n_perm=n_perm if why is None else 0,
        **common,
    )


def _correct(verdicts: Sequence[str | None], gold: Sequence[str | None]) -> np.ndarray:
    """1.0 where the verdict equals gold, 0.0 where not (an abstention included), NaN where either is
    missing."""
    return np.array(
        [math.nan if v is None or g is None else float(v == g) for v, g in zip(verdicts, gold, strict=True)]
    )


def verdicts_or_abstentions(judgments: Sequence[Judgment]) -> list[str | None]:
    """Each judgment's verdict as the text it prefers, :data:`ABSTAINED` where the judge abstained, None where
    it gave none (a parse failure, an error)."""
    return [
        ABSTAINED if abstained(j) else v for j, v in zip(judgments, verdicts_as_text(judgments), strict=True)
    ]


def accuracy_comparison(
    first: str,
    a: Sequence[str | None],
    b: Sequence[str | None],
    gold: Sequence[str | None],
    *,
    n_boot: int,
    n_perm: int,
    seed: int,
) -> Comparison:
    """Accuracy of ``b`` minus that of ``a`` against gold, paired, on the items both judged; an abstention
    counts as not correct, and the difference on the items both decided is given beside it."""
    d = paired_mean_difference(
        _correct(b, gold), _correct(a, gold), n_boot=n_boot, n_perm=n_perm, seed=seed, min_n=3
    )
    common: dict[str, Any] = {"against": first, "measure": "preference-accuracy", "n": d.n, "test": d.test}
    if d.n < 3:
        reason = f"needs at least 3 items with a verdict from both entries and gold; got {d.n}"
        return Comparison(observed=math.nan, reason=reason, **common)
    decided: dict[str, Any] = {}
    if ABSTAINED in a or ABSTAINED in b:
        keep = [i for i, (va, vb) in enumerate(zip(a, b, strict=True)) if ABSTAINED not in (va, vb)]
        dx, dy = complete_pairs(
            _correct([a[i] for i in keep], [gold[i] for i in keep]),
            _correct([b[i] for i in keep], [gold[i] for i in keep]),
        )
        decided = {"decided_observed": float(np.mean(dy - dx)) if len(dx) else None, "decided_n": len(dx)}
    return Comparison(
        observed=d.observed,
        ci_low=d.low,
        ci_high=d.high,
        p_value=d.p_value,
        n_perm=n_perm,
        **common,
        **decided,
    )


def _subset(data: EntryData, keep: Sequence[int]) -> EntryData:
    """``data`` restricted to the items at ``keep`` (their scores, judgments, LS and verdicts with them)."""
    return replace(
        data,
        scores=data.scores[list(keep)],
        items=[data.items[i] for i in keep],
        judgments=[data.judgments[i] for i in keep] if data.judgments else (),
        ls=None if data.ls is None else data.ls[list(keep)],
        verdicts=[data.verdicts[i] for i in keep] if data.verdicts else [],
    )


def _labelled_rows(items: Sequence[Item], criterion: str) -> list[int] | None:
    """The positions of the labelled items when only some are labelled; None when all or none are."""
    rows = [i for i, it in enumerate(items) if labelled(it, criterion)]
    return rows if 0 < len(rows) < len(items) else None


def entry_measures(
    judgments: Sequence[Judgment],
    items: Sequence[Item],
    criterion: str,
    scale: Scale,
    *,
    ls: Sequence[float] | None = None,
    n_boot: int = 1000,
    seed: int = 0,
    task: Task = "score",
) -> tuple[dict[str, Measure], dict[str, Measure]]:
    """Every registered reported measure of ``task`` for one entry, plus P_i per system (Spearman; none for
    verdicts); on a partly labelled benchmark the measures that read labels use the labelled items alone."""
    scores = np.array(
        [math.nan if (s := score_of(j, criterion)) is None else s for j in judgments], dtype=float
    )
    verdicts = verdicts_as_text(judgments) if task == "pairwise" else []
    data = EntryData(
        scores=scores,
        items=items,
        criterion=criterion,
        scale=scale,
        judgments=judgments,
        ls=None if ls is None else np.asarray(ls, dtype=float),
        n_boot=n_boot,
        seed=seed,
        verdicts=verdicts,
        task=task,
    )
    rows = _labelled_rows(items, criterion)
    on_labels = data if rows is None else _subset(data, rows)
    out = {
        key: cls().compute(on_labels if cls.reads_labels() else data)
        for key, cls in measure_table(task).items()
    }
    per_system: dict[str, Measure] = {}
    if task == "score" and on_labels.has_systems:
        per_system = per_system_correlation(
            on_labels.scores, on_labels.human, on_labels.systems, "spearman", **on_labels.ci
        )
    return out, per_system


def entry_estimate(
    judgments: Sequence[Judgment],
    items: Sequence[Item],
    plan: ComparePlan,
    name: str,
    scale: Scale,
    method: Method,
) -> tuple[EstimateResult | None, str | None]:
    """One entry's bias-corrected estimate per system by ``method`` (the judge's value on every item
    corrected by the labelled ones), or None and why not."""
    criterion, pairwise = plan.criterion, plan.task == "pairwise"
    values, missing = judge_values(judgments, items, criterion)
    cols = columns_from_items(
        items,
        criterion,
        values,
        benchmark=plan.judged.name,
        judge=name,
        label_scale=Scale(min=0, max=1, step=0.5) if pairwise else plan.judged.scale_for(criterion),
        judge_scale=None if pairwise else scale,
        judge_missing=missing,
        weights=plan.label_weights,
        rounds=plan.label_rounds,
    )
    try:
        return estimate_columns(cols, method=method, seed=plan.config.seed, remedies=REMEDIES), None
    except DataError as exc:
        return None, exc.message


def _human_reference(
    items: Sequence[Item], criterion: str, scale: Scale, *, n_boot: int, seed: int, task: Task = "score"
) -> dict[str, Measure]:
    """The reported measures marked ``on_humans`` (distribution, length) of the human scores (pairwise: the
    gold preferences; partly labelled: the labelled items), as a reference row."""
    rows = _labelled_rows(items, criterion)
    if rows is not None:
        items = [items[i] for i in rows]
    gold = [it.preference.get(criterion) for it in items] if task == "pairwise" else []
    data = EntryData(
        scores=human_scores(items, criterion),
        items=items,
        criterion=criterion,
        scale=scale,
        n_boot=n_boot,
        seed=seed,
        verdicts=gold,
        task=task,
    )
    return {key: cls().compute(data) for key, cls in measure_table(task).items() if cls.on_humans}


def measure(judged: Judged) -> CompareResult:
    """Every entry's measures, comparison against the first and (partly labelled) corrected estimates."""
    fitted = judged.fitted
    plan = fitted.plan
    config = plan.config
    items, criterion, task = plan.items, plan.criterion, plan.task
    entries, runs = fitted.entries, judged.runs
    n_boot, n_perm, seed = config.n_boot, config.n_perm, config.seed
    resamples = {"n_boot": n_boot, "n_perm": n_perm, "seed": seed}
    ls = None if judged.ls is None else list(judged.ls)
    same = identical_entries(entries)
    human = human_scores(items, criterion)
    gold = [it.preference.get(criterion) for it in items]
    human_scale = plan.judged.scale_for(criterion)
    estimate_method = config.estimate if plan.partly_labelled else None
    results: list[EntryResult] = []
    for k, (e, result) in enumerate(zip(entries, runs, strict=True)):
        scale = e.scale or judge_scale(e.ready_judge) or human_scale
        measures, per_system = entry_measures(
            result.judgments, items, criterion, scale, ls=ls, n_boot=n_boot, seed=seed, task=task
        )
        comparison = None
        if task == "pairwise":
            histogram = _counts(verdicts_as_text(result.judgments))
            if k > 0:
                a, b = verdicts_or_abstentions(runs[0].judgments), verdicts_or_abstentions(result.judgments)
                comparison = accuracy_comparison(entries[0].name, a, b, gold, **resamples)
        else:
            scores = [score_of(j, criterion) for j in result.judgments]
            histogram = _histogram(scores, scale)
            if k > 0:
                first = [score_of(j, criterion) for j in runs[0].judgments]
                scales = (results[0].scale, scale)
                comparison = spearman_comparison(
                    entries[0].name, first, scores, human, scales=scales, **resamples
                )
        estimate = why = None
        if estimate_method is not None:
            estimate, why = entry_estimate(result.judgments, items, plan, e.name, scale, estimate_method)
        results.append(
            EntryResult(
                name=e.name,
                kind=e.kind,
                spec=e.spec,
                describe=e.ready_judge.describe(),
                scale=scale,
                summary=result.summary,
                judgments=result.judgments,
                measures=measures,
                per_system=per_system,
                histogram=histogram,
                comparison=comparison,
                fitted=fitted.fit_info.get(e.name),
                scoring=scoring_of(e),
                identical_to=same.get(e.name),
                probes=judged.probes.get(e.name),
                estimate=estimate,
                estimate_note=why,
            )
        )
    return CompareResult(
        benchmark=plan.judged.name,
        criterion=criterion,
        human_scale=human_scale,
        task=task,
        items=ItemRecords(items, criterion, ls),
        entries=tuple(results),
        human=_human_reference(items, criterion, human_scale, n_boot=n_boot, seed=seed, task=task),
        human_histogram=_counts(gold) if task == "pairwise" else _histogram(list(human), human_scale),
        likelihood=judged.ls_info,
        settings={
            "limit": config.limit,
            "n_items": len(items),
            "n_labelled": plan.n_labelled,
            "concurrency": config.concurrency,
            "n_boot": n_boot,
            "n_perm": n_perm,
            "seed": seed,
            "command": config.command,
            "train": fitted.train_info,
            "not_fitted": {k: v["error"] for k, v in fitted.fit_info.items() if v.get("error")},
            "journals": {e.name: f"journals/{plan.journals[e.name]}.jsonl" for e in entries},
            **({"estimate": estimate_method} if estimate_method is not None else {}),
        },
    )
