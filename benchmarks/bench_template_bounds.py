"""Oversized templates (issue 45, item 3) through the CLI, this checkout beside a baseline: refused in one
line, how fast, at what peak memory.

Each case is a judge template of a few hundred characters that builds gigabytes unless the sandbox bounds it
while building: the issue's forms (a ``{% set %}`` block of a loop, 2 GB and 10 GB; ``{% filter %}``;
``|string``, ``|tojson``, ``~`` of a shared list; ``tojson(indent=10**9)``; ``|join`` of nested lists; a loop
over the judged text's slot), and with ``--generated`` every size bomb of
:data:`tests.support.hostile_templates.SIZE_PAYLOADS`. Each runs as ``mitigate judge --dry-run`` and as
``mitigate judge --run-dir`` (a stub server that must get no request), each in its own process under a
``--memory`` address-space cap and a ``--timeout``; a benign template run the same way gives the start-up
floor. Per run: exit code, wall seconds, CPU seconds and peak RSS of the process (``wait4``), whether stderr
is one ``error:`` line, and whether it says "a bug in mitigate".

    python benchmarks/bench_template_bounds.py [--baseline-code DIR] [--generated]

Writes ``benchmarks/results/template_bounds.json``.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from mitigate.testing import StubOpenAIServer  # noqa: E402
from tests.support.hostile_templates import SIZE_PAYLOADS  # noqa: E402

_X = '{% set x = "x" * 40000 %}'
ISSUE_FORMS = {
    "benign (start-up floor)": "",
    "set block, 2 GB": _X + "{% set s %}{% for i in range(10000) %}{% for j in range(5) %}{{ x }}"
    "{% endfor %}{% endfor %}{% endset %}",
    "set block, 10 GB": '{% set x = "x" * 200000 %}{% set s %}{% for i in range(10000) %}'
    "{% for j in range(5) %}{{ x }}{% endfor %}{% endfor %}{% endset %}",
    "filter block, 2 GB": _X + "{% filter upper %}{% for i in range(10000) %}{% for j in range(5) %}{{ x }}"
    "{% endfor %}{% endfor %}{% endfilter %}",
    "|string of a shared list": '{% set l = ["x" * 100000] * 10000 %}{% set s = l|string %}',
    "|tojson of a shared list": '{% set l = ["x" * 100000] * 10000 %}{% set s = l|tojson %}',
    "~ of a shared list": '{% set l = ["x" * 100000] * 10000 %}{% set s = l ~ "" %}',
    "tojson(indent=10**9)": "{% set s = [1, 2, 3]|tojson(indent=10**9) %}",
    "|join of nested lists": '{% set l = [["x" * 1000] * 1000] * 1000 %}{% set s = l|join %}',
    "loop over the slot": "{% for i in range(10000) %}{{ summary }}{% endfor %}",
}
PROMPT = (
    "Rate the fluency of the summary from 1 to 5.\n{payload}\nArticle: {{{{source}}}}\n"
    "Summary: {{{{summary}}}}\nScore:"
)


def _run(code: Path, args: list[str], env: dict[str, str], memory: int, timeout: float) -> dict[str, Any]:
    """One CLI process of ``code``: exit (None: timed out), wall and CPU seconds, peak RSS, stderr."""

    def cap() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (memory, memory))

    with tempfile.TemporaryFile() as err:
        start = time.perf_counter()
        proc = subprocess.Popen(
            [sys.executable, "-m", "mitigate", *args],
            cwd=code,
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=err,
            preexec_fn=cap,
        )
        deadline = start + timeout
        status = usage = None
        while time.perf_counter() < deadline:
            pid, status, usage = os.wait4(proc.pid, os.WNOHANG)
            if pid:
                break
            time.sleep(0.02)
        else:
            proc.kill()
            _, status, usage = os.wait4(proc.pid, 0)
            status = None
        proc.returncode = 0  # reaped above
        wall = time.perf_counter() - start
        err.seek(0)
        stderr = err.read().decode("utf-8", "replace")
    assert usage is not None
    lines = stderr.splitlines()
    return {
        "exit": None if status is None else os.waitstatus_to_exitcode(status),
        "wall_s": round(wall, 2),
        "cpu_s": round(usage.ru_utime + usage.ru_stime, 2),
        "peak_mb": round(usage.ru_maxrss / 1024, 1),
        "one_line": len(lines) == 1 and lines[0].startswith("error: "),
        "bug": "a bug in mitigate" in stderr,
        "first_line": lines[0][:200] if lines else "",
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--code", type=Path, default=ROOT, help="the checkout to measure (default: this one)")
    parser.add_argument("--baseline-code", type=Path, default=None, help="a checkout to run side by side")
    parser.add_argument("--generated", action="store_true", help="also every generated size bomb")
    parser.add_argument("--memory", type=int, default=3 * 2**30, help="address-space cap per process (bytes)")
    parser.add_argument("--timeout", type=float, default=90.0, help="seconds before a process counts as hung")
    parser.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "results" / "template_bounds.json")
    a = parser.parse_args()
    cases = dict(ISSUE_FORMS)
    if a.generated:
        cases.update({p.name: p.jinja for p in SIZE_PAYLOADS})
    arms = {"this": a.code.resolve()}
    if a.baseline_code is not None:
        arms["baseline"] = a.baseline_code.resolve()
    rows: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory() as tmp, StubOpenAIServer(latency=0.0) as server:
        work = Path(tmp)
        bench = work / "bench.jsonl"
        row = {"id": "x0", "output": "word " * 20000, "inputs": {"source": "An article."}}
        bench.write_text(json.dumps(row) + "\n", encoding="utf-8")
        for k, (name, payload) in enumerate(cases.items()):
            prompt = work / f"t{k}.txt"
            prompt.write_text(PROMPT.format(payload=payload), encoding="utf-8")
            common = ["judge", "-b", f"jsonl:{bench}", "-c", "fluency", "--prompt", str(prompt)]
            common += ["--backend", "openai:stub-model", "--base-url", server.base_url, "--no-progress"]
            commands = {"judge --dry-run": [*common, "--dry-run"], "judge": [*common, "--run-dir", "RUN"]}
            for arm, code in arms.items():
                env = {k: v for k, v in os.environ.items() if k not in ("OPENAI_BASE_URL", "MITIGATE_DEBUG")}
                env.update(
                    PYTHONPATH=str(code), MITIGATE_CACHE_DIR=str(work / "cache"), OPENAI_API_KEY="sk-b"
                )
                for command, args in commands.items():
                    args = [x.replace("RUN", str(work / f"run-{arm}-{k}")) for x in args]
                    before = server.request_count
                    out = _run(code, args, env, a.memory, a.timeout)
                    out.update(case=name, arm=arm, command=command, requests=server.request_count - before)
                    rows.append(out)
                    print(
                        f"{arm:8s} {command:15s} {name:42s} exit {out['exit']!s:4s} "
                        f"{out['wall_s']:6.2f} s wall {out['cpu_s']:6.2f} s cpu {out['peak_mb']:7.1f} MB  "
                        f"one line: {out['one_line']!s:5s} bug: {out['bug']!s:5s} {out['first_line'][:90]}",
                        flush=True,
                    )
    a.out.parent.mkdir(parents=True, exist_ok=True)
    a.out.write_text(
        json.dumps({"arms": {k: str(v) for k, v in arms.items()}, "rows": rows}, indent=1) + "\n"
    )
    for arm in arms:
        bombs = [r for r in rows if r["arm"] == arm and not r["case"].startswith("benign")]
        floor = [r for r in rows if r["arm"] == arm and r["case"].startswith("benign")]
        held = [r for r in bombs if r["exit"] == 2 and r["one_line"] and not r["bug"] and r["requests"] == 0]
        print(
            f"{arm}: {len(held)} of {len(bombs)} runs refused in one line with exit 2 and no request; "
            f"worst wall {max(r['wall_s'] for r in bombs):.2f} s (start-up floor "
            f"{max(r['wall_s'] for r in floor):.2f} s), worst CPU {max(r['cpu_s'] for r in bombs):.2f} s "
            f"(floor {max(r['cpu_s'] for r in floor):.2f} s), worst peak "
            f"{max(r['peak_mb'] for r in bombs):.0f} MB "
            f"(floor {max(r['peak_mb'] for r in floor):.0f} MB)"
        )
    print(f"wrote {a.out}")


if __name__ == "__main__":
    main()
