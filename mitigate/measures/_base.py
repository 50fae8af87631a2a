"""What every measure shares: the :class:`Measure` result, label equality, column helpers, and the
registered measures ``mitigate compare`` reports (:func:`reported_measure`, :func:`measure_table`).

Conventions: missing scores are ``None`` or NaN, dropped pairwise and counted in
``Measure.n_failed``; too little data gives ``value = NaN`` with a ``reason``, never 0; a share is
"of scored" (``Measure.of_all`` gives it "of all"); ``ci=True`` fills ``ci_low``/``ci_high`` with a
percentile bootstrap interval tuned by ``n_boot``, ``alpha`` and ``seed``.
"""

from __future__ import annotations

import inspect
import math
import warnings
from collections.abc import Callable, Hashable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from functools import cached_property
from typing import Any, ClassVar, Literal

import numpy as np
from pydantic import BaseModel, ConfigDict, Field, field_validator

from mitigate.data import Item
from mitigate.errors import DataError
from mitigate.judge import Judgment
from mitigate.measures._stats import batched, bootstrap_ci
from mitigate.registry import Component, register, registered
from mitigate.scale import Scale

Scores = Sequence[float | None] | np.ndarray
"""One score per item; ``None`` or NaN where the score is missing."""

Labels = Sequence[Hashable | None]
"""One label per item (str or number); ``None`` where missing."""


class Measure(BaseModel):
    """One number a measure produced, with how much data it rests on.

    ``value`` is NaN when the data cannot support the measure, and ``reason`` says why.
    ``n`` counts the items used, ``n_failed`` those dropped for a missing score. ``ci_low``/
    ``ci_high`` hold a bootstrap interval when one was asked for and could be computed;
    ``extra`` the measure's tables (per system, per pair ...).

    For a share ``value`` is *of scored*: ``count`` of the ``n`` items. ``of_all`` is the same
    share over all ``n + n_failed`` items, every dropped item counted against the judge (as
    LLMBar counts order consistency, 323/419). Both are None for measures that are not shares.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")
    name: str
    value: float
    n: int
    n_failed: int = 0
    ci_low: float | None = None
    ci_high: float | None = None
    reason: str | None = None
    count: int | None = None
    of_all: float | None = None
    extra: dict[str, Any] = Field(default_factory=dict)

    @field_validator("value", mode="before")
    @classmethod
    def _nan(cls, v: Any) -> Any:
        """Strict JSON (results.json, a probe report) stores NaN as null: read null back as NaN."""
        return math.nan if v is None else v

    @property
    def ok(self) -> bool:
        """True when the value is a finite number."""
        return math.isfinite(self.value)

    @property
    def n_all(self) -> int:
        """Every item the measure was given: used plus dropped."""
        return self.n + self.n_failed


# building results


def undefined(name: str, n: int, n_failed: int, reason: str, **extra: Any) -> Measure:
    """A NaN measure with the reason it could not be computed."""
    return Measure(name=name, value=math.nan, n=n, n_failed=n_failed, reason=reason, extra=extra)


def finish(
    name: str,
    value: float,
    n: int,
    n_failed: int,
    *,
    interval: tuple[float, float] | None = None,
    reason: str | None = None,
    extra: dict[str, Any] | None = None,
    count: int | None = None,
    of_all: float | None = None,
) -> Measure:
    """A measure from its value; the interval is kept only when it and the value are finite."""
    value = float(value)
    if not math.isfinite(value) and reason is None:
        reason = "the measure is undefined on this data"
    low = high = None
    if interval is not None and math.isfinite(value) and all(math.isfinite(v) for v in interval):
        low, high = float(interval[0]), float(interval[1])
    return Measure(
        name=name,
        value=value,
        n=n,
        n_failed=n_failed,
        ci_low=low,
        ci_high=high,
        reason=reason,
        extra=extra or {},
        count=count,
        of_all=of_all,
    )


def share(
    name: str,
    hits: np.ndarray,
    n_failed: int,
    *,
    failure_counts_as_hit: bool = False,
    interval: tuple[float, float] | None = None,
    extra: dict[str, Any] | None = None,
) -> Measure:
    """A share measure: ``value`` = mean of the 0/1 ``hits`` over the scored items (of scored).

    ``of_all`` counts the ``n_failed`` dropped items against the judge: as misses, or as hits for
    a bad share (``failure_counts_as_hit=True``: a flip rate).
    """
    n = len(hits)
    count = int(np.sum(hits))
    total = n + n_failed
    of_all = (count + (n_failed if failure_counts_as_hit else 0)) / total if total else None
    return finish(
        name, float(np.mean(hits)), n, n_failed, interval=interval, extra=extra, count=count, of_all=of_all
    )


def mean_interval(
    values: np.ndarray, ci: bool, n_boot: int, alpha: float, seed: int
) -> tuple[float, float] | None:
    """The bootstrap interval of the mean of ``values`` when ``ci``, else None."""
    return bootstrap_ci(batched_nanmean, values, n_boot=n_boot, alpha=alpha, seed=seed) if ci else None


@batched
def batched_nanmean(values: np.ndarray) -> np.ndarray:
    """Mean along the last axis ignoring NaN, for every bootstrap resample at once."""
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return np.nanmean(values, axis=-1)


# labels


def check_labels(labels: Sequence[Any], length: int, what: str) -> list[Any]:
    """``labels`` as a list of ``length`` labels, none of them None; DataError otherwise."""
    out = list(labels)
    if len(out) != length:
        raise DataError(f"expected one {what} per item ({length}); got {len(out)}")
    for i, label in enumerate(out):
        if label is None:
            raise DataError(f"expected a {what} for every item; item at position {i} has None")
    return out


def confusion_counts(answers: Sequence[Any], gold: Sequence[Any]) -> dict[str, dict[str, int]]:
    """Counts of each (gold, answer) pair over the items where both are present: {gold: {answer: count}}."""
    out: dict[str, dict[str, int]] = {}
    for a, g in zip(answers, gold, strict=True):
        if a is not None and g is not None:
            out.setdefault(str(g), {})
            out[str(g)][str(a)] = out[str(g)].get(str(a), 0) + 1
    return out


def is_missing(label: Any) -> bool:
    """True for a missing output or label: None or a float NaN."""
    return label is None or (isinstance(label, float | np.floating) and math.isnan(label))


def label_key(v: Any) -> tuple[str, Any]:
    """The key under which equal labels coincide; the one notion of label equality.

    Numbers (bools included: True is 1) are equal when they agree to 9 decimal places; anything
    else is compared by its text, so "1" is not 1.
    """
    if isinstance(v, bool | np.bool_ | int | float | np.integer | np.floating):
        return ("number", round(float(v), 9) + 0.0)
    return ("label", str(v))


def labels_equal(a: Any, b: Any) -> bool:
    """Whether two outputs or labels are the same answer (see :func:`label_key`)."""
    return label_key(a) == label_key(b)


# columns from items


def human_scores(items: Sequence[Item], criterion: str) -> np.ndarray:
    """The mean human score of each item on ``criterion`` (NaN where an item has none)."""
    return np.array([item.human.get(criterion, math.nan) for item in items], dtype=float)


def item_systems(items: Sequence[Item]) -> list[str | None]:
    """The generator (``system``) of each item."""
    return [item.system for item in items]


def item_doc_ids(items: Sequence[Item]) -> list[str | None]:
    """The source document of each item."""
    return [item.doc_id for item in items]


def word_count(text: str) -> int:
    """Length of ``text`` in whitespace-separated words (Liu et al. measure length in words)."""
    return len(text.split())


def output_lengths(items: Sequence[Item]) -> np.ndarray:
    """Length in words of each item's output."""
    return np.array([word_count(item.output) for item in items], dtype=float)


