"""Batch execution for the runner: a run's LM calls go through the providers' batch APIs.

With ``run(..., batch=...)`` each leaf LM is a :class:`~mitigate.lm.BatchingLM`: a request the cache cannot
answer is parked in a :class:`BatchSession`, which submits the parked requests as batches when the run goes
quiet, polls them, stores every answer in the LM cache and wakes the items (a judge that calls in stages parks
again). Its record lives in the run folder, so a killed run resumes without submitting anything twice. A
request that failed in its batch is an error for its item (``retry_failed=k``: first resent in up to ``k``
follow-up batches).
"""

from __future__ import annotations

import asyncio
import copy
import importlib.util
import random
import time
from collections import Counter
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any, TypeVar

from pydantic import BaseModel, ConfigDict, Field
from tqdm.auto import tqdm

from mitigate.errors import BackendSpecError, ConfigError, LMCallError, MitigateError, TransientLMError
from mitigate.judge import Judge, PromptJudge
from mitigate.lm import (
    LM,
    BatchAPI,
    BatchingLM,
    BatchItemError,
    BatchRecord,
    BatchState,
    BatchStore,
    CachedLM,
    LMCache,
    LMRequest,
    LMResponse,
    WrapperLM,
    custom_ids,
    innermost,
)

T = TypeVar("T")


class BatchConfig(BaseModel):
    """How a run uses the batch APIs: ``directory`` for the record (default ``<journal folder>/batches``),
    poll intervals, follow-up batches, per-batch limits below the provider's, and ``settle`` seconds without a
    new request before the parked ones are submitted."""

    model_config = ConfigDict(frozen=True, extra="forbid")
    directory: Path | None = None
    poll_interval: float = Field(default=5.0, gt=0)
    max_poll_interval: float = Field(default=60.0, gt=0)
    retry_failed: int = Field(default=0, ge=0)
    max_requests: int | None = Field(default=None, ge=1)
    max_bytes: int | None = Field(default=None, ge=1)
    settle: float = Field(default=0.2, ge=0)
    transient_retries: int = Field(default=8, ge=1)
    progress: bool = True


class BatchStats(BaseModel):
    """What a session did: batches and requests submitted, batches resumed, results, follow-ups."""

    model_config = ConfigDict(extra="forbid")
    submitted_batches: int = 0
    submitted_requests: int = 0
    resumed_batches: int = 0
    adopted_batches: int = 0
    collected_batches: int = 0
    succeeded: int = 0
    failed: int = 0
    retried: int = 0
    cache_hits: int = 0

    def line(self) -> str:
        """One human-readable line."""
        return (
            f"batch: {self.submitted_batches} batches submitted ({self.submitted_requests} requests), "
            f"{self.resumed_batches} resumed ({self.adopted_batches} found after a crash), "
            f"{self.collected_batches} collected: {self.succeeded} answers, {self.failed} failed, "
            f"{self.retried} resent; {self.cache_hits} answered from the cache"
        )


@dataclass
class _Parked:
    """A request waiting for its batch answer."""

    key: str
    request: LMRequest
    api: BatchAPI
    future: asyncio.Future[LMResponse]
    attempt: int = 1


