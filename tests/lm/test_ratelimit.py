"""Adaptive concurrency from rate-limit headers and 429s: header parsing, AIMD, and runs against the stub."""

from __future__ import annotations

import asyncio
import datetime as dt

import pytest

from mitigate.lm import AnthropicLM, LMRequest, Message, OpenAILM, RetryPolicy
from mitigate.lm._ratelimit import AdaptiveLimiter, estimate_tokens, parse_duration, parse_rate_limit_headers
from mitigate.lm._retry import RetryingLM
from mitigate.testing import StubOpenAIServer


def test_openai_headers_with_duration_resets_are_read():
    snap = parse_rate_limit_headers(
        {
            "x-ratelimit-limit-requests": "5000",
            "x-ratelimit-remaining-requests": "4999",
            "x-ratelimit-reset-requests": "12ms",
            "x-ratelimit-limit-tokens": "160000",
            "x-ratelimit-remaining-tokens": "159976",
            "x-ratelimit-reset-tokens": "6m0s",
        }
    )
    assert (snap.requests_limit, snap.requests_remaining, snap.tokens_remaining) == (5000, 4999, 159976)
    assert snap.requests_reset == pytest.approx(0.012) and snap.tokens_reset == pytest.approx(360.0)
    assert parse_duration("1h2m3.5s") == pytest.approx(3723.5)
    assert parse_duration("soon") is None


def test_anthropic_headers_with_rfc3339_resets_are_read():
    later = (dt.datetime.now(dt.UTC) + dt.timedelta(seconds=30)).isoformat().replace("+00:00", "Z")
    snap = parse_rate_limit_headers(
        {
            "anthropic-ratelimit-requests-limit": "1000",
            "anthropic-ratelimit-requests-remaining": "999",
            "anthropic-ratelimit-requests-reset": later,
            "anthropic-ratelimit-input-tokens-limit": "80000",
            "anthropic-ratelimit-input-tokens-remaining": "79000",
            "anthropic-ratelimit-input-tokens-reset": later,
        }
    )
    assert snap.requests_remaining == 999 and snap.tokens_limit == 80000 and snap.tokens_remaining == 79000
    assert 28 < snap.requests_reset <= 30
    assert parse_rate_limit_headers({"content-type": "application/json"}) is None


class FakeTime:
    def __init__(self) -> None:
        self.now = 0.0
        self.slept: list[float] = []

    def clock(self) -> float:
        return self.now

    async def sleep(self, seconds: float) -> None:
        self.slept.append(seconds)
        self.now += seconds


async def test_a_429_halves_the_cap_once_per_episode_and_pauses_everyone():
    t = FakeTime()
    lim = AdaptiveLimiter(clock=t.clock, sleep=t.sleep)
    tickets = [await lim.acquire() for _ in range(8)]
    assert lim.cap is None and lim.in_flight == 8  # no cap before the first 429
    for ticket in tickets[:3]:  # three calls of the same wave come back 429
        lim.release(ticket, status=429, retry_after=2.0)
    assert lim.cap == 4 and lim.throttled == 3  # halved once, not three times
    for ticket in tickets[3:]:
        lim.release(ticket, status=0)  # no answer: neither success nor 429
    await lim.acquire()
    assert t.slept == [2.0]  # the next caller waited out the server's pause


async def test_successes_raise_the_cap_by_one_per_window():
    t = FakeTime()
    lim = AdaptiveLimiter(clock=t.clock, sleep=t.sleep)
    first = await lim.acquire()
    lim.release(first, status=429)
    assert lim.cap == 1
    t.now += 5
    for expected in (2, 3):
        for _ in range(int(lim.cap)):
            lim.release(await lim.acquire())
        assert lim.cap == expected


async def test_an_exhausted_request_budget_waits_for_its_refill():
    t = FakeTime()
    lim = AdaptiveLimiter(clock=t.clock, sleep=t.sleep)
    ticket = await lim.acquire()
    lim.release(
        ticket,
        headers={
            "x-ratelimit-limit-requests": "60",
            "x-ratelimit-remaining-requests": "0",
            "x-ratelimit-reset-requests": "60s",
        },
    )
    await lim.acquire()
    assert t.slept and t.slept[0] == pytest.approx(1.0)  # 60 per minute: one comes back after a second


def _request(i: int, max_tokens: int = 4) -> LMRequest:
    return LMRequest(messages=(Message(role="user", content=f"question {i}"),), max_tokens=max_tokens)


async def _storm(lm, n: int, *, max_tokens: int = 4) -> int:
    retrying = RetryingLM(lm, RetryPolicy(max_attempts=12, base_delay=0.05, max_delay=2.0))
    sem = asyncio.Semaphore(64)

    async def one(i: int) -> bool:
        async with sem:
            await retrying.complete(_request(i, max_tokens))
            return True

    done = await asyncio.gather(*(one(i) for i in range(n)))
    await lm.aclose()
    return sum(done)


@pytest.mark.parametrize("limited", [True, False])
async def test_requests_per_minute_the_limiter_keeps_429s_to_the_first_wave(limited):
    with StubOpenAIServer(latency=0.01, rate_limit_requests=40, rate_limit_window=0.4) as s:
        lm = OpenAILM("m", base_url=s.base_url, transport="direct", rate_limit=limited)
        assert await _storm(lm, 150) == 150
        if limited:
            assert s.rate_limited <= 64 - 40 + 5  # the first wave, sent before any header was seen
        else:
            assert s.rate_limited > 100  # every retry storms the server again


async def test_tokens_per_minute_are_paced_from_the_anthropic_headers():
    # each request: 2 prompt words + 200 max_tokens = 202 tokens; 2,000 per 0.5 s, so ~10 per window
    with StubOpenAIServer(latency=0.01, rate_limit_tokens=2000, rate_limit_window=0.5) as s:
        lm = AnthropicLM("claude-x", base_url=s.url, api_key="k")
        assert await _storm(lm, 40, max_tokens=200) == 40
        assert s.rate_limited <= 64 - 9 + 5
        assert lm.limiter is not None and lm.limiter.snapshot.tokens_limit == 2000


def test_token_estimate_counts_prompt_characters_and_max_tokens():
    assert (
        estimate_tokens(LMRequest(messages=(Message(role="user", content="x" * 400),), max_tokens=50, n=2))
        == 200
    )
