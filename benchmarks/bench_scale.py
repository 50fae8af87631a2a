"""`mitigate judge` at 10k, 50k, 100k and 1M items: wall, CPU per judgment, peak RSS and bytes on disk per
item.

One stub judge (:class:`mitigate.testing._stub_server.StubOpenAIServer`, answering ``Score: 4``
after ``--latency`` seconds, 0 by default, and keeping no request bodies) listens on 127.0.0.1
in this process; each size is one ``mitigate judge`` process, as a user runs it: a generic JSONL
benchmark of that many items, a prompt file, the ``openai:`` backend at ``--base-url``, ``-n 0``
(every item), ``--concurrency`` 64, the LM cache on (a fresh folder per size), ``--run-dir`` (the
journal, ``results.json`` and the columns) and ``--out judgments.jsonl``; stdout (one line per
judgment) goes to /dev/null. Measured from ``wait4`` of the child: wall seconds, CPU seconds (user
+ system) per judgment and peak RSS; then the bytes each file takes per item: the journal, the LM
cache (the SQLite file with its WAL), the columns (``results.sqlite``), ``--out`` and
``results.json``. A run that does not print ``n`` judgments of score 4 into ``--out`` is a failure,
never a row.

CPU per judgment is split into *reading* (the answer reader, ``JudgePrompt.format.read`` with the
arguments the judge passes it: the rendered prompt as quoted text and the item's texts as judged
text, timed in this process on 2,000 items) and *the rest* (rendering, HTTP, journal, cache,
outputs: the total minus reading).

``--code DIR`` runs another checkout's CLI (e.g. one before this work) for a side-by-side; that
checkout may write no columns (shown as -). Writes ``benchmarks/results/scale.json``.

    python benchmarks/bench_scale.py [--sizes 10000 50000 100000 1000000] [--latency 0] [--concurrency 64]
    [--code DIR]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from mitigate.testing import StubOpenAIServer

REPO = Path(__file__).resolve().parent.parent
OUT = REPO / "benchmarks" / "results" / "scale.json"
TEMPLATE = (
    "Rate the fluency of the text from 1 to 5.\n\nSource: {{source}}\n\nText: "
    "{{output}}\n\nAnswer 'Score: N'."
)
REPLY = "The text reads well and says what it means. Score: 4"


def write_inputs(work: Path, n: int) -> Path:
    """A generic JSONL benchmark of ``n`` items (a header, then one row per item) and the prompt file."""
    path = work / f"items-{n}.jsonl"
    with path.open("w", encoding="utf-8") as fh:
        fh.write(
            json.dumps({"benchmark": {"name": "scale", "criteria": ["fluency"], "scale": [1, 5]}}) + "\n"
        )
        for k in range(n):
            fh.write(
                json.dumps(
                    {
                        "id": f"t{k:07d}",
                        "system": f"S{k % 4}",
                        "doc_id": f"d{k // 4}",
                        "inputs": {
                            "source": f"Report {k}: the council met on Tuesday and agreed the budget."
                        },
                        "output": f"Text number {k}: the weather was mild and the streets were "
                        "quiet for most of the day.",
                        "human": {"fluency": 1 + k % 5},
                    }
                )
                + "\n"
            )
    (work / "prompt.txt").write_text(TEMPLATE, encoding="utf-8")
    return path


def size_of(*paths: Path) -> int:
    return sum(p.stat().st_size for p in paths if p.exists())


def run_measured(
    cmd: list[str], env: dict[str, str], cwd: Path, stderr: Path, what: str
) -> tuple[float, Any]:
    """Run ``cmd`` (stdout to /dev/null, stderr to ``stderr``): its wall seconds and its ``wait4`` resource
    usage.

    RuntimeError naming ``what`` and the end of stderr when it exits non-zero.
    """
    with open(os.devnull, "wb") as devnull, stderr.open("wb") as err:
        t0 = time.perf_counter()
        proc = subprocess.Popen(cmd, env=env, cwd=cwd, stdout=devnull, stderr=err)
        _, status, usage = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - t0
    exit_code = os.waitstatus_to_exitcode(status)
    if exit_code != 0:
        raise RuntimeError(f"{what} exited {exit_code}: {stderr.read_text(errors='replace')[-800:]}")
    return wall, usage


def run_size(code: Path, url: str, n: int, c: int, work: Path) -> dict[str, Any]:
    """One ``mitigate judge`` over ``n`` items; its wall, CPU, peak RSS and bytes on disk per item."""
    items = write_inputs(work, n)
    folder = work / f"run-{n}"
    cache, run_dir, out = folder / "cache", folder / "run", folder / "judgments.jsonl"
    env = {
        **{k: v for k, v in os.environ.items() if k not in ("OPENAI_BASE_URL", "MITIGATE_DEBUG")},
        "PYTHONPATH": str(code),
        "OPENAI_API_KEY": "sk-bench",
        "MITIGATE_CACHE_DIR": str(cache),
    }
    cmd = [
        sys.executable,
        "-m",
        "mitigate",
        "judge",
        "-b",
        f"jsonl:{items}",
        "--prompt",
        str(work / "prompt.txt"),
        "--backend",
        "openai:stub-model",
        "--base-url",
        url,
        "-n",
        "0",
        "--concurrency",
        str(c),
        "--no-progress",
        "--run-dir",
        str(run_dir),
        "--out",
        str(out),
    ]
    wall, usage = run_measured(cmd, env, code, folder.parent / f"stderr-{n}.txt", f"judge over {n} items")
    scored = 0
    with out.open(encoding="utf-8") as fh:
        for line in fh:
            scored += json.loads(line)["score"] == 4
    if scored != n:
        raise RuntimeError(f"judge over {n} items wrote {scored} rows of score 4 into --out")
    cpu = usage.ru_utime + usage.ru_stime
    disk = {
        "journal": size_of(run_dir / "journal.jsonl"),
        "cache": size_of(*(cache / f"lm_cache.sqlite{s}" for s in ("", "-wal", "-shm"))),
        "columns": size_of(run_dir / "results.sqlite") if (run_dir / "results.sqlite").exists() else None,
        "out": size_of(out),
        "results_json": size_of(run_dir / "results.json"),
    }
    for path in (items, out, run_dir / "journal.jsonl", run_dir / "results.sqlite"):
        path.unlink(missing_ok=True)
    for path in cache.glob("*"):
        path.unlink()
    return {
        "n": n,
        "wall": wall,
        "cpu": cpu,
        "cpu_ms_per_judgment": 1000 * cpu / n,
        "rss_mb": usage.ru_maxrss / 1024,
        "bytes_per_item": {k: (None if v is None else v / n) for k, v in disk.items()},
    }


def reading_cost(k: int = 2000) -> float:
    """Milliseconds the answer reader takes per judgment, with the arguments the judge passes it."""
    from mitigate import Item, JudgePrompt

    jp = JudgePrompt.from_template(TEMPLATE, criterion="fluency")
    items = [
        Item(
            id=f"t{i}",
            output=f"Text number {i}: the weather was mild and the streets were quiet for most of the day.",
            inputs={"source": f"Report {i}: the council met on Tuesday and agreed the budget."},
        )
        for i in range(k)
    ]
    shown = [tuple(m.content for m in jp.render(it)) for it in items]
    echoes = jp.echo_lines()
    cues = ("fluency",)
    t0 = time.process_time()
    for it, quoted in zip(items, shown, strict=True):
        if jp.format.read(REPLY, jp.scale, echoes=echoes, cues=cues, quoted=quoted, judged=it.texts()) != 4:
            raise RuntimeError("the reader did not read the stub's score")
    return 1000 * (time.process_time() - t0) / k


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument(
        "--sizes", type=int, nargs="+", default=[10_000, 50_000, 100_000, 1_000_000], help="items per run"
    )
    ap.add_argument("--latency", type=float, default=0.0, help="the stub judge's latency in seconds")
    ap.add_argument("--concurrency", type=int, default=64)
    ap.add_argument("--code", type=Path, default=REPO, help="the checkout whose CLI runs (default: this one)")
    ap.add_argument("--out", type=Path, default=OUT, help="where the JSON goes")
    args = ap.parse_args()
    rows = []
    read_ms = reading_cost()
    print(
        "| items | wall s | CPU ms / judgment (reading + rest) | peak RSS MB | journal B/item | cache "
        "B/item | columns B/item | --out B/item | results.json B |\n|---|---|---|---|---|---|---|---|---|",
        flush=True,
    )
    with (
        tempfile.TemporaryDirectory() as tmp,
        StubOpenAIServer(latency=args.latency, reply=REPLY, record=False) as server,
    ):
        for n in args.sizes:
            row = run_size(args.code.resolve(), server.base_url, n, args.concurrency, Path(tmp))
            rows.append(row)
            b = row["bytes_per_item"]
            cols = "-" if b["columns"] is None else f"{b['columns']:.0f}"
            print(
                f"| {n:,} | {row['wall']:.1f} | {row['cpu_ms_per_judgment']:.2f} ({read_ms:.2f} + "
                f"{row['cpu_ms_per_judgment'] - read_ms:.2f}) | {row['rss_mb']:.0f} | {b['journal']:.0f} | "
                f"{b['cache']:.0f} | {cols} | {b['out']:.0f} | {b['results_json'] * n:.0f} |",
                flush=True,
            )
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(
        json.dumps(
            {
                "command": "python benchmarks/bench_scale.py " + " ".join(sys.argv[1:]),
                "code": str(args.code),
                "latency_s": args.latency,
                "concurrency": args.concurrency,
                "reading_ms_per_judgment": read_ms,
                "python": platform.python_version(),
                "cpus": os.cpu_count(),
                "load_avg_after": os.getloadavg(),
                "rows": rows,
            },
            indent=1,
        )
    )
    print(f"load average {os.getloadavg()}; wrote {args.out}")


if __name__ == "__main__":
    main()
