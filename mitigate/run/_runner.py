"""Run a judge over many items: bounded concurrency and memory, a crash-safe journal, progress and a usage
tally.

Every finished judgment goes to the journal at once, so a killed run resumes from it. Before the first call
every item is rendered (:func:`preflight`); a circuit breaker stops the run after ``stop_after`` failures in a
row that will repeat for every item, and until one item succeeds at most ``stop_after`` judgments are in
flight (unless its LMs already answered in this process).
"""

from __future__ import annotations

import asyncio
import contextlib
import time
import weakref
from collections import deque
from collections.abc import AsyncIterator, Iterable, Iterator, Sequence, Sized
from pathlib import Path
from types import TracebackType
from typing import Any

from pydantic import BaseModel, ConfigDict, Field
from tqdm.auto import tqdm

from mitigate.constraints import Interval, check_param
from mitigate.data import Item
from mitigate.errors import ConfigError, DataError, MitigateError, RunStoppedError
from mitigate.judge import Judge, Judgment, frame
from mitigate.lm import CacheMiss, cache_only, why_unpriced
from mitigate.registry import run_coroutine
from mitigate.run._batch_session import BatchConfig, BatchSession, find_cache, session_for
from mitigate.run._columns import StoredJudgments
from mitigate.run._journal import Journal
from mitigate.run._render import clip, preflight
from mitigate.run._tally import STOP_AFTER, CircuitBreaker, RunSummary, Tally


def window_for(concurrency: int) -> int:
    """How many items a streamed run keeps in hand by default: ``16 * concurrency``, at least 1,024."""
    return max(1024, 16 * concurrency)


class RunResult(BaseModel):
    """Judgments in item order (held, or read back from a columns file) plus the run's summary."""

    model_config = ConfigDict(frozen=True, extra="forbid")
    judgments: StoredJudgments | tuple[Judgment, ...] = Field(union_mode="left_to_right")  # never copied
    summary: RunSummary

    def by_id(self) -> dict[str, Judgment]:
        return {j.item_id: j for j in self.judgments}

    def rows(
        self, items: Sequence[Item] | None = None, criterion: str | None = None, entry: str | None = None
    ) -> list[dict[str, Any]]:
        """Every judgment in long form, with its item's document, system and human label."""
        by_id = {it.id: it for it in items or ()}
        out = []
        for j in self.judgments:
            it = by_id.get(j.item_id)
            for row in j.rows(criterion):
                crit = row["criterion"]
                human: Any = None
                if it is not None and crit is not None:
                    human = it.preference.get(crit) if it.output_b is not None else it.human.get(crit)
                out.append(
                    {
                        "entry": entry,
                        "item": j.item_id,
                        "document": it.doc_id if it else None,
                        "system": it.system if it else None,
                        **row,
                        "human": human,
                    }
                )
        return out

    def to_pandas(
        self, items: Sequence[Item] | None = None, criterion: str | None = None, entry: str | None = None
    ) -> Any:
        """:meth:`rows` as a pandas DataFrame (columns :data:`FRAME_COLUMNS`); needs the ``pandas`` extra."""
        return frame(self.rows(items, criterion, entry))


_ANSWERED: weakref.WeakSet[Any] = weakref.WeakSet()
"""LM objects that have answered a judgment in this process (see :func:`_skips_warm_up`)."""


def _judge_lms(judge: Judge) -> list[Any]:
    try:
        return [leaf.lm for leaf in judge.leaves()]
    except MitigateError:
        return []


def _cost_note(judge: Judge) -> str:
    """Why a run's cost is unknown, from the judge's backends (each named once)."""
    notes = dict.fromkeys(why_unpriced(lm) for lm in _judge_lms(judge))
    return "; ".join(notes) or "some call reported no price"


def _skips_warm_up(lms: Sequence[Any]) -> bool:
    """Whether every LM of a run has already answered a judgment in this process."""
    try:
        return bool(lms) and all(lm in _ANSWERED for lm in lms)
    except TypeError:  # an LM that cannot be weakly referenced: warm up as usual
        return False


def _remember_answered(lms: Sequence[Any]) -> None:
    for lm in lms:
        with contextlib.suppress(TypeError):
            _ANSWERED.add(lm)


_END = object()


