"""Three small comparisons (scores, pairwise, partly labelled) and every number compare reports on them.

``reported(...)`` runs them and returns their measures, per-system values, comparisons against the
first entry, human reference rows, histograms and corrected estimates as plain JSON (the run
summaries' timings left out). ``tests/fixtures/compare_numbers.json`` holds what the implementation
before the columnar, block-resampled measures reported (written by running this module with that
checkout first on ``PYTHONPATH``: ``python -m tests.compare_numbers OUT`` from its root; run as a file, the
tests/selectors folder would shadow the standard library's selectors); the test in
``tests/measures/test_resampling_blocks.py`` asserts the present code reports the same, to the last digit.
"""

from __future__ import annotations

import asyncio
import json
import re
import sys
import tempfile
from pathlib import Path
from typing import Any

from mitigate import Item, JudgePrompt, PromptJudge
from mitigate.data import Benchmark, hide_labels
from mitigate.harness import Entry, compare
from mitigate.lm import FakeLM, LMRequest
from mitigate.report._files import _strict

SCORE = "Rate the text from 1 to 5.\nText: {{output}}\nScore:"
PAIR = "Which response is better?\nResponse A: {{output}}\nResponse B: {{output_b}}\nAnswer A or B."


def _q(request: LMRequest) -> int:
    return int(re.search(r"q=(\d)", request.messages[-1].content).group(1))


def _score_bench(docs: int = 24, systems: int = 4) -> Benchmark:
    return Benchmark(
        name="toy",
        criteria=("q",),
        items=tuple(
            Item(
                id=f"S{s}/d{d}",
                system=f"S{s}",
                doc_id=f"d{d}",
                output=f"q={1 + (d * 7 + s * 3) % 5} d{d} s{s} " + "w " * ((d + 2 * s) % 7),
                human={"q": min(5.0, float(1 + (d * 3 + s * 2) % 5) + 0.5 * (s % 2))},
            )
            for d in range(docs)
            for s in range(systems)
        ),
    )


def _pair_bench(n: int = 40) -> Benchmark:
    return Benchmark(
        name="pw",
        criteria=("help",),
        items=tuple(
            Item(
                id=f"p{k}",
                output=f"answer q={k % 5} " + "long " * (k % 4),
                output_b=f"other q={(k * 3) % 5} " + "x " * (k % 3),
                system=f"M{k % 3}",
                system_b=f"M{(k + 1) % 3}",
                doc_id=f"d{k // 2}",
                preference={"help": "AB"[k % 2] if k % 7 else "tie"},
            )
            for k in range(n)
        ),
    )


def _pair_answer(request: LMRequest) -> str:
    text = request.messages[-1].content
    a = int(text.split("Response A: answer q=")[-1][:1]) if "Response A: answer" in text else -1
    b = int(text.split("Response B: answer q=")[-1][:1]) if "Response B: answer" in text else -1
    return "A" if a >= b else "B"


def _numbers(result: Any) -> dict[str, Any]:
    dump = result.model_dump(mode="json")
    out: dict[str, Any] = {"human": dump["human"], "human_histogram": dump["human_histogram"], "entries": {}}
    for e in dump["entries"]:
        out["entries"][e["name"]] = {
            k: e[k]
            for k in ("measures", "per_system", "histogram", "comparison", "estimate", "estimate_note")
        }
    return _strict(out)


async def _all(folder: Path) -> dict[str, Any]:
    score_judge = PromptJudge(
        JudgePrompt.from_template(SCORE, criterion="q"),
        FakeLM(lambda r: "nothing" if _q(r) == 3 and "s1 " in r.messages[-1].content else f"Score: {_q(r)}"),
    )
    other = PromptJudge(
        JudgePrompt.from_template(SCORE, criterion="q"), FakeLM(lambda r: f"Score: {6 - _q(r)}")
    )
    entries = [
        Entry.from_pipeline("plain", score_judge, "baseline"),
        Entry(name="reversed", judge=other),
        Entry.from_pipeline("hint", score_judge, "consistency-hint"),
    ]
    kw: dict[str, Any] = {"progress": False, "n_boot": 200, "n_perm": 300, "seed": 1}
    score = await compare(
        benchmark=_score_bench(), criterion="q", entries=entries, out_dir=folder / "score", **kw
    )
    pair_judge = PromptJudge(JudgePrompt.from_template(PAIR, criterion="help"), FakeLM(_pair_answer))
    pair = await compare(
        benchmark=_pair_bench(),
        criterion="help",
        entries=[
            Entry.from_pipeline("plain", pair_judge, "baseline"),
            Entry.from_pipeline("swap", pair_judge, "position-swap"),
        ],
        out_dir=folder / "pair",
        **kw,
    )
    hidden, _ = hide_labels(_score_bench(), "q", fraction=0.4, seed=3, group=lambda it: str(it.system))
    partly = await compare(
        benchmark=hidden, criterion="q", entries=entries[:2], out_dir=folder / "partly", **kw
    )
    return {"score": _numbers(score), "pairwise": _numbers(pair), "partly_labelled": _numbers(partly)}


def reported() -> dict[str, Any]:
    """Every number the three comparisons report, as JSON values."""
    with tempfile.TemporaryDirectory() as tmp:
        return json.loads(json.dumps(asyncio.run(_all(Path(tmp)))))


if __name__ == "__main__":
    Path(sys.argv[1]).write_text(json.dumps(reported(), indent=1, sort_keys=True) + "\n")
