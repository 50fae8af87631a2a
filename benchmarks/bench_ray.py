"""`mitigate judge --engine ray` on a local Ray cluster beside the same command in one process: wall, peak
memory of the driver and of each worker, LM calls, and a run whose worker is killed half way, then rerun.

One stub judge (:class:`mitigate.testing.StubOpenAIServer`, latency 0, answering ``Score: 4``, keeping no
request bodies) listens on 127.0.0.1 in this process and counts the requests. The benchmark is the generic
JSONL one of ``bench_scale.py`` (``--n`` items). Every run is one ``mitigate judge`` process as a user runs
it:
``-n 0``, ``--concurrency 64``, ``--no-cache`` (so only the journals can spare a call), ``--run-dir`` and
``--out judgments.jsonl``, stdout to /dev/null. In order:

1. **single**: the command in one process;
2. **ray**: the same with ``--engine ray --workers W --ray-address A``, A a local Ray cluster this script
   starts once (``ray.init(num_cpus=W + 1)``), as a user starts one with ``ray start --head`` (a cluster
   started by each command timed out during startup at a load average of 18 here: Ray waits 30 s at most);
3. **ray, killed**: the ray run in a fresh folder, one worker SIGKILLed when the stub has answered half the
   items (Ray restarts it and runs its batch again, which reads the batch's journal);
4. **ray, rerun**: the command of 3 again in its folder (what a rerun after a killed driver does).

Wall and the driver's peak RSS come from ``wait4``; a worker's peak is the ``VmHWM`` of each
``ray::MapWorker(MapBatches(JudgeBatches))`` process (under this script's cluster), read from /proc every
0.2 s (the largest seen; a killed worker's last reading). Calls: the stub's request count over the run.
Each run's ``--out`` must hold ``n`` rows of score 4, runs 1 and 2 the same bytes: else an error.

    flock /work/bench.lock nice -n 10 python benchmarks/bench_ray.py [--n 100000] [--workers 2]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_scale import REPLY, write_inputs

from mitigate.testing import StubOpenAIServer

REPO = Path(__file__).resolve().parent.parent
OUT = REPO / "benchmarks" / "results" / "ray.json"
WORKER = "MapBatches(JudgeBatches)"


def descendants(pid: int) -> list[int]:
    """Every process under ``pid`` (from /proc; a process that ends meanwhile is skipped)."""
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                ppid = int(Path(f"/proc/{entry}/stat").read_text().rsplit(")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                continue
            children.setdefault(ppid, []).append(int(entry))
    out, todo = [], [pid]
    while todo:
        for child in children.get(todo.pop(), []):
            out.append(child)
            todo.append(child)
    return out


def workers_of(pid: int) -> dict[int, int]:
    """The judge workers under ``pid``: their peak RSS (VmHWM) in kB, by pid."""
    found = {}
    for child in descendants(pid):
        try:
            if WORKER not in Path(f"/proc/{child}/cmdline").read_bytes().decode(errors="replace"):
                continue
            status = Path(f"/proc/{child}/status").read_text()
        except OSError:
            continue
        for line in status.splitlines():
            if line.startswith("VmHWM:"):
                found[child] = int(line.split()[1])
    return found


class Watch(threading.Thread):
    """Reads the workers' peaks under the driver every 0.2 s; with ``kill_at``, SIGKILLs the first worker once
    the stub has answered that many requests."""

    def __init__(self, server: StubOpenAIServer, start_count: int, kill_at: int | None) -> None:
        super().__init__(daemon=True)
        self.server, self.start_count, self.kill_at = server, start_count, kill_at
        self.peaks: dict[int, int] = {}
        self.killed: int | None = None
        self.done = threading.Event()

    def run(self) -> None:
        while not self.done.wait(0.2):
            for pid, peak in workers_of(os.getpid()).items():
                self.peaks[pid] = max(peak, self.peaks.get(pid, 0))
            answered = self.server.request_count - self.start_count
            if self.kill_at is not None and self.killed is None and answered >= self.kill_at and self.peaks:
                victim = min(self.peaks)
                os.kill(victim, signal.SIGKILL)
                self.killed = victim


def judge_run(
    code: Path, items: Path, url: str, folder: Path, server: StubOpenAIServer, extra: list[str], kill_at=None
) -> dict[str, Any]:
    """One ``mitigate judge`` process: wall, driver peak RSS, worker peaks, LM calls, the rows of score 4."""
    folder.mkdir(parents=True, exist_ok=True)
    env = {
        **{k: v for k, v in os.environ.items() if k not in ("OPENAI_BASE_URL", "MITIGATE_DEBUG")},
        "PYTHONPATH": str(code),
        "OPENAI_API_KEY": "sk-bench",
    }
    out = folder / "judgments.jsonl"
    cmd = [
        sys.executable, "-m", "mitigate", "judge", "-b", f"jsonl:{items}", "--prompt",
        str(items.parent / "prompt.txt"), "--backend", "openai:stub-model", "--base-url", url, "-n", "0",
        "--concurrency", "64", "--no-progress", "--no-cache", "--run-dir", str(folder / "run"), "--out",
        str(out), *extra,
    ]  # fmt: skip
    before = server.request_count
    watch = Watch(server, before, kill_at)
    watch.start()
    stderr = folder / "stderr.txt"
    with open(os.devnull, "wb") as devnull, stderr.open("wb") as err:
        t0 = time.perf_counter()
        proc = subprocess.Popen(cmd, env=env, cwd=code, stdout=devnull, stderr=err)
        _, status, usage = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - t0
    watch.done.set()
    watch.join()
    if os.waitstatus_to_exitcode(status) != 0:
        raise RuntimeError(
            f"{' '.join(extra) or 'single'} exited: {stderr.read_text(errors='replace')[-800:]}"
        )
    with out.open(encoding="utf-8") as fh:
        fours = sum(json.loads(line)["score"] == 4 for line in fh)
    summary = next(
        (
            ln
            for ln in stderr.read_text(errors="replace").splitlines()
            if " items (" in ln and "resumed" in ln
        ),
        "",
    )
    return {
        "wall": wall,
        "driver_rss_mb": usage.ru_maxrss / 1024,
        "worker_peak_mb": sorted(round(v / 1024, 1) for v in watch.peaks.values()),
        "killed_worker": watch.killed,
        "calls": server.request_count - before,
        "score_4_rows": fours,
        "summary": summary,
        "out": out,
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=1_000_000, help="items judged per run")
    ap.add_argument("--workers", type=int, default=2, help="Ray actors (--workers)")
    ap.add_argument("--code", type=Path, default=REPO, help="the checkout whose CLI runs (default: this one)")
    ap.add_argument("--out", type=Path, default=OUT, help="where the JSON goes")
    args = ap.parse_args()
    n, code = args.n, args.code.resolve()
    os.environ["PYTHONPATH"] = str(code)  # the cluster's workers import this checkout
    os.environ["OPENAI_API_KEY"] = "sk-bench"
    import ray

    ray.init(num_cpus=args.workers + 1, include_dashboard=False, log_to_driver=False)  # the local cluster
    address = ray.get_runtime_context().gcs_address
    ray_args = ["--engine", "ray", "--workers", str(args.workers), "--ray-address", address]
    rows: dict[str, dict[str, Any]] = {}
    with (
        tempfile.TemporaryDirectory() as tmp,
        StubOpenAIServer(latency=0.0, reply=REPLY, record=False) as server,
    ):
        work = Path(tmp)
        items = write_inputs(work, n)
        url = server.base_url
        runs = {
            "single": ("single", [], None),
            "ray": ("ray", ray_args, None),
            "ray, killed half way": ("kill", ray_args, n // 2),
            "ray, rerun": ("kill", ray_args, None),
        }
        for name, (folder, extra, kill_at) in runs.items():
            rows[name] = row = judge_run(code, items, url, work / folder, server, extra, kill_at)
            print(name, {k: v for k, v in row.items() if k != "out"}, flush=True)
        same = rows["single"]["out"].read_bytes() == rows["ray"]["out"].read_bytes()
        for row in rows.values():
            row["out"] = str(row["out"])
    base = rows["single"]["wall"]
    print(
        f"{n:,} items against the stub, {args.workers} Ray workers, --concurrency 64, "
        f"{os.cpu_count()} CPUs\n\n"
        "| run | wall s | / single | driver peak RSS MB | worker peak RSS MB | LM calls | rows of score 4 |\n"
        "|---|---|---|---|---|---|---|"
    )
    for name, row in rows.items():
        peaks = ", ".join(f"{v:.0f}" for v in row["worker_peak_mb"]) or "-"
        print(
            f"| {name} | {row['wall']:.1f} | {row['wall'] / base:.2f} | {row['driver_rss_mb']:.0f} | "
            f"{peaks} | "
            f"{row['calls']:,} | {row['score_4_rows']:,} |"
        )
    killed = rows["ray, killed half way"]
    print(
        f"\n--out of single and ray byte-identical: {same}; killed worker pid {killed['killed_worker']}; the "
        f"killed run made {killed['calls'] - n:,} calls more than its {n:,} items (in flight in the killed "
        f"worker: sent, never answered to it); the rerun made {rows['ray, rerun']['calls']:,}"
    )
    bad = [k for k, r in rows.items() if r["score_4_rows"] != n]
    if bad or not same or killed["killed_worker"] is None:
        raise SystemExit(f"failed: rows {bad}, identical {same}, killed {killed['killed_worker']}")
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(
        json.dumps(
            {
                "command": "python benchmarks/bench_ray.py " + " ".join(sys.argv[1:]),
                "n": n,
                "workers": args.workers,
                "python": platform.python_version(),
                "cpus": os.cpu_count(),
                "load_avg_after": os.getloadavg(),
                "identical_out": same,
                "rows": rows,
            },
            indent=1,
        )
    )
    print(f"load average {os.getloadavg()}; wrote {args.out}")


if __name__ == "__main__":
    main()
