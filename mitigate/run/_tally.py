"""What a run counts: its totals (:class:`Tally`, in constant memory, and the :class:`RunSummary` it gives)
and its circuit breaker."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

from mitigate.constraints import Interval, check_param
from mitigate.errors import CapabilityError, ConfigError, DataError, LMCallError, TransientLMError
from mitigate.judge import Judgment, ParseFailure
from mitigate.lm import Usage


class RunSummary(BaseModel):
    """Totals for a run: counts, parse failures, errors, token usage, cost and time."""

    model_config = ConfigDict(frozen=True, extra="forbid")
    items: int
    judged_now: int
    resumed: int
    rejudged: int = 0
    """Of the items judged now, those the journal held a judgment of another text for (rewritten under the
    same id since)."""
    ok: int
    parse_failures: int
    errors: int
    calls: int
    cached_calls: int
    resumed_calls: int = 0
    """Of ``calls`` (and ``cached_calls``), those the resumed judgments made in an earlier run."""
    resumed_cached_calls: int = 0
    usage: Usage = Field(default_factory=Usage)
    cost_usd: float | None = 0.0
    seconds: float = 0.0
    cost_note: str | None = None
    """Why ``cost_usd`` is unknown (a server without a list price, a model missing from the price table)."""

    def cost_text(self) -> str:
        """The cost in words: ``$0 (cached)`` when no call was made this run, why it is unknown when it is."""
        if self.cost_usd is None:
            return f"unknown ({self.cost_note or 'some call reported no price'})"
        if self.calls == 0 and self.cached_calls > 0 and self.cost_usd == 0:
            return "$0 (cached)"
        return f"${self.cost_usd:.4f}"

    def calls_text(self) -> str:
        """``"6 LM calls this run (0 from cache; 8 in all, 2 resumed from the journal)"``, or without a
        resumed call ``"8 LM calls (0 from cache)"``."""
        if not self.resumed_calls and not self.resumed_cached_calls:
            return f"{self.calls} LM calls ({self.cached_calls} from cache)"
        return (
            f"{self.calls - self.resumed_calls} LM calls this run "
            f"({self.cached_calls - self.resumed_cached_calls} from cache; {self.calls} in all, "
            f"{self.resumed_calls} resumed from the journal)"
        )

    def line(self) -> str:
        """One human-readable line."""
        cost = self.cost_text()
        return (
            f"{self.items} items ({self.resumed} resumed, {self.judged_now} judged now"
            + (f", {self.rejudged} of them again as their texts changed" if self.rejudged else "")
            + f"): {self.ok} ok, "
            f"{self.parse_failures} parse failures, {self.errors} errors; {self.calls_text()}; tokens in/out "
            + ("in all " if self.resumed_calls or self.resumed_cached_calls else "")
            + f"{self.usage.prompt_tokens}/"
            f"{self.usage.completion_tokens} ({self.usage.cached_prompt_tokens} prompt tokens read from a "
            f"cache, {self.usage.cache_write_tokens} written to one); "
            f"cost {cost}"
            + (" in all" if self.resumed_calls or self.resumed_cached_calls else "")
            + f"; {self.seconds:.1f}s"
        )


class Tally:
    """Counts a run's judgments as they come (never keeping them), the first error and parse failure too."""

    def __init__(self) -> None:
        self.items = self.resumed = self.rejudged = self.ok = self.parse_failures = self.errors = 0
        self.calls = self.cached_calls = self.with_failures = self.resumed_calls = self.resumed_cached = 0
        self.usage = Usage()
        self.cost_usd: float | None = 0.0
        self.first_error: str | None = None
        self.first_failure: ParseFailure | None = None

    def add(self, judgment: Judgment, *, resumed: bool = False) -> None:
        """Count one judgment (``resumed``: read back from a journal, not judged in this run)."""
        self.items += 1
        self.resumed += resumed
        self.ok += judgment.ok
        if judgment.failures:
            self.parse_failures += len(judgment.failures)
            self.with_failures += 1
            if self.first_failure is None:
                self.first_failure = judgment.failures[0]
        if judgment.error is not None:
            self.errors += 1
            if self.first_error is None:
                self.first_error = judgment.error
        self.calls += judgment.calls
        self.cached_calls += judgment.cached_calls
        if resumed:
            self.resumed_calls += judgment.calls
            self.resumed_cached += judgment.cached_calls
        self.usage = self.usage + judgment.usage
        if self.cost_usd is not None:
            self.cost_usd = None if judgment.cost_usd is None else self.cost_usd + judgment.cost_usd

    def summary(self, seconds: float = 0.0, cost_note: str | None = None) -> RunSummary:
        """The totals so far as a :class:`RunSummary` (usage and cost count resumed judgments too)."""
        return RunSummary(
            items=self.items,
            judged_now=self.items - self.resumed,
            resumed=self.resumed,
            rejudged=self.rejudged,
            ok=self.ok,
            parse_failures=self.parse_failures,
            errors=self.errors,
            calls=self.calls,
            cached_calls=self.cached_calls,
            resumed_calls=self.resumed_calls,
            resumed_cached_calls=self.resumed_cached,
            usage=self.usage,
            cost_usd=self.cost_usd,
            seconds=seconds,
            cost_note=cost_note if self.cost_usd is None else None,
        )


