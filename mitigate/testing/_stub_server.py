"""A tiny OpenAI- and Anthropic-compatible HTTP server for tests and benchmarks.

:class:`StubOpenAIServer` listens on ``127.0.0.1`` on a random free port and answers

* ``POST /v1/chat/completions`` in the OpenAI chat-completions shape (``n`` choices,
  ``logprobs``/``top_logprobs``, ``usage`` with ``prompt_tokens_details.cached_tokens``);
* ``POST /v1/messages`` in the Anthropic Messages shape (so the real ``anthropic`` SDK can
  be pointed at it with ``base_url``);
* ``GET /v1/models`` with the one model name it was asked about (some clients probe it);
* the batch endpoints of both providers (OpenAI ``/v1/files`` + ``/v1/batches``, Anthropic
  ``/v1/messages/batches``), see :mod:`mitigate.testing._stub_batches`.

Prompt caching is emulated as the providers publish it, counting the stub's tokens (words):
OpenAI caches every prompt of ``openai_cache_min_tokens`` (1,024) tokens or more
automatically, in steps of ``openai_cache_step`` (128) tokens, and reports the reused prefix
as ``usage.prompt_tokens_details.cached_tokens``; Anthropic caches the prefix up to each
``cache_control`` breakpoint that holds at least ``anthropic_cache_min_tokens`` tokens and
reports ``cache_read_input_tokens`` (the longest breakpoint prefix found in its cache),
``cache_creation_input_tokens`` (the rest up to the last breakpoint) and ``input_tokens``
(the tokens after it). Entries live ``cache_ttl`` seconds after their last use.

Rate limits are emulated too when ``rate_limit_requests`` / ``rate_limit_tokens`` are set:
token buckets that hold the limit and refill at the limit per ``rate_limit_window`` seconds
(as both providers describe their limits), a request counted as its prompt tokens plus
``max_tokens``; every live answer carries the provider's headers (``x-ratelimit-limit-*``,
``-remaining-*``, ``-reset-*`` durations on OpenAI routes; ``anthropic-ratelimit-requests-*``
and ``-tokens-*`` with RFC 3339 reset times on ``/v1/messages``), and a request over the
limit gets HTTP 429 with ``Retry-After``.

A chat request that forces a function call (``tool_choice`` naming a function, or
``"required"`` with one tool) is answered with that tool call, its ``arguments`` the reply
text (a ``reply`` callable can build them from the request's ``tools``).

Each answer is sent after ``latency`` seconds. The server runs an asyncio loop in its own
daemon thread, so it never shares an event loop with the client under test, and it keeps
HTTP/1.1 connections alive, so it sustains many concurrent requests without becoming the
bottleneck of a throughput benchmark.

It counts requests, keeps every parsed request body, and records the credential headers
(``Authorization`` and ``x-api-key``) it received: tests use those to check that keys
reach the server while never being written anywhere else.

Token logprobs are synthetic but deterministic (:mod:`mitigate.testing._stub_answers`, with the
other pieces of an answer: word counts, stop sequences, forced function calls).

Example::

    with StubOpenAIServer(latency=0.01, reply="Score: 4") as server:
        lm = OpenAILM("stub-model", base_url=server.base_url)
        ...
        assert server.request_count == 1

Size: over 600 lines because one fake provider holds the HTTP transport, both providers' shapes,
prompt caching and rate limits; answers come from :mod:`mitigate.testing._stub_answers`, batches from
:mod:`mitigate.testing._stub_batches`.
"""

from __future__ import annotations

import asyncio
import contextlib
import datetime as dt
import hashlib
import json
import math
import threading
import time
from collections.abc import Callable
from types import TracebackType
from typing import Any
from urllib.parse import parse_qsl

from mitigate.testing._stub_answers import (
    apply_stop,
    count_words,
    forced_function,
    synthetic_logprobs,
    tokenize,
    words,
)
from mitigate.testing._stub_batches import BatchEmulator, FailHook

