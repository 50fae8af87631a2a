"""A budget of distinct LM requests: a counter and the LM wrapper that spends it.

The demo search wraps every leaf LM of a judge as ``BudgetedLM(CachedLM(lm))``, so a request
counts once whether the cache or the backend answers it (see :mod:`mitigate.search`).
"""

from __future__ import annotations

import threading

from mitigate.errors import MitigateError
from mitigate.lm._base import LM, LMRequest, LMResponse
from mitigate.lm._cache import LMCache
from mitigate.lm._wrapper import WrapperLM


class BudgetExhaustedError(MitigateError):
    """The search's LM-call budget is spent; the call was refused before reaching the backend."""


class CallBudget:
    """A thread-safe counter of distinct LM requests with an optional limit (None: unlimited).

    ``used`` counts distinct requests let through (a request key seen before is free),
    ``refused`` requests refused at the limit, ``backend`` the counted requests that the
    cache could not answer.
    """

    def __init__(self, limit: int | None) -> None:
        self.limit = limit
        self.used = 0
        self.refused = 0
        self.backend = 0
        self.exhausted = False
        self._seen: set[str] = set()
        self._lock = threading.Lock()

    def take(self, key: str | None = None) -> None:
        """Count one request (free when ``key`` was taken before); BudgetExhaustedError at the limit."""
        with self._lock:
            if key is not None and key in self._seen:
                return
            if self.limit is not None and self.used >= self.limit:
                self.exhausted = True
                self.refused += 1
                raise BudgetExhaustedError(
                    f"the search budget of {self.limit} LM calls is spent; expected no further calls",
                    limit=self.limit,
                )
            self.used += 1
            if key is not None:
                self._seen.add(key)

    def reached_backend(self) -> None:
        """Record that a counted request was answered by the backend rather than the cache."""
        with self._lock:
            self.backend += 1

    @property
    def remaining(self) -> int | None:
        """Calls left (None when unlimited)."""
        return None if self.limit is None else max(0, self.limit - self.used)


class BudgetedLM(WrapperLM):
    """Counts every distinct completion request against a :class:`CallBudget` and refuses requests beyond it.

    Sits outside the cache (``BudgetedLM(CachedLM(lm))``), so a request counts whether the
    cache or the backend answers it, and counts once however often it is repeated: the
    search spends its budget the same way on a cold and a warm cache. Log-likelihood
    calls are not counted. Without a cache (``dedupe=False``) a repeated request reaches the
    backend again, so every call counts.
    """

    def __init__(self, inner: LM, budget: CallBudget, *, dedupe: bool = True) -> None:
        super().__init__(inner)
        self.budget = budget
        self.dedupe = dedupe

    async def complete(self, request: LMRequest) -> LMResponse:
        """Take the request from the budget (free if made before and ``dedupe``), then delegate."""
        key = LMCache.make_key(self.identity(), self.model, request.key()) if self.dedupe else None
        self.budget.take(key)
        response = await self.inner.complete(request)
        if not response.cached:
            self.budget.reached_backend()
        return response
