"""SummEval (Fabbri et al. 2021): CNN/DailyMail summaries rated 1-5 for coherence, consistency, fluency,
relevance, from two copies: ``summeval_llm_summeval`` (12 systems, expert and crowd ratings; the released
judge outputs are keyed to it) and ``summeval_bartscore`` (16 systems, expert means). Item ids are
``"<system>/<doc_id>"``."""

from __future__ import annotations

import functools
import re
from pathlib import Path
from typing import Any, Literal

from mitigate.constraints import Options, check_param
from mitigate.data._jsonl import mean, number, read_json_lines, require_files, resolve_root, row_error
from mitigate.data._schema import Benchmark, Item
from mitigate.errors import ConfigError
from mitigate.scale import Scale

CRITERIA = ("coherence", "consistency", "fluency", "relevance")
"""The four SummEval dimensions, in the order SummEval lists them."""

LLM_SUMMEVAL_SYSTEMS = ("M8", "M9", "M10", "M11", "M12", "M13", "M14", "M15", "M17", "M20", "M22", "M23")
"""The 12 abstractive systems of the LLM_summeval copy (and of the released judge outputs)."""

LLM_SUMMEVAL_DIR = "summeval_llm_summeval"
BARTSCORE_DIR = "summeval_bartscore"
BARTSCORE_FILE = "summeval_1600_expert_avg.jsonl"

SCALE = Scale(min=1, max=5)
"""The SummEval human label scale (integer ratings 1 to 5; means of several raters fall between)."""


def annotation_files() -> list[str]:
    """The per-system annotation files of the LLM_summeval copy, relative to the data folder."""
    return [
        f"{LLM_SUMMEVAL_DIR}/model_output_annotations/{s}_outputs_annotations.jsonl"
        for s in LLM_SUMMEVAL_SYSTEMS
    ]


def load_summeval(
    source: Literal["llm_summeval", "bartscore"] = "llm_summeval",
    annotators: Literal["expert", "turker"] = "expert",
    *,
    root: str | Path | None = None,
) -> Benchmark:
    """Load SummEval as a :class:`~mitigate.data.Benchmark` (the four dimensions, scale 1-5).

    ``source="llm_summeval"``: 1,200 items, ``human`` the mean of the 3 expert ratings (or with
    ``annotators="turker"`` the 5 crowd ones), both sets in ``meta``; ``"bartscore"``: 1,600 items, expert
    means only. ``reference`` is the first reference summary; DataError names each missing file.
    """
    check_param("load_summeval", "source", source, [Options("llm_summeval"), Options("bartscore")])
    check_param("load_summeval", "annotators", annotators, [Options("expert"), Options("turker")])
    base = str(resolve_root(root, "summeval"))
    if source == "llm_summeval":
        return _load_llm_summeval(base, annotators)
    if annotators != "expert":
        raise ConfigError(
            "The summeval_bartscore copy holds expert means only; expected annotators='expert'. "
            f"Got {annotators!r} instead (use source='llm_summeval' for crowd ratings)."
        )
    return _load_bartscore(base)


def _system_key(system: str) -> tuple[int, str]:
    match = re.fullmatch(r"M(\d+)", system)
    return (int(match.group(1)), system) if match else (10**6, system)


@functools.lru_cache(maxsize=4)
def _load_llm_summeval(root: str, annotators: str) -> Benchmark:
    paths = require_files(
        Path(root),
        annotation_files(),
        dataset="SummEval (LLM_summeval copy)",
        hint="They come from github.com/DAMO-NLP-SG/LLM_summeval, folder model_output_annotations/.",
    )
    items: list[Item] = []
    for system, path in zip(LLM_SUMMEVAL_SYSTEMS, paths, strict=True):
        for line, _, row in read_json_lines(path):
            items.append(_llm_summeval_item(row, system, path, line, annotators))
    return Benchmark(
        name="summeval" if annotators == "expert" else "summeval-turker",
        items=tuple(items),
        criteria=CRITERIA,
        scale=SCALE,
        description=(
            "SummEval, 12 abstractive systems x 100 CNN/DM articles (LLM_summeval copy); human = mean of "
            + ("3 expert ratings" if annotators == "expert" else "5 crowd-worker ratings")
        ),
    )


