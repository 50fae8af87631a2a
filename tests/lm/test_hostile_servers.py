"""A hostile or broken server takes nothing over: through every client (the direct aiohttp transport, the
openai SDK over aiohttp and over httpx, the anthropic SDK, DSPy/LiteLLM) a key the server echoes anywhere is
stored, printed and raised nowhere; one request budget stops a hung or trickling server; every malformed part
of an answer is a typed failure naming the part and the server; and a broken-off answer, a full cache disk and
a redirect are named for what they are."""

from __future__ import annotations

import asyncio
import dataclasses
import importlib.util
import json
import math
import os
import time
import traceback
import warnings
from typing import Any

import pytest
from typer.testing import CliRunner

from mitigate import Item, JudgePrompt, PromptJudge
from mitigate.cli import app
from mitigate.errors import (
    CacheDamageWarning,
    CacheUnavailableWarning,
    LMCallError,
    MitigateError,
    RunStoppedError,
)
from mitigate.lm import (
    AnthropicLM,
    CachedLM,
    FakeLM,
    Limits,
    LMCache,
    LMRequest,
    LMResponse,
    Message,
    OpenAILM,
    RetryPolicy,
)
from mitigate.lm._retry import RetryingLM
from mitigate.run import run
from tests.support.fault_server import ECHO_MODES, KEY, FaultServer, chat_answer, http_reply, message_answer
from tests.support.key_echoes import leaks

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")  # dspy/litellm: no price-map download
HAS_DSPY = importlib.util.find_spec("dspy") is not None
CLIENTS = ["direct", "sdk", "httpx", "anthropic", *(["dspy"] if HAS_DSPY else [])]
HTTP_CLIENTS = ["direct", "sdk", "httpx", "anthropic"]
POLICY = RetryPolicy(base_delay=0.01, max_delay=0.05, jitter=False)
REQUEST = LMRequest(
    messages=(Message(role="user", content="Rate the text from 1 to 5.\nText: a text\nScore:"),)
)


def make_lm(
    client: str, url: str, *, timeout: float | None = None, deadline: float = 5.0, key: str = KEY
) -> Any:
    """The backend of ``client`` pointed at ``url`` with ``key``."""
    limits = Limits(deadline=deadline, max_response_bytes=100_000)
    if client == "anthropic":
        return AnthropicLM("m", base_url=url, api_key=key, timeout=timeout, limits=limits)
    if client == "dspy":
        from mitigate.lm import DSPyLM

        return DSPyLM("openai/m", api_base=url + "/v1", api_key=key, timeout=timeout, limits=limits)
    return OpenAILM("m", base_url=url + "/v1", api_key=key, timeout=timeout, limits=limits, transport=client)


async def outcome(lm: Any, request: LMRequest = REQUEST) -> LMResponse | BaseException:
    """The response of one call, or what it raised; the backend closed after."""
    try:
        return await lm.complete(request)
    except Exception as exc:  # the tests look at whatever came
        return exc
    finally:
        await lm.aclose()


def shown(result: LMResponse | BaseException) -> str:
    """Everything a user or a file could get from ``result``: the stored JSON, or the error's text, repr,
    context and traceback with its chain (what --debug prints)."""
    if isinstance(result, LMResponse):
        return result.model_dump_json()
    parts = [
        str(result),
        repr(result),
        repr(getattr(result, "context", {})),
        "".join(traceback.format_exception(result)),
    ]
    return "\n".join(parts)


def _items(n: int) -> list[Item]:
    return [Item(id=f"it{i}", output=f"a text {i}") for i in range(n)]


def _judge(lm: Any) -> PromptJudge:
    return PromptJudge(JudgePrompt.from_template("Rate the text from 1 to 5.\nText: {{output}}\nScore:"), lm)


# ----------------------------------------------------------------------------------------------- echoed keys


