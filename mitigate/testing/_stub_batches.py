"""The stub server's batch endpoints: OpenAI Files + Batches and Anthropic Message Batches.

Written from the providers' published API references, to the level a client needs:

OpenAI
    ``POST /v1/files`` (multipart: ``purpose=batch`` and a JSONL ``file``), ``GET /v1/files/{id}``,
    ``GET /v1/files/{id}/content``; ``POST /v1/batches`` (``input_file_id``, ``endpoint``,
    ``completion_window``, ``metadata``), ``GET /v1/batches/{id}``, ``GET /v1/batches``
    (newest first, ``limit`` and ``after`` cursors), ``POST /v1/batches/{id}/cancel``. A
    batch goes ``validating`` -> ``in_progress`` -> ``finalizing`` -> ``completed`` (or
    ``failed`` when its file does not validate, ``expired`` past its window, ``cancelled``).
    Results are two JSONL files matched by ``custom_id``: the output file holds the
    requests answered with ``response.status_code`` 200, the error file holds those that failed: an HTTP error
    in ``response`` or, for requests never
    run, ``error.code`` ``batch_expired`` / ``batch_cancelled``.
    Input limits: ``max_requests`` lines and ``max_bytes`` bytes per file (50,000 and 200 MB
    on the real API); an over-limit or malformed file fails validation.

Anthropic
    ``POST /v1/messages/batches`` (``requests`` of ``custom_id`` + ``params``),
    ``GET /v1/messages/batches/{id}``, ``GET /v1/messages/batches`` (newest first,
    ``limit``/``after_id``/``before_id``), ``GET /v1/messages/batches/{id}/results`` (JSONL of
    ``{"custom_id", "result": {"type": "succeeded"|"errored"|"expired"|"canceled", ...}}``),
    ``POST /v1/messages/batches/{id}/cancel``. ``processing_status`` goes ``in_progress`` ->
    ``ended`` (``canceling`` on cancel), with ``request_counts`` of processing, succeeded,
    errored, canceled and expired. Over 100,000 requests or 256 MB is refused with HTTP 400.

Requests in a batch are answered by the same handlers as live calls (same replies, usage
and prompt-cache emulation), one every ``latency`` seconds, batches running concurrently.
Failure injection: ``fail(provider, custom_id, body)`` returning an HTTP status errors that
request; ``expire_after`` seconds ends a batch with its unprocessed requests expired.
Every created batch is logged in :attr:`BatchEmulator.created` (provider, id and custom ids),
which is how tests check that no request was ever submitted twice.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import json
import re
import threading
import time
import uuid
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

Reply = tuple[int, dict[str, Any] | bytes, dict[str, str]]
Answer = Callable[[str, dict[str, Any]], Awaitable[dict[str, Any]]]
FailHook = Callable[[str, str, dict[str, Any]], int | None]

OPENAI_TERMINAL = frozenset({"completed", "failed", "expired", "cancelled"})
ANTHROPIC_ID = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")


def _iso(t: float) -> str:
    return dt.datetime.fromtimestamp(t, tz=dt.UTC).isoformat().replace("+00:00", "Z")


ANTHROPIC_ERROR_TYPES = {
    400: "invalid_request_error",
    401: "authentication_error",
    403: "permission_error",
    404: "not_found_error",
    413: "request_too_large",
    429: "rate_limit_error",
    500: "api_error",
    529: "overloaded_error",
}
"""The ``error.type`` Anthropic's API reference gives for each HTTP status."""


def _anthropic_error_type(status: int) -> str:
    return ANTHROPIC_ERROR_TYPES.get(status, "invalid_request_error" if status < 500 else "api_error")


def _error(status: int, message: str, *, anthropic: bool = False) -> Reply:
    if anthropic:
        return (
            status,
            {"type": "error", "error": {"type": _anthropic_error_type(status), "message": message}},
            {},
        )
    return status, {"error": {"message": message, "type": "invalid_request_error", "code": None}}, {}


