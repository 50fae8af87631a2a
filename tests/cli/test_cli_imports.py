"""What each command line imports: `mitigate --help` none of the commands, a command's help its own module and
no heavy optional package, `mitigate judge` only what it uses.

Each check runs a fresh interpreter (this test process has imported everything already) and
reads its ``sys.modules`` at exit. The group imports a command's module only when that command is
asked for (:data:`mitigate.cli._commands.COMMANDS`), so a command module may import at its top what
its command needs, and no other command pays for it; what only some options need (the strategies
for ``--pipeline``, plots, an SDK) is imported where used, and fails here when it sneaks back to
the top. The help texts that name registered components (``--engine``, ``--selector``, ``mitigate
list``'s kinds) are filled when that help is printed: checked here against the shipped registry.
"""

from __future__ import annotations

import inspect
import json
import os
import subprocess
import sys
from pathlib import Path

import click
import pytest
import typer
from typer.testing import CliRunner

from mitigate.cli import app
from mitigate.cli._commands import COMMANDS
from mitigate.cli.options._declare import fill_registered_names, registered_names
from mitigate.registry import KIND_PACKAGES, registered
from mitigate.testing import StubOpenAIServer

ROOT = Path(__file__).resolve().parents[2]

NEVER_ON_THE_JUDGE_PATH = (
    "dspy",
    "openai",
    "anthropic",
    "litellm",
    "httpx",
    "matplotlib",
    "pandas",
    "scipy",
    "sklearn",
    "torch",
    "llama_cpp",
    "numpy",
    "mitigate.search",
    "mitigate.strategies",
    "mitigate.selectors",
    "mitigate.harness",
    "mitigate.measures",
    "mitigate.probes",
    "mitigate.judge._likelihood",
)
"""Never loaded by ``mitigate judge`` on an OpenAI-compatible server without ``--pipeline`` (the default
transport is the direct client: no SDK; the strategies only for a pipeline; plots and reports never)."""
NOT_FOR_HELP = (
    *NEVER_ON_THE_JUDGE_PATH,
    "aiohttp",
    "tqdm",
    "pydantic",
    "asyncio",
    "mitigate.registry",
    "mitigate.data",
    "mitigate.judge",
    "mitigate.prompt",
    "mitigate.parse",
    "mitigate.run",
    "mitigate.lm._http",
    "mitigate.lm._base",
)
"""Not loaded by ``mitigate --help`` (nor by ``import mitigate.cli``): the group lists its commands without
importing them, and the options need no pydantic."""
NEVER_FOR_A_COMMANDS_HELP = (
    "dspy",
    "openai",
    "anthropic",
    "litellm",
    "httpx",
    "aiohttp",
    "matplotlib",
    "pandas",
    "sklearn",
    "torch",
    "llama_cpp",
)
"""Not loaded by any command's ``--help``: the SDKs, HTTP clients, the embedded model, plots and data frames
are imported where a run uses them."""
COMMAND_MODULES = sorted({entry.module for entry in COMMANDS.values()})

DUMP = """
import atexit, json, sys
atexit.register(lambda: sys.stderr.write("\\nMODULES " + json.dumps(sorted(sys.modules)) + "\\n"))
sys.argv = ["mitigate", *json.loads(sys.argv[1])]
from mitigate.cli import main
main()
"""


def _run(args: list[str], cwd: Path) -> tuple[subprocess.CompletedProcess[str], set[str]]:
    """``mitigate <args>`` in a fresh interpreter: the finished process and the modules it had loaded."""
    env = {
        "PYTHONPATH": str(ROOT),
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": str(cwd),
        "MITIGATE_CACHE_DIR": str(cwd / "cache"),
        "COLUMNS": "400",
        "OPENAI_API_KEY": "sk-stub",
    }
    proc = subprocess.run(
        [sys.executable, "-c", DUMP, json.dumps(args)],
        capture_output=True,
        text=True,
        cwd=cwd,
        env=env,
        timeout=300,
    )
    lines = proc.stderr.splitlines()
    line = next((ln for ln in lines if ln.startswith("MODULES ")), None)
    assert line is not None, proc.stderr[-2000:]
    proc.stderr = "\n".join(ln for ln in lines if ln is not line)  # what the command itself wrote
    return proc, set(json.loads(line.removeprefix("MODULES ")))


def _loaded(modules: set[str], names: tuple[str, ...]) -> list[str]:
    return sorted(n for n in names if any(m == n or m.startswith(n + ".") for m in modules))


def _flat(text: str) -> str:
    """Help text without the boxes rich draws, on one line."""
    return " ".join(text.replace("│", " ").replace("─", " ").split())


def _shipped(kind: str) -> list[str]:
    """The ``kind`` names mitigate itself registers, in registration order (not those tests register)."""
    return [
        n
        for n, obj in registered(kind).items()
        if str(getattr(obj, "__module__", "")).startswith("mitigate.")
    ]


def test_help_lists_every_command_and_imports_none_of_them(tmp_path):
    proc, modules = _run(["--help"], tmp_path)
    assert proc.returncode == 0, proc.stderr[-2000:]
    for name in COMMANDS:
        assert f" {name} " in proc.stdout, name
    assert _loaded(modules, tuple(COMMAND_MODULES)) == []  # listed from the table, not imported ...
    assert _loaded(modules, NOT_FOR_HELP) == []  # ... and the group itself loads nothing a command uses


