"""Does the Ray transform (:class:`mitigate.run.JudgeBatches`) hold memory across batches? It is called in
this process (no Ray) on ``--batches`` batches of 256 items against the stub server, after 20 batches of
warm-up; prints the peak RSS before and after and tracemalloc's largest growths over those batches.

    python benchmarks/bench_ray_transform_memory.py [--batches 200]
"""

from __future__ import annotations

import argparse
import gc
import resource
import tempfile
import tracemalloc

from mitigate.data import Item
from mitigate.judge import PromptJudge
from mitigate.lm import OpenAILM
from mitigate.prompt import JudgePrompt
from mitigate.run import JudgeBatches
from mitigate.testing import StubOpenAIServer

BATCH = 256
WARM_UP = 20


def batch(b: int) -> dict[str, list[str]]:
    """One batch of items as the transform reads them (JSON in the ``item`` column)."""
    return {
        "item": [
            Item(id=f"b{b}-{i}", output=f"text {b} {i} " * 5, human={"q": 3}).model_dump_json()
            for i in range(BATCH)
        ]
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--batches", type=int, default=200, help="batches measured after the warm-up")
    n = ap.parse_args().batches
    with (
        StubOpenAIServer(latency=0.0, reply="Score: 4", record=False) as server,
        tempfile.TemporaryDirectory() as d,
    ):
        lm = OpenAILM("m", base_url=server.base_url, api_key="x")
        worker = JudgeBatches(
            PromptJudge(JudgePrompt.from_template("Rate 1 to 5.\n{{output}}\nScore:"), lm), d
        )
        for b in range(WARM_UP):
            worker(batch(b))
        gc.collect()
        tracemalloc.start()
        before, peak = tracemalloc.take_snapshot(), resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        for b in range(WARM_UP, WARM_UP + n):
            worker(batch(b))
        gc.collect()
        after = tracemalloc.take_snapshot()
        now = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        print(
            f"{n * BATCH:,} items after {WARM_UP * BATCH:,} of warm-up: "
            f"peak RSS {peak / 1024:.1f} -> {now / 1024:.1f} MB"
        )
        for stat in after.compare_to(before, "lineno")[:8]:
            print(stat)
        worker._loop.run_until_complete(lm.aclose())


if __name__ == "__main__":
    main()