STOP_AFTER = 3
"""Default of ``run(stop_after=...)``: repeated permanent failures in a row that stop a run."""
PERMANENT_STATUS = frozenset({400, 401, 403, 404, 405, 410, 422})
"""HTTP statuses that will be answered to every request of a run (key, model or request body refused)."""


def permanent_cause(exc: BaseException) -> tuple[str, str, bool] | None:
    """Whether a judgment's error will repeat for every item: ``(kind, what happened, trip at once)``, else
    None (``trip at once``: one occurrence already sums several failed attempts)."""
    if isinstance(exc, CapabilityError) or (isinstance(exc, ConfigError) and not isinstance(exc, DataError)):
        return (f"{type(exc).__name__}:{exc.message}", exc.message, False)  # data errors belong to one item
    if not isinstance(exc, LMCallError):
        return None
    reason = exc.context.get("reason")
    if reason in ("deadline", "redirect"):  # a hung server; one that sends every API call elsewhere
        return reason, exc.message, False
    if reason == "malformed":  # an HTTP 200 whose body is no answer, the same way for each item
        return f"malformed-{exc.context.get('kind')}", exc.message, False
    status = exc.context.get("status")
    if isinstance(status, int) and status in PERMANENT_STATUS:
        return f"http-{status}", exc.message, False
    retry_after, patience = exc.context.get("retry_after"), exc.context.get("patience")
    last = exc.context.get("last_error")
    if isinstance(retry_after, int | float) and isinstance(patience, int | float) and retry_after > patience:
        headers = getattr(last, "context", {}).get("reason") == "rate-limit"
        said = "its rate-limit headers" if headers else "Retry-After"
        return (
            "retry-after",
            f"the server asked to wait {retry_after:g} s before retrying ({said}), longer "
            f"than this run's patience of {patience:g} s; try again later or allow a longer wait",
            True,
        )
    attempts = exc.context.get("attempts")
    if isinstance(last, TransientLMError) and isinstance(attempts, int):
        cause = str(last.context.get("reason"))
        if cause in _EVERY:
            kind, said, at_once = _EVERY[cause]
            return kind, f"{said.format(attempts)}: {last.message}", at_once
        if last.status is not None:
            return (
                f"exhausted-{last.status}",
                f"every one of {attempts} attempts failed: {last.message}",
                False,
            )
    return None


_EVERY = {  # a transient cause every attempt met -> (kind, what happened, trip at once)
    "connection": ("unreachable", "could not connect on any of {} attempts", True),
    # the limit is this process's: every item would meet it
    "descriptors": ("descriptors", "no file descriptor was free on any of {} attempts", True),
    "closed": ("closed", "the server closed the connection on every one of {} attempts", False),
    "cut": ("cut", "the server broke off its answer on every one of {} attempts", False),
    "timeout": ("timeout", "every one of {} attempts timed out", False),
    # every replica of a pool out, for different causes
    "unavailable": ("unavailable", "every one of {} attempts found no replica to send to", False),
}


class CircuitBreaker:
    """Counts permanent failures of one kind in a row; trips after ``stop_after`` (0: never). A success resets
    the count; one item's own failure neither counts nor resets."""

    def __init__(self, stop_after: int = STOP_AFTER) -> None:
        check_param("run", "stop_after", stop_after, [Interval(int, 0)])
        self.stop_after = stop_after
        self.kind: str | None = None
        self.count = 0
        self.cause: str | None = None

    def success(self) -> None:
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