@pytest.mark.parametrize("mode", ECHO_MODES)
@pytest.mark.parametrize("client", CLIENTS)
def test_a_key_the_server_echoes_anywhere_is_in_no_answer_and_no_error(client, mode):
    async def go() -> tuple[LMResponse | BaseException, list[str]]:
        with FaultServer(mode) as server:
            result = await outcome(make_lm(client, server.url))
            return result, server.keys

    result, sent = asyncio.run(go())
    assert sent and sent[0].endswith(KEY)  # the server did get the key, and sent it back
    assert not leaks(shown(result), KEY), shown(result)  # nor any piece of it
    if mode in ("echo", "echo_escaped"):
        assert isinstance(result, LMResponse), shown(result)
        assert result.text.startswith("Score: 4") and "***" in result.text
        assert result.model == "***"  # the model name the cache stores
    else:
        assert isinstance(result, MitigateError), shown(result)


@pytest.mark.parametrize("mode", ["echo", "echo_text", "echo_escaped", "echo_error"])
@pytest.mark.parametrize("backend", ["openai-direct", "openai-sdk", "anthropic"])
def test_a_key_the_server_echoes_reaches_no_file_and_no_stream_of_a_cli_run(
    backend, mode, tmp_path, monkeypatch
):
    kind, _, transport = backend.partition("-")
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    monkeypatch.setenv("ANTHROPIC_API_KEY", KEY)
    monkeypatch.setenv("MITIGATE_CACHE_DIR", str(tmp_path / "cache"))
    bench = tmp_path / "b.jsonl"
    bench.write_text(
        "".join(json.dumps({"id": f"x{i}", "output": f"t{i}", "human": {"q": 3}}) + "\n" for i in range(3)),
        encoding="utf-8",
    )
    prompt = tmp_path / "p.txt"
    prompt.write_text("Rate 1 to 5.\n{{output}}\nScore:", encoding="utf-8")
    with FaultServer(mode) as server:
        result = CliRunner().invoke(
            app,
            [
                "judge",
                "-b",
                f"jsonl:{bench}",
                "-c",
                "q",
                "--prompt",
                str(prompt),
                "--backend",
                f"{kind}:m",
                "--base-url",
                server.url + ("/v1" if kind == "openai" else ""),
                "--no-progress",
                "--run-dir",
                str(tmp_path / "run"),
                "--out",
                str(tmp_path / "rows.jsonl"),
                *(["--transport", transport] if transport else []),
            ],
        )
        keys = server.keys
    assert keys and all(k == KEY for k in keys)
    assert not leaks(result.stdout, KEY) and not leaks(result.stderr, KEY), result.output
    assert "bug in mitigate" not in result.output
    written = [p for p in tmp_path.rglob("*") if p.is_file()]
    assert any(p.name == "journal.jsonl" for p in written)
    for path in written:
        assert not leaks(path.read_bytes(), KEY), path
    if mode in ("echo", "echo_escaped"):
        assert result.exit_code == 0, result.output
        stored = [p for p in written if p.parent.name == "cache"]
        assert stored and any(b"***" in p.read_bytes() for p in stored)  # the answers were cached, scrubbed
    else:
        assert result.exit_code == 1, result.output  # every item failed, each a recorded failure


def test_a_key_in_a_cached_answer_never_reaches_the_cache_file(tmp_path):
    async def go() -> None:
        with FaultServer("echo") as server:
            lm = CachedLM(make_lm("direct", server.url), LMCache(tmp_path / "c.sqlite"))
            try:
                first = await lm.complete(REQUEST)
                again = await lm.complete(REQUEST)
            finally:
                await lm.aclose()
        assert again.cached and again.model == first.model == "***"

    asyncio.run(go())
    assert KEY.encode() not in b"".join(p.read_bytes() for p in tmp_path.iterdir())


# ---------------------------------------------------------------------------------------------- one budget