_REASONS = {
    200: "OK",
    400: "Bad Request",
    401: "Unauthorized",
    404: "Not Found",
    405: "Method Not Allowed",
    429: "Too Many Requests",
    500: "Internal Server Error",
    502: "Bad Gateway",
    503: "Service Unavailable",
    529: "Overloaded",
}


def _cache_blocks(body: dict[str, Any]) -> list[tuple[list[str], bool]]:
    """An Anthropic request's content blocks in cache order (system, then messages): (tokens, breakpoint)."""
    blocks: list[tuple[list[str], bool]] = []

    def add(content: Any) -> None:
        if isinstance(content, str):
            blocks.append((content.split(), False))
        elif isinstance(content, list):
            for block in content:
                if isinstance(block, dict):
                    blocks.append(
                        (words(block.get("text", "")), isinstance(block.get("cache_control"), dict))
                    )

    add(body.get("system", ""))
    for message in body.get("messages") or []:
        if isinstance(message, dict):
            add(message.get("content", ""))
    return blocks


def _duration(seconds: float) -> str:
    """A reset time in OpenAI's header style: ``"12ms"``, ``"1.5s"``, ``"6m0s"``."""
    if seconds < 1:
        return f"{max(0, int(seconds * 1000))}ms"
    minutes, rest = divmod(seconds, 60.0)
    return f"{int(minutes)}m{rest:.0f}s" if minutes else f"{rest:.3g}s"


