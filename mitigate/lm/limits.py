"""Retries with backoff, a usage/cost tally, and the base class of LM wrappers.

* :class:`RetryPolicy` / :class:`RetryingLM` — retry :class:`~mitigate.errors.TransientLMError`
  (HTTP 429/5xx, timeouts, dropped connections) with exponential backoff, honouring the
  server's ``Retry-After``. Backends are built with their SDK's own retries off, so this
  layer is the only one that retries.
* :class:`UsageTally` — a thread- and task-safe sum of token usage, cost and call counts.
* :class:`WrapperLM` — an LM that delegates to an inner LM (used by the retry, cache and
  replay-recording wrappers).
"""

from __future__ import annotations

import asyncio
import email.utils
import random
import threading
import time
from collections.abc import Awaitable, Callable, Mapping
from typing import TypeVar
from urllib.parse import urlsplit, urlunsplit

from pydantic import BaseModel, ConfigDict, Field, model_validator

from mitigate.errors import ConfigError, LMCallError, TransientLMError
from mitigate.lm.base import LM, LMRequest, LMResponse, Usage

Sleep = Callable[[float], Awaitable[None]]
T = TypeVar("T")
PLACEHOLDER_KEY = "sk-no-key-required"
"""The key sent to an OpenAI-compatible server when none is configured (local servers need none)."""
RETRYABLE_STATUS = frozenset({408, 409, 429})


def public_url(url: str) -> str:
    """``url`` without user info, query or fragment (they may carry credentials)."""
    parts = urlsplit(url)
    host = parts.hostname or ""
    if parts.port is not None:
        host = f"{host}:{parts.port}"
    return urlunsplit((parts.scheme, host, parts.path.rstrip("/"), "", ""))


def is_retryable_status(status: int) -> bool:
    """True for HTTP statuses worth retrying: 408, 409, 429 and every 5xx."""
    return status in RETRYABLE_STATUS or status >= 500


def http_error(
    where: str, status: int, headers: Mapping[str, str] | None, detail: str, *, api_key_env: str, backend: str
) -> LMCallError:
    """The error for a failed HTTP call: retryable statuses give TransientLMError (with the
    server's Retry-After), others LMCallError (with a hint to check the key on 401/403)."""
    if is_retryable_status(status):
        return TransientLMError(
            f"{where} failed with HTTP {status} (retryable): {detail}",
            status=status,
            retry_after=parse_retry_after(headers),
            backend=backend,
        )
    hint = f"; check the key in ${api_key_env}" if status in (401, 403) else ""
    return LMCallError(f"{where} failed with HTTP {status}{hint}: {detail}", status=status, backend=backend)


def sdk_error(
    exc: BaseException,
    *,
    where: str,
    detail: str,
    timeout: float,
    backend: str,
    api_key_env: str,
    status_error: type[BaseException],
    timeout_error: type[BaseException],
    connection_error: type[BaseException],
) -> LMCallError:
    """Map a provider SDK's exception to TransientLMError (retryable) or LMCallError.

    The SDK's own classes are passed in, so the OpenAI and Anthropic backends share one
    mapping: HTTP status errors go through :func:`http_error`; refused connections,
    timeouts and other connection errors are retryable; anything else is not.
    """
    if isinstance(exc, status_error):
        response = getattr(exc, "response", None)
        return http_error(where, exc.status_code, getattr(response, "headers", None), detail,  # type: ignore[attr-defined]
                          api_key_env=api_key_env, backend=backend)
    refused = network_failure(exc)
    if refused is not None:
        return TransientLMError(f"{where} connection failed (retryable): {refused}", backend=backend)
    if isinstance(exc, timeout_error):
        return TransientLMError(f"{where} timed out after {timeout:g} s (retryable)", backend=backend)
    if isinstance(exc, connection_error):
        return TransientLMError(f"{where} connection failed (retryable): {detail}", backend=backend)
    return LMCallError(f"{where} failed: {type(exc).__name__}: {detail}", backend=backend)


def network_failure(exc: BaseException) -> str | None:
    """A short reason when ``exc`` (or an error it was raised from) is a refused/reset connection.

    SDK transports sometimes report a refused connection as a timeout; this finds the
    socket-level cause so the message says what happened. None when there is no such cause.
    """
    seen: BaseException | None = exc
    for _ in range(8):
        if seen is None:
            return None
        if isinstance(seen, ConnectionError) or (isinstance(seen, OSError) and not isinstance(seen, TimeoutError)):
            return f"{type(seen).__name__}: {seen}"
        seen = seen.__cause__ or seen.__context__
    return None


