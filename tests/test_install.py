"""Every install runs: the package's imports are declared, and a clean venv with no extra works.

Two checks of one promise (`mitigate --help` must not die on an undeclared dependency such as `click`):

- a static one, always run: every third-party module the package imports is provided by a
  distribution declared in ``pyproject.toml``, in the core dependencies or in the extra of
  the backend module that imports it (so the README's ``local`` extra and the others are
  covered without installing them);
- a live one, marked ``install`` and ``slow`` (the full suite runs it; the quick tier leaves it out):
  a fresh venv (no system site-packages) gets the package with no extra, runs ``mitigate --help`` and
  ``pip check``, judges a small benchmark against the stub server with the ``openai:`` backend (httpx, a core
  dependency), then gets the ``openai`` extra and judges it again (aiohttp).
"""

from __future__ import annotations

import ast
import importlib.metadata
import json
import os
import re
import subprocess
import sys
import tomllib
import venv
from pathlib import Path

import pytest

from mitigate.testing import StubOpenAIServer

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "mitigate"

EXTRA_OF_MODULE = {
    "mitigate/lm/_openai.py": "openai",
    "mitigate/lm/_anthropic.py": "anthropic",
    "mitigate/lm/_dspy.py": "dspy",
    "mitigate/search/engines/_dspy_program.py": "dspy",
    "mitigate/lm/_llamacpp.py": "local",
    "mitigate/adapters/inspect_ai.py": "inspect",
    "mitigate/adapters/deepeval.py": "deepeval",
    "mitigate/run/_ray.py": "ray",
}
"""Backend and adapter modules whose SDK comes with an extra (imported only when asked for)."""

OPTIONAL_BY_DESIGN = {
    ("mitigate/selectors/_knn.py", "sentence_transformers"): "imported inside a try that raises a one-line "
    "ConfigError asking for the package; embedding='tfidf' needs nothing",
    ("mitigate/testing/_checks.py", "pytest"): "the contract battery's pytest helper, used only from tests",
    ("mitigate/run/_ray.py", "pyarrow"): "comes with the 'ray' extra (ray[data]); only under --engine ray",
    ("mitigate/cli/_judge.py", "pyarrow"): "results.parquet of --engine ray (the 'ray' extra), only there",
    (
        "mitigate/judge/_judgment.py",
        "pandas",
    ): "to_pandas() imports it inside a try that raises a one-line ConfigError asking for the 'pandas' extra",
}


def _requirement_name(req: str) -> tuple[str, set[str]]:
    m = re.match(r"\s*([A-Za-z0-9_.\-]+)\s*(?:\[([^\]]*)\])?", req)
    assert m is not None, req
    extras = {e.strip() for e in (m.group(2) or "").split(",") if e.strip()}
    return _norm(m.group(1)), extras


