"""Run a judge over many items: bounded concurrency, a crash-safe journal, progress and a usage tally.

The journal is an append-only JSONL file. Its first line names the judge's fingerprint; each
later line is one finished :class:`~mitigate.judge.Judgment`, written to the OS as soon as
it is known (a killed process loses nothing the kernel has), and fsync'd at most every
``fsync_every`` seconds and at the end (so a power cut loses at most that window, and the
event loop is not stalled by a disk flush per judgment). A run killed at any point (even SIGKILL) resumes from the journal: items
already journalled are not judged again, a half-written last line is discarded, and
judgments whose LM call failed for good are retried. Nothing in the journal holds an API
key: judgments carry only item ids, raw answers, scores and usage.
"""

from __future__ import annotations

import asyncio
import json
import os
import time
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field
from tqdm.auto import tqdm

from mitigate.batch_run import BatchOptions, BatchSession, session_for
from mitigate.data.schema import Item
from mitigate.errors import ConfigError, DataError, MitigateError
from mitigate.judge import Judge, Judgment, combine_costs
from mitigate.lm.base import Usage

JOURNAL_VERSION = 1


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

    def line(self) -> str:
        """One human-readable line."""
        cost = "unknown" if self.cost_usd is None else f"${self.cost_usd:.4f}"
        return (
            f"{self.items} items ({self.resumed} resumed, {self.judged_now} judged now): {self.ok} ok, "
            f"{self.parse_failures} parse failures, {self.errors} errors; {self.calls} LM calls "
            f"({self.cached_calls} from cache); tokens in/out {self.usage.prompt_tokens}/"
            f"{self.usage.completion_tokens} ({self.usage.cached_prompt_tokens} prompt tokens read from a cache, "
            f"{self.usage.cache_write_tokens} written to one); "
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


class Journal:
    """Append-only, fsync'd record of finished judgments for one judge configuration."""

    def __init__(
        self, path: Path | str, fingerprint: str, *, restart: bool = False, fsync_every: float = 1.0
    ) -> None:
        self.path = Path(path)
        self.fingerprint = fingerprint
        self.fsync_every = fsync_every
        self.done: dict[str, Judgment] = {}
        self._fh: Any = None
        self._last_sync = time.monotonic()
        self.path.parent.mkdir(parents=True, exist_ok=True)
        if restart and self.path.exists():
            self.path.unlink()
        if self.path.exists():
            self._load()
        else:
            self._write_line({"journal": JOURNAL_VERSION, "judge": fingerprint})

    def _load(self) -> None:
        data = self.path.read_bytes()
        # a SIGKILL can leave a partial last line: keep only complete lines
        good_end = data.rfind(b"\n") + 1
        if good_end < len(data):
            with self.path.open("r+b") as fh:
                fh.truncate(good_end)
            data = data[:good_end]
        lines = data.decode("utf-8").splitlines()
        if not lines:
            self._write_line({"journal": JOURNAL_VERSION, "judge": self.fingerprint})
            return
        try:
            header = json.loads(lines[0])
        except json.JSONDecodeError as exc:
            raise DataError(f"{self.path}:1: expected a journal header line; got invalid JSON ({exc})",
                            path=str(self.path), line=1) from None
        if header.get("judge") != self.fingerprint:
            raise ConfigError(
                f"journal {self.path} was written by another judge configuration (fingerprint "
                f"{header.get('judge')!r}); this judge is {self.fingerprint!r}. Use another run folder or restart.",
                path=str(self.path),
            )
        for n, line in enumerate(lines[1:], start=2):
            try:
                j = Judgment.model_validate_json(line)
            except ValueError as exc:
                raise DataError(f"{self.path}:{n}: expected a judgment; got an unreadable line ({exc})",
                                path=str(self.path), line=n) from None
            if j.error is None:
                self.done[j.item_id] = j
            else:
                self.done.pop(j.item_id, None)

    def _write_line(self, obj: dict[str, Any] | str) -> None:
        text = obj if isinstance(obj, str) else json.dumps(obj)
        if self._fh is None:
            self._fh = self.path.open("a", encoding="utf-8")
        self._fh.write(text + "\n")
        self._fh.flush()  # in the kernel now: survives SIGKILL of this process
        now = time.monotonic()
        if now - self._last_sync >= self.fsync_every:
            os.fsync(self._fh.fileno())
            self._last_sync = now

    def close(self) -> None:
        """Flush to disk and close the file."""
        if self._fh is not None:
            self._fh.flush()
            os.fsync(self._fh.fileno())
            self._fh.close()
            self._fh = None

    def record(self, judgment: Judgment) -> None:
        """Append one judgment (durably) and remember it."""
        self._write_line(judgment.model_dump_json())
        if judgment.error is None:
            self.done[judgment.item_id] = judgment


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
) -> RunResult:
    """Judge every item with at most ``concurrency`` in flight; resume from ``journal`` when given.

    An LM call that fails for good is recorded as a judgment with ``error`` set (and retried
    on resume); a parse failure is recorded in ``failures`` with its raw text.

    ``batch`` (True, :class:`~mitigate.batch_run.BatchOptions` or a shared
    :class:`~mitigate.batch_run.BatchSession`) sends the run's LM calls through the
    providers' batch APIs instead (see :mod:`mitigate.batch_run`); every item is started at
    once (``concurrency`` does not apply) and waits for its batch.
    """
    if concurrency < 1:
        raise ConfigError(f"The 'concurrency' parameter of run must be an int >= 1. Got {concurrency} instead.")
    items = list(items)
    ids = [it.id for it in items]
    if len(set(ids)) != len(ids):
        dup = next(i for i in ids if ids.count(i) > 1)
        raise DataError(f"expected unique item ids; {dup!r} appears more than once", item_id=dup)
    start = time.perf_counter()
    session, own_session = (session_for(batch, Path(journal).parent / "batches" if journal else None,
                                        progress=progress, judge=judge) if batch else (None, False))
    jr = Journal(journal, judge.fingerprint(), restart=restart) if journal is not None else None
    results: dict[str, Judgment] = dict(jr.done) if jr else {}
    resumed = sum(1 for i in ids if i in results)
    todo = [it for it in items if it.id not in results]
    if session is not None:  # every item starts at once and waits for its batch
        judge = session.wrap(judge)
        concurrency = max(1, len(todo))
    sem = asyncio.Semaphore(concurrency)
    bar = tqdm(total=len(items), initial=resumed, desc=desc, disable=not progress, unit="item", leave=False)

    async def one(item: Item) -> None:
        async with sem:
            try:
                judgment = await judge.judge(item)
            except MitigateError as exc:
                judgment = Judgment(item_id=item.id, error=f"{type(exc).__name__}: {exc}")
        if jr is not None:
            jr.record(judgment)
        results[item.id] = judgment
        bar.update(1)

    try:
        if session is not None:
            await session.gather(one(it) for it in todo)
        else:
            await asyncio.gather(*(one(it) for it in todo))
    finally:
        bar.close()
        if jr is not None:
            jr.close()
        if session is not None and own_session:
            await session.aclose()
    ordered = tuple(results[i] for i in ids if i in results)
    summary = summarise(ordered, resumed=resumed, seconds=time.perf_counter() - start)
    return RunResult(judgments=ordered, summary=summary)


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
    """:func:`run` from synchronous code."""
    return asyncio.run(run(judge, items, **kwargs))