@pytest.mark.parametrize("client", CLIENTS)
def test_a_hung_server_fails_the_request_once_its_deadline_is_spent_over_all_attempts(client):
    async def go() -> tuple[LMResponse | BaseException, float, int]:
        with FaultServer("hang") as server:
            start = time.monotonic()
            result = await outcome(
                RetryingLM(
                    make_lm(client, server.url, timeout=0.4, deadline=1.0),
                    RetryPolicy(max_attempts=6, base_delay=0.01, max_delay=0.05, jitter=False),
                )
            )
            return result, time.monotonic() - start, server.requests

    result, seconds, requests = asyncio.run(go())
    assert isinstance(result, LMCallError) and result.context.get("reason") == "deadline", shown(result)
    assert "hung or trickling" in str(result)
    assert requests <= 3  # 0.4 s, 0.4 s, then what is left of 1.0 s: never six attempts of 0.4 s
    assert seconds < 1.0 + 0.7, seconds


@pytest.mark.parametrize("client", CLIENTS)
def test_timeout_is_the_silence_an_attempt_waits_through_on_every_client(client):
    # a byte every 0.25 s never leaves the client silent for 0.8 s: only the deadline ends the request, in one
    # attempt
    async def go() -> tuple[LMResponse | BaseException, float, int]:
        with FaultServer("trickle", interval=0.25) as server:
            start = time.monotonic()
            result = await outcome(RetryingLM(make_lm(client, server.url, timeout=0.8, deadline=1.6), POLICY))
            return result, time.monotonic() - start, server.requests

    result, seconds, requests = asyncio.run(go())
    assert isinstance(result, LMCallError) and result.context.get("reason") == "deadline", shown(result)
    assert "hung or trickling" in str(result)
    assert requests == 1
    assert 1.5 < seconds < 1.6 + 0.7, seconds


@pytest.mark.parametrize("client", HTTP_CLIENTS)
def test_a_server_trickling_a_byte_a_second_stops_a_run_after_one_deadline(client, tmp_path):
    async def go() -> tuple[RunStoppedError, float, int]:
        with FaultServer("trickle", interval=1.0) as server:
            lm = RetryingLM(make_lm(client, server.url, deadline=1.5), POLICY)
            start = time.monotonic()
            try:
                with pytest.raises(RunStoppedError) as info:
                    await run(
                        _judge(lm), _items(20), concurrency=8, progress=False, journal=tmp_path / "j.jsonl"
                    )
            finally:
                await lm.aclose()
            return info.value, time.monotonic() - start, server.requests

    error, seconds, requests = asyncio.run(go())
    assert "hung or trickling" in str(error) and "bytes of the answer had come" in str(error), str(error)
    assert requests <= 3
    assert seconds < 1.5 + 1.0, seconds


def test_the_waits_between_attempts_are_not_time_on_the_server():
    # two quick 503s asking for 0.4 s each, then the answer: 0.8 s of waiting, a few ms on the server,
    # deadline 0.5 s
    async def go() -> tuple[LMResponse | BaseException, float]:
        reply = http_reply(
            b'{"error": "busy"}', status="503 Service Unavailable", headers=(("Retry-After", "0.4"),)
        )
        with FaultServer("raw", reply=reply, faults=2) as server:
            start = time.monotonic()
            result = await outcome(
                RetryingLM(
                    make_lm("direct", server.url, deadline=0.5),
                    RetryPolicy(base_delay=0.01, max_delay=1.0, jitter=False),
                )
            )
            return result, time.monotonic() - start

    result, seconds = asyncio.run(go())
    assert isinstance(result, LMResponse), shown(result)
    assert seconds > 0.8


def hung_server_seconds(deadline: float, timeout: float | None, policy: RetryPolicy) -> float:
    """The longest a request can take on a server that accepts the connection and never answers."""
    per_attempt = deadline if timeout is None else min(timeout, deadline)
    attempts = min(policy.max_attempts, max(1, math.ceil(deadline / per_attempt - 1e-9)))
    on_server = min(deadline, attempts * per_attempt)
    waits = sum(min(policy.max_delay, policy.base_delay * 2 ** (k - 1)) for k in range(1, attempts))
    return on_server + waits


