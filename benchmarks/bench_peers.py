"""The same 1,000 judgments through mitigate and through its peers: wall, client CPU and peak RSS.

One stub judge (:class:`mitigate.testing._stub_server.StubOpenAIServer`) listens on 127.0.0.1
and answers every chat request after ``--latency`` seconds (0.2 by default), in the format
each tool asks for: ``Score: 4`` as text, a JSON object for a ``response_format`` request
(built from its JSON schema), the forced tool call for a ``tool_choice`` request. Each tool
judges the same ``--n`` texts with at most ``c`` requests in flight, as a whole command in its
own process (start-up, imports, reading the items, judging, writing results, exit):

- ``mitigate``: ``mitigate judge`` on a generic JSONL benchmark with a prompt file and the
  ``openai:`` backend at ``--base-url`` (``--no-cache``, no progress bar);
- ``autoevals``: an ``LLMClassifier`` (``eval_async``, a semaphore of ``c``);
- ``openevals``: ``create_async_llm_as_judge`` with an ``AsyncOpenAI`` client;
- ``deepeval``: a ``GEval`` metric with given evaluation steps and a ``DeepEvalBaseLLM``
  over ``AsyncOpenAI`` (``a_measure``, a semaphore of ``c``);
- ``inspect-ai``: an ``eval`` of a task of ``n`` samples (``generate()`` and a ``pattern``
  scorer) on the OpenAI-compatible provider, ``max_connections=c``;
- ``floor``: a bare aiohttp loop with mitigate's interpreter (the same requests, a semaphore
  of ``c``, the answers only counted): no tool can do less against this stub, so its wall is
  the reachable ideal beside the arithmetic one ``n * L / c``.

Each peer is installed by this script into its own virtual environment under
``~/.cache/mitigate/bench_peers`` (pinned versions, see ``PEERS``; reinstalled when the pins
change), so no peer's dependencies touch mitigate's. A run that does not return ``n`` judgments
with the stub's score is reported as a failure, never timed.

Repetitions are interleaved (every tool at every c, then again, the tool order rotated each
time), so a change of machine load hits every tool alike; the table shows the medians of
wall seconds, client CPU seconds (user + system of the child, from ``wait4``) and peak RSS, as
ratios to the ideal wall ``n * L / c`` and to mitigate. It also times ``mitigate --help`` and
reruns of the same ``n`` judgments that make no LM call (from the LM cache; from a complete
``--run-dir`` journal); ``--fixed-only`` times those alone and stops.
Writes ``benchmarks/results/peers.json``.

    python benchmarks/bench_peers.py [--n 1000] [--latency 0.2] [--concurrency 16 64] [--reps 3]
    [--fixed-only]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from mitigate.testing import StubOpenAIServer

OUT = Path(__file__).resolve().parent / "results" / "peers.json"
CACHE = Path(os.environ.get("MITIGATE_BENCH_CACHE", Path.home() / ".cache" / "mitigate" / "bench_peers"))
TEMPLATE = "Rate the fluency of the text from 1 to 5.\n\nText: {{output}}\n\nAnswer 'Score: N'."
OPENAI = "openai==3.57.0"
PEERS: dict[str, list[str]] = {
    "autoevals": ["autoevals==0.4.1", OPENAI],
    "openevals": ["openevals==0.2.2", OPENAI],
    "deepeval": ["deepeval==4.3.1", OPENAI],
    "inspect": ["inspect-ai==0.3.285", OPENAI],
}
"""Each peer's pinned requirements (installed into its own venv)."""

COMMON = """
import asyncio, json, sys
url, n, c, path = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
rows = [json.loads(line) for line in open(path, encoding="utf-8")][1:][:n]
PROMPT = __PROMPT__
def prompt_for(row):
    return PROMPT.replace("{{output}}", row["output"])
""".replace("__PROMPT__", repr(TEMPLATE))

