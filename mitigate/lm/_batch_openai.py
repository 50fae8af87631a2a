"""The OpenAI Batch API (and OpenAI-compatible servers that offer it) for :mod:`mitigate.lm._batch`.

A batch is a JSONL file (``purpose="batch"``) of one line per request, its ``body`` the live call's, then
``POST /v1/batches`` tagged ``metadata={"mitigate_batch": <local id>}`` (what a resumed run looks for).
Results come in an output file and an error file (``batch_expired`` / ``batch_cancelled`` for requests never
run), matched by ``custom_id``. Limits: 50,000 requests and 200 MB per file.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from functools import partial
from typing import Any, Final

from mitigate.lm._base import LMRequest, LMResponse
from mitigate.lm._batch import BatchAPI, BatchItemError, BatchLimits, BatchState, Group, Line, pack
from mitigate.lm._http import is_retryable_status
from mitigate.lm._openai import OpenAILM

ENDPOINT: Final = "/v1/chat/completions"
TAG = "mitigate_batch"
TERMINAL = frozenset({"completed", "failed", "expired", "cancelled"})


class OpenAIBatchAPI(BatchAPI):
    """Batches of chat completions for one :class:`~mitigate.lm._openai.OpenAILM`."""

    provider = "openai"
    per_sample = False
    limits = BatchLimits(max_requests=50_000, max_bytes=200 * 1024 * 1024)

    def __init__(self, lm: OpenAILM) -> None:
        super().__init__(lm)
        self.backend = lm

    def lines(self, requests: Sequence[tuple[str, LMRequest]]) -> list[Group]:
        """One line per request (its custom id the key), its body the live call's body."""
        return [(key, [(key, self.backend.chat_body(request))]) for key, request in requests]

    @staticmethod
    def _jsonl(lines: Sequence[Line]) -> bytes:
        return "".join(
            json.dumps({"custom_id": cid, "method": "POST", "url": ENDPOINT, "body": body}) + "\n"
            for cid, body in lines
        ).encode("utf-8")

    def chunks(self, groups: Sequence[Group]) -> list[list[Group]]:
        """Requests split at 50,000 lines or 200 MB per file (or the smaller limits set)."""
        return pack(groups, self.limits, size=lambda line: len(self._jsonl([line])))

    async def submit(self, local_id: str, lines: Sequence[Line]) -> str:
        """Upload the file and create the batch, tagged with ``local_id``."""
        client = self.backend.sdk_client()
        data = self._jsonl(lines)
        upload = await self.backend.sdk_call(
            "file upload",
            lambda: client.files.create(file=(f"mitigate-{local_id}.jsonl", data), purpose="batch"),
        )
        batch = await self.backend.sdk_call(
            "batch create",
            lambda: client.batches.create(
                input_file_id=upload.id, endpoint=ENDPOINT, completion_window="24h", metadata={TAG: local_id}
            ),
        )
        return str(batch.id)

    async def find(self, local_id: str, count: int, since: float, claimed: Iterable[str]) -> str | None:
        """The batch whose metadata carries ``local_id`` (newest first, stopping an hour before ``since``)."""
        client = self.backend.sdk_client()

        async def scan() -> str | None:
            async for batch in client.batches.list(limit=100):
                if (batch.metadata or {}).get(TAG) == local_id:
                    return str(batch.id)
                if batch.created_at < since - 3600:
                    return None
            return None

        return await self.backend.sdk_call("batch list", scan)

    async def poll(self, batch_id: str) -> BatchState:
        """Status and counts of one batch."""
        client = self.backend.sdk_client()
        batch = await self.backend.sdk_call("batch retrieve", lambda: client.batches.retrieve(batch_id))
        counts = batch.request_counts
        message = None
        if batch.status == "failed":
            errors = batch.errors.data if batch.errors and batch.errors.data else []
            message = (
                "; ".join(f"{e.code}: {e.message}" + (f" (line {e.line})" if e.line else "") for e in errors)
                or "the batch failed validation"
            )
        message = None if message is None else self.backend.scrubber.text(message)
        return BatchState(
            batch_id=batch_id,
            status=batch.status,
            ended=batch.status in TERMINAL,
            total=counts.total if counts else 0,
            succeeded=counts.completed if counts else 0,
            failed=counts.failed if counts else 0,
            message=message,
        )

    async def results(self, state: BatchState) -> dict[str, dict[str, Any] | BatchItemError]:
        """Every line of the output and error files by custom id (none for a batch that failed validation)."""
        client = self.backend.sdk_client()
        batch = await self.backend.sdk_call("batch retrieve", lambda: client.batches.retrieve(state.batch_id))
        out: dict[str, dict[str, Any] | BatchItemError] = {}
        for file_id in (batch.output_file_id, batch.error_file_id):
            if not file_id:
                continue
            content = await self.backend.sdk_call("file content", partial(client.files.content, file_id))
            for text in content.text.splitlines():
                if not text.strip():
                    continue
                row = json.loads(text)
                got = _result(row, batch.status)
                if isinstance(got, BatchItemError):  # the file's text is the server's: no key leaves in it
                    got = got.model_copy(update={"message": self.backend.scrubber.text(got.message)})
                out[str(row["custom_id"])] = got
        return out

    def response(self, request: LMRequest, answers: Sequence[dict[str, Any]]) -> LMResponse:
        """The chat.completion of the request's one line, priced as batch tokens."""
        return self.backend.parse_chat_completion(request, answers[0], batch=True)


def _result(row: dict[str, Any], batch_status: str) -> dict[str, Any] | BatchItemError:
    """One output/error-file line: the chat.completion body, or why there is none."""
    response = row.get("response") or None
    error = row.get("error") or None
    if response is not None and response.get("status_code") == 200 and isinstance(response.get("body"), dict):
        return dict(response["body"])
    if response is not None:
        status = int(response.get("status_code") or 0)
        body = response.get("body") or {}
        message = (body.get("error") or {}).get("message") if isinstance(body, dict) else None
        return BatchItemError(
            kind="errored",
            status=status,
            message=f"HTTP {status}: {message or body}",
            retryable=is_retryable_status(status),
        )
    code = (error or {}).get("code") or ""
    message = (error or {}).get("message") or f"no result (batch {batch_status})"
    if code == "batch_expired":
        return BatchItemError(kind="expired", message=message, retryable=True)
    if code == "batch_cancelled":
        return BatchItemError(kind="canceled", message=message)
    return BatchItemError(kind="errored", message=f"{code}: {message}" if code else message, retryable=False)
