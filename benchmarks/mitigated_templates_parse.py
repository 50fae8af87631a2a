"""Do answers to mitigated published templates parse? A local judge on SummEval, free text, each mitigation.

A mitigation wrapping a published judge template adds its paragraphs before the template's
answer stub and asks for the template's own answer line (``prompt.format``). This script
measures what that means for a real model answering freely: the share of answers the
judge's own strict parser reads, per template and mitigation.

Templates: Prometheus' absolute grading prompt without reference (read from the installed
``prometheus-eval`` package: "[RESULT] N" after feedback, stub "###Feedback: ") and Flow
Judge's prompt with inputs (``flow-judge``: ``<score>N</score>`` after ``<feedback>``), each
filled with a coherence rubric of our own wording; the SummEval article is the instruction /
input, the summary the response. Mitigations: none, ``Sampling(cot=True)`` (greedy),
``Granularity(scale="1-10")`` and ``ConsistencyHint()``. Items: the first ``--n`` SummEval
summaries taken document by document (coherence). Answers are free text (``constrain="off"``);
a parse failure is recorded, never a score.

Run (under the shared lock): ``flock /work/bench.lock python benchmarks/mitigated_templates_parse.py --n 12``
(default backend: the Qwen2.5 0.5B judge of ``/work/shared/tools/fetch-judge-model 0.5b``).
Writes ``benchmarks/results/mitigated_templates_parse.json``; journals in ``runs/evidence/``.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from embedded_answers_summeval import wilson
from evidence_common import (
    COHERENCE_RUBRIC,
    RESULTS_DIR,
    RUNS_DIR,
    Timer,
    clean,
    default_backend,
    dist_constant,
    score_counts,
    write_summary,
)

from mitigate.data import load, select_items
from mitigate.judge import JudgeConfig, PromptJudge
from mitigate.lm import get, wrap
from mitigate.prompt import JudgePrompt
from mitigate.run import run
from mitigate.strategies import ConsistencyHint, Granularity, Sampling

RUBRIC = COHERENCE_RUBRIC
FLOW_RUBRIC = "\n".join(line.replace("Score ", "- Score ", 1) for line in RUBRIC.splitlines()[1:])
MITIGATIONS: dict[str, Any] = {
    "none": None,
    "cot": Sampling(temperature=0.0, n=1, cot=True),
    "granularity-1-10": Granularity(scale="1-10"),
    "hint": ConsistencyHint(),
}


def templates() -> dict[str, JudgePrompt]:
    """The published templates, read as a user would (no hints but what the package itself fills in)."""
    prometheus = dist_constant("prometheus-eval", "prometheus_eval/prompts.py", "ABSOLUTE_PROMPT_WO_REF")
    flow = dist_constant("flow-judge", "flow_judge/utils/prompt_formatter.py", "USER_PROMPT_TEMPLATE")
    return {
        "prometheus-absolute": JudgePrompt.from_template(
            prometheus, constants={"rubric": RUBRIC}, slot_fields={"instruction": "document"}
        ),
        "flow-judge": JudgePrompt.from_template(
            flow,
            constants={"RUBRIC": FLOW_RUBRIC, "EVALUATION_CRITERIA": RUBRIC.splitlines()[0]},
            slot_fields={"INPUTS": "document"},
        ),
    }


async def one(
    name: str, prompt: JudgePrompt, mitigation: str, items: list[Any], spec: str, args: argparse.Namespace
) -> dict[str, Any]:
    lm = wrap(get(spec, n_ctx=args.n_ctx), cache=True)
    judge: Any = PromptJudge(prompt, lm, JudgeConfig(constrain="off", max_tokens=args.max_tokens))
    if MITIGATIONS[mitigation] is not None:
        judge = MITIGATIONS[mitigation].wrap(judge)
    (leaf,) = judge.leaves()
    t0 = time.perf_counter()
    result = await run(
        judge,
        items,
        concurrency=1,
        journal=args.run_dir / f"{name}-{mitigation}.jsonl",
        progress=False,
        desc=f"{name}-{mitigation}",
    )
    seconds = time.perf_counter() - t0
    await lm.aclose()
    judged = {j.item_id: j for j in result.judgments}
    scores = [judged[it.id].score() if it.id in judged else None for it in items]
    k = sum(s is not None for s in scores)
    lo, hi = wilson(k, len(items))
    print(
        f"{name:20s} {mitigation:17s} parsed {k}/{len(items)} [{lo:.2f}, {hi:.2f}]  {seconds:.0f}s  "
        f"{score_counts(scores)}",
        flush=True,
    )
    return {
        "format": leaf.prompt.format.describe(),
        "n": len(items),
        "parsed": k,
        "share": k / len(items),
        "share_ci": [lo, hi],
        "scores": score_counts(scores),
        "seconds": round(seconds, 1),
    }
    # no raw answers in the summary: the small judge often echoes the SummEval article (journals keep them)


async def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--n", type=int, default=12, help="SummEval summaries (document by document)")
    ap.add_argument("--backend", default=None, help="LM spec (default: the Qwen2.5 0.5B judge model)")
    ap.add_argument("--max-tokens", type=int, default=320)
    ap.add_argument("--n-ctx", type=int, default=8192)
    ap.add_argument("--out", type=Path, default=RESULTS_DIR / "mitigated_templates_parse.json")
    ap.add_argument("--run-dir", type=Path, default=RUNS_DIR / "mitigated_templates_parse")
    args = ap.parse_args()
    spec = args.backend or default_backend("0.5b")
    args.backend, args.seed = spec, 0
    timer = Timer()
    bench = load("summeval")
    items = select_items([it for it in bench.items if "coherence" in it.human], args.n)
    results: dict[str, Any] = {}
    for name, prompt in templates().items():
        for mitigation in MITIGATIONS:
            t0 = time.perf_counter()
            results[f"{name}/{mitigation}"] = await one(name, prompt, mitigation, items, spec, args)
            timer.mark(f"{name}/{mitigation}", t0)
    path = write_summary(
        args,
        "mitigated_templates_parse.py",
        {"benchmark": "summeval", "criterion": "coherence", "n": len(items), "results": clean(results)},
        timer,
    )
    print(f"wrote {path}")


if __name__ == "__main__":
    asyncio.run(main())
