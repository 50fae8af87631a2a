"""One time budget per request: what ``--deadline`` bounds, over every attempt of the request.

A request's attempts share one :class:`RequestClock`: :class:`~mitigate.lm._retry.RetryingLM`
opens a fresh clock for each request (:func:`start_request`, :func:`end_request`), and each
attempt of a network backend runs its exchange with the server between
:meth:`RequestClock.begin` (which gives what is left of the deadline, for ``asyncio.timeout``)
and :meth:`RequestClock.end` (which counts the time used). So the deadline holds for the
request as a whole: a server that never answers, or trickles its answer, fails the
request once the attempts together have waited that long on it, however many retries the
read timeout (``--timeout``) would have allowed. The waits between attempts (backoff, a
server's ``Retry-After``) and the wait for the rate limiter's turn are not time on the
server and are not counted; the retry policy bounds them. Without a
:class:`~mitigate.lm._retry.RetryingLM` each call has a clock of its own.

The worst case under given settings (a server that accepts the connection and never answers) is
:func:`~mitigate.lm._retry.hung_server_seconds`.
"""

from __future__ import annotations

import contextvars
import time

_CLOCK: contextvars.ContextVar[RequestClock | None] = contextvars.ContextVar(
    "mitigate_request_clock", default=None
)


class RequestClock:
    """Seconds one request has spent on the server so far, over all its attempts.

    Attempts that overlap (the samples of an Anthropic request, sent side by side) count once:
    the clock runs while at least one is under way.
    """

    __slots__ = ("_active", "_since", "attempts", "spent")

    def __init__(self) -> None:
        self.spent = 0.0
        self.attempts = 0
        self._active = 0
        self._since = 0.0

    def used(self) -> float:
        """Seconds spent on the server, the attempts under way included."""
        return self.spent + (time.monotonic() - self._since if self._active else 0.0)

    def begin(self, deadline: float) -> float:
        """Start an exchange with the server: the seconds it may take, what is left of ``deadline`` (bound it
        with ``asyncio.timeout``); TimeoutError when nothing is left. Pair with :meth:`end` (in a
        ``finally``)."""
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
        """End an exchange :meth:`begin` started; its time is counted."""
        self._active -= 1
        if not self._active:
            self.spent += time.monotonic() - self._since


def request_clock() -> RequestClock:
    """The clock of the request under way (see :func:`start_request`), else a new one for this call alone."""
    clock = _CLOCK.get()
    return clock if clock is not None else RequestClock()


def start_request() -> contextvars.Token[RequestClock | None]:
    """Make every call of a backend from here on (in this task) share one fresh :class:`RequestClock`: one
    request; pass what it returns to :func:`end_request` when the request is over."""
    return _CLOCK.set(RequestClock())


def end_request(token: contextvars.Token[RequestClock | None]) -> None:
    """End the request :func:`start_request` began (its calls no longer share its clock)."""
    _CLOCK.reset(token)