SCRIPTS: dict[str, str] = {
    "floor": COMMON
    + """
import aiohttp
async def main():
    sem = asyncio.Semaphore(c)
    async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=c)) as session:
        async def one(row):
            body = {"model": "stub-model", "messages": [{"role": "user", "content": prompt_for(row)}]}
            async with sem, session.post(url.rstrip("/") + "/chat/completions", json=body) as r:
                return (await r.json())["choices"][0]["message"]["content"]
        res = await asyncio.gather(*(one(r) for r in rows))
    print(json.dumps({"ok": sum(1 for r in res if r.strip() == "Score: 4")}))
asyncio.run(main())
""",
    "autoevals": COMMON
    + """
from openai import AsyncOpenAI
from autoevals.llm import LLMClassifier
client = AsyncOpenAI(base_url=url, api_key="sk-stub", max_retries=0)
clf = LLMClassifier("fluency", PROMPT.replace("{{output}}", "{{output}}"), {"1": 0.0, "2": 0.25, "3": 0.5, "4": 0.75,
                    "5": 1.0}, model="stub-model", use_cot=False, client=client)
async def main():
    sem = asyncio.Semaphore(c)
    async def one(row):
        async with sem:
            return await clf.eval_async(output=row["output"])
    res = await asyncio.gather(*(one(r) for r in rows))
    print(json.dumps({"ok": sum(1 for r in res if r.score == 0.75)}))
asyncio.run(main())
""",  # noqa: E501 - a peer tool's script, run as written
    "openevals": COMMON
    + """
from openai import AsyncOpenAI
from openevals.llm import create_async_llm_as_judge
client = AsyncOpenAI(base_url=url, api_key="sk-stub", max_retries=0)
judge = create_async_llm_as_judge(prompt=PROMPT.replace("{{output}}", "{outputs}"), judge=client, model="stub-model",
                                  choices=[0.0, 0.25, 0.5, 0.75, 1.0], feedback_key="fluency")
async def main():
    sem = asyncio.Semaphore(c)
    async def one(row):
        async with sem:
            return await judge(outputs=row["output"])
    res = await asyncio.gather(*(one(r) for r in rows))
    print(json.dumps({"ok": sum(1 for r in res if r["score"] == 0.75)}))
asyncio.run(main())
""",  # noqa: E501 - a peer tool's script, run as written
    "deepeval": COMMON
    + """
from openai import AsyncOpenAI, OpenAI
from deepeval.metrics import GEval
from deepeval.models import DeepEvalBaseLLM
from deepeval.test_case import LLMTestCase, LLMTestCaseParams
class Stub(DeepEvalBaseLLM):
    def __init__(self):
        self.aclient = AsyncOpenAI(base_url=url, api_key="sk-stub", max_retries=0)
        self.client = OpenAI(base_url=url, api_key="sk-stub", max_retries=0)
    def load_model(self):
        return self.client
    def get_model_name(self):
        return "stub-model"
    def _answer(self, text, schema):
        return schema.model_validate_json(text) if schema is not None else text
    def generate(self, prompt, schema=None):
        r = self.client.chat.completions.create(model="stub-model", messages=[{"role": "user", "content": prompt}],
                                                response_format={"type": "json_object"})
        return self._answer(r.choices[0].message.content, schema)
    async def a_generate(self, prompt, schema=None):
        r = await self.aclient.chat.completions.create(model="stub-model",
                                                       messages=[{"role": "user", "content": prompt}],
                                                       response_format={"type": "json_object"})
        return self._answer(r.choices[0].message.content, schema)
metric = GEval(name="fluency", evaluation_steps=["Read the text.", "Rate its fluency from 1 to 5."],
               evaluation_params=[LLMTestCaseParams.INPUT, LLMTestCaseParams.ACTUAL_OUTPUT], model=Stub(),
               async_mode=True, verbose_mode=False)
async def main():
    sem = asyncio.Semaphore(c)
    async def one(row):
        async with sem:
            m = metric.__class__(name="fluency", evaluation_steps=metric.evaluation_steps,
                                 evaluation_params=metric.evaluation_params, model=metric.model, async_mode=True)
            return await m.a_measure(LLMTestCase(input=PROMPT, actual_output=row["output"]), _show_indicator=False)
    res = await asyncio.gather(*(one(r) for r in rows))
    print(json.dumps({"ok": sum(1 for r in res if r is not None and abs(r - 0.4) < 1e-9)}))
asyncio.run(main())
""",  # noqa: E501 - a peer tool's script, run as written
    "inspect": COMMON
    + """
import os, tempfile
os.environ["STUB_BASE_URL"] = url
os.environ["STUB_API_KEY"] = "sk-stub"
from inspect_ai import Task, eval as inspect_eval
from inspect_ai.dataset import Sample
from inspect_ai.scorer import pattern
from inspect_ai.solver import generate
task = Task(dataset=[Sample(input=prompt_for(r), target="4", id=r["id"]) for r in rows], solver=generate(),
            scorer=pattern(r"Score: (\\d)"))
with tempfile.TemporaryDirectory() as logs:
    log = inspect_eval(task, model="openai-api/stub/stub-model", max_connections=c, max_samples=c, display="none",
                       log_dir=logs, max_retries=0, fail_on_error=True)[0]
    ok = 0
    if log.status == "success" and log.results is not None:
        acc = log.results.scores[0].metrics["accuracy"].value
        ok = round(acc * log.results.completed_samples)
    print(json.dumps({"ok": ok}))
""",  # noqa: E501 - a peer tool's script, run as written
}