class BatchSession:
    """Carries the parked requests of one or more runs (``compare``'s entries share one) through batches."""

    def __init__(self, options: BatchConfig | None = None, directory: str | Path | None = None) -> None:
        self.options = options or BatchConfig()
        folder = directory if directory is not None else self.options.directory
        if folder is None:
            raise ConfigError(
                "batch mode needs a folder for its batch record (to resume a killed run); "
                "expected a journal / --run-dir or BatchConfig(directory=...); got none"
            )
        self.store = BatchStore(folder)
        self.stats = BatchStats()
        self.states: dict[str, BatchState] = {}
        self.busy = self._active = 0
        self._resumed = False
        self._apis: dict[str, BatchAPI] = {}
        self._caches: dict[str, LMCache] = {}
        self._own_cache: LMCache | None = None
        self._waiting: dict[str, _Parked] = {}
        self._pending: dict[str, _Parked] = {}
        self._in_batch: dict[str, str] = {k: r.local for r in self.store.open_records() for k in r.keys}
        self._lines: dict[str, int] = {}
        self._last_park = 0.0
        self._wake: asyncio.Event | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._pump: asyncio.Task[None] | None = None
        self._pump_error: BaseException | None = None
        self._bar: Any = None

    def __repr__(self) -> str:
        return f"BatchSession({str(self.store.directory)!r}, waiting={len(self._waiting)})"

    def wrap(self, judge: Judge) -> Judge:
        """A copy of ``judge`` whose every prompt judge calls its LM through this session."""

        def swap(leaf: PromptJudge) -> Judge:
            if isinstance(leaf.lm, BatchingLM):
                return leaf
            clone = copy.copy(leaf)
            clone.lm = self.batching(leaf.lm)
            return clone

        return judge.map_leaves(swap)

    def count_cache_hit(self) -> None:
        """Count one request a :class:`~mitigate.lm.BatchingLM` answered from the cache."""
        self.stats.cache_hits += 1

    def batching(self, lm: LM) -> BatchingLM:
        """``lm`` answering through this session (its batch API and cache registered by identity)."""
        identity = lm.identity()
        if identity not in self._apis:
            self._apis[identity] = batch_api_for(lm).with_limits(
                self.options.max_requests, self.options.max_bytes
            )
        if identity not in self._caches:
            found = find_cache(lm)
            self._caches[identity] = found if found is not None else self._default_cache()  # (empty is falsy)
        return BatchingLM(lm, self, self._apis[identity], self._caches[identity])

    def _default_cache(self) -> LMCache:
        if self._own_cache is None:
            self._own_cache = LMCache(self.store.directory / "results.sqlite")
        return self._own_cache

    async def gather(self, coros: Iterable[Awaitable[T]], *, return_exceptions: bool = False) -> list[Any]:
        """Run the coroutines while the session carries their requests; then raise its own failure, if any."""
        loop = asyncio.get_running_loop()
        if self._wake is None or self._loop is not loop:  # an Event belongs to the loop that first used it
            self._wake, self._loop = asyncio.Event(), loop
        tasks = [asyncio.ensure_future(c) for c in coros]
        for task in tasks:
            task.add_done_callback(lambda _t: self._poke())
        self._active += 1
        if self._pump is None or self._pump.done():
            self._pump = asyncio.create_task(self._run_pump())
        try:
            results = await asyncio.gather(*tasks, return_exceptions=return_exceptions)
        finally:
            self._active -= 1
            if self._active == 0:
                await self._stop()
        if self._pump_error is not None:
            error, self._pump_error = self._pump_error, None
            raise error
        return list(results)

    async def park(self, key: str, request: LMRequest, api: BatchAPI) -> LMResponse:
        """Wait for ``request``'s answer from a batch (submitted, or about to be)."""
        if self._pump_error is not None:
            raise LMCallError(f"batch mode stopped: {self._pump_error}", backend=api.identity)
        parked = self._waiting.get(key)
        if parked is None:
            future: asyncio.Future[LMResponse] = asyncio.get_running_loop().create_future()
            parked = _Parked(key=key, request=request, api=api, future=future)
            self._waiting[key] = parked
            if key not in self._in_batch:
                self._pending[key] = parked
            self._last_park = time.monotonic()
            self._poke()
        return await asyncio.shield(parked.future)

    def _poke(self) -> None:
        if self._wake is not None:
            self._wake.set()

    async def _stop(self) -> None:
        if self._pump is not None and not self._pump.done():
            self._pump.cancel()
            try:
                await self._pump
            except (asyncio.CancelledError, Exception):  # the pump reported its own errors
                pass
        self._pump = None
        if self._bar is not None:
            self._bar.close()
            self._bar = None

    async def aclose(self) -> None:
        """Stop the session and close the cache it opened itself."""
        await self._stop()
        if self._own_cache is not None:
            self._own_cache.close()
            self._own_cache = None

    async def _run_pump(self) -> None:
        try:
            await self._pump_loop()
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # fail every waiting item with it, then report it
            self._pump_error = exc
            error = exc if isinstance(exc, MitigateError) else LMCallError(f"batch mode failed: {exc!r}")
            for parked in list(self._waiting.values()):
                if not parked.future.done():
                    parked.future.set_exception(error)
            self._waiting.clear()
            self._pending.clear()

    async def _pump_loop(self) -> None:
        assert self._wake is not None
        if not self._resumed:
            self._resumed = True
            await self._resume()
        interval = self.options.poll_interval
        while True:
            if self._pending:
                await self._settle()
                await self._submit_pending()
            open_records = [r for r in self.store.open_records() if r.batch_id and r.identity in self._apis]
            if not open_records:
                if not self._pending:
                    self._wake.clear()
                    await self._wake.wait()
                continue
            changed = await self._poll(open_records)
            interval = (
                self.options.poll_interval if changed else min(self.options.max_poll_interval, interval * 1.5)
            )
            if any(not r.collected for r in open_records):
                await asyncio.sleep(interval)

    async def _settle(self) -> None:
        """Wait until no request arrived for ``settle`` seconds and no cache lookup is under way."""
        step = max(self.options.settle / 4, 0.005)
        while self.busy > 0 or time.monotonic() - self._last_park < self.options.settle:
            await asyncio.sleep(step)

    async def _resume(self) -> None:
        """Reattach the batches a previous process left open; find or submit those it may not have created."""
        for record in self.store.open_records():
            api = self._apis.get(record.identity)
            if api is None:
                continue  # another backend's batch: left for a run with that judge
            self.stats.resumed_batches += 1
            self._lines[record.local] = record.lines
            if record.batch_id is None:
                await self._create(api, record, None)

    async def _submit_pending(self) -> None:
        by_api: dict[str, list[_Parked]] = {}
        for parked in self._pending.values():
            by_api.setdefault(parked.api.identity, []).append(parked)
        self._pending = {}
        for identity, items in by_api.items():
            api = self._apis[identity]
            by_key = {p.key: p for p in items}
            for chunk in api.chunks(api.lines([(p.key, p.request) for p in items])):
                keys = [k for k, _ in chunk]
                lines = [line for _, ls in chunk for line in ls]
                attempt = max(by_key[k].attempt for k in keys)
                record = self.store.begin(
                    api, [(k, by_key[k].request) for k in keys], len(lines), attempt=attempt
                )
                self._in_batch.update(dict.fromkeys(keys, record.local))
                self._lines[record.local] = len(lines)
                await self._create(api, record, lines)

    async def _create(self, api: BatchAPI, record: BatchRecord, lines: list[Any] | None) -> None:
        """Get a provider batch for ``record``: the one a killed run created (looked for when the record was
        read back, or a submission failed transiently), else a new one."""
        look_first = lines is None
        if lines is None:
            requests = self.store.requests(record)
            lines = [line for _, ls in api.lines(list(requests.items())) for line in ls]
        adopted = False

        async def create() -> str:
            nonlocal look_first, adopted
            try:
                if look_first:
                    found = await api.find(record.local, record.lines, record.created, self.store.claimed())
                    if found is not None:
                        adopted = True
                        return found
                return await api.submit(record.local, lines)
            except TransientLMError:
                look_first = True
                raise

        try:
            batch_id = await self._retrying(create, self.options.poll_interval)
        except TransientLMError:
            raise
        except LMCallError as exc:  # the provider refused the batch: its requests fail
            self._refused(record, exc)
            return
        self.store.submitted(record, batch_id)
        if adopted:
            self.stats.adopted_batches += 1
            return
        self.stats.submitted_batches += 1
        self.stats.submitted_requests += len(lines)
        self._show()

    def _refused(self, record: BatchRecord, exc: LMCallError) -> None:
        self.store.collected(record, "refused", {k: str(exc) for k in record.keys})
        for key in record.keys:
            self._in_batch.pop(key, None)
            parked = self._waiting.pop(key, None)
            if parked is not None and not parked.future.done():
                parked.future.set_exception(
                    LMCallError(f"the provider refused the batch: {exc}", backend=record.identity)
                )
        self.stats.failed += len(record.keys)

    async def _retrying(self, call: Callable[[], Awaitable[T]], delay: float | None = None) -> T:
        delay = min(1.0, self.options.poll_interval) if delay is None else delay
        for attempt in range(1, self.options.transient_retries + 1):
            try:
                return await call()
            except TransientLMError:
                if attempt == self.options.transient_retries:
                    raise
                await asyncio.sleep(delay * (0.5 + random.random() / 2))
                delay = min(self.options.max_poll_interval, delay * 2)
        raise AssertionError("unreachable")

    async def _poll(self, records: list[BatchRecord]) -> bool:
        """Poll every open batch once and collect those that ended; True when anything changed."""
        changed = False
        for record in records:
            api = self._apis[record.identity]
            assert record.batch_id is not None
            state = await self._retrying(partial(api.poll, record.batch_id))
            before = self.states.get(record.local)
            if before is None or (before.status, before.done) != (state.status, state.done):
                changed = True
            self.states[record.local] = state
            if state.ended:
                await self._collect(api, record, state)
                changed = True
        self._show()
        return changed

    async def _collect(self, api: BatchAPI, record: BatchRecord, state: BatchState) -> None:
        results = await self._retrying(lambda: api.results(state))
        requests = self.store.requests(record)
        expected = {
            cid for key, req in requests.items() for cid in custom_ids(key, req.n, per_sample=api.per_sample)
        }
        if results and not expected & results.keys():
            # an adopted batch whose results are someone else's: forget it and submit ours
            self.store.disown(record)
            self.states.pop(record.local, None)
            await self._create(api, record, None)
            return
        answers: dict[str, LMResponse] = {}
        failures: dict[str, BatchItemError] = {}
        none = f"batch {state.batch_id} ({state.status}) returned no result for this request"
        missing = BatchItemError(kind="failed", message=state.message) if state.message else None
        for key, request in requests.items():
            got = [results.get(cid) for cid in custom_ids(key, request.n, per_sample=api.per_sample)]
            errors = [g for g in got if isinstance(g, BatchItemError)]
            if errors:
                failures[key] = errors[0]
            elif any(g is None for g in got):
                failures[key] = missing or BatchItemError(kind="missing", retryable=True, message=none)
            else:
                try:
                    answers[key] = api.response(request, [g for g in got if isinstance(g, dict)])
                except MitigateError as exc:
                    failures[key] = BatchItemError(kind="errored", message=str(exc))
        cache = self._caches[record.identity] if record.identity in self._caches else self._default_cache()
        payloads = [
            (key, resp.model_copy(update={"cached": False}).model_dump_json())
            for key, resp in answers.items()
        ]
        await asyncio.to_thread(_store_all, cache, payloads, record.identity, record.model)
        self.store.collected(record, state.status, {k: f"{e.kind}: {e.message}" for k, e in failures.items()})
        self.stats.collected_batches += 1
        self.stats.succeeded += len(answers)
        self.stats.failed += len(failures)
        for key in requests:
            if self._in_batch.get(key) == record.local:
                del self._in_batch[key]
        for key, response in answers.items():
            parked = self._waiting.pop(key, None)
            if parked is not None and not parked.future.done():
                parked.future.set_result(response)
        for key, error in failures.items():
            parked = self._waiting.get(key)
            if parked is None:
                continue
            if error.retryable and parked.attempt <= self.options.retry_failed:
                parked.attempt += 1
                self._pending[key] = parked
                self.stats.retried += 1
                continue
            del self._waiting[key]
            if not parked.future.done():
                parked.future.set_exception(
                    LMCallError(
                        f"batch {state.batch_id}: the request {error.kind} ({error.message})",
                        backend=record.identity,
                        status=error.status,
                    )
                )
        self._last_park = time.monotonic()  # follow-ups: let the woken items park their next calls first

    def _show(self) -> None:
        if not self.options.progress:
            return
        if self._bar is None:
            self._bar = tqdm(total=0, desc="batch", unit="req", leave=False)
        done = 0
        for local, lines in self._lines.items():
            record = self.store.records.get(local)
            state = self.states.get(local)
            done += lines if record is not None and record.collected else (state.done if state else 0)
        self._bar.total = sum(self._lines.values())
        self._bar.n = done
        statuses = Counter(s.status for s in self.states.values())
        failed = sum(s.failed for s in self.states.values())
        self._bar.set_postfix_str(
            ", ".join(f"{n} {status}" for status, n in sorted(statuses.items()))
            + (f"; {failed} failed" if failed else "")
        )
        self._bar.refresh()


