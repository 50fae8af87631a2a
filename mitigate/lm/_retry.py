"""Retries with exponential backoff that honour the server's ``Retry-After``.

* :class:`RetryPolicy` — how many attempts and how long to wait between them.
* :class:`RetryingLM` — retries :class:`~mitigate.errors.TransientLMError` (HTTP 429/5xx,
  timeouts, dropped connections). Backends are built with their SDK's own retries off, so
  this layer is the only one that retries. Each request's attempts share one deadline
  (:func:`mitigate.lm._deadline.start_request`): a request past it is not retried.
"""

from __future__ import annotations

import asyncio
import math
import random
from collections.abc import Awaitable, Callable
from typing import TypeVar

from pydantic import BaseModel, ConfigDict, Field, model_validator

from mitigate.errors import LMCallError, TransientLMError
from mitigate.lm._base import LM, LMRequest, LMResponse
from mitigate.lm._deadline import end_request, start_request
from mitigate.lm._wrapper import WrapperLM

Sleep = Callable[[float], Awaitable[None]]
T = TypeVar("T")


class RetryPolicy(BaseModel):
    """How :class:`RetryingLM` retries transient failures.

    The wait before retry ``k`` (k = 1, 2, ...) is ``min(max_delay, base_delay * 2**(k-1))``,
    scaled by a random factor in [0.5, 1] when ``jitter`` is on, and never shorter than the
    server's ``Retry-After``. A ``Retry-After`` longer than ``max_delay`` ends the retries
    at once (the server asked for a longer pause than this policy allows). A connection that
    cannot be made while the backend has never answered (a wrong URL or port, a server that is
    not running, or one that closes every connection) gets at most ``connect_attempts`` attempts: it fails in
    about a second instead
    of a minute; once the server has answered, a dropped connection gets every attempt.
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
        """Run the request, retrying transient failures."""
        return await self._run("LM call", lambda: self.inner.complete(request))

    async def loglikelihood(self, context: str, continuation: str) -> float:
        """Score the continuation, retrying transient failures."""
        return await self._run("loglikelihood", lambda: self.inner.loglikelihood(context, continuation))

    def __repr__(self) -> str:
        return f"RetryingLM({self.inner!r}, {self.policy!r})"


def hung_server_seconds(deadline: float, timeout: float | None, policy: RetryPolicy) -> float:
    """The longest a request can take when the server accepts the connection and never answers.

    Each attempt waits ``timeout`` (None: the whole deadline) or what is left of ``deadline``,
    whichever is less, and fails; a retry follows after the policy's longest backoff, until
    the deadline or ``policy.max_attempts`` ends the request. The circuit breaker stops a run
    when the first requests, sent side by side, have failed so, so this is also how long a
    run with these settings takes to stop on a hung server.
    """
    per_attempt = deadline if timeout is None else min(timeout, deadline)
    attempts = min(policy.max_attempts, max(1, math.ceil(deadline / per_attempt - 1e-9)))
    on_server = min(deadline, attempts * per_attempt)
    waits = sum(min(policy.max_delay, policy.base_delay * 2 ** (k - 1)) for k in range(1, attempts))
    return on_server + waits
