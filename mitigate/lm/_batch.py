"""Provider batch APIs behind one interface, the on-disk record that makes batches resumable, and the LM that
parks its requests with a batch session.

A request's ``custom_id`` is its cache key (``_000``, ``_001`` ... per sample on a provider without ``n``), so
results go straight into the LM cache. :class:`BatchStore` writes the requests before an ``intent`` event,
``submitted`` after the create call and ``collected`` once every result is cached, so a killed run finds the
batch it created (:meth:`BatchAPI.find`) instead of submitting it again.
"""

from __future__ import annotations

import json
import os
import time
import uuid
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import IO, Any, Literal, Protocol

from pydantic import BaseModel, ConfigDict, Field

from mitigate.errors import ConfigError, DataError
from mitigate.lm._base import LM, LMRequest, LMResponse, WrapperLM
from mitigate.lm._cache import LMCache
from mitigate.paths import open_regular, read_lines, write_output

ErrorKind = Literal["errored", "expired", "canceled", "failed", "missing"]
Line = tuple[str, dict[str, Any]]

STORE_VERSION = 1


class BatchLimits(BaseModel):
    """The most requests and bytes one batch may hold."""

    model_config = ConfigDict(frozen=True, extra="forbid")
    max_requests: int = Field(ge=1)
    max_bytes: int = Field(ge=1)


class BatchState(BaseModel):
    """A provider batch's status and request counts, as last polled (``message``: why it failed)."""

    model_config = ConfigDict(frozen=True, extra="forbid")
    batch_id: str
    status: str
    ended: bool
    total: int = 0
    succeeded: int = 0
    failed: int = 0
    message: str | None = None

    @property
    def done(self) -> int:
        """Requests with a result so far (succeeded or failed)."""
        return self.succeeded + self.failed


class BatchItemError(BaseModel):
    """Why one request of a batch has no answer; ``retryable`` when a follow-up batch may succeed."""

    model_config = ConfigDict(frozen=True, extra="forbid")
    kind: ErrorKind
    message: str
    status: int | None = None
    retryable: bool = False


def custom_ids(key: str, n: int, *, per_sample: bool) -> list[str]:
    """The custom ids of one request: its key, or one id per sample when the provider has no ``n``."""
    if not per_sample or n == 1:
        return [key]
    if n > 999:
        raise ConfigError(f"a batch request holds at most 999 samples on this provider; got n={n}")
    return [f"{key[:60]}_{i:03d}" for i in range(n)]


Group = tuple[str, list[Line]]
"""One request's lines: ``(key, [(custom_id, body), ...])`` (several when each sample is a line)."""


def pack(
    groups: Sequence[Group],
    limits: BatchLimits,
    *,
    size: Callable[[Line], int] | None = None,
    overhead: int = 0,
) -> list[list[Group]]:
    """Requests split into chunks within ``limits`` (lines and bytes; ``overhead`` per chunk), a request's
    lines together; ConfigError for a request over them on its own."""
    measure = size or (lambda line: len(json.dumps({"custom_id": line[0], "body": line[1]})) + 1)
    chunks: list[list[Group]] = []
    current: list[Group] = []
    count, used = 0, overhead
    for key, lines in groups:
        n_bytes = sum(measure(line) for line in lines)
        if n_bytes + overhead > limits.max_bytes or len(lines) > limits.max_requests:
            raise ConfigError(
                f"one batch request ({key[:16]}...) takes {len(lines)} lines and {n_bytes} bytes; expected "
                f"at most {limits.max_requests} lines and {limits.max_bytes - overhead} bytes (the "
                "provider's batch size limit)"
            )
        if current and (count + len(lines) > limits.max_requests or used + n_bytes > limits.max_bytes):
            chunks.append(current)
            current, count, used = [], 0, overhead
        current.append((key, lines))
        count += len(lines)
        used += n_bytes
    if current:
        chunks.append(current)
    return chunks