def _error_body(status: int, message: str, anthropic: bool) -> dict[str, Any]:
    if anthropic:
        return {"type": "error", "error": {"type": _anthropic_error_type(status), "message": message}}
    return {
        "error": {
            "message": message,
            "type": "server_error" if status >= 500 else "invalid_request_error",
            "code": None,
        }
    }


@dataclass
class StubFile:
    """One uploaded or generated file."""

    id: str
    filename: str
    purpose: str
    content: bytes
    created_at: int

    def describe(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "object": "file",
            "bytes": len(self.content),
            "created_at": self.created_at,
            "filename": self.filename,
            "purpose": self.purpose,
            "status": "processed",
            "expires_at": None,
            "status_details": None,
        }


@dataclass
class StubBatch:
    """One batch of either provider, with its requests and what happened to each."""

    provider: str
    id: str
    requests: list[tuple[str, dict[str, Any]]]
    created_at: float
    metadata: dict[str, Any] | None = None
    input_file_id: str | None = None
    endpoint: str = "/v1/chat/completions"
    status: str = "validating"
    errors: list[dict[str, Any]] = field(default_factory=list)
    results: dict[str, dict[str, Any]] = field(default_factory=dict)
    succeeded: int = 0
    errored: int = 0
    expired: int = 0
    canceled: int = 0
    cancel_requested: float | None = None
    ended_at: float | None = None
    stamps: dict[str, float] = field(default_factory=dict)
    output_file_id: str | None = None
    error_file_id: str | None = None

    @property
    def processing(self) -> int:
        return len(self.requests) - self.succeeded - self.errored - self.expired - self.canceled


