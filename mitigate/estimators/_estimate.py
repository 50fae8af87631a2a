"""The number a user reports: each system's bias-corrected mean from a judge on every item and a few human
labels.

:func:`estimate` takes a benchmark labelled on some items, a criterion and the judge's values, and
returns an :class:`~mitigate.estimators._results.EstimateResult`: per group (system, system pair, or
all items) the estimate with its interval, the labels-alone and judge-alone values beside it, and
the ranking. :func:`plan_labels` says how many labels each group needs for a target half-width and
:func:`select_for_labelling` which items to label next (:func:`write_selection` writes them as a
file a labeller fills). Every function works on :class:`EstimateColumns`, one row per (item, group),
built by :func:`columns` (a benchmark and a judge) or :func:`columns_from_items`.

Pairwise items: the label is the gold preference and the judge value the verdict, both coded as the
share of the first text's win (A 1, B 0, tie 0.5), so a group's mean is a win rate (``by="system"``:
an item counts in both its systems' groups, from each one's side). Items without a judge value are
never dropped: the corrected methods predict them, and every result counts them in ``n_judged``.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import IO, Any, Literal, NamedTuple

import numpy as np
from pydantic import BaseModel, ConfigDict, Field

from mitigate.data import Benchmark, Item, RecordedRun, label_value
from mitigate.errors import ConfigError, DataError
from mitigate.estimators._mean import (
    MIN_LABELS,
    Calibration,
    MeanEstimate,
    Method,
    Remedies,
    Slope,
    Target,
    check_settings,
    estimate_mean,
    pilot_spread,
    shared_slope,
)
from mitigate.estimators._ranking import rank_estimates
from mitigate.estimators._results import (
    EstimateResult,
    GroupResult,
    LabelPlan,
    PlanGroup,
    Selection,
    SelectionRow,
)
from mitigate.estimators._selection import (
    DEFAULT_FLOOR,
    MethodPlan,
    allocate,
    inclusion_probabilities,
    labels_needed,
    systematic_draw,
    uncertainty,
)
from mitigate.judge import Judgment
from mitigate.paths import write_output
from mitigate.scale import Scale

By = Literal["auto", "system", "pair", "none"]
BY: tuple[str, ...] = ("auto", "system", "pair", "none")
"""How items are grouped: ``auto`` is ``system`` when every item names its system(s), else ``none``."""

ALL = "all"
"""The one group's name under ``by="none"``."""

_VERDICT_VALUE = {"first": 1.0, "second": 0.0, "tie": 0.5}


