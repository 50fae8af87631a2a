"""Run a judge over many items: bounded concurrency, a crash-safe journal, progress and a usage tally.

The journal is an append-only JSONL file. Its first line names the judge's fingerprint; each
later line is one finished :class:`~mitigate.judge.Judgment`, written to the OS as soon as
it is known (a killed process loses nothing the kernel has), and fsync'd at most every
``fsync_every`` seconds and at the end (so a power cut loses at most that window, and the
event loop is not stalled by a disk flush per judgment). A run killed at any point (even
SIGKILL) resumes from the journal: items already journalled are not judged again, damaged or
blank lines at its end (a write cut short) are trimmed and their items redone, and judgments
whose LM call failed for good are retried. Nothing in the journal holds an API key:
judgments carry only item ids, raw answers, scores and usage.

A journal is held by one process at a time: a lock file beside it (``<journal>.lock``,
``flock``) makes a second process on the same journal stop at once with
:class:`~mitigate.errors.RunBusyError` instead of judging (and paying for) every item again.

Failing fast
    Before the first LM call, every item is rendered with every prompt of the judge, so a slot
    no item can fill is one :class:`~mitigate.errors.DataError`, not one error per item. During
    the run a circuit breaker watches for failures that will repeat for every item: the server
    refusing the key or the model (HTTP 400/401/403/404/422), a backend that cannot do what is
    asked, a server unreachable on every attempt, every attempt failing with the same 5xx, a server
    closing every connection or breaking off every answer, a request past its deadline (a hung or
    trickling server), a redirect (API calls are not redirected), the same kind of malformed
    answer (truncated JSON, HTML, an empty body, ``content: null``, no choices, a body over the
    size cap, a field that is not what the API says, a status line or headers that are not
    HTTP), or a ``Retry-After`` longer than the retry policy's patience. ``stop_after`` such failures in a
    row (one for an unreachable server or a too-long ``Retry-After``, whose every attempt already
    failed) stop the run with :class:`~mitigate.errors.RunStoppedError`; the journal keeps
    everything finished before. Until the first item succeeds at most ``stop_after`` judgments are
    in flight, so a run that cannot succeed costs ``stop_after`` requests, not ``concurrency``
    (about one LM latency of a healthy run). A run whose LM objects already answered a judgment
    in this process (the second pipeline of a compare, a search's next candidate) skips this
    warm-up; batch mode has none either (every request goes in the first batch).

Size: over 600 lines because the run loop keeps what it decides on a failure beside it (preflight,
the circuit breaker, resuming from the journal).
"""

from __future__ import annotations

import asyncio
import contextlib
import time
import weakref
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field
from tqdm.auto import tqdm

from mitigate.data.schema import Item
from mitigate.errors import (
    CapabilityError,
    ConfigError,
    DataError,
    LMCallError,
    MitigateError,
    RunStoppedError,
    TransientLMError,
)
from mitigate.judge import Judge, Judgment, combine_costs
from mitigate.lm.base import Usage
from mitigate.lm.cache import CachedLM, CacheMiss, cache_only
from mitigate.lm.wrapper import WrapperLM
from mitigate.registry import run_coroutine
from mitigate.run.batch_session import BatchOptions, BatchSession, session_for
from mitigate.run.journal import Journal

STOP_AFTER = 3
"""Default of ``run(stop_after=...)``: repeated permanent failures in a row that stop a run."""
PERMANENT_STATUS = frozenset({400, 401, 403, 404, 405, 410, 422})
"""HTTP statuses that will be answered to every request of a run (key, model or request body refused)."""


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


