"""OpenAILM (and DSPyLM) against the real stub HTTP server from mitigate.testing."""

from __future__ import annotations

import importlib.util
import json
import math
import os
from pathlib import Path

import pytest

from mitigate.errors import CapabilityError, ConfigError, LMCallError, MissingAPIKeyError, TransientLMError
from mitigate.lm import LMRequest, Message, OpenAILM
from mitigate.lm._scrub import PLACEHOLDER_KEY
from mitigate.testing import StubOpenAIServer
from tests.support.fault_server import FaultServer, chat_answer, http_reply

SECRET = "sk-test-SECRET-123"
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")  # dspy/litellm: no price-map download
needs_dspy = pytest.mark.skipif(importlib.util.find_spec("dspy") is None, reason="dspy is not installed")


def req(text: str = "Rate this summary.", **kw) -> LMRequest:
    return LMRequest(
        messages=(Message(role="system", content="You are a judge."), Message(role="user", content=text)),
        **kw,
    )


@pytest.fixture
def server():
    with StubOpenAIServer(latency=0.0, reply="Score: 4") as s:
        yield s


@pytest.fixture(autouse=True)
def _no_ambient_openai_env(monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)


@pytest.mark.parametrize("transport", ["auto", "sdk", "httpx", "direct"])
async def test_request_options_reach_the_chat_completions_body(server, transport):
    lm = OpenAILM("stub-model", base_url=server.base_url, api_key=SECRET, transport=transport)
    await lm.complete(req(temperature=0.7, n=2, max_tokens=17, stop=("\n\n",), seed=11, top_logprobs=3))
    body = server.bodies[-1]
    assert body["model"] == "stub-model"
    assert body["messages"][0] == {"role": "system", "content": "You are a judge."}
    assert body["temperature"] == 0.7
    assert body["n"] == 2
    assert body["max_tokens"] == 17
    assert body["stop"] == ["\n\n"]
    assert body["seed"] == 11
    assert body["logprobs"] is True and body["top_logprobs"] == 3
    assert body["cache_prompt"] is True  # llama.cpp server's prefix reuse
    await lm.aclose()


async def test_official_api_sends_max_completion_tokens_and_no_cache_prompt():
    lm = OpenAILM("gpt-4o-mini", api_key=SECRET)
    body = lm._body(req(max_tokens=9))
    assert body["max_completion_tokens"] == 9
    assert "max_tokens" not in body and "cache_prompt" not in body
    assert lm.identity() == "openai:gpt-4o-mini"


@pytest.mark.parametrize("transport", ["auto", "sdk", "direct"])
async def test_returns_n_choices_with_token_logprobs_and_top_alternatives(server, transport):
    lm = OpenAILM("stub-model", base_url=server.base_url, transport=transport)
    resp = await lm.complete(req(n=3, top_logprobs=2))
    assert [c.text for c in resp.choices] == ["Score: 4"] * 3
    digit = resp.choices[0].logprobs[-1]
    assert digit.token == "4"
    assert math.isclose(digit.logprob, math.log(0.7))
    assert [t for t, _ in digit.top] == ["4", "5"]
    assert resp.cost_usd is None  # a base_url server has no known price
    await lm.aclose()


async def test_stop_sequences_cut_the_answer(server):
    lm = OpenAILM("stub-model", base_url=server.base_url)
    resp = await lm.complete(req(stop=(":",)))
    assert resp.text == "Score"
    await lm.aclose()


async def test_usage_reports_prefix_cache_hits_as_cached_prompt_tokens():
    with StubOpenAIServer(latency=0.0, cached_tokens=3) as s:
        lm = OpenAILM("stub-model", base_url=s.base_url)
        resp = await lm.complete(req())
        assert resp.usage.cached_prompt_tokens == 3
        assert resp.usage.prompt_tokens >= 3 and resp.usage.completion_tokens > 0
        await lm.aclose()


def test_unknown_transport_is_a_config_error():
    with pytest.raises(ConfigError, match="expected transport"):
        OpenAILM("m", base_url="http://127.0.0.1:9/v1", transport="curl")  # type: ignore[arg-type]


def test_missing_key_names_the_environment_variable():
    with pytest.raises(MissingAPIKeyError) as info:
        OpenAILM("gpt-4o-mini")
    assert "OPENAI_API_KEY" in str(info.value)
    with pytest.raises(MissingAPIKeyError, match="MY_KEY_VAR"):
        OpenAILM("gpt-4o-mini", api_key_env="MY_KEY_VAR")


async def test_base_url_server_without_key_gets_the_placeholder(server):
    lm = OpenAILM("stub-model", base_url=server.base_url)
    await lm.complete(req())
    assert server.auth_headers[-1] == f"Bearer {PLACEHOLDER_KEY}"
    await lm.aclose()


