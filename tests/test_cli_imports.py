"""`mitigate --help` and `mitigate judge` import only what they use (issue 29): no heavy package sneaks back in.

Each check runs a fresh interpreter (this test process has imported everything already) and
reads its ``sys.modules`` at the end; a command module that imports a heavy package at its top
(instead of inside the command, where it is used) fails here, whoever adds the command.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from mitigate.cli.options import ENGINE_NAMES, SELECTOR_NAMES
from mitigate.registry import registered
from mitigate.testing.stub_server import StubOpenAIServer

ROOT = Path(__file__).resolve().parents[1]

HEAVY = ("dspy", "openai", "anthropic", "litellm", "matplotlib", "pandas", "scipy", "sklearn", "torch",
         "llama_cpp", "mitigate.search", "mitigate.harness.plots")
"""Never on the judge path (the openai SDK only where a feature needs it: not for the default transport)."""
NOT_FOR_HELP = (*HEAVY, "numpy", "aiohttp", "httpx", "tqdm", "mitigate.data", "mitigate.judge", "mitigate.prompt",
                "mitigate.run", "mitigate.strategies", "mitigate.harness", "mitigate.measures", "mitigate.selectors")
"""Not imported by ``import mitigate.cli`` (what ``mitigate --help`` and every command load first)."""

DUMP = """
import json, sys
sys.argv = ["mitigate", *json.loads(sys.argv[1])]
from mitigate.cli import main
code = 0
try:
    main()
except SystemExit as exc:
    code = exc.code
sys.stdout.flush()
sys.stderr.write("\\nMODULES " + json.dumps({"code": code, "modules": sorted(sys.modules)}) + "\\n")
"""


def _modules_after(args: list[str], cwd: Path) -> tuple[int, set[str]]:
    """The exit code and the modules loaded by ``mitigate <args>`` in a fresh interpreter."""
    proc = subprocess.run([sys.executable, "-c", DUMP, json.dumps(args)], capture_output=True, text=True, cwd=cwd,
                          env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin", "HOME": str(cwd),
                               "MITIGATE_CACHE_DIR": str(cwd / "cache")}, timeout=300)
    line = next((ln for ln in proc.stderr.splitlines() if ln.startswith("MODULES ")), None)
    assert line is not None, proc.stderr[-2000:]
    found = json.loads(line.removeprefix("MODULES "))
    return found["code"], set(found["modules"])


def _loaded(modules: set[str], names: tuple[str, ...]) -> list[str]:
    return sorted(n for n in names if any(m == n or m.startswith(n + ".") for m in modules))


def test_import_of_the_cli_loads_only_the_command_group_and_the_options(tmp_path):
    code, modules = _modules_after(["--help"], tmp_path)
    assert code == 0
    assert "mitigate.cli.judge" in modules  # the commands are registered ...
    assert _loaded(modules, NOT_FOR_HELP) == []  # ... without what they use


def test_judge_on_an_openai_compatible_server_loads_no_sdk_search_plotting_or_dataframes(tmp_path):
    bench = tmp_path / "items.jsonl"
    bench.write_text(json.dumps({"benchmark": {"name": "t", "criteria": ["fluency"], "scale": [1, 5]}}) + "\n"
                     + "".join(json.dumps({"id": f"i{k}", "output": f"text {k}"}) + "\n" for k in range(3)))
    prompt = tmp_path / "prompt.txt"
    prompt.write_text("Rate the fluency of the text from 1 to 5.\n\nText: {{output}}\n\nAnswer 'Score: N'.")
    with StubOpenAIServer(latency=0.0, reply="Score: 4") as server:
        code, modules = _modules_after(["judge", "-b", f"jsonl:{bench}", "--prompt", str(prompt), "--backend",
                                        "openai:stub-model", "--base-url", server.base_url, "-n", "0",
                                        "--no-progress"], tmp_path)
        assert server.request_count == 3  # the judge really ran
    assert code == 0
    assert "mitigate.run.runner" in modules
    assert _loaded(modules, HEAVY) == []


@pytest.mark.parametrize(("kind", "names"), [("engine", ENGINE_NAMES), ("selector", SELECTOR_NAMES)])
def test_the_names_the_help_lists_are_the_registered_ones(kind, names):
    shipped = [n for n, obj in registered(kind).items() if obj.__module__.startswith("mitigate.")]  # not tests' own
    assert sorted(names) == sorted(shipped)
