"""Backend spec strings -> LM objects (mitigate.lm.registry)."""

from __future__ import annotations

import json
import subprocess
import sys
import types

import pytest

from mitigate.errors import BackendSpecError, ConfigError, MissingAPIKeyError
from mitigate.lm import registry
from mitigate.lm.anthropic import AnthropicLM
from mitigate.lm.fake import FakeLM
from mitigate.lm.openai import OpenAILM
from mitigate.lm.replay import ReplayLM


@pytest.fixture(autouse=True)
def _no_ambient_keys(monkeypatch):
    for var in ("OPENAI_API_KEY", "OPENAI_BASE_URL", "ANTHROPIC_API_KEY"):
        monkeypatch.delenv(var, raising=False)


def test_openai_spec_builds_openai_backend_with_kwargs():
    lm = registry.get("openai:gpt-4o-mini", api_key="sk-x")
    assert isinstance(lm, OpenAILM) and lm.model == "gpt-4o-mini" and lm.spec == "openai:gpt-4o-mini"
    local = registry.get("openai:Qwen/Qwen2.5-7B-Instruct", base_url="http://127.0.0.1:8000/v1")
    assert local.model == "Qwen/Qwen2.5-7B-Instruct"
    assert local.identity() == "openai:Qwen/Qwen2.5-7B-Instruct@http://127.0.0.1:8000/v1"


def test_anthropic_spec_builds_anthropic_backend():
    lm = registry.get("anthropic:claude-3-5-haiku-latest", api_key="sk-ant-x")
    assert isinstance(lm, AnthropicLM) and lm.model == "claude-3-5-haiku-latest"


def test_missing_key_error_names_the_variable():
    with pytest.raises(MissingAPIKeyError, match="OPENAI_API_KEY"):
        registry.get("openai:gpt-4o-mini")
    with pytest.raises(MissingAPIKeyError, match="ANTHROPIC_API_KEY"):
        registry.get("anthropic:claude-3-5-haiku-latest")


def test_dspy_spec_keeps_everything_after_the_first_colon(monkeypatch):
    built: list[tuple[str, dict]] = []

    class FakeDSPyLM:
        def __init__(self, model: str, **kwargs) -> None:
            built.append((model, kwargs))

    fake_module = types.ModuleType("mitigate.lm.dspy")
    fake_module.DSPyLM = FakeDSPyLM
    monkeypatch.setitem(sys.modules, "mitigate.lm.dspy", fake_module)
    registry.get("dspy:openrouter/meta-llama/llama-3.1-8b-instruct:free", api_base="http://h")
    assert built == [("openrouter/meta-llama/llama-3.1-8b-instruct:free", {"api_base": "http://h"})]


def test_local_specs_import_llamacpp_lazily_and_pass_the_path(monkeypatch):
    built: list[dict] = []

    class FakeLlama:
        def __init__(self, model_path: str | None = None, **kwargs) -> None:
            built.append({"model_path": model_path, **kwargs})

    fake_module = types.ModuleType("mitigate.lm.llamacpp")
    fake_module.LlamaCppLM = FakeLlama
    monkeypatch.setitem(sys.modules, "mitigate.lm.llamacpp", fake_module)
    registry.get("local", n_ctx=2048)
    registry.get("local:/models/judge.Q4_K_M.gguf")
    assert built == [{"model_path": None, "n_ctx": 2048}, {"model_path": "/models/judge.Q4_K_M.gguf"}]


def test_importing_the_registry_does_not_import_backends():
    code = (
        "import sys, json, mitigate.lm.registry; "
        "print(json.dumps([m for m in ('mitigate.lm.llamacpp', 'mitigate.lm.dspy', 'llama_cpp', 'dspy') "
        "if m in sys.modules]))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert json.loads(out.stdout.strip().splitlines()[-1]) == []


def test_replay_and_fake_specs(tmp_path):
    path = tmp_path / "r.jsonl"
    path.write_text('{"prompt": "hi", "response": "Score: 2"}\n')
    assert isinstance(registry.get(f"replay:{path}"), ReplayLM)
    fake = registry.get("fake", responses=["a"])
    assert isinstance(fake, FakeLM) and fake.spec == "fake"
    assert registry.get("fake:judge-x", responses=["a"]).spec == "fake:judge-x"
    with pytest.raises(BackendSpecError, match="responses="):
        registry.get("fake")


@pytest.mark.parametrize("spec", ["gpt-4o", "openia:gpt-4o", "", "huggingface:x"])
def test_unknown_spec_lists_the_accepted_forms(spec):
    with pytest.raises(BackendSpecError) as info:
        registry.get(spec)
    text = str(info.value)
    assert f"unknown backend spec {spec!r}" in text
    for form in ("openai:<model>", "anthropic:<model>", "dspy:<litellm model id>", "local:<path.gguf>", "replay:"):
        assert form in text


@pytest.mark.parametrize("spec", ["openai:", "anthropic:  ", "dspy:", "replay:", "local:"])
def test_spec_without_a_model_is_rejected(spec):
    with pytest.raises(BackendSpecError, match="expected"):
        registry.get(spec)


def test_wrap_rejects_unknown_options():
    with pytest.raises(ConfigError, match="expected retry"):
        registry.wrap(FakeLM(["a"]), cache=False, retry="yes")  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match="expected cache"):
        registry.wrap(FakeLM(["a"]), cache=3)  # type: ignore[arg-type]
