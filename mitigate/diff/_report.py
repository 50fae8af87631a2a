"""What ``mitigate diff`` reports: each measure of both judges and their difference (:class:`DiffMeasure`),
the items that changed (:class:`ItemChange`), the slices (:class:`SliceRow`) and the gate's decision
(:class:`GateResult`: is B significantly worse on the gated measures, :func:`gate`), all in one
:class:`DiffReport`; and how it is written: text (:func:`render_diff`), JSON (:func:`as_json`), JUnit XML
(:func:`junit_xml`)."""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Mapping, Sequence
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
    gate_checks: Mapping[tuple[str, str], GateCheck] = (
        {(c.measure, c.criterion): c for c in report.gate.checks} if report.gate else {}
    )
    measures = []
    for m in report.measures:
        row = m.model_dump(exclude={"test"})
        check = gate_checks.get((m.name, m.criterion))
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


MEASURE_NAMES: dict[Task, tuple[str, ...]] = {
    "score": (
        "spearman",
        "spearman-common",
        "spearman-document",
        "length-bias",
        "failure-rate",
        "mean-score",
    ),
    "pairwise": ("accuracy", "position-consistency", "length-lean", "failure-rate"),
}
"""The measures :func:`diff_judgments` computes, by task (the names ``--fail-on`` takes)."""

DEFAULT_FAIL_ON = "agreement,failure-rate"
"""What the gate checks by default: agreement with humans (Spearman, or accuracy for verdicts) and the failure
rate."""


def parse_fail_on(text: str, task: Task) -> list[tuple[str, float]]:
    """``--fail-on`` text (``"spearman:0.05,failure-rate"``; ``agreement`` names Spearman or accuracy; a level
    defaults to 0.05) as (measure, level) pairs; ConfigError for a bad one."""
    known = MEASURE_NAMES[task]
    out: list[tuple[str, float]] = []
    for part in [p.strip() for p in text.split(",") if p.strip()]:
        name, sep, level_text = part.partition(":")
        name = AGREEMENT[task] if name.strip() == "agreement" else name.strip()
        if name not in known:
            other: Task = "pairwise" if task == "score" else "score"
            hint = f" ({name!r} applies to {other} judges)" if name in MEASURE_NAMES[other] else ""
            raise ConfigError(
                f"expected --fail-on measures among {['agreement', *known]}; got {name!r}{hint}"
            )
        if name == "mean-score":
            raise ConfigError(
                "expected --fail-on measures with a worse direction; 'mean-score' is a shift, "
                "neither better nor worse"
            )
        level = 0.05
        if sep:
            try:
                level = float(level_text)
            except ValueError:
                raise ConfigError(
                    f"expected --fail-on levels as numbers, e.g. spearman:0.05; got {part!r}"
                ) from None
            if not 0 < level < 1:
                raise ConfigError(f"expected a --fail-on level strictly between 0 and 1; got {part!r}")
        if any(n == name for n, _ in out):
            raise ConfigError(f"expected each --fail-on measure once; got {name!r} twice")
        out.append((name, level))
    if not out:
        raise ConfigError(f"expected at least one --fail-on measure, e.g. {DEFAULT_FAIL_ON}; got {text!r}")
    return out


def parse_margin(text: str | None, task: Task, gated: Sequence[str]) -> dict[str, float]:
    """``--margin`` text (``"spearman:0.05,failure-rate:0.02"``; ``agreement`` as in ``--fail-on``) as measure
    -> margin (> 0, in the measure's units); ConfigError for a bad one or a measure not gated."""
    out: dict[str, float] = {}
    for part in [p.strip() for p in (text or "").split(",") if p.strip()]:
        name, sep, value = part.partition(":")
        name = AGREEMENT[task] if name.strip() == "agreement" else name.strip()
        try:
            margin = float(value) if sep else math.nan
        except ValueError:
            margin = math.nan
        if not (math.isfinite(margin) and margin > 0):
            raise ConfigError(
                f"expected --margin as MEASURE:SIZE with a size > 0, e.g. spearman:0.05; got {part!r}"
            )
        if name not in gated:
            raise ConfigError(
                f"expected --margin measures among the gated ones ({', '.join(gated)}; add it to --fail-on); "
                f"got {name!r}"
            )
        if name in out:
            raise ConfigError(f"expected each --margin measure once; got {name!r} twice")
        out[name] = margin
    return out


def _adjust(ps: Sequence[float], correction: str) -> list[float]:
    m = len(ps)
    if correction == "none" or m == 0:
        return list(ps)
    if correction == "bonferroni":
        return [min(1.0, p * m) for p in ps]
    order = sorted(range(m), key=lambda i: ps[i])
    adjusted = [0.0] * m
    running = 0.0
    for rank, i in enumerate(order):
        running = max(running, min(1.0, (m - rank) * ps[i]))
        adjusted[i] = running
    return adjusted


