"""What a comparison produced, as values: ``results.json`` is a :class:`CompareResult` (what
:func:`mitigate.compare` returns and the reports render from)."""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, field_validator

from mitigate.data import Item
from mitigate.errors import ConfigError
from mitigate.estimators import EstimateResult
from mitigate.judge import Judgment, frame
from mitigate.measures import Measure, MeasureInfo, Task, verdicts_as_text, word_count
from mitigate.run import ReadSequence, RunSummary, StoredJudgments
from mitigate.scale import Scale

_ESTIMATE_FIELDS = {
    "system": "group",
    "n": "n",
    "n_labelled": "n_labelled",
    "method": "method",
    "estimate": "estimate",
    "low": "low",
    "high": "high",
    "raw_mean": "judge_estimate",
    "labels_mean": "human_estimate",
    "labels_low": "human_low",
    "labels_high": "human_high",
}
"""Column of :meth:`CompareResult.estimate_rows` -> the field of an estimate row it holds."""

_COMPARISON_FIELDS = {
    "against": "against",
    "measure": "measure",
    "observed": "observed",
    "low": "ci_low",
    "high": "ci_high",
    "p_value": "p_value",
    "test": "test",
    "test_reason": "test_reason",
    "n": "n",
    "reason": "reason",
}
"""Column of :meth:`CompareResult.comparison_rows` -> the :class:`Comparison` field it holds."""

ESTIMATE_COLUMNS = ("entry", *_ESTIMATE_FIELDS)
COMPARISON_COLUMNS = ("entry", *_COMPARISON_FIELDS)

DELTA_INFO = MeasureInfo(label="Δ Spearman vs first", direction="higher", group="accuracy", headline=True)
"""How the comparison against the first entry is shown."""

DELTA_ACCURACY_INFO = MeasureInfo(
    label="Δ accuracy vs first", direction="higher", group="accuracy", headline=True
)
"""How the comparison against the first entry is shown on a pairwise benchmark."""


def _revive_nan(value: Any) -> Any:
    """results.json stores NaN as null (strict JSON); turn a measure's null ``value`` back into NaN."""
    if isinstance(value, dict):
        if "name" in value and "value" in value and "n" in value and value["value"] is None:
            return {**value, "value": math.nan}
        return {k: _revive_nan(v) for k, v in value.items()}
    return value


Measures = Annotated[dict[str, Measure], BeforeValidator(_revive_nan)]
"""Measures by name, as results.json holds them (a null value read back as NaN)."""


def score_of(j: Judgment, criterion: str) -> float | None:
    """The judgment's score on ``criterion`` (its only score when it has one under another name), or None."""
    return j.scores.get(criterion, next(iter(j.scores.values())) if len(j.scores) == 1 else None)


class ItemRecord(BaseModel):
    """What the report needs about one judged item: labels, human score (pairwise: gold preference), output
    length, LS and the judged texts (shown in the HTML report's per-item view)."""

    model_config = ConfigDict(frozen=True, extra="forbid")
    id: str
    system: str | None = None
    doc_id: str | None = None
    human: float | None = None
    words: int = 0
    ls: float | None = None
    system_b: str | None = None
    words_b: int | None = None
    gold: str | None = None
    output: str | None = None
    output_b: str | None = None


class ItemRecords(ReadSequence[ItemRecord]):
    """The :class:`ItemRecord` of each judged item on ``criterion`` (``ls``: LS per item), made as it is read:
    a comparison holds its items once, not a record beside each."""

    def __init__(self, items: Sequence[Item], criterion: str, ls: Sequence[float] | None = None) -> None:
        self.items, self.criterion, self.ls = items, criterion, ls

    def __len__(self) -> int:
        return len(self.items)

    def at(self, k: int) -> ItemRecord:
        it, human, ls = self.items[k], self.items[k].human.get(self.criterion), self.ls
        return ItemRecord(
            id=it.id,
            system=it.system,
            doc_id=it.doc_id,
            human=None if human is None or not math.isfinite(human) else float(human),
            words=word_count(it.output),
            ls=None if ls is None or not math.isfinite(ls[k]) else float(ls[k]),
            system_b=it.system_b,
            words_b=None if it.output_b is None else word_count(it.output_b),
            gold=it.preference.get(self.criterion),
            output=it.output,
            output_b=it.output_b,
        )


