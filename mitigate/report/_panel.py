"""The report's "Panel members" section: each member's confusion matrix, estimated without gold and observed
against it.

Read from the ``member_confusion`` measure an entry carries (a panel of judges; see
:mod:`mitigate.measures._panel`): for every member, P(answer | true class) as unsupervised
Dawid-Skene estimates it from the members' votes alone, its balanced accuracy, and beside them
the balanced accuracy observed against the gold preferences. Entries that are no panel add
nothing.
"""

from __future__ import annotations

from typing import Any

from mitigate.report._results import CompareResult
from mitigate.report._tables import md_cell


def _fmt(x: Any) -> str:
    return "n/a" if not isinstance(x, int | float) else f"{x:.3f}"


def panel_members_section(result: CompareResult) -> list[str]:
    """Markdown lines of the section (empty when no entry is a panel with member answers)."""
    rows: list[str] = []
    for e in result.entries:
        m = e.measures.get("member-confusion")
        if m is None or not m.ok:
            continue
        estimated: dict[str, Any] = m.extra.get("estimated") or {}
        observed: dict[str, Any] = m.extra.get("observed") or {}
        for member, est in estimated.items():
            matrix = est.get("matrix") or {}
            cells = "; ".join(
                f"true {k}: " + ", ".join(f"{a} {_fmt(p)}" for a, p in row.items())
                for k, row in matrix.items()
            )
            rows.append(
                "| "
                + " | ".join(
                    md_cell(c)
                    for c in (
                        e.name,
                        member,
                        _fmt(est.get("balanced_accuracy")),
                        _fmt((observed.get(member) or {}).get("balanced_accuracy")),
                        cells,
                    )
                )
                + " |"
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
        "| entry | member | balanced acc. (estimated, no gold) | balanced acc. (observed) | P(answer "
        "given the true class) |",
        "|---|---|---:|---:|---|",
        *rows,
        "",
    ]
