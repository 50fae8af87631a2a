"""TMU-GFM (Yoshimura et al. 2020): grammatical-error-correction outputs rated by 5 annotators, 0-4, one item
per CSV row (``id`` the zero-padded row number, ``inputs["source"]`` the learner sentence, ``doc_id``
numbering the source sentences; criteria grammar, fluency, meaning).

A 0 is the guideline's "other" category: as the dataset's ``ave_*`` columns, ``human`` averages the non-zero
ratings and ``annotators`` holds None for a 0 (raw ratings in ``meta["raw"]``); ``zero_as_missing=False``
averages them in.
"""

from __future__ import annotations

import csv
import functools
import io
from pathlib import Path
from typing import Any

from mitigate.data._jsonl import int_ratings, mean, read_text, require_files, resolve_root, row_error
from mitigate.data._schema import Benchmark, Item
from mitigate.scale import Scale

GFM_FILE = "tmu_gfm/tmu-gfm-dataset.csv"
COLUMNS = {"grammar": ("grammer", "ave_g"), "fluency": ("fluency", "ave_f"), "meaning": ("meaning", "ave_m")}
"""Criterion -> (ratings column, average column); the CSV spells grammar "grammer"."""

CRITERIA = tuple(COLUMNS)
SCALE = Scale(min=0, max=4)
"""The TMU-GFM rating scale as released (0-4; 0 is the "other" category, see the module docstring)."""


def load_tmu_gfm(*, zero_as_missing: bool = True, root: str | Path | None = None) -> Benchmark:
    """Load TMU-GFM (4,221 items, criteria grammar/fluency/meaning, scale 0-4); see the module docstring."""
    return _load(str(resolve_root(root, "tmu-gfm")), zero_as_missing)


@functools.lru_cache(maxsize=2)
def _load(root: str, zero_as_missing: bool) -> Benchmark:
    (path,) = require_files(
        Path(root),
        [GFM_FILE],
        dataset="TMU-GFM",
        hint="It comes from github.com/tmu-nlp/TMU-GFM-Dataset (tmu-gfm-dataset.csv).",
    )
    items: list[Item] = []
    sources: dict[str, int] = {}
    with io.StringIO(read_text(path, translate_newlines=False), newline="") as handle:
        reader = csv.DictReader(handle)
        needed = ["source", "output", "system", *(c for c, _ in COLUMNS.values())]
        missing = [c for c in needed if c not in (reader.fieldnames or [])]
        if missing:
            raise row_error(
                path, 1, f"expected header columns {needed}; missing {missing} (got {reader.fieldnames})"
            )
        for index, row in enumerate(reader):
            line = reader.line_num
            if None in row or any(row.get(c) is None for c in needed):
                raise row_error(
                    path,
                    line,
                    f"expected {len(reader.fieldnames or [])} comma-separated columns; got a row "
                    "of another length",
                )
            raw: dict[str, tuple[int, ...]] = {}
            human: dict[str, float] = {}
            annotators: dict[str, tuple[float | None, ...]] = {}
            for criterion, (column, _average) in COLUMNS.items():
                ratings = int_ratings(row[column], 0, 4, f"in column {column!r}", path, line)
                kept = [float(r) for r in ratings if r != 0 or not zero_as_missing]
                if not kept:
                    raise row_error(
                        path, line, f"expected at least one non-zero {column!r} rating; got {row[column]!r}"
                    )
                raw[criterion] = ratings
                human[criterion] = mean(kept)
                annotators[criterion] = tuple(
                    None if (r == 0 and zero_as_missing) else float(r) for r in ratings
                )
            source = row["source"]
            doc = sources.setdefault(source, len(sources))
            systems = tuple(s.strip() for s in row["system"].split(",") if s.strip())
            meta: dict[str, Any] = {"systems": systems, "raw": raw, "line": line}
            items.append(
                Item(
                    id=f"{index:04d}",
                    system=row["system"],
                    doc_id=f"src{doc}",
                    inputs={"source": source},
                    output=row["output"],
                    human=human,
                    annotators=annotators,
                    meta=meta,
                )
            )
    return Benchmark(
        name="tmu-gfm",
        items=tuple(items),
        criteria=CRITERIA,
        scale=SCALE,
        description="TMU-GFM GEC outputs, 5 annotators; human = mean rating per criterion"
        + (" with 0 ('other') left out, as the dataset's ave_* columns" if zero_as_missing else ""),
    )
