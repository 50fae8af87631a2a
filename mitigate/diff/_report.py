"""What ``mitigate diff`` reports: each measure of both judges and their difference (:class:`DiffMeasure`),
the items that changed (:class:`ItemChange`), the slices (:class:`SliceRow`) and the gate's decision
(:class:`GateResult`: is B significantly worse on the gated measures, :func:`gate`), all in one
:class:`DiffReport`; and how it is written: text (:func:`render_diff`), JSON (:func:`as_json`), JUnit XML
(:func:`junit_xml`)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from typing import Any, Literal
from xml.etree import ElementTree as ET

from pydantic import BaseModel, ConfigDict, Field

from mitigate.errors import ConfigError
from mitigate.measures import Task
from mitigate.report import md_table

AGREEMENT = {"score": "spearman", "pairwise": "accuracy"}
"""What ``agreement`` in ``--fail-on`` names, by task."""


Outcome = Literal["pass", "fail", "inconclusive"]
"""A gated measure's decision: B shown no worse (beyond the margin), shown worse, or neither."""


class GateCheck(BaseModel):
    """One gated measure's decision: its level, raw and adjusted p, whether B is significantly worse, and the
    outcome (with a ``margin``: non-inferiority, its p and, when inconclusive, the items to decide it)."""

    model_config = ConfigDict(frozen=True, extra="forbid")
    measure: str
    criterion: str
    level: float
    p: float | None
    p_adjusted: float | None
    worse: bool
    line: str
    outcome: Outcome = "pass"
    margin: float | None = None
    p_margin: float | None = None
    items_needed: int | None = None


class GateResult(BaseModel):
    """The gate: every check, the correction used, the outcome (fail when any check fails, else inconclusive
    when any is, else pass) and the one-line reason when it does not pass."""

    model_config = ConfigDict(frozen=True, extra="forbid")
    checks: tuple[GateCheck, ...]
    correction: Literal["holm", "bonferroni", "none"] = "holm"
    failed: bool
    reason: str = ""
    outcome: Outcome = "pass"

    def check_of(self, m: DiffMeasure) -> GateCheck | None:
        """The check of the measure ``m``; None when it is not gated."""
        return next((c for c in self.checks if (c.measure, c.criterion) == (m.name, m.criterion)), None)


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
    missing: Literal["a", "b", "both"] | None = None
    """Whose value is undefined because its scores are constant (a judge that cannot rank), when one is."""
    margin: float | None = None
    """The non-inferiority margin this measure was gated with (``--margin``), if any."""
    p_margin: float | None = None
    """The bootstrap p that B - A lies at the margin's worse end or beyond (two-sided convention)."""

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
    measures = []
    for m in report.measures:
        row = m.model_dump(exclude={"test"})
        check = report.gate.check_of(m) if report.gate else None
        if check is not None:
            row |= {
                "gated": True,
                "level": check.level,
                "p_adjusted": check.p_adjusted,
                "worse": check.worse,
                "outcome": check.outcome,
                "items_needed": check.items_needed,
            }
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


def junit_xml(report: DiffReport) -> str:
    """The gate as JUnit XML: one testsuite, one testcase per gated measure, a ``failure`` where B is
    worse, ``skipped`` (type ``inconclusive``, with the reason) where the margin check could not decide."""
    if report.gate is None:
        raise ConfigError("expected a diff report with a gate decision (gate(report, ...)) for JUnit output")
    checks = report.gate.checks
    suite = ET.Element(
        "testsuite",
        name=f"mitigate diff: {report.a} -> {report.b}",
        tests=str(len(checks)),
        failures=str(sum(c.outcome == "fail" for c in checks)),
        errors="0",
        skipped=str(sum(c.outcome == "inconclusive" for c in checks)),
    )
    props = ET.SubElement(suite, "properties")
    for key, value in (
        ("a", report.a),
        ("b", report.b),
        ("items", report.n_items),
        ("resampled", f"{report.n_units} {report.unit}"),
        ("correction", report.gate.correction),
        ("outcome", report.gate.outcome),
    ):
        ET.SubElement(props, "property", name=key, value=str(value))
    for c in checks:
        case = ET.SubElement(
            suite, "testcase", classname=f"mitigate.diff.{c.criterion}", name=c.measure, time="0"
        )
        if c.outcome == "fail":
            ET.SubElement(case, "failure", message=c.line, type="regression").text = c.line
        elif c.outcome == "inconclusive":
            ET.SubElement(case, "skipped", message=c.line, type="inconclusive").text = c.line
        else:
            ET.SubElement(case, "system-out").text = c.line
    ET.indent(suite)
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(suite, encoding="unicode") + "\n"


def _n(v: float | str | None, digits: int = 3) -> str:
    if v is None:
        return "-"
    if isinstance(v, str):
        return v
    return f"{v:.{digits}f}" if abs(v - round(v)) > 1e-9 or digits == 3 else f"{v:g}"


