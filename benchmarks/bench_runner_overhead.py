"""Runner overhead: judgments/s through mitigate vs the ideal c/L and a raw-HTTP baseline.

A real OpenAI-compatible HTTP server (``python -m mitigate.testing``) runs in its own
process on 127.0.0.1 and answers every request after a fixed latency L. With c requests in
flight the ideal throughput is c/L. For each c we run, side by side:

- ``raw``: a bare aiohttp client posting the same chat request (no mitigate at all): what
  a Python client on this machine can reach;
- ``mitigate``: ``harness.runner.run`` over a ``PromptJudge`` (prompt rendering, strict
  parsing, retry layer, journal) through ``OpenAILM`` with the SDK-free ``direct``
  transport, and the same through the official SDK (``sdk`` transport).

It prints achieved/ideal for each and mitigate's own CPU time per judgment (process CPU
time of this process, which holds only the client side), and writes
``benchmarks/results/runner_overhead.json``.

    python benchmarks/bench_runner_overhead.py [--latency 0.05 0.5] [--per-slot 20]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import aiohttp

from mitigate import Item, JudgePrompt, PromptJudge
from mitigate.lm import OpenAILM, wrap
from mitigate.run import run

OUT = Path(__file__).resolve().parent / "results" / "runner_overhead.json"
TEMPLATE = "Rate the fluency of the text from 1 to 5.\n\nText: {{output}}\n\nAnswer 'Score: N'."


def start_server(latency: float) -> tuple[subprocess.Popen[str], str]:
    proc = subprocess.Popen(
        [sys.executable, "-m", "mitigate.testing", "--latency", str(latency)],
        stdout=subprocess.PIPE,
        text=True,
    )
    assert proc.stdout is not None
    url = proc.stdout.readline().strip()
    if not url.startswith("http"):
        proc.kill()
        raise SystemExit(f"stub server did not start; printed {url!r}")
    return proc, url


async def raw_arm(url: str, c: int, n: int) -> dict[str, float]:
    body = {
        "model": "stub-model",
        "messages": [{"role": "user", "content": TEMPLATE.replace("{{output}}", "x")}],
        "max_tokens": 16,
        "temperature": 0.0,
    }
    sem = asyncio.Semaphore(c)
    conn = aiohttp.TCPConnector(limit=c)
    async with aiohttp.ClientSession(connector=conn) as session:

        async def one() -> None:
            async with sem, session.post(f"{url}/chat/completions", json=body) as resp:
                data = await resp.json()
                assert data["choices"][0]["message"]["content"]

        await one()  # warm the connection pool
        cpu0, t0 = time.process_time(), time.perf_counter()
        await asyncio.gather(*(one() for _ in range(n)))
        wall, cpu = time.perf_counter() - t0, time.process_time() - cpu0
    return {"seconds": wall, "cpu_seconds": cpu}


async def mitigate_arm(url: str, c: int, n: int, transport: str) -> dict[str, float]:
    lm = wrap(OpenAILM("stub-model", base_url=url, transport=transport), cache=False)
    judge = PromptJudge(JudgePrompt.from_template(TEMPLATE), lm)
    items = [Item(id=f"i{k}", output=f"text number {k}") for k in range(n)]
    await run(judge, items[:1], concurrency=1, progress=False)  # warm client and connections
    with tempfile.TemporaryDirectory() as tmp:
        cpu0, t0 = time.process_time(), time.perf_counter()
        result = await run(judge, items, concurrency=c, progress=False, journal=Path(tmp) / "j.jsonl")
        wall, cpu = time.perf_counter() - t0, time.process_time() - cpu0
    await lm.aclose()
    assert result.summary.ok == n, result.summary.line()
    return {"seconds": wall, "cpu_seconds": cpu}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument(
        "--latency",
        type=float,
        nargs="+",
        default=[0.05, 0.5],
        help="server latencies L in seconds (one server per latency)",
    )
    ap.add_argument(
        "--per-slot", type=int, default=20, help="requests per concurrency slot (n = c * per_slot)"
    )
    ap.add_argument("--concurrency", type=int, nargs="+", default=[1, 8, 64])
    args = ap.parse_args()
    rows = []
    for latency in args.latency:
        rows += run_latency(latency, args.concurrency, args.per_slot)
    OUT.parent.mkdir(parents=True, exist_ok=True)
    OUT.write_text(
        json.dumps(
            {
                "command": "python benchmarks/bench_runner_overhead.py " + " ".join(sys.argv[1:]),
                "cpus": os.cpu_count(),
                "python": platform.python_version(),
                "load_avg_at_end": os.getloadavg(),
                "rows": rows,
            },
            indent=1,
        )
    )
    print(f"wrote {OUT}")


def run_latency(latency: float, concurrency: list[int], per_slot: int) -> list[dict[str, object]]:
    proc, url = start_server(latency)
    rows = []
    try:
        for c in concurrency:
            n = c * per_slot
            ideal = c / latency
            row: dict[str, object] = {"latency_s": latency, "concurrency": c, "n": n, "ideal_per_s": ideal}
            for arm in ("raw", "mitigate_direct", "mitigate_sdk"):
                if arm == "raw":
                    m = asyncio.run(raw_arm(url, c, n))
                else:
                    m = asyncio.run(mitigate_arm(url, c, n, "direct" if arm == "mitigate_direct" else "sdk"))
                rate = n / m["seconds"]
                row[arm] = {
                    "per_s": rate,
                    "of_ideal": rate / ideal,
                    "seconds": m["seconds"],
                    "cpu_ms_per_call": 1000 * m["cpu_seconds"] / n,
                }
            rows.append(row)
            print(
                f"L={latency:g}s c={c:3d} n={n:5d} ideal={ideal:7.0f}/s | "
                + " | ".join(
                    f"{arm}: {row[arm]['per_s']:7.0f}/s ({row[arm]['of_ideal']:.3f} of ideal, "  # type: ignore[index]
                    f"{row[arm]['cpu_ms_per_call']:.2f} ms CPU/call)"  # type: ignore[index]
                    for arm in ("raw", "mitigate_direct", "mitigate_sdk")
                ),
                flush=True,
            )
    finally:
        proc.terminate()
        proc.wait()
    return rows


if __name__ == "__main__":
    main()
