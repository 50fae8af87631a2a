"""A small unlabelled benchmark with distinctive system names and a recorded judge whose scores are marked,
so a test can look for either in what the labelling server sends."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

SYSTEMS = ("SYSNAME-NORTH", "SYSNAME-SOUTH", "SYSNAME-EAST")
JUDGE = "JUDGENAME-SMALL"


def write_toy(
    tmp_path: Path, per_system: int = 20, pairwise: bool = False, labelled: int = 0
) -> tuple[Path, Path]:
    """A benchmark file (1-5 scale, or pairs; the first ``labelled`` items of each system labelled on
    quality) and a recorded-judgments file."""
    rng = np.random.default_rng(3)
    rows, answers = [], []
    for s, system in enumerate(SYSTEMS):
        for k in range(per_system):
            item_id = f"{system}-{k}"
            row = {
                "id": item_id,
                "system": system,
                "doc_id": f"doc{k}",
                "inputs": {"question": f"What is {k} plus {s}?"},
                "output": f"It is {k + s}, said the first text of item {k}.",
            }
            if pairwise:
                other = SYSTEMS[(s + 1) % len(SYSTEMS)]
                row |= {"system_b": other, "output_b": f"It is {k + s + 1}, said the second text."}
                verdict = ["first", "second", "tie"][int(rng.integers(3))]
                answers.append(
                    {"item_id": item_id, "judge": JUDGE, "criterion": "quality", "verdict": verdict}
                )
            else:
                score = float(np.clip(round(3 - s * 0.7 + rng.normal(scale=1.0)), 1, 5))
                answers.append({"item_id": item_id, "judge": JUDGE, "criterion": "quality", "score": score})
            if k < labelled:
                row["human"] = {"quality": float(1 + (k + s) % 5)}
            rows.append(row)
    bench = tmp_path / "bench.jsonl"
    header = {"name": "toy", "criteria": ["quality", "fluency"], "scale": [1, 5]}
    bench.write_text(json.dumps({"benchmark": header}) + "\n" + "".join(json.dumps(r) + "\n" for r in rows))
    recorded = tmp_path / "judged.jsonl"
    recorded.write_text("".join(json.dumps(a) + "\n" for a in answers))
    return bench, recorded
