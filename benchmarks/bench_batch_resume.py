"""Batch mode survives SIGKILL: random kills during submission, polling and collection, then resume.

Each trial starts a fresh stub server (``mitigate.testing``, OpenAI or Anthropic batch
endpoints, in this process) and judges ``--items`` items in batch mode in a child process
(``mitigate.run._runner.run(..., batch=...)``, batches of at most ``--max-requests``), killing the
child with SIGKILL one to three times at random moments of a randomly chosen phase:

- ``submission``: after the server has received a batch-create call and before it answers
  (the stub holds the answer ``--create-delay`` seconds: the batch exists, the client does not
  know its id yet, the hardest case);
- ``polling``: while a submitted batch is running;
- ``collection``: just after the client starts downloading a batch's results (while it stores
  them in the cache and writes judgments to the journal).

After the kills the same command runs to the end. The trial then checks, from the journal
and the server's log of created batches:

- lost: items without a judgment, with an error, or with a score other than the one the
  server gave that item's text (a result mapped back to the wrong item counts as lost);
- submitted twice: request ids that appear in more than one created batch.

    python benchmarks/bench_batch_resume.py --trials 20 --seed 0

Writes ``benchmarks/results/batch_resume.json``.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import random
import re
import signal
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

from mitigate.testing import StubOpenAIServer

REPO = Path(__file__).resolve().parent.parent
OUT = Path(__file__).resolve().parent / "results" / "batch_resume.json"
TEMPLATE = "Rate the text from 1 to 5.\n\nText: {{output}}\n\nAnswer 'Score: N'."
PHASES = ("submission", "polling", "collection")

CHILD = """
import asyncio, json, sys
from pathlib import Path
from mitigate import Item, JudgePrompt, PromptJudge
from mitigate.run._batch_session import BatchConfig
from mitigate.lm._registry import get, wrap
from mitigate.run._runner import run

provider, url, folder = sys.argv[1], sys.argv[2], Path(sys.argv[3])
n, max_requests = int(sys.argv[4]), int(sys.argv[5])
base = (get("openai:stub-model", base_url=url + "/v1") if provider == "openai"
        else get("anthropic:claude-stub", base_url=url, api_key="k"))
lm = wrap(base, cache=folder / "cache.sqlite")
judge = PromptJudge(JudgePrompt.from_template(sys.argv[6]), lm)
items = [Item(id=f"it{i}", output=f"t{i}") for i in range(n)]
options = BatchConfig(poll_interval=0.02, max_poll_interval=0.05, settle=0.02, max_requests=max_requests,
                       progress=False)
result = asyncio.run(run(judge, items, journal=folder / "journal.jsonl", progress=False, batch=options))
print(json.dumps({"ok": result.summary.ok, "errors": result.summary.errors}))
"""


def expected(text: str) -> int:
    """The stub's deterministic score for an item text."""
    return sum(map(ord, text)) % 5 + 1


def reply(body: dict[str, Any]) -> str:
    found = re.findall(r"Text: (t\d+)", json.dumps(body))
    return f"Score: {expected(found[-1])}" if found else "no text"


