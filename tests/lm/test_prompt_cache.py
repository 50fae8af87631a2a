"""Prompt caching: the invariant-prefix planner and Anthropic cache breakpoints, checked against the stub."""

from __future__ import annotations

import pytest

from mitigate import Item, JudgePrompt
from mitigate.lm import AnthropicLM, LMRequest, Message
from mitigate.lm._prompt_cache import (
    PrefixPlanner,
    anthropic_min_cache_tokens,
    common_prefix_length,
    split_at,
)
from mitigate.prompt import Demo
from mitigate.testing import StubOpenAIServer

TEMPLATE = (
    "Rate the coherence of the summary from 1 to 5.\n\nDocument: {{source}}\n\nSummary: "
    "{{output}}\n\nAnswer 'Score: N'."
)


def _demo_prompt(words: int = 700) -> JudgePrompt:
    demos = [
        Demo(
            item=Item(id=f"d{k}", output="demo summary " * words, inputs={"source": f"demo source {k}"}),
            score=3 + k,
        )
        for k in range(2)
    ]
    return JudgePrompt.from_template(TEMPLATE).with_demos(demos)


def _segments(text: str) -> list[tuple[str, str]]:
    return [("user", text)]


def test_common_prefix_length_matches_a_character_scan():
    for a, b in [("abcdef", "abcxyz"), ("", "abc"), ("same", "same"), ("x" * 1000 + "a", "x" * 1000 + "b")]:
        expected = next(
            (i for i, (p, q) in enumerate(zip(a, b, strict=False)) if p != q), min(len(a), len(b))
        )
        assert common_prefix_length(a, b) == expected


def test_the_shared_demos_prefix_is_marked_at_the_paragraph_where_items_differ():
    prompt = _demo_prompt()
    planner = PrefixPlanner(min_tokens=1024)
    texts = [
        prompt.render(Item(id=f"i{k}", output=f"item summary {k}", inputs={"source": f"source number {k}"}))[
            0
        ].content
        for k in range(3)
    ]
    assert planner.plan(_segments(texts[0])) == []  # nothing to compare with yet
    second = planner.plan(_segments(texts[1]))
    third = planner.plan(_segments(texts[2]))
    assert second == third and len(second) == 1
    cut = second[0][1]
    assert texts[2][:cut].endswith("\n\n") and texts[2][cut:].startswith("Document: source number 2")
    assert texts[0][:cut] == texts[2][:cut]


def test_outputs_judged_against_the_same_document_get_a_second_nested_breakpoint():
    prompt = _demo_prompt()
    planner = PrefixPlanner(min_tokens=1024)
    long_doc = "a long shared source document " * 20
    items = [
        Item(id=f"i{k}", output=f"summary {k}", inputs={"source": long_doc if k >= 2 else f"other {k}"})
        for k in range(5)
    ]
    plans = [planner.plan(_segments(prompt.render(it)[0].content)) for it in items]
    assert len(plans[4]) == 2
    shared, per_doc = plans[4][0][1], plans[4][1][1]
    assert shared < per_doc
    assert prompt.render(items[4])[0].content[shared:].startswith("Document:")
    assert prompt.render(items[4])[0].content[shared:per_doc].startswith("Document: a long shared")


def test_prefixes_shorter_than_the_model_minimum_are_not_marked():
    prompt = _demo_prompt(words=50)
    planner = PrefixPlanner(min_tokens=1024)
    for k in range(3):
        points = planner.plan(
            _segments(prompt.render(Item(id=str(k), output=str(k), inputs={"source": str(k)}))[0].content)
        )
        assert points == []


def test_observing_first_lets_the_first_request_be_marked_too():
    prompt = _demo_prompt()
    texts = [
        prompt.render(Item(id=str(k), output=f"s{k}", inputs={"source": f"doc {k}"}))[0].content
        for k in range(2)
    ]
    planner = PrefixPlanner(min_tokens=1024)
    for t in texts:
        planner.observe(_segments(t))
    assert planner.plan(_segments(texts[0]), learn=False) != []


def test_minimum_cacheable_lengths_follow_the_published_table():
    assert anthropic_min_cache_tokens("claude-sonnet-4-20250514") == 1024
    assert anthropic_min_cache_tokens("claude-3-5-haiku-latest") == 2048
    assert anthropic_min_cache_tokens("claude-haiku-4-5") == 4096
    assert anthropic_min_cache_tokens("claude-opus-4-5-20251101") == 4096
    assert split_at("abcdef", [2, 4]) == [("ab", True), ("cd", True), ("ef", False)]
    assert split_at("abc", [3]) == [("abc", True)]


@pytest.fixture
def server():
    with StubOpenAIServer(latency=0.0, anthropic_cache_min_tokens=1024) as s:
        yield s


async def test_anthropic_requests_mark_the_invariant_prefix_and_usage_reports_writes_then_reads(server):
    prompt = _demo_prompt()
    lm = AnthropicLM("claude-sonnet-4", base_url=server.url, api_key="k", cache_min_tokens=1024)
    usages = []
    for k in range(3):
        messages = prompt.render(Item(id=str(k), output=f"summary {k}", inputs={"source": f"doc {k}"}))
        usages.append((await lm.complete(LMRequest(messages=messages, max_tokens=8))).usage)
    bodies = [b for b, p in zip(server.bodies, server.paths, strict=True) if p.endswith("/messages")]
    assert isinstance(bodies[0]["messages"][0]["content"], str)  # first request: nothing learned yet
    blocks = bodies[1]["messages"][0]["content"]
    assert [("cache_control" in b) for b in blocks] == [True, False]
    assert blocks[1]["text"].startswith("Document: doc 1")
    assert usages[0].cache_write_tokens == 0 and usages[0].cached_prompt_tokens == 0
    assert usages[1].cache_write_tokens > 1024 and usages[1].cached_prompt_tokens == 0
    assert (
        usages[2].cached_prompt_tokens == usages[1].cache_write_tokens and usages[2].cache_write_tokens == 0
    )
    assert all(u.prompt_tokens == usages[0].prompt_tokens for u in usages)
    await lm.aclose()


async def test_prompt_cache_off_sends_plain_strings(server):
    prompt = _demo_prompt()
    lm = AnthropicLM("claude-sonnet-4", base_url=server.url, api_key="k", prompt_cache="off")
    for k in range(3):
        messages = prompt.render(Item(id=str(k), output=f"summary {k}", inputs={"source": f"doc {k}"}))
        await lm.complete(LMRequest(messages=messages, max_tokens=8))
    assert all(isinstance(b["messages"][0]["content"], str) for b in server.bodies)
    await lm.aclose()


async def test_a_long_system_prompt_is_marked_as_a_whole(server):
    system = "You are a careful judge. " * 300
    lm = AnthropicLM("claude-sonnet-4", base_url=server.url, api_key="k", cache_min_tokens=1024)
    for k in range(3):
        await lm.complete(
            LMRequest(
                messages=(Message(role="system", content=system), Message(role="user", content=f"item {k}")),
                max_tokens=8,
            )
        )
    system_blocks = server.bodies[-1]["system"]
    assert system_blocks == [{"type": "text", "text": system, "cache_control": {"type": "ephemeral"}}]
    assert server.bodies[-1]["messages"][0]["content"] == "item 2"
    await lm.aclose()