class RunStream:
    """A run yielding ``(item, judgment)`` pairs in item order (:func:`run_stream`)."""

    def __init__(
        self,
        judge: Judge,
        items: Iterable[Item],
        *,
        concurrency: int = 8,
        journal: Path | str | None = None,
        restart: bool = False,
        progress: bool = True,
        desc: str = "judging",
        batch: BatchConfig | BatchSession | bool | None = None,
        stop_after: int = STOP_AFTER,
        check: bool = True,
        window: int | None = None,
    ) -> None:
        check_param("run", "concurrency", concurrency, [Interval(int, 1)])
        check_param("run", "window", window, [Interval(int, 1), None])
        self.breaker = CircuitBreaker(stop_after)
        self.judge = judge
        self.items = items
        self.concurrency = concurrency
        self.journal_path = None if journal is None else Path(journal)
        self.restart, self.progress, self.desc, self.batch, self.check = restart, progress, desc, batch, check
        self.window = window or window_for(concurrency)
        self.tally = Tally()
        self.stopped = self._own_session = self._entered = False
        self._one_pass = iter(items) is items  # a generator: read once, so checked as it is read
        self._start = time.perf_counter()
        self._seconds: float | None = None
        self._jr: Journal | None = None
        self._session: BatchSession | None = None
        self._bar: Any = None
        self._live: set[asyncio.Future[Any]] = set()
        self._crashed: list[BaseException] = []

    @property
    def summary(self) -> RunSummary:
        """The run's totals (final once the pairs are exhausted)."""
        seconds = self._seconds if self._seconds is not None else time.perf_counter() - self._start
        note = _cost_note(self.judge) if self.tally.cost_usd is None else None
        return self.tally.summary(seconds, note)

    async def __aenter__(self) -> RunStream:
        if self._entered:
            raise ConfigError("a RunStream is run once; make another for the next run")
        self._entered = True
        self._start = time.perf_counter()
        items = self.items
        if isinstance(items, Sequence) and not isinstance(items, str):
            deque(_unique(items), maxlen=0)
        if self.batch:
            self._session, self._own_session = session_for(
                self.batch,
                self.journal_path.parent / "batches" if self.journal_path else None,
                progress=self.progress,
                judge=self.judge,
            )
        try:
            if self.journal_path is not None:
                self._jr = Journal(
                    self.journal_path,
                    self.judge.fingerprint(),
                    restart=self.restart,
                    bounds=self.judge.score_bounds(),
                )
            if self.check and not self._one_pass:  # the items the journal holds no good judgment for
                jr = self._jr
                preflight(self.judge, (it for it in items if jr is None or it not in jr))
        except BaseException:
            await self._close()
            raise
        total = len(items) if isinstance(items, Sized) else None
        self._bar = tqdm(total=total, desc=self.desc, disable=not self.progress, unit="item", leave=False)
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self._close()

    async def _close(self) -> None:
        for task in list(self._live):
            task.cancel()
        if self._live:
            await asyncio.gather(*self._live, return_exceptions=True)
        if self._seconds is None:
            self._seconds = time.perf_counter() - self._start
        if self._bar is not None:
            bar, self._bar = self._bar, None
            bar.close()
        try:
            if self._jr is not None:
                jr, self._jr = self._jr, None
                jr.close()
        finally:
            if self._session is not None and self._own_session:
                session, self._session = self._session, None
                await session.aclose()

    def __aiter__(self) -> AsyncIterator[tuple[Item, Judgment]]:
        if not self._entered:
            raise ConfigError(
                "expected `async with run_stream(...) as stream:` before iterating over the stream"
            )
        return self._pairs()

    async def _pairs(self) -> AsyncIterator[tuple[Item, Judgment]]:
        """Start items while fewer than ``window`` are in hand; yield the first once it is finished."""
        judge, jr, session = self.judge, self._jr, self._session
        if session is not None:  # every item starts at once and waits for its batch
            judge = session.wrap(judge)
        worker = _Worker(self, judge)
        checked = isinstance(self.items, Sequence) or getattr(self.items, "unique_ids", False)
        in_hand: deque[tuple[Item, Judgment | asyncio.Future[Judgment | None]]] = deque()
        source = iter(self.items) if checked else _unique(self.items)  # ids checked as they are read
        limit = self.window if session is None else None
        driver: asyncio.Future[Any] | None = None
        try:
            while True:
                while (limit is None or len(in_hand) < limit) and not worker.stop.is_set():
                    item = next(source, _END)
                    if item is _END:
                        break
                    assert isinstance(item, Item)
                    done = jr.get(item) if jr is not None else None
                    if jr is not None:
                        self.tally.rejudged = jr.changed
                    if done is not None:
                        self._bar.update(1)
                        in_hand.append((item, done))
                        continue
                    if self._one_pass and self.check:
                        preflight(self.judge, (item,))
                    in_hand.append((item, self._start_task(worker.guarded(item))))
                if session is not None and driver is None:
                    tasks = [t for _, t in in_hand if not isinstance(t, Judgment)]
                    driver = asyncio.ensure_future(session.gather(tasks, return_exceptions=True))
                if not in_hand:
                    break
                item, head = in_hand[0]
                if isinstance(head, Judgment):
                    self.tally.add(head, resumed=True)
                else:
                    if not head.done():
                        await asyncio.wait((head,))
                    if self._crashed:
                        raise self._crashed[0]
                    if head.cancelled():  # the run stopped before this item finished: it is not judged
                        in_hand.popleft()
                        continue
                    found = head.result()
                    if found is None:  # stopped before it started
                        in_hand.popleft()
                        continue
                    head = found
                    self.tally.add(head)
                in_hand.popleft()
                yield item, head
            if driver is not None:
                await driver
            if self._crashed:
                raise self._crashed[0]
        finally:
            for _, pending in in_hand:
                if not isinstance(pending, Judgment):
                    pending.cancel()
            if driver is not None and not driver.done():
                driver.cancel()
        self._seconds = time.perf_counter() - self._start
        if worker.stop.is_set():
            self.stopped = True
            raise self._stopped_error()

    def _start_task(self, coro: Any) -> asyncio.Future[Judgment | None]:
        task = asyncio.ensure_future(coro)
        self._live.add(task)
        task.add_done_callback(self._live.discard)
        return task

    def cancel_others(self) -> None:
        """Cancel every judgment in flight but the current one (the run stops, or crashed)."""
        me = asyncio.current_task()
        for task in list(self._live):
            if task is not me:
                task.cancel()

    def _stopped_error(self) -> RunStoppedError:
        summary = self.summary
        breaker = self.breaker
        kept = ""
        if self.journal_path is not None:
            done = (
                f"the {summary.ok} judgments made are kept in {self.journal_path}"
                if summary.ok
                else "nothing was judged"
            )
            kept = f"; {done}: fix the cause and rerun to resume"
        error = RunStoppedError(
            f"run stopped after {breaker.count} failed judgment{'s' if breaker.count != 1 else ''} in a row, "
            f"with a failure that would repeat for every item: {clip(breaker.cause or '', 400)}{kept}",
            cause=breaker.cause,
        )
        error.summary = summary  # type: ignore[attr-defined]
        return error


