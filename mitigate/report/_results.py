"""What a comparison produced, as values: ``results.json`` is a :class:`CompareResult`.

These are the result models :func:`mitigate.harness._compare.compare` returns and the reports
(:mod:`mitigate.report._markdown`, :mod:`mitigate.report._html`) render from; they live
apart from the comparison itself so that compare can write its reports without an import
cycle. :mod:`mitigate.harness._compare` re-exports every name here.

On a partly labelled benchmark each :class:`EntryResult` also holds its bias-corrected estimate
per system (``estimate``, an :class:`~mitigate.estimators._results.EstimateResult`), or why
there is none (``estimate_note``); :meth:`CompareResult.to_pandas` gives them as a table with
``table="estimates"``.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from mitigate.errors import ConfigError
from mitigate.estimators import EstimateResult
from mitigate.judge import Judgment, frame
from mitigate.measures import Measure, MeasureInfo, Task, verdicts_as_text
from mitigate.run import RunSummary
from mitigate.scale import Scale

ESTIMATE_COLUMNS = (
    "entry",
    "system",
    "n",
    "n_labelled",
    "method",
    "estimate",
    "low",
    "high",
    "raw_mean",
    "labels_mean",
    "labels_low",
    "labels_high",
)
"""The columns of :meth:`CompareResult.estimate_rows` (and ``to_pandas("estimates")``)."""

COMPARISON_COLUMNS = (
    "entry",
    "against",
    "measure",
    "observed",
    "low",
    "high",
    "p_value",
    "test",
    "test_reason",
    "n",
    "reason",
)
"""The columns of :meth:`CompareResult.comparison_rows` (and ``to_pandas("comparisons")``)."""

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


def score_of(j: Judgment, criterion: str) -> float | None:
    if criterion in j.scores:
        return j.scores[criterion]
    if len(j.scores) == 1:
        return next(iter(j.scores.values()))
    return None


class ItemRecord(BaseModel):
    """What the report needs about one judged item: labels, human score, output length, LS.

    A pairwise item adds its second system, the second text's length and the gold preference.
    ``output`` (and ``output_b``) is the judged text, shown in the HTML report's per-item view.
    """

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


class Comparison(BaseModel):
    """An entry's item-level Spearman (pairwise: accuracy) minus the first entry's, on the items both scored.

    ``observed`` is the difference (positive: this entry agrees with humans more), with a
    paired bootstrap interval (items resampled together) and a two-sided paired p-value; NaN
    with ``reason`` when it cannot be computed. ``measure`` names what is compared, ``test`` the
    test that gave p (``paired permutation``, ``paired sign-flip permutation`` or ``paired
    bootstrap``) and ``test_reason`` why the permutation test was not valid, when it was not.
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
    """One entry's run and measures: judgments in item order, run summary, every measure."""

    model_config = ConfigDict(frozen=True, extra="forbid")
    name: str
    kind: str
    spec: dict[str, Any] = Field(default_factory=dict)
    describe: dict[str, Any] = Field(default_factory=dict)
    scale: Scale
    summary: RunSummary
    judgments: tuple[Judgment, ...]
    measures: dict[str, Measure]
    per_system: dict[str, Measure] = Field(default_factory=dict)
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

    @field_validator("measures", "per_system", mode="before")
    @classmethod
    def _revive(cls, v: Any) -> Any:
        return _revive_nan(v)

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
    items: tuple[ItemRecord, ...]
    entries: tuple[EntryResult, ...]
    human: dict[str, Measure] = Field(default_factory=dict)
    human_histogram: dict[str, int] = Field(default_factory=dict)
    likelihood: dict[str, Any] | None = None
    settings: dict[str, Any] = Field(default_factory=dict)

    @field_validator("human", mode="before")
    @classmethod
    def _revive(cls, v: Any) -> Any:
        return _revive_nan(v)

    def rows(self) -> list[dict[str, Any]]:
        """Every judgment of every entry in long form (:meth:`mitigate.judge.Judgment.rows`), entry by entry.

        Columns :data:`~mitigate.run._runner.FRAME_COLUMNS`: ``entry``, ``item``, ``document``,
        ``system``, ``criterion``, ``order``, ``score``, ``verdict``, ``human`` (the human score,
        or the gold preference on a pairwise benchmark), ``raw``, ``failure``, ``flags``.
        """
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
        """One row per entry and system with a corrected estimate: ``entry``, ``system``, ``n``,
        ``n_labelled``, ``method``, ``estimate``, ``low``, ``high``, the judge's raw mean (``raw_mean``, on
        the judge's scale) and the labels alone (``labels_mean``, ``labels_low``, ``labels_high``). Empty
        unless the benchmark is partly labelled.
        """
        out = []
        for e in self.entries:
            if e.estimate is None:
                continue
            for row in e.estimate.rows():
                out.append(
                    {
                        "entry": e.name,
                        "system": row["group"],
                        "n": row["n"],
                        "n_labelled": row["n_labelled"],
                        "method": row["method"],
                        "estimate": row["estimate"],
                        "low": row["low"],
                        "high": row["high"],
                        "raw_mean": row["judge_estimate"],
                        "labels_mean": row["human_estimate"],
                        "labels_low": row["human_low"],
                        "labels_high": row["human_high"],
                    }
                )
        return out

    def comparison_rows(self) -> list[dict[str, Any]]:
        """One row per entry compared with the first: the difference (``observed``, NaN when it has none), its
        interval (``low``, ``high``), ``p_value``, the ``test`` that gave it and why the permutation test was
        not valid (``test_reason``), ``n`` and the ``reason`` a difference is missing."""
        return [
            {
                "entry": e.name,
                "against": c.against,
                "measure": c.measure,
                "observed": c.observed,
                "low": c.ci_low,
                "high": c.ci_high,
                "p_value": c.p_value,
                "test": c.test,
                "test_reason": c.test_reason,
                "n": c.n,
                "reason": c.reason,
            }
            for e in self.entries
            if (c := e.comparison) is not None
        ]

    def to_pandas(
        self,
        table: Literal["judgments", "estimates", "comparisons"] = "judgments",
        *,
        folder: str | Path | None = None,
    ) -> Any:
        """A pandas DataFrame (needs the ``pandas`` extra): :meth:`rows` (``table="judgments"``, one row per
        entry, item and order), :meth:`estimate_rows` (``table="estimates"``, one row per entry and system) or
        :meth:`comparison_rows` (``table="comparisons"``, one row per entry compared with the first).

        ``folder``: the comparison's folder; the judgments are then read from its columns (``results.sqlite``,
        :class:`~mitigate.run._columns.Columns`) rather than built from the judgments held in this result.
        """
        if table == "estimates":
            return frame(self.estimate_rows(), list(ESTIMATE_COLUMNS))
        if table == "comparisons":
            return frame(self.comparison_rows(), list(COMPARISON_COLUMNS))
        if table != "judgments":
            raise ConfigError(f"expected table='judgments', 'estimates' or 'comparisons'; got {table!r}")
        if folder is not None:
            from mitigate.run import Columns

            with Columns(Path(folder) / "results.sqlite") as columns:
                return columns.to_pandas()
        return frame(self.rows())

    def entry(self, name: str) -> EntryResult:
        """The entry named ``name``; ConfigError listing the names otherwise."""
        for e in self.entries:
            if e.name == name:
                return e
        raise ConfigError(f"expected an entry name, one of {[e.name for e in self.entries]}; got {name!r}")
