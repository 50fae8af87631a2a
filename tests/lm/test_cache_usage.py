"""Every provider backend reports prompt-cache reads and writes in its usage, and the run summary shows
them."""

from __future__ import annotations

import pytest

from mitigate import Item, JudgePrompt, PromptJudge
from mitigate.lm import AnthropicLM, LMRequest, Message, OpenAILM
from mitigate.run import run
from mitigate.testing import StubOpenAIServer

LONG = "a long shared instruction " * 300  # 1,200 stub tokens


def _request(tail: str) -> LMRequest:
    return LMRequest(messages=(Message(role="user", content=LONG + "\n\n" + tail),), max_tokens=8)


@pytest.mark.parametrize("transport", ["direct", "auto", "sdk"])
async def test_openai_reports_the_automatically_cached_prefix(transport):
    with StubOpenAIServer(latency=0.0) as s:
        lm = OpenAILM("m", base_url=s.base_url, transport=transport)
        first = await lm.complete(_request("item one"))
        second = await lm.complete(_request("item two"))
        assert (first.usage.cached_prompt_tokens, second.usage.cached_prompt_tokens) == (0, 1152)
        assert second.usage.cache_write_tokens == 0  # OpenAI reports (and charges) no writes
        await lm.aclose()


async def test_anthropic_reports_writes_then_reads():
    with StubOpenAIServer(latency=0.0) as s:
        lm = AnthropicLM("claude-sonnet-4", base_url=s.url, api_key="k")
        usages = [(await lm.complete(_request(f"item {k}"))).usage for k in range(3)]
        assert [(u.cache_write_tokens, u.cached_prompt_tokens) for u in usages] == [
            (0, 0),
            (1200, 0),
            (0, 1200),
        ]
        await lm.aclose()


async def test_dspy_through_litellm_reports_anthropic_reads_and_writes():
    pytest.importorskip("dspy")
    from mitigate.lm import DSPyLM

    with StubOpenAIServer(latency=0.0, cached_tokens=5, cache_write_tokens=3) as s:
        lm = DSPyLM("anthropic/claude-x", api_base=s.url, api_key="k")
        resp = await lm.complete(
            LMRequest(
                messages=(Message(role="user", content="one two three four five six seven eight nine"),),
                max_tokens=5,
            )
        )
        assert (resp.usage.cached_prompt_tokens, resp.usage.cache_write_tokens) == (5, 3)


async def test_run_summary_line_shows_cache_reads_and_writes():
    with StubOpenAIServer(latency=0.0) as s:
        lm = AnthropicLM("claude-sonnet-4", base_url=s.url, api_key="k")
        prompt = JudgePrompt.from_template(LONG + "\n\nText: {{output}}\n\nScore:")
        result = await run(
            PromptJudge(prompt, lm),
            [Item(id=str(k), output=f"t{k}") for k in range(3)],
            concurrency=1,
            progress=False,
        )
        usage = result.summary.usage
        assert usage.cache_write_tokens > 0 and usage.cached_prompt_tokens == usage.cache_write_tokens
        said = (
            f"{usage.cached_prompt_tokens} prompt tokens read from a cache, "
            f"{usage.cache_write_tokens} written"
        )
        assert said in result.summary.line()
        await lm.aclose()
