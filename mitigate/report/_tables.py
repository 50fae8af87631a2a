"""Markdown tables that cannot mislead: every cell escaped (:func:`md_table`, read back by :func:`split_row`),
bold only for a real best (:func:`best_indices`), numbers shown one way (:func:`fmt`)."""

from __future__ import annotations

import math
import re
from collections.abc import Sequence

_DIRECTIONS = ("higher", "lower", "zero")


def md_escape(text: str) -> str:
    """``text`` with the characters that start HTML (``&`` and ``<``) written as entities, so a name such as
    ``<img src=x onerror=...>`` shows as text in a markdown viewer, never as markup (the HTML report reads the
    entities back)."""
    return text.replace("&", "&amp;").replace("<", "&lt;")


def md_cell(text: object) -> str:
    """``text`` as one markdown table cell: ``|`` escaped, line breaks as spaces, no outer blanks."""
    s = str(text).replace("\r\n", "\n").replace("\r", "\n").replace("\n", " ")
    return s.replace("\\|", "|").replace("|", "\\|").strip()


def md_table(
    header: Sequence[object], rows: Sequence[Sequence[object]], align: Sequence[str] | None = None
) -> list[str]:
    """The lines of a markdown table; ``align`` per column is "left" (default) or "right".

    Every row must have as many cells as the header (ValueError otherwise): a short row
    would shift its values under the wrong columns.
    """
    width = len(header)
    aligns = list(align) if align is not None else ["left"] * width
    if len(aligns) != width:
        raise ValueError(f"expected {width} alignments, one per column; got {len(aligns)}")
    out = [
        "| " + " | ".join(md_cell(h) for h in header) + " |",
        "|" + "|".join("---:" if a == "right" else "---" for a in aligns) + "|",
    ]
    for i, row in enumerate(rows):
        if len(row) != width:
            raise ValueError(f"expected {width} cells in row {i} (one per column); got {len(row)}")
        out.append("| " + " | ".join(md_cell(c) for c in row) + " |")
    return out


def split_row(line: str) -> list[str]:
    """The cells of one markdown table row (``| a | b \\| c |`` -> ``["a", "b | c"]``), unescaped and
    stripped."""
    body = line.strip()
    if body.startswith("|"):
        body = body[1:]
    if body.endswith("|") and not body.endswith("\\|"):
        body = body[:-1]
    return [cell.replace("\\|", "|").strip() for cell in re.split(r"(?<!\\)\|", body)]


def best_indices(values: Sequence[float | None], direction: str, digits: int = 3) -> set[int]:
    """Indices of the best values of a column, or none when bold would say nothing true.

    Values are compared as shown (rounded to ``digits``); undefined values (None, NaN) never
    count. Empty when fewer than two distinct values are defined, or when the best value is
    also the worst (e.g. -0.5 and +0.5 on a "closer to 0" column).
    """
    if direction not in _DIRECTIONS:
        raise ValueError(f"expected a direction in {_DIRECTIONS}; got {direction!r}")
    finite = [
        (i, round(float(v), digits))
        for i, v in enumerate(values)
        if v is not None and math.isfinite(float(v))
    ]
    if len({v for _, v in finite}) < 2:
        return set()
    key = {"higher": lambda v: -v, "lower": lambda v: v, "zero": abs}[direction]
    keys = [(i, round(key(v), digits)) for i, v in finite]
    best, worst = min(k for _, k in keys), max(k for _, k in keys)
    return set() if best == worst else {i for i, k in keys if k == best}


def fmt(v: float | None, digits: int = 3) -> str:
    """``v`` as the reports show it: 3 decimals, whole numbers from 10 up, "n/a" when undefined."""
    if v is None or not math.isfinite(v):
        return "n/a"
    return f"{v:.0f}" if abs(v) >= 100 or float(v).is_integer() and abs(v) >= 10 else f"{v:.{digits}f}"
