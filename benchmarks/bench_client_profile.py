"""Where the client's own CPU goes in a 1,000-judgment ``mitigate judge`` run against the stub server.

The stub (``python -m mitigate.testing``) runs in its own process on 127.0.0.1 and answers after
``--latency`` seconds. The same command runs twice:

1. plainly, timed from outside: wall seconds, CPU seconds (user + system of the child, from
   ``wait4``) and CPU milliseconds per judgment, start-up and exit included;
2. under ``cProfile``: the functions with the most own time (cProfile cannot attribute the
   time of the runner's concurrent tasks to ``run`` itself, so no split is claimed).

It also times ``python -c "import mitigate.cli"`` (what ``mitigate --help`` and every command load
first). Writes ``benchmarks/results/client_profile.json``.

    python benchmarks/bench_client_profile.py [--n 1000] [--latency 0.2] [--concurrency 64] [--top 25]
"""

from __future__ import annotations

import argparse
import io
import json
import os
import platform
import pstats
import subprocess
import sys
import tempfile
import time
from pathlib import Path

OUT = Path(__file__).resolve().parent / "results" / "client_profile.json"
TEMPLATE = "Rate the fluency of the text from 1 to 5.\n\nText: {{output}}\n\nAnswer 'Score: N'."


def timed(cmd: list[str], cwd: Path) -> dict[str, float]:
    """Wall and CPU seconds of ``cmd`` (a child process; its stdout and stderr go to files in ``cwd``)."""
    with (cwd / "out.txt").open("wb") as out, (cwd / "err.txt").open("wb") as err:
        t0 = time.perf_counter()
        proc = subprocess.Popen(cmd, cwd=cwd, stdout=out, stderr=err)
        _, status, usage = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - t0
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"{cmd[:4]} failed: {(cwd / 'err.txt').read_text()[-600:]}")
    return {"wall": wall, "cpu": usage.ru_utime + usage.ru_stime}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=1000)
    ap.add_argument("--latency", type=float, default=0.2)
    ap.add_argument("--concurrency", type=int, default=64)
    ap.add_argument("--top", type=int, default=25, help="functions listed by own time")
    args = ap.parse_args()
    server = subprocess.Popen(
        [sys.executable, "-m", "mitigate.testing", "--latency", str(args.latency)],
        stdout=subprocess.PIPE,
        text=True,
    )
    assert server.stdout is not None
    url = server.stdout.readline().strip()
    try:
        with tempfile.TemporaryDirectory() as tmp:
            work = Path(tmp)
            with (work / "items.jsonl").open("w") as fh:
                fh.write(json.dumps({"benchmark": {"name": "profile", "criteria": ["fluency"]}}) + "\n")
                for k in range(args.n):
                    fh.write(
                        json.dumps({"id": f"t{k}", "output": f"Text number {k} about a quiet day."}) + "\n"
                    )
            (work / "prompt.txt").write_text(TEMPLATE)
            judge = [
                "-m",
                "mitigate",
                "judge",
                "-b",
                f"jsonl:{work / 'items.jsonl'}",
                "--prompt",
                str(work / "prompt.txt"),
                "--backend",
                "openai:stub-model",
                "--base-url",
                url,
                "-n",
                "0",
                "--concurrency",
                str(args.concurrency),
                "--no-progress",
                "--no-cache",
            ]
            imports = min(timed([sys.executable, "-c", "import mitigate.cli"], work)["cpu"] for _ in range(3))
            plain = timed([sys.executable, *judge], work)
            prof = work / "judge.prof"
            timed([sys.executable, "-m", "cProfile", "-o", str(prof), *judge], work)
            stats = pstats.Stats(str(prof))
            total = stats.total_tt  # type: ignore[attr-defined]
            text = io.StringIO()
            pstats.Stats(str(prof), stream=text).sort_stats("tottime").print_stats(args.top)
    finally:
        server.terminate()
        server.wait()
    listing = text.getvalue()
    print(listing[listing.find("ncalls") :])
    row = {
        "wall_s": plain["wall"],
        "cpu_s": plain["cpu"],
        "cpu_ms_per_judgment": 1000 * plain["cpu"] / args.n,
        "ideal_wall_s": args.n * args.latency / args.concurrency,
        "import_cli_cpu_s": imports,
        "profiled_total_s": total,
    }
    print(
        f"{args.n} judgments at c={args.concurrency}, L={args.latency:g} s: wall {plain['wall']:.2f} s "
        f"(ideal {row['ideal_wall_s']:.2f} s), CPU {plain['cpu']:.2f} s = {row['cpu_ms_per_judgment']:.2f} "
        f"ms per judgment (start-up and exit included); `import mitigate.cli` {imports:.2f} CPU-s; "
        f"{total:.2f} s under cProfile"
    )
    OUT.parent.mkdir(parents=True, exist_ok=True)
    OUT.write_text(
        json.dumps(
            {
                "command": "python benchmarks/bench_client_profile.py " + " ".join(sys.argv[1:]),
                "python": platform.python_version(),
                "cpus": os.cpu_count(),
                "load_avg_at_end": os.getloadavg(),
                **row,
                "top_by_own_time": listing,
            },
            indent=1,
        )
    )
    print(f"wrote {OUT}")


if __name__ == "__main__":
    main()
