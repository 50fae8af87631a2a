"""Adaptive concurrency for provider rate limits: read the rate-limit headers, back off on 429.

:class:`AdaptiveLimiter` waits while the server asked for a pause or the requests or tokens left (a bucket set
from OpenAI's or Anthropic's rate-limit headers) do not cover a request, and keeps the calls in flight under a
cap that a 429 halves once per episode and successes raise again (none before the first 429). A wait longer
than ``max_wait`` is a retryable failure with that ``retry_after``.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import math
import re
import time
from collections import deque
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

from pydantic import BaseModel, ConfigDict

from mitigate.errors import TransientLMError
from mitigate.lm._base import LMRequest

Ticket = tuple[int, int]
"""What :meth:`AdaptiveLimiter.acquire` hands out: (congestion epoch at the start, tokens reserved)."""

_DURATION = re.compile(r"(\d+(?:\.\d+)?)(ms|h|m|s)")
_WINDOW_SECONDS = 60.0  # RPM/TPM limits replenish over a minute


class RateLimitSnapshot(BaseModel):
    """Where a client stands, from one answer's headers (``*_reset``: seconds from when it was read)."""

    model_config = ConfigDict(frozen=True, extra="forbid")
    requests_limit: int | None = None
    requests_remaining: int | None = None
    requests_reset: float | None = None
    tokens_limit: int | None = None
    tokens_remaining: int | None = None
    tokens_reset: float | None = None


def parse_duration(text: str) -> float | None:
    """Seconds in an OpenAI-style duration (``"1s"``, ``"6m0s"``, ``"12ms"``, ``"1h2m3.5s"``) or a number."""
    text = text.strip()
    try:
        number = float(text)
    except ValueError:
        pass
    else:
        return max(0.0, number) if math.isfinite(number) else None
    parts = _DURATION.findall(text)
    if not parts or "".join(n + u for n, u in parts) != text:
        return None
    scale = {"ms": 0.001, "s": 1.0, "m": 60.0, "h": 3600.0}
    return sum(float(n) * scale[u] for n, u in parts)


def parse_reset(text: str, now: float | None = None) -> float | None:
    """Seconds until a reset given as a duration, a number of seconds, or an RFC 3339 time."""
    seconds = parse_duration(text)
    if seconds is not None:
        return seconds
    try:
        when = dt.datetime.fromisoformat(text.strip().replace("Z", "+00:00"))
    except ValueError:
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=dt.UTC)
    return max(0.0, when.timestamp() - (time.time() if now is None else now))


def _int(value: str | None) -> int | None:
    try:
        number = float(value or "")  # absent: no count
    except ValueError:
        return None
    return int(number) if math.isfinite(number) and number >= 0 else None


def parse_rate_limit_headers(headers: Mapping[str, str] | None) -> RateLimitSnapshot | None:
    """The rate-limit state in OpenAI- or Anthropic-style headers; None when there is none."""
    if not headers:
        return None
    get = headers.get
    if get("x-ratelimit-remaining-requests") is not None or get("x-ratelimit-remaining-tokens") is not None:
        prefix, names = "x-ratelimit-", ("limit-{}", "remaining-{}", "reset-{}")
    elif (
        get("anthropic-ratelimit-requests-remaining") is not None
        or get("anthropic-ratelimit-tokens-remaining") is not None
        or get("anthropic-ratelimit-input-tokens-remaining") is not None
    ):
        prefix, names = "anthropic-ratelimit-", ("{}-limit", "{}-remaining", "{}-reset")
    else:
        return None

    def family(kind: str) -> tuple[int | None, int | None, float | None]:
        limit = _int(get(prefix + names[0].format(kind)))
        remaining = _int(get(prefix + names[1].format(kind)))
        reset_text = get(prefix + names[2].format(kind))
        return limit, remaining, parse_reset(reset_text) if reset_text is not None else None

    tokens = family("tokens")
    if tokens[1] is None and prefix.startswith("anthropic"):
        tokens = family("input-tokens")
    values = (*family("requests"), *tokens)  # the snapshot's fields in their order
    return RateLimitSnapshot.model_validate(dict(zip(RateLimitSnapshot.model_fields, values, strict=True)))


