"""Judgments as a file the next step of a pipeline can read (``mitigate judge --out``,
:func:`write_judgments`): one row per item, JSON lines or CSV (by the ``.csv`` extension), with the columns
:data:`COLUMNS`.

In CSV, lists and objects are JSON text in their cells, and a text cell that starts like a spreadsheet formula
gets a leading apostrophe, so opening the file runs nothing.
"""

from __future__ import annotations

import csv
import json
from collections.abc import Sequence
from pathlib import Path
from typing import IO, Any

from mitigate.data import Item, csv_cell
from mitigate.errors import ConfigError
from mitigate.judge import Judgment
from mitigate.measures import presented_to_text
from mitigate.paths import write_output
from mitigate.run import RunResult

NEEDS_HUMAN = "needs_human"


def judgment_row(
    judgment: Judgment, item: Item | None = None, criterion: str | None = None
) -> dict[str, Any]:
    """One judgment as a row (:data:`COLUMNS`); ``item`` adds its human label and gold preference."""
    crit = criterion or (next(iter(judgment.scores)) if len(judgment.scores) == 1 else None)
    score = judgment.scores.get(crit) if crit is not None else None
    return {
        "item_id": judgment.item_id,
        "criterion": crit,
        "score": score,
        "scores": dict(judgment.scores) if len(judgment.scores) > 1 else None,
        "verdict": presented_to_text(judgment.verdict, "original"),
        "human": item.human.get(crit) if item is not None and crit is not None else None,
        "gold": item.preference.get(crit) if item is not None and crit is not None else None,
        "samples": list(judgment.samples.get(crit, ())) if crit is not None else [],
        "ok": judgment.ok,
        "failures": [
            {"criterion": f.criterion, "sample": f.sample, "reason": f.reason, "raw": f.raw}
            for f in judgment.failures
        ],
        "raw": list(judgment.raw),
        "error": judgment.error,
        "flags": list(judgment.flags),
        "needs_human": NEEDS_HUMAN in judgment.flags,
        "prompt_tokens": judgment.usage.prompt_tokens,
        "completion_tokens": judgment.usage.completion_tokens,
        "cached_prompt_tokens": judgment.usage.cached_prompt_tokens,
        "calls": judgment.calls,
        "cached_calls": judgment.cached_calls,
        "cost_usd": judgment.cost_usd,
    }


COLUMNS: tuple[str, ...] = tuple(judgment_row(Judgment(item_id="")))
"""The columns of a judgments file, in order."""


def _cell(value: Any) -> Any:
    """A CSV cell: lists and objects as JSON text, None as empty, a text starting like a formula
    neutralised."""
    if isinstance(value, (list, dict)):
        return json.dumps(value, ensure_ascii=False)
    return "" if value is None else csv_cell(value)


class JudgmentsWriter:
    """Writes judgment rows to an open file as they come (a streamed run's file is never held whole): JSON
    lines, or CSV (a header first) with ``csv_format``."""

    def __init__(self, handle: IO[str], *, csv_format: bool = False, criterion: str | None = None) -> None:
        self.handle = handle
        self.criterion = criterion
        self.rows = 0
        self._csv = csv.DictWriter(handle, fieldnames=list(COLUMNS)) if csv_format else None
        if self._csv is not None:
            self._csv.writeheader()

    def write(self, judgment: Judgment, item: Item | None = None) -> None:
        """Write one judgment's row (``item`` adds its human label and gold preference)."""
        row = judgment_row(judgment, item, self.criterion)
        if self._csv is not None:
            self._csv.writerow({k: _cell(v) for k, v in row.items()})
        else:
            self.handle.write(json.dumps(row, ensure_ascii=False) + "\n")
        self.rows += 1


def is_csv(path: str | Path) -> bool:
    """Whether a judgments file is CSV (its name ends in ``.csv``) rather than JSON lines."""
    return Path(path).suffix.lower() == ".csv"


def check_out_path(path: str | Path) -> Path:
    """``path`` when a judgments file may be written there; a one-line ConfigError for a folder."""
    file = Path(path)
    if file.is_dir():
        raise ConfigError(f"expected --out to name a file (.jsonl or .csv); {file} is a folder")
    return file


def write_judgments(
    judgments: RunResult | Sequence[Judgment],
    path: str | Path,
    *,
    items: Sequence[Item] | None = None,
    criterion: str | None = None,
) -> Path:
    """Write one row per judgment to ``path`` (JSON lines; CSV when it ends in ``.csv``, written whole then
    renamed) and return the path; ``items`` (matched by id) add each item's human score and gold
    preference."""
    rows_in = judgments.judgments if isinstance(judgments, RunResult) else tuple(judgments)
    by_id = {it.id: it for it in items or ()}
    file = check_out_path(path)

    def fill(handle: IO[str]) -> None:
        writer = JudgmentsWriter(handle, csv_format=is_csv(file), criterion=criterion)
        for j in rows_in:
            writer.write(j, by_id.get(j.item_id))

    write_output(file, fill, "--out", newline="" if is_csv(file) else None)
    return file
