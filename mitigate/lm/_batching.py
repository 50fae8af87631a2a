"""An LM that answers from the cache or parks its request with a batch session (the providers' batch APIs).

:class:`BatchingLM` wraps a backend for a batch run: a request the LM cache can answer is
answered at once; any other is handed to a :class:`BatchParking` (in practice
:class:`mitigate.run._batch_session.BatchSession`), which sends it in a batch and returns the
answer when the batch ends. The judge that calls this LM sees an ordinary :class:`~mitigate.lm._base.LM`.
"""

from __future__ import annotations

from typing import Protocol

from mitigate.lm._base import LM, LMRequest, LMResponse
from mitigate.lm._batch import BatchAPI
from mitigate.lm._cache import LMCache
from mitigate.lm._wrapper import WrapperLM


class BatchParking(Protocol):
    """Where a :class:`BatchingLM` parks what the cache cannot answer."""

    busy: int
    """How many cache look-ups are under way (the session waits for them before it submits)."""

    def count_cache_hit(self) -> None:
        """Count one request answered from the cache."""

    async def park(self, key: str, request: LMRequest, api: BatchAPI) -> LMResponse:
        """The answer to ``request`` (cache key ``key``) once its batch on ``api`` has ended."""
        ...


class BatchingLM(WrapperLM):
    """Answers from the LM cache, or parks the request with its :class:`BatchParking` and awaits its batch."""

    def __init__(self, inner: LM, session: BatchParking, api: BatchAPI, cache: LMCache) -> None:
        super().__init__(inner)
        self.session = session
        self.api = api
        self.cache = cache

    def __repr__(self) -> str:
        return f"BatchingLM({self.inner!r})"

    async def complete(self, request: LMRequest) -> LMResponse:
        """The cached answer, or the batch's (waiting for the batch to end)."""
        self.check(request)
        key = LMCache.make_key(self.identity(), self.model, request.key())
        self.session.busy += 1
        try:
            stored = await self.cache.get(key)
        finally:
            self.session.busy -= 1
        if stored is not None:
            self.session.count_cache_hit()
            return LMResponse.model_validate_json(stored).model_copy(update={"cached": True})
        return await self.session.park(key, request, self.api)