class BatchAPI(ABC):
    """One provider's batch API for one backend (``per_sample``: ``n`` samples make ``n`` lines)."""

    provider: str = "base"
    per_sample: bool = False
    limits: BatchLimits = BatchLimits(max_requests=50_000, max_bytes=200 * 1024 * 1024)

    def __init__(self, lm: LM) -> None:
        self.lm = lm
        self.identity = lm.identity()
        self.model = lm.model

    def with_limits(self, max_requests: int | None = None, max_bytes: int | None = None) -> BatchAPI:
        """This API with smaller per-batch limits (never larger than the provider's)."""
        self.limits = BatchLimits(
            max_requests=min(max_requests or self.limits.max_requests, self.limits.max_requests),
            max_bytes=min(max_bytes or self.limits.max_bytes, self.limits.max_bytes),
        )
        return self

    @abstractmethod
    def lines(self, requests: Sequence[tuple[str, LMRequest]]) -> list[Group]:
        """The batch lines ``(custom_id, body)`` of each ``(key, request)`` pair, grouped by key, in order."""

    def chunks(self, groups: Sequence[Group]) -> list[list[Group]]:
        """Requests split to respect this provider's per-batch limits."""
        return pack(groups, self.limits)

    @abstractmethod
    async def submit(self, local_id: str, lines: Sequence[Line]) -> str:
        """Create a batch of ``lines`` tagged with ``local_id``; returns the provider's batch id."""

    @abstractmethod
    async def find(self, local_id: str, count: int, since: float, claimed: Iterable[str]) -> str | None:
        """The id of the batch a killed run created for ``local_id``, or None."""

    @abstractmethod
    async def poll(self, batch_id: str) -> BatchState:
        """The batch's current state."""

    @abstractmethod
    async def results(self, state: BatchState) -> dict[str, dict[str, Any] | BatchItemError]:
        """Every result of an ended batch: custom id -> the answer's JSON, or why there is none."""

    @abstractmethod
    def response(self, request: LMRequest, answers: Sequence[dict[str, Any]]) -> LMResponse:
        """The :class:`LMResponse` of one request from its answers (one per line), priced as batch tokens."""

    async def aclose(self) -> None:  # noqa: B027 - optional hook
        """Release clients (the backend owns them; nothing by default)."""


class BatchRecord(BaseModel):
    """What the store knows about one batch (rebuilt from its events)."""

    model_config = ConfigDict(extra="forbid")
    local: str
    provider: str
    identity: str
    model: str
    keys: list[str]
    lines: int
    created: float
    attempt: int = 1
    batch_id: str | None = None
    collected: bool = False
    status: str | None = None
    failed: dict[str, str] = Field(default_factory=dict)