def _unique(items: Iterable[Item]) -> Iterator[Item]:
    seen: set[str] = set()
    for it in items:
        if it.id in seen:
            raise DataError(f"expected unique item ids; {it.id!r} appears more than once", item_id=it.id)
        seen.add(it.id)
        yield it


class _Worker:
    """Judges one item at a time under the run's concurrency, warm-up and circuit breaker; an item whose whole
    judgment is cached is served at once, outside the limit (proving nothing about the backend)."""

    def __init__(self, run: RunStream, judge: Judge) -> None:
        self.run = run
        self.judge = judge
        self.breaker = run.breaker
        batch = run._session is not None
        self.sem = asyncio.Semaphore(run.concurrency if not batch else 2**31)
        self.slots = min(run.concurrency, max(1, self.breaker.stop_after))
        self.warm = asyncio.Semaphore(self.slots)
        self.opened = asyncio.Event()
        self.lms = _judge_lms(judge)
        if self.breaker.stop_after == 0 or batch or _skips_warm_up(self.lms):
            self.opened.set()
        self.stop = asyncio.Event()
        self.held = 0  # warm-up slots kept by permanent failures in a row (see below)
        self.cached = not batch and any(find_cache(lm) is not None for lm in self.lms)

    def _finished(self, item: Item, judgment: Judgment) -> Judgment:
        jr = self.run._jr
        if jr is not None:
            jr.record(item, judgment)
        self.run._bar.update(1)
        return judgment

    async def judge_one(self, item: Item) -> Judgment | None:
        if self.stop.is_set():
            return None
        try:
            judgment = await self.judge.judge(item)
        except MitigateError as exc:
            judgment = Judgment(item_id=item.id, error=f"{type(exc).__name__}: {exc}")
            if self.breaker.failure(exc):
                self.stop.set()
        else:
            self.breaker.success()
            if not self.opened.is_set():
                self.opened.set()
                _remember_answered(self.lms)
        return self._finished(item, judgment)

    async def from_cache(self, item: Item) -> Judgment | None:
        """Judge ``item`` from the cache alone; None when some call it needs is not stored."""
        try:
            with cache_only():
                judgment = await self.judge.judge(item)
        except (CacheMiss, MitigateError):  # a failure is judged again below, recorded as any other
            return None
        return None if judgment.error is not None else self._finished(item, judgment)

    async def one(self, item: Item) -> Judgment | None:
        if self.cached and not self.stop.is_set():
            found = await self.from_cache(item)
            if found is not None:
                return found
        async with self.sem:
            if not self.opened.is_set():
                await self.warm.acquire()
                keep = False
                try:
                    if not self.opened.is_set():
                        before = self.breaker.count
                        result = await self.judge_one(item)
                        # a permanent failure in a row keeps its slot, so a run that cannot succeed makes
                        # stop_after requests in all, not stop_after plus those started while they failed
                        keep = (
                            not self.opened.is_set()
                            and self.breaker.count > before
                            and self.held < min(self.breaker.count, self.slots - 1)
                        )
                        return result
                finally:
                    if keep:
                        self.held += 1
                    else:
                        self.warm.release()
                    while self.held > (0 if self.opened.is_set() else self.breaker.count):
                        self.held -= 1
                        self.warm.release()
            return await self.judge_one(item)

    async def guarded(self, item: Item) -> Judgment | None:
        try:
            result = await self.one(item)
        except asyncio.CancelledError:
            raise
        # a journal that cannot be written, a bug: stop everything, then raise it
        except BaseException as exc:
            self.run._crashed.append(exc)
            self.stop.set()
            self.run.cancel_others()
            raise
        if self.stop.is_set():
            self.run.cancel_others()
        return result


