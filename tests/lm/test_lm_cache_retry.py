"""Retries (RetryingLM), the on-disk cache (CachedLM) and pricing."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta
from email.utils import format_datetime

import pytest

from mitigate.errors import CacheDamageWarning, CapabilityError, LMCallError, TransientLMError
from mitigate.lm import (
    LM,
    CachedLM,
    Choice,
    FakeLM,
    LMCache,
    LMRequest,
    LMResponse,
    Message,
    OpenAILM,
    RetryPolicy,
    Usage,
    wrap,
)
from mitigate.lm._http import parse_retry_after
from mitigate.lm._pricing import cost
from mitigate.lm._retry import RetryingLM
from mitigate.testing import StubOpenAIServer

SECRET = "sk-test-SECRET-123"


def req(text: str = "Rate it.", **kw) -> LMRequest:
    return LMRequest(messages=(Message(role="user", content=text),), **kw)


class RecordingSleep:
    """An injectable sleep that records the waits instead of sleeping."""

    def __init__(self) -> None:
        self.waits: list[float] = []

    async def __call__(self, seconds: float) -> None:
        self.waits.append(seconds)


class Flaky(LM):
    """Fails ``failures`` times with the given error, then answers."""

    provider = "flaky"

    def __init__(self, failures: int, error: Exception) -> None:
        self.failures = failures
        self.error = error
        self.calls = 0

    async def complete(self, request: LMRequest) -> LMResponse:
        self.calls += 1
        if self.calls <= self.failures:
            raise self.error
        return LMResponse(choices=(Choice(text="ok"),))


# ---------------------------------------------------------------- retries


async def test_retry_honours_retry_after_from_the_server():
    sleep = RecordingSleep()
    # 0.5 s: above the longest backoff of two retries from base_delay 0.1 (0.2 s): only the header explains it
    with StubOpenAIServer(latency=0.0, fail_first=2, fail_status=429, retry_after=0.5) as s:
        lm = RetryingLM(OpenAILM("stub-model", base_url=s.base_url), RetryPolicy(base_delay=0.1), sleep=sleep)
        resp = await lm.complete(req())
        assert resp.text == "Score: 4"
        assert s.request_count == 3
    assert len(sleep.waits) == 2
    assert all(w >= 0.5 for w in sleep.waits)
    await lm.aclose()


async def test_backoff_doubles_up_to_max_delay_without_jitter():
    sleep = RecordingSleep()
    inner = Flaky(4, TransientLMError("busy", status=503))
    lm = RetryingLM(inner, RetryPolicy(base_delay=0.5, max_delay=1.5, jitter=False), sleep=sleep)
    assert (await lm.complete(req())).text == "ok"
    assert sleep.waits == [0.5, 1.0, 1.5, 1.5]
    assert lm.retries == 4


async def test_backoff_wins_over_a_shorter_retry_after():
    sleep = RecordingSleep()
    inner = Flaky(1, TransientLMError("busy", status=429, retry_after=0.1))
    lm = RetryingLM(inner, RetryPolicy(base_delay=2.0, jitter=False), sleep=sleep)
    await lm.complete(req())
    assert sleep.waits == [2.0]


async def test_jitter_keeps_waits_between_half_and_full_backoff():
    sleep = RecordingSleep()
    lm = RetryingLM(Flaky(3, TransientLMError("busy")), RetryPolicy(base_delay=1.0), sleep=sleep)
    await lm.complete(req())
    for wait, full in zip(sleep.waits, [1.0, 2.0, 4.0], strict=True):
        assert 0.5 * full <= wait <= full


async def test_gives_up_with_attempts_and_last_error():
    sleep = RecordingSleep()
    last = TransientLMError("still busy", status=503)
    inner = Flaky(10, last)
    lm = RetryingLM(inner, RetryPolicy(max_attempts=3, jitter=False), sleep=sleep)
    with pytest.raises(LMCallError) as info:
        await lm.complete(req())
    err = info.value
    assert type(err) is LMCallError  # not retryable any more
    assert err.attempts == 3 and err.last_error is last
    assert "after 3 attempts" in str(err) and "still busy" in str(err)
    assert inner.calls == 3 and len(sleep.waits) == 2


async def test_retry_after_longer_than_max_delay_gives_up_at_once():
    sleep = RecordingSleep()
    inner = Flaky(5, TransientLMError("quota", status=429, retry_after=3600))
    lm = RetryingLM(inner, RetryPolicy(max_delay=60), sleep=sleep)
    with pytest.raises(LMCallError, match="asked to wait 3600 s"):
        await lm.complete(req())
    assert inner.calls == 1 and sleep.waits == []


async def test_retry_after_beyond_the_patience_is_named_in_the_error_context():
    inner = Flaky(5, TransientLMError("quota", status=429, retry_after=900))
    lm = RetryingLM(inner, RetryPolicy(max_delay=30), sleep=RecordingSleep())
    with pytest.raises(LMCallError) as info:
        await lm.complete(req())
    assert info.value.context["retry_after"] == 900 and info.value.context["patience"] == 30


class Unreachable(LM):
    """Refuses connections until ``up_after`` calls have failed, then answers."""

    provider = "unreachable"

    def __init__(self, up_after: int = 10**9) -> None:
        self.up_after = up_after
        self.calls = 0

    async def complete(self, request: LMRequest) -> LMResponse:
        self.calls += 1
        if self.calls <= self.up_after:
            raise TransientLMError("connection failed (retryable): refused", reason="connection")
        return LMResponse(choices=(Choice(text="ok"),))


async def test_a_server_never_reached_gets_only_connect_attempts_then_every_attempt_once_it_answered():
    sleep = RecordingSleep()
    never = Unreachable()
    lm = RetryingLM(never, RetryPolicy(max_attempts=6, connect_attempts=3, jitter=False), sleep=sleep)
    with pytest.raises(LMCallError, match="after 3 attempts"):
        await lm.complete(req())
    assert never.calls == 3 and sleep.waits == [0.5, 1.0]
    flaky = Unreachable(up_after=0)
    lm = RetryingLM(
        flaky, RetryPolicy(max_attempts=6, connect_attempts=3, jitter=False), sleep=RecordingSleep()
    )
    await lm.complete(req())  # the server answered once: a later outage gets the full policy
    flaky.up_after = 10**9
    with pytest.raises(LMCallError, match="after 6 attempts"):
        await lm.complete(req("again"))
    assert flaky.calls == 7


async def test_non_transient_errors_are_not_retried():
    sleep = RecordingSleep()
    inner = Flaky(5, LMCallError("bad request"))
    lm = RetryingLM(inner, sleep=sleep)
    with pytest.raises(LMCallError, match="bad request"):
        await lm.complete(req())
    assert inner.calls == 1 and sleep.waits == []


def test_retry_policy_is_frozen_and_validated():
    policy = RetryPolicy()
    assert (policy.max_attempts, policy.base_delay, policy.max_delay, policy.jitter) == (6, 0.5, 60.0, True)
    with pytest.raises(Exception, match="frozen"):
        policy.max_attempts = 2  # type: ignore[misc]
    with pytest.raises(Exception, match="max_delay >= base_delay"):
        RetryPolicy(base_delay=10, max_delay=1)


def test_parse_retry_after_reads_seconds_milliseconds_and_dates():
    assert parse_retry_after({"Retry-After": "2"}) == 2.0
    assert parse_retry_after({"retry-after-ms": "250", "retry-after": "9"}) == 0.25
    later = format_datetime(datetime.now(UTC) + timedelta(seconds=30), usegmt=True)
    assert 25 <= parse_retry_after({"Retry-After": later}) <= 31
    assert parse_retry_after({}) is None
    assert parse_retry_after({"Retry-After": "soon"}) is None


# ---------------------------------------------------------------- cache


async def test_identical_rerun_makes_zero_calls(tmp_path):
    with StubOpenAIServer(latency=0.0) as s:
        requests = [req(f"item {i}", temperature=0.7) for i in range(5)]
        first = CachedLM(OpenAILM("stub-model", base_url=s.base_url), LMCache(tmp_path))
        out1 = [await first.complete(r) for r in requests]
        assert s.request_count == 5 and not any(r.cached for r in out1)
        await first.aclose()
        first.cache.close()

        second = CachedLM(OpenAILM("stub-model", base_url=s.base_url), LMCache(tmp_path))  # a new run
        out2 = [await second.complete(r) for r in requests]
        assert s.request_count == 5  # temperature > 0 is cached too
        assert all(r.cached for r in out2)
        assert [r.choices for r in out2] == [r.choices for r in out1]
        assert second.hits == 5 and second.misses == 0
        await second.complete(req("a new item"))
        assert s.request_count == 6
        await second.aclose()


async def test_cache_key_depends_on_backend_identity_and_sampling_options(tmp_path):
    cache = LMCache(tmp_path / "c.sqlite")
    a = CachedLM(FakeLM(lambda r: "A", model="a"), cache)
    b = CachedLM(FakeLM(lambda r: "B", model="b"), cache)
    assert (await a.complete(req())).text == "A"
    assert (await b.complete(req())).text == "B"
    assert (await a.complete(req(seed=1))).cached is False
    assert (await a.complete(req(seed=1))).cached is True
    assert len(cache) == 3


async def test_api_key_never_reaches_the_cache_files(tmp_path):
    cache_dir = tmp_path / "cache"
    with StubOpenAIServer(latency=0.0) as s:
        lm = wrap(OpenAILM("stub-model", base_url=s.base_url, api_key=SECRET), cache=cache_dir)
        await lm.complete(req("one"))
        await lm.complete(req("one"))
        await lm.complete(req("two", top_logprobs=2))
        assert s.auth_headers == [f"Bearer {SECRET}"] * 2  # the key did go to the server
        assert SECRET not in repr(lm)
        await lm.aclose()
    files = [p for p in cache_dir.rglob("*") if p.is_file()]
    assert files
    for p in files:
        assert SECRET.encode() not in p.read_bytes()


async def test_concurrent_identical_requests_make_one_call(tmp_path):
    with StubOpenAIServer(latency=0.05) as s:
        lm = CachedLM(OpenAILM("stub-model", base_url=s.base_url), LMCache(tmp_path))
        out = await asyncio.gather(*(lm.complete(req("same")) for _ in range(10)))
        assert s.request_count == 1
        assert sum(not r.cached for r in out) == 1
        await lm.aclose()


async def test_many_concurrent_distinct_requests_are_all_stored(tmp_path):
    with StubOpenAIServer(latency=0.01) as s:
        lm = CachedLM(OpenAILM("stub-model", base_url=s.base_url), LMCache(tmp_path))
        await asyncio.gather(*(lm.complete(req(f"item {i}")) for i in range(60)))
        assert len(lm.cache) == 60 and s.request_count == 60
        await lm.aclose()


async def test_failed_calls_are_not_cached(tmp_path):
    inner = Flaky(1, LMCallError("boom"))
    lm = CachedLM(inner, LMCache(tmp_path))
    with pytest.raises(LMCallError):
        await lm.complete(req())
    assert len(lm.cache) == 0
    assert (await lm.complete(req())).text == "ok"


async def test_capability_errors_come_before_the_cache(tmp_path):
    lm = CachedLM(FakeLM(["x"]), LMCache(tmp_path))
    with pytest.raises(CapabilityError):
        await lm.complete(req(logprobs=True))


async def test_loglikelihood_is_cached(tmp_path):
    class Scorer(FakeLM):
        scored = 0

        async def loglikelihood(self, context: str, continuation: str) -> float:
            Scorer.scored += 1
            return -1.25

    lm = CachedLM(Scorer(["unused"]), LMCache(tmp_path))
    assert await lm.loglikelihood("ctx", "cont") == -1.25
    assert await lm.loglikelihood("ctx", "cont") == -1.25
    assert Scorer.scored == 1


def test_wrap_puts_retries_inside_the_cache(tmp_path):
    fake = FakeLM(["x"])
    lm = wrap(fake, cache=tmp_path, retry=RetryPolicy(max_attempts=2))
    assert isinstance(lm, CachedLM) and isinstance(lm.inner, RetryingLM) and lm.inner.inner is fake
    assert lm.inner.policy.max_attempts == 2
    assert wrap(fake, cache=False, retry=False) is fake
    assert lm.spec == fake.spec and lm.identity() == fake.identity()


# ---------------------------------------------------------------- pricing


def test_pricing_knows_dated_names_discounts_cache_and_admits_unknowns():
    usage = Usage(prompt_tokens=1_000_000, completion_tokens=1_000_000)
    assert cost("gpt-4o-mini", usage) == pytest.approx(0.15 + 0.60)
    assert cost("gpt-4o-mini-2024-07-18", usage) == cost("gpt-4o-mini", usage)
    assert cost("claude-3-5-haiku-20241022", usage) == pytest.approx(0.80 + 4.00)
    assert cost("openai/gpt-4.1-mini", usage) == pytest.approx(0.40 + 1.60)
    cached = Usage(prompt_tokens=1_000_000, cached_prompt_tokens=1_000_000)
    assert cost("gpt-4o", cached) == pytest.approx(1.25)
    assert cost("my-private-model", usage) is None
    assert cost("gpt-4o-audio-preview", usage) is None  # not silently priced as gpt-4o
    assert cost("SmolLM2-135M", usage, provider="local") == 0.0


# ---------------------------------------------------------------- a damaged cache is a miss


async def _fill_cache(path, n: int = 4) -> list[LMResponse]:
    lm = CachedLM(FakeLM([f"Score: {i}" for i in range(n)]), LMCache(path))
    out = [await lm.complete(req(f"item {i}")) for i in range(n)]
    lm.cache.close()
    return out


async def test_cache_file_of_random_bytes_is_a_miss_with_one_warning(tmp_path):
    path = tmp_path / "lm_cache.sqlite"
    path.write_bytes(bytes(range(256)) * 64)
    with pytest.warns(CacheDamageWarning, match="damaged") as caught:
        lm = CachedLM(FakeLM(["Score: 3"] * 3), LMCache(path))
        answers = [await lm.complete(req(f"item {i}")) for i in range(3)]
    assert [a.text for a in answers] == ["Score: 3"] * 3 and not any(a.cached for a in answers)
    assert lm.misses == 3 and len(caught) == 1 and lm.cache.damaged
    assert path.read_bytes()[:16] == bytes(range(16))  # the user's file is left alone


async def test_random_bytes_inside_the_cache_pages_are_misses_not_tracebacks(tmp_path):
    path = tmp_path / "lm_cache.sqlite"
    await _fill_cache(path, n=40)
    data = bytearray(path.read_bytes())
    rng = __import__("random").Random(7)
    for _ in range(2000):  # everything after the header page: table and index pages
        data[rng.randrange(4096, len(data))] = rng.randrange(256)
    path.write_bytes(bytes(data))
    fresh = FakeLM(lambda request: "Score: 5")
    with pytest.warns(CacheDamageWarning):
        lm = CachedLM(fresh, LMCache(path))
        answers = [await lm.complete(req(f"item {i}")) for i in range(40)]
    assert all(a.text in {f"Score: {i}" for i in range(40)} | {"Score: 5"} for a in answers)
    assert lm.misses >= 1 and fresh.calls == lm.misses  # every damaged entry was asked again


async def test_cached_row_of_the_wrong_shape_is_a_miss_and_is_replaced(tmp_path):
    import sqlite3

    path = tmp_path / "lm_cache.sqlite"
    await _fill_cache(path, n=2)
    with sqlite3.connect(path) as conn:
        conn.execute("UPDATE calls SET response = ?", ('{"choices": "not a list"}',))
    with pytest.warns(CacheDamageWarning, match="does not read as a response"):
        lm = CachedLM(FakeLM(["Score: 4", "Score: 5"]), LMCache(path))
        first = await lm.complete(req("item 0"))
    assert first.text == "Score: 4" and not first.cached
    again = await lm.complete(req("item 0"))
    assert again.cached and again.text == "Score: 4"  # the damaged entry was overwritten


async def test_damaged_loglikelihood_entry_is_a_miss(tmp_path):
    import sqlite3

    class Scorer(FakeLM):
        async def loglikelihood(self, context: str, continuation: str) -> float:
            return -1.5

    path = tmp_path / "lm_cache.sqlite"
    lm = CachedLM(Scorer(["x"]), LMCache(path))
    assert await lm.loglikelihood("a", "b") == -1.5
    lm.cache.close()
    with sqlite3.connect(path) as conn:
        conn.execute("UPDATE calls SET response = ?", ('{"loglikelihood": "high"}',))
    with pytest.warns(CacheDamageWarning):
        again = CachedLM(Scorer(["x"]), LMCache(path))
        assert await again.loglikelihood("a", "b") == -1.5
    assert again.misses == 1
