"""Summarise a `mitigate compare` run folder into a JSON that holds no benchmark text.

`results.json` of a compare run carries the fitted specs, whose demos hold whole USS
dialogues from the shared data folder; those must not be committed. This keeps what
benchmarks/RESULTS.md cites: the command, the train split (size and source), per entry its
summary, the headline measures with intervals, the difference in Spearman from the first entry
with its interval and permutation p-value, whether and on what it was fitted, and the ids and
gold scores of the demos it shows.

Usage: python benchmarks/sgd_compare_summary.py RUN_FOLDER OUT_JSON [SEARCHED_SPEC_JSON]
"""

from __future__ import annotations

import json
import math
import sys
from pathlib import Path
from typing import Any

MEASURES = (
    "spearman_item",
    "kendall_item",
    "pearson_item",
    "scale_coverage",
    "score_entropy",
    "length_spearman",
)
"""The measures kept per entry (the others are undefined on USS: no systems, one item per dialogue)."""


def _demos(spec: Any) -> list[dict[str, Any]]:
    """Ids and gold scores of the demos in a fitted pipeline spec (no text)."""
    out: list[dict[str, Any]] = []
    if not isinstance(spec, dict):
        return out
    spec = spec.get("pipeline", spec)  # a 'mitigate search --out' file holds the pipeline under "pipeline"
    steps = spec.get("steps") if "steps" in spec else [spec]
    for step in steps:
        for demo in (step.get("params") or {}).get("demos_") or (step.get("params") or {}).get("demos") or []:
            item = demo.get("item", {})
            out.append(
                {
                    "step": step.get("name"),
                    "id": item.get("id"),
                    "gold": demo.get("score"),
                    "words": len(str(item.get("output", "")).split()),
                }
            )
    return out


def _measure(m: dict[str, Any] | None) -> dict[str, Any] | None:
    if m is None:
        return None
    return {k: m.get(k) for k in ("value", "ci_low", "ci_high", "n", "n_failed", "reason")}


def summarise(folder: Path, searched: Path | None = None) -> dict[str, Any]:
    """The text-free summary of ``folder/results.json``."""
    r = json.loads((folder / "results.json").read_text(encoding="utf-8"))
    settings = r["settings"]
    train = {k: v for k, v in (settings.get("train") or {}).items() if k != "ids"}
    entries = []
    for e in r["entries"]:
        summary = e["summary"]
        entries.append(
            {
                "name": e["name"],
                "kind": e["kind"],
                "summary": {
                    k: summary.get(k)
                    for k in ("items", "ok", "parse_failures", "errors", "calls", "cached_calls")
                },
                "measures": {name: _measure(e["measures"].get(name)) for name in MEASURES},
                "vs_first": e.get("comparison"),
                "fitted": e.get("fitted"),
                "histogram": e.get("histogram"),
                "demos": _demos(e.get("spec")),
            }
        )
    out: dict[str, Any] = {
        "script": "benchmarks/sgd_compare.sh",
        "command": settings.get("command"),
        "benchmark": r["benchmark"],
        "criterion": r["criterion"],
        "n_test_items": settings.get("n_items"),
        "train": train,
        "not_fitted": settings.get("not_fitted"),
        "n_boot": settings.get("n_boot"),
        "n_perm": settings.get("n_perm"),
        "seed": settings.get("seed"),
        "human_histogram": r.get("human_histogram"),
        "entries": entries,
    }
    if searched is not None and searched.is_file():
        spec = json.loads(searched.read_text(encoding="utf-8"))
        out["searched_spec_demos"] = _demos(spec)
        search = spec.get("search") or {}
        out["search"] = {
            k: search.get(k)
            for k in (
                "engine",
                "objective",
                "winner",
                "demo_ids",
                "dev",
                "test",
                "baseline_dev",
                "baseline_test",
                "test_gain",
                "budget",
                "calls_search",
                "stopped",
                "seed",
                "split",
            )
        }
    return out


def _finite(value: Any) -> Any:
    """``value`` with every NaN or infinity replaced by None (strict JSON)."""
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {k: _finite(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_finite(v) for v in value]
    return value


def main(argv: list[str]) -> None:
    """Write the summary of the run folder ``argv[0]`` to ``argv[1]``."""
    if len(argv) not in (2, 3):
        raise SystemExit(
            "usage: python benchmarks/sgd_compare_summary.py RUN_FOLDER OUT_JSON [SEARCHED_SPEC_JSON]"
        )
    searched = Path(argv[2]) if len(argv) == 3 else None
    data = _finite(summarise(Path(argv[0]), searched))
    Path(argv[1]).write_text(json.dumps(data, indent=1, allow_nan=False) + "\n", encoding="utf-8")
    print(f"wrote {argv[1]} ({len(data['entries'])} entries)")


if __name__ == "__main__":
    main(sys.argv[1:])