def test_the_default_settings_stop_a_run_on_a_hung_server_within_two_minutes():
    from mitigate.cli._build import build_backend
    from mitigate.cli._judge import JudgeOptions

    lm = build_backend(
        dataclasses.replace(JudgeOptions(), backend="openai:m", base_url="http://127.0.0.1:9/v1", cache=False)
    )
    assert isinstance(lm, RetryingLM) and isinstance(lm.inner, OpenAILM)
    seconds = hung_server_seconds(lm.inner.limits.deadline, lm.inner.timeout, lm.policy)
    assert seconds < 120, seconds
    # the first requests go side by side, so the breaker stops the run when they fail: one request's worst
    # case
    assert hung_server_seconds(100.0, 40.0, RetryPolicy()) == pytest.approx(100.0 + 0.5 + 1.0)
    assert hung_server_seconds(100.0, 120.0, RetryPolicy()) == 100.0
    assert hung_server_seconds(100.0, 1.0, RetryPolicy(max_attempts=6, max_delay=60)) == pytest.approx(
        6 * 1.0 + sum(min(60, 0.5 * 2 ** (k - 1)) for k in range(1, 6))
    )
    assert math.isfinite(seconds)


# ------------------------------------------------------------------------------------------ malformed fields


def _body(client: str, **fields: Any) -> bytes:
    answer = (
        message_answer("Score: 4", **fields) if client == "anthropic" else chat_answer("Score: 4", **fields)
    )
    return json.dumps(answer).encode()


MALFORMED: dict[str, tuple[Any, str]] = {
    # name: (the reply for a client, the field the error must name)
    "usage a string": (lambda c: http_reply(_body(c, usage="lots")), "usage"),
    "tokens a word": (
        lambda c: http_reply(
            _body(
                c,
                usage={
                    "prompt_tokens": "ten",
                    "completion_tokens": 1,
                    "input_tokens": "ten",
                    "output_tokens": 1,
                },
            )
        ),
        "_tokens",
    ),
    "tokens 1e999": (
        lambda c: http_reply(
            _body(
                c, usage={"prompt_tokens": 3, "completion_tokens": 1, "input_tokens": 3, "output_tokens": 1}
            )
            .replace(b'"completion_tokens": 1', b'"completion_tokens": 1e999')
            .replace(b'"output_tokens": 1', b'"output_tokens": 1e999')
        ),
        "_tokens",
    ),
    "tokens negative": (
        lambda c: http_reply(
            _body(
                c, usage={"prompt_tokens": -5, "completion_tokens": 1, "input_tokens": -5, "output_tokens": 1}
            )
        ),
        "_tokens",
    ),
    "finish_reason an object": (
        lambda c: http_reply(_body(c, **({"stop": {}} if c == "anthropic" else {"finish": {}}))),
        "_reason",
    ),
    "model a list": (lambda c: http_reply(_body(c, model=["m"])), "model"),
    "status line garbage": (lambda c: b"HTTP/1.1 abc\r\nContent-Length: 0\r\n\r\n", "status line"),
    "status line not HTTP": (lambda c: b"\x00\x01 garbage\r\n\r\n", "status line"),
    "status 999": (lambda c: http_reply(_body(c), status="999 What"), "status"),
    "a 10 MB header": (lambda c: http_reply(_body(c), headers=(("X-Big", "a" * 10_000_000),)), "headers"),
    "200k headers": (
        lambda c: http_reply(_body(c), headers=tuple((f"X-H{i}", "v") for i in range(200_000))),
        "headers",
    ),
}


@pytest.mark.parametrize("case", list(MALFORMED))
@pytest.mark.parametrize("client", HTTP_CLIENTS)
def test_a_malformed_part_of_an_answer_is_a_typed_failure_naming_it_and_the_server(client, case):
    reply, field = MALFORMED[case]

    async def go() -> tuple[LMResponse | BaseException, str]:
        with FaultServer("raw", reply=reply(client)) as server:
            return await outcome(make_lm(client, server.url)), server.url

    result, url = asyncio.run(go())
    assert isinstance(result, LMCallError), shown(result)
    assert result.context.get("reason") == "malformed", shown(result)
    assert url in str(result) and field in str(result), str(result)
    assert "\n" not in str(result)