class BatchEmulator:
    """Files and batches of the stub server (see the module docstring).

    ``answer(provider, body)`` produces one live-call answer (the chat.completion or message
    JSON); ``latency`` is the time to process one batched request.
    """

    def __init__(
        self,
        answer: Answer,
        *,
        latency: float = 0.0,
        validation_delay: float = 0.0,
        create_delay: float = 0.0,
        expire_after: float | None = None,
        fail: FailHook | None = None,
        openai_max_requests: int = 50_000,
        openai_max_bytes: int = 200 * 1024 * 1024,
        anthropic_max_requests: int = 100_000,
        anthropic_max_bytes: int = 256 * 1024 * 1024,
    ) -> None:
        self.answer = answer
        self.latency = latency
        self.validation_delay = validation_delay
        self.create_delay = create_delay
        self.expire_after = expire_after
        self.fail = fail
        self.openai_max_requests = openai_max_requests
        self.openai_max_bytes = openai_max_bytes
        self.anthropic_max_requests = anthropic_max_requests
        self.anthropic_max_bytes = anthropic_max_bytes
        self._lock = threading.Lock()
        self.files: dict[str, StubFile] = {}
        self.batches: dict[str, StubBatch] = {}
        self._order: list[str] = []
        self._created: list[dict[str, Any]] = []
        self._downloads: list[str] = []
        self._tasks: set[asyncio.Task[None]] = set()

    # ------------------------------------------------------------------ records for tests

    @property
    def created(self) -> list[dict[str, Any]]:
        """Every batch created: ``{"provider", "id", "custom_ids"}`` in creation order."""
        with self._lock:
            return [dict(c) for c in self._created]

    @property
    def downloads(self) -> list[str]:
        """Every result download (file id or Anthropic batch id), in order."""
        with self._lock:
            return list(self._downloads)

    def status_of(self, batch_id: str) -> str | None:
        """The current status (OpenAI) or processing_status (Anthropic) of a batch; None if unknown."""
        with self._lock:
            b = self.batches.get(batch_id)
            if b is None:
                return None
            return b.status

    # ------------------------------------------------------------------ routing

    async def route(
        self, method: str, path: str, query: dict[str, str], headers: dict[str, str], raw: bytes, body: Any
    ) -> Reply | None:
        """Answer a batch or file endpoint, or None when ``path`` is not one."""
        m = re.search(r"/messages/batches(?:/([^/]+))?(?:/(results|cancel))?$", path)
        if m:
            return await self._anthropic(method, m.group(1), m.group(2), query, body)
        m = re.search(r"/batches(?:/([^/]+))?(?:/(cancel))?$", path)
        if m:
            return await self._openai_batches(method, m.group(1), m.group(2), query, body)
        m = re.search(r"/files(?:/([^/]+))?(?:/(content))?$", path)
        if m:
            return self._files(method, m.group(1), m.group(2), headers, raw)
        return None

    # ------------------------------------------------------------------ OpenAI files

    def _files(
        self, method: str, file_id: str | None, sub: str | None, headers: dict[str, str], raw: bytes
    ) -> Reply:
        if file_id is None:
            if method == "GET":
                with self._lock:
                    data = [f.describe() for f in self.files.values()]
                return 200, {"object": "list", "data": data, "has_more": False}, {}
            if method != "POST":
                return _error(405, f"expected POST or GET on /v1/files; got {method}")
            fields = parse_multipart(headers.get("content-type", ""), raw)
            if "file" not in fields:
                return _error(400, "expected a multipart form with a 'file' part")
            purpose = fields.get("purpose", (None, b""))[1].decode()
            if purpose != "batch":
                return _error(400, f"this stub accepts purpose 'batch' only; got {purpose!r}")
            filename, content = fields["file"]
            f = StubFile(
                id=f"file-{uuid.uuid4().hex[:24]}",
                filename=filename or "upload.jsonl",
                purpose=purpose,
                content=content,
                created_at=int(time.time()),
            )
            with self._lock:
                self.files[f.id] = f
            return 200, f.describe(), {}
        with self._lock:
            f2 = self.files.get(file_id)
        if f2 is None:
            return _error(404, f"No such File object: {file_id}")
        if sub == "content":
            with self._lock:
                self._downloads.append(file_id)
            return 200, f2.content, {"Content-Type": "application/octet-stream"}
        if method == "DELETE":
            with self._lock:
                self.files.pop(file_id, None)
            return 200, {"id": file_id, "object": "file", "deleted": True}, {}
        return 200, f2.describe(), {}

    # ------------------------------------------------------------------ OpenAI batches

    def _openai_view(self, b: StubBatch) -> dict[str, Any]:
        failed = b.errored + b.expired + b.canceled
        view: dict[str, Any] = {
            "id": b.id,
            "object": "batch",
            "endpoint": b.endpoint,
            "input_file_id": b.input_file_id,
            "completion_window": "24h",
            "status": b.status,
            "output_file_id": b.output_file_id,
            "error_file_id": b.error_file_id,
            "created_at": int(b.created_at),
            "expires_at": int(b.created_at + 86400),
            "metadata": b.metadata,
            "errors": {"object": "list", "data": b.errors} if b.errors else None,
            "request_counts": {
                "total": len(b.requests) if b.status != "failed" else 0,
                "completed": b.succeeded,
                "failed": failed,
            },
        }
        for stamp in (
            "in_progress",
            "finalizing",
            "completed",
            "failed",
            "expired",
            "cancelling",
            "cancelled",
        ):
            view[f"{stamp}_at"] = int(b.stamps[stamp]) if stamp in b.stamps else None
        return view

    async def _openai_batches(
        self, method: str, batch_id: str | None, sub: str | None, query: dict[str, str], body: Any
    ) -> Reply:
        if batch_id is None and method == "GET":
            return 200, self._page("openai", query, self._openai_view, after_key="after"), {}
        if batch_id is None:
            if method != "POST" or not isinstance(body, dict):
                return _error(400, "expected POST /v1/batches with a JSON body")
            file_id = body.get("input_file_id")
            with self._lock:
                f = self.files.get(str(file_id))
            if f is None:
                return _error(400, f"input_file_id {file_id!r} names no uploaded file")
            if body.get("completion_window") != "24h":
                return _error(400, f"completion_window must be '24h'; got {body.get('completion_window')!r}")
            endpoint = str(body.get("endpoint") or "")
            metadata = body.get("metadata")
            b = StubBatch(
                provider="openai",
                id=f"batch_{uuid.uuid4().hex[:24]}",
                requests=[],
                created_at=time.time(),
                metadata=metadata,
                input_file_id=f.id,
                endpoint=endpoint,
            )
            b.requests, b.errors = self._parse_openai_input(f.content, endpoint)
            self._register(b)
            await asyncio.sleep(self.create_delay)
            with self._lock:
                return 200, self._openai_view(b), {}
        with self._lock:
            b2 = self.batches.get(batch_id)
        if b2 is None or b2.provider != "openai":
            return _error(404, f"No batch found with id '{batch_id}'")
        if sub == "cancel":
            with self._lock:
                if b2.status not in OPENAI_TERMINAL:
                    b2.cancel_requested = time.time()
                    b2.status = "cancelling"
                    b2.stamps["cancelling"] = time.time()
        with self._lock:
            return 200, self._openai_view(b2), {}

    def _parse_openai_input(
        self, content: bytes, endpoint: str
    ) -> tuple[list[tuple[str, dict[str, Any]]], list[dict[str, Any]]]:
        errors: list[dict[str, Any]] = []
        requests: list[tuple[str, dict[str, Any]]] = []
        if len(content) > self.openai_max_bytes:
            return [], [
                {
                    "code": "file_too_large",
                    "line": None,
                    "param": None,
                    "message": f"input file has {len(content)} bytes; the limit is {self.openai_max_bytes}",
                }
            ]
        seen: set[str] = set()
        for n, line in enumerate(content.decode("utf-8", "replace").splitlines(), start=1):
            try:
                obj = json.loads(line)
                cid, url, req = str(obj["custom_id"]), obj["url"], obj["body"]
            except (json.JSONDecodeError, KeyError, TypeError):
                errors.append(
                    {
                        "code": "invalid_json_line",
                        "line": n,
                        "param": None,
                        "message": "expected a JSON object with custom_id, method, url and body",
                    }
                )
                continue
            if url != endpoint or obj.get("method") != "POST":
                errors.append(
                    {
                        "code": "mismatched_endpoint",
                        "line": n,
                        "param": "url",
                        "message": f"line url {url!r} does not match the batch endpoint {endpoint!r}",
                    }
                )
            if cid in seen:
                errors.append(
                    {
                        "code": "duplicate_custom_id",
                        "line": n,
                        "param": "custom_id",
                        "message": f"custom_id {cid!r} appears more than once",
                    }
                )
            seen.add(cid)
            requests.append((cid, req))
        if len(requests) > self.openai_max_requests:
            errors.append(
                {
                    "code": "too_many_requests",
                    "line": None,
                    "param": None,
                    "message": f"{len(requests)} requests; the limit is {self.openai_max_requests}",
                }
            )
        if not requests and not errors:
            errors.append(
                {"code": "empty_file", "line": None, "param": None, "message": "the input file is empty"}
            )
        return requests, errors

    # ------------------------------------------------------------------ Anthropic batches

    def _anthropic_view(self, b: StubBatch) -> dict[str, Any]:
        return {
            "id": b.id,
            "type": "message_batch",
            "processing_status": b.status,
            "request_counts": {
                "processing": b.processing,
                "succeeded": b.succeeded,
                "errored": b.errored,
                "canceled": b.canceled,
                "expired": b.expired,
            },
            "ended_at": _iso(b.ended_at) if b.ended_at else None,
            "created_at": _iso(b.created_at),
            "expires_at": _iso(b.created_at + 86400),
            "archived_at": None,
            "cancel_initiated_at": _iso(b.cancel_requested) if b.cancel_requested else None,
            "results_url": (
                f"{self.url_root}/v1/messages/batches/{b.id}/results" if b.status == "ended" else None
            ),
        }

    url_root = ""

    async def _anthropic(
        self, method: str, batch_id: str | None, sub: str | None, query: dict[str, str], body: Any
    ) -> Reply:
        if batch_id is None and method == "GET":
            return 200, self._page("anthropic", query, self._anthropic_view, after_key="after_id"), {}
        if batch_id is None:
            if method != "POST" or not isinstance(body, dict) or not isinstance(body.get("requests"), list):
                return _error(
                    400, "expected POST /v1/messages/batches with a 'requests' list", anthropic=True
                )
            reqs = body["requests"]
            size = len(json.dumps(body))
            if not reqs or len(reqs) > self.anthropic_max_requests or size > self.anthropic_max_bytes:
                return _error(
                    400,
                    f"a batch holds 1 to {self.anthropic_max_requests} requests and at most "
                    f"{self.anthropic_max_bytes} bytes; got {len(reqs)} requests, "
                    f"{size} bytes",
                    anthropic=True,
                )
            seen: set[str] = set()
            parsed: list[tuple[str, dict[str, Any]]] = []
            for r in reqs:
                cid = str(r.get("custom_id", "")) if isinstance(r, dict) else ""
                if not ANTHROPIC_ID.match(cid) or cid in seen or not isinstance(r.get("params"), dict):
                    return _error(
                        400,
                        f"requests need unique custom_id matching ^[a-zA-Z0-9_-]{{1,64}}$ and "
                        f"params; got custom_id {cid!r}",
                        anthropic=True,
                    )
                seen.add(cid)
                parsed.append((cid, r["params"]))
            b = StubBatch(
                provider="anthropic",
                id=f"msgbatch_{uuid.uuid4().hex[:24]}",
                requests=parsed,
                created_at=time.time(),
                status="in_progress",
            )
            self._register(b)
            await asyncio.sleep(self.create_delay)
            with self._lock:
                return 200, self._anthropic_view(b), {}
        with self._lock:
            b2 = self.batches.get(batch_id)
        if b2 is None or b2.provider != "anthropic":
            return _error(404, f"no message batch {batch_id!r}", anthropic=True)
        if sub == "results":
            with self._lock:
                if b2.status != "ended":
                    return _error(400, f"batch {batch_id} has not ended", anthropic=True)
                self._downloads.append(batch_id)
                lines = [
                    json.dumps({"custom_id": cid, "result": b2.results[cid]})
                    for cid, _ in b2.requests
                    if cid in b2.results
                ]
            return 200, ("\n".join(lines) + "\n").encode(), {"Content-Type": "application/binary"}
        if sub == "cancel":
            with self._lock:
                if b2.status == "in_progress":
                    b2.status = "canceling"
                    b2.cancel_requested = time.time()
        with self._lock:
            return 200, self._anthropic_view(b2), {}

    # ------------------------------------------------------------------ shared

    def _page(
        self,
        provider: str,
        query: dict[str, str],
        view: Callable[[StubBatch], dict[str, Any]],
        after_key: str,
    ) -> dict[str, Any]:
        limit = max(1, min(100, int(query.get("limit") or 20)))
        with self._lock:
            ids = [i for i in reversed(self._order) if self.batches[i].provider == provider]
            after = query.get(after_key)
            if after and after in ids:
                ids = ids[ids.index(after) + 1 :]
            before = query.get("before_id")
            if before and before in ids:
                ids = ids[: ids.index(before)]
            page = ids[:limit]
            data = [view(self.batches[i]) for i in page]
        out: dict[str, Any] = {
            "data": data,
            "has_more": len(ids) > limit,
            "first_id": page[0] if page else None,
            "last_id": page[-1] if page else None,
        }
        if provider == "openai":
            out["object"] = "list"
        return out

    def _register(self, b: StubBatch) -> None:
        with self._lock:
            self.batches[b.id] = b
            self._order.append(b.id)
            self._created.append(
                {"provider": b.provider, "id": b.id, "custom_ids": [c for c, _ in b.requests]}
            )
        task = asyncio.get_running_loop().create_task(self._process(b))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _process(self, b: StubBatch) -> None:
        anthropic = b.provider == "anthropic"
        if not anthropic:
            await asyncio.sleep(self.validation_delay)
            with self._lock:
                if b.errors:
                    b.status = "failed"
                    b.stamps["failed"] = time.time()
                    return
                b.status = "in_progress"
                b.stamps["in_progress"] = time.time()
        for cid, body in b.requests:
            if self.latency:
                await asyncio.sleep(self.latency)
            now = time.time()
            with self._lock:
                if b.cancel_requested is not None:
                    break
                if self.expire_after is not None and now - b.created_at > self.expire_after:
                    break
            status = self.fail(b.provider, cid, body) if self.fail is not None else None
            if status is None:
                try:
                    answer = await self.answer(b.provider, body)
                except Exception as exc:  # a malformed request body: an HTTP 400 for that request only
                    answer, status = _error_body(400, f"malformed request: {exc}", anthropic), 400
            else:
                answer = _error_body(status, f"stub failure for {cid}", anthropic)
            with self._lock:
                if status is None:
                    b.succeeded += 1
                    b.results[cid] = (
                        {"type": "succeeded", "message": answer}
                        if anthropic
                        else {"status_code": 200, "body": answer}
                    )
                else:
                    b.errored += 1
                    b.results[cid] = (
                        {"type": "errored", "error": answer}
                        if anthropic
                        else {"status_code": status, "body": answer}
                    )
        with self._lock:
            cancelled = b.cancel_requested is not None
            for cid, _ in b.requests:
                if cid in b.results:
                    continue
                if cancelled:
                    b.canceled += 1
                    b.results[cid] = {"type": "canceled"} if anthropic else {"error_code": "batch_cancelled"}
                else:
                    b.expired += 1
                    b.results[cid] = {"type": "expired"} if anthropic else {"error_code": "batch_expired"}
            now = time.time()
            if anthropic:
                b.status = "ended"
                b.ended_at = now
                return
            b.status = "finalizing"
            b.stamps["finalizing"] = now
            out_lines: list[str] = []
            err_lines: list[str] = []
            for cid, _ in b.requests:
                r = b.results[cid]
                rid = f"batch_req_{uuid.uuid4().hex[:16]}"
                if "error_code" in r:
                    msg = (
                        "This request could not be executed before the completion window expired."
                        if r["error_code"] == "batch_expired"
                        else "This request was cancelled."
                    )
                    err_lines.append(
                        json.dumps(
                            {
                                "id": rid,
                                "custom_id": cid,
                                "response": None,
                                "error": {"code": r["error_code"], "message": msg},
                            }
                        )
                    )
                else:
                    line = json.dumps(
                        {
                            "id": rid,
                            "custom_id": cid,
                            "response": {
                                "status_code": r["status_code"],
                                "request_id": rid,
                                "body": r["body"],
                            },
                            "error": None,
                        }
                    )
                    (out_lines if r["status_code"] == 200 else err_lines).append(line)
            for lines, attr in ((out_lines, "output_file_id"), (err_lines, "error_file_id")):
                if lines:
                    f = StubFile(
                        id=f"file-{uuid.uuid4().hex[:24]}",
                        filename=f"{b.id}_{attr}.jsonl",
                        purpose="batch_output",
                        content=("\n".join(lines) + "\n").encode(),
                        created_at=int(now),
                    )
                    self.files[f.id] = f
                    setattr(b, attr, f.id)
            final = "cancelled" if cancelled else "expired" if b.expired else "completed"
            b.status = final
            b.stamps[final] = now


def parse_multipart(content_type: str, raw: bytes) -> dict[str, tuple[str | None, bytes]]:
    """The parts of a ``multipart/form-data`` body: field name -> (filename or None, content)."""
    m = re.search(r'boundary="?([^";]+)"?', content_type)
    if not m:
        return {}
    boundary = b"--" + m.group(1).encode()
    out: dict[str, tuple[str | None, bytes]] = {}
    for part in raw.split(boundary)[1:]:
        if part.startswith(b"--"):
            break
        head, sep, content = part.partition(b"\r\n\r\n")
        if not sep:
            continue
        if content.endswith(b"\r\n"):
            content = content[:-2]
        text = head.decode("latin-1")
        name = re.search(r'name="([^"]*)"', text)
        filename = re.search(r'filename="([^"]*)"', text)
        if name:
            out[name.group(1)] = (filename.group(1) if filename else None, content)
    return out