def _fmt(v: float | None, digits: int = 3) -> str:
    return "-" if v is None else f"{v:.{digits}f}"


def gate(
    report: DiffReport,
    fail_on: Sequence[tuple[str, float]],
    correction: Literal["holm", "bonferroni", "none"] = "holm",
) -> GateResult:
    """Decide, for each gated measure (every criterion of the report), whether B is worse than A:

    - **fail** when B − A points the worse way and the two-sided p, adjusted for the number of gated measures
      (Holm's step-down by default), is below the measure's level; also when B's scores are constant where
      a higher-is-better measure needs them to rank (B cannot rank: the worst regression);
    - with a margin ``M`` (the measure's ``margin``, :func:`diff_judgments`' ``margins``): **pass** when B − A
      is shown above ``-M`` (below ``+M`` for lower-is-better) at the level, **inconclusive** otherwise, with
      the items that would decide it; the pass needs every measure to pass, so no adjustment is needed for it
      (an intersection-union test);
    - without a margin: pass unless worse (today's gate), saying when the interval cannot rule out a drop.

    ConfigError when a gated measure has no value for another reason (and nothing fails)."""
    chosen: list[tuple[DiffMeasure, float]] = []
    unsupported: list[tuple[DiffMeasure, float]] = []
    for name, level in fail_on:
        for m in (m for m in report.measures if m.name == name):
            (chosen if m.ok else unsupported).append((m, level))
    if not chosen and not unsupported:
        raise ConfigError(f"expected --fail-on measures the report holds; got {[n for n, _ in fail_on]}")
    adjusted = _adjust([float(m.p or 0.0) for m, _ in chosen], correction)
    checks = [
        _decide(report, m, level, p_adj, correction)
        for (m, level), p_adj in zip(chosen, adjusted, strict=True)
    ]
    refused = []
    for m, level in unsupported:
        if m.better == "higher" and m.missing in ("a", "b"):
            worse = m.missing == "b"
            whose, other = (report.b, report.a) if worse else (report.a, report.b)
            line = (
                f"{report.b} is {'worse than' if worse else 'not worse than'} {report.a} on {m.name} "
                f"({m.criterion}): {whose}'s scores are constant, so it cannot rank the items "
                f"({other}: {_fmt(m.a if worse else m.b)})"
            )
            checks.append(
                GateCheck(
                    measure=m.name,
                    criterion=m.criterion,
                    level=level,
                    p=None,
                    p_adjusted=None,
                    worse=worse,
                    line=line,
                    outcome="fail" if worse else "pass",
                    margin=m.margin,
                )
            )
        else:
            refused.append(
                f"cannot gate on {m.name} ({m.criterion}): {m.reason or 'no p-value'}; expected a measure "
                "both judges' answers support (choose others with --fail-on)"
            )
    failing = [c.line for c in checks if c.outcome == "fail"]
    if refused and not failing:
        raise ConfigError(refused[0])
    unsure = [c.line for c in checks if c.outcome == "inconclusive"]
    outcome: Outcome = "fail" if failing else "inconclusive" if unsure else "pass"
    return GateResult(
        checks=tuple(checks),
        correction=correction,
        failed=bool(failing),
        reason="; ".join(failing or unsure),
        outcome=outcome,
    )