class RunResult(BaseModel):
    """Judgments in item order plus the run's summary."""

    model_config = ConfigDict(frozen=True, extra="forbid")
    judgments: tuple[Judgment, ...]
    summary: RunSummary

    def by_id(self) -> dict[str, Judgment]:
        """Judgments keyed by item id."""
        return {j.item_id: j for j in self.judgments}

    def rows(self, items: Sequence[Item] | None = None, criterion: str | None = None,
             entry: str | None = None) -> list[dict[str, Any]]:
        """Every judgment in long form (:meth:`Judgment.rows`), with the item's document, system and human
        label.

        ``items`` (the judged items, matched by id) fills ``document``, ``system`` and
        ``human`` (the human score on ``criterion``, or the gold preference of a pairwise
        item); ``entry`` names the judge in the ``entry`` column.
        """
        by_id = {it.id: it for it in items or ()}
        out = []
        for j in self.judgments:
            it = by_id.get(j.item_id)
            for row in j.rows(criterion):
                crit = row["criterion"]
                human: Any = None
                if it is not None and crit is not None:
                    human = it.preference.get(crit) if it.output_b is not None else it.human.get(crit)
                out.append({"entry": entry, "item": j.item_id, "document": it.doc_id if it else None,
                            "system": it.system if it else None, **row, "human": human})
        return out

    def to_pandas(self, items: Sequence[Item] | None = None, criterion: str | None = None,
                  entry: str | None = None) -> Any:
        """:meth:`rows` as a pandas DataFrame (columns :data:`FRAME_COLUMNS`); needs the ``pandas`` extra."""
        return frame(self.rows(items, criterion, entry))


FRAME_COLUMNS = ("entry", "item", "document", "system", "criterion", "order", "score", "verdict", "human",
                 "raw",
                 "failure", "flags")
"""The columns of the long-form tables of judge and compare results."""


def frame(rows: Sequence[dict[str, Any]], columns: Sequence[str] = FRAME_COLUMNS) -> Any:
    """``rows`` as a pandas DataFrame with ``columns`` (default :data:`FRAME_COLUMNS`); a one-line ConfigError
    when
    pandas is missing."""
    try:
        import pandas as pd
    except ImportError:
        raise ConfigError("to_pandas() needs pandas; it is not installed (pip install "
                          "'mitigate[pandas]')") from None
    return pd.DataFrame(list(rows), columns=list(columns))


def _clip(text: str, limit: int = 300) -> str:
    flat = " ".join(str(text).split())
    return flat if len(flat) <= limit else flat[: limit - 3] + "..."




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
        said = "its rate-limit headers" if getattr(last, "context",
                                                   {}).get("reason") == "rate-limit" else "Retry-After"
        return ("retry-after", f"the server asked to wait {retry_after:g} s before retrying ({said}), longer "
                f"than this run's patience of {patience:g} s; try again later or allow a longer wait", True)
    last = exc.context.get("last_error")
    attempts = exc.context.get("attempts")
    if isinstance(last, TransientLMError) and isinstance(attempts, int):
        reason = last.context.get("reason")
        if reason == "connection":
            return "unreachable", f"could not connect on any of {attempts} attempts: {last.message}", True
        if reason == "closed":
            return ("closed", f"the server closed the connection on every one of {attempts} attempts: "
                    f"{last.message}", False)
        if reason == "cut":
            return "cut", (f"the server broke off its answer on every one of {attempts} attempts: "
                           f"{last.message}"), False
        if reason == "timeout":
            return "timeout", f"every one of {attempts} attempts timed out: {last.message}", False
        if last.status is not None:
            return f"exhausted-{last.status}", (f"every one of {attempts} attempts failed: "
                                                f"{last.message}"), False
    return None


class CircuitBreaker:
    """Counts permanent failures in a row (see :func:`permanent_cause`); trips after ``stop_after``.

    A judgment without an error resets the count; an error that is not permanent (one item's text
    too long, a parse of a bad answer) neither counts nor resets. ``stop_after=0`` never trips.
    """

    def __init__(self, stop_after: int = STOP_AFTER) -> None:
        if isinstance(stop_after, bool) or not isinstance(stop_after, int) or stop_after < 0:
            raise ConfigError("The 'stop_after' parameter of run must be an int >= 0. Got "
                              f"{stop_after!r} instead.")
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


_ANSWERED: weakref.WeakSet[Any] = weakref.WeakSet()
"""LM objects that have answered a judgment in this process (see :func:`_skips_warm_up`)."""


def _judge_lms(judge: Judge) -> list[Any]:
    """The LM object of every prompt judge inside ``judge`` (none for a judge without prompts)."""
    try:
        return [leaf.lm for leaf in judge.leaves()]
    except MitigateError:
        return []


def _cost_note(judge: Judge) -> str:
    """Why a run's cost is unknown, from the judge's backends (each named once)."""
    from mitigate.lm.pricing import why_unpriced

    notes = dict.fromkeys(why_unpriced(lm) for lm in _judge_lms(judge))
    return "; ".join(notes) or "some call reported no price"


