"""WebNLG+ 2020 (English RDF-to-text) human evaluation: 5 criteria on a 0-100 slider, per rater (under
``webnlg2020_human_eval/``: the rated outputs, each submission's ratings and texts, the input triples as HTML
tables).

One item per (submission, sample id): id ``"<submission>/<sample_id>"``, ``system`` the submission, ``doc_id``
the sample id, ``inputs["triples"]`` one ``subject | predicate | object`` per line, ``output`` the system text
(one is genuinely empty), ``human`` the mean over raters and ``annotators`` the raters' scores (rater ids in
``meta["raters"]``); criteria snake-cased. The 178 rows of ``WebNLG-2020-reference`` have no text in the data
folder: left out by default (2,847 items); ``include_reference=True`` keeps them with ``output=""`` and
``meta["output_missing"]=True``, for label statistics only.
"""

from __future__ import annotations

import functools
import html
import re
from pathlib import Path
from typing import Any

from mitigate.data._jsonl import (
    file_error,
    is_number,
    mean,
    read_json,
    read_text,
    require_files,
    resolve_root,
    row_error,
)
from mitigate.data._schema import Benchmark, Item
from mitigate.scale import Scale

WEBNLG_DIR = "webnlg2020_human_eval"
RESULTS = "evaluation/human-evaluation/results/en"
AGGREGATE = f"{RESULTS}/english_humeval_data_all_teams.json"
TABLES = "evaluation/human-evaluation/amt-scripts/data/en/tables/tables_xml.json"
REFERENCE_SUBMISSION = "WebNLG-2020-reference"

CRITERIA_MAP = {
    "Correctness": "correctness",
    "DataCoverage": "data_coverage",
    "Fluency": "fluency",
    "Relevance": "relevance",
    "TextStructure": "text_structure",
}
"""Criterion name in the files -> criterion name in the benchmark."""

CRITERIA = tuple(CRITERIA_MAP.values())
SCALE = Scale(min=0, max=100)
"""The WebNLG 2020 human-evaluation slider (0-100)."""


def load_webnlg(*, include_reference: bool = False, root: str | Path | None = None) -> Benchmark:
    """Load the English WebNLG+ 2020 human evaluation (see the module docstring for the item layout)."""
    return _load(str(resolve_root(root, "webnlg")), include_reference)


_CELL = re.compile(r"<td[^>]*>(.*?)</td>", re.S)
_ROW = re.compile(r"<tr>(.*?)</tr>", re.S)


def triples_text(table_html: str) -> str:
    """The triples of one HTML table as text, one ``subject | predicate | object`` per line."""
    lines = []
    for row in _ROW.findall(table_html):
        cells = [html.unescape(re.sub(r"<[^>]+>", "", c)).strip() for c in _CELL.findall(row)]
        if cells:
            lines.append(" | ".join(cells))
    return "\n".join(lines)