def _decide(report: DiffReport, m: DiffMeasure, level: float, p_adj: float, correction: str) -> GateCheck:
    """One measure's outcome (see :func:`gate`)."""
    worse = m.worse_direction() and p_adj < level
    shown = (
        f"{m.name} ({m.criterion}): {_fmt(m.a)} -> {_fmt(m.b)}, delta {_fmt(m.delta)} "
        f"[{_fmt(m.low)}, {_fmt(m.high)}]"
    )
    test = (
        f"p={_fmt(m.p, 4)}"
        + (f" ({correction}-adjusted {_fmt(p_adj, 4)})" if correction != "none" else "")
        + f" {'<' if p_adj < level else '>='} {level:g}"
    )
    sign = 1.0 if m.better == "higher" else -1.0
    needed = None
    outcome: Outcome = "pass"
    if worse:
        outcome = "fail"
        line = f"{report.b} is worse than {report.a} on {shown}, {test}"
    elif m.margin is not None:
        bound = -sign * m.margin
        beyond = f"{'below' if sign > 0 else 'above'} {bound:+g}"
        shown_no_worse = (
            sign * float(m.delta or 0.0) > -m.margin and m.p_margin is not None and m.p_margin < level
        )
        if shown_no_worse:
            line = (
                f"{report.b} is no worse than {report.a} beyond the margin {m.margin:g} on {shown}: "
                f"a difference {beyond} is ruled out (p={_fmt(m.p_margin, 4)} < {level:g}); worse: {test}"
            )
        else:
            outcome = "inconclusive"
            needed = items_to_decide(m, report.n_items)
            line = (
                f"{report.b} vs {report.a} is inconclusive on {shown}: not shown worse ({test}), but a "
                f"difference {beyond} (the margin) is not ruled out (p={_fmt(m.p_margin, 4)} >= {level:g})"
                + (
                    f"; about {needed} items (now {report.n_items}) would decide it if the difference and "
                    "its spread per item stay as measured"
                    if needed is not None
                    else ""
                )
            )
    else:
        line = f"{report.b} is not significantly worse than {report.a} on {shown}, {test}"
        worst_end = m.low if sign > 0 else m.high
        if worst_end is not None and sign * worst_end < 0:
            line += (
                f"; the interval does not rule out a {'drop' if sign > 0 else 'rise'} of "
                f"{abs(worst_end):.3f} "
                "(gate non-inferiority with --margin)"
            )
    return GateCheck(
        measure=m.name,
        criterion=m.criterion,
        level=level,
        p=m.p,
        p_adjusted=p_adj,
        worse=worse,
        line=line,
        outcome=outcome,
        margin=m.margin,
        p_margin=m.p_margin,
        items_needed=needed,
    )


def items_to_decide(m: DiffMeasure, n_items: int) -> int | None:
    """About how many items would make an inconclusive margin check pass or fail, if B − A and its spread per
    item stayed as measured (an interval's half-width shrinks as 1/sqrt(items)); None when neither can be
    reached (the difference sits at the margin or at 0)."""
    if m.margin is None or m.delta is None or m.low is None or m.high is None:
        return None
    sign = 1.0 if m.better == "higher" else -1.0
    d = sign * m.delta  # > 0: B better
    worse_half, better_half = (
        (m.delta - m.low, m.high - m.delta) if sign > 0 else (m.high - m.delta, m.delta - m.low)
    )
    routes = []
    if d + m.margin > 0 and worse_half > 0:
        routes.append((worse_half / (d + m.margin)) ** 2)
    if d < 0 and better_half > 0:
        routes.append((better_half / -d) ** 2)
    if not routes:
        return None
    return max(n_items + 1, math.ceil(n_items * min(routes)))


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
    if v is None:
        return "-"
    return f"{v:.4f}" if v >= 0.0001 else "<0.0001"


def _delta(m: DiffMeasure) -> str:
    if m.delta is None:
        return "-"
    ci = f" [{m.low:+.3f}, {m.high:+.3f}]" if m.low is not None and m.high is not None else ""
    return f"{m.delta:+.3f}{ci}"


def _gate_mark(report: DiffReport, m: DiffMeasure) -> str:
    if report.gate is None:
        return ""
    for c in report.gate.checks:
        if c.measure == m.name and c.criterion == m.criterion:
            if c.p_adjusted is None:
                return "WORSE (constant)" if c.outcome == "fail" else "ok"
            adj = f"adj. p {_p(c.p_adjusted)}"
            if c.outcome == "fail":
                return f"WORSE ({adj})"
            if c.margin is None:
                return f"ok ({adj})"
            word = "no worse" if c.outcome == "pass" else "INCONCLUSIVE"
            return f"{word} (margin {c.margin:g}, p {_p(c.p_margin)}; {adj})"
    return ""


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
    rows = []
    for m in report.measures:
        value_a, value_b = _n(m.a), _n(m.b)
        note = m.reason or ""
        rows.append(
            [
                m.name,
                m.criterion,
                value_a,
                value_b,
                _delta(m),
                _p(m.p),
                str(m.n) + (f" (-{m.dropped})" if m.dropped else ""),
                m.better,
                _gate_mark(report, m) or note,
            ]
        )
    lines += md_table(["measure", "criterion", "A", "B", "B - A [95% CI]", "p", "n", "better", "gate"], rows)
    lines += [
        "",
        *[
            f"- {m.name}: {m.how}" + (f" (p: {m.test} test)" if m.test else "")
            for m in _first_of_each(report.measures)
        ],
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
        cut = f" (the {len(part)} largest drops of {total})" if len(part) < total else ""
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


def _first_of_each(measures: tuple[DiffMeasure, ...]) -> list[DiffMeasure]:
    seen: dict[str, DiffMeasure] = {}
    for m in measures:
        seen.setdefault(m.name, m)
    return list(seen.values())