def _ratings(row: dict[str, Any], key: str, path: Path, line: int) -> dict[str, tuple[float, ...]]:
    bad = functools.partial(row_error, path, line)
    raters = row.get(key)
    if not isinstance(raters, list) or not raters:
        raise bad(f"expected '{key}' to be a non-empty list of rating objects; got {type(raters).__name__}")
    out: dict[str, list[float]] = {c: [] for c in CRITERIA}
    for index, rater in enumerate(raters):
        if not isinstance(rater, dict):
            raise bad(
                f"expected '{key}'[{index}] to be an object dimension -> rating; got {type(rater).__name__}"
            )
        for criterion in CRITERIA:
            if criterion not in rater:
                raise bad(f"expected a {criterion!r} rating in '{key}'[{index}]; got keys {sorted(rater)}")
            value = number(rater[criterion], path, line, f"'{key}'[{index}].{criterion}")
            if not SCALE.contains(value):
                raise bad(f"expected '{key}'[{index}].{criterion} within 1 to 5; got {value:g}")
            out[criterion].append(value)
    return {c: tuple(v) for c, v in out.items()}


def _text(row: dict[str, Any], key: str, path: Path, line: int) -> str:
    value = row.get(key)
    if not isinstance(value, str):
        got = "nothing" if value is None else type(value).__name__
        raise row_error(path, line, f"expected a string '{key}'; got {got}")
    return value


def _llm_summeval_item(row: Any, system: str, path: Path, line: int, annotators: str) -> Item:
    if not isinstance(row, dict):
        raise row_error(path, line, f"expected a JSON object; got {type(row).__name__}")
    doc_id = _text(row, "id", path, line)
    model_id = row.get("model_id")
    if model_id != system:
        raise row_error(path, line, f"expected model_id {system!r} (the file's system); got {model_id!r}")
    references = row.get("references")
    if not isinstance(references, list) or not references or not all(isinstance(r, str) for r in references):
        raise row_error(path, line, "expected 'references' to be a non-empty list of strings")
    expert = _ratings(row, "expert_annotations", path, line)
    turker = _ratings(row, "turker_annotations", path, line)
    chosen = expert if annotators == "expert" else turker
    return Item(
        id=f"{system}/{doc_id}",
        system=system,
        doc_id=doc_id,
        inputs={"source": _text(row, "text", path, line)},
        output=_text(row, "decoded", path, line),
        reference=references[0],
        human={c: mean(v) for c, v in chosen.items()},
        annotators=dict(chosen),
        meta={"expert": expert, "turker": turker, "references": tuple(references)},
    )


@functools.lru_cache(maxsize=2)
def _load_bartscore(root: str) -> Benchmark:
    (path,) = require_files(
        Path(root),
        [f"{BARTSCORE_DIR}/{BARTSCORE_FILE}"],
        dataset="SummEval (BARTScore copy, 16 systems)",
        hint="The file is the flattened SUM/SummEval/data.pkl of github.com/neulab/BARTScore (see its "
        "PROVENANCE.md).",
    )
    items: list[Item] = []
    seen: dict[str, int] = {}
    for line, _, row in read_json_lines(path):
        bad = functools.partial(row_error, path, line)
        if not isinstance(row, dict):
            raise bad(f"expected a JSON object; got {type(row).__name__}")
        doc_id = _text(row, "doc_id", path, line)
        system = _text(row, "model_id", path, line)
        refs = row.get("ref_summs")
        if not isinstance(refs, list) or not refs or not all(isinstance(r, str) for r in refs):
            raise bad("expected 'ref_summs' to be a non-empty list of strings")
        human: dict[str, float] = {}
        for criterion in CRITERIA:
            if criterion not in row:
                raise bad(f"expected a {criterion!r} score; got keys {sorted(row)}")
            value = number(row[criterion], path, line, criterion)
            if not SCALE.contains(value):
                raise bad(f"expected {criterion!r} within 1 to 5; got {value:g}")
            human[criterion] = value
        item_id = f"{system}/{doc_id}"
        if item_id in seen:
            raise bad(
                f"expected one row per (model_id, doc_id); got {item_id!r} again (first on line "
                f"{seen[item_id]})"
            )
        seen[item_id] = line
        items.append(
            Item(
                id=item_id,
                system=system,
                doc_id=doc_id,
                inputs={"source": _text(row, "src", path, line)},
                output=_text(row, "sys_summ", path, line),
                reference=refs[0],
                human=human,
                meta={"references": tuple(refs)},
            )
        )
    doc_order = {d: i for i, d in enumerate(dict.fromkeys(i.doc_id for i in items))}
    items.sort(key=lambda i: (_system_key(i.system or ""), doc_order[i.doc_id]))
    return Benchmark(
        name="summeval-bartscore",
        items=tuple(items),
        criteria=CRITERIA,
        scale=SCALE,
        description="SummEval, all 16 systems x 100 CNN/DM articles (BARTScore copy); human = mean of 3 "
        "expert ratings",
    )
