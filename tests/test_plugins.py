"""Plugins: a module whose import registers components, loaded by ``--plugin`` or an installed
``mitigate.plugins`` entry point, is usable from every command, listed, and checked by ``check-plugin``."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from mitigate import registry
from mitigate.cli import app
from mitigate.errors import ConfigError
from mitigate.registry import (
    PLUGIN_GROUP,
    load_entry_point_plugins,
    load_plugin,
    lookup,
    plugin_of,
    registered,
)
from mitigate.testing import StubOpenAIServer

PLUGINS = Path(__file__).parent / "fixtures" / "plugins"
PROMPT = "Rate the fluency of the summary from 1 to 5.\n\nArticle: {{source}}\nSummary: {{summary}}\n\nScore:"


@pytest.fixture
def plugin_path(monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.syspath_prepend(str(PLUGINS))
    return PLUGINS


def test_load_plugin_reports_what_the_module_registered(plugin_path: Path) -> None:
    assert load_plugin("demo_plugin_good") == [
        ("mitigation", "test-plugin-terse"),
        ("selector", "test-plugin-first"),
    ]
    assert lookup("mitigation", "test-plugin-terse").paper == "the mitigate test suite"


@pytest.mark.parametrize(
    ("module", "expected"),
    [
        ("no_such_plugin_module", "plugin module 'no_such_plugin_module' was not found"),
        ("not a module", "expected a plugin as a dotted module path"),
    ],
)
def test_a_plugin_that_cannot_be_imported_is_one_config_error(module: str, expected: str) -> None:
    with pytest.raises(ConfigError, match=expected):
        load_plugin(module)


def _bench(tmp_path: Path, n: int = 16) -> str:
    rows = [
        {
            "id": f"x{i}",
            "system": f"S{i % 2}",
            "doc_id": f"d{i // 2}",
            "inputs": {"source": f"Article {i}."},
            "output": f"Summary {i}.",
            "human": {"fluency": 1.0 + i % 5},
        }
        for i in range(n)
    ]
    (tmp_path / "bench.jsonl").write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    (tmp_path / "prompt.txt").write_text(PROMPT)
    return f"jsonl:{tmp_path / 'bench.jsonl'}"


def test_plugin_components_are_usable_in_pipeline_text_from_the_command_line(
    plugin_path: Path, tmp_path: Path
) -> None:
    bench = _bench(tmp_path)
    with StubOpenAIServer(latency=0.0, reply="Score: 4") as server:
        result = CliRunner().invoke(
            app,
            [
                "compare",
                "-b",
                bench,
                "-c",
                "fluency",
                "--prompt",
                str(tmp_path / "prompt.txt"),
                "--backend",
                "openai:stub-model",
                "--base-url",
                server.base_url,
                "--plugin",
                "demo_plugin_good",
                "-p",
                "baseline",
                "-p",
                "terse=test-plugin-terse(tone=strict)",
                "-p",
                "first demo=demos(selector=test-plugin-first, k=1)",
                "--train",
                "0.5",
                "--out",
                str(tmp_path / "cmp"),
                "--n-boot",
                "0",
                "--no-progress",
                "--no-cache",
            ],
        )
    assert result.exit_code == 0, result.output
    entries = json.loads((tmp_path / "cmp" / "results.json").read_text())["entries"]
    assert [e["name"] for e in entries] == ["baseline", "terse", "first demo"]
    assert "test-plugin-terse" in json.dumps(entries[1]["spec"])
    assert "test-plugin-first" in json.dumps(entries[2]["spec"])


def test_a_plugin_selector_is_usable_by_search(plugin_path: Path, tmp_path: Path) -> None:
    bench = _bench(tmp_path)
    with StubOpenAIServer(latency=0.0, reply="Score: 3") as server:
        result = CliRunner().invoke(
            app,
            [
                "search",
                "-b",
                bench,
                "-c",
                "fluency",
                "--prompt",
                str(tmp_path / "prompt.txt"),
                "--backend",
                "openai:stub-model",
                "--base-url",
                server.base_url,
                "--plugin",
                "demo_plugin_good",
                "--selector",
                "test-plugin-first",
                "--budget",
                "30",
                "--k",
                "1",
                "--no-plot",
                "--no-progress",
                "--n-boot",
                "0",
                "-o",
                str(tmp_path / "spec.json"),
                "--no-cache",
            ],
        )
    assert result.exit_code == 0, result.output
    assert json.loads((tmp_path / "spec.json").read_text())["search"]["engine"] == "random"


def test_a_plugin_parameter_refused_on_the_command_line_names_the_accepted_values(plugin_path: Path) -> None:
    result = CliRunner().invoke(
        app,
        [
            "judge",
            "--plugin",
            "demo_plugin_good",
            "--pipeline",
            "test-plugin-terse(tone=loud)",
            "--backend",
            "fake",
        ],
    )
    assert result.exit_code == 2
    assert (
        "The 'tone' parameter of mitigation 'test-plugin-terse' must be one of 'plain', 'strict'. "
        "Got 'loud' instead."
    ) in result.stderr


def test_check_plugin_passes_a_good_plugin(plugin_path: Path) -> None:
    result = CliRunner().invoke(app, ["check-plugin", "demo_plugin_good"])
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    assert lines and all(ln.startswith("PASS ") for ln in lines)
    checked = {(ln.split()[1], ln.split()[2]) for ln in lines}
    assert {
        ("mitigation:test-plugin-terse[0]", "wrap_leaves_the_judge_alone"),
        ("selector:test-plugin-first[0]", "select_is_deterministic_and_hides_the_query"),
        ("selector:test-plugin-first[0]", "spec_round_trips"),
    } <= checked


def test_check_plugin_rejects_a_broken_plugin_and_names_each_failed_check(plugin_path: Path) -> None:
    result = CliRunner().invoke(app, ["check-plugin", "demo_plugin_broken"])
    assert result.exit_code == 1
    failed = [ln for ln in result.stdout.splitlines() if ln.startswith("FAIL")]
    assert [ln.split()[2].rstrip(":") for ln in failed] == ["is_frozen_value", "unknown_parameter_is_refused"]
    assert "Leaky is not frozen" in failed[0]
    assert "2 failed" in result.stderr


def test_check_plugin_refuses_a_module_that_registers_nothing() -> None:
    result = CliRunner().invoke(app, ["check-plugin", "json"])
    assert result.exit_code == 2 and "registered no component" in result.stderr


def _install_dist(site: Path, dist: str, entry_points: dict[str, str], modules: dict[str, str]) -> None:
    """A minimal installed distribution: a .dist-info with METADATA and entry_points.txt, and its modules."""
    info = site / f"{dist.replace('-', '_')}-0.1.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {dist}\nVersion: 0.1\n")
    lines = [f"[{PLUGIN_GROUP}]"] + [f"{name} = {value}" for name, value in entry_points.items()]
    (info / "entry_points.txt").write_text("\n".join(lines) + "\n")
    for module, text in modules.items():
        (site / f"{module}.py").write_text(text)


EP_MODULE = '''"""An installed plugin, for the tests."""
from mitigate.registry import register
from mitigate.strategies._base import PromptMitigation


@register("mitigation", "test-plugin-installed")
class Installed(PromptMitigation):
    """A mitigation an installed distribution registers through its entry point."""

    def apply(self, prompt):
        """The prompt unchanged."""
        return prompt
'''


def test_an_installed_entry_point_plugin_is_loaded_and_a_broken_one_is_one_warning(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    site = tmp_path / "site"
    _install_dist(
        site,
        "demo-installed-plugin",
        {"installed": "demo_ep_plugin", "broken": "demo_ep_missing"},
        {"demo_ep_plugin": EP_MODULE},
    )
    monkeypatch.syspath_prepend(str(site))
    with pytest.warns(
        UserWarning, match=r"plugin 'broken' \(entry point 'demo_ep_missing' of demo-installed-plugin"
    ):
        loaded = load_entry_point_plugins(again=True)
    assert loaded == ["demo_ep_plugin"]
    assert lookup("mitigation", "test-plugin-installed").__name__ == "Installed"
    assert plugin_of("mitigation", "test-plugin-installed") == "demo_ep_plugin"


def test_an_installed_plugin_is_listed_by_a_fresh_command_line(tmp_path: Path) -> None:
    site = tmp_path / "site"
    _install_dist(
        site,
        "demo-listed-plugin",
        {"listed": "demo_ep_listed"},
        {"demo_ep_listed": EP_MODULE.replace("test-plugin-installed", "test-plugin-listed")},
    )
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(site), str(Path(__file__).parent.parent)])}
    out = subprocess.run(
        [sys.executable, "-m", "mitigate", "mitigations", "--json"],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert out.returncode == 0, out.stderr
    rows = {r["name"]: r for r in json.loads(out.stdout)}
    assert rows["test-plugin-listed"]["plugin"] == "demo_ep_listed"
    assert rows["granularity"]["plugin"] is None


ADDS = '''"""A plugin that adds a plain value, while a module of mitigate's own adds one during its import."""
import types
from pathlib import Path

from mitigate.registry import add

add("prompt", "test-plugin-own-prompt", Path(__file__))
# stands for a mitigate package first imported by the plugin
inner = types.ModuleType("mitigate.test_fake_builtin")
exec("from pathlib import Path\\nfrom mitigate.registry import add\\n"
     "add('prompt', 'test-mitigate-prompt', Path('x.txt'))", inner.__dict__)
'''


def test_a_plain_value_is_credited_to_the_module_that_added_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "demo_plugin_adds.py").write_text(ADDS)
    monkeypatch.syspath_prepend(str(tmp_path))
    table = registry._REGISTRY  # restored after the test, so no other test sees these two prompts
    monkeypatch.setitem(table, "prompt", dict(registered("prompt")))
    assert ("prompt", "test-plugin-own-prompt") in load_plugin("demo_plugin_adds")
    assert plugin_of("prompt", "test-plugin-own-prompt") == "demo_plugin_adds"
    assert plugin_of("prompt", "test-mitigate-prompt") is None