async def test_key_from_environment_is_sent(server, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", SECRET)
    lm = OpenAILM("stub-model", base_url=server.base_url)
    await lm.complete(req())
    assert server.auth_headers[-1] == f"Bearer {SECRET}"
    await lm.aclose()


async def test_key_is_sent_but_never_in_repr_spec_or_identity(server):
    lm = OpenAILM("stub-model", base_url=server.base_url, api_key=SECRET)
    await lm.complete(req())
    assert server.auth_headers[-1] == f"Bearer {SECRET}"
    for text in (repr(lm), lm.spec, lm.identity(), str(vars(lm).get("_api_key"))):
        assert SECRET not in text
    await lm.aclose()


async def test_identity_strips_credentials_from_the_url():
    lm = OpenAILM("m", base_url="http://127.0.0.1:9/v1?token=abc", api_key=SECRET)
    assert lm.identity() == "openai:m@http://127.0.0.1:9/v1"
    # user:password@ is refused, not sent
    with pytest.raises(ConfigError, match="without credentials") as info:
        OpenAILM("m", base_url="http://user:pw@127.0.0.1:9/v1", api_key=SECRET)
    assert "pw" not in str(info.value).replace("password", "")


@pytest.mark.parametrize("transport", ["auto", "sdk", "direct"])
async def test_rate_limit_becomes_transient_error_with_retry_after(transport):
    with StubOpenAIServer(latency=0.0, fail_first=1, fail_status=429, retry_after=2.5) as s:
        lm = OpenAILM("stub-model", base_url=s.base_url, api_key=SECRET, transport=transport)
        with pytest.raises(TransientLMError) as info:
            await lm.complete(req())
        assert info.value.status == 429
        assert info.value.retry_after == 2.5
        assert s.request_count == 1  # the SDK's own retries are off
        await lm.aclose()


async def test_server_error_is_transient_and_client_error_is_not():
    with StubOpenAIServer(latency=0.0, fail_first=1, fail_status=503) as s:
        lm = OpenAILM("stub-model", base_url=s.base_url)
        with pytest.raises(TransientLMError) as info:
            await lm.complete(req())
        assert info.value.status == 503 and info.value.retry_after is None
        await lm.aclose()
    with StubOpenAIServer(latency=0.0, fail_first=1, fail_status=400) as s:
        lm = OpenAILM("stub-model", base_url=s.base_url)
        with pytest.raises(LMCallError) as info:
            await lm.complete(req())
        assert not isinstance(info.value, TransientLMError)
        assert "HTTP 400" in str(info.value)
        await lm.aclose()


@pytest.mark.parametrize("transport", ["auto", "sdk", "direct"])
async def test_auth_failure_text_never_contains_the_key(transport):
    with StubOpenAIServer(latency=0.0, fail_first=1, fail_status=401) as s:
        lm = OpenAILM("stub-model", base_url=s.base_url, api_key=SECRET, transport=transport)
        with pytest.raises(LMCallError) as info:
            await lm.complete(req())
        err = info.value
        assert "HTTP 401" in str(err) and "OPENAI_API_KEY" in str(err)
        for text in (str(err), repr(err), repr(err.context)):
            assert SECRET not in text
        await lm.aclose()


async def test_unreachable_server_is_a_transient_connection_error():
    with StubOpenAIServer(latency=0.0) as s:
        url = s.base_url
    lm = OpenAILM("stub-model", base_url=url, timeout=5)
    with pytest.raises(TransientLMError, match="connection"):
        await lm.complete(req())
    await lm.aclose()


async def test_server_without_logprobs_raises_capability_error():
    with StubOpenAIServer(latency=0.0, logprobs=False) as s:
        lm = OpenAILM("stub-model", base_url=s.base_url)
        with pytest.raises(CapabilityError, match="no token logprobs"):
            await lm.complete(req(logprobs=True))
        plain = await lm.complete(req())
        assert plain.choices[0].logprobs is None
        await lm.aclose()


async def test_server_ignoring_n_raises_capability_error():
    with StubOpenAIServer(latency=0.0, honour_n=False) as s:
        lm = OpenAILM("stub-model", base_url=s.base_url)
        with pytest.raises(CapabilityError, match="n=3"):
            await lm.complete(req(n=3))
        await lm.aclose()


def test_stub_server_reuses_connections_and_answers_concurrently():
    import asyncio

    async def run(url: str) -> None:
        lm = OpenAILM("stub-model", base_url=url)
        for round_ in range(2):
            await asyncio.gather(*(lm.complete(req(f"item {round_}-{i}")) for i in range(32)))
        await lm.aclose()

    with StubOpenAIServer(latency=0.2) as s:
        asyncio.run(run(s.base_url))
        assert s.request_count == 64
        assert s.max_in_flight > 1  # the client's requests overlapped (not serial round trips)
        assert s.connections < 64  # keep-alive: the second round reused the first round's connections


# ---------------------------------------------------------------- DSPy over the same stub


@needs_dspy
async def test_dspy_backend_maps_options_and_reads_usage(server):
    from mitigate.lm import DSPyLM

    lm = DSPyLM("openai/stub-model", api_base=server.base_url, api_key=SECRET)
    resp = await lm.complete(req(temperature=0.5, n=2, max_tokens=30, stop=("\n\n",)))
    assert [c.text for c in resp.choices] == ["Score: 4", "Score: 4"]
    assert resp.usage.completion_tokens > 0
    assert all(h == f"Bearer {SECRET}" for h in server.auth_headers)
    body = server.bodies[-1]
    assert body["temperature"] == 0.5 and body["stop"] == ["\n\n"]
    assert SECRET not in repr(lm) and SECRET not in lm.identity()
    assert lm.identity() == f"dspy:openai/stub-model@{server.base_url}"


@needs_dspy
async def test_dspy_backend_returns_logprobs(server):
    from mitigate.lm import DSPyLM

    lm = DSPyLM("openai/stub-model", api_base=server.base_url, api_key=SECRET)
    resp = await lm.complete(req(top_logprobs=2))
    last = resp.choices[0].logprobs[-1]
    assert last.token == "4" and [t for t, _ in last.top] == ["4", "5"]


@needs_dspy
async def test_dspy_backend_makes_no_second_call_through_its_own_cache(server):
    from mitigate.lm import DSPyLM

    lm = DSPyLM("openai/stub-model", api_base=server.base_url, api_key=SECRET)
    await lm.complete(req("same"))
    await lm.complete(req("same"))
    assert server.request_count == 2  # dspy's cache is off; mitigate's CachedLM is the one cache


@needs_dspy
async def test_dspy_backend_translates_rate_limits():
    from mitigate.lm import DSPyLM

    with StubOpenAIServer(latency=0.0, fail_first=1, fail_status=429, retry_after=3) as s:
        lm = DSPyLM("openai/stub-model", api_base=s.base_url, api_key=SECRET)
        with pytest.raises(TransientLMError) as info:
            await lm.complete(req())
        assert info.value.status == 429
        assert SECRET not in str(info.value)
        assert s.request_count == 1  # dspy's retries are off


def test_a_direct_session_is_closed_when_asyncio_run_ends(tmp_path) -> None:
    """asyncio.run(judge.judge(item)) twice, no aclose: no 'Unclosed client session' or connector warning."""
    import subprocess
    import sys
    import textwrap

    script = tmp_path / "run_twice.py"
    script.write_text(
        textwrap.dedent("""
        import asyncio, os
        from mitigate import Item, JudgeConfig, JudgePrompt, PromptJudge, lm
        from mitigate.testing._stub_server import StubOpenAIServer
        os.environ["OPENAI_API_KEY"] = "sk-test"
        with StubOpenAIServer(reply="Score: 4") as server:
            prompt = JudgePrompt.from_template("Rate it from 1 to 5.\\n\\n{{output}}\\n\\nAnswer 'Score: N'.")
            model = lm.wrap(lm.get("openai:stub-model", base_url=server.base_url))
            judge = PromptJudge(prompt, model, JudgeConfig())
            for i in ("1", "2"):
                print(asyncio.run(judge.judge(Item(id=i, output="Paris."))).scores)
    """)
    )
    done = subprocess.run(
        [sys.executable, "-W", "default", str(script)],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])},
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.count("{'score': 4.0}") == 2
    assert "Unclosed" not in done.stderr and "unclosed" not in done.stderr, done.stderr