class Comparison(BaseModel):
    """An entry's item-level Spearman (pairwise: accuracy) minus the first entry's, on the items both scored.

    ``observed`` is the difference (NaN with ``reason`` when it cannot be computed), with a paired bootstrap
    interval and a two-sided paired p-value; ``test`` names the test that gave p and ``test_reason`` why the
    permutation test was not valid, when it was not.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")
    against: str
    measure: str = "spearman-item"
    observed: float
    ci_low: float | None = None
    ci_high: float | None = None
    p_value: float | None = None
    n: int = 0
    n_perm: int = 0
    test: str = ""
    test_reason: str | None = None
    reason: str | None = None
    decided_observed: float | None = None
    """Pairwise, when either entry abstained on some items (a majority panel): the difference on the items
    both decided, shown beside ``observed`` (which counts an abstention as not correct, on every item)."""
    decided_n: int | None = None
    """How many items ``decided_observed`` rests on."""

    @field_validator("observed", mode="before")
    @classmethod
    def _nan(cls, v: Any) -> Any:
        return math.nan if v is None else v


class EntryResult(BaseModel):
    """One entry's run and measures: judgments in item order (read back from ``results.sqlite`` after a
    comparison, held when read from ``results.json``), run summary, every measure."""

    model_config = ConfigDict(frozen=True, extra="forbid")
    name: str
    kind: str
    spec: dict[str, Any] = Field(default_factory=dict)
    describe: dict[str, Any] = Field(default_factory=dict)
    scale: Scale
    summary: RunSummary
    judgments: StoredJudgments | tuple[Judgment, ...] = Field(union_mode="left_to_right")  # never copied
    measures: Measures
    per_system: Measures = Field(default_factory=dict)
    histogram: dict[str, int] = Field(default_factory=dict)
    comparison: Comparison | None = None
    fitted: dict[str, Any] | None = None
    scoring: str = ""
    identical_to: str | None = None
    probes: dict[str, Any] | None = None
    estimate: EstimateResult | None = None
    """On a partly labelled benchmark: the bias-corrected estimate per system (with the judge's raw mean and
    the labels alone beside it); None otherwise, or when it cannot be made (``estimate_note`` says why)."""
    estimate_note: str | None = None

    def scores(self, criterion: str) -> list[float | None]:
        """The judge's score per item for ``criterion`` (None for a parse failure or error)."""
        return [score_of(j, criterion) for j in self.judgments]

    def verdicts(self) -> list[str | None]:
        """The judge's pairwise verdict per item as the text preferred (``"A"``, ``"B"``, ``"tie"``; None if
        none)."""
        return verdicts_as_text(self.judgments)


class CompareResult(BaseModel):
    """Everything a comparison produced; ``results.json`` is this model, and the report renders from it."""

    model_config = ConfigDict(frozen=True, extra="forbid")
    benchmark: str
    criterion: str
    human_scale: Scale
    task: Task = "score"
    items: ItemRecords | tuple[ItemRecord, ...] = Field(union_mode="left_to_right")  # never copied
    entries: tuple[EntryResult, ...]
    human: Measures = Field(default_factory=dict)
    human_histogram: dict[str, int] = Field(default_factory=dict)
    likelihood: dict[str, Any] | None = None
    settings: dict[str, Any] = Field(default_factory=dict)
    appendix: str = ""
    """Markdown added at the end of the report (``compare --threshold``'s section), kept here so that a
    re-render (``mitigate report``) keeps it."""

    def rows(self) -> list[dict[str, Any]]:
        """Every judgment of every entry in long form (:meth:`mitigate.judge.Judgment.rows`), entry by entry,
        with ``entry``, ``item``, ``document``, ``system`` and ``human`` (pairwise: the gold preference)."""
        out = []
        for e in self.entries:
            for rec, j in zip(self.items, e.judgments, strict=True):
                human: Any = rec.gold if self.task == "pairwise" else rec.human
                for row in j.rows(self.criterion):
                    out.append(
                        {
                            "entry": e.name,
                            "item": rec.id,
                            "document": rec.doc_id,
                            "system": rec.system,
                            **row,
                            "human": human,
                        }
                    )
        return out

    def estimate_rows(self) -> list[dict[str, Any]]:
        """One row per entry and system with a corrected estimate (:data:`ESTIMATE_COLUMNS`: the estimate, the
        judge's raw mean and the labels alone); empty unless the benchmark is partly labelled."""
        return [
            {"entry": e.name, **{col: row[field] for col, field in _ESTIMATE_FIELDS.items()}}
            for e in self.entries
            if e.estimate is not None
            for row in e.estimate.rows()
        ]

    def comparison_rows(self) -> list[dict[str, Any]]:
        """One row per entry compared with the first (:data:`COMPARISON_COLUMNS`)."""
        return [
            {"entry": e.name, **{col: getattr(c, field) for col, field in _COMPARISON_FIELDS.items()}}
            for e in self.entries
            if (c := e.comparison) is not None
        ]

    def to_pandas(
        self,
        table: Literal["judgments", "estimates", "comparisons"] = "judgments",
        *,
        folder: str | Path | None = None,
    ) -> Any:
        """:meth:`rows`, :meth:`estimate_rows` or :meth:`comparison_rows` as a pandas DataFrame (the
        ``pandas`` extra); with ``folder`` (the comparison's), the judgments are read from its
        ``results.sqlite``."""
        if table == "estimates":
            return frame(self.estimate_rows(), list(ESTIMATE_COLUMNS))
        if table == "comparisons":
            return frame(self.comparison_rows(), list(COMPARISON_COLUMNS))
        if table != "judgments":
            raise ConfigError(f"expected table='judgments', 'estimates' or 'comparisons'; got {table!r}")
        if folder is not None:
            from mitigate.run import COLUMNS_FILE, Columns

            with Columns(Path(folder) / COLUMNS_FILE) as columns:
                return columns.to_pandas()
        return frame(self.rows())

    def entry(self, name: str) -> EntryResult:
        """The entry named ``name``; ConfigError listing the names otherwise."""
        for e in self.entries:
            if e.name == name:
                return e
        raise ConfigError(f"expected an entry name, one of {[e.name for e in self.entries]}; got {name!r}")