class EstimateColumns(BaseModel):
    """One row per (item, group): the item id, the group, the label, the judge value and the selection weight.

    Values are None where missing; ``rounds`` holds the selection round (1, 2 ...; 0 elsewhere) of
    each weighted label, ``truth`` each row's label before labels were hidden for an experiment, and
    ``judge_missing`` counts the rows without a judge value by reason.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")
    benchmark: str
    criterion: str
    judge: str
    by: str
    pairwise: bool = False
    label_scale: Scale
    judge_scale: Scale | None = None
    ids: tuple[str, ...]
    groups: tuple[str, ...]
    labels: tuple[float | None, ...]
    judge_values: tuple[float | None, ...]
    weights: tuple[float | None, ...] = ()
    rounds: tuple[int, ...] = ()
    truth: tuple[float | None, ...] = ()
    judge_missing: dict[str, int] = Field(default_factory=dict)

    def group_names(self) -> list[str]:
        """The groups in order of first appearance."""
        return list(dict.fromkeys(self.groups))

    def arrays(self, group: str) -> GroupArrays:
        """One group's labels, judge values, weights (NaN where missing) and rounds, and the rows they came
        from."""
        rows = [i for i, g in enumerate(self.groups) if g == group]

        def column(values: tuple[float | None, ...]) -> np.ndarray:
            return np.array([math.nan if values[i] is None else values[i] for i in rows], dtype=float)

        w = r = None
        if self.weights and any(self.weights[i] is not None for i in rows):
            w = column(self.weights)
            r = np.array([self.rounds[i] if self.rounds else int(self.weights[i] is not None) for i in rows])
        return GroupArrays(column(self.labels), column(self.judge_values), w, r, rows)


class GroupArrays(NamedTuple):
    """One group's columns as arrays: labels, judge values, weights and rounds (None without a selection
    round)."""

    labels: np.ndarray
    judge: np.ndarray
    weights: np.ndarray | None
    rounds: np.ndarray | None
    rows: list[int]


# ---------------------------------------------------------------------------------------------
# judge values


def _value_of(j: Judgment, criterion: str) -> float | None:
    if j.verdict is not None:
        return _VERDICT_VALUE[j.verdict]
    if criterion in j.scores:
        return j.scores[criterion]
    return next(iter(j.scores.values())) if len(j.scores) == 1 else None


def judge_values(
    judge: Mapping[str, float | None] | RecordedRun | Sequence[Judgment] | Any,
    items: Sequence[Item],
    criterion: str,
) -> tuple[list[float | None], dict[str, int]]:
    """The judge's value for each of ``items`` on ``criterion``, and the count of missing ones by reason
    (``"no answer"``, ``"parse failure"``, ``"error"``).

    ``judge``: item id -> value; a :class:`~mitigate.data._recorded.RecordedRun` (its headline
    answers); judgments (or a result holding them). A verdict becomes the share of the first text's
    win (first 1, second 0, tie 0.5).
    """
    by_id: dict[str, Judgment | float | None]
    if isinstance(judge, RecordedRun):
        from mitigate.replay import RecordedJudge

        replay = RecordedJudge(judge, criterion)
        by_id = {}
        for it in items:
            recorded = judge.get(it.id, criterion)
            by_id[it.id] = None if recorded is None else replay.to_judgment(recorded)
    elif isinstance(judge, Mapping):
        by_id = dict(judge)
    else:
        judgments = getattr(judge, "judgments", judge)
        try:
            by_id = {j.item_id: j for j in judgments}
        except (TypeError, AttributeError):
            raise ConfigError(
                "expected the judge as a mapping item id -> value, a RecordedRun or a sequence "
                f"of Judgments; got {type(judge).__name__}"
            ) from None
    values: list[float | None] = []
    missing: dict[str, int] = {}
    for it in items:
        got = by_id.get(it.id)
        reason = None
        value: float | None = None
        if isinstance(got, Judgment):
            value = _value_of(got, criterion)
            if value is None:
                reason = "error" if got.error else "parse failure"
        elif got is None:
            reason = "no answer"
        elif isinstance(got, bool) or not isinstance(got, (int, float)) or not math.isfinite(got):
            raise DataError(
                f"expected a finite number (or None) as the judge value of item {it.id!r}; got {got!r}",
                item_id=it.id,
            )
        else:
            value = float(got)
        if reason is not None:
            missing[reason] = missing.get(reason, 0) + 1
        values.append(value)
    return values, missing


# ---------------------------------------------------------------------------------------------
# columns


def resolve_by(items: Sequence[Item], by: str) -> str:
    """``by`` with ``auto`` made concrete; ConfigError for an unknown grouping or one the items cannot
    take."""
    if by not in BY:
        raise ConfigError(f"The 'by' parameter must be one of {list(BY)}. Got {by!r} instead.")
    pairwise = bool(items) and all(it.pairwise for it in items)
    named = bool(items) and all(
        it.system is not None and (not pairwise or it.system_b is not None) for it in items
    )
    if by == "auto":
        return "system" if named else "none"
    if by == "pair" and not pairwise:
        raise ConfigError(
            "--by pair groups pairwise items by their two systems; the items are not pairwise "
            "(use --by system or --by none)"
        )
    if by in ("system", "pair") and not named:
        lacking = sum(1 for it in items if it.system is None or (pairwise and it.system_b is None))
        raise ConfigError(
            f"--by {by} needs the system on every "
            f"item{' (system and system_b)' if pairwise else ''}; {lacking} of {len(items)} "
            "items have none (use --by none)"
        )
    return by


def _expand(items: Sequence[Item], by: str, pairwise: bool) -> list[tuple[int, str, bool]]:
    """(item index, group, flipped) per row: a pairwise item's value is flipped for its second system's
    group."""
    rows: list[tuple[int, str, bool]] = []
    for k, it in enumerate(items):
        if by == "none":
            rows.append((k, ALL, False))
        elif not pairwise:
            rows.append((k, str(it.system), False))
        elif by == "pair":
            a, b = str(it.system), str(it.system_b)
            rows.append((k, f"{min(a, b)} vs {max(a, b)}", a > b))
        else:
            rows += [(k, str(it.system), False), (k, str(it.system_b), True)]
    return rows


def columns_from_items(
    items: Sequence[Item],
    criterion: str,
    values: Sequence[float | None],
    *,
    by: str = "auto",
    weights: Mapping[str, float] | None = None,
    rounds: Mapping[str, int] | None = None,
    truth: Mapping[str, float] | None = None,
    benchmark: str = "",
    judge: str = "",
    label_scale: Scale | None = None,
    judge_scale: Scale | None = None,
    judge_missing: Mapping[str, int] | None = None,
) -> EstimateColumns:
    """The estimate's rows from ``items`` and the judge's ``values`` (one per item, None where missing).

    ``weights``: item id -> selection weight of a label drawn in a selection round, ``rounds``: item
    id -> its round (default 1); ``truth``: item id -> every label before some were hidden.
    """
    if len(values) != len(items):
        raise DataError(f"expected one judge value per item; got {len(values)} values for {len(items)} items")
    ids = [it.id for it in items]
    if len(set(ids)) != len(ids):
        raise DataError(
            f"expected unique item ids; {next(i for i in ids if ids.count(i) > 1)!r} appears more than once"
        )
    pairwise = bool(items) and all(it.pairwise for it in items)
    if not pairwise and any(it.pairwise for it in items):
        raise DataError("expected items that are all pairwise or all single outputs; got a mix")
    by = resolve_by(items, by)
    weights = dict(weights or {})
    unknown = [i for i in weights if i not in set(ids)]
    if unknown:
        raise DataError(
            f"expected selection weights for items of the benchmark; {unknown[0]!r} is not one of them"
        )
    if weights and pairwise and by == "system":
        raise ConfigError(
            "selection weights belong to one group per item; with pairwise items --by system "
            "counts each item in two groups (use --by pair or --by none)"
        )
    rows = _expand(items, by, pairwise)

    def flip(v: float | None, flipped: bool) -> float | None:
        return None if v is None else (1.0 - v if flipped else v)

    labels = [label_value(items[k], criterion) for k, _, _ in rows]
    return EstimateColumns(
        benchmark=benchmark,
        criterion=criterion,
        judge=judge,
        by=by,
        pairwise=pairwise,
        label_scale=label_scale or (Scale(min=0, max=1, step=0.5) if pairwise else Scale()),
        judge_scale=judge_scale,
        ids=tuple(items[k].id for k, _, _ in rows),
        groups=tuple(g for _, g, _ in rows),
        labels=tuple(flip(v, fl) for v, (_, _, fl) in zip(labels, rows, strict=True)),
        judge_values=tuple(flip(values[k], fl) for k, _, fl in rows),
        weights=tuple(weights.get(items[k].id) for k, _, _ in rows) if weights else (),
        rounds=tuple((rounds or {}).get(items[k].id, 1) if items[k].id in weights else 0 for k, _, _ in rows)
        if weights
        else (),
        truth=tuple(flip(truth.get(items[k].id), fl) for k, _, fl in rows) if truth else (),
        judge_missing=dict(judge_missing or {}),
    )


def columns(
    benchmark: Benchmark,
    criterion: str,
    judge: Any,
    *,
    by: str = "auto",
    weights: Mapping[str, float] | None = None,
    rounds: Mapping[str, int] | None = None,
    truth: Mapping[str, float] | None = None,
    judge_name: str | None = None,
    judge_scale: Scale | None = None,
    items: Sequence[Item] | None = None,
) -> EstimateColumns:
    """The estimate's rows for ``benchmark`` (or its ``items``) on ``criterion`` with the judge's values
    (:func:`judge_values`; a RecordedRun gives its name and declared scale)."""
    chosen = list(items if items is not None else benchmark.items)
    if not chosen:
        raise DataError(f"benchmark {benchmark.name!r} has no items to estimate from")
    values, missing = judge_values(judge, chosen, criterion)
    if isinstance(judge, RecordedRun):
        judge_name = judge_name or judge.judge
        judge_scale = judge_scale or judge.scales.get(criterion)
    label_scale = Scale(min=0, max=1, step=0.5) if benchmark.pairwise else benchmark.scale_for(criterion)
    return columns_from_items(
        chosen,
        criterion,
        values,
        by=by,
        weights=weights,
        rounds=rounds,
        truth=truth,
        benchmark=benchmark.name,
        judge=judge_name or "judge",
        label_scale=label_scale,
        judge_scale=judge_scale,
        judge_missing=missing,
    )


# ---------------------------------------------------------------------------------------------
# estimating


def _one(
    a: GroupArrays,
    method: Method,
    confidence: float,
    target: Target,
    group: str,
    *,
    scale: Scale,
    slope: Slope | None = None,
    unavailable: dict[str, str] | None = None,
    **kw: Any,
) -> MeanEstimate | None:
    """One group's estimate by ``method``; with ``unavailable``, None and the reason there when it cannot be
    made."""
    corrected = method != "judge"
    weighted = corrected and a.weights is not None
    try:
        return estimate_mean(
            a.labels,
            a.judge,
            method=method,
            confidence=confidence,
            target=target,
            weights=a.weights if weighted else None,
            rounds=a.rounds if weighted else None,
            group=group,
            bounds=(scale.min, scale.max) if corrected else None,
            slope=slope if method == "ppi" else None,
            **kw,
        )
    except DataError as exc:
        if unavailable is None:
            raise
        unavailable[method] = exc.message
        return None


TUNE: tuple[str, ...] = ("overall", "group")
"""How ``ppi`` tunes the judge's weight: one slope over all groups (each keeping its intercept), or one per
group."""


def tuned_slope(cols: EstimateColumns, method: str, tune: str) -> Slope | None:
    """The judge slope ``ppi`` shares over the groups (``tune="overall"``, two groups or more); None
    otherwise."""
    if tune not in TUNE:
        raise ConfigError(f"The 'tune' parameter must be one of {list(TUNE)}. Got {tune!r} instead.")
    names = cols.group_names()
    if method != "ppi" or tune != "overall" or len(names) < 2:
        return None
    return shared_slope([cols.arrays(g)[:2] for g in names])


def estimate_columns(
    cols: EstimateColumns,
    *,
    method: Method = "ppi",
    confidence: float = 0.95,
    target: Target = "items",
    calibration: Calibration = "isotonic",
    folds: int = 5,
    seed: int = 0,
    tune: str = "overall",
    remedies: Remedies | None = None,
) -> EstimateResult:
    """Every group's estimate by ``method``, the labels-alone and judge-alone ones beside it, and the ranking.

    ``tune``: ``overall`` (default) gives ``ppi`` one judge slope fitted on every group's
    labels, each group keeping its own intercept (:func:`mitigate.estimators._mean.shared_slope`);
    ``group`` fits one per group. DataError (one line, naming the group) when a group cannot be
    estimated by ``method``; the values beside are left out with the reason instead.
    ``remedies``: what the refusals and notes suggest (default: ``mitigate estimate``'s options).
    """
    check_settings(method, confidence, target, calibration, folds)
    slope = tuned_slope(cols, method, tune)
    fix = remedies or Remedies()
    kw: dict[str, Any] = {
        "calibration": calibration,
        "folds": folds,
        "seed": seed,
        "scale": cols.label_scale,
        "remedies": fix,
    }
    groups: list[GroupResult] = []
    for name in cols.group_names():
        a = cols.arrays(name)
        main = _one(a, method, confidence, target, name, slope=slope, **kw)
        assert main is not None
        unavailable: dict[str, str] = {}
        beside = {
            other: main
            if other == method
            else _one(a, other, confidence, target, name, unavailable=unavailable, **kw)
            for other in ("human", "judge")
        }
        known = [t for i in a.rows if (t := cols.truth[i]) is not None] if cols.truth else []
        groups.append(
            GroupResult(
                group=name,
                estimate=main,
                **beside,
                unavailable=unavailable,
                truth=float(np.mean(known)) if known else None,
                n_weighted=0 if a.weights is None else int(np.isfinite(a.weights).sum()),
            )
        )
    ranking = None
    if len(groups) >= 2:
        others: dict[str, dict[str, float]] = {}
        for key in ("judge", "human"):
            if key != method and all(getattr(g, key) is not None for g in groups):
                others[f"{key}_only"] = {g.group: getattr(g, key).estimate for g in groups}
        if all(g.truth is not None for g in groups):
            others["all_labels"] = {g.group: float(g.truth) for g in groups}  # type: ignore[arg-type]
        ranking = rank_estimates({g.group: g.estimate for g in groups}, confidence, others)
    return EstimateResult(
        benchmark=cols.benchmark,
        criterion=cols.criterion,
        judge=cols.judge,
        method=method,
        confidence=confidence,
        target=target,
        by=cols.by,
        pairwise=cols.pairwise,
        label_scale=cols.label_scale,
        judge_scale=cols.judge_scale,
        groups=tuple(groups),
        ranking=ranking,
        notes=tuple(_notes(cols, method, fix, slope)),
    )


def _notes(cols: EstimateColumns, method: str, remedies: Remedies, slope: Slope | None = None) -> list[str]:
    notes = []
    if slope is not None:
        notes.append(
            Remedies.after(
                f"ppi: one judge slope ({slope.value:.3g}) fitted on the labels of all "
                f"{len(cols.group_names())} groups, each group keeping its own intercept",
                f"({remedies.per_group_slope})" if remedies.per_group_slope else "",
                " ",
            )
        )
    if cols.judge_missing:
        counts = ", ".join(f"{n} {reason}" for reason, n in cols.judge_missing.items())
        notes.append(f"items without a judge value: {counts}; they are kept (see the per-group notes)")
    if (
        cols.judge_scale is not None
        and method != "human"
        and (cols.judge_scale.min != cols.label_scale.min or cols.judge_scale.max != cols.label_scale.max)
    ):
        notes.append(
            f"the judge answers on {cols.judge_scale.describe()}, the labels are on "
            f"{cols.label_scale.describe()}: the judge-alone values are on the judge's scale"
        )
    if cols.pairwise:
        notes.append("pairwise: a group's mean is a win rate (a tie counts half)")
    if any(w is not None for w in cols.weights):
        notes.append("labels from a selection round are weighted by 1 / their inclusion probability")
    return notes


def estimate(
    benchmark: Benchmark,
    criterion: str,
    judge: Any,
    *,
    method: Method = "ppi",
    by: str = "auto",
    confidence: float = 0.95,
    target: Target = "items",
    weights: Mapping[str, float] | None = None,
    rounds: Mapping[str, int] | None = None,
    calibration: Calibration = "isotonic",
    folds: int = 5,
    seed: int = 0,
    truth: Mapping[str, float] | None = None,
    tune: str = "overall",
) -> EstimateResult:
    """Each group's mean label on ``criterion`` from the judge's values and the benchmark's labels (see the
    module docstring).

    ``judge``: a RecordedRun, judgments, or item id -> value; ``by``: ``auto``, ``system``, ``pair`` or
    ``none``; ``weights``/``rounds``: item id -> selection weight / round of labels drawn by
    :func:`select_for_labelling`. The rest as :func:`~mitigate.estimators._mean.estimate_mean`.

    >>> result = estimate(bench, "coherence", load_recorded("judgments.jsonl"))   # doctest: +SKIP
    >>> result.to_pandas()                                                        # doctest: +SKIP
    """
    cols = columns(benchmark, criterion, judge, by=by, weights=weights, rounds=rounds, truth=truth)
    settings: dict[str, Any] = {"calibration": calibration, "folds": folds, "seed": seed, "tune": tune}
    return estimate_columns(cols, method=method, confidence=confidence, target=target, **settings)


# ---------------------------------------------------------------------------------------------
# label budget


PLANNED: tuple[str, ...] = ("human", "ppi", "calibrated")
"""The methods a plan covers (the judge alone does not improve with labels)."""


def plan_labels(
    cols: EstimateColumns,
    half_width: float,
    *,
    confidence: float = 0.95,
    target: Target = "items",
    calibration: Calibration = "isotonic",
    folds: int = 5,
    seed: int = 0,
    tune: str = "overall",
) -> LabelPlan:
    """How many labels each group needs, per method, for an interval of ±``half_width`` (predicted from its
    labels)."""
    if isinstance(half_width, bool) or not isinstance(half_width, (int, float)) or not half_width > 0:
        raise ConfigError(f"The 'half_width' parameter must be a number > 0. Got {half_width!r} instead.")
    check_settings("ppi", confidence, target, calibration, folds)
    slope = tuned_slope(cols, "ppi", tune)
    fit: dict[str, Any] = {"calibration": calibration, "folds": folds, "seed": seed}
    groups = []
    for name in cols.group_names():
        y, f = cols.arrays(name)[:2]
        labelled = int(np.isfinite(y).sum())
        plans = {}
        for method in PLANNED:
            if labelled < MIN_LABELS[method]:
                note = f"needs at least {MIN_LABELS[method]} labels to plan from"
                plans[method] = MethodPlan(method=method, labelled=labelled, note=note)
                continue
            spread = pilot_spread(y, f, method, slope=slope if method == "ppi" else None, **fit)
            plans[method] = labels_needed(
                half_width,
                spread.s2,
                spread.p,
                len(y),
                labelled,
                confidence,
                s2_labels=spread.s2_labels,
                population=target == "population",
                method=method,
            )
        groups.append(PlanGroup(group=name, n=len(y), labelled=labelled, plans=plans))
    return LabelPlan(half_width=float(half_width), confidence=confidence, target=target, groups=tuple(groups))


# ---------------------------------------------------------------------------------------------
# active selection


def select_for_labelling(
    cols: EstimateColumns,
    n: int,
    *,
    method: Method = "ppi",
    floor: float = DEFAULT_FLOOR,
    seed: int = 0,
    confidence: float = 0.95,
    calibration: Calibration = "isotonic",
    folds: int = 5,
    tune: str = "overall",
) -> Selection:
    """The ``n`` unlabelled items worth labelling next, with their inclusion probabilities and weights (see
    :mod:`mitigate.estimators._selection`); label every item chosen, then estimate with their weights."""
    if method == "judge":
        raise ConfigError(
            "--select chooses labels for a bias-corrected method; expected --method ppi, "
            "calibrated or human; got judge"
        )
    if isinstance(n, bool) or not isinstance(n, int) or n < 1:
        raise ConfigError(
            f"The 'n' parameter of select_for_labelling must be an int >= 1. Got {n!r} instead."
        )
    if cols.pairwise and cols.by == "system":
        raise ConfigError(
            "--select draws each item from one group; with pairwise items --by system counts "
            "each item in two groups (use --by pair or --by none)"
        )
    check_settings(method, confidence, "items", calibration, folds)
    names = cols.group_names()
    data = {g: cols.arrays(g) for g in names}
    slope = tuned_slope(cols, method, tune)
    spreads: dict[str, Any] = {}
    for g, (y, f, *_) in data.items():
        if int(np.isfinite(y).sum()) >= MIN_LABELS[method]:
            spreads[g] = pilot_spread(
                y, f, method, calibration=calibration, folds=folds, seed=seed, slope=slope
            )
    known = [s.s2 for s in spreads.values() if math.isfinite(s.s2) and s.s2 > 0]
    pooled = float(np.mean(known)) if known else 1.0

    def variance_of(g: str) -> Any:
        size = len(data[g][0])
        s2 = spreads[g].s2 if g in spreads and spreads[g].s2 > 0 else pooled
        p = spreads[g].p if g in spreads else 1
        return lambda k: math.inf if k <= p else s2 * max(0.0, 1 - k / size) / k * (1 + (p - 1) / (k - 1))

    room = {g: int((~np.isfinite(data[g][0])).sum()) for g in names}
    labelled = {g: int(np.isfinite(data[g][0]).sum()) for g in names}
    given = allocate({g: variance_of(g) for g in names}, labelled, room, n)
    rng = np.random.default_rng(seed)
    rows: list[SelectionRow] = []
    for g in names:
        m = given[g]
        if not m:
            continue
        y, f, _, _, idx = data[g]
        pool = np.nonzero(~np.isfinite(y))[0]
        lab = np.isfinite(y)
        proxy = uncertainty(f[pool], f[lab], spreads[g].residuals) if g in spreads else np.ones(len(pool))
        pi = inclusion_probabilities(proxy, m, floor)
        for k in systematic_draw(pi, rng):
            rows.append(
                SelectionRow(
                    id=cols.ids[idx[pool[k]]], group=g, probability=float(pi[k]), weight=float(1.0 / pi[k])
                )
            )
    return Selection(
        method=method, floor=floor, seed=seed, rows=tuple(rows), per_group={g: given[g] for g in names}
    )


SELECTION_FIRST = ("id", "label", "weight", "probability", "group")
"""The first columns of a selection file; the item's texts follow."""


