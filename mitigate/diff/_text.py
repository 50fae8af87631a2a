"""The text ``mitigate diff`` prints: the measures table, the gate, the largest item changes and the
slices."""

from __future__ import annotations

from collections import Counter

from mitigate.diff._report import DiffMeasure, DiffReport, SliceRow
from mitigate.report import md_table


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
            return f"WORSE (adj. p {_p(c.p_adjusted)})" if c.worse else f"ok (adj. p {_p(c.p_adjusted)})"
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
            + (
                "FAIL: " + g.reason
                if g.failed
                else f"pass: {report.b} is not significantly worse than {report.a} on any gated measure"
            ),
        ]
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
