"""Judgments per second when a judge alternates between prompt variants: KV snapshots vs one live history.

``perturbed-guidelines`` (Ghazarian et al. 2024) judges every item under the original guideline
and under reordered ones, item by item. Each variant has its own long fixed part
(instructions, its guideline, scored demos), so with a single KV history the fixed part is
lost on every switch of variant. ``LlamaCppLM(prefix_slots=k)`` keeps snapshots of up to k
histories and restores the one sharing the longest prefix with the next prompt.

Arms: ``prefix_slots=4`` against ``prefix_slots=0`` (prefix reuse on in both). Each arm has
its own llama.cpp context (loaded with a slightly different ``n_ctx``, which is how the
backend keys its contexts), so neither sees the other's cache. The arms alternate item by
item (each item is judged under every variant by one arm, then by the other), so drift in
machine load hits both; the first item of each arm is a warm-up and is not timed. Outputs
of the two arms are compared call by call.

    python benchmarks/bench_prefix_slots.py                       # embedded SmolLM2-135M
    python benchmarks/bench_prefix_slots.py --model <path.gguf>   # any other GGUF judge
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench_prefix_reuse import ARTICLES, DEMOS, GUIDELINE, INSTRUCTIONS, ITEM_SUMMARIES, save_run

from mitigate.lm import LMRequest, Message
from mitigate.lm._llamacpp import LlamaCppLM

RESULTS = Path(__file__).resolve().parent / "results" / "prefix_slots.json"
ORDERS = [(0, 1, 2, 3, 4), (4, 2, 0, 3, 1), (2, 4, 1, 0, 3)]
"""The original guideline and two reorderings of its five options (the probe's variants)."""


def variant_prompt(order: tuple[int, ...]) -> str:
    """Instructions, the guideline with its options in ``order``, then the scored demos."""
    head, *options = GUIDELINE.split("\n")
    blocks: list[list[str]] = []
    for line in options:  # an option starts with "<digit> -"; indented lines continue it
        if line[:1].isdigit():
            blocks.append([line])
        else:
            blocks[-1].append(line)
    guideline = "\n".join([head, *("\n".join(blocks[i]) for i in order)])
    parts = [INSTRUCTIONS, guideline, "Here are rated examples."]
    for k, (article, summary, score) in enumerate(DEMOS, start=1):
        parts.append(f"Example {k}\nArticle:\n{ARTICLES[article]}\nSummary:\n{summary}\nCoherence: {score}")
    return "\n\n".join(parts)


def request(order: tuple[int, ...], i: int, max_tokens: int) -> LMRequest:
    """Item i under one variant."""
    summary = ITEM_SUMMARIES[i % len(ITEM_SUMMARIES)]
    user = f"Article {i % len(ARTICLES) + 1} above.\nSummary #{i}:\n{summary}\nCoherence:"
    return LMRequest(
        messages=(Message(role="system", content=variant_prompt(order)), Message(role="user", content=user)),
        max_tokens=max_tokens,
        temperature=0.0,
    )


async def run(model: str | None, n: int, max_tokens: int) -> dict:
    arms = {
        "snapshots": LlamaCppLM(model, n_ctx=4096, prefix_slots=4),
        "one_history": LlamaCppLM(model, n_ctx=4112, prefix_slots=0),
    }
    for lm in arms.values():
        await lm.load()
    times: dict[str, list[float]] = {a: [] for a in arms}
    cached: dict[str, list[int]] = {a: [] for a in arms}
    texts: dict[str, list[str]] = {a: [] for a in arms}
    prompt_tokens: list[int] = []
    for i in range(n + 1):  # item 0 is the warm-up
        names = list(arms) if i % 2 == 0 else list(arms)[::-1]
        for name in names:
            t0 = time.perf_counter()
            for order in ORDERS:
                r = await arms[name].complete(request(order, i, max_tokens))
                if i > 0:
                    cached[name].append(r.usage.cached_prompt_tokens)
                    texts[name].append(r.text)
                    if name == "snapshots":
                        prompt_tokens.append(r.usage.prompt_tokens)
            if i > 0:
                times[name].append(time.perf_counter() - t0)
    calls = n * len(ORDERS)
    per_arm = {
        a: {
            "seconds_total": round(sum(ts), 3),
            "judgments_per_second": round(calls / sum(ts), 3),
            "cached_prompt_tokens_mean": round(statistics.mean(cached[a]), 1),
        }
        for a, ts in times.items()
    }
    same = sum(x == y for x, y in zip(texts["snapshots"], texts["one_history"], strict=True))
    return {
        "benchmark": "prefix_slots",
        "model": arms["snapshots"].path.name,
        "n_items": n,
        "variants": len(ORDERS),
        "calls_per_arm": calls,
        "prompt_tokens_mean": round(statistics.mean(prompt_tokens), 1),
        "arms": per_arm,
        "speedup_snapshots_over_one_history": round(
            per_arm["snapshots"]["judgments_per_second"] / per_arm["one_history"]["judgments_per_second"], 2
        ),
        "identical_outputs": f"{same}/{calls}",
        "load_average_1m_after": round(os.getloadavg()[0], 2),
        "command": "python " + " ".join(sys.argv),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default=None, help="GGUF path (default: embedded SmolLM2-135M-Instruct)")
    parser.add_argument("--n", type=int, default=8, help="items per arm (each judged under 3 variants)")
    parser.add_argument("--max-tokens", type=int, default=4)
    parser.add_argument("--out", type=Path, default=RESULTS)
    args = parser.parse_args()
    result = asyncio.run(run(args.model, args.n, args.max_tokens))
    print(
        f"model {result['model']}: {result['variants']} variants x {args.n} items per arm, prompt "
        f"{result['prompt_tokens_mean']} tokens"
    )
    for name, arm in result["arms"].items():
        print(
            f"{name:<12} {arm['seconds_total']:>8.2f} s  {arm['judgments_per_second']:>6.2f} judgments/s  "
            f"cached {arm['cached_prompt_tokens_mean']:>6.0f} tokens/call"
        )
    print(
        f"speed-up with snapshots: {result['speedup_snapshots_over_one_history']}x; identical outputs "
        f"{result['identical_outputs']}"
    )
    save_run(args.out, result)
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
