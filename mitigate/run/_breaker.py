"""The circuit breaker of a run: which failures will repeat for every item, and when they stop the run.

A failure that will repeat for every item (the server refusing the key or the model, a backend
that cannot do what is asked, a server unreachable on every attempt ...; see
:func:`permanent_cause`) is counted; ``stop_after`` of the same kind in a row stop the run
(:mod:`mitigate.run._runner`). A failure of one item (its text too long, an answer that does not
parse) neither counts nor resets the count.
"""

from __future__ import annotations

from mitigate.errors import CapabilityError, ConfigError, DataError, LMCallError, TransientLMError

STOP_AFTER = 3
"""Default of ``run(stop_after=...)``: repeated permanent failures in a row that stop a run."""
PERMANENT_STATUS = frozenset({400, 401, 403, 404, 405, 410, 422})
"""HTTP statuses that will be answered to every request of a run (key, model or request body refused)."""


def permanent_cause(exc: BaseException) -> tuple[str, str, bool] | None:
    """Whether a judgment's error will repeat for every item: ``(kind, what happened, trip at once)``, else
    None.

    ``kind`` groups repeats of the same cause; ``trip at once`` is True when one occurrence is
    already the sum of several failed attempts (every retry could not connect, or the server asked
    to wait longer than the retry policy allows).
    """
    if isinstance(exc, CapabilityError) or (isinstance(exc, ConfigError) and not isinstance(exc, DataError)):
        return f"{type(exc).__name__}:{exc.message}", exc.message, False  # data errors belong to one item
    if not isinstance(exc, LMCallError):
        return None
    reason = exc.context.get("reason")
    if reason == "deadline":
        return "deadline", exc.message, False
    if reason == "malformed":  # an HTTP 200 whose body is no answer, the same way for each item
        return f"malformed-{exc.context.get('kind')}", exc.message, False
    if reason == "redirect":  # the server sends every API call elsewhere
        return "redirect", exc.message, False
    status = exc.context.get("status")
    if isinstance(status, int) and status in PERMANENT_STATUS:
        return f"http-{status}", exc.message, False
    retry_after, patience = exc.context.get("retry_after"), exc.context.get("patience")
    if isinstance(retry_after, int | float) and isinstance(patience, int | float) and retry_after > patience:
        last = exc.context.get("last_error")
        said = (
            "its rate-limit headers"
            if getattr(last, "context", {}).get("reason") == "rate-limit"
            else "Retry-After"
        )
        return (
            "retry-after",
            f"the server asked to wait {retry_after:g} s before retrying ({said}), longer "
            f"than this run's patience of {patience:g} s; try again later or allow a longer wait",
            True,
        )
    last = exc.context.get("last_error")
    attempts = exc.context.get("attempts")
    if isinstance(last, TransientLMError) and isinstance(attempts, int):
        reason = last.context.get("reason")
        if reason == "connection":
            return "unreachable", f"could not connect on any of {attempts} attempts: {last.message}", True
        if reason == "closed":
            return (
                "closed",
                (f"the server closed the connection on every one of {attempts} attempts: {last.message}"),
                False,
            )
        if reason == "cut":
            return (
                "cut",
                (f"the server broke off its answer on every one of {attempts} attempts: {last.message}"),
                False,
            )
        if reason == "timeout":
            return "timeout", f"every one of {attempts} attempts timed out: {last.message}", False
        if reason == "unavailable":  # every replica of a pool out, for different causes
            return (
                "unavailable",
                (f"every one of {attempts} attempts found no replica to send to: {last.message}"),
                False,
            )
        if last.status is not None:
            return (
                f"exhausted-{last.status}",
                (f"every one of {attempts} attempts failed: {last.message}"),
                False,
            )
    return None


class CircuitBreaker:
    """Counts permanent failures in a row (see :func:`permanent_cause`); trips after ``stop_after``.

    A judgment without an error resets the count; an error that is not permanent (one item's text
    too long, a parse of a bad answer) neither counts nor resets. ``stop_after=0`` never trips.
    """

    def __init__(self, stop_after: int = STOP_AFTER) -> None:
        if isinstance(stop_after, bool) or not isinstance(stop_after, int) or stop_after < 0:
            raise ConfigError(
                f"The 'stop_after' parameter of run must be an int >= 0. Got {stop_after!r} instead."
            )
        self.stop_after = stop_after
        self.kind: str | None = None
        self.count = 0
        self.cause: str | None = None

    def success(self) -> None:
        """A judgment came back without an error."""
        self.kind, self.count = None, 0

    def failure(self, exc: BaseException) -> bool:
        """Record a failed judgment; True when the run must stop (``cause`` then says why)."""
        if self.stop_after == 0:
            return False
        found = permanent_cause(exc)
        if found is None:
            return False
        kind, what, at_once = found
        self.count = self.count + 1 if kind == self.kind else 1
        self.kind = kind
        if at_once or self.count >= self.stop_after:
            self.cause = what
            return True
        return False
