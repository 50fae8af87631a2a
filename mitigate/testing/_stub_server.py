"""A tiny OpenAI- and Anthropic-compatible HTTP server for tests and benchmarks.

:class:`StubOpenAIServer` listens on a free port of ``127.0.0.1`` and answers ``POST /v1/chat/completions``
(OpenAI's shape: ``n`` choices, ``logprobs``/``top_logprobs``, ``usage`` with cached tokens), ``POST
/v1/messages`` (Anthropic's, so the ``anthropic`` SDK can be pointed at it with ``base_url``), ``GET
/v1/models`` (the one model name) and both providers' batch endpoints (:mod:`mitigate.testing._stub_batches`).
This module is the HTTP side (connections, counters, failures, rate limits); the answers, their usage, the
prompt caches and forced function calls are :mod:`mitigate.testing._stub_answers`'.

Prompt caching is emulated as the providers publish it, counting the stub's tokens (words): OpenAI caches
every prompt of ``openai_cache_min_tokens`` (1,024) tokens or more automatically, in steps of
``openai_cache_step`` (128) tokens, and reports the reused prefix as
``usage.prompt_tokens_details.cached_tokens``; Anthropic caches the prefix up to each ``cache_control``
breakpoint that holds at least ``anthropic_cache_min_tokens`` tokens and reports ``cache_read_input_tokens``
(the longest breakpoint prefix found in its cache), ``cache_creation_input_tokens`` (the rest up to the last
breakpoint) and ``input_tokens`` (the tokens after it). Entries live ``cache_ttl`` seconds after their last
use.

Rate limits (``rate_limit_requests`` / ``rate_limit_tokens``) are token buckets that hold the limit and refill
at the limit per ``rate_limit_window`` seconds, a request counted as its prompt tokens plus ``max_tokens``;
every live answer carries the provider's headers (``x-ratelimit-*`` durations on OpenAI routes,
``anthropic-ratelimit-*`` RFC 3339 times on ``/v1/messages``), and a request over the limit gets HTTP 429 with
``Retry-After``.

Each answer is sent after ``latency`` seconds, from an asyncio loop in the server's own daemon thread
(never the client's loop), over kept-alive HTTP/1.1 connections, so the server is not the bottleneck of a
throughput benchmark. It records every request body and credential header (``Authorization``,
``x-api-key``), so tests can check that keys reach the server and are written nowhere else::

    with StubOpenAIServer(latency=0.01, reply="Score: 4") as server:
        lm = OpenAILM("stub-model", base_url=server.base_url)
        ...
        assert server.request_count == 1
"""

from __future__ import annotations

import asyncio
import contextlib
import datetime as dt
import json
import math
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, fields
from http import HTTPStatus
from types import TracebackType
from typing import Any
from urllib.parse import parse_qsl

from mitigate.testing._stub_answers import StubAnswers, count_words
from mitigate.testing._stub_batches import BatchEmulator, FailHook, Reply, error_body

_REASONS = {s: HTTPStatus(s).phrase for s in (200, 400, 401, 404, 405, 429, 500, 502, 503)} | {
    529: "Overloaded"
}
_RECORDS = ("bodies", "auth", "api_keys", "agents", "paths")


def _duration(seconds: float) -> str:
    """A reset time in OpenAI's header style: ``"12ms"``, ``"1.5s"``, ``"6m0s"``."""
    if seconds < 1:
        return f"{max(0, int(seconds * 1000))}ms"
    minutes, rest = divmod(seconds, 60.0)
    return f"{int(minutes)}m{rest:.0f}s" if minutes else f"{rest:.3g}s"


def _fmt_seconds(seconds: float) -> str:
    """A Retry-After value: an integer when whole, else a decimal number of seconds."""
    return str(int(seconds)) if float(seconds).is_integer() else f"{seconds:g}"


