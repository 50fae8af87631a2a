"""The number a user reports: each system's bias-corrected mean from a judge on every item and a few human
labels.

:func:`estimate` takes a benchmark labelled on some items, a criterion and the judge's values, and
returns an :class:`~mitigate.estimators._results.EstimateResult`: per group (system, system pair, or
all items) the estimate with its interval, the labels-alone and judge-alone values beside it, and
the ranking. :func:`plan_labels` says how many labels each group needs for a target half-width and
:func:`select_for_labelling` which items to label next (:func:`write_selection` writes them as a
file a labeller fills). Every function reads :class:`~mitigate.estimators._columns.EstimateColumns`.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import IO, Any

import numpy as np

from mitigate.constraints import Interval, Options, check_param
from mitigate.data import Benchmark, Item
from mitigate.errors import ConfigError, DataError
from mitigate.estimators._columns import EstimateColumns, GroupArrays, columns
from mitigate.estimators._contrasts import contrasts as paired_contrasts
from mitigate.estimators._contrasts import parse_contrasts, rank_by_contrasts
from mitigate.estimators._mean import (
    MIN_LABELS,
    Calibration,
    MeanEstimate,
    Method,
    Remedies,
    Target,
    check_settings,
    estimate_mean,
    pilot_spread,
)
from mitigate.estimators._ranking import rank_estimates
from mitigate.estimators._regression import Slope, shared_slope
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
from mitigate.paths import write_output
from mitigate.scale import Scale

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
    check_param("the estimate", "tune", tune, [Options(*TUNE)])
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
    contrasts: str | Sequence[tuple[str, str]] | None = None,
) -> EstimateResult:
    """Every group's estimate by ``method``, the labels-alone and judge-alone ones beside it, and the ranking.

    ``tune``: ``overall`` (default) gives ``ppi`` one judge slope fitted on every group's
    labels, each group keeping its own intercept (:func:`mitigate.estimators._mean.shared_slope`);
    ``group`` fits one per group. DataError (one line, naming the group) when a group cannot be
    estimated by ``method``; the values beside are left out with the reason instead.
    ``remedies``: what the refusals and notes suggest (default: ``mitigate estimate``'s options).
    ``contrasts``: ``"all"``, ``"A:B,C:D"`` or (a, b) pairs: the differences ``a - b`` with intervals that
    hold jointly (:mod:`mitigate.estimators._contrasts`). The rank intervals come from every pairwise contrast
    when the groups hold different items (per-group Bonferroni intervals otherwise).
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
    estimates = {g.group: g.estimate for g in groups}
    disjoint = not (cols.pairwise and cols.by == "system")  # pairwise by system: an item is in two groups
    slope_var = slope.variance if slope is not None else 0.0
    span = cols.label_scale.max - cols.label_scale.min
    if len(groups) >= 2:
        others: dict[str, dict[str, float]] = {}
        for key in ("judge", "human"):
            if key != method and all(getattr(g, key) is not None for g in groups):
                others[f"{key}_only"] = {g.group: getattr(g, key).estimate for g in groups}
        if all(g.truth is not None for g in groups):
            others["all_labels"] = {g.group: float(g.truth) for g in groups}  # type: ignore[arg-type]
        ranking = (
            rank_by_contrasts(estimates, confidence, slope_var, others, span)
            if disjoint
            else rank_estimates(estimates, confidence, others)
        )
    found: tuple[Any, ...] = ()
    if contrasts is not None:
        if not disjoint:
            raise ConfigError(
                "contrasts compare groups of different items; with pairwise items --by system puts each "
                "item in two groups (use --by pair)"
            )
        pairs = parse_contrasts(contrasts, list(estimates)) if isinstance(contrasts, str) else list(contrasts)
        found = paired_contrasts(estimates, pairs, confidence, slope_var, span)
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
        contrasts=found,
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
    contrasts: str | Sequence[tuple[str, str]] | None = None,
) -> EstimateResult:
    """Each group's mean label on ``criterion`` from the judge's values and the benchmark's labels (see the
    module docstring).

    ``judge``: a RecordedRun, judgments, or item id -> value; ``by``: ``auto``, ``system``, ``pair`` or
    ``none``; ``weights``/``rounds``: item id -> selection weight / round of labels drawn by
    :func:`select_for_labelling`; ``contrasts`` as :func:`estimate_columns`. The rest as
    :func:`~mitigate.estimators._mean.estimate_mean`.

    >>> result = estimate(bench, "coherence", load_recorded("judgments.jsonl"))   # doctest: +SKIP
    >>> result.to_pandas()                                                        # doctest: +SKIP
    """
    cols = columns(benchmark, criterion, judge, by=by, weights=weights, rounds=rounds, truth=truth)
    settings: dict[str, Any] = {"calibration": calibration, "folds": folds, "seed": seed, "tune": tune}
    return estimate_columns(
        cols, method=method, confidence=confidence, target=target, contrasts=contrasts, **settings
    )


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
    check_param("plan_labels", "half_width", half_width, [Interval(float, 0, closed="neither")])
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
    check_param("select_for_labelling", "n", n, [Interval(int, 1)])
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
        rows += [
            SelectionRow(
                id=cols.ids[idx[pool[k]]], group=g, probability=float(pi[k]), weight=float(1.0 / pi[k])
            )
            for k in systematic_draw(pi, rng)
        ]
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