def _p(v: float | None) -> str:
    return "-" if v is None else f"{v:.4f}" if v >= 0.0001 else "<0.0001"


def _delta(m: DiffMeasure) -> str:
    if m.delta is None:
        return "-"
    ci = f" [{m.low:+.3f}, {m.high:+.3f}]" if m.low is not None and m.high is not None else ""
    return f"{m.delta:+.3f}{ci}"


def _gate_mark(report: DiffReport, m: DiffMeasure) -> str:
    c = report.gate.check_of(m) if report.gate else None
    if c is None:
        return ""
    if c.p_adjusted is None:
        return "WORSE (constant)" if c.outcome == "fail" else "ok"
    adj = f"adj. p {_p(c.p_adjusted)}"
    if c.outcome == "fail":
        return f"WORSE ({adj})"
    if c.margin is None:
        return f"ok ({adj})"
    word = "no worse" if c.outcome == "pass" else "INCONCLUSIVE"
    return f"{word} (margin {c.margin:g}, p {_p(c.p_margin)}; {adj})"


def _slice_line(s: SliceRow) -> list[str]:
    return [
        s.kind,
        s.key,
        s.criterion,
        s.measure,
        str(s.n),
        _n(s.a),
        _n(s.b),
        "-" if s.delta is None else f"{s.delta:+.3f}",
        str(s.changed),
    ]


def render_diff(report: DiffReport, *, show: int = 10) -> str:
    """The report as text: what was compared, the measures with B − A, the gate, then where things changed."""
    crits = ", ".join(report.criteria)
    lines = [
        f"A = {report.a}    B = {report.b}",
        f"{report.n_items} items ({report.n_units} {report.unit} resampled), criteria: {crits}",
        "",
    ]
    rows = [
        [
            m.name,
            m.criterion,
            _n(m.a),
            _n(m.b),
            _delta(m),
            _p(m.p),
            str(m.n) + (f" (-{m.dropped})" if m.dropped else ""),
            m.better,
            _gate_mark(report, m) or m.reason or "",
        ]
        for m in report.measures
    ]
    lines += md_table(["measure", "criterion", "A", "B", "B - A [95% CI]", "p", "n", "better", "gate"], rows)
    first: dict[str, DiffMeasure] = {}  # each measure's first criterion explains it
    for m in report.measures:
        first.setdefault(m.name, m)
    lines += [
        "",
        *[f"- {m.name}: {m.how}" + (f" (p: {m.test} test)" if m.test else "") for m in first.values()],
    ]
    lines += [f"- {n}" for n in report.notes]
    if report.gate is not None:
        g = report.gate
        how = {"holm": "Holm's step-down", "bonferroni": "Bonferroni", "none": "no adjustment"}[g.correction]
        lines += [
            "",
            f"Gate ({len(g.checks)} gated measures, {how} over them): "
            + {
                "fail": "FAIL: " + g.reason,
                "inconclusive": "INCONCLUSIVE: " + g.reason,
                "pass": f"pass: {report.b} is not significantly worse than {report.a} on any gated measure"
                + (" and no worse beyond the margins" if any(c.margin is not None for c in g.checks) else ""),
            }[g.outcome],
        ]
        lines += [f"- {c.line}" for c in g.checks if c.outcome == "pass" and "does not rule out" in c.line]
    counts = Counter(c.change for c in report.changes)
    if report.changes or report.n_items:
        summary = ", ".join(f"{k} {v}" for k, v in sorted(counts.items())) or "none"
        lines += [
            "",
            f"Items that changed: {len(report.changes)} of {report.n_items * len(report.criteria)} "
            f"({summary})",
        ]
    if report.changes and show:
        rows = [
            [
                c.item_id,
                c.criterion,
                c.system or "-",
                _n(c.a, 2),
                _n(c.b, 2),
                "-" if c.move is None else f"{c.move:+g}",
                _n(c.human, 2),
                c.change,
            ]
            for c in report.changes[:show]
        ]
        lines += [
            "",
            *md_table(["item", "criterion", "system", "A", "B", "move", "human/gold", "change"], rows),
        ]
    for kind in ("criterion", "system", "length", "probe", "document"):
        part = [s for s in report.slices if s.kind == kind]
        if not part:
            continue
        total = len(part)
        if kind in ("system", "document"):  # possibly many: the largest drops first
            part = sorted(part, key=lambda s: (s.delta is None, s.delta if s.delta is not None else 0.0))[
                :show
            ]
        cut = f" ({len(part)} of {total}, the largest drop first)" if len(part) < total else ""
        lines += [
            "",
            f"By {kind}{cut}:",
            "",
            *md_table(
                ["slice", "key", "criterion", "measure", "n", "A", "B", "B - A", "changed"],
                [_slice_line(s) for s in part],
            ),
        ]
    return "\n".join(lines)