def parse_retry_after(headers: Mapping[str, str] | None) -> float | None:
    """Seconds the server asked us to wait, from ``retry-after-ms`` or ``Retry-After``; None if absent.

    ``Retry-After`` may be a number of seconds or an HTTP date.
    """
    if not headers:
        return None
    lowered = {str(k).lower(): str(v) for k, v in headers.items()}
    ms = lowered.get("retry-after-ms")
    if ms is not None:
        try:
            return max(0.0, float(ms) / 1000.0)
        except ValueError:
            pass
    value = lowered.get("retry-after")
    if value is None:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(0.0, when.timestamp() - time.time())


class RetryPolicy(BaseModel):
    """How :class:`RetryingLM` retries transient failures.

    The wait before retry ``k`` (k = 1, 2, ...) is ``min(max_delay, base_delay * 2**(k-1))``,
    scaled by a random factor in [0.5, 1] when ``jitter`` is on, and never shorter than the
    server's ``Retry-After``. A ``Retry-After`` longer than ``max_delay`` ends the retries
    at once (the server asked for a longer pause than this policy allows).
    """

    model_config = ConfigDict(frozen=True, extra="forbid")
    max_attempts: int = Field(default=6, ge=1)
    base_delay: float = Field(default=0.5, ge=0.0)
    max_delay: float = Field(default=60.0, ge=0.0)
    jitter: bool = True

    @model_validator(mode="after")
    def _ordered(self) -> RetryPolicy:
        if self.max_delay < self.base_delay:
            raise ValueError(
                f"expected max_delay >= base_delay; got base_delay={self.base_delay}, max_delay={self.max_delay}"
            )
        return self

    def backoff(self, retry: int, rng: random.Random | None = None) -> float:
        """The backoff (seconds) before retry number ``retry`` (1-based), before Retry-After is applied."""
        delay = min(self.max_delay, self.base_delay * (2 ** (retry - 1)))
        if self.jitter:
            delay *= 0.5 + 0.5 * (rng or random).random()
        return delay


class WrapperLM(LM):
    """An LM that delegates to ``inner``; subclasses override what they change.

    Capabilities, ``provider``, ``model``, ``spec`` and ``identity()`` are the inner LM's,
    so a wrapped backend is interchangeable with the bare one (and shares its cache keys).
    """

    def __init__(self, inner: LM) -> None:
        if not isinstance(inner, LM):
            raise ConfigError(f"expected an LM to wrap; got {type(inner).__name__}")
        self.inner = inner
        self.provider = inner.provider
        self.model = inner.model
        self.supports_logprobs = inner.supports_logprobs
        self.supports_n = inner.supports_n
        self.supports_stop = inner.supports_stop

    @property
    def spec(self) -> str:
        """The inner backend's spec."""
        return self.inner.spec

    def identity(self) -> str:
        """The inner backend's identity (wrappers do not change what the model answers)."""
        return self.inner.identity()

    def check(self, request: LMRequest) -> None:
        """Delegate the capability check to the inner backend."""
        self.inner.check(request)

    async def complete(self, request: LMRequest) -> LMResponse:
        """Delegate to the inner backend."""
        return await self.inner.complete(request)

    async def loglikelihood(self, context: str, continuation: str) -> float:
        """Delegate to the inner backend."""
        return await self.inner.loglikelihood(context, continuation)

    async def aclose(self) -> None:
        """Close the inner backend."""
        await self.inner.aclose()

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.inner!r})"