def example_of(schema: Any) -> Any:
    """A value of a JSON schema, as a judge would fill it: the 4th of an enum (or its last), true, 4, 0.75,
    "ok"."""
    if not isinstance(schema, dict):
        return "ok"
    if "enum" in schema:
        values = schema["enum"]
        return values[3] if len(values) > 3 else values[-1]
    kind = schema.get("type")
    if kind == "object" or "properties" in schema:
        return {k: example_of(v) for k, v in (schema.get("properties") or {}).items()}
    if kind == "boolean":
        return True
    if kind == "integer":
        return 4
    if kind == "number":
        return 0.75
    if kind == "array":
        return [example_of(schema.get("items"))]
    for key in ("anyOf", "oneOf"):
        if key in schema:
            return example_of(schema[key][0])
    return "ok"


def reply(body: dict[str, Any]) -> str:
    """The stub's answer in the format the request asks for (see the module docstring)."""
    tools = body.get("tools")
    if tools:
        return json.dumps(example_of(tools[0]["function"].get("parameters")))
    fmt = body.get("response_format") or {}
    if fmt.get("type") == "json_schema":
        return json.dumps(example_of(fmt["json_schema"]["schema"]))
    if fmt.get("type") == "json_object":
        return json.dumps({"score": 4, "reason": "ok"})
    return "Score: 4"


def ensure_venv(name: str) -> Path:
    """The python of ``name``'s own virtual environment, created and filled with its pins when missing or
    stale."""
    folder = CACHE / f"venv-{name}"
    pins = " ".join(PEERS[name])
    marker = folder / ".ok"
    if not (marker.exists() and marker.read_text().strip() == pins):
        shutil.rmtree(folder, ignore_errors=True)
        print(f"installing {pins} into {folder}", flush=True)
        subprocess.run([sys.executable, "-m", "venv", str(folder)], check=True)
        subprocess.run([str(folder / "bin" / "pip"), "install", "-q", *PEERS[name]], check=True)
        marker.write_text(pins)
    return folder / "bin" / "python"


def timed(cmd: list[str], *, env: dict[str, str], cwd: Path, stdout: Path) -> dict[str, float]:
    """Run ``cmd``; its wall seconds, CPU seconds (user + system, from wait4) and peak RSS in MB."""
    with stdout.open("wb") as out, (cwd / "stderr.txt").open("wb") as err:
        t0 = time.perf_counter()
        proc = subprocess.Popen(cmd, env=env, cwd=cwd, stdout=out, stderr=err)
        _, status, usage = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - t0
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode != 0:
        tail = (cwd / "stderr.txt").read_text(errors="replace")[-800:]
        raise RuntimeError(f"{cmd[:3]} exited {proc.returncode}: {tail}")
    return {"wall": wall, "cpu": usage.ru_utime + usage.ru_stime, "rss_mb": usage.ru_maxrss / 1024}