class BatchStore:
    """The event log of a run's batches (``batches.jsonl``) and their requests files, in ``directory``."""

    def __init__(self, directory: str | Path) -> None:
        self.directory = Path(directory)
        try:
            self.directory.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise ConfigError(f"expected a writable batch directory at {self.directory}; got {exc}") from exc
        self.path = self.directory / "batches.jsonl"
        self.records: dict[str, BatchRecord] = {}
        self.disowned: set[str] = set()
        if self.path.exists() or self.path.is_symlink():
            self._load()
        else:
            self._append({"store": STORE_VERSION})

    def __repr__(self) -> str:
        return f"BatchStore({str(self.directory)!r}, batches={len(self.records)})"

    def _load(self) -> None:
        with open_regular(self.path, "rb", "the batch log") as fh:
            lines = list(read_lines(fh, f"the batch log {self.path}", path=self.path))
        good = sum(len(line) for line in lines if line.endswith(b"\n"))
        if lines and not lines[-1].endswith(b"\n"):  # a kill mid-write left half a line: drop it
            with open_regular(self.path, "r+b", "the batch log") as fh:
                fh.truncate(good)
            lines = lines[:-1]
        for n, line in enumerate((raw.decode("utf-8").rstrip("\r\n") for raw in lines), start=1):
            try:
                event = json.loads(line)
            except json.JSONDecodeError as exc:
                raise DataError(
                    f"{self.path}:{n}: expected a batch event; got invalid JSON ({exc})",
                    path=str(self.path),
                    line=n,
                ) from None
            self._apply(event)

    def _apply(self, event: Mapping[str, Any]) -> None:
        kind = event.get("event")
        if kind == "intent":
            new = BatchRecord.model_validate({k: v for k, v in event.items() if k != "event"})
            self.records[new.local] = new
            return
        rec = self.records.get(str(event.get("local")))
        if rec is None:
            return
        if kind == "submitted":
            rec.batch_id = str(event["batch_id"])
        elif kind == "disowned":
            self.disowned.add(str(event.get("batch_id")))
            rec.batch_id = None
        elif kind == "collected":
            rec.collected, rec.status, rec.failed = True, event.get("status"), dict(event.get("failed") or {})

    def _append(self, event: Mapping[str, Any]) -> None:
        with open_regular(self.path, "a", "the batch log") as fh:
            fh.write(json.dumps(event) + "\n")
            fh.flush()
            os.fsync(fh.fileno())

    def _event(self, event: dict[str, Any]) -> None:
        self._append(event)
        self._apply(event)

    def requests_path(self, local: str) -> Path:
        return self.directory / f"{local}.requests.jsonl"

    def begin(
        self, api: BatchAPI, requests: Sequence[tuple[str, LMRequest]], lines: int, *, attempt: int = 1
    ) -> BatchRecord:
        """Record the intent to submit ``requests`` (their file first, then the event); returns the record."""
        local = f"mb-{uuid.uuid4().hex[:20]}"
        path = self.requests_path(local)

        def fill(fh: IO[str]) -> None:
            for key, request in requests:
                fh.write(json.dumps({"key": key, "request": request.model_dump(mode="json")}) + "\n")

        write_output(path, fill, "the batch requests file")
        self._event(
            {
                "event": "intent",
                "local": local,
                "provider": api.provider,
                "identity": api.identity,
                "model": api.model,
                "keys": [k for k, _ in requests],
                "lines": lines,
                "created": time.time(),
                "attempt": attempt,
            }
        )
        return self.records[local]

    def submitted(self, record: BatchRecord, batch_id: str) -> None:
        """Record the provider's id for a batch."""
        self._event({"event": "submitted", "local": record.local, "batch_id": batch_id})

    def disown(self, record: BatchRecord) -> None:
        """Forget a batch id adopted after a crash that turned out to be someone else's."""
        self._event({"event": "disowned", "local": record.local, "batch_id": record.batch_id})

    def collected(self, record: BatchRecord, status: str, failed: Mapping[str, str]) -> None:
        """Record that every result of a batch is stored (``failed``: key -> why it has no answer)."""
        self._event({"event": "collected", "local": record.local, "status": status, "failed": dict(failed)})

    def requests(self, record: BatchRecord) -> dict[str, LMRequest]:
        """The requests of a batch, by key."""
        path = self.requests_path(record.local)
        try:
            with open_regular(path, "rb", f"the requests of batch {record.local}") as fh:
                lines = list(read_lines(fh, f"the batch requests file {path}", path=path))
        except OSError as exc:
            raise DataError(
                f"expected the requests of batch {record.local} at {path}; got {exc}", path=str(path)
            ) from None
        rows = (json.loads(line) for line in lines if line.strip())
        return {row["key"]: LMRequest.model_validate(row["request"]) for row in rows}

    def open_records(self) -> list[BatchRecord]:
        """The batches submitted (or maybe submitted) and not yet collected."""
        return [r for r in self.records.values() if not r.collected]

    def claimed(self) -> set[str]:
        """Every provider batch id a record holds or has disowned (not to be adopted again)."""
        return {r.batch_id for r in self.records.values() if r.batch_id} | self.disowned


class BatchParking(Protocol):
    """Where a :class:`BatchingLM` parks what the cache cannot answer (a batch session)."""

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