@pytest.mark.parametrize(
    ("content", "read"),
    [
        ([{"type": "text", "text": "Score: "}, {"type": "text", "text": "4"}], "Score: 4"),
        ([{"type": "output_text", "text": "Score: 4", "annotations": []}], "Score: 4"),
        (["Score: ", "4"], "Score: 4"),
        (
            [{"type": "image_url", "image_url": {"url": "x"}}, {"type": "text", "text": "Score: 4"}],
            "Score: 4",
        ),
        ([], "content parts without a text part"),
        ([{"type": "image_url", "image_url": {"url": "x"}}], "content parts without a text part"),
        ([{"type": "text", "text": None}], "content parts without a text part"),
        (None, "content: null"),
        ({"text": "Score: 4"}, "content that is a JSON dict, not text"),
        (4, "content that is a JSON int, not text"),
    ],
)
@pytest.mark.parametrize("transport", ["direct", "sdk"])
async def test_content_sent_as_a_list_of_parts_is_read_as_its_text_parts_joined(content, read, transport):
    body = chat_answer("")
    body["choices"][0]["message"]["content"] = content
    with FaultServer("raw", reply=http_reply(json.dumps(body).encode())) as server:
        lm = OpenAILM("m", base_url=server.url + "/v1", api_key=SECRET, transport=transport)
        try:
            if read.startswith("Score"):
                assert (await lm.complete(req())).text == read
            else:
                with pytest.raises(LMCallError, match=f"answered HTTP 200 with {read}; expected") as info:
                    await lm.complete(req())
                assert info.value.context["reason"] == "malformed"
        finally:
            await lm.aclose()