@dataclass(eq=False)
class StubOpenAIServer(StubAnswers):
    """A real HTTP server on 127.0.0.1 that answers like OpenAI/Anthropic after ``latency`` seconds.

    Parameters:
        latency: seconds to wait before each answer (concurrent requests wait concurrently).
        reply: the completion text, or a callable given the parsed JSON request body that returns it
            (called once per sample).
        fail_first, fail_status, retry_after: the first ``fail_first`` requests fail with ``fail_status``
            (429), with a ``Retry-After`` header when ``retry_after`` is set.
        logprobs, honour_n: when False the server ignores logprob requests, or answers one choice whatever
            ``n`` asks for (like servers without that support).
        cached_tokens, cache_write_tokens: when non-zero, the cache reads (and Anthropic's cache writes)
            reported on every call instead of the ``prompt_cache`` emulation (see the module docstring;
            ``openai_cache_min_tokens``, ``openai_cache_step``, ``anthropic_cache_min_tokens`` and
            ``cache_ttl`` set its rules).
        model: the model name echoed in responses when the request names none.
        rate_limit_requests, rate_limit_tokens, rate_limit_window: requests and tokens allowed per
            ``rate_limit_window`` seconds on live calls (None: unlimited).
        batch_*: the batch emulation's (:class:`~mitigate.testing._stub_batches.BatchEmulator`) time per
            request, validation delay before an OpenAI batch starts, delay before answering a create call,
            expiry (seconds), failure hook ``fail(provider, custom_id, body)`` returning an HTTP status or
            None, and size limits by provider.
        record: keep every request's body, credential headers, user agent and path; False keeps only the
            counters (a benchmark of a million requests does not fill the memory).

    Use as a context manager or call :meth:`start` and :meth:`stop`. Counters and records are thread-safe;
    :attr:`batch` holds the batch emulation (its ``created`` log and ``downloads``).
    """

    latency: float = 0.05
    reply: str | Callable[[dict[str, Any]], str] = "Score: 4"
    fail_first: int = 0
    fail_status: int = 429
    retry_after: float | None = None
    logprobs: bool = True
    cached_tokens: int = 0
    cache_write_tokens: int = 0
    model: str = "stub-model"
    honour_n: bool = True
    prompt_cache: bool = True
    openai_cache_min_tokens: int = 1024
    openai_cache_step: int = 128
    anthropic_cache_min_tokens: int = 1024
    cache_ttl: float = 300.0
    rate_limit_requests: int | None = None
    rate_limit_tokens: int | None = None
    rate_limit_window: float = 60.0
    batch_latency: float = 0.0
    batch_validation_delay: float = 0.0
    batch_create_delay: float = 0.0
    batch_expire_after: float | None = None
    batch_fail: FailHook | None = None
    batch_max_requests: dict[str, int] | None = None
    batch_max_bytes: dict[str, int] | None = None
    port: int = 0
    record: bool = True

    def __post_init__(self) -> None:
        if self.latency < 0:
            raise ValueError(f"latency must be >= 0 seconds; got {self.latency}")
        if self.fail_first < 0:
            raise ValueError(f"fail_first must be >= 0; got {self.fail_first}")
        if not 0 <= self.port <= 65535:
            raise ValueError(f"port must be 0 (a free one) to 65535; got {self.port}")
        self.openai_cache_step = max(1, self.openai_cache_step)
        self._cache: dict[str, float] = {}
        self._window_start = time.monotonic()
        self._buckets: dict[str, float] = {}
        given = {f.name: getattr(self, f.name) for f in fields(self) if getattr(self, f.name) is not None}
        batch = {k.removeprefix("batch_"): v for k, v in given.items() if k.startswith("batch_")}
        self.batch = BatchEmulator(self._answer, **batch)  # the batch_* fields, by their names there
        self._lock = threading.Lock()
        self._count = self._in_flight = self._max_in_flight = self._connections = self._rate_limited = 0
        self._records: dict[str, list[Any]] = {name: [] for name in _RECORDS}
        self._thread: threading.Thread | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._server: asyncio.Server | None = None
        self._writers: set[asyncio.StreamWriter] = set()
        self._ready = threading.Event()
        self._error: BaseException | None = None

    # ------------------------------------------------------------------ public API

    @property
    def url(self) -> str:
        """The server root, e.g. ``http://127.0.0.1:54321``."""
        return f"http://127.0.0.1:{self.port}"

    @property
    def base_url(self) -> str:
        """The OpenAI-style base URL (``<url>/v1``) to pass as ``base_url``."""
        return f"{self.url}/v1"

    @property
    def request_count(self) -> int:
        """How many HTTP requests (any path, failures included) the server has received."""
        with self._lock:
            return self._count

    @property
    def max_in_flight(self) -> int:
        """The most requests the server was answering at one moment (> 1 means clients overlapped)."""
        with self._lock:
            return self._max_in_flight

    @property
    def connections(self) -> int:
        """How many TCP connections clients opened (fewer than requests means keep-alive reuse)."""
        with self._lock:
            return self._connections

    @property
    def rate_limited(self) -> int:
        """How many live requests the rate-limit emulation answered with HTTP 429."""
        with self._lock:
            return self._rate_limited

    def _recorded(self, name: str) -> list[Any]:
        with self._lock:
            return list(self._records[name])

    @property
    def bodies(self) -> list[dict[str, Any]]:
        """A copy of every parsed JSON request body received, in arrival order."""
        return self._recorded("bodies")

    @property
    def auth_headers(self) -> list[str]:
        """Every ``Authorization`` header value received (empty string when absent)."""
        return self._recorded("auth")

    @property
    def api_key_headers(self) -> list[str]:
        """Every ``x-api-key`` header value received (Anthropic's key header; empty when absent)."""
        return self._recorded("api_keys")

    @property
    def user_agents(self) -> list[str]:
        """Every ``User-Agent`` header value received (empty string when absent): which client called."""
        return self._recorded("agents")

    @property
    def paths(self) -> list[str]:
        """The request path of every request received."""
        return self._recorded("paths")

    def reset(self) -> None:
        """Forget counts and recorded requests (the ``fail_first`` budget starts again too)."""
        with self._lock:
            self._count = self._max_in_flight = self._connections = 0
            for records in self._records.values():
                records.clear()

    def start(self) -> StubOpenAIServer:
        """Start the server thread and wait until it listens; returns self."""
        if self._thread is not None:
            raise RuntimeError("StubOpenAIServer is already running; expected a stopped server")
        self._ready.clear()
        self._thread = threading.Thread(target=self._run, name="StubOpenAIServer", daemon=True)
        self._thread.start()
        if not self._ready.wait(timeout=10):
            raise RuntimeError("StubOpenAIServer did not start listening within 10 s")
        if self._error is not None:
            raise RuntimeError(f"StubOpenAIServer failed to start: {self._error!r}")
        return self

    def stop(self) -> None:
        """Stop the server, close open connections and join its thread."""
        loop, thread = self._loop, self._thread
        if loop is None or thread is None:
            return
        with contextlib.suppress(RuntimeError):
            asyncio.run_coroutine_threadsafe(self._shutdown(), loop).result(timeout=10)
        thread.join(timeout=10)
        self._thread = None
        self._loop = None

    def __enter__(self) -> StubOpenAIServer:
        return self.start()

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()

    def __repr__(self) -> str:
        return f"StubOpenAIServer(url={self.url!r}, latency={self.latency}, requests={self.request_count})"

    # ------------------------------------------------------------------ server thread

    def _run(self) -> None:
        loop = asyncio.new_event_loop()
        self._loop = loop
        asyncio.set_event_loop(loop)
        try:
            self._server = loop.run_until_complete(
                asyncio.start_server(self._handle, host="127.0.0.1", port=self.port, backlog=1024)
            )
            self.port = self._server.sockets[0].getsockname()[1]
            self.batch.url_root = self.url
        except BaseException as exc:  # reported to start()
            self._error = exc
            self._ready.set()
            loop.close()
            return
        self._ready.set()
        try:
            loop.run_forever()
        finally:
            pending = [t for t in asyncio.all_tasks(loop) if not t.done()]
            for task in pending:
                task.cancel()
            if pending:
                loop.run_until_complete(asyncio.gather(*pending, return_exceptions=True))
            loop.close()

    async def _shutdown(self) -> None:
        if self._server is not None:
            self._server.close()
        for writer in list(self._writers):
            writer.close()
        loop = asyncio.get_running_loop()
        loop.call_soon(loop.stop)

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self._writers.add(writer)
        with self._lock:
            self._connections += 1
        try:
            while True:
                try:
                    head = await reader.readuntil(b"\r\n\r\n")
                except (asyncio.IncompleteReadError, asyncio.LimitOverrunError, ConnectionError):
                    return
                lines = head.decode("latin-1").split("\r\n")
                try:
                    method, target, version = lines[0].split(" ", 2)
                except ValueError:
                    await self._send(writer, 400, {"error": {"message": "malformed request line"}}, {}, True)
                    return
                headers = {
                    name.strip().lower(): value.strip()
                    for name, sep, value in (line.partition(":") for line in lines[1:])
                    if sep
                }
                if "chunked" in headers.get("transfer-encoding", "").lower():
                    raw = await _read_chunked(reader)
                else:
                    length = int(headers.get("content-length", "0") or "0")
                    raw = await reader.readexactly(length) if length else b""
                close = headers.get("connection", "").lower() == "close" or version == "HTTP/1.0"
                path, _, query = target.partition("?")
                status, payload, extra = await self._respond(
                    method, path, headers, raw, dict(parse_qsl(query))
                )
                await self._send(writer, status, payload, extra, close)
                if close:
                    return
        except (ConnectionError, asyncio.IncompleteReadError, asyncio.CancelledError):
            return  # the client left, or the server is shutting down
        finally:
            self._writers.discard(writer)
            with contextlib.suppress(Exception):
                writer.close()

    async def _send(
        self,
        writer: asyncio.StreamWriter,
        status: int,
        payload: dict[str, Any] | bytes,
        extra: dict[str, str],
        close: bool,
    ) -> None:
        body = payload if isinstance(payload, bytes) else json.dumps(payload).encode("utf-8")
        extra = dict(extra)
        head = [
            f"HTTP/1.1 {status} {_REASONS.get(status, 'Status')}",
            f"Content-Type: {extra.pop('Content-Type', 'application/json')}",
            f"Content-Length: {len(body)}",
            f"Connection: {'close' if close else 'keep-alive'}",
            *(f"{k}: {v}" for k, v in extra.items()),
        ]
        writer.write(("\r\n".join(head) + "\r\n\r\n").encode("latin-1") + body)
        await writer.drain()

    async def _respond(
        self, method: str, path: str, headers: dict[str, str], raw: bytes, query: dict[str, str] | None = None
    ) -> Reply:
        is_json = "multipart" not in headers.get("content-type", "")
        try:
            body = json.loads(raw) if raw and is_json else {}
        except (json.JSONDecodeError, UnicodeDecodeError):
            body = {}
        with self._lock:
            self._count += 1
            number = self._count
            if self.record:
                heard = [headers.get(h, "") for h in ("authorization", "x-api-key", "user-agent")]
                for name, value in zip(
                    _RECORDS, [body if isinstance(body, dict) else {}, *heard, path], strict=True
                ):
                    self._records[name].append(value)
            self._in_flight += 1
            self._max_in_flight = max(self._max_in_flight, self._in_flight)
        try:
            if self.latency:
                await asyncio.sleep(self.latency)
        finally:
            with self._lock:
                self._in_flight -= 1
        anthropic_route = path.endswith("/messages")
        if number <= self.fail_first:
            extra = {"Retry-After": _fmt_seconds(self.retry_after)} if self.retry_after is not None else {}
            message = f"stub failure {number} of {self.fail_first}"
            return self.fail_status, error_body(self.fail_status, message, anthropic_route), extra
        if method == "GET" and path.endswith("/models"):
            model = {"id": self.model, "object": "model", "owned_by": "stub"}
            return 200, {"object": "list", "data": [model]}, {}
        routed = await self.batch.route(method, path, query or {}, headers, raw, body)
        if routed is not None:
            return routed
        if method != "POST":
            return 405, {"error": {"message": f"expected POST; got {method} {path}"}}, {}
        if not isinstance(body, dict):
            return 400, {"error": {"message": "expected a JSON object body"}}, {}
        if path.endswith("/chat/completions") or anthropic_route:
            limited = self._rate_limit(body, anthropic_route)
            if limited[0] != 200:
                return limited
            answer = self._messages if anthropic_route else self._chat
            return 200, answer(body, self.request_count), limited[2]
        message = f"no route for {path}; expected /v1/chat/completions or /v1/messages"
        return 404, {"error": {"message": message}}, {}

    async def _answer(self, provider: str, body: dict[str, Any]) -> dict[str, Any]:
        """One batched request's answer: a live call's (no rate limits: batches have their own pool)."""
        answer = self._messages if provider == "anthropic" else self._chat
        return answer(body, self.request_count)

    def _rate_limit(self, body: dict[str, Any], anthropic: bool) -> Reply:
        """Take a live request from the budgets; (200, {}, headers) or a 429 answer with headers.

        Budgets are token buckets, as the providers describe theirs: a full bucket holds the limit and refills
        continuously at limit per ``rate_limit_window`` seconds.
        """
        if self.rate_limit_requests is None and self.rate_limit_tokens is None:
            return 200, {}, {}
        need = count_words(body.get("messages", [])) + count_words(body.get("system", ""))
        need += int(body.get("max_tokens") or body.get("max_completion_tokens") or 0)
        with self._lock:
            now = time.monotonic()
            elapsed, self._window_start = now - self._window_start, now
            waits = [0.0]
            for kind, limit, want in (
                ("requests", self.rate_limit_requests, 1),
                ("tokens", self.rate_limit_tokens, need),
            ):
                if limit is None:
                    continue
                rate = limit / self.rate_limit_window
                level = min(float(limit), self._buckets.get(kind, float(limit)) + elapsed * rate)
                self._buckets[kind] = level
                if level < min(want, limit):
                    waits.append((min(want, limit) - level) / rate)
            over = max(waits) > 0
            if over:
                self._rate_limited += 1
            else:
                self._buckets["requests"] = self._buckets.get("requests", 0.0) - 1
                self._buckets["tokens"] = self._buckets.get("tokens", 0.0) - need
            headers = self._limit_headers(anthropic)
        if not over:
            return 200, {}, headers
        headers["Retry-After"] = _fmt_seconds(math.ceil(max(waits) * 1000) / 1000)
        return 429, error_body(429, "stub rate limit reached", anthropic), headers

    def _limit_headers(self, anthropic: bool) -> dict[str, str]:
        """The provider's rate-limit headers for the current buckets (call with the lock held)."""
        out: dict[str, str] = {}
        for kind, limit in (("requests", self.rate_limit_requests), ("tokens", self.rate_limit_tokens)):
            if limit is None:
                continue
            level = max(0.0, self._buckets.get(kind, float(limit)))
            reset = (limit - level) / (limit / self.rate_limit_window)  # until the bucket is full again
            if anthropic:
                stamp = dt.datetime.fromtimestamp(time.time() + reset, tz=dt.UTC)
                out[f"anthropic-ratelimit-{kind}-limit"] = str(limit)
                out[f"anthropic-ratelimit-{kind}-remaining"] = str(int(level))
                out[f"anthropic-ratelimit-{kind}-reset"] = stamp.isoformat(timespec="milliseconds").replace(
                    "+00:00", "Z"
                )
            else:
                out[f"x-ratelimit-limit-{kind}"] = str(limit)
                out[f"x-ratelimit-remaining-{kind}"] = str(int(level))
                out[f"x-ratelimit-reset-{kind}"] = _duration(reset)
        return out


