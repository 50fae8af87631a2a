"""An on-disk cache of LM calls (SQLite), the :class:`CachedLM` wrapper, and the call budget that spends it.

The key is the SHA-256 of (backend ``identity()``, model, ``LMRequest.key()``): no secret reaches the cache,
and requests sampled at temperature > 0 are cached too (vary ``seed`` or use ``n`` for new samples). Identical
requests in flight are coalesced. A cache never fails a run: damage is a miss, reported once as a
:class:`~mitigate.errors.CacheDamageWarning`, and a cache that cannot be used once per cause as a
:class:`~mitigate.errors.CacheUnavailableWarning`.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import json
import sqlite3
import threading
import time
import warnings
from collections.abc import Awaitable, Callable, Iterator
from contextvars import ContextVar
from pathlib import Path
from typing import TypeVar

from mitigate.errors import CacheDamageWarning, CacheUnavailableWarning, ConfigError, MitigateError
from mitigate.lm._base import LM, LMRequest, LMResponse, WrapperLM
from mitigate.paths import cache_dir, path_kind

DEFAULT_FILENAME = "lm_cache.sqlite"
T = TypeVar("T")

_CACHE_ONLY: ContextVar[bool] = ContextVar("mitigate_cache_only", default=False)


class CacheMiss(BaseException):
    """A request :func:`cache_only` asked for is not stored (a BaseException: no failure)."""


@contextlib.contextmanager
def cache_only() -> Iterator[None]:
    """Within this block every :class:`CachedLM` answers from its cache or raises :class:`CacheMiss`."""
    token = _CACHE_ONLY.set(True)
    try:
        yield
    finally:
        _CACHE_ONLY.reset(token)


_SCHEMA = """
CREATE TABLE IF NOT EXISTS calls (
    key TEXT PRIMARY KEY,
    identity TEXT NOT NULL,
    model TEXT NOT NULL,
    response TEXT NOT NULL,
    created REAL NOT NULL
)
"""


class LMCache:
    """A SQLite file of LM responses (``path``: a file or its folder; None:
    :func:`mitigate.paths.cache_dir`)."""

    def __init__(self, path: str | Path | None = None) -> None:
        target = Path(path) if path is not None else cache_dir()
        if target.is_dir() or (path is None) or target.suffix == "":
            target = target / DEFAULT_FILENAME
        try:
            target.parent.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise ConfigError(f"expected a writable cache directory at {target.parent}; got {exc}") from exc
        if target.is_dir():
            raise ConfigError(
                f"expected an SQLite LM cache file at {target}; got a directory", path=str(target)
            )
        kind = path_kind(target)
        if kind not in (None, "a regular file"):  # a FIFO or a device: refused by what it is, never opened
            raise ConfigError(f"expected an SQLite LM cache file at {target}; it is {kind}", path=str(target))
        self.path = target
        self._lock = threading.Lock()
        self._damaged: str | None = None  # why the file is unusable (then every look-up is a miss)
        self._warned: set[str] = set()  # the causes reported so far (each once)
        try:
            self._conn = sqlite3.connect(
                str(target), timeout=30.0, check_same_thread=False, isolation_level=None
            )
            self._conn.execute("PRAGMA journal_mode=WAL")
            self._conn.execute("PRAGMA synchronous=NORMAL")
            self._conn.execute(_SCHEMA)
        except sqlite3.OperationalError as exc:  # cannot open or write the file at all: the user must act
            cause = _trouble(exc)
            said = _TROUBLE[cause] if cause in _TROUBLE else str(exc)
            raise ConfigError(
                f"expected a readable and writable SQLite LM cache at {target}; could not open "
                f"it: {said} ({exc}); pass --no-cache to run without one",
                path=str(target),
            ) from exc
        except sqlite3.DatabaseError as exc:  # the file is damaged (not a database, malformed): run uncached
            self._damaged = str(exc)
            self._warn(exc)

    def __repr__(self) -> str:
        return f"LMCache({str(self.path)!r})"

    def __reduce__(self) -> tuple[type[LMCache], tuple[str]]:
        """Pickled as its file: a worker process (Ray, Spark) opens the same cache."""
        return (LMCache, (str(self.path.absolute()),))

    @staticmethod
    def make_key(identity: str, model: str, request_key: str) -> str:
        blob = json.dumps([identity, model, request_key], ensure_ascii=False)
        return hashlib.sha256(blob.encode("utf-8")).hexdigest()

    @property
    def damaged(self) -> bool:
        """True when the file could not be used as a database (every look-up is then a miss)."""
        return self._damaged is not None

    def _warn(self, exc: BaseException) -> None:
        cause = _trouble(exc)
        if cause in self._warned:
            return
        self._warned.add(cause)
        if cause == "damaged":
            said = f"is damaged ({exc}); damaged entries are treated as misses and called again (delete the "
            said += "file to start a fresh cache)"
        else:
            said = f"could not be used: {_TROUBLE[cause]} ({exc}); the answers concerned are not cached, the "
            said += "run goes on and the file is left as it is"
        kind = CacheDamageWarning if cause == "damaged" else CacheUnavailableWarning
        warnings.warn(f"the LM cache {self.path} {said}", kind, stacklevel=3)

    def _guarded(self, default: T, op: Callable[[], T]) -> T:
        """``op()`` under the lock; ``default`` (with one warning per cause) when SQLite fails."""
        if self._damaged is not None:
            return default
        try:
            with self._lock:
                return op()
        except sqlite3.DatabaseError as exc:
            self._warn(exc)
            return default

    def get_sync(self, key: str) -> str | None:
        """The stored JSON for ``key``, or None (also when the entry cannot be read)."""

        def op() -> str | None:
            row = self._conn.execute("SELECT response FROM calls WHERE key = ?", (key,)).fetchone()
            # a non-text entry fails to decode: a miss
            return None if row is None else row[0] if isinstance(row[0], str) else repr(row[0])

        return self._guarded(None, op)

    def put_sync(self, key: str, identity: str, model: str, payload: str, *, replace: bool = False) -> None:
        """Store ``payload`` under ``key`` unless an entry exists (then only with ``replace``)."""
        verb = "INSERT OR REPLACE" if replace else "INSERT OR IGNORE"

        def op() -> None:
            self._conn.execute(
                f"{verb} INTO calls (key, identity, model, response, created) VALUES (?, ?, ?, ?, ?)",
                (key, identity, model, payload, time.time()),
            )

        self._guarded(None, op)

    def note_damaged_entry(self, key: str, exc: BaseException) -> None:
        """Report (once) that the entry under ``key`` did not read as a response; it is then a miss."""
        self._warn(ValueError(f"entry {key[:12]}... does not read as a response: {type(exc).__name__}"))

    def __len__(self) -> int:
        return self._guarded(0, lambda: int(self._conn.execute("SELECT COUNT(*) FROM calls").fetchone()[0]))

    def clear(self, identity: str | None = None) -> int:
        """Delete all entries, or those of one backend identity; returns how many were deleted."""

        def op() -> int:
            if identity is None:
                return int(self._conn.execute("DELETE FROM calls").rowcount)
            return int(self._conn.execute("DELETE FROM calls WHERE identity = ?", (identity,)).rowcount)

        return self._guarded(0, op)

    def close(self) -> None:
        with self._lock:
            self._conn.close()

    async def get(self, key: str) -> str | None:
        """The stored JSON for ``key``, or None (runs in a worker thread)."""
        return await asyncio.to_thread(self.get_sync, key)

    async def put(self, key: str, identity: str, model: str, payload: str, *, replace: bool = False) -> None:
        """Store ``payload`` under ``key`` (runs in a worker thread)."""
        await asyncio.to_thread(lambda: self.put_sync(key, identity, model, payload, replace=replace))


_TROUBLE = {
    "full": "no space left on the device (ENOSPC: SQLite reports the database or disk is full); "
    "free some space",
    "io": "a disk I/O error",
    "busy": "another process held its lock for more than 30 s",
    "readonly": "the file or its folder is read-only",
}
"""What a cause of :func:`_trouble` that is not damage means, in words."""
_CODES = {sqlite3.SQLITE_FULL: "full", sqlite3.SQLITE_IOERR: "io", sqlite3.SQLITE_READONLY: "readonly"}
_CODES |= dict.fromkeys((sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED), "busy")
_WORDS = {"disk is full": "full", "no space": "full", "disk i/o": "io", "locked": "busy"}
_WORDS |= dict.fromkeys(("readonly", "read-only"), "readonly")  # read in the text of an error without a code


def _trouble(exc: BaseException) -> str:
    """Why SQLite failed: a key of :data:`_TROUBLE`, or ``"damaged"``."""
    code = getattr(exc, "sqlite_errorcode", None)
    # an extended code keeps its primary code in the low byte
    if isinstance(code, int) and (code & 0xFF) in _CODES:
        return _CODES[code & 0xFF]
    text = str(exc).lower()
    return next((cause for words, cause in _WORDS.items() if words in text), "damaged")


class CachedLM(WrapperLM):
    """Serves repeated requests and log-likelihoods from an :class:`LMCache` (a hit: ``cached=True``)."""

    def __init__(self, inner: LM, cache: LMCache | str | Path | None = None) -> None:
        super().__init__(inner)
        self.cache = cache if isinstance(cache, LMCache) else LMCache(cache)
        self.hits = self.misses = 0
        self._inflight: dict[str, asyncio.Future[str]] = {}

    def __repr__(self) -> str:
        return f"CachedLM({self.inner!r}, {self.cache!r})"

    async def _cached(
        self, key: str, compute: Callable[[], Awaitable[str]], decode: Callable[[str], T]
    ) -> tuple[T, bool]:
        """The decoded payload for ``key`` and whether it came with no call (counted); a stored payload
        ``decode`` rejects is a miss (then replaced)."""
        replace = False
        while True:
            stored = await self.cache.get(key)
            if stored is not None:
                try:
                    return self._hit(decode(stored))
                except (ValueError, TypeError, KeyError) as exc:  # pydantic's ValidationError is a ValueError
                    self.cache.note_damaged_entry(key, exc)
                    replace = True
            if _CACHE_ONLY.get():
                raise CacheMiss(key)
            pending = self._inflight.get(key)
            if pending is None:
                break
            try:
                return self._hit(decode(await asyncio.shield(pending)))
            except asyncio.CancelledError:
                task = asyncio.current_task()
                if pending.cancelled() and (task is None or not task.cancelling()):
                    continue  # the call we waited for was cancelled, not us: make our own
                raise
        future: asyncio.Future[str] = asyncio.get_running_loop().create_future()
        self._inflight[key] = future
        try:
            payload = await compute()
            await self.cache.put(key, self.identity(), self.model, payload, replace=replace)
        except asyncio.CancelledError:
            future.cancel()
            raise
        except BaseException as exc:
            future.set_exception(exc)
            future.exception()  # mark it retrieved: nobody may be waiting
            raise
        finally:
            self._inflight.pop(key, None)
        future.set_result(payload)
        value = decode(payload)
        self.misses += 1
        return value, False

    def _hit(self, value: T) -> tuple[T, bool]:
        self.hits += 1
        return value, True

    async def complete(self, request: LMRequest) -> LMResponse:
        """The cached answer for ``request``, or the inner backend's (then stored)."""
        self.check(request)
        key = LMCache.make_key(self.identity(), self.model, request.key())

        async def compute() -> str:
            response = await self.inner.complete(request)
            return response.model_copy(update={"cached": False}).model_dump_json()

        response, hit = await self._cached(key, compute, LMResponse.model_validate_json)
        return response.model_copy(update={"cached": True}) if hit else response

    async def loglikelihood(self, context: str, continuation: str) -> float:
        """The cached log-likelihood, or the inner backend's (then stored)."""
        blob = json.dumps(["loglikelihood", context, continuation], ensure_ascii=False)
        request_key = hashlib.sha256(blob.encode("utf-8")).hexdigest()
        key = LMCache.make_key(self.identity(), self.model, request_key)

        async def compute() -> str:
            return json.dumps({"loglikelihood": await self.inner.loglikelihood(context, continuation)})

        return (await self._cached(key, compute, _decode_loglikelihood))[0]


def _decode_loglikelihood(payload: str) -> float:
    value = json.loads(payload)["loglikelihood"]
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise TypeError(f"expected a number; got {type(value).__name__}")
    return float(value)


class BudgetExhaustedError(MitigateError):
    """The search's LM-call budget is spent; the call was refused before reaching the backend."""


class CallBudget:
    """A thread-safe counter of distinct LM requests (a key taken before is free) with an optional limit;
    ``backend`` counts those the cache could not answer."""

    def __init__(self, limit: int | None) -> None:
        self.limit = limit
        self.used = self.refused = self.backend = 0
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
        return None if self.limit is None else max(0, self.limit - self.used)


class BudgetedLM(WrapperLM):
    """Counts every distinct completion request against a :class:`CallBudget` and refuses those beyond it
    (outside the cache a request counts once, whoever answers it; ``dedupe=False``: every call counts)."""

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