@functools.lru_cache(maxsize=4)
def _load(root: str, include_reference: bool) -> Benchmark:
    base = Path(root) / WEBNLG_DIR
    hint = "They come from github.com/WebNLG/challenge-2020 (see webnlg2020_human_eval/PROVENANCE.md)."
    aggregate_path, tables_path = require_files(
        Path(root),
        [f"{WEBNLG_DIR}/{AGGREGATE}", f"{WEBNLG_DIR}/{TABLES}"],
        dataset="WebNLG 2020 human evaluation",
        hint=hint,
    )
    rows = read_json(aggregate_path)
    if not isinstance(rows, list):
        raise file_error(aggregate_path, f"expected a JSON list of rated outputs; got {type(rows).__name__}")
    tables = read_json(tables_path)
    if not isinstance(tables, dict):
        raise file_error(
            tables_path, f"expected a JSON object sample id -> HTML table; got {type(tables).__name__}"
        )
    submissions = list(dict.fromkeys(str(r.get("submission_id")) for r in rows if isinstance(r, dict)))
    needed = [f"{WEBNLG_DIR}/{RESULTS}/{s}/primary.json" for s in submissions]
    needed += [
        f"{WEBNLG_DIR}/submissions/rdf2text/en/{s}/primary.en"
        for s in submissions
        if s != REFERENCE_SUBMISSION
    ]
    require_files(Path(root), needed, dataset="WebNLG 2020 human evaluation", hint=hint)
    ratings = {s: read_json(base / RESULTS / s / "primary.json") for s in submissions}
    outputs = {
        s: read_text(base / "submissions/rdf2text/en" / s / "primary.en").split("\n")
        for s in submissions
        if s != REFERENCE_SUBMISSION
    }
    items: list[Item] = []
    for index, row in enumerate(rows):
        where = f"{aggregate_path} entry {index}"
        if not isinstance(row, dict) or "submission_id" not in row or "sample_id" not in row:
            raise file_error(
                aggregate_path,
                f"expected an object with submission_id and sample_id; got {str(row)[:80]}",
                where,
            )
        submission, sample = str(row["submission_id"]), str(row["sample_id"])
        if submission == REFERENCE_SUBMISSION and not include_reference:
            continue
        raters = ratings[submission].get(sample)
        rating_path = base / RESULTS / submission / "primary.json"
        if not isinstance(raters, dict) or not raters:
            raise file_error(
                rating_path, f"expected ratings for sample {sample!r} (listed in {where}); got {raters!r}"
            )
        per_criterion: dict[str, list[float]] = {c: [] for c in CRITERIA}
        for worker, scores in raters.items():
            if not isinstance(scores, dict):
                raise file_error(
                    rating_path, f"expected an object of scores for rater {worker!r} on sample {sample!r}"
                )
            for source_name, criterion in CRITERIA_MAP.items():
                value = scores.get(source_name)
                if not is_number(value) or not SCALE.contains(value):
                    got = f"{value!r}" if source_name in scores else f"no such key (keys {sorted(scores)})"
                    rated = f"{source_name} from {worker!r} on sample {sample!r}"
                    raise file_error(rating_path, f"expected a number 0-100 for {rated}; got {got}")
                per_criterion[criterion].append(float(value))
        human = {c: mean(v) for c, v in per_criterion.items()}
        for source_name, criterion in CRITERIA_MAP.items():
            listed = row.get(source_name)
            if listed is not None and abs(float(listed) - human[criterion]) > 1e-6:
                raise file_error(
                    aggregate_path,
                    f"expected the listed {source_name} mean to equal the raters' mean in {rating_path}; got "
                    f"{listed} vs {human[criterion]:.6f} for sample {sample!r}",
                    where,
                )
        if sample not in tables:
            raise file_error(tables_path, f"expected an input table for sample {sample!r}; got none")
        meta: dict[str, Any] = {
            "raters": tuple(raters),
            "size": int(row.get("size", 0)),
            "domain": row.get("domain"),
            "category": row.get("category"),
        }
        if submission == REFERENCE_SUBMISSION:
            output = ""
            meta["output_missing"] = True
        else:
            lines = outputs[submission]
            output_path = base / "submissions/rdf2text/en" / submission / "primary.en"
            if not sample.isdigit() or not 1 <= int(sample) <= len(lines):
                raise row_error(
                    output_path,
                    int(sample) if sample.isdigit() else 0,
                    f"expected an output line for test id {sample} (file has {len(lines)} lines)",
                )
            output = lines[int(sample) - 1].rstrip("\r")
        items.append(
            Item(
                id=f"{submission}/{sample}",
                system=submission,
                doc_id=sample,
                inputs={"triples": triples_text(tables[sample])},
                output=output,
                human=human,
                annotators={c: tuple(v) for c, v in per_criterion.items()},
                meta=meta,
            )
        )
    return Benchmark(
        name="webnlg" + ("-with-reference" if include_reference else ""),
        items=tuple(items),
        criteria=CRITERIA,
        scale=SCALE,
        description="WebNLG+ 2020 English RDF-to-text human evaluation; human = mean over raters (0-100)",
    )
