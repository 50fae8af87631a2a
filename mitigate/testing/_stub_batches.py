"""The stub server's batch endpoints: OpenAI Files + Batches and Anthropic Message Batches.

Written from the providers' published API references, to the level a client needs: OpenAI's
``/v1/files`` (multipart upload, metadata, content) and ``/v1/batches`` (create, retrieve, list newest
first with ``limit``/``after``, cancel; ``validating`` -> ``in_progress`` -> ``finalizing`` ->
``completed``, or ``failed``, ``expired``, ``cancelled``; results as an output and an error JSONL file
matched by ``custom_id``; input limits of 50,000 lines and 200 MB), and Anthropic's
``/v1/messages/batches`` (create, retrieve, list with ``limit``/``after_id``/``before_id``, results as
JSONL of ``succeeded``/``errored``/``expired``/``canceled``, cancel; ``in_progress`` -> ``ended``;
100,000 requests and 256 MB).

Batched requests are answered like live calls, one every ``latency`` seconds, batches running
concurrently. ``fail(provider, custom_id, body)`` returning an HTTP status fails that request;
``expire_after`` seconds ends a batch with its unprocessed requests expired. Every created batch is
logged in :attr:`BatchEmulator.created`, which is how tests check that no request was submitted twice.
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
_STAMPS = ("in_progress", "finalizing", "completed", "failed", "expired", "cancelling", "cancelled")

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


def _iso(t: float) -> str:
    return dt.datetime.fromtimestamp(t, tz=dt.UTC).isoformat().replace("+00:00", "Z")


def _new_id(prefix: str) -> str:
    return f"{prefix}{uuid.uuid4().hex[:24]}"


def error_body(status: int, message: str, anthropic: bool) -> dict[str, Any]:
    """An error body in the provider's shape (OpenAI's 429 typed and coded as its rate limit's)."""
    if anthropic:
        kind = ANTHROPIC_ERROR_TYPES.get(status, "invalid_request_error" if status < 500 else "api_error")
        return {"type": "error", "error": {"type": kind, "message": message}}
    limited = status == 429
    kind = "server_error" if status >= 500 else "requests" if limited else "invalid_request_error"
    return {"error": {"message": message, "type": kind, "code": "rate_limit_exceeded" if limited else None}}


def _error(status: int, message: str, *, anthropic: bool = False) -> Reply:
    return status, error_body(status, message, anthropic), {}


def _line_error(code: str, line: int | None, param: str | None, message: str) -> dict[str, Any]:
    """One entry of an OpenAI batch's ``errors``: why its input file failed validation."""
    return {"code": code, "line": line, "param": param, "message": message}


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