async def _read_chunked(reader: asyncio.StreamReader) -> bytes:
    """A ``Transfer-Encoding: chunked`` request body."""
    out = bytearray()
    while True:
        size_line = await reader.readuntil(b"\r\n")
        size = int(size_line.split(b";", 1)[0].strip() or b"0", 16)
        if size == 0:
            await reader.readuntil(b"\r\n")
            return bytes(out)
        out += await reader.readexactly(size)
        await reader.readexactly(2)


def main(argv: list[str] | None = None) -> None:
    """Run a stub server in the foreground: ``python -m mitigate.testing --port 8765``.

    An OpenAI- and Anthropic-compatible server on 127.0.0.1 that gives every request the same
    reply: the easiest way to try the command line without a key or a model
    (``--backend openai:stub --base-url http://127.0.0.1:8765/v1``). Prints the base URL on the
    first line of stdout, then serves until interrupted. Running the stub in its own process
    keeps it off the client's interpreter (and GIL), which is what a throughput benchmark wants.
    """
    import argparse

    parser = argparse.ArgumentParser(prog="python -m mitigate.testing", description=main.__doc__)
    parser.add_argument(
        "--port", type=int, default=0, help="port on 127.0.0.1 (default: a free one, printed)"
    )
    parser.add_argument("--latency", type=float, default=0.05, help="seconds before each answer")
    parser.add_argument("--reply", default="Score: 4", help="the completion text")
    parser.add_argument("--fail-first", type=int, default=0)
    parser.add_argument("--fail-status", type=int, default=429)
    parser.add_argument("--retry-after", type=float, default=None)
    with StubOpenAIServer(**vars(parser.parse_args(argv))) as server:  # each option names a field
        print(server.base_url, flush=True)
        with contextlib.suppress(KeyboardInterrupt):
            threading.Event().wait()


if __name__ == "__main__":
    main()
