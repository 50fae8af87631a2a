"""The report's sections after its table of every measure: per system, per system pair, panel members,
corrected estimates, demos (each empty when the comparison has nothing for it)."""

from __future__ import annotations

import math
from typing import Any

from mitigate.estimators import METHOD_TITLES, MeanEstimate
from mitigate.report._plots import human_quality, pair_tables
from mitigate.report._reading import chosen_demos
from mitigate.report._results import CompareResult
from mitigate.report._tables import fmt, md_cell, md_table


def _fmt3(x: Any) -> str:
    return "n/a" if not isinstance(x, int | float) else f"{x:.3f}"


def panel_members_section(result: CompareResult) -> list[str]:
    """Markdown lines of the section (empty when no entry is a panel with member answers)."""
    rows: list[list[str]] = []
    for e in result.entries:
        m = e.measures.get("member-confusion")
        if m is None or not m.ok:
            continue
        estimated: dict[str, Any] = m.extra.get("estimated") or {}
        observed: dict[str, Any] = m.extra.get("observed") or {}
        for member, est in estimated.items():
            matrix = est.get("matrix") or {}
            cells = "; ".join(
                f"true {k}: " + ", ".join(f"{a} {_fmt3(p)}" for a, p in row.items())
                for k, row in matrix.items()
            )
            observed_accuracy = (observed.get(member) or {}).get("balanced_accuracy")
            rows.append(
                [e.name, member, _fmt3(est.get("balanced_accuracy")), _fmt3(observed_accuracy), cells]
            )
    if not rows:
        return []
    return [
        "",
        "## Panel members",
        "",
        "Each member's confusion matrix P(answer | true preference), estimated by unsupervised "
        "Dawid-Skene from the members' verdicts alone (Dawid and Skene 1979), its balanced accuracy (the "
        "mean over true classes of answering that class), and the balanced accuracy observed against the "
        "gold preferences. The estimate assumes the members are better than chance on the whole; where "
        "most of them are worse, it describes the flipped labelling (compare the two columns).",
        "",
        *md_table(
            [
                "entry",
                "member",
                "balanced acc. (estimated, no gold)",
                "balanced acc. (observed)",
                "P(answer given the true class)",
            ],
            rows,
            ["left", "left", "right", "right", "left"],
        ),
        "",
    ]


def per_system_section(result: CompareResult) -> list[str]:
    entries = [e for e in result.entries if e.per_system]
    if not entries:
        return []
    quality = human_quality(result)
    systems = sorted(quality, key=lambda k: quality[k])
    rows = [
        [name, fmt(quality[name])]
        + [
            "n/a" if m is None or not m.ok else f"{fmt(m.value)} (n={m.n})"
            for m in (e.per_system.get(name) for e in entries)
        ]
        for name in systems
    ]
    return [
        "## Per-system correlation P_i (Spearman with humans, per system)",
        "",
        "Systems ordered by human quality Q_i (mean human score); the meta-correlation M = corr(Q_i, P_i).",
        "",
        *md_table(
            ["system", "Q_i", *(e.name for e in entries)], rows, ["left", *["right"] * (len(entries) + 1)]
        ),
        "",
    ]


def per_pair_section(result: CompareResult) -> list[str]:
    """Position consistency and preference fairness per system pair, for pairwise entries that have them."""
    tables = pair_tables(result)
    if not tables:
        return []
    out = [
        "## Per system pair",
        "",
        "Position consistency (↑) and preference fairness (→ 0; < 0 favours the first position, > 0 the "
        "second) within each pair of systems, with 95% bootstrap intervals (Shi et al. 2024).",
        "",
    ]
    rows = []

    def cell(row: dict[str, Any] | None) -> str:
        if row is None or row.get("value") is None or not math.isfinite(row["value"]):
            return "n/a"
        ci = f" [{fmt(row['ci_low'])}, {fmt(row['ci_high'])}]" if row.get("ci_low") is not None else ""
        return fmt(row["value"]) + ci

    for name, t in tables.items():
        pc, pf = t.get("position-consistency", {}), t.get("preference-fairness", {})
        for pair in dict.fromkeys([*pc, *pf]):
            a, b = pc.get(pair), pf.get(pair)
            n = (a or b or {}).get("n", 0)
            split = f"{(b or a or {}).get('primacy', '')} / {(b or a or {}).get('recency', '')}"
            rows.append([name, pair, n, cell(a), cell(b), split])
    header = ["entry", "pair", "n", "position consistency", "preference fairness", "primacy / recency"]
    return [*out, *md_table(header, rows, ["left", "left", "right", "left", "left", "left"]), ""]


def _interval_text(e: MeanEstimate | None) -> str:
    return "n/a" if e is None else f"{e.estimate:.3f} [{e.low:.3f}, {e.high:.3f}]"


def estimates_section(result: CompareResult) -> list[str]:
    """Each entry's bias-corrected estimate per system beside the judge's raw mean and the labels alone."""
    method = result.settings.get("estimate")
    if not method:
        return []
    what = "win rate" if result.task == "pairwise" else "mean human score"
    out = [
        "",
        "## Corrected estimates per system",
        "",
        f"{result.settings.get('n_labelled')} of the {len(result.items)} items carry a label on "
        f"{result.criterion!r}. Each entry's estimate of each system's {what} is its judge's value on "
        f"every item corrected by the labelled items ({METHOD_TITLES.get(method, method)}, `{method}`; "
        "95% intervals of the mean over each system's items, as `mitigate estimate` computes them, "
        "docs/estimate.md). The judge's raw mean is not corrected (on the judge's own scale); the labels "
        "alone are the labelled items' mean.",
    ]
    for e in result.entries:
        est = e.estimate
        if est is None:
            out += ["", f"### {e.name}", "", f"No corrected estimate: {e.estimate_note or 'not computed'}."]
            continue
        rows = [
            [
                g.group,
                str(g.n),
                str(g.n_labelled),
                "n/a" if g.judge is None else f"{g.judge.estimate:.3f}",
                _interval_text(g.estimate),
                _interval_text(g.human),
            ]
            for g in est.groups
        ]
        out += [
            "",
            f"### {e.name}",
            "",
            *md_table(
                [
                    "system" if est.by != "none" else "group",
                    "items",
                    "labelled",
                    "raw mean (judge)",
                    f"{'not corrected' if est.method == 'judge' else 'corrected'}, {est.method} [95% CI]",
                    "labels alone [95% CI]",
                ],
                rows,
                ["left", "right", "right", "right", "right", "right"],
            ),
        ]
        notes = list(dict.fromkeys([*est.notes, *(n for g in est.groups for n in g.estimate.notes)]))
        if notes:
            out += ["", *(f"- {md_cell(n)}" for n in notes)]
    return out


def demos_section(result: CompareResult) -> list[str]:
    """The demonstrations each entry with a demo step shows (for a fitted entry: what fitting chose)."""
    blocks = [(e, lines) for e in result.entries if (lines := chosen_demos(e))]
    if not blocks:
        return []
    out = [
        "## Demos",
        "",
        "The demonstrations each entry's prompts show (for a fitted entry, the ones fitting chose "
        "from the training items; the texts are cut at 70 characters).",
        "",
    ]
    for e, lines in blocks:
        out += [
            f"### {e.name}",
            "",
            *(f"- {line}" if not line.startswith("  ") else line for line in lines),
            "",
        ]
    return out
