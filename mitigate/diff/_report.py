"""What ``mitigate diff`` reports, as values: each measure of both judges and their difference
(:class:`DiffMeasure`), the items that changed (:class:`ItemChange`), the slices (:class:`SliceRow`), the
gate's decision (:class:`GateResult`), all in one :class:`DiffReport`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from mitigate.errors import ConfigError
from mitigate.measures import Task

AGREEMENT = {"score": "spearman", "pairwise": "accuracy"}
"""What ``agreement`` in ``--fail-on`` names, by task."""


class GateCheck(BaseModel):
    """One gated measure's decision: its level, raw and adjusted p, and whether B is significantly worse."""

    model_config = ConfigDict(frozen=True, extra="forbid")
    measure: str
    criterion: str
    level: float
    p: float | None
    p_adjusted: float | None
    worse: bool
    line: str


class GateResult(BaseModel):
    """The gate: every check, the correction used, and the one-line reason when B is worse."""

    model_config = ConfigDict(frozen=True, extra="forbid")
    checks: tuple[GateCheck, ...]
    correction: Literal["holm", "bonferroni", "none"] = "holm"
    failed: bool
    reason: str = ""


Better = Literal["higher", "lower", "none"]
Change = Literal["up", "down", "flipped", "failed in B", "recovered in B"]
SliceKind = Literal["system", "document", "length", "probe", "criterion"]


class DiffMeasure(BaseModel):
    """One measure of judges A and B on the same items: ``a``, ``b``, ``delta`` = b − a, its interval and p.

    ``better`` says which direction is better (``none``: informational, never gated); ``n`` the items (or
    documents) the measure used, ``dropped`` those left out and ``how`` why; ``low``/``high`` bound ``delta``
    (paired percentile bootstrap over ``unit``), ``p`` its two-sided p; ``reason`` says why a value is
    missing."""

    model_config = ConfigDict(frozen=True, extra="forbid")
    name: str
    criterion: str
    a: float | None
    b: float | None
    delta: float | None
    low: float | None = None
    high: float | None = None
    p: float | None = None
    n: int = 0
    dropped: int = 0
    better: Better = "higher"
    unit: str = "items"
    how: str = ""
    test: str = ""
    """The test that gave ``p`` (``paired bootstrap`` or ``paired sign-flip permutation``); "" without one."""
    reason: str | None = None

    @property
    def ok(self) -> bool:
        """True when the difference and its p are numbers."""
        return self.delta is not None and self.p is not None

    def worse_direction(self) -> bool:
        """True when B − A points the worse way (False for an informational measure or no value)."""
        if self.delta is None or self.better == "none":
            return False
        return self.delta < 0 if self.better == "higher" else self.delta > 0


class ItemChange(BaseModel):
    """One item the two judges answered differently: scores ``a``/``b`` (or verdicts), and what changed."""

    model_config = ConfigDict(frozen=True, extra="forbid")
    item_id: str
    criterion: str
    system: str | None = None
    doc_id: str | None = None
    a: float | str | None = None
    b: float | str | None = None
    move: float | None = None
    human: float | str | None = None
    change: Change


class SliceRow(BaseModel):
    """The comparison within one slice of the items (a system, a document, a length bucket, a probe): each
    judge's headline value (``measure`` names it), how many items moved or flipped, the mean score move B − A.
    A view for finding where a change hit, not a test (no p-value)."""

    model_config = ConfigDict(frozen=True, extra="forbid")
    kind: SliceKind
    key: str
    criterion: str
    measure: str
    n: int
    a: float | None = None
    b: float | None = None
    delta: float | None = None
    changed: int = 0
    mean_move: float | None = None


class DiffReport(BaseModel):
    """Everything :func:`diff_judgments` found for one criterion (several reports merge with
    :meth:`merged`)."""

    model_config = ConfigDict(frozen=True, extra="forbid")
    a: str
    b: str
    criteria: tuple[str, ...]
    task: Task
    n_items: int
    unit: str
    n_units: int
    measures: tuple[DiffMeasure, ...]
    changes: tuple[ItemChange, ...] = ()
    slices: tuple[SliceRow, ...] = ()
    notes: tuple[str, ...] = ()
    gate: GateResult | None = None
    extra: dict[str, Any] = Field(default_factory=dict)

    def measure(self, name: str, criterion: str | None = None) -> DiffMeasure:
        """The measure ``name`` (on ``criterion``, or the only criterion)."""
        for m in self.measures:
            if m.name == name and (criterion is None or m.criterion == criterion):
                return m
        raise KeyError(f"no measure {name!r}" + (f" on {criterion!r}" if criterion else ""))

    @classmethod
    def merged(cls, reports: Sequence[DiffReport]) -> DiffReport:
        """One report over several criteria (the same judges, items and task)."""
        if not reports:
            raise ConfigError("expected at least one diff report to merge; got none")
        first = reports[0]
        crits = tuple(c for r in reports for c in r.criteria)
        slices = [s for r in reports for s in r.slices]
        if len(reports) > 1:
            slices += [
                SliceRow(
                    kind="criterion",
                    key=m.criterion,
                    criterion=m.criterion,
                    measure=m.name,
                    n=m.n,
                    a=m.a,
                    b=m.b,
                    delta=m.delta,
                )
                for r in reports
                for m in r.measures
                if m.name == AGREEMENT[r.task]
            ]
        return first.model_copy(
            update={
                "criteria": crits,
                "measures": tuple(m for r in reports for m in r.measures),
                "changes": tuple(c for r in reports for c in r.changes),
                "slices": tuple(slices),
                "notes": tuple(dict.fromkeys(n for r in reports for n in r.notes)),
            }
        )


def as_json(report: DiffReport) -> dict[str, Any]:
    """The report as plain JSON: measures with ``a``, ``b``, ``delta``, ``low``, ``high``, ``p`` first."""
    gate_checks: Mapping[tuple[str, str], GateCheck] = (
        {(c.measure, c.criterion): c for c in report.gate.checks} if report.gate else {}
    )
    measures = []
    for m in report.measures:
        row = m.model_dump(exclude={"test"})
        check = gate_checks.get((m.name, m.criterion))
        if check is not None:
            row |= {"gated": True, "level": check.level, "p_adjusted": check.p_adjusted, "worse": check.worse}
        measures.append(row)
    return {
        "a": report.a,
        "b": report.b,
        "criteria": list(report.criteria),
        "task": report.task,
        "n_items": report.n_items,
        "resampled": {"unit": report.unit, "n": report.n_units},
        "measures": measures,
        "notes": list(report.notes),
        "gate": None if report.gate is None else report.gate.model_dump(mode="json"),
        "changes": [c.model_dump(mode="json") for c in report.changes],
        "slices": [s.model_dump(mode="json") for s in report.slices],
        **report.extra,
    }