def run_stream(judge: Judge, items: Iterable[Item], **options: Any) -> RunStream:
    """Judge ``items`` as :func:`run` does, yielding ``(item, judgment)`` pairs in item order as they are
    ready: ``async with run_stream(...) as stream: async for item, judgment in stream``.

    At most ``window`` items (default :func:`window_for`) are in hand; a one-pass iterator is checked item by
    item as it is read. A stopped run yields every judgment finished before, then raises
    :class:`~mitigate.errors.RunStoppedError`; ``stream.summary`` holds the totals.
    """
    return RunStream(judge, items, **options)


async def run(
    judge: Judge,
    items: Sequence[Item] | Iterable[Item],
    *,
    concurrency: int = 8,
    journal: Path | str | None = None,
    restart: bool = False,
    progress: bool = True,
    desc: str = "judging",
    batch: BatchConfig | BatchSession | bool | None = None,
    stop_after: int = STOP_AFTER,
    check: bool = True,
) -> RunResult:
    """Judge every item with at most ``concurrency`` in flight; resume from ``journal`` when given.

    An LM call that fails for good is a judgment with ``error`` set (retried on resume). ``stop_after``
    permanent failures in a row raise :class:`~mitigate.errors.RunStoppedError` (0: never), the judgments made
    before on its ``result``. ``batch`` (True, a :class:`~mitigate.run.BatchConfig` or a shared
    :class:`~mitigate.run.BatchSession`) sends the calls through the providers' batch APIs.
    """
    listed = items if isinstance(items, Sequence) else list(items)
    judgments: list[Judgment] = []
    stream = RunStream(
        judge,
        listed,
        concurrency=concurrency,
        journal=journal,
        restart=restart,
        progress=progress,
        desc=desc,
        batch=batch,
        stop_after=stop_after,
        check=check,
    )
    try:
        async with stream:
            async for _, judgment in stream:
                judgments.append(judgment)
    except RunStoppedError as error:
        if stream.stopped:
            # the judgments made before the stop ride on the error (read by callers that catch it)
            stopped = RunResult(judgments=tuple(judgments), summary=stream.summary)
            error.result = stopped  # type: ignore[attr-defined]
        raise
    return RunResult(judgments=tuple(judgments), summary=stream.summary)


def run_sync(judge: Judge, items: Sequence[Item], **kwargs: Any) -> RunResult:
    """:func:`run` from synchronous code (ConfigError inside a running event loop: await :func:`run`)."""
    return run_coroutine(run(judge, items, **kwargs), what="run_sync()", instead="run(judge, items)")
