"""What batch APIs and prompt caching save on one 1,000-item comparison with demos (3 pipelines).

The comparison: ``mitigate.harness._compare.compare`` over the first 1,000 SummEval summaries
(document by document) on coherence, with the built-in G-Eval-style prompt and three
pipelines that show demonstrations drawn from the other 600 summaries (with their source
articles): ``random-demos(k=4)``, ``random-demos(k=8, seed=1)`` and ``perturbed-demos(m=2)``
(Ghazarian et al.), so 3,000 judge requests whose instructions, guideline and demos form a
shared prefix.

Each arm runs the whole comparison against a fresh stub server (``mitigate.testing``) that
answers like the provider, counts tokens (one token per whitespace-separated word) and, when
caching is on, emulates the provider's prompt cache as published (OpenAI: automatic, prefixes
of 1,024+ tokens in 128-token steps; Anthropic: at ``cache_control`` breakpoints, from the
model's minimum length). Arms, per provider:

- plain: one live call per request, no prompt caching;
- plain + caching: live calls, the provider's prompt cache (Anthropic: mitigate's breakpoints);
- batch: the provider's batch API (``run(..., batch=...)``), no prompt caching;
- batch + caching: the batch API with the prompt cache.

Costs are **list prices** from ``mitigate.lm._pricing`` (gpt-4o-mini and claude-3-5-haiku as
published 2025-06: regular, cached-read, cache-write and batch tokens each at its own price)
applied to the stub's usage: what these runs would cost on paper, not measured bills. The
stub processes a batch's requests one after another, so cache hits inside a batch are as good
as they can be; the providers serve them on a best-effort basis, so the batch + caching row is
an upper bound on the saving.

    python benchmarks/bench_batch_cost.py [--items 1000]

Writes ``benchmarks/results/batch_cost.json``. Needs the shared SummEval data.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from mitigate import JudgePrompt, PromptJudge
from mitigate.data import Benchmark, load, select_items
from mitigate.harness import Entry, compare
from mitigate.judge import JudgeConfig
from mitigate.lm import AnthropicLM, OpenAILM, Usage, wrap
from mitigate.lm._pricing import breakdown, lookup
from mitigate.lm._prompt_cache import anthropic_min_cache_tokens
from mitigate.prompt import default_prompt_for, prompt_text
from mitigate.run import BatchConfig
from mitigate.strategies import PerturbedDemosPreset, Pipeline, RandomDemosPreset
from mitigate.testing import StubOpenAIServer

OUT = Path(__file__).resolve().parent / "results" / "batch_cost.json"
CRITERION = "coherence"
MODELS = {"openai": "gpt-4o-mini", "anthropic": "claude-3-5-haiku-latest"}
ARMS = (
    ("plain", False, False),
    ("plain + caching", False, True),
    ("batch", True, False),
    ("batch + caching", True, True),
)


def reply(body: dict[str, Any]) -> str:
    """A short justification and a score that depends on the request (so answers differ)."""
    return f"The summary is partly organised. Score: {len(json.dumps(body)) % 5 + 1}"


def pipelines(train: Benchmark, judge: PromptJudge) -> dict[str, Pipeline]:
    return {
        "random-demos(k=4)": Pipeline(
            [RandomDemosPreset(k=4, seed=0, criterion=CRITERION).build().fit(train, judge)]
        ),
        "random-demos(k=8, seed=1)": Pipeline(
            [RandomDemosPreset(k=8, seed=1, criterion=CRITERION).build().fit(train, judge)]
        ),
        "perturbed-demos(m=2)": Pipeline(
            [PerturbedDemosPreset(m=2, kind="order", seed=0).build().fit(train, judge)]
        ),
    }


async def arm(
    provider: str, batch: bool, caching: bool, test: Benchmark, train: Benchmark, prompt: JudgePrompt
) -> dict[str, Any]:
    model = MODELS[provider]
    with (
        StubOpenAIServer(
            latency=0.0,
            reply=reply,
            prompt_cache=caching,
            anthropic_cache_min_tokens=anthropic_min_cache_tokens(model),
        ) as server,
        tempfile.TemporaryDirectory() as tmp,
    ):
        if provider == "openai":
            base: Any = OpenAILM(model, base_url=server.base_url, transport="direct")
        else:
            base = AnthropicLM(
                model, base_url=server.url, api_key="stub", prompt_cache="auto" if caching else "off"
            )
        lm = wrap(base, cache=Path(tmp) / "cache.sqlite")
        judge = PromptJudge(prompt, lm, JudgeConfig(max_tokens=64))
        entries = [Entry.from_pipeline(name, judge, pipe) for name, pipe in pipelines(train, judge).items()]
        start = time.perf_counter()
        result = await compare(
            benchmark=test,
            criterion=CRITERION,
            entries=entries,
            out_dir=Path(tmp) / "out",
            concurrency=64,
            n_boot=0,
            progress=False,
            batch=BatchConfig(poll_interval=0.05, settle=0.1, progress=False) if batch else None,
        )
        seconds = time.perf_counter() - start
        await lm.aclose()
        usage = Usage()
        for e in result.entries:
            usage = usage + e.summary.usage
        lm_requests = sum(e.summary.calls + e.summary.cached_calls for e in result.entries)
        ok = sum(e.summary.ok for e in result.entries)
        parts = breakdown(lookup(model), usage, batch=batch)
        return {
            "provider": provider,
            "model": model,
            "batch": batch,
            "caching": caching,
            "lm_requests": lm_requests,
            "judgments_ok": ok,
            "http_requests": server.request_count,
            "batches": len(server.batch.created),
            "prompt_tokens": usage.prompt_tokens,
            "cached_tokens": usage.cached_prompt_tokens,
            "cache_write_tokens": usage.cache_write_tokens,
            "output_tokens": usage.completion_tokens,
            "list_price_usd": parts.total,
            "list_price_parts": parts.model_dump(),
            "seconds": seconds,
        }


def ratio(a: float, b: float) -> str:
    return "-" if not b else f"{a / b:.3f}"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--items", type=int, default=1000)
    ap.add_argument("--providers", nargs="+", default=["openai", "anthropic"])
    args = ap.parse_args()
    bench = load("summeval")
    labelled = [it for it in bench.items if CRITERION in it.human]
    test_items = select_items(labelled, args.items)
    chosen = {it.id for it in test_items}
    test = bench.model_copy(update={"items": tuple(test_items)})
    train = bench.model_copy(update={"items": tuple(it for it in labelled if it.id not in chosen)})
    prompt = JudgePrompt.from_template(
        prompt_text(default_prompt_for("summeval", CRITERION)), criterion=CRITERION
    )
    rows = []
    for provider in args.providers:
        for name, batch, caching in ARMS:
            row = asyncio.run(arm(provider, batch, caching, test, train, prompt))
            row["arm"] = name
            rows.append(row)
            print(
                f"{provider} {name}: {row['lm_requests']} LM requests, {row['http_requests']} HTTP "
                f"requests, {row['prompt_tokens']} prompt tokens ({row['cached_tokens']} cached, "
                f"{row['cache_write_tokens']} written), {row['output_tokens']} output, "
                f"list price ${row['list_price_usd']:.4f} ({row['seconds']:.0f}s)",
                flush=True,
            )
    print(
        "\nRatios to plain calls (same provider); costs are LIST PRICES applied to the stub's token "
        "counts, not measured bills:"
    )
    print(
        f"{'provider':10s} {'arm':16s} {'LM req':>7s} {'HTTP req':>9s} {'prompt tok':>10s} "
        f"{'cached tok':>10s} {'cost':>7s}"
    )
    for row in rows:
        plain = next(r for r in rows if r["provider"] == row["provider"] and r["arm"] == "plain")
        row["ratios"] = {
            k: (row[k] / plain[k] if plain[k] else None)
            for k in ("lm_requests", "http_requests", "prompt_tokens", "list_price_usd")
        }
        row["cached_share"] = row["cached_tokens"] / row["prompt_tokens"] if row["prompt_tokens"] else 0.0
        print(
            f"{row['provider']:10s} {row['arm']:16s} {ratio(row['lm_requests'], plain['lm_requests']):>7s} "
            f"{ratio(row['http_requests'], plain['http_requests']):>9s} "
            f"{ratio(row['prompt_tokens'], plain['prompt_tokens']):>10s} {row['cached_share']:>10.3f} "
            f"{ratio(row['list_price_usd'], plain['list_price_usd']):>7s}"
        )
    OUT.parent.mkdir(parents=True, exist_ok=True)
    OUT.write_text(
        json.dumps(
            {
                "command": "python benchmarks/bench_batch_cost.py " + " ".join(sys.argv[1:]),
                "python": platform.python_version(),
                "cpus": os.cpu_count(),
                "load_avg_at_end": os.getloadavg(),
                "note": "list_price_usd: mitigate.lm._pricing list prices (2025-06) applied to the stub "
                "server's "
                "token counts (one token per word); not measured bills. cached_share: cached prompt tokens / "
                "prompt tokens.",
                "items": len(test_items),
                "pipelines": list(
                    pipelines(train, PromptJudge(prompt, OpenAILM("m", base_url="http://127.0.0.1:9/v1")))
                ),
                "rows": rows,
            },
            indent=1,
        )
    )
    print(f"wrote {OUT}")


if __name__ == "__main__":
    main()