class StubOpenAIServer:
    """A real HTTP server on 127.0.0.1 that answers like OpenAI/Anthropic after ``latency`` seconds.

    Parameters:
        latency: seconds to wait before each answer (concurrent requests wait concurrently).
        reply: the completion text, or a callable given the parsed JSON request body that
            returns it (called once per sample, so it can vary across ``n`` samples).
        fail_first: the first ``fail_first`` requests fail with ``fail_status``.
        fail_status: HTTP status of those failures (429 by default).
        retry_after: when set, failures carry a ``Retry-After: <seconds>`` header.
        logprobs: when False the server ignores logprob requests (like servers without
            logprob support) and returns choices without ``logprobs``.
        cached_tokens: when non-zero, reported as ``usage.prompt_tokens_details.cached_tokens``
            (and as Anthropic's ``cache_read_input_tokens``) on every call instead of the
            prompt-cache emulation; ``cache_write_tokens`` likewise as Anthropic's
            ``cache_creation_input_tokens``.
        model: the model name echoed in responses when the request names none.
        honour_n: when False the server returns one choice whatever ``n`` asks for (like
            servers without ``n`` support).
        prompt_cache: emulate the providers' prompt caches (see the module docstring);
            ``openai_cache_min_tokens``, ``openai_cache_step``, ``anthropic_cache_min_tokens``
            and ``cache_ttl`` set their rules. A non-zero ``cached_tokens`` overrides it.
        rate_limit_requests, rate_limit_tokens, rate_limit_window: requests and tokens
            allowed per ``rate_limit_window`` seconds on live calls (None: unlimited).
        batch_latency: seconds to process one batched request; ``batch_validation_delay``
            before an OpenAI batch starts; ``batch_create_delay`` between creating a batch and
            answering the create call; ``batch_expire_after`` seconds after which a batch's
            unprocessed requests expire; ``batch_fail(provider, custom_id, body)`` returns an
            HTTP status to fail one request with, or None. ``batch_max_requests`` /
            ``batch_max_bytes`` (dicts by provider) override the published size limits.
        record: keep every request's body, credential headers, user agent and path (the lists
            below); False keeps only the counters, so a benchmark of a million requests does
            not fill the memory.

    Use as a context manager (``with StubOpenAIServer() as s:``) or call :meth:`start` and
    :meth:`stop`. Thread-safe counters: :attr:`request_count`, :attr:`bodies`,
    :attr:`auth_headers`, :attr:`api_key_headers`, :attr:`user_agents`, :attr:`paths`,
    :attr:`max_in_flight`, :attr:`connections` and :attr:`rate_limited`; :attr:`batch` holds the
    batch emulation (its ``created`` log and ``downloads``).
    """

    def __init__(
        self,
        latency: float = 0.05,
        reply: str | Callable[[dict[str, Any]], str] = "Score: 4",
        fail_first: int = 0,
        fail_status: int = 429,
        retry_after: float | None = None,
        logprobs: bool = True,
        cached_tokens: int = 0,
        cache_write_tokens: int = 0,
        model: str = "stub-model",
        honour_n: bool = True,
        prompt_cache: bool = True,
        openai_cache_min_tokens: int = 1024,
        openai_cache_step: int = 128,
        anthropic_cache_min_tokens: int = 1024,
        cache_ttl: float = 300.0,
        rate_limit_requests: int | None = None,
        rate_limit_tokens: int | None = None,
        rate_limit_window: float = 60.0,
        batch_latency: float = 0.0,
        batch_validation_delay: float = 0.0,
        batch_create_delay: float = 0.0,
        batch_expire_after: float | None = None,
        batch_fail: FailHook | None = None,
        batch_max_requests: dict[str, int] | None = None,
        batch_max_bytes: dict[str, int] | None = None,
        port: int = 0,
        record: bool = True,
    ) -> None:
        if latency < 0:
            raise ValueError(f"latency must be >= 0 seconds; got {latency}")
        if fail_first < 0:
            raise ValueError(f"fail_first must be >= 0; got {fail_first}")
        self.latency = latency
        self.reply = reply
        self.fail_first = fail_first
        self.fail_status = fail_status
        self.retry_after = retry_after
        self.logprobs = logprobs
        self.cached_tokens = cached_tokens
        self.cache_write_tokens = cache_write_tokens
        self.model = model
        self.honour_n = honour_n
        self.prompt_cache = prompt_cache
        self.openai_cache_min_tokens = openai_cache_min_tokens
        self.openai_cache_step = max(1, openai_cache_step)
        self.anthropic_cache_min_tokens = anthropic_cache_min_tokens
        self.cache_ttl = cache_ttl
        self.rate_limit_requests = rate_limit_requests
        self.rate_limit_tokens = rate_limit_tokens
        self.rate_limit_window = rate_limit_window
        self._cache: dict[str, float] = {}
        self._window_start = time.monotonic()
        self._buckets: dict[str, float] = {}
        self._rate_limited = 0
        max_requests = batch_max_requests or {}
        max_bytes = batch_max_bytes or {}
        self.batch = BatchEmulator(
            self._answer,
            latency=batch_latency,
            validation_delay=batch_validation_delay,
            create_delay=batch_create_delay,
            expire_after=batch_expire_after,
            fail=batch_fail,
            openai_max_requests=max_requests.get("openai", 50_000),
            openai_max_bytes=max_bytes.get("openai", 200 * 1024 * 1024),
            anthropic_max_requests=max_requests.get("anthropic", 100_000),
            anthropic_max_bytes=max_bytes.get("anthropic", 256 * 1024 * 1024),
        )
        self._lock = threading.Lock()
        self._count = 0
        self._in_flight = 0
        self._max_in_flight = 0
        self._connections = 0
        self._bodies: list[dict[str, Any]] = []
        self._auth: list[str] = []
        self._api_keys: list[str] = []
        self._agents: list[str] = []
        self._paths: list[str] = []
        self.record = record
        self._thread: threading.Thread | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._server: asyncio.Server | None = None
        self._writers: set[asyncio.StreamWriter] = set()
        self._ready = threading.Event()
        self._error: BaseException | None = None
        if not 0 <= port <= 65535:
            raise ValueError(f"port must be 0 (a free one) to 65535; got {port}")
        self.port: int = port

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
    def bodies(self) -> list[dict[str, Any]]:
        """A copy of every parsed JSON request body received, in arrival order."""
        with self._lock:
            return list(self._bodies)

    @property
    def auth_headers(self) -> list[str]:
        """Every ``Authorization`` header value received (empty string when absent)."""
        with self._lock:
            return list(self._auth)

    @property
    def api_key_headers(self) -> list[str]:
        """Every ``x-api-key`` header value received (Anthropic's key header; empty when absent)."""
        with self._lock:
            return list(self._api_keys)

    @property
    def user_agents(self) -> list[str]:
        """Every ``User-Agent`` header value received (empty string when absent): which client called."""
        with self._lock:
            return list(self._agents)

    @property
    def paths(self) -> list[str]:
        """The request path of every request received."""
        with self._lock:
            return list(self._paths)

    @property
    def rate_limited(self) -> int:
        """How many live requests the rate-limit emulation answered with HTTP 429."""
        with self._lock:
            return self._rate_limited

    def reset(self) -> None:
        """Forget counts and recorded requests (the ``fail_first`` budget starts again too)."""
        with self._lock:
            self._count = 0
            self._max_in_flight = 0
            self._connections = 0
            self._bodies.clear()
            self._auth.clear()
            self._api_keys.clear()
            self._agents.clear()
            self._paths.clear()

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
                headers: dict[str, str] = {}
                for line in lines[1:]:
                    if ":" in line:
                        name, value = line.split(":", 1)
                        headers[name.strip().lower()] = value.strip()
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
        except (ConnectionError, asyncio.IncompleteReadError):
            return
        except asyncio.CancelledError:
            # The server is shutting down; end this connection quietly.
            return
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
        content_type = extra.pop("Content-Type", "application/json")
        head = [
            f"HTTP/1.1 {status} {_REASONS.get(status, 'Status')}",
            f"Content-Type: {content_type}",
            f"Content-Length: {len(body)}",
            f"Connection: {'close' if close else 'keep-alive'}",
        ]
        head += [f"{k}: {v}" for k, v in extra.items()]
        writer.write(("\r\n".join(head) + "\r\n\r\n").encode("latin-1") + body)
        await writer.drain()

    async def _respond(
        self, method: str, path: str, headers: dict[str, str], raw: bytes, query: dict[str, str] | None = None
    ) -> tuple[int, dict[str, Any] | bytes, dict[str, str]]:
        is_json = "multipart" not in headers.get("content-type", "")
        try:
            body = json.loads(raw) if raw and is_json else {}
        except (json.JSONDecodeError, UnicodeDecodeError):
            body = {}
        with self._lock:
            self._count += 1
            number = self._count
            if self.record:
                self._bodies.append(body if isinstance(body, dict) else {})
                self._auth.append(headers.get("authorization", ""))
                self._api_keys.append(headers.get("x-api-key", ""))
                self._agents.append(headers.get("user-agent", ""))
                self._paths.append(path)
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
            if anthropic_route:
                kind = "rate_limit_error" if self.fail_status == 429 else "api_error"
                return self.fail_status, {"type": "error", "error": {"type": kind, "message": message}}, extra
            return (
                self.fail_status,
                {"error": {"message": message, "type": "stub_error", "code": None}},
                extra,
            )
        if method == "GET" and path.endswith("/models"):
            return (
                200,
                {"object": "list", "data": [{"id": self.model, "object": "model", "owned_by": "stub"}]},
                {},
            )
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
            answer = self._messages(body) if anthropic_route else self._chat(body)
            return 200, answer, limited[2]
        return (
            404,
            {"error": {"message": f"no route for {path}; expected /v1/chat/completions or /v1/messages"}},
            {},
        )

    async def _answer(self, provider: str, body: dict[str, Any]) -> dict[str, Any]:
        """One batched request's answer: the same as a live call's (no rate limits: batches have their own
        pool)."""
        return self._messages(body) if provider == "anthropic" else self._chat(body)

    def _rate_limit(
        self, body: dict[str, Any], anthropic: bool
    ) -> tuple[int, dict[str, Any], dict[str, str]]:
        """Take a live request from the budgets; (200, {}, headers) or a 429 answer with headers.

        Budgets are token buckets, as the providers describe theirs: a full bucket holds the
        limit and refills continuously at limit per ``rate_limit_window`` seconds.
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
        message = "stub rate limit reached"
        if anthropic:
            return 429, {"type": "error", "error": {"type": "rate_limit_error", "message": message}}, headers
        return (
            429,
            {"error": {"message": message, "type": "requests", "code": "rate_limit_exceeded"}},
            headers,
        )

    def _limit_headers(self, anthropic: bool) -> dict[str, str]:
        """The provider's rate-limit headers for the current buckets (call with the lock held)."""
        out: dict[str, str] = {}
        for kind, limit in (("requests", self.rate_limit_requests), ("tokens", self.rate_limit_tokens)):
            if limit is None:
                continue
            level = max(0.0, self._buckets.get(kind, float(limit)))
            reset = (limit - level) / (limit / self.rate_limit_window)  # until the bucket is full again
            left = str(int(level))
            if anthropic:
                stamp = dt.datetime.fromtimestamp(time.time() + reset, tz=dt.UTC)
                out[f"anthropic-ratelimit-{kind}-limit"] = str(limit)
                out[f"anthropic-ratelimit-{kind}-remaining"] = left
                out[f"anthropic-ratelimit-{kind}-reset"] = stamp.isoformat(timespec="milliseconds").replace(
                    "+00:00", "Z"
                )
            else:
                out[f"x-ratelimit-limit-{kind}"] = str(limit)
                out[f"x-ratelimit-remaining-{kind}"] = left
                out[f"x-ratelimit-reset-{kind}"] = _duration(reset)
        return out

    def _cache_lookup(self, key: str, now: float) -> bool:
        """Whether ``key`` is a live cache entry (refreshing it); call from the server thread."""
        seen = self._cache.get(key)
        if seen is None or now - seen > self.cache_ttl:
            return False
        self._cache[key] = now
        return True

    def _openai_cached(self, body: dict[str, Any], prompt_tokens: int) -> int:
        """Prompt tokens served from the emulated OpenAI prefix cache (and remember this prompt's
        prefixes)."""
        if self.cached_tokens:
            return min(self.cached_tokens, prompt_tokens)
        if not self.prompt_cache or prompt_tokens < self.openai_cache_min_tokens:
            return 0
        prompt_words = words(body.get("messages", []))
        digest = hashlib.sha256(str(body.get("model")).encode())
        now = time.monotonic()
        cached, done = 0, 0
        for bound in range(self.openai_cache_min_tokens, len(prompt_words) + 1, self.openai_cache_step):
            digest.update(("\x1f".join(prompt_words[done:bound]) + "\x1f").encode())
            done = bound
            key = "o:" + digest.copy().hexdigest()
            if self._cache_lookup(key, now):
                cached = bound
            else:
                self._cache[key] = now
        return cached

    def _anthropic_cached(self, body: dict[str, Any], prompt_tokens: int) -> tuple[int, int]:
        """(cache reads, cache writes) of an Anthropic request under the emulated prompt cache."""
        if self.cached_tokens or self.cache_write_tokens:
            read = min(self.cached_tokens, prompt_tokens)
            return read, min(self.cache_write_tokens, prompt_tokens - read)
        if not self.prompt_cache:
            return 0, 0
        digest = hashlib.sha256(str(body.get("model")).encode())
        now = time.monotonic()
        total = 0
        marks: list[tuple[int, str]] = []
        for tokens, breakpoint in _cache_blocks(body):
            digest.update(("\x1f".join(tokens) + "\x1e").encode())
            total += len(tokens)
            if breakpoint and total >= self.anthropic_cache_min_tokens:
                marks.append((total, "a:" + digest.copy().hexdigest()))
        if not marks:
            return 0, 0
        read = next((n for n, key in reversed(marks) if self._cache_lookup(key, now)), 0)
        for _, key in marks:
            self._cache.setdefault(key, now)
        return read, marks[-1][0] - read

    def _text(self, body: dict[str, Any]) -> str:
        return self.reply(body) if callable(self.reply) else self.reply

    def _chat(self, body: dict[str, Any]) -> dict[str, Any]:
        n = int(body.get("n") or 1) if self.honour_n else 1
        want_lp = bool(body.get("logprobs")) and self.logprobs
        top_k = int(body.get("top_logprobs") or 0)
        choices = []
        completion_tokens = 0
        for index in range(n):
            text, _ = apply_stop(self._text(body), body.get("stop"))
            max_tokens = body.get("max_tokens") or body.get("max_completion_tokens")
            tokens = tokenize(text)
            finish = "stop"
            if max_tokens is not None and len(tokens) > int(max_tokens):
                tokens = tokens[: int(max_tokens)]
                text = "".join(tokens)
                finish = "length"
            completion_tokens += len(tokens)
            message: dict[str, Any] = {"role": "assistant", "content": text}
            forced = forced_function(body)
            if forced is not None:  # a request that forces a tool call gets one, its arguments the reply text
                message = {
                    "role": "assistant",
                    "content": None,
                    "tool_calls": [
                        {
                            "id": f"call_{index}",
                            "type": "function",
                            "function": {"name": forced, "arguments": text},
                        }
                    ],
                }
                finish = "tool_calls"
            choice: dict[str, Any] = {
                "index": index,
                "message": message,
                "finish_reason": finish,
                "logprobs": {"content": synthetic_logprobs(text, top_k)} if want_lp else None,
            }
            choices.append(choice)
        prompt_tokens = count_words(body.get("messages", []))
        return {
            "id": f"chatcmpl-stub-{self.request_count}",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": body.get("model") or self.model,
            "choices": choices,
            "usage": {
                "prompt_tokens": prompt_tokens,
                "completion_tokens": completion_tokens,
                "total_tokens": prompt_tokens + completion_tokens,
                "prompt_tokens_details": {"cached_tokens": self._openai_cached(body, prompt_tokens)},
            },
        }

    def _messages(self, body: dict[str, Any]) -> dict[str, Any]:
        text, stopped = apply_stop(self._text(body), body.get("stop_sequences"))
        tokens = tokenize(text)
        stop_reason = "stop_sequence" if stopped else "end_turn"
        max_tokens = body.get("max_tokens")
        if max_tokens is not None and len(tokens) > int(max_tokens):
            text = "".join(tokens[: int(max_tokens)])
            tokens = tokens[: int(max_tokens)]
            stop_reason = "max_tokens"
        prompt_tokens = count_words(body.get("messages", [])) + count_words(body.get("system", ""))
        cached, written = self._anthropic_cached(body, prompt_tokens)
        return {
            "id": f"msg_stub_{self.request_count}",
            "type": "message",
            "role": "assistant",
            "model": body.get("model") or self.model,
            "content": [{"type": "text", "text": text}],
            "stop_reason": stop_reason,
            "stop_sequence": None,
            "usage": {
                "input_tokens": prompt_tokens - cached - written,
                "output_tokens": len(tokens),
                "cache_read_input_tokens": cached,
                "cache_creation_input_tokens": written,
            },
        }


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


def _fmt_seconds(seconds: float) -> str:
    """Format a Retry-After value: an integer when whole, else a decimal number of seconds."""
    return str(int(seconds)) if float(seconds).is_integer() else f"{seconds:g}"


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
    args = parser.parse_args(argv)
    server = StubOpenAIServer(
        latency=args.latency,
        reply=args.reply,
        fail_first=args.fail_first,
        fail_status=args.fail_status,
        retry_after=args.retry_after,
        port=args.port,
    )
    with server:
        print(server.base_url, flush=True)
        try:
            threading.Event().wait()
        except KeyboardInterrupt:
            pass


if __name__ == "__main__":
    main()