def _norm(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def _declared() -> tuple[set[str], dict[str, set[str]]]:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    core: set[str] = set()
    for req in project["dependencies"]:
        name, extras = _requirement_name(req)
        core.add(name)
        core |= extras  # "openai[aiohttp]" brings aiohttp
    by_extra: dict[str, set[str]] = {}
    for extra, reqs in project["optional-dependencies"].items():
        names: set[str] = set()
        for req in reqs:
            name, extras = _requirement_name(req)
            names.add(name)
            names |= extras
        by_extra[extra] = names
    return core, by_extra


def _third_party_imports(path: Path) -> set[str]:
    tree = ast.parse(path.read_text())
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found |= {a.name.split(".")[0] for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            found.add(node.module.split(".")[0])
    return {m for m in found if m not in sys.stdlib_module_names and m != "mitigate" and m != "__future__"}


def test_every_third_party_import_of_the_package_is_declared_in_pyproject() -> None:
    core, by_extra = _declared()
    providers = importlib.metadata.packages_distributions()
    missing: list[str] = []
    for path in sorted(PACKAGE.rglob("*.py")):
        rel = path.relative_to(ROOT).as_posix()
        allowed = core | by_extra.get(EXTRA_OF_MODULE.get(rel, ""), set())
        for module in sorted(_third_party_imports(path)):
            if (rel, module) in OPTIONAL_BY_DESIGN:
                continue
            dists = {_norm(d) for d in providers.get(module, [module])}
            if not dists & allowed:
                where = (
                    f"extra {EXTRA_OF_MODULE[rel]!r}" if rel in EXTRA_OF_MODULE else "the core dependencies"
                )
                missing.append(f"{rel} imports {module} (from {sorted(dists)}), not in {where}")
    assert not missing, "undeclared imports:\n" + "\n".join(missing)


def test_the_static_check_catches_an_undeclared_import(tmp_path: Path) -> None:
    """The check above can fail: a module importing click with click left out of the core is reported."""
    core, _ = _declared()
    providers = importlib.metadata.packages_distributions()
    mod = tmp_path / "m.py"
    mod.write_text("import click\nimport numpy\n")
    undeclared = [
        m
        for m in _third_party_imports(mod)
        if not {_norm(d) for d in providers.get(m, [m])} & (core - {"click"})
    ]
    assert undeclared == ["click"]


def test_pytest_starts_without_a_deprecation_warning_from_its_configuration() -> None:
    done = subprocess.run(
        [
            sys.executable,
            "-W",
            "default",
            "-m",
            "pytest",
            "-p",
            "no:cacheprovider",
            "--co",
            "-q",
            "tests/measures/test_stats.py",
        ],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=300,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    assert "DeprecationWarning" not in done.stdout + done.stderr, done.stdout + done.stderr


# --------------------------------------------------------------------------- the live install

PROMPT = "Rate the fluency of the summary from 1 to 5.\n\nSummary: {{summary}}\n\nScore:"


def _run(args: list[str], **kw: object) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    env.update(kw.pop("env", {}))  # type: ignore[arg-type]
    return subprocess.run(args, capture_output=True, text=True, timeout=900, env=env, **kw)  # type: ignore[call-overload]


@pytest.mark.slow
@pytest.mark.install
def test_a_clean_venv_with_no_extra_runs_help_and_a_judge_against_the_stub_server(tmp_path: Path) -> None:
    env_dir = tmp_path / "venv"
    try:
        venv.EnvBuilder(with_pip=True, system_site_packages=False, clear=True).create(env_dir)
    except (OSError, subprocess.CalledProcessError) as exc:
        pytest.skip(
            f"cannot create a venv with pip on this machine ({exc}); the static import check still runs"
        )
    py = str(env_dir / "bin" / "python")
    exe = str(env_dir / "bin" / "mitigate")
    done = _run([py, "-m", "pip", "install", "-q", str(ROOT)])
    assert done.returncode == 0, done.stderr[-3000:]

    helped = _run([exe, "--help"], cwd=tmp_path)
    assert helped.returncode == 0, helped.stderr[-3000:]
    assert "judge" in helped.stdout
    checked = _run([py, "-m", "pip", "check"])
    assert checked.returncode == 0, checked.stdout + checked.stderr

    bench = tmp_path / "bench.jsonl"
    rows = [
        {
            "id": f"x{i}",
            "system": "S",
            "doc_id": f"d{i}",
            "output": f"Summary {i}.",
            "human": {"fluency": 3.0},
        }
        for i in range(2)
    ]
    bench.write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    (tmp_path / "prompt.txt").write_text(PROMPT)
    env = {"MITIGATE_CACHE_DIR": str(tmp_path / "cache")}

    def judge(url: str, run: str) -> subprocess.CompletedProcess[str]:
        return _run(
            [
                exe,
                "judge",
                "-b",
                f"jsonl:{bench}",
                "-c",
                "fluency",
                "--prompt",
                str(tmp_path / "prompt.txt"),
                "--backend",
                "openai:stub-model",
                "--base-url",
                url,
                "--run-dir",
                str(tmp_path / run),
                "--no-progress",
            ],
            cwd=tmp_path,
            env=env,
        )

    with StubOpenAIServer(latency=0.0, reply="Readable. Score: 2") as server:
        core = judge(server.base_url, "run0")  # the core's httpx client: no extra needed for a server
        assert core.returncode == 0, core.stderr[-3000:]

        done = _run([py, "-m", "pip", "install", "-q", f"{ROOT}[openai]"])
        assert done.returncode == 0, done.stderr[-3000:]
        checked = _run([py, "-m", "pip", "check"])
        assert checked.returncode == 0, checked.stdout + checked.stderr
        judged = judge(server.base_url, "run1")  # aiohttp, from the extra
    assert judged.returncode == 0, judged.stderr[-3000:]
    for run in (core, judged):
        lines = [ln for ln in run.stdout.splitlines() if ln.startswith("x")]
        assert [ln.split("\t")[1] for ln in lines] == ["judge=2", "judge=2"], run.stdout
