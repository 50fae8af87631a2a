"""The diff's gate: is judge B significantly worse than judge A on the gated measures (:func:`gate`), the
``--fail-on`` text (:func:`parse_fail_on`), and the decision as JUnit XML (:func:`junit_xml`)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal
from xml.etree import ElementTree as ET

from mitigate.diff._report import AGREEMENT, DiffReport, GateCheck, GateResult
from mitigate.errors import ConfigError
from mitigate.measures import Task

MEASURE_NAMES: dict[Task, tuple[str, ...]] = {
    "score": ("spearman", "spearman-document", "length-bias", "failure-rate", "mean-score"),
    "pairwise": ("accuracy", "position-consistency", "length-lean", "failure-rate"),
}
"""The measures :func:`diff_judgments` computes, by task (the names ``--fail-on`` takes)."""

DEFAULT_FAIL_ON = "agreement,failure-rate"
"""What the gate checks by default: agreement with humans (Spearman, or accuracy for verdicts) and the failure
rate."""


def parse_fail_on(text: str, task: Task) -> list[tuple[str, float]]:
    """``--fail-on`` text (``"spearman:0.05,failure-rate"``) as (measure, level) pairs; ConfigError for a bad
    one.

    ``agreement`` names Spearman (scores) or accuracy (verdicts); a level defaults to 0.05.
    """
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
    """Decide whether B is significantly worse than A on the gated measures (every criterion of the report):
    B − A points the worse way and the two-sided p, adjusted for the number of gated measures (Holm's
    step-down by default), is below the measure's level. ConfigError when a gated measure has no value."""
    chosen = []
    for name, level in fail_on:
        found = [m for m in report.measures if m.name == name]
        for m in found:
            if not m.ok:
                raise ConfigError(
                    f"cannot gate on {name} ({m.criterion}): {m.reason or 'no p-value'}; "
                    "expected a measure both judges' answers support (choose others "
                    "with --fail-on)"
                )
            chosen.append((m, level))
    if not chosen:
        raise ConfigError(f"expected --fail-on measures the report holds; got {[n for n, _ in fail_on]}")
    adjusted = _adjust([float(m.p) for m, _ in chosen], correction)  # type: ignore[arg-type]
    checks = []
    for (m, level), p_adj in zip(chosen, adjusted, strict=True):
        worse = m.worse_direction() and p_adj < level
        line = (
            f"{report.b} is {'worse' if worse else 'not significantly worse'} than {report.a} on "
            f"{m.name} ({m.criterion}): {_fmt(m.a)} -> {_fmt(m.b)}, delta {_fmt(m.delta)} "
            f"[{_fmt(m.low)}, {_fmt(m.high)}], p={_fmt(m.p, 4)}"
            + (f" ({correction}-adjusted {_fmt(p_adj, 4)})" if correction != "none" else "")
            + f" {'<' if p_adj < level else '>='} {level:g}"
        )
        checks.append(
            GateCheck(
                measure=m.name,
                criterion=m.criterion,
                level=level,
                p=m.p,
                p_adjusted=p_adj,
                worse=worse,
                line=line,
            )
        )
    failing = [c.line for c in checks if c.worse]
    return GateResult(
        checks=tuple(checks), correction=correction, failed=bool(failing), reason="; ".join(failing)
    )


def junit_xml(report: DiffReport) -> str:
    """The gate as JUnit XML: one testsuite, one testcase per gated measure, a ``failure`` where B is
    worse."""
    if report.gate is None:
        raise ConfigError("expected a diff report with a gate decision (gate(report, ...)) for JUnit output")
    checks = report.gate.checks
    suite = ET.Element(
        "testsuite",
        name=f"mitigate diff: {report.a} -> {report.b}",
        tests=str(len(checks)),
        failures=str(sum(c.worse for c in checks)),
        errors="0",
        skipped="0",
    )
    props = ET.SubElement(suite, "properties")
    for key, value in (
        ("a", report.a),
        ("b", report.b),
        ("items", report.n_items),
        ("resampled", f"{report.n_units} {report.unit}"),
        ("correction", report.gate.correction),
    ):
        ET.SubElement(props, "property", name=key, value=str(value))
    for c in checks:
        case = ET.SubElement(
            suite, "testcase", classname=f"mitigate.diff.{c.criterion}", name=c.measure, time="0"
        )
        if c.worse:
            ET.SubElement(case, "failure", message=c.line, type="regression").text = c.line
        else:
            ET.SubElement(case, "system-out").text = c.line
    ET.indent(suite)
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(suite, encoding="unicode") + "\n"
