"""A thread- and task-safe sum of token usage, cost and call counts over many LM responses."""

from __future__ import annotations

import threading

from pydantic import BaseModel, ConfigDict, Field

from mitigate.lm._base import LMResponse, Usage


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