def run_tool(tool: str, python: Path, url: str, n: int, c: int, work: Path) -> dict[str, float]:
    """One timed run of ``tool`` over ``n`` items at concurrency ``c``; raises unless all ``n`` came back
    scored 4."""
    env = {
        **os.environ,
        "OPENAI_API_KEY": "sk-stub",
        "DEEPEVAL_TELEMETRY_OPT_OUT": "YES",
        "LANGSMITH_TRACING": "false",
        "INSPECT_DISPLAY": "none",
        "NO_COLOR": "1",
        "ERROR_REPORTING": "NO",
    }
    cwd = Path(tempfile.mkdtemp(dir=work, prefix=f"{tool}-"))
    out = cwd / "stdout.txt"
    if tool == "mitigate":
        cmd = [
            str(python),
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
            str(n),
            "--concurrency",
            str(c),
            "--no-progress",
            "--no-cache",
        ]
        m = timed(cmd, env=env, cwd=cwd, stdout=out)
        ok = sum(1 for line in out.read_text().splitlines() if "\tjudge=4\t" in line)
    else:
        script = cwd / "run.py"
        script.write_text(SCRIPTS[tool])
        m = timed(
            [str(python), str(script), url, str(n), str(c), str(work / "items.jsonl")],
            env=env,
            cwd=cwd,
            stdout=out,
        )
        ok = json.loads(out.read_text().strip().splitlines()[-1])["ok"]
    if ok != n:
        raise RuntimeError(f"{tool} at c={c} returned {ok} of {n} judgments with the stub's score")
    shutil.rmtree(cwd, ignore_errors=True)
    return m


def write_inputs(work: Path, n: int) -> None:
    """The items (generic JSONL with a header) and the prompt file every tool reads."""
    with (work / "items.jsonl").open("w", encoding="utf-8") as fh:
        fh.write(
            json.dumps({"benchmark": {"name": "peers", "criteria": ["fluency"], "scale": [1, 5]}}) + "\n"
        )
        for k in range(n):
            fh.write(
                json.dumps(
                    {
                        "id": f"t{k}",
                        "output": f"Text number {k}: the weather was mild and the streets "
                        "were quiet for most of the day.",
                        "human": {"fluency": 4},
                    }
                )
                + "\n"
            )
    (work / "prompt.txt").write_text(TEMPLATE, encoding="utf-8")


def fixed_costs(url: str, n: int, work: Path) -> dict[str, float]:
    """Median walls of ``mitigate --help`` (5 runs) and of reruns of ``n`` judgments (3 each) that make no LM
    call:
    answered from the LM cache (a cache folder of its own), and resumed from a complete ``--run-dir``
    journal."""
    env = {**os.environ, "OPENAI_API_KEY": "sk-stub", "MITIGATE_CACHE_DIR": str(work / "lm-cache")}
    helps = [
        timed([sys.executable, "-m", "mitigate", "--help"], env=env, cwd=work, stdout=work / "help.txt")[
            "wall"
        ]
        for _ in range(5)
    ]
    cmd = [
        sys.executable,
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
        str(n),
        "--concurrency",
        "64",
        "--no-progress",
    ]
    out: dict[str, float] = {"help_wall": statistics.median(helps)}
    for name, extra in (("cached_rerun", []), ("journal_rerun", ["--run-dir", str(work / "run")])):
        timed(cmd + extra, env=env, cwd=work, stdout=work / "first.txt")
        reruns = [timed(cmd + extra, env=env, cwd=work, stdout=work / "rerun.txt") for _ in range(3)]
        if sum(1 for line in (work / "rerun.txt").read_text().splitlines() if "\tjudge=4\t" in line) != n:
            raise RuntimeError(f"the {name} did not print {n} judgments")
        out[f"{name}_wall"] = statistics.median(r["wall"] for r in reruns)
        out[f"{name}_cpu"] = statistics.median(r["cpu"] for r in reruns)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=1000, help="judgments per run")
    ap.add_argument("--latency", type=float, default=0.2, help="the stub judge's latency in seconds")
    ap.add_argument("--concurrency", type=int, nargs="+", default=[16, 64])
    ap.add_argument("--reps", type=int, default=3, help="interleaved repetitions")
    ap.add_argument(
        "--tools",
        nargs="+",
        default=["mitigate", *PEERS, "floor"],
        choices=["mitigate", *PEERS, "floor"],
        help="'floor' is a bare aiohttp loop (no prompt file, no parsing, no output): the least "
        "any client spends against this stub",
    )
    ap.add_argument("--install-only", action="store_true", help="create the peers' environments and stop")
    ap.add_argument(
        "--fixed-only",
        action="store_true",
        help="time mitigate's fixed costs alone (--help, the "
        "cached and the journal reruns), print them and stop: no peer runs, no JSON written",
    )
    args = ap.parse_args()
    if args.fixed_only:
        args.tools = ["mitigate"]
    pythons = {t: Path(sys.executable) if t in ("mitigate", "floor") else ensure_venv(t) for t in args.tools}
    if args.install_only:
        return
    versions = {t: " ".join(PEERS[t]) for t in args.tools if t in PEERS}
    load_before = os.getloadavg()
    runs: dict[str, list[dict[str, float]]] = {}
    with tempfile.TemporaryDirectory() as tmp, StubOpenAIServer(latency=args.latency, reply=reply) as server:
        work = Path(tmp)
        write_inputs(work, args.n)
        fixed = fixed_costs(server.base_url, args.n, work)
        print(
            f"mitigate --help {fixed['help_wall']:.2f} s; rerun of {args.n} judgments from the LM cache "
            f"{fixed['cached_rerun_wall']:.2f} s wall ({fixed['cached_rerun_cpu']:.2f} CPU-s), from the "
            f"journal {fixed['journal_rerun_wall']:.2f} s wall ({fixed['journal_rerun_cpu']:.2f} CPU-s)",
            flush=True,
        )
        if args.fixed_only:
            print(f"load average {os.getloadavg()}")
            return
        for rep in range(args.reps):
            for c in args.concurrency:
                order = args.tools[rep % len(args.tools) :] + args.tools[: rep % len(args.tools)]
                for tool in order:
                    server.reset()
                    m = run_tool(tool, pythons[tool], server.base_url, args.n, c, work)
                    runs.setdefault(f"{tool}@{c}", []).append(m)
                    print(
                        f"rep {rep + 1} c={c:3d} {tool:10s} wall {m['wall']:6.2f} s  CPU {m['cpu']:6.2f} s "
                        f" RSS {m['rss_mb']:5.0f} MB",
                        flush=True,
                    )
    rows = table(runs, args)
    OUT.parent.mkdir(parents=True, exist_ok=True)
    OUT.write_text(
        json.dumps(
            {
                "command": "python benchmarks/bench_peers.py " + " ".join(sys.argv[1:]),
                "n": args.n,
                "latency_s": args.latency,
                "reps": args.reps,
                "versions": versions,
                "python": platform.python_version(),
                "cpus": os.cpu_count(),
                "load_avg_before": load_before,
                "load_avg_after": os.getloadavg(),
                "fixed": fixed,
                "rows": rows,
                "runs": runs,
            },
            indent=1,
        )
    )
    print(f"load average before {load_before}, after {os.getloadavg()}; wrote {OUT}")


