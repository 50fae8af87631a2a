"""A run's totals: the summary of a run (:class:`RunSummary`) and the tally that counts it one judgment at a
time.

:class:`Tally` adds each judgment as it comes and keeps only counts, token sums, the cost and
the first error and parse failure (what the end-of-run line and the "every item failed" check
say), so a run of any length is summed in constant memory.
"""

from __future__ import annotations

from collections.abc import Iterable

from pydantic import BaseModel, ConfigDict, Field

from mitigate.judge import Judgment, ParseFailure
from mitigate.lm import Usage


class RunSummary(BaseModel):
    """Totals for a run: counts, parse failures, errors, token usage, cost and time."""

    model_config = ConfigDict(frozen=True, extra="forbid")
    items: int
    judged_now: int
    resumed: int
    ok: int
    parse_failures: int
    errors: int
    calls: int
    cached_calls: int
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

    def line(self) -> str:
        """One human-readable line."""
        cost = self.cost_text()
        return (
            f"{self.items} items ({self.resumed} resumed, {self.judged_now} judged now): {self.ok} ok, "
            f"{self.parse_failures} parse failures, {self.errors} errors; {self.calls} LM calls "
            f"({self.cached_calls} from cache); tokens in/out {self.usage.prompt_tokens}/"
            f"{self.usage.completion_tokens} ({self.usage.cached_prompt_tokens} prompt tokens read from a "
            f"cache, {self.usage.cache_write_tokens} written to one); "
            f"cost {cost}; {self.seconds:.1f}s"
        )


class Tally:
    """Counts a run's judgments as they come (:meth:`add`); :meth:`summary` is the run's :class:`RunSummary`.

    Besides the counts it keeps ``first_error`` (the first judgment's LM error), ``first_failure``
    (the first parse failure) and ``with_failures`` (judgments with a parse failure), never the
    judgments themselves.
    """

    def __init__(self) -> None:
        self.items = self.resumed = self.ok = self.parse_failures = self.errors = 0
        self.calls = self.cached_calls = self.with_failures = 0
        self.prompt_tokens = self.completion_tokens = self.cached_prompt_tokens = self.cache_write_tokens = 0
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
        usage = judgment.usage
        self.prompt_tokens += usage.prompt_tokens
        self.completion_tokens += usage.completion_tokens
        self.cached_prompt_tokens += usage.cached_prompt_tokens
        self.cache_write_tokens += usage.cache_write_tokens
        if self.cost_usd is not None:
            self.cost_usd = None if judgment.cost_usd is None else self.cost_usd + judgment.cost_usd

    def summary(self, seconds: float = 0.0, cost_note: str | None = None) -> RunSummary:
        """The totals so far as a :class:`RunSummary` (usage and cost count resumed judgments too)."""
        return RunSummary(
            items=self.items,
            judged_now=self.items - self.resumed,
            resumed=self.resumed,
            ok=self.ok,
            parse_failures=self.parse_failures,
            errors=self.errors,
            calls=self.calls,
            cached_calls=self.cached_calls,
            usage=Usage(
                prompt_tokens=self.prompt_tokens,
                completion_tokens=self.completion_tokens,
                cached_prompt_tokens=self.cached_prompt_tokens,
                cache_write_tokens=self.cache_write_tokens,
            ),
            cost_usd=self.cost_usd,
            seconds=seconds,
            cost_note=cost_note if self.cost_usd is None else None,
        )


def summarise(judgments: Iterable[Judgment], *, resumed: int = 0, seconds: float = 0.0) -> RunSummary:
    """Totals over judgments (usage and cost are counted for resumed ones too); ``resumed`` of them were read
    back."""
    tally = Tally()
    for j in judgments:
        tally.add(j)
    tally.resumed = resumed
    return tally.summary(seconds)
