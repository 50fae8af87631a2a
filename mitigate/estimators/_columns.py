"""The rows every estimate reads: one per (item, group) with the label, the judge's value and the selection
weight (:class:`EstimateColumns`), built from a benchmark and a judge (:func:`columns`) or from items and
the judge's values (:func:`columns_from_items`).

Pairwise items: the label is the gold preference and the judge value the verdict, both coded as the
share of the first text's win (A 1, B 0, tie 0.5), so a group's mean is a win rate (``by="system"``:
an item counts in both its systems' groups, from each one's side). Items without a judge value are
kept (the corrected methods predict them).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any, Literal, NamedTuple

import numpy as np
from pydantic import BaseModel, ConfigDict, Field

from mitigate.constraints import Options, check_param
from mitigate.data import Benchmark, Item, RecordedRun, label_value
from mitigate.errors import ConfigError, DataError
from mitigate.judge import Judgment
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


# columns


def resolve_by(items: Sequence[Item], by: str) -> str:
    """``by`` with ``auto`` made concrete; ConfigError for an unknown grouping or one the items cannot
    take."""
    check_param("the estimate", "by", by, [Options(*BY)])
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
