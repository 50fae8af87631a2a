"""The plan stage (:func:`plan` -> :class:`ComparePlan`): the benchmark loaded with its labels files, the
train split, the items to judge, and every refusal the later stages would make, with nothing written and no LM
call."""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from mitigate.data import (
    AddedLabels,
    Benchmark,
    Item,
    RecordedRun,
    add_label_files,
    labelled,
    load,
    select_items,
    train_test_split,
)
from mitigate.errors import ConfigError, DataError, PromptConflictWarning
from mitigate.harness._config import PLANNING_FIELDS, CompareConfig
from mitigate.harness._entry import Entry, journal_names
from mitigate.judge import judge_scale
from mitigate.measures import Task
from mitigate.replay import RecordedJudge, ReleasedJudge

NEEDS_TRAIN = (
    "learns from data (its demos come from a training pool) and must be fitted first; expected a "
    "train split: --train FRACTION (e.g. 0.5, split by document) or --train BENCHMARK"
)
"""What an entry that must be fitted, with no train split, is refused with (after its name)."""


class ComparePlan(BaseModel):
    """What a comparison will do, made by :func:`plan` from a :class:`CompareConfig` with no LM call.

    ``judged`` is the part of ``benchmark`` that is judged (the test side of a train split), ``items`` the
    items to judge in order, ``journals`` each entry's journal file stem, ``outside`` a warning line counting
    recorded answers for items the benchmark lacks, ``label_weights`` and ``label_rounds`` the selection
    weight and round of each judged item a filled selection file labelled.
    """

    model_config = ConfigDict(frozen=True, extra="forbid", arbitrary_types_allowed=True)
    config: CompareConfig
    benchmark: Benchmark
    judged: Benchmark
    train: Benchmark | None = None
    train_info: dict[str, Any] | None = None
    items: tuple[Item, ...]
    task: Task
    journals: dict[str, str]
    outside: str | None = None
    n_labelled: int
    label_weights: dict[str, float] = Field(default_factory=dict)
    label_rounds: dict[str, int] = Field(default_factory=dict)

    @property
    def criterion(self) -> str:
        """The criterion compared."""
        return self.config.criterion

    @property
    def entries(self) -> tuple[Entry, ...]:
        """The entries to compare, the first being the reference."""
        return self.config.entries

    @property
    def out(self) -> Path:
        """The output folder; ConfigError when the config has none (a plan made only to be checked)."""
        if self.config.out_dir is None:
            raise ConfigError(
                "expected out_dir (the folder for journals and reports) to run a comparison; got none"
            )
        return self.config.out_dir

    @property
    def partly_labelled(self) -> bool:
        """Some judged items carry a label on the criterion and some do not."""
        return 0 < self.n_labelled < len(self.items)

    def with_options(self, **options: Any) -> ComparePlan:
        """This plan with run options (out_dir, concurrency, batch, probes ...) changed, checked like a new
        config; the fields a plan is made from (:data:`PLANNING_FIELDS`) need a new plan."""
        planned = sorted(k for k in options if k in PLANNING_FIELDS)
        if planned:
            raise ConfigError(
                f"changing {', '.join(map(repr, planned))} changes what is judged; expected "
                "only run options here (make a new plan from the changed CompareConfig)"
            )
        return self.model_copy(update={"config": self.config.with_options(**options)})


def train_and_test(
    bench: Benchmark, train: float | str | Benchmark | None, criterion: str, seed: int
) -> tuple[Benchmark | None, Benchmark, dict[str, Any] | None]:
    """The training benchmark (None without ``train``), the benchmark to judge, and what the report says of
    them."""
    if train is None:
        return None, bench, None
    if isinstance(train, float | int):
        fit, test = train_test_split(bench, float(train), seed=seed, criterion=criterion)
        source = f"{bench.name}, fraction {train:g} by document (seed {seed})"
    else:
        fit, test = train if isinstance(train, Benchmark) else load(train), bench
        fit = fit.model_copy(update={"items": tuple(it for it in fit.items if labelled(it, criterion))})
        if not fit.items:
            raise DataError(f"training benchmark {fit.name!r} has no item labelled on {criterion!r}")
        shared_ids = sorted({it.id for it in fit.items} & {it.id for it in bench.items})
        shared_docs = sorted(
            {it.doc_id for it in fit.items if it.doc_id} & {it.doc_id for it in bench.items if it.doc_id}
        )
        if shared_ids or shared_docs:
            shared = shared_docs or shared_ids
            raise ConfigError(
                f"expected a training benchmark that shares no item or document with {bench.name!r}; "
                f"{len(shared)} are in both, e.g. {shared[:3]} (split one benchmark with a train "
                "fraction instead)"
            )
        source = fit.name
    docs = {it.doc_id for it in fit.items if it.doc_id is not None}
    info = {
        "source": source,
        "n_items": len(fit),
        "n_documents": len(docs) or len(fit),
        "ids": [it.id for it in fit.items],
    }
    return fit, test, info