@pytest.mark.parametrize("name", [*COMMANDS, "data list", "data fetch", "data convert"])
def test_a_commands_help_imports_its_own_module_and_no_other_command_or_heavy_package(tmp_path, name):
    proc, modules = _run([*name.split(), "--help"], tmp_path)
    assert proc.returncode == 0, proc.stderr[-2000:]
    own = COMMANDS[name.split()[0]].module
    assert own in modules
    assert _loaded(modules, tuple(m for m in COMMAND_MODULES if m != own)) == []
    assert _loaded(modules, NEVER_FOR_A_COMMANDS_HELP) == []


def test_each_commands_summary_is_the_first_paragraph_of_its_help():
    group = typer.main.get_command(app)
    root = click.Context(group, info_name="mitigate")
    for name, entry in COMMANDS.items():
        loaded = group.get_command(root, name)  # type: ignore[attr-defined]
        assert loaded is not None, name
        assert inspect.cleandoc(loaded.help or "").split("\n\n")[0] == entry.summary, name


def test_an_unknown_command_is_refused_with_the_group_usage_error():
    result = CliRunner().invoke(app, ["jugde"])
    assert result.exit_code == 2 and "No such command 'jugde'" in result.output


def _judge_args(tmp_path: Path, url: str) -> list[str]:
    """``mitigate judge`` of three items with a prompt file, on the stub at ``url`` (the items' human score is
    3)."""
    bench = tmp_path / "items.jsonl"
    bench.write_text(
        json.dumps({"benchmark": {"name": "t", "criteria": ["fluency"], "scale": [1, 5]}})
        + "\n"
        + "".join(
            json.dumps({"id": f"i{k}", "output": f"text {k}", "human": {"fluency": 3}}) + "\n"
            for k in range(3)
        )
    )
    prompt = tmp_path / "prompt.txt"
    prompt.write_text("Rate the fluency of the text from 1 to 5.\n\nText: {{output}}\n\nAnswer 'Score: N'.")
    return [
        "judge",
        "-b",
        f"jsonl:{bench}",
        "--prompt",
        str(prompt),
        "--backend",
        "openai:stub-model",
        "-n",
        "0",
        "--no-progress",
        "--base-url",
        url,
    ]


def test_judge_on_an_openai_compatible_server_loads_no_sdk_search_strategies_harness_or_numpy(tmp_path):
    pytest.importorskip("aiohttp")  # the direct transport (without it, the default is the SDK)
    with StubOpenAIServer(latency=0.0, reply="Score: 4") as server:
        proc, modules = _run(
            [*_judge_args(tmp_path, server.base_url), "--run-dir", str(tmp_path / "run")], tmp_path
        )
        assert server.request_count == 3  # the judge really called the server
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stdout.splitlines() == [f"i{k}\tjudge=4\thuman=3.00\tScore: 4" for k in range(3)]
    assert {"mitigate.run._runner", "mitigate.lm._openai", "aiohttp"} <= modules  # the judge path itself
    assert _loaded(modules, NEVER_ON_THE_JUDGE_PATH) == []


def test_judge_with_a_pipeline_loads_the_strategies_and_still_no_search_harness_or_plots(tmp_path):
    pytest.importorskip("aiohttp")
    with StubOpenAIServer(latency=0.0, reply="Score: 4") as server:
        proc, modules = _run(
            [*_judge_args(tmp_path, server.base_url), "--pipeline", "baseline", "--no-cache"], tmp_path
        )
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "judge=4" in proc.stdout
    assert "mitigate.strategies" in modules
    assert (
        _loaded(modules, ("mitigate.search", "mitigate.harness", "matplotlib", "pandas", "dspy", "openai"))
        == []
    )


@pytest.mark.parametrize(
    ("command", "option", "kind"),
    [("search", "search engine:", "engine"), ("search", "candidate generator:", "selector")],
)
def test_the_names_a_help_lists_are_the_shipped_registered_ones(tmp_path, command, option, kind):
    proc, modules = _run([command, "--help"], tmp_path)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert f"{option} {', '.join(_shipped(kind))} " in _flat(proc.stdout)


def test_the_benchmark_help_names_every_registered_benchmark_and_path_form(tmp_path):
    from mitigate.data import PATH_LOADERS

    proc, _ = _run(["judge", "--help"], tmp_path)
    assert proc.returncode == 0, proc.stderr[-2000:]
    shipped = [*_shipped("benchmark"), *(f"{prefix}:<path>" for prefix in PATH_LOADERS)]
    assert {"uss-redial", "uss-ccpe"} <= set(shipped)
    assert f"benchmark name: {', '.join(shipped)} " in _flat(proc.stdout)


def test_list_help_names_every_kind_and_only_that_help_loads_the_registry(tmp_path):
    proc, modules = _run(["list", "--help"], tmp_path)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert f"one of {', '.join(KIND_PACKAGES)} (or the plural)" in _flat(proc.stdout)
    # filled when this help is printed, not when the command is registered
    assert "mitigate.registry" in modules


def test_no_help_shows_a_stand_in_for_registered_names():
    for command in [*COMMANDS, "data list", "data fetch", "data convert"]:
        result = CliRunner().invoke(app, [*command.split(), "--help"])
        assert result.exit_code == 0, (command, result.output)
        assert "{registered" not in result.output, command


def test_a_stand_in_is_filled_with_the_names_registered_when_the_help_is_printed():
    text = f"engines: {registered_names('engine')}; kinds: {registered_names()}; a {{value}} stays"
    filled = fill_registered_names(text)
    assert filled == (
        f"engines: {', '.join(registered('engine'))}; kinds: {', '.join(KIND_PACKAGES)}; a {{value}} stays"
    )