def _caches(lms: Sequence[Any]) -> bool:
    """Whether some LM of the judge answers from an on-disk cache (a :class:`CachedLM` among its wrappers)."""
    for lm in lms:
        for _ in range(32):
            if isinstance(lm, CachedLM):
                return True
            if not isinstance(lm, WrapperLM):
                break
            lm = lm.inner
    return False


def _skips_warm_up(lms: Sequence[Any]) -> bool:
    """Whether every LM of a run has already answered a judgment in this process.

    The warm-up guards against sending ``concurrency`` requests to a backend that refuses them
    all; an LM object that answered an earlier run (compare's pipelines, a search's candidates,
    a benchmark's warm-up run) has shown it does not, so its later runs start at full
    concurrency. The circuit breaker still stops them on ``stop_after`` permanent failures.
    """
    try:
        return bool(lms) and all(lm in _ANSWERED for lm in lms)
    except TypeError:  # an LM that cannot be weakly referenced: warm up as usual
        return False


def _remember_answered(lms: Sequence[Any]) -> None:
    for lm in lms:
        with contextlib.suppress(TypeError):
            _ANSWERED.add(lm)


def _max_prompt_chars(lm: Any) -> int | None:
    """The prompt-size cap of a network backend under its wrappers (None for a backend without one)."""
    for _ in range(8):
        limits = getattr(lm, "limits", None)
        if limits is not None and isinstance(getattr(limits, "max_prompt_chars", None), int):
            return int(limits.max_prompt_chars)
        lm = getattr(lm, "inner", None)
        if lm is None:
            return None
    return None


def preflight(judge: Judge, items: Sequence[Item]) -> None:
    """Render every item with every prompt of ``judge``; one DataError when some cannot be rendered, or give a
    prompt longer than the backend's ``max_prompt_chars`` (:class:`~mitigate.lm.http.Limits`).

    A slot that no field of an item fills fails for that item on every attempt, so it is found
    here, before the first LM call, instead of as one error per judgment. A judge without
    prompts (a replayed released judge) has nothing to check.
    """
    try:
        leaves = judge.leaves()
    except MitigateError:  # a judge without prompts (a replayed released judge): nothing to render
        return
    bad: list[tuple[Item, MitigateError]] = []
    caps = [_max_prompt_chars(leaf.lm) for leaf in leaves]
    too_long: list[tuple[Item, int, int]] = []
    for item in items:
        for leaf, cap in zip(leaves, caps, strict=True):
            try:
                messages = leaf.prompt.render(item)
            except MitigateError as exc:
                bad.append((item, exc))
                break
            chars = sum(len(m.content) for m in messages)
            if cap is not None and chars > cap:
                too_long.append((item, chars, cap))
                break
    if too_long:
        item, chars, cap = too_long[0]
        raise DataError(
            f"{len(too_long)} of {len(items)} items give a prompt longer than max_prompt_chars={cap:,} "
            f"(--max-prompt-chars), so no LM call was made; the first, {item.id!r}, gives {chars:,} "
            f"characters (about {chars // 4:,} tokens)", item_id=item.id)
    if bad:
        item, refused = bad[0]
        raise DataError(
            f"{len(bad)} of {len(items)} items cannot be put into the judge's prompt, so no LM call was "
            f"made; the first, {item.id!r}: {_clip(refused.message, 400)}",
            item_id=item.id,
        )