def _check_recorded_cover(entries: Sequence[Entry], items: Sequence[Item], benchmark: str) -> None:
    """Fail before any call when a replayed judge (recorded or released) has no answer for some items."""
    for e in entries:
        if not isinstance(e.judge, RecordedJudge) or not (missing := e.judge.covers(items)):
            continue
        if isinstance(e.judge, ReleasedJudge):
            covered = "'summeval-h2h'" if e.judge.run is None else "the 1,200 items of 'summeval'"
            raise ConfigError(
                f"the released judge {e.judge.judge_name!r} has answers for {covered} only; {len(missing)} "
                f"of {len(items)} items here have none, e.g. {missing[:2]}"
            )
        raise ConfigError(
            f"the recorded judge {e.name!r} ({e.judge.recorded.source}) has no answer on "
            f"{e.judge.criterion!r} for {len(missing)} of the {len(items)} items of {benchmark!r}, e.g. "
            f"{missing[:3]}; expected one for every "
            "item judged (check the item ids, or pass --limit)"
        )


def recorded_outside(benchmark: Benchmark, criterion: str, entries: Sequence[Entry]) -> str | None:
    """One warning line counting recorded answers on ``criterion`` for items the benchmark does not hold
    (they are not compared); None if none."""
    ids = {it.id for it in benchmark.items}
    parts = []
    for entry in entries:
        run = getattr(entry.judge, "recorded", None)
        if not isinstance(run, RecordedRun):
            continue
        rows = [r for r in run.rows() if r.criterion == criterion and r.item_id not in ids]
        if rows:
            parts.append(f"{entry.name}: {len(rows)} rows on {len({r.item_id for r in rows})} items")
    if not parts:
        return None
    return (
        f"warning: recorded answers for items not in benchmark {benchmark.name!r} are not compared ("
        + "; ".join(parts)
        + ")"
    )


def _warn_scale_mismatch(bench: Benchmark, criterion: str, entries: Sequence[Entry]) -> None:
    """Warn once per prompt scale that differs from the benchmark's label scale for ``criterion`` (demos are
    rescaled linearly; absolute differences then compare two scales)."""
    if bench.pairwise:
        return
    human = bench.scale_for(criterion)
    seen: dict[tuple[float, float], list[str]] = {}
    for e in entries:
        judge = e.judge if e.judge is not None else e.base
        scale = e.scale or (judge_scale(judge) if judge is not None else None)
        if scale is None or scale.letters or (scale.min, scale.max) == (human.min, human.max):
            continue
        seen.setdefault((scale.min, scale.max), []).append(e.name)
    for (lo, hi), names in seen.items():
        warnings.warn(
            f"benchmark {bench.name!r} labels {criterion!r} on {human.describe()}, but entries {names} ask "
            f"for {lo:g} to {hi:g}: demos from it are mapped linearly onto the prompt's scale, and absolute "
            "differences from the human scores compare two scales (rank correlations do not)",
            PromptConflictWarning,
            stacklevel=4,
        )


def plan(config: CompareConfig) -> ComparePlan:
    """The plan of ``config``: the train split, the items to judge and every check made before an LM call."""
    full = config.benchmark if isinstance(config.benchmark, Benchmark) else load(config.benchmark)
    criterion = config.criterion
    if full.criteria and criterion not in full.criteria:
        raise ConfigError(f"expected a criterion of {full.name} {list(full.criteria)}; got {criterion!r}")
    added = add_label_files(full, criterion, config.labels) if config.labels else None
    if added is not None:
        full = added.benchmark
    fit_on, bench, train_info = train_and_test(full, config.train, criterion, config.seed)
    unfitted = [e.name for e in config.entries if e.needs_fit]
    if unfitted and fit_on is None:
        raise ConfigError(f"entry {unfitted[0]!r} {NEEDS_TRAIN}")
    items = select_items(bench.items, config.limit)
    if not items:
        raise DataError(f"benchmark {bench.name!r} has no items to judge")
    _check_recorded_cover(config.entries, items, bench.name)
    _warn_scale_mismatch(full, criterion, config.entries)
    if bench.pairwise and not any(criterion in it.preference for it in items):
        raise DataError(
            f"benchmark {bench.name!r} is pairwise but none of its items has a gold preference "
            f"on {criterion!r}"
        )
    weights, rounds = _file_labels(added, config.labels, items, bench) if added is not None else ({}, {})
    return ComparePlan(
        config=config,
        benchmark=full,
        judged=bench,
        train=fit_on,
        train_info=train_info,
        items=tuple(items),
        task="pairwise" if bench.pairwise else "score",
        journals=journal_names([e.name for e in config.entries]),
        outside=recorded_outside(full, criterion, config.entries),
        n_labelled=sum(1 for it in items if labelled(it, criterion)),
        label_weights=weights,
        label_rounds=rounds,
    )


def _file_labels(
    added: AddedLabels, paths: Sequence[Path], items: Sequence[Item], bench: Benchmark
) -> tuple[dict[str, float], dict[str, int]]:
    """The selection weights and rounds of the judged items; DataError when the labels files label none of
    them, or when they carry weights on a pairwise benchmark (whose items count in two systems' groups)."""
    files = ", ".join(str(p) for p in paths)
    ids = {it.id for it in items}
    if added.labelled and not ids.intersection(added.labelled):
        raise DataError(
            f"{files}: none of the {len(added.labelled)} items labelled there is among the "
            f"{len(items)} items compared (first labelled {added.labelled[0]!r}); expected "
            "labels for the judged items (check the limit and the train split)"
        )
    weights = {i: w for i, w in added.weights.items() if i in ids}
    if weights and bench.pairwise:
        raise DataError(
            f"{files}: expected labels without selection weights on the pairwise benchmark "
            f"{bench.name!r}; compare estimates each system's win rate, counting a pairwise item "
            "in both its systems' groups, and a selection weight belongs to one group"
        )
    return weights, {i: r for i, r in added.rounds.items() if i in ids}