def find_cache(lm: LM) -> LMCache | None:
    """The cache of the first :class:`CachedLM` in ``lm``'s wrapper stack, if any."""
    seen = 0
    while isinstance(lm, WrapperLM) and seen < 32:
        if isinstance(lm, CachedLM):
            return lm.cache
        lm = lm.inner
        seen += 1
    return None


def _store_all(cache: LMCache, payloads: list[tuple[str, str]], identity: str, model: str) -> None:
    for key, payload in payloads:
        cache.put_sync(key, identity, model, payload)


def batch_api_for(lm: LM) -> BatchAPI:
    """The batch API of ``lm``'s backend (OpenAI or Anthropic); ConfigError for a backend without one."""
    backend = innermost(lm)  # the implementations import the SDKs: only when batch mode is used
    if backend.provider in ("openai", "anthropic") and importlib.util.find_spec(backend.provider) is None:
        raise BackendSpecError(
            f"batch mode on {lm.spec!r} goes through the {backend.provider!r} SDK, which is not installed; "
            f"expected it importable (pip install 'mitigate[{backend.provider}]')",
            spec=lm.spec,
        )
    if backend.provider == "openai":
        from mitigate.lm import OpenAIBatchAPI, OpenAILM

        if isinstance(backend, OpenAILM):
            return OpenAIBatchAPI(backend)
    if backend.provider == "anthropic":
        from mitigate.lm import AnthropicBatchAPI, AnthropicLM

        if isinstance(backend, AnthropicLM):
            return AnthropicBatchAPI(backend)
    raise ConfigError(
        f"batch mode needs an 'openai:<model>' or 'anthropic:<model>' backend (the providers with a batch "
        f"API); got {lm.spec!r}. Run without --batch for this backend."
    )


def session_for(
    batch: BatchConfig | BatchSession | bool,
    folder: Path | None,
    *,
    progress: bool = True,
    judge: Judge | None = None,
) -> tuple[BatchSession, bool]:
    """The session a run uses for ``batch`` and whether the run owns it; with ``judge``, a backend without a
    batch API is refused before anything is written."""
    if judge is not None:
        for leaf in judge.leaves():
            batch_api_for(leaf.lm)
    if isinstance(batch, BatchSession):
        return batch, False
    if batch is not True and not isinstance(batch, BatchConfig):
        raise ConfigError(
            f"expected batch to be True, BatchConfig or a BatchSession; got {type(batch).__name__}"
        )
    options = batch if isinstance(batch, BatchConfig) else BatchConfig()
    if not progress:
        options = options.model_copy(update={"progress": False})
    return BatchSession(options, options.directory or folder), True