def wait_for(predicate: Any, proc: subprocess.Popen[str], timeout: float) -> bool:
    """Poll ``predicate`` every 2 ms until it holds (True) or the child exits / time runs out (False)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        if proc.poll() is not None:
            return False
        time.sleep(0.002)
    return False


def killed_run(
    args: list[str],
    env: dict[str, str],
    server: StubOpenAIServer,
    phase: str,
    rng: random.Random,
    create_delay: float,
) -> dict[str, Any]:
    """One child run killed at a random moment of ``phase`` (or left to finish when the phase never comes)."""
    created0, downloads0 = len(server.batch.created), len(server.batch.downloads)
    proc = subprocess.Popen(args, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    if phase == "submission":
        hit = wait_for(lambda: len(server.batch.created) > created0, proc, 120)
        delay = rng.uniform(0.0, create_delay)
    elif phase == "polling":

        def running() -> bool:
            return any(
                server.batch.status_of(b["id"]) in ("in_progress", "validating")
                for b in server.batch.created[created0:]
            )

        hit = wait_for(running, proc, 120)
        delay = create_delay + rng.uniform(0.0, 0.1)  # past the create answer: the client is polling
    else:
        hit = wait_for(lambda: len(server.batch.downloads) > downloads0, proc, 120)
        delay = rng.uniform(0.0, 0.03)
    if hit:
        time.sleep(delay)
    if proc.poll() is None:
        os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    killed = proc.returncode == -signal.SIGKILL
    return {
        "phase": phase,
        "killed": killed,
        "delay_s": round(delay, 4) if hit else None,
        "batches_created_during": len(server.batch.created) - created0,
    }


def trial(k: int, rng: random.Random, args: argparse.Namespace) -> dict[str, Any]:
    provider = rng.choice(["openai", "anthropic"])
    phases = [rng.choice(PHASES) for _ in range(rng.randint(1, 3))]
    with (
        StubOpenAIServer(
            latency=0.0, batch_latency=args.batch_latency, batch_create_delay=args.create_delay, reply=reply
        ) as server,
        tempfile.TemporaryDirectory() as tmp,
    ):
        script = Path(tmp) / "child.py"
        script.write_text(CHILD)
        env = {**os.environ, "PYTHONPATH": str(REPO)}
        cmd = [
            sys.executable,
            str(script),
            provider,
            server.url,
            tmp,
            str(args.items),
            str(args.max_requests),
            TEMPLATE,
        ]
        kills = [killed_run(cmd, env, server, phase, rng, args.create_delay) for phase in phases]
        final = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=600)
        if final.returncode != 0:
            raise SystemExit(f"trial {k}: the resumed run failed:\n{final.stderr[-3000:]}")
        journal = Path(tmp) / "journal.jsonl"
        rows = [json.loads(x) for x in journal.read_text().splitlines()[1:]]
        latest = {r["item_id"]: r for r in rows}
        lost = sum(
            1
            for i in range(args.items)
            if (j := latest.get(f"it{i}")) is None
            or j.get("error")
            or j["scores"].get("score") != expected(f"t{i}")
        )
        counts = Counter(cid for b in server.batch.created for cid in b["custom_ids"])
        twice = sum(1 for c in counts.values() if c > 1)
        store = [
            json.loads(x) for x in (Path(tmp) / "batches" / "batches.jsonl").read_text().splitlines()[1:]
        ]
    return {
        "trial": k,
        "provider": provider,
        "kills": kills,
        "final": json.loads(final.stdout),
        "items": args.items,
        "lost": lost,
        "submitted_twice": twice,
        "distinct_requests_submitted": len(counts),
        "batches_created": len(server.batch.created),
        "journal_lines": len(rows),
        "record_events": Counter(e["event"] for e in store),
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--trials", type=int, default=20)
    ap.add_argument("--items", type=int, default=150)
    ap.add_argument("--max-requests", type=int, default=50, help="requests per batch (so a run has several)")
    ap.add_argument("--batch-latency", type=float, default=0.004, help="stub seconds per batched request")
    ap.add_argument("--create-delay", type=float, default=0.3, help="stub seconds before answering a create")
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    rng = random.Random(args.seed)
    rows = []
    for k in range(args.trials):
        row = trial(k, rng, args)
        rows.append(row)
        kills = ", ".join(f"{x['phase']}{'' if x['killed'] else ' (missed)'}" for x in row["kills"])
        print(
            f"trial {k:2d} {row['provider']:9s} kills: {kills:45s} lost {row['lost']}, submitted twice "
            f"{row['submitted_twice']}, batches {row['batches_created']}, final {row['final']}",
            flush=True,
        )
    landed = Counter(x["phase"] for r in rows for x in r["kills"] if x["killed"])
    totals = {
        "trials": len(rows),
        "items_per_trial": args.items,
        "lost": sum(r["lost"] for r in rows),
        "submitted_twice": sum(r["submitted_twice"] for r in rows),
        "kills_landed": sum(landed.values()),
        "kills_by_phase": dict(landed),
        "kills_missed": sum(1 for r in rows for x in r["kills"] if not x["killed"]),
        "providers": dict(Counter(r["provider"] for r in rows)),
    }
    print(json.dumps(totals))
    OUT.parent.mkdir(parents=True, exist_ok=True)
    OUT.write_text(
        json.dumps(
            {
                "command": "python benchmarks/bench_batch_resume.py " + " ".join(sys.argv[1:]),
                "python": platform.python_version(),
                "cpus": os.cpu_count(),
                "load_avg_at_end": os.getloadavg(),
                "settings": vars(args),
                "totals": totals,
                "trials": rows,
            },
            indent=1,
            default=dict,
        )
    )
    print(f"wrote {OUT}")


if __name__ == "__main__":
    main()
