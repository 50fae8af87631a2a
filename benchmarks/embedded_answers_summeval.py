"""Does the embedded judge return scores? Constrained vs unconstrained answers vs real local judges on
SummEval.

The embedded default model (SmolLM2-135M-Instruct, spec ``local``) rarely writes a score when
asked freely: it summarises the article instead. This script measures, on the first ``--n``
SummEval summaries taken document by document (coherence, the built-in ``summeval-coherence``
prompt, mean of 3 expert ratings), how each way of asking turns into scores:

- **unconstrained**: free text, parsed strictly (``JudgeConfig(constrain="off")``);
- **constrained**: grammar-constrained decoding of the template's own answer format, with the
  reasoning sentence the template asks for before the final "Score: N" line (``constrain="format"``);
- **constrained-answer**: the answer line alone, "Score: N" with nothing before it (``constrain="answer"``);
- **logprob**: the answer line alone, read as the probability-weighted score over the scale
  points from the model's raw next-token distribution at the score position (G-Eval style;
  ``constrain="answer"`` + ``scoring="expected"``).

and the same for the Qwen2.5-Coder 0.5B and 1.5B judges (``/work/shared/tools/fetch-judge-model``).
For each setting: the share of items scored (with a Wilson 95% interval), Spearman with the
experts over the scored items (95% bootstrap interval), the scores given, and seconds.

Run (under the shared lock): ``flock /work/bench.lock python benchmarks/embedded_answers_summeval.py --n
100``. ``--variants smollm-logprob,smollm-constrained`` runs a subset; ``--n 12`` is the quick-start size.
Writes ``benchmarks/results/embedded_answers_summeval.json``; journals go to ``runs/evidence/`` (resumable).
"""

from __future__ import annotations

import argparse
import asyncio
import math
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from evidence_common import RESULTS_DIR, RUNS_DIR, Timer, clean, default_backend, score_counts, write_summary

from mitigate.data import load, select_items
from mitigate.judge import JudgeConfig, PromptJudge
from mitigate.lm import get, wrap
from mitigate.measures import bootstrap_ci, spearman
from mitigate.prompt import get_prompt
from mitigate.run import run

SETTINGS: dict[str, dict[str, Any]] = {
    "unconstrained": {"constrain": "off", "max_tokens": 128},
    "constrained": {"constrain": "format", "max_tokens": 160},
    "constrained-answer": {"constrain": "answer", "max_tokens": 8},
    "logprob": {"constrain": "answer", "scoring": "expected", "top_logprobs": 20, "max_tokens": 8},
}
MODELS = {"smollm": None, "qwen0.5b": "0.5b", "qwen1.5b": "1.5b"}
DEFAULT_VARIANTS = [f"smollm-{s}" for s in SETTINGS] + [
    "qwen0.5b-unconstrained",
    "qwen0.5b-constrained",
    "qwen1.5b-unconstrained",
    "qwen1.5b-constrained",
]


def wilson(k: int, n: int, z: float = 1.96) -> tuple[float | None, float | None]:
    """Wilson score interval of a share k/n."""
    if n == 0:
        return None, None
    p = k / n
    denom = 1 + z * z / n
    centre = (p + z * z / (2 * n)) / denom
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / denom
    return max(0.0, centre - half), min(1.0, centre + half)


async def one(
    variant: str, items: list[Any], args: argparse.Namespace, specs: dict[str, str]
) -> dict[str, Any]:
    model, setting = variant.split("-", 1)
    spec = specs[model]
    lm = wrap(get(spec, n_ctx=args.n_ctx), cache=args.cache)
    cfg = JudgeConfig(**SETTINGS[setting])
    judge = PromptJudge(get_prompt("summeval-coherence"), lm, cfg)
    t0 = time.perf_counter()
    result = await run(
        judge,
        items,
        concurrency=1,
        journal=args.run_dir / f"{variant}.jsonl",
        restart=args.restart,
        progress=args.progress,
        desc=variant,
    )
    seconds = time.perf_counter() - t0
    await lm.aclose()
    by_id = {j.item_id: j for j in result.judgments}
    scores = [by_id[it.id].scores.get("coherence") for it in items]
    human = [it.human["coherence"] for it in items]
    k = sum(s is not None for s in scores)
    lo, hi = wilson(k, len(items))
    pairs = [(s, h) for s, h in zip(scores, human, strict=True) if s is not None]
    rho = spearman([p[0] for p in pairs], [p[1] for p in pairs]) if len(pairs) >= 3 else float("nan")
    ci = (
        bootstrap_ci("spearman", scores, human, n_boot=args.n_boot, seed=args.seed)
        if len(pairs) >= 3
        else (float("nan"), float("nan"))
    )
    rounded = [None if s is None else round(s, 1) for s in scores]
    examples = [
        {
            "item": it.id,
            "raw": by_id[it.id].raw[0][:300] if by_id[it.id].raw else "",
            "score": by_id[it.id].scores.get("coherence"),
        }
        for it in items[:3]
    ]
    out = {
        "backend": spec,
        "config": cfg.model_dump(mode="json"),
        "n": len(items),
        "scored": k,
        "share_scored": k / len(items),
        "share_ci": [lo, hi],
        "spearman": rho,
        "spearman_ci": list(ci),
        "scores": score_counts(rounded),
        "distinct_scores": len({s for s in rounded if s is not None}),
        "seconds": round(seconds, 1),
        "examples": examples,
    }
    print(
        f"{variant:28s} scored {k}/{len(items)} [{lo:.2f}, {hi:.2f}]  Spearman {rho:.3f} "
        f"[{ci[0]:.3f}, {ci[1]:.3f}]  {seconds:.0f}s  scores {score_counts(rounded)}",
        flush=True,
    )
    return out


async def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--n", type=int, default=100, help="SummEval summaries (document by document)")
    ap.add_argument(
        "--variants", default=",".join(DEFAULT_VARIANTS), help="comma-separated <model>-<setting>"
    )
    ap.add_argument("--out", type=Path, default=RESULTS_DIR / "embedded_answers_summeval.json")
    ap.add_argument("--run-dir", type=Path, default=RUNS_DIR / "embedded_answers_summeval")
    ap.add_argument("--n-ctx", type=int, default=8192)
    ap.add_argument("--n-boot", type=int, default=1000)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--restart", action="store_true")
    ap.add_argument("--cache", action=argparse.BooleanOptionalAction, default=True)
    ap.add_argument("--progress", action=argparse.BooleanOptionalAction, default=False)
    args = ap.parse_args()
    args.backend = "several (see results)"
    timer = Timer()
    bench = load("summeval")
    items = select_items([it for it in bench.items if "coherence" in it.human], args.n)
    variants = [v.strip() for v in args.variants.split(",") if v.strip()]
    specs = {
        m: ("local" if size is None else default_backend(size))
        for m, size in MODELS.items()
        if any(v.startswith(m + "-") for v in variants)
    }
    results: dict[str, Any] = {}
    previous: dict[str, Any] = {}
    if args.out.exists():  # keep variants measured by an earlier partial run
        import json

        previous = json.loads(args.out.read_text()).get("variants", {})
    for variant in variants:
        t0 = time.perf_counter()
        results[variant] = await one(variant, items, args, specs)
        timer.mark(variant, t0)
    merged = {**previous, **clean(results)}
    path = write_summary(
        args,
        "embedded_answers_summeval.py",
        {
            "benchmark": "summeval",
            "criterion": "coherence",
            "prompt": "summeval-coherence",
            "n": len(items),
            "variants": merged,
        },
        timer,
    )
    print(f"wrote {path}")


if __name__ == "__main__":
    asyncio.run(main())