def nearest_points(values: np.ndarray, scale: Scale) -> np.ndarray:
    """Round each value to the nearest point of the scale, halves going up (3.5 -> 4)."""
    k = np.clip(np.floor((values - scale.min) / scale.step + 0.5), 0, len(scale.points()) - 1)
    return np.round(scale.min + k * scale.step, 6)


# the comparison table: measures reported per entry, each declaring how it is shown

Direction = Literal["higher", "lower", "zero"]
"""Which values of a measure are better: higher, lower, or closer to 0."""

Group = Literal["accuracy", "bias", "consistency"]
"""The three kinds of measure the comparison table sets side by side."""

GROUPS: tuple[Group, ...] = ("accuracy", "bias", "consistency")
"""Table order of the groups."""

Task = Literal["score", "pairwise"]
"""What a judge answers: a score per item, or a preference between the two texts of a pairwise item."""


class MeasureInfo(BaseModel):
    """How a measure is shown: a short column label, which direction is better, its group.

    ``headline`` measures get a column in the report's main table (the rest appear in the
    per-entry details); ``note`` is one sentence on how to read it, printed under the table.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")
    label: str
    direction: Direction
    group: Group
    headline: bool = False
    note: str | None = None


@dataclass(frozen=True)
class EntryData:
    """One judge's run over a benchmark's items: what a reported measure is computed from.

    ``scores`` holds the judge's score per item (NaN for a parse failure or error), in the order
    of ``items``; ``judgments`` the judgments themselves, empty for a human reference row; ``ls``
    the likelihood LS per item when it was computed; ``n_boot`` bootstrap resamples per interval
    (0: no intervals). For a pairwise run (``task="pairwise"``) ``verdicts`` holds the judge's
    preference per item (``"A"``, ``"B"``, ``"tie"`` or None) and ``scores`` is all NaN.
    """

    scores: np.ndarray
    items: Sequence[Item]
    criterion: str
    scale: Scale
    judgments: Sequence[Judgment] = ()
    ls: np.ndarray | None = None
    n_boot: int = 1000
    seed: int = 0
    verdicts: Sequence[str | None] = ()
    task: Task = "score"

    @property
    def ci(self) -> dict[str, Any]:
        """The interval keywords every measure function takes."""
        return {"ci": self.n_boot > 0, "n_boot": max(self.n_boot, 1), "seed": self.seed}

    @cached_property
    def human(self) -> np.ndarray:
        """The mean human score per item on the criterion."""
        return human_scores(self.items, self.criterion)

    @cached_property
    def systems(self) -> list[str | None]:
        """The system of each item."""
        return item_systems(self.items)

    @cached_property
    def docs(self) -> list[str | None]:
        """The document of each item."""
        return item_doc_ids(self.items)

    @property
    def has_docs(self) -> bool:
        """Whether every item names its document."""
        return all(d is not None for d in self.docs)

    @property
    def has_systems(self) -> bool:
        """Whether every item names its system."""
        return all(s is not None for s in self.systems)

    @cached_property
    def gold(self) -> list[str | None]:
        """The gold preference of each pairwise item on the criterion (None if absent)."""
        return [item.preference.get(self.criterion) for item in self.items]


class ReportedMeasure(Component):
    """A measure ``mitigate compare`` reports for every entry, and how it is shown.

    Declare one with :func:`reported_measure` on the function that computes it. (A subclass
    that sets ``info``, implements :meth:`compute` and is registered as kind ``"measure"`` under
    the name of the :class:`Measure` it returns works too.) ``on_humans = True`` also computes it
    on the human scores (the gold preferences, for a pairwise measure), as the reference row;
    ``task`` says which runs it applies to: ``"score"`` or ``"pairwise"``.
    """

    info: ClassVar[MeasureInfo]
    on_humans: ClassVar[bool] = False
    task: ClassVar[Task] = "score"
    uses_labels: ClassVar[bool | None] = None
    """Whether :meth:`compute` reads the human labels; None: exactly when its group is ``accuracy``."""

    @classmethod
    def reads_labels(cls) -> bool:
        """Whether the measure reads the human labels: on a partly labelled benchmark, compare computes it on
        the labelled items only (see :attr:`uses_labels`)."""
        return cls.info.group == "accuracy" if cls.uses_labels is None else cls.uses_labels

    def compute(self, entry: EntryData) -> Measure:
        """The measure for one entry (NaN with a reason when the entry cannot support it)."""
        raise NotImplementedError

    @classmethod
    def examples(cls) -> list[ReportedMeasure]:
        """Instances for the contract battery."""
        return [cls()]


MeasureFunction = Callable[[EntryData], Measure]


def reported_measure(
    name: str,
    label: str,
    direction: Direction,
    group: Group,
    *,
    headline: bool = False,
    paper: str = "",
    task: Task = "score",
    on_humans: bool = False,
    uses_labels: bool | None = None,
) -> Callable[[MeasureFunction], MeasureFunction]:
    """Decorator: ``fn(entry) -> Measure`` is the reported measure registered as ``name`` (the key in
    ``results.json``), shown as :class:`MeasureInfo` says.

    The function's docstring says what the measure is (its first paragraph, which ``mitigate list
    measures`` shows) and, in a second paragraph, how to read it (the ``note`` printed under the
    report's table). The decorator registers a :class:`ReportedMeasure` class named after the
    function (``_swap_gain`` -> ``SwapGain``) and returns the function unchanged.
    """

    def deco(fn: MeasureFunction) -> MeasureFunction:
        cls_name = "".join(word.capitalize() for word in fn.__name__.split("_"))
        _, _, note = inspect.cleandoc(fn.__doc__ or "").partition("\n\n")
        info = MeasureInfo(
            label=label,
            direction=direction,
            group=group,
            headline=headline,
            note=" ".join(note.split()) or None,
        )
        body = {
            "__module__": fn.__module__,
            "__qualname__": cls_name,
            "__doc__": fn.__doc__,
            "info": info,
            "paper": paper,
            "task": task,
            "on_humans": on_humans,
            "uses_labels": uses_labels,
            "compute": lambda self, entry: fn(entry),
        }
        register("measure", name)(type(cls_name, (ReportedMeasure,), body))
        return fn

    return deco


def measure_table(task: Task | None = None) -> dict[str, type[ReportedMeasure]]:
    """Every registered reported measure (for ``task`` only, when given), key -> class, in table order:
    by group (accuracy, bias, consistency), then in registration order."""
    found = [
        (k, v)
        for k, v in registered("measure").items()
        if isinstance(v, type) and issubclass(v, ReportedMeasure) and (task is None or v.task == task)
    ]
    rank = {g: i for i, g in enumerate(GROUPS)}
    return dict(sorted(found, key=lambda kv: rank[kv[1].info.group]))


class _Table(Mapping[str, MeasureInfo]):
    """Key -> :class:`MeasureInfo` of every reported measure, read from the registry on each use."""

    def __getitem__(self, key: str) -> MeasureInfo:
        return measure_table()[key].info

    def __iter__(self) -> Iterator[str]:
        return iter(measure_table())

    def __len__(self) -> int:
        return len(measure_table())

    def __repr__(self) -> str:
        return f"MEASURES({list(self)})"


MEASURES: Mapping[str, MeasureInfo] = _Table()
"""Every measure compare reports per entry, in table order, with how it is shown (read from the registry)."""