async def run(
    judge: Judge,
    items: Sequence[Item] | Iterable[Item],
    *,
    concurrency: int = 8,
    journal: Path | str | None = None,
    restart: bool = False,
    progress: bool = True,
    desc: str = "judging",
    batch: BatchOptions | BatchSession | bool | None = None,
    stop_after: int = STOP_AFTER,
    check: bool = True,
) -> RunResult:
    """Judge every item with at most ``concurrency`` in flight; resume from ``journal`` when given.

    An LM call that fails for good is recorded as a judgment with ``error`` set (and retried
    on resume); a parse failure is recorded in ``failures`` with its raw text. ``check``
    renders every item before the first call (:func:`preflight`). ``stop_after`` permanent
    failures in a row raise :class:`~mitigate.errors.RunStoppedError` (0: never stop); the
    judgments finished before are in the journal and on the error's ``result``.

    ``batch`` (True, :class:`~mitigate.run.batch_session.BatchOptions` or a shared
    :class:`~mitigate.run.batch_session.BatchSession`) sends the run's LM calls through the
    providers' batch APIs instead (see :mod:`mitigate.run.batch_session`); every item is started at
    once (``concurrency`` and the warm-up do not apply) and waits for its batch; the circuit
    breaker still stops the run on ``stop_after`` permanent failures in a row.
    """
    if isinstance(concurrency, bool) or not isinstance(concurrency, int) or concurrency < 1:
        raise ConfigError("The 'concurrency' parameter of run must be an int >= 1. Got "
                          f"{concurrency!r} instead.")
    breaker = CircuitBreaker(stop_after)
    items = list(items)
    ids = [it.id for it in items]
    if len(set(ids)) != len(ids):
        dup = next(i for i in ids if ids.count(i) > 1)
        raise DataError(f"expected unique item ids; {dup!r} appears more than once", item_id=dup)
    start = time.perf_counter()
    session, own_session = (session_for(batch, Path(journal).parent / "batches" if journal else None,
                                        progress=progress, judge=judge) if batch else (None, False))
    jr: Journal | None = None
    try:
        jr = Journal(journal, judge.fingerprint(), restart=restart,
                     bounds=judge.score_bounds()) if journal is not None else None
        results: dict[str, Judgment] = dict(jr.done) if jr else {}
        resumed = sum(1 for i in ids if i in results)
        todo = [it for it in items if it.id not in results]
        if check:
            preflight(judge, todo)
        if session is not None:  # every item starts at once and waits for its batch
            judge = session.wrap(judge)
            concurrency = max(1, len(todo))
        stopped = await _judge_all(judge, todo, results, jr, breaker, concurrency=concurrency,
                                   session=session,
                                   bar=tqdm(total=len(items), initial=resumed, desc=desc,
                                            disable=not progress,
                                            unit="item", leave=False))
    finally:
        if jr is not None:
            jr.close()
        if session is not None and own_session:
            await session.aclose()
    ordered = tuple(results[i] for i in ids if i in results)
    summary = summarise(ordered, resumed=resumed, seconds=time.perf_counter() - start)
    if summary.cost_usd is None:
        summary = summary.model_copy(update={"cost_note": _cost_note(judge)})
    result = RunResult(judgments=ordered, summary=summary)
    if stopped:
        kept = ""
        if journal is not None:
            done = (f"the {summary.ok} judgments made are kept in {journal}" if summary.ok
                    else "nothing was judged")
            kept = f"; {done}: fix the cause and rerun to resume"
        error = RunStoppedError(
            f"run stopped after {breaker.count} failed judgment{'s' if breaker.count != 1 else ''} in a row, "
            f"with a failure that would repeat for every item: {_clip(breaker.cause or '', 400)}{kept}",
            cause=breaker.cause,
        )
        error.result = result  # type: ignore[attr-defined]
        raise error
    return result