def _selection_records(selection: Selection, items: Sequence[Item]) -> list[dict[str, Any]]:
    by_id = {it.id: it for it in items}
    records = []
    for r in selection.rows:
        it = by_id[r.id]
        rec = {"id": r.id, "label": "", "weight": r.weight, "probability": r.probability, "group": r.group}
        rec |= {
            "system": it.system,
            "doc_id": it.doc_id,
            **({"system_b": it.system_b} if it.pairwise else {}),
        }
        rec |= {
            "inputs": dict(it.inputs),
            "output": it.output,
            **({"output_b": it.output_b} if it.pairwise else {}),
        }
        records.append(rec)
    return records


_FORMULA_START = ("=", "+", "-", "@", "\t", "\r")
"""What a spreadsheet reads as the start of a formula (CSV injection)."""


def _cell(column: str, value: Any) -> Any:
    """A CSV cell; a text a spreadsheet would run as a formula gets a leading apostrophe (the item's texts are
    untrusted), except in the columns read back."""
    if value is None:
        return ""
    read_back = column in ("id", "label", "weight", "probability")
    return (
        "'" + value
        if isinstance(value, str) and value.startswith(_FORMULA_START) and not read_back
        else value
    )


def write_selection(selection: Selection, items: Sequence[Item], path: Any, *, pairwise: bool = False) -> Any:
    """Write the selected items as a file a labeller fills: CSV for a ``.csv`` path, JSON lines otherwise.

    Columns: ``id``, an empty ``label``, ``weight`` and ``probability`` (left as they are), ``group``,
    then the item's system, document, inputs (CSV: one ``inputs.NAME`` column each) and output(s); not
    the judge's value, so it cannot anchor the labeller. Returns the path.
    """
    import csv
    import json
    from pathlib import Path

    file = Path(path)
    records = _selection_records(selection, items)
    file.parent.mkdir(parents=True, exist_ok=True)
    if file.suffix.lower() == ".csv":
        names = list(dict.fromkeys(k for rec in records for k in rec["inputs"]))
        fields = [
            *SELECTION_FIRST,
            "system",
            *(["system_b"] if pairwise else []),
            "doc_id",
            *(f"inputs.{k}" for k in names),
            "output",
            *(["output_b"] if pairwise else []),
        ]

        def write_csv(handle: IO[str]) -> None:
            writer = csv.DictWriter(handle, fieldnames=fields, extrasaction="ignore")
            writer.writeheader()
            for rec in records:
                flat = {**rec, **{f"inputs.{k}": v for k, v in rec["inputs"].items()}}
                writer.writerow({k: _cell(k, v) for k, v in flat.items()})

        return write_output(file, write_csv, "the selection file", newline="")
    return write_output(
        file,
        "".join(json.dumps({**rec, "label": None}, ensure_ascii=False) + "\n" for rec in records),
        "the selection file",
    )