@pytest.mark.parametrize("client", HTTP_CLIENTS)
def test_a_malformed_field_stops_a_cli_run_naming_the_server_never_as_a_bug(client, tmp_path, monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    kind = "anthropic" if client == "anthropic" else "openai"
    bench = tmp_path / "b.jsonl"
    bench.write_text(
        "".join(json.dumps({"id": f"x{i}", "output": f"t{i}", "human": {"q": 3}}) + "\n" for i in range(6)),
        encoding="utf-8",
    )
    prompt = tmp_path / "p.txt"
    prompt.write_text("Rate 1 to 5.\n{{output}}\nScore:", encoding="utf-8")
    reply = http_reply(_body(client, **({"stop": {}} if client == "anthropic" else {"finish": {}})))
    with FaultServer("raw", reply=reply) as server:
        url = server.url
        result = CliRunner().invoke(
            app,
            [
                "judge",
                "-b",
                f"jsonl:{bench}",
                "-c",
                "q",
                "--prompt",
                str(prompt),
                "--backend",
                f"{kind}:m",
                "--base-url",
                url + ("/v1" if kind == "openai" else ""),
                "--no-progress",
                "--no-cache",
                *(["--transport", client] if kind == "openai" else []),
            ],
        )
    errors = [ln for ln in result.stderr.splitlines() if ln.startswith("error:")]
    assert result.exit_code == 1, result.output
    assert len(errors) == 1 and "bug in mitigate" not in errors[0]
    assert url in errors[0] and "_reason" in errors[0], errors[0]


def test_negative_or_unreadable_usage_is_never_summed():
    from mitigate.lm import Usage

    with pytest.raises(ValueError):
        Usage(prompt_tokens=-5)

    async def go() -> LMResponse | BaseException:
        body = http_reply(_body("direct", usage={"prompt_tokens": 10, "completion_tokens": -3}))
        with FaultServer("raw", reply=body) as server:
            return await outcome(make_lm("direct", server.url))

    result = asyncio.run(go())
    assert (
        isinstance(result, LMCallError) and "usage.completion_tokens" in str(result) and "-3" in str(result)
    )


# -------------------------------------------------------------------------------------------- wrong causes


@pytest.mark.parametrize("mode", ["reset", "short"])
@pytest.mark.parametrize("client", HTTP_CLIENTS)
def test_an_answer_broken_off_mid_body_is_retried_for_its_item_and_named_as_such(client, mode, tmp_path):
    async def once() -> LMResponse | BaseException:  # one break: the item's retry gets the answer
        with FaultServer(mode, faults=1) as server:
            return await outcome(RetryingLM(make_lm(client, server.url), POLICY))

    async def always() -> tuple[RunStoppedError, int]:
        with FaultServer(mode) as server:
            lm = RetryingLM(make_lm(client, server.url), POLICY)
            try:
                with pytest.raises(RunStoppedError) as info:
                    await run(
                        _judge(lm), _items(20), concurrency=8, progress=False, journal=tmp_path / "j.jsonl"
                    )
            finally:
                await lm.aclose()
            return info.value, server.requests

    answered = asyncio.run(once())
    assert isinstance(answered, LMResponse) and answered.text == "Score: 4", shown(answered)
    error, requests = asyncio.run(always())
    assert "closed mid-answer" in str(error) and ("broke off its answer on every one of 6 attempts") in str(
        error
    )
    assert "could not connect" not in str(error)
    assert requests == 3 * 6  # three items, each with every attempt: a server that answers is not unreachable


def test_a_cache_on_a_full_disk_says_so_and_never_advises_deleting_it(tmp_path):
    cache = LMCache(tmp_path / "c.sqlite")
    pages = cache._conn.execute("PRAGMA page_count").fetchone()[0]
    cache._conn.execute(f"PRAGMA max_page_count = {pages}")  # SQLite's own SQLITE_FULL, as on a full disk
    answers = FakeLM(responses=["Score: 4"] * 30)
    lm = CachedLM(answers, cache)

    async def go() -> list[str]:
        return [
            (
                await lm.complete(LMRequest(messages=(Message(role="user", content=f"q{i} " + "x" * 3000),)))
            ).text
            for i in range(30)
        ]

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        texts = asyncio.run(go())
    assert texts == ["Score: 4"] * 30  # the run goes on, uncached
    said = [
        str(w.message) for w in caught if issubclass(w.category, CacheUnavailableWarning | CacheDamageWarning)
    ]
    assert len(said) == 1, said
    assert (
        "no space left on the device (ENOSPC" in said[0]
        and "damaged" not in said[0]
        and "delete" not in said[0]
    )
    assert not any(issubclass(w.category, CacheDamageWarning) for w in caught)
    assert (tmp_path / "c.sqlite").exists()


@pytest.mark.parametrize("client", HTTP_CLIENTS)
def test_a_redirect_is_not_followed_and_names_both_servers(client, tmp_path):
    async def go() -> tuple[LMResponse | BaseException, str, str, int]:
        with FaultServer("echo", host="127.0.0.2") as other:
            path = "/v1/messages" if client == "anthropic" else "/v1/chat/completions"
            with FaultServer("redirect", location=other.url + path) as first:
                lm = CachedLM(make_lm(client, first.url), LMCache(tmp_path / "c.sqlite"))
                return await outcome(lm), first.url, other.url, other.requests

    result, first, other, reached = asyncio.run(go())
    assert isinstance(result, LMCallError) and result.context.get("reason") == "redirect", shown(result)
    assert first in str(result) and other in str(result)
    assert reached == 0  # the key never went to the other server
    assert len(LMCache(tmp_path / "c.sqlite")) == 0


@pytest.mark.parametrize("client", HTTP_CLIENTS)
def test_a_cookie_an_answer_sets_is_neither_kept_nor_sent_back(client):
    # a cookie the client cannot encode broke every later request of the httpx clients; none is needed anyway
    async def go() -> tuple[list[LMResponse | BaseException], list[str]]:
        cookies = (
            ("Set-Cookie", "session=f\u01c5; Path=/"),
            ("Set-Cookie", "track=abc; Path=/"),
            ("Connection", "close"),
        )
        reply = http_reply(_body(client), headers=cookies)
        with FaultServer("raw", reply=reply) as server:
            lm = make_lm(client, server.url)
            try:
                results = []
                for _ in range(3):
                    try:
                        results.append(await lm.complete(REQUEST))
                    except Exception as exc:  # the test looks at whatever came
                        results.append(exc)
            finally:
                await lm.aclose()
            return results, server.cookies

    results, cookies = asyncio.run(go())
    assert all(isinstance(r, LMResponse) and r.text == "Score: 4" for r in results), [
        shown(r) for r in results
    ]
    assert cookies == []


@pytest.mark.parametrize("client", ["direct", "anthropic"])
def test_rate_limit_headers_asking_for_hours_stop_a_run_instead_of_stalling_it(client, tmp_path):
    # the limiter's wait is not time on the server (the deadline leaves it out), so it must be bounded by
    # itself
    async def go() -> tuple[RunStoppedError, float, int]:
        headers = (
            ("x-ratelimit-remaining-requests", "0"),
            ("x-ratelimit-reset-requests", "1000000s"),
            ("anthropic-ratelimit-requests-remaining", "0"),
            ("anthropic-ratelimit-requests-reset", "2999-01-01T00:00:00Z"),
            ("Connection", "close"),
        )
        with FaultServer("raw", reply=http_reply(_body(client), headers=headers)) as server:
            lm = RetryingLM(make_lm(client, server.url), POLICY)
            start = time.monotonic()
            try:
                with pytest.raises(RunStoppedError) as info:
                    await asyncio.wait_for(
                        run(
                            _judge(lm),
                            _items(10),
                            concurrency=1,
                            progress=False,
                            journal=tmp_path / "j.jsonl",
                        ),
                        30,
                    )
            finally:
                await lm.aclose()
            return info.value, time.monotonic() - start, server.requests

    error, seconds, requests = asyncio.run(go())
    assert "asked to wait" in str(error) and "(its rate-limit headers)" in str(error), str(error)
    assert "longer than this run's patience" in str(error)
    assert requests == 1 and seconds < 10


def test_exchanges_of_one_request_that_overlap_count_once_against_its_deadline():
    # an Anthropic request of n samples sends them side by side: together they may take the deadline, not n
    # times it
    from mitigate.lm._retry import RequestClock

    clock = RequestClock()
    left = [clock.begin(1.0), clock.begin(1.0)]
    time.sleep(0.2)
    clock.end()
    clock.end()
    assert left[0] == pytest.approx(1.0, abs=0.01) and left[1] == pytest.approx(1.0, abs=0.01)
    assert 0.19 < clock.spent < 0.3 and clock.attempts == 2
    assert clock.begin(1.0) == pytest.approx(1.0 - clock.spent, abs=0.01)
    clock.end()
    clock.spent = 1.0
    with pytest.raises(TimeoutError):
        clock.begin(1.0)


_NO_DESCRIPTOR_LEFT = """
import asyncio, os, resource, sys, warnings
from mitigate import Item, JudgePrompt, PromptJudge
from mitigate.errors import RunStoppedError
from mitigate.lm import OpenAILM, RetryPolicy, wrap
from mitigate.run import run

import aiohttp  # every import made before the limit: importing opens files too
if sys.argv[2] == "sdk":
    import httpx, openai

async def main() -> None:
    lm = wrap(
        OpenAILM("m", base_url=sys.argv[1], api_key="sk-x", transport=sys.argv[2]),
        cache=False,
        retry=RetryPolicy(base_delay=0.01, max_delay=0.02, jitter=False),
    )
    judge = PromptJudge(JudgePrompt.from_template("Rate 1 to 5.\\n{{output}}\\nScore:"), lm)
    items = [Item(id=f"x{i}", output=f"t{i}") for i in range(40)]
    limit = len(os.listdir("/proc/self/fd")) + 1  # the event loop's own descriptors take what is left
    resource.setrlimit(resource.RLIMIT_NOFILE, (limit, resource.getrlimit(resource.RLIMIT_NOFILE)[1]))
    try:
        await run(judge, items, concurrency=16, progress=False)
    except RunStoppedError as exc:
        print(limit, exc)
    await lm.aclose()

asyncio.run(main())
"""


@pytest.mark.skipif(not os.path.isdir("/proc/self/fd"), reason="counts open descriptors in /proc")
@pytest.mark.parametrize("transport", ["direct", pytest.param("sdk", marks=pytest.mark.slow)])
def test_no_descriptor_left_is_reported_in_one_line_naming_the_limit_not_as_a_server_that_cannot_be_reached(
    transport,
):
    import subprocess
    import sys

    from mitigate.testing import StubOpenAIServer

    with StubOpenAIServer(latency=0.05) as server:
        done = subprocess.run(
            [sys.executable, "-c", _NO_DESCRIPTOR_LEFT, server.base_url, transport],
            capture_output=True,
            text=True,
            timeout=60,
            env={**os.environ, "PYTHONPATH": os.getcwd()},
        )
    assert done.returncode == 0, done.stderr
    limit, _, said = done.stdout.strip().partition(" ")
    assert "\n" not in said and "could not connect" not in said.lower(), said
    assert f"RLIMIT_NOFILE, allows at most {limit} open files" in said and "EMFILE" in said, said
    assert "raise the limit (ulimit -n" in said and "--concurrency" in said, said