@dataclass(eq=False)
class BatchEmulator:
    """Files and batches of the stub server (see the module docstring).

    ``answer(provider, body)`` produces one live-call answer (the chat.completion or message
    JSON); ``latency`` is the time to process one batched request; ``max_requests`` and
    ``max_bytes`` (by provider) override the published size limits.
    """

    answer: Answer
    latency: float = 0.0
    validation_delay: float = 0.0
    create_delay: float = 0.0
    expire_after: float | None = None
    fail: FailHook | None = None
    max_requests: dict[str, int] = field(default_factory=dict)
    max_bytes: dict[str, int] = field(default_factory=dict)
    url_root: str = ""

    def __post_init__(self) -> None:
        self.max_requests = {"openai": 50_000, "anthropic": 100_000} | self.max_requests
        self.max_bytes = {"openai": 200 * 1024 * 1024, "anthropic": 256 * 1024 * 1024} | self.max_bytes
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
            return None if b is None else b.status

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
            f = StubFile(_new_id("file-"), filename or "upload.jsonl", purpose, content, int(time.time()))
            with self._lock:
                self.files[f.id] = f
            return 200, f.describe(), {}
        with self._lock:
            found = self.files.get(file_id)
            if found is None:
                return _error(404, f"No such File object: {file_id}")
            if sub == "content":
                self._downloads.append(file_id)
                return 200, found.content, {"Content-Type": "application/octet-stream"}
            if method == "DELETE":
                self.files.pop(file_id, None)
                return 200, {"id": file_id, "object": "file", "deleted": True}, {}
        return 200, found.describe(), {}

    # ------------------------------------------------------------------ OpenAI batches

    def _openai_view(self, b: StubBatch) -> dict[str, Any]:
        return {
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
                "failed": b.errored + b.expired + b.canceled,
            },
        } | {f"{stamp}_at": int(b.stamps[stamp]) if stamp in b.stamps else None for stamp in _STAMPS}

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
            b = StubBatch(
                "openai",
                _new_id("batch_"),
                [],
                time.time(),
                metadata=body.get("metadata"),
                input_file_id=f.id,
                endpoint=endpoint,
            )
            b.requests, b.errors = self._parse_openai_input(f.content, endpoint)
            return await self._created_reply(b, self._openai_view)
        with self._lock:
            found = self.batches.get(batch_id)
            if found is None or found.provider != "openai":
                return _error(404, f"No batch found with id '{batch_id}'")
            if sub == "cancel" and found.status not in OPENAI_TERMINAL:
                found.cancel_requested = time.time()
                found.status = "cancelling"
                found.stamps["cancelling"] = time.time()
            return 200, self._openai_view(found), {}

    def _parse_openai_input(
        self, content: bytes, endpoint: str
    ) -> tuple[list[tuple[str, dict[str, Any]]], list[dict[str, Any]]]:
        """The requests of an OpenAI batch input file, and why it fails validation (none: it passes)."""
        limit, most = self.max_bytes["openai"], self.max_requests["openai"]
        if len(content) > limit:
            message = f"input file has {len(content)} bytes; the limit is {limit}"
            return [], [_line_error("file_too_large", None, None, message)]
        errors: list[dict[str, Any]] = []
        requests: list[tuple[str, dict[str, Any]]] = []
        seen: set[str] = set()
        for n, line in enumerate(content.decode("utf-8", "replace").splitlines(), start=1):
            try:
                obj = json.loads(line)
                cid, url, req = str(obj["custom_id"]), obj["url"], obj["body"]
            except (json.JSONDecodeError, KeyError, TypeError):
                message = "expected a JSON object with custom_id, method, url and body"
                errors.append(_line_error("invalid_json_line", n, None, message))
                continue
            if url != endpoint or obj.get("method") != "POST":
                message = f"line url {url!r} does not match the batch endpoint {endpoint!r}"
                errors.append(_line_error("mismatched_endpoint", n, "url", message))
            if cid in seen:
                message = f"custom_id {cid!r} appears more than once"
                errors.append(_line_error("duplicate_custom_id", n, "custom_id", message))
            seen.add(cid)
            requests.append((cid, req))
        if len(requests) > most:
            message = f"{len(requests)} requests; the limit is {most}"
            errors.append(_line_error("too_many_requests", None, None, message))
        if not requests and not errors:
            errors.append(_line_error("empty_file", None, None, "the input file is empty"))
        return requests, errors

    # ------------------------------------------------------------------ Anthropic batches

    def _anthropic_view(self, b: StubBatch) -> dict[str, Any]:
        counts = ("processing", "succeeded", "errored", "canceled", "expired")
        return {
            "id": b.id,
            "type": "message_batch",
            "processing_status": b.status,
            "request_counts": {count: getattr(b, count) for count in counts},
            "ended_at": _iso(b.ended_at) if b.ended_at else None,
            "created_at": _iso(b.created_at),
            "expires_at": _iso(b.created_at + 86400),
            "archived_at": None,
            "cancel_initiated_at": _iso(b.cancel_requested) if b.cancel_requested else None,
            "results_url": (
                f"{self.url_root}/v1/messages/batches/{b.id}/results" if b.status == "ended" else None
            ),
        }

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
            most, limit = self.max_requests["anthropic"], self.max_bytes["anthropic"]
            if not reqs or len(reqs) > most or size > limit:
                message = f"a batch holds 1 to {most} requests and at most {limit} bytes; got {len(reqs)} "
                message += f"requests, {size} bytes"
                return _error(400, message, anthropic=True)
            seen: set[str] = set()
            parsed: list[tuple[str, dict[str, Any]]] = []
            for r in reqs:
                cid = str(r.get("custom_id", "")) if isinstance(r, dict) else ""
                if not ANTHROPIC_ID.match(cid) or cid in seen or not isinstance(r.get("params"), dict):
                    message = (
                        "requests need unique custom_id matching ^[a-zA-Z0-9_-]{1,64}$ and params; got "
                        f"custom_id {cid!r}"
                    )
                    return _error(400, message, anthropic=True)
                seen.add(cid)
                parsed.append((cid, r["params"]))
            b = StubBatch("anthropic", _new_id("msgbatch_"), parsed, time.time(), status="in_progress")
            return await self._created_reply(b, self._anthropic_view)
        with self._lock:
            found = self.batches.get(batch_id)
            if found is None or found.provider != "anthropic":
                return _error(404, f"no message batch {batch_id!r}", anthropic=True)
            if sub == "results":
                if found.status != "ended":
                    return _error(400, f"batch {batch_id} has not ended", anthropic=True)
                self._downloads.append(batch_id)
                lines = [
                    json.dumps({"custom_id": cid, "result": found.results[cid]})
                    for cid, _ in found.requests
                    if cid in found.results
                ]
                return 200, ("\n".join(lines) + "\n").encode(), {"Content-Type": "application/binary"}
            if sub == "cancel" and found.status == "in_progress":
                found.status = "canceling"
                found.cancel_requested = time.time()
            return 200, self._anthropic_view(found), {}

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

    async def _created_reply(self, b: StubBatch, view: Callable[[StubBatch], dict[str, Any]]) -> Reply:
        """Register a new batch, start processing it, and answer its create call after ``create_delay``."""
        with self._lock:
            self.batches[b.id] = b
            self._order.append(b.id)
            self._created.append(
                {"provider": b.provider, "id": b.id, "custom_ids": [c for c, _ in b.requests]}
            )
        task = asyncio.get_running_loop().create_task(self._process(b))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        await asyncio.sleep(self.create_delay)
        with self._lock:
            return 200, view(b), {}

    async def _process(self, b: StubBatch) -> None:
        anthropic = b.provider == "anthropic"
        if not anthropic:
            await asyncio.sleep(self.validation_delay)
            with self._lock:
                b.status = "failed" if b.errors else "in_progress"
                b.stamps[b.status] = time.time()
                if b.errors:
                    return
        for cid, body in b.requests:
            if self.latency:
                await asyncio.sleep(self.latency)
            now = time.time()
            with self._lock:
                expired = self.expire_after is not None and now - b.created_at > self.expire_after
                if b.cancel_requested is not None or expired:
                    break
            status = self.fail(b.provider, cid, body) if self.fail is not None else None
            if status is None:
                try:
                    answer = await self.answer(b.provider, body)
                except Exception as exc:  # a malformed request body: an HTTP 400 for that request only
                    answer, status = error_body(400, f"malformed request: {exc}", anthropic), 400
            else:
                answer = error_body(status, f"stub failure for {cid}", anthropic)
            with self._lock:
                if status is None:
                    b.succeeded += 1
                    ok = {"type": "succeeded", "message": answer}
                    b.results[cid] = ok if anthropic else {"status_code": 200, "body": answer}
                else:
                    b.errored += 1
                    failed = {"type": "errored", "error": answer}
                    b.results[cid] = failed if anthropic else {"status_code": status, "body": answer}
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
            else:
                self._finish_openai(b, now, cancelled)

    def _finish_openai(self, b: StubBatch, now: float, cancelled: bool) -> None:
        """Write an OpenAI batch's output and error files and end it (call with the lock held)."""
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
                error = {"code": r["error_code"], "message": msg}
                err_lines.append(json.dumps({"id": rid, "custom_id": cid, "response": None, "error": error}))
            else:
                response = {"status_code": r["status_code"], "request_id": rid, "body": r["body"]}
                line = json.dumps({"id": rid, "custom_id": cid, "response": response, "error": None})
                (out_lines if r["status_code"] == 200 else err_lines).append(line)
        for lines, attr in ((out_lines, "output_file_id"), (err_lines, "error_file_id")):
            if lines:
                content = ("\n".join(lines) + "\n").encode()
                f = StubFile(_new_id("file-"), f"{b.id}_{attr}.jsonl", "batch_output", content, int(now))
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