def table(runs: dict[str, list[dict[str, float]]], args: argparse.Namespace) -> list[dict[str, Any]]:
    """Medians per tool and c, as ratios to the ideal wall and to mitigate; printed as a markdown table."""
    rows = []
    print(
        "\n| c | tool | wall s | wall / ideal | wall / mitigate | CPU-s | CPU ms per judgment | CPU / "
        "mitigate | peak RSS MB | RSS / mitigate |\n|---|---|---|---|---|---|---|---|---|---|"
    )
    for c in args.concurrency:
        ideal = args.n * args.latency / c
        med = {
            t: {k: statistics.median(r[k] for r in runs[f"{t}@{c}"]) for k in ("wall", "cpu", "rss_mb")}
            for t in args.tools
        }
        base = med.get("mitigate")
        for t in args.tools:
            m = med[t]
            row = {
                "c": c,
                "tool": t,
                "ideal_wall": ideal,
                **m,
                "wall_over_ideal": m["wall"] / ideal,
                "cpu_ms_per_judgment": 1000 * m["cpu"] / args.n,
            }
            if base:
                row.update(
                    wall_over_mitigate=m["wall"] / base["wall"],
                    cpu_over_mitigate=m["cpu"] / base["cpu"],
                    rss_over_mitigate=m["rss_mb"] / base["rss_mb"],
                )
            rows.append(row)
            print(
                f"| {c} (ideal {ideal:.1f} s) | {t} | {m['wall']:.2f} | {row['wall_over_ideal']:.2f} | "
                f"{row.get('wall_over_mitigate', float('nan')):.2f} | {m['cpu']:.2f} | "
                f"{row['cpu_ms_per_judgment']:.2f} | {row.get('cpu_over_mitigate', float('nan')):.2f} | "
                f"{m['rss_mb']:.0f} | {row.get('rss_over_mitigate', float('nan')):.2f} |"
            )
    return rows


if __name__ == "__main__":
    main()
