"""Retries with exponential backoff that honour the server's ``Retry-After``, and the one deadline over a
request's attempts.

:class:`RetryingLM` is the only layer that retries; its attempts at a request share a :class:`RequestClock`
(what ``--deadline`` bounds), so a server that never answers fails the request once the attempts together have
waited that long (the waits between them not counted).
"""

from __future__ import annotations

import asyncio
import contextvars
import random
import time
from collections.abc import Awaitable, Callable
from typing import TypeVar

from pydantic import BaseModel, ConfigDict, Field, model_validator

from mitigate.errors import LMCallError, TransientLMError
from mitigate.lm._base import LM, LMRequest, LMResponse, WrapperLM

Sleep = Callable[[float], Awaitable[None]]
T = TypeVar("T")
_CLOCK: contextvars.ContextVar[RequestClock | None] = contextvars.ContextVar(
    "mitigate_request_clock", default=None
)


class RequestClock:
    """Seconds one request has spent on the server over its attempts (overlapping ones count once)."""

    __slots__ = ("_active", "_since", "attempts", "spent")

    def __init__(self) -> None:
        self.spent = self._since = 0.0
        self.attempts = self._active = 0

    def used(self) -> float:
        """Seconds spent on the server, the attempts under way included."""
        return self.spent + (time.monotonic() - self._since if self._active else 0.0)

    def begin(self, deadline: float) -> float:
        """Start an exchange: the seconds left of ``deadline`` (none: TimeoutError); pair with :meth:`end`."""
        now = time.monotonic()
        left = deadline - self.spent - (now - self._since if self._active else 0.0)
        if left <= 0:
            raise TimeoutError
        if not self._active:
            self._since = now
        self._active += 1
        self.attempts += 1
        return left

    def end(self) -> None:
        self._active -= 1
        if not self._active:
            self.spent += time.monotonic() - self._since


def request_clock() -> RequestClock:
    """The clock of the request under way (see :func:`start_request`), else a new one for this call alone."""
    return _CLOCK.get() or RequestClock()


def start_request() -> contextvars.Token[RequestClock | None]:
    """Make every backend call from here on (in this task) share one fresh :class:`RequestClock`."""
    return _CLOCK.set(RequestClock())


def end_request(token: contextvars.Token[RequestClock | None]) -> None:
    _CLOCK.reset(token)


class RetryPolicy(BaseModel):
    """How :class:`RetryingLM` retries transient failures.

    The wait before retry ``k`` is ``min(max_delay, base_delay * 2**(k-1))`` (times a random factor in [0.5,
    1] with ``jitter``), never shorter than the server's ``Retry-After``; one longer than ``max_delay`` ends
    the retries. A connection that cannot be made before the backend ever answered gets at most
    ``connect_attempts`` attempts (a wrong URL fails in a second).
    """

    model_config = ConfigDict(frozen=True, extra="forbid")
    max_attempts: int = Field(default=6, ge=1)
    connect_attempts: int = Field(default=3, ge=1)
    base_delay: float = Field(default=0.5, ge=0.0)
    max_delay: float = Field(default=60.0, ge=0.0)
    jitter: bool = True

    @model_validator(mode="after")
    def _ordered(self) -> RetryPolicy:
        if self.max_delay < self.base_delay:
            raise ValueError(
                f"expected max_delay >= base_delay; got base_delay={self.base_delay}, "
                f"max_delay={self.max_delay}"
            )
        return self

    def backoff(self, retry: int, rng: random.Random | None = None) -> float:
        """The backoff (seconds) before retry number ``retry`` (1-based), before Retry-After is applied."""
        delay = min(self.max_delay, self.base_delay * (2 ** (retry - 1)))
        if self.jitter:
            delay *= 0.5 + 0.5 * (rng or random).random()
        return delay


class RetryingLM(WrapperLM):
    """Retries the inner LM's :class:`TransientLMError` failures by a :class:`RetryPolicy`; when they run out,
    an :class:`LMCallError` with ``attempts`` and ``last_error``."""

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
        self._answered = False  # has the backend ever answered? (see RetryPolicy.connect_attempts)

    async def _run(self, what: str, call: Callable[[], Awaitable[T]]) -> T:
        token = start_request()  # the attempts below share one deadline
        try:
            return await self._attempts(what, call)
        finally:
            end_request(token)

    async def _attempts(self, what: str, call: Callable[[], Awaitable[T]]) -> T:
        attempt = 0
        while True:
            attempt += 1
            try:
                result = await call()
                self._answered = True
                return result
            except TransientLMError as exc:
                limit = self.policy.max_attempts
                if not self._answered and exc.context.get("reason") in ("connection", "closed"):
                    limit = min(limit, self.policy.connect_attempts)
                if attempt >= limit:
                    raise LMCallError(
                        f"{what} on {self.spec!r} failed after {attempt} attempts "
                        f"(max_attempts={limit}); last error: {exc}",
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
                            retry_after=exc.retry_after,
                            patience=self.policy.max_delay,
                        ) from exc
                    wait = max(wait, exc.retry_after)
                self.retries += 1
                await self._sleep(wait)

    async def complete(self, request: LMRequest) -> LMResponse:
        return await self._run("LM call", lambda: self.inner.complete(request))

    async def loglikelihood(self, context: str, continuation: str) -> float:
        return await self._run("loglikelihood", lambda: self.inner.loglikelihood(context, continuation))

    def __repr__(self) -> str:
        return f"RetryingLM({self.inner!r}, {self.policy!r})"
