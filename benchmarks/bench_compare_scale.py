"""`mitigate compare` at scale: wall, peak RSS, report sizes and the time report.html takes to open in
Chromium.

One stub judge (:class:`mitigate.testing._stub_server.StubOpenAIServer`, latency 0, keeping no
request bodies) answers ``Score: N`` with N from 1 to 5 read off a hash of the request's last
message, so scores vary by item and differ between entries whose prompts differ. Each size is
one ``mitigate compare`` process, as a user runs it: the generic JSONL benchmark of
``bench_scale.py`` (``n`` items, four systems, a human score per item), its prompt file, the
``openai:`` backend at ``--base-url``, ``-n 0``, ``--concurrency 64``, the LM cache on (a fresh
folder per run) and the default intervals (``--n-boot 1000``, ``--n-perm 5000``). The entries are
the first ``--entries`` of ``baseline``, ``consistency-hint`` and ``sampling(temperature=0.7, n=1)``:
each a different prompt or request, so each is judged.

Measured from ``wait4`` of the child: wall seconds and peak RSS; then the bytes of
``results.json``, the compare columns (``results.sqlite``, where the checkout writes them) and
``report.html``; then the seconds headless Chromium (``--browser``, default ``chromium``) takes to
load report.html and run its script (``--dump-dom``, wall of the browser process, minus the same
for an empty page: the browser's own start), and whether the dumped page shows the summary table
and the per-item view. A run that exits non-zero is a failure, never a row.

``--code DIR`` runs another checkout's CLI (e.g. main before this work) for a side-by-side; both
can be given at once with ``--baseline DIR``: each size is then run with the baseline first and
this checkout second, and the ratios (this / baseline) printed.

    python benchmarks/bench_compare_scale.py [--sizes 20000] [--entries 2] [--baseline DIR] [--out FILE]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import time
import zlib
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_scale import run_measured, write_inputs

from mitigate.testing import StubOpenAIServer

REPO = Path(__file__).resolve().parent.parent
OUT = REPO / "benchmarks" / "results" / "compare_scale.json"
PIPELINES = ("baseline", "consistency-hint", "sampling(temperature=0.7, n=1)")


def reply(body: dict[str, Any]) -> str:
    """``Score: N``, N in 1..5 from a hash of the last message and the temperature (deterministic)."""
    text = str(body.get("messages", [{}])[-1].get("content", "")) + str(body.get("temperature"))
    return f"The text reads as it should. Score: {1 + zlib.crc32(text.encode()) % 5}"


def browser_seconds(browser: str, page: Path, work: Path) -> tuple[float, str]:
    """Wall seconds of a headless Chromium that loads ``page`` and dumps its DOM after the page's script
    ran."""
    profile = work / f"profile-{time.monotonic_ns()}"
    args = [
        browser,
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-dev-shm-usage",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--disable-extensions",
        "--no-first-run",
        "--no-default-browser-check",
        "--mute-audio",
        f"--user-data-dir={profile}",
        "--virtual-time-budget=5000",
        "--dump-dom",
        page.resolve().as_uri(),
    ]
    t0 = time.perf_counter()
    done = subprocess.run(args, capture_output=True, text=True, timeout=600, check=False)
    wall = time.perf_counter() - t0
    shutil.rmtree(profile, ignore_errors=True)
    if done.returncode != 0:
        raise RuntimeError(f"{browser} exited {done.returncode} on {page}: {done.stderr[-800:]}")
    return wall, done.stdout


def run_compare(
    code: Path, url: str, n: int, entries: int, work: Path, browser: str | None
) -> dict[str, Any]:
    """One ``mitigate compare`` over ``n`` items and ``entries`` entries: wall, peak RSS, sizes, browser
    open."""
    items = work / f"items-{n}.jsonl"
    if not items.exists():
        write_inputs(work, n)
    folder = work / f"compare-{n}-{code.name}"
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir(parents=True)
    env = {
        **{k: v for k, v in os.environ.items() if k not in ("OPENAI_BASE_URL", "MITIGATE_DEBUG")},
        "PYTHONPATH": str(code),
        "OPENAI_API_KEY": "sk-bench",
        "MITIGATE_CACHE_DIR": str(folder / "cache"),
    }
    cmd = [
        sys.executable,
        "-m",
        "mitigate",
        "compare",
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
        "64",
        "--no-progress",
        "--out",
        str(folder / "out"),
    ]
    for p in PIPELINES[:entries]:
        cmd += ["--pipeline", p]
    wall, usage = run_measured(cmd, env, code, folder / "stderr.txt", f"compare over {n} items")
    out = folder / "out"
    sizes = {
        name: (out / name).stat().st_size if (out / name).exists() else None
        for name in ("results.json", "results.sqlite", "report.html")
    }
    row: dict[str, Any] = {
        "code": str(code),
        "n": n,
        "entries": entries,
        "wall": wall,
        "rss_mb": usage.ru_maxrss / 1024,
        "bytes": sizes,
    }
    if browser:
        empty = work / "empty.html"
        empty.write_text("<!DOCTYPE html><html><body>empty</body></html>\n")
        start, _ = browser_seconds(browser, empty, work)
        opened, dom = browser_seconds(browser, out / "report.html", work)
        row["browser_s"] = opened - start
        row["browser_start_s"] = start
        row["renders_summary"] = 'class="summary"' in dom
        row["renders_items"] = 'class="item"' in dom
    shutil.rmtree(folder, ignore_errors=True)
    return row


def _fmt(row: dict[str, Any]) -> str:
    b = row["bytes"]
    mb = {k: "-" if v is None else f"{v / 1e6:.1f}" for k, v in b.items()}
    browser = f"{row['browser_s']:.1f} (+{row['browser_start_s']:.1f} start)" if "browser_s" in row else "-"
    return (
        f"| {Path(row['code']).name} | {row['n']:,} × {row['entries']} | {row['wall']:.1f} | "
        f"{row['rss_mb']:.0f} | {mb['results.json']} | {mb['results.sqlite']} | {mb['report.html']} "
        f"| {browser} |"
    )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", type=int, nargs="+", default=[20_000], help="items per run")
    ap.add_argument("--entries", type=int, default=2, choices=(1, 2, 3), help="entries compared")
    ap.add_argument("--code", type=Path, default=REPO, help="the checkout whose CLI runs (default: this one)")
    ap.add_argument("--baseline", type=Path, default=None, help="another checkout run first at each size")
    ap.add_argument(
        "--browser", default=shutil.which("chromium") or "", help="Chromium to open report.html ('' none)"
    )
    ap.add_argument("--out", type=Path, default=OUT, help="where the JSON goes")
    args = ap.parse_args()
    codes = ([args.baseline.resolve()] if args.baseline else []) + [args.code.resolve()]
    rows = []
    print(
        "| code | items × entries | wall s | peak RSS MB | results.json MB | results.sqlite MB | "
        "report.html MB | open in Chromium s (+ its start) |\n|---|---|---|---|---|---|---|---|",
        flush=True,
    )
    with (
        tempfile.TemporaryDirectory() as tmp,
        StubOpenAIServer(latency=0.0, reply=reply, record=False) as server,
    ):
        for n in args.sizes:
            pair = []
            for code in codes:
                row = run_compare(code, server.base_url, n, args.entries, Path(tmp), args.browser or None)
                rows.append(row)
                pair.append(row)
                print(_fmt(row), flush=True)
            if len(pair) == 2:
                base, new = pair
                ratio = {
                    "wall": new["wall"] / base["wall"],
                    "rss": new["rss_mb"] / base["rss_mb"],
                    "report_html": new["bytes"]["report.html"] / base["bytes"]["report.html"],
                }
                if "browser_s" in new:
                    ratio["browser"] = new["browser_s"] / max(base["browser_s"], 1e-9)
                new["ratio_to_baseline"] = ratio
                print(
                    "ratio this / baseline: " + ", ".join(f"{k} {v:.2f}" for k, v in ratio.items()),
                    flush=True,
                )
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(
        json.dumps(
            {
                "command": "python benchmarks/bench_compare_scale.py " + " ".join(sys.argv[1:]),
                "entries": args.entries,
                "pipelines": list(PIPELINES[: args.entries]),
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