async def _judge_all(
    judge: Judge,
    todo: Sequence[Item],
    results: dict[str, Judgment],
    jr: Journal | None,
    breaker: CircuitBreaker,
    *,
    concurrency: int,
    bar: Any,
    session: BatchSession | None = None,
) -> bool:
    """Judge ``todo`` into ``results`` (and the journal); True when the circuit breaker stopped the run.

    Until one judgment succeeds, at most ``stop_after`` are in flight (a run that cannot succeed
    stops after its first ``stop_after`` requests, not after ``concurrency`` of them), unless
    every LM of the judge already answered in this process (:func:`_skips_warm_up`). With a
    batch ``session`` every item starts at once (a warm-up would put the first items alone in a
    batch and make the rest wait for it) and the session carries their requests.

    When the judge's LMs cache their calls, every item is first tried from the cache alone
    (:func:`~mitigate.lm.cache.cache_only`), outside the concurrency limit: an item whose whole
    judgment is stored is served and counted at once, however many items ahead of it wait for
    calls; an item that needs a call takes its turn as usual. A cache hit proves nothing about
    the backend, so it neither opens the warm-up nor resets the circuit breaker.
    """
    sem = asyncio.Semaphore(concurrency)
    slots = min(concurrency, max(1, breaker.stop_after))
    warm = asyncio.Semaphore(slots)
    opened = asyncio.Event()
    lms = _judge_lms(judge)
    if breaker.stop_after == 0 or session is not None or _skips_warm_up(lms):
        opened.set()
    stop = asyncio.Event()

    async def judge_one(item: Item) -> None:
        if stop.is_set():
            return
        try:
            judgment = await judge.judge(item)
        except MitigateError as exc:
            judgment = Judgment(item_id=item.id, error=f"{type(exc).__name__}: {exc}")
            if breaker.failure(exc):
                stop.set()
        else:
            breaker.success()
            if not opened.is_set():
                opened.set()
                _remember_answered(lms)
        if jr is not None:
            jr.record(judgment)
        results[item.id] = judgment
        bar.update(1)

    held = [0]  # warm-up slots kept by permanent failures in a row (see below)
    cached = session is None and _caches(lms)

    async def from_cache(item: Item) -> bool:
        """Judge ``item`` from the cache alone; False when some call it needs is not stored."""
        try:
            with cache_only():
                judgment = await judge.judge(item)
        except CacheMiss:
            return False
        except MitigateError:  # judged again below, where its failure is recorded as any other
            return False
        if judgment.error is not None:
            return False
        if jr is not None:
            jr.record(judgment)
        results[item.id] = judgment
        bar.update(1)
        return True

    async def one(item: Item) -> None:
        if cached and not stop.is_set() and await from_cache(item):
            return
        async with sem:
            if not opened.is_set():
                await warm.acquire()
                keep = False
                try:
                    if not opened.is_set():
                        before = breaker.count
                        await judge_one(item)
                        # a permanent failure in a row keeps its slot, so a run that cannot succeed makes
                        # stop_after requests in all, not stop_after plus those started while they failed
                        keep = not opened.is_set() and breaker.count > before and held[0] < min(breaker.count,
                                                                                                slots - 1)
                        return
                finally:
                    if keep:
                        held[0] += 1
                    else:
                        warm.release()
                    while held[0] > (0 if opened.is_set() else breaker.count):  # a success or another kind
                        held[0] -= 1
                        warm.release()
            await judge_one(item)

    tasks: list[asyncio.Future[None]] = []
    crashed: list[BaseException] = []

    def cancel_others() -> None:
        me = asyncio.current_task()
        for t in tasks:
            if t is not me:
                t.cancel()

    async def guarded(item: Item) -> None:
        try:
            await one(item)
        except asyncio.CancelledError:
            raise
        # a journal that cannot be written, a bug: stop everything, then raise it
        except BaseException as exc:
            crashed.append(exc)
            stop.set()
            cancel_others()
            raise
        if stop.is_set():
            cancel_others()

    tasks = [asyncio.ensure_future(guarded(it)) for it in todo]
    try:
        if session is not None:
            await session.gather(tasks, return_exceptions=True)
        else:
            await asyncio.gather(*tasks, return_exceptions=True)
    finally:
        for t in tasks:
            t.cancel()
        bar.close()
    if crashed:
        raise crashed[0]
    return stop.is_set()


def summarise(judgments: Sequence[Judgment], *, resumed: int = 0, seconds: float = 0.0) -> RunSummary:
    """Totals over judgments (usage and cost are counted for resumed ones too)."""
    usage = Usage()
    for j in judgments:
        usage = usage + j.usage
    return RunSummary(
        items=len(judgments),
        judged_now=len(judgments) - resumed,
        resumed=resumed,
        ok=sum(1 for j in judgments if j.ok),
        parse_failures=sum(len(j.failures) for j in judgments),
        errors=sum(1 for j in judgments if j.error is not None),
        calls=sum(j.calls for j in judgments),
        cached_calls=sum(j.cached_calls for j in judgments),
        usage=usage,
        cost_usd=combine_costs([j.cost_usd for j in judgments]),
        seconds=seconds,
    )


def run_sync(judge: Judge, items: Sequence[Item], **kwargs: Any) -> RunResult:
    """:func:`run` from synchronous code (a ConfigError inside a running event loop: await :func:`run`
    there)."""
    return run_coroutine(run(judge, items, **kwargs), what="run_sync()", instead="run(judge, items)")