def _rate(limit: int | None, remaining: int, reset: float | None) -> float | None:
    """Budget units per second coming back (the spent part over the time to its reset), or None."""
    if limit is not None and reset and limit > remaining:
        return (limit - remaining) / reset
    return limit / _WINDOW_SECONDS if limit else None


def estimate_tokens(request: LMRequest) -> int:
    """What a request counts against a tokens-per-minute limit: prompt characters / 4 plus max_tokens * n."""
    chars = sum(len(m.content) for m in request.messages)
    return chars // 4 + request.max_tokens * request.n


class AdaptiveLimiter:
    """Paces and caps the calls of one provider account.

    ``acquire(tokens)`` before a call gives a ticket for ``release(ticket, status=..., headers=...)`` after it
    (status None on success, 0 for no answer). Counters: ``throttled`` (429s), ``waited``, ``peak``.
    """

    def __init__(
        self,
        *,
        max_concurrency: int | None = None,
        min_concurrency: int = 1,
        decrease: float = 0.5,
        default_pause: float = 1.0,
        max_wait: float = 120.0,
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], Awaitable[Any]] = asyncio.sleep,
    ) -> None:
        self.max_concurrency = max_concurrency
        self.min_concurrency = max(1, min_concurrency)
        self.decrease = decrease
        self.default_pause = default_pause
        self.max_wait = max_wait
        self.cap: float | None = float(max_concurrency) if max_concurrency else None
        self.in_flight = self._tokens_in_flight = self.peak = self.throttled = self.waited = 0
        self._epoch = self._successes = 0
        self._clock = clock
        self._sleep = sleep
        self._paused_until = self._req_reset_at = self._tok_reset_at = 0.0
        self._snapshot: RateLimitSnapshot | None = None
        self._req_remaining: float | None = None
        self._tok_remaining: float | None = None
        self._refilled_at = clock()
        self._req_rate: float | None = None
        self._tok_rate: float | None = None
        self._waiters: deque[asyncio.Future[None]] = deque()

    def __repr__(self) -> str:
        cap = "none" if self.cap is None else f"{self.cap:g}"
        return f"AdaptiveLimiter(cap={cap}, in_flight={self.in_flight}, throttled={self.throttled})"

    @property
    def snapshot(self) -> RateLimitSnapshot | None:
        """The last rate-limit headers seen (None before any)."""
        return self._snapshot

    def _refill(self, now: float) -> None:
        """Budgets come back continuously (a token bucket synced to the headers, see :meth:`release`)."""
        elapsed = now - self._refilled_at
        self._refilled_at = now
        snap = self._snapshot
        if snap is None or elapsed <= 0:
            return
        if self._req_remaining is not None and self._req_rate:
            cap = float(snap.requests_limit or math.inf)
            self._req_remaining = min(cap, self._req_remaining + elapsed * self._req_rate)
        if self._tok_remaining is not None and self._tok_rate:
            cap = float(snap.tokens_limit or math.inf)
            self._tok_remaining = min(cap, self._tok_remaining + elapsed * self._tok_rate)

    @property
    def tracks_tokens(self) -> bool:
        """Whether a tokens budget is known (only then does a call's token estimate matter)."""
        return self._tok_remaining is not None

    def _delay(self, tokens: int) -> float:
        """Seconds this call must still wait for a pause or a rate budget (0: go)."""
        if self._snapshot is None and not self._paused_until:
            return 0.0  # nothing known and never throttled: the common case costs nothing
        now = self._clock()
        if now < self._paused_until:
            return self._paused_until - now
        self._refill(now)
        snap = self._snapshot
        waits = [0.0]
        if self._req_remaining is not None and self._req_remaining < 1:
            if self._req_rate:
                waits.append((1 - self._req_remaining) / self._req_rate)
            elif now < self._req_reset_at:
                waits.append(self._req_reset_at - now)
            else:
                self._req_remaining = None
        if self._tok_remaining is not None and 0 < tokens and self._tok_remaining < tokens:
            limit = snap.tokens_limit if snap is not None and snap.tokens_limit else tokens
            if self._tok_rate:  # a request bigger than the whole budget waits for a full bucket only
                waits.append((min(tokens, limit) - self._tok_remaining) / self._tok_rate)
            elif now < self._tok_reset_at:
                waits.append(self._tok_reset_at - now)
            else:
                self._tok_remaining = None
        return max(waits)

    async def acquire(self, tokens: int = 0, *, where: str = "the server") -> Ticket:
        """Wait until this call may go; the ticket for :meth:`release`."""
        waited = False
        while True:
            delay = self._delay(tokens)
            if delay > self.max_wait:
                raise TransientLMError(
                    f"{where}: the server's rate limit (its Retry-After or rate-limit headers) asks to wait "
                    f"{delay:,.0f} s before the next request, longer than the rate limiter waits by itself "
                    f"({self.max_wait:g} s; retryable)",
                    retry_after=delay,
                    reason="rate-limit",
                )
            if delay > 1e-6:
                waited = True
                await self._sleep(delay)
                continue
            if self.cap is not None and self.in_flight >= max(self.min_concurrency, int(self.cap)):
                waited = True
                future: asyncio.Future[None] = asyncio.get_running_loop().create_future()
                self._waiters.append(future)
                try:
                    await future
                finally:
                    if not future.done():
                        future.cancel()
                continue
            break
        if waited:
            self.waited += 1
        self.in_flight += 1
        self._tokens_in_flight += tokens
        self.peak = max(self.peak, self.in_flight)
        if self._req_remaining is not None:
            self._req_remaining -= 1
        if self._tok_remaining is not None:
            self._tok_remaining -= tokens
        return self._epoch, tokens

    def release(
        self,
        ticket: Ticket,
        *,
        status: int | None = None,
        headers: Mapping[str, str] | None = None,
        retry_after: float | None = None,
    ) -> None:
        """Record how a call ended: a 429 shrinks the cap and pauses; a success may raise the cap."""
        epoch, tokens = ticket
        self.in_flight = max(0, self.in_flight - 1)
        self._tokens_in_flight = max(0, self._tokens_in_flight - tokens)
        now = self._clock()
        snap = parse_rate_limit_headers(headers) if headers else None
        if snap is not None:
            self._refilled_at = now
            self._snapshot = snap
            # the server counted this call; calls still in flight may not be counted yet: assume not
            if snap.requests_remaining is not None:
                self._req_remaining = float(snap.requests_remaining) - self.in_flight
                self._req_reset_at = now + (snap.requests_reset or 0.0)
                self._req_rate = _rate(snap.requests_limit, snap.requests_remaining, snap.requests_reset)
            if snap.tokens_remaining is not None:
                self._tok_remaining = float(snap.tokens_remaining) - self._tokens_in_flight
                self._tok_reset_at = now + (snap.tokens_reset or 0.0)
                self._tok_rate = _rate(snap.tokens_limit, snap.tokens_remaining, snap.tokens_reset)
        if status == 429:
            self.throttled += 1
            if epoch == self._epoch:  # the first 429 of this episode: shrink once
                base = self.in_flight + 1 if self.cap is None else min(self.cap, self.in_flight + 1)
                self.cap = float(max(self.min_concurrency, math.floor(base * self.decrease)))
                self._epoch += 1
                self._successes = 0
            pause = retry_after
            if pause is None and snap is not None:
                spent = (
                    (snap.requests_reset, snap.requests_remaining),
                    (snap.tokens_reset, snap.tokens_remaining),
                )
                resets = [r for r, left in spent if r is not None and left is not None and left <= 0]
                pause = max(resets) if resets else None
            self._paused_until = max(
                self._paused_until, now + (self.default_pause if pause is None else pause)
            )
        elif (status is None or 200 <= status < 400) and self.cap is not None:
            self._successes += 1
            if self._successes >= self.cap:
                self._successes = 0
                self.cap += 1
                if self.max_concurrency is not None:
                    self.cap = min(self.cap, float(self.max_concurrency))
        self._wake()

    def _wake(self) -> None:
        free = None if self.cap is None else max(self.min_concurrency, int(self.cap)) - self.in_flight
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            loop = None
        while self._waiters and (free is None or free > 0):
            future = self._waiters.popleft()
            if future.done() or future.get_loop() is not loop:
                continue
            future.set_result(None)
            if free is not None:
                free -= 1
