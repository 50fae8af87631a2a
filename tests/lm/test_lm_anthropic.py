"""AnthropicLM through the real anthropic SDK, pointed at the stub's /v1/messages endpoint."""

from __future__ import annotations

import pytest

from mitigate.errors import CapabilityError, LMCallError, MissingAPIKeyError, TransientLMError
from mitigate.lm import AnthropicLM, LMRequest, Message
from mitigate.testing import StubOpenAIServer

SECRET = "sk-ant-test-SECRET-123"


def req(**kw) -> LMRequest:
    return LMRequest(
        messages=(
            Message(role="system", content="You are a strict judge."),
            Message(role="system", content="Answer with a score."),
            Message(role="user", content="Rate this summary."),
        ),
        **kw,
    )


@pytest.fixture(autouse=True)
def _no_ambient_key(monkeypatch):
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)


@pytest.fixture
def server():
    with StubOpenAIServer(latency=0.0, reply="Score: 4") as s:
        yield s


def sent_key(server: StubOpenAIServer) -> str:
    """The credential the SDK sent (x-api-key, or a bearer token in newer SDKs)."""
    return server.api_key_headers[-1] or server.auth_headers[-1].removeprefix("Bearer ")


async def test_system_messages_go_to_system_and_options_are_mapped(server):
    lm = AnthropicLM("claude-test", base_url=server.url, api_key=SECRET)
    resp = await lm.complete(req(temperature=0.3, max_tokens=40, stop=("\n\n",)))
    body = server.bodies[-1]
    assert server.paths[-1] == "/v1/messages"
    assert body["system"] == "You are a strict judge.\n\nAnswer with a score."
    assert body["messages"] == [{"role": "user", "content": "Rate this summary."}]
    assert body["max_tokens"] == 40
    assert body["temperature"] == 0.3
    assert body["stop_sequences"] == ["\n\n"]
    assert resp.text == "Score: 4" and resp.choices[0].finish_reason == "stop"
    await lm.aclose()


async def test_stop_sequence_cuts_the_answer(server):
    lm = AnthropicLM("claude-test", base_url=server.url, api_key=SECRET)
    resp = await lm.complete(req(stop=(":",)))
    assert resp.text == "Score"
    await lm.aclose()


async def test_n_samples_are_n_real_calls_with_summed_usage(server):
    lm = AnthropicLM("claude-test", base_url=server.url, api_key=SECRET)
    one = await lm.complete(req())
    three = await lm.complete(req(n=3, temperature=1.0))
    assert len(three.choices) == 3
    assert server.request_count == 4
    assert three.usage.completion_tokens == 3 * one.usage.completion_tokens
    await lm.aclose()


async def test_logprobs_are_refused_without_calling(server):
    lm = AnthropicLM("claude-test", base_url=server.url, api_key=SECRET)
    with pytest.raises(CapabilityError, match="logprobs"):
        await lm.complete(req(logprobs=True))
    with pytest.raises(CapabilityError, match="logprobs"):
        await lm.complete(req(top_logprobs=5))
    assert server.request_count == 0


async def test_temperature_above_one_is_refused(server):
    lm = AnthropicLM("claude-test", base_url=server.url, api_key=SECRET)
    with pytest.raises(CapabilityError, match="between 0 and 1; got temperature=1.5"):
        await lm.complete(req(temperature=1.5))
    assert server.request_count == 0


async def test_cache_reads_become_cached_prompt_tokens():
    with StubOpenAIServer(latency=0.0, cached_tokens=2) as s:
        lm = AnthropicLM("claude-test", base_url=s.url, api_key=SECRET)
        resp = await lm.complete(req())
        assert resp.usage.cached_prompt_tokens == 2
        assert resp.usage.prompt_tokens > 2
        await lm.aclose()


def test_missing_key_names_the_environment_variable():
    with pytest.raises(MissingAPIKeyError, match="ANTHROPIC_API_KEY"):
        AnthropicLM("claude-3-5-haiku-latest")


async def test_key_reaches_the_server_but_not_repr_or_identity(server):
    lm = AnthropicLM("claude-test", base_url=server.url, api_key=SECRET)
    await lm.complete(req())
    assert sent_key(server) == SECRET
    for text in (repr(lm), lm.spec, lm.identity()):
        assert SECRET not in text
    await lm.aclose()


async def test_overloaded_is_transient_with_retry_after():
    with StubOpenAIServer(latency=0.0, fail_first=1, fail_status=529, retry_after=4) as s:
        lm = AnthropicLM("claude-test", base_url=s.url, api_key=SECRET)
        with pytest.raises(TransientLMError) as info:
            await lm.complete(req())
        assert info.value.status == 529 and info.value.retry_after == 4.0
        assert s.request_count == 1
        await lm.aclose()


async def test_rate_limit_is_transient_and_bad_request_is_not():
    with StubOpenAIServer(latency=0.0, fail_first=1, fail_status=429, retry_after=1) as s:
        lm = AnthropicLM("claude-test", base_url=s.url, api_key=SECRET)
        with pytest.raises(TransientLMError) as info:
            await lm.complete(req())
        assert info.value.status == 429
        await lm.aclose()
    with StubOpenAIServer(latency=0.0, fail_first=1, fail_status=401) as s:
        lm = AnthropicLM("claude-test", base_url=s.url, api_key=SECRET)
        with pytest.raises(LMCallError) as info:
            await lm.complete(req())
        assert not isinstance(info.value, TransientLMError)
        assert "ANTHROPIC_API_KEY" in str(info.value)
        assert SECRET not in str(info.value) and SECRET not in repr(info.value)
        await lm.aclose()
