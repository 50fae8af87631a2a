"""The gate of ``mitigate diff``: which measures it checks (``--fail-on``), their non-inferiority margins
(``--margin``), and the decision for each: fail (B shown worse, Holm-adjusted), pass or inconclusive
(docs/diff.md, "The gate")."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Literal

from mitigate.diff._report import AGREEMENT, DiffMeasure, DiffReport, GateCheck, GateResult, Outcome
from mitigate.errors import ConfigError
from mitigate.measures import Task

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
    return None if not routes else max(n_items + 1, math.ceil(n_items * min(routes)))