class RetryingLM(WrapperLM):
    """Retries the inner LM's :class:`TransientLMError` failures according to a :class:`RetryPolicy`.

    Non-transient errors (``LMCallError``, ``CapabilityError``, ...) pass through at once.
    When the attempts run out it raises :class:`LMCallError` with ``attempts`` and
    ``last_error`` in its context. ``sleep`` is injectable so tests can record the waits
    instead of sleeping; ``rng`` makes jitter reproducible.
    """

    def __init__(
        self,
        inner: LM,
        policy: RetryPolicy | None = None,
        *,
        sleep: Sleep | None = None,
        rng: random.Random | None = None,
    ) -> None:
        super().__init__(inner)
        self.policy = policy if policy is not None else RetryPolicy()
        self._sleep: Sleep = sleep if sleep is not None else asyncio.sleep
        self._rng = rng or random.Random()
        self.retries = 0

    async def _run(self, what: str, call: Callable[[], Awaitable[T]]) -> T:
        attempt = 0
        while True:
            attempt += 1
            try:
                return await call()
            except TransientLMError as exc:
                if attempt >= self.policy.max_attempts:
                    raise LMCallError(
                        f"{what} on {self.spec!r} failed after {attempt} attempts "
                        f"(max_attempts={self.policy.max_attempts}); last error: {exc}",
                        attempts=attempt,
                        last_error=exc,
                        backend=self.spec,
                    ) from exc
                wait = self.policy.backoff(attempt, self._rng)
                if exc.retry_after is not None:
                    if exc.retry_after > self.policy.max_delay:
                        raise LMCallError(
                            f"{what} on {self.spec!r} gave up after {attempt} attempts: the server asked to "
                            f"wait {exc.retry_after:g} s, more than max_delay={self.policy.max_delay:g} s; "
                            f"last error: {exc}",
                            attempts=attempt,
                            last_error=exc,
                            backend=self.spec,
                        ) from exc
                    wait = max(wait, exc.retry_after)
                self.retries += 1
                await self._sleep(wait)

    async def complete(self, request: LMRequest) -> LMResponse:
        """Run the request, retrying transient failures."""
        return await self._run("LM call", lambda: self.inner.complete(request))

    async def loglikelihood(self, context: str, continuation: str) -> float:
        """Score the continuation, retrying transient failures."""
        return await self._run("loglikelihood", lambda: self.inner.loglikelihood(context, continuation))

    def __repr__(self) -> str:
        return f"RetryingLM({self.inner!r}, {self.policy!r})"


class UsageSummary(BaseModel):
    """A snapshot of a :class:`UsageTally`.

    ``usage`` and ``cost_usd`` cover live calls only (cache hits cost nothing this run).
    ``cost_usd`` is None when any live call's cost was unknown; ``known_cost_usd`` then
    sums the calls whose cost is known.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")
    calls: int = 0
    cached_hits: int = 0
    usage: Usage = Field(default_factory=Usage)
    cost_usd: float | None = 0.0
    known_cost_usd: float = 0.0
    unknown_cost_calls: int = 0


class UsageTally:
    """Accumulates usage and cost over many responses; safe to share between threads and tasks.

    A response with ``cached=True`` counts as a cache hit and adds neither tokens nor cost.
    An unknown cost (``cost_usd=None``) makes the total unknown rather than silently 0.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._calls = 0
        self._hits = 0
        self._usage = Usage()
        self._known = 0.0
        self._unknown = 0

    def add(self, response: LMResponse) -> None:
        """Count one response."""
        with self._lock:
            if response.cached:
                self._hits += 1
                return
            self._calls += 1
            self._usage = self._usage + response.usage
            if response.cost_usd is None:
                self._unknown += 1
            else:
                self._known += response.cost_usd

    @property
    def calls(self) -> int:
        """Live (non-cached) calls counted."""
        with self._lock:
            return self._calls

    @property
    def cached_hits(self) -> int:
        """Responses served from the cache."""
        with self._lock:
            return self._hits

    @property
    def usage(self) -> Usage:
        """Summed token usage of live calls."""
        with self._lock:
            return self._usage

    @property
    def cost_usd(self) -> float | None:
        """Summed cost of live calls; None when any of them had an unknown cost."""
        with self._lock:
            return None if self._unknown else self._known

    def summary(self) -> UsageSummary:
        """A frozen snapshot of the tally."""
        with self._lock:
            return UsageSummary(
                calls=self._calls,
                cached_hits=self._hits,
                usage=self._usage,
                cost_usd=None if self._unknown else self._known,
                known_cost_usd=self._known,
                unknown_cost_calls=self._unknown,
            )

    def __repr__(self) -> str:
        s = self.summary()
        return f"UsageTally(calls={s.calls}, cached_hits={s.cached_hits}, cost_usd={s.cost_usd})"
