"""The providers' batch APIs for :mod:`mitigate.lm._batch`: OpenAI's (and compatible servers'), Anthropic's.

OpenAI's batches are tagged ``metadata={"mitigate_batch": <local id>}`` (what a resumed run looks for).
Anthropic's take no tag: a batch created by a run killed before it recorded the id is found as the oldest
batch no record claims, created after the intent was written and holding exactly its request count (the
session checks the result ids); the Messages API has no ``n``, so each sample is a line.
"""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Iterable, Sequence
from functools import partial
from typing import TYPE_CHECKING, Any, Final

from mitigate.lm._base import LMRequest, LMResponse
from mitigate.lm._batch import (
    BatchAPI,
    BatchItemError,
    BatchLimits,
    BatchState,
    Group,
    Line,
    custom_ids,
    pack,
)
from mitigate.lm._http import is_retryable_status

if TYPE_CHECKING:
    from mitigate.lm._anthropic import AnthropicLM
    from mitigate.lm._openai import OpenAILM

ENDPOINT: Final = "/v1/chat/completions"
TAG = "mitigate_batch"
TERMINAL = frozenset({"completed", "failed", "expired", "cancelled"})


class OpenAIBatchAPI(BatchAPI):
    """Batches of chat completions for one :class:`~mitigate.lm._openai.OpenAILM`."""

    provider = "openai"  # the base's limits: 50,000 lines, 200 MB
    lm: OpenAILM

    def lines(self, requests: Sequence[tuple[str, LMRequest]]) -> list[Group]:
        """One line per request (its custom id the key), its body the live call's body."""
        return [(key, [(key, self.lm.chat_body(request))]) for key, request in requests]

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
        client = self.lm.sdk_client()
        data = self._jsonl(lines)
        upload = await self.lm.sdk_call(
            "file upload",
            lambda: client.files.create(file=(f"mitigate-{local_id}.jsonl", data), purpose="batch"),
        )
        batch = await self.lm.sdk_call(
            "batch create",
            lambda: client.batches.create(
                input_file_id=upload.id, endpoint=ENDPOINT, completion_window="24h", metadata={TAG: local_id}
            ),
        )
        return str(batch.id)

    async def find(self, local_id: str, count: int, since: float, claimed: Iterable[str]) -> str | None:
        """The batch whose metadata carries ``local_id`` (newest first, stopping an hour before ``since``)."""
        client = self.lm.sdk_client()

        async def scan() -> str | None:
            async for batch in client.batches.list(limit=100):
                if (batch.metadata or {}).get(TAG) == local_id:
                    return str(batch.id)
                if batch.created_at < since - 3600:
                    return None
            return None

        return await self.lm.sdk_call("batch list", scan)

    async def poll(self, batch_id: str) -> BatchState:
        client = self.lm.sdk_client()
        batch = await self.lm.sdk_call("batch retrieve", lambda: client.batches.retrieve(batch_id))
        counts = batch.request_counts
        message = None
        if batch.status == "failed":
            errors = batch.errors.data if batch.errors and batch.errors.data else []
            said = "; ".join(
                f"{e.code}: {e.message}" + (f" (line {e.line})" if e.line else "") for e in errors
            )
            message = self.lm.scrubber.text(said or "the batch failed validation")
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
        client = self.lm.sdk_client()
        batch = await self.lm.sdk_call("batch retrieve", lambda: client.batches.retrieve(state.batch_id))
        out: dict[str, dict[str, Any] | BatchItemError] = {}
        for file_id in (batch.output_file_id, batch.error_file_id):
            if not file_id:
                continue
            content = await self.lm.sdk_call("file content", partial(client.files.content, file_id))
            for text in content.text.splitlines():
                if not text.strip():
                    continue
                row = json.loads(text)
                got = _openai_result(row, batch.status)
                if isinstance(got, BatchItemError):  # the file's text is the server's: no key leaves in it
                    got = got.model_copy(update={"message": self.lm.scrubber.text(got.message)})
                out[str(row["custom_id"])] = got
        return out

    def response(self, request: LMRequest, answers: Sequence[dict[str, Any]]) -> LMResponse:
        """The chat.completion of the request's one line, priced as batch tokens."""
        return self.lm.parse_chat_completion(request, answers[0], batch=True)


def _openai_result(row: dict[str, Any], batch_status: str) -> dict[str, Any] | BatchItemError:
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


CLOCK_SKEW = 120.0
"""Seconds a batch's ``created_at`` may precede the local time its intent was written."""
_RETRYABLE_ERRORS = frozenset({"api_error", "overloaded_error", "rate_limit_error", "timeout_error"})
_ERROR_STATUS = {
    "invalid_request_error": 400,
    "authentication_error": 401,
    "billing_error": 402,
    "permission_error": 403,
    "not_found_error": 404,
    "request_too_large": 413,
    "rate_limit_error": 429,
    "api_error": 500,
    "timeout_error": 504,
    "overloaded_error": 529,
}
"""The HTTP status of each Anthropic ``error.type`` (its API reference), so an errored batch request
is judged like the same failure of a live call (e.g. by the runner's circuit breaker)."""


class AnthropicBatchAPI(BatchAPI):
    """Message Batches for one :class:`~mitigate.lm._anthropic.AnthropicLM`."""

    provider = "anthropic"
    per_sample = True
    limits = BatchLimits(max_requests=100_000, max_bytes=256 * 1024 * 1024)
    lm: AnthropicLM

    def lines(self, requests: Sequence[tuple[str, LMRequest]]) -> list[Group]:
        """One line per sample; every request shown to the cache planner before any is planned."""
        for _, request in requests:
            self.lm.observe_cache(request)
        out: list[Group] = []
        for key, request in requests:
            body = self.lm.message_body(request, learn=False)
            out.append((key, [(cid, body) for cid in custom_ids(key, request.n, per_sample=True)]))
        return out

    def chunks(self, groups: Sequence[Group]) -> list[list[Group]]:
        """Requests split at 100,000 lines or 256 MB per batch (or the smaller limits set)."""
        return pack(
            groups,
            self.limits,
            overhead=16,
            size=lambda line: len(json.dumps({"custom_id": line[0], "params": line[1]})) + 2,
        )

    async def submit(self, local_id: str, lines: Sequence[Line]) -> str:
        """Create the batch (the API takes no tag; see :meth:`find`)."""
        client = self.lm.sdk_client()
        requests: list[Any] = [{"custom_id": cid, "params": body} for cid, body in lines]  # JSON bodies
        batch = await self.lm.sdk_call(
            "batch create", lambda: client.messages.batches.create(requests=requests)
        )
        return str(batch.id)

    async def find(self, local_id: str, count: int, since: float, claimed: Iterable[str]) -> str | None:
        """The oldest unclaimed batch created after ``since`` with exactly ``count`` requests."""
        client = self.lm.sdk_client()
        taken = set(claimed)

        async def scan() -> str | None:
            found: str | None = None
            async for batch in client.messages.batches.list(limit=100):
                created = _timestamp(batch.created_at)
                if created < since - CLOCK_SKEW:
                    break
                c = batch.request_counts
                total = c.processing + c.succeeded + c.errored + c.canceled + c.expired
                if batch.id not in taken and total == count:
                    found = str(batch.id)  # newest first: the last match is the oldest
            return found

        return await self.lm.sdk_call("batch list", scan)

    async def poll(self, batch_id: str) -> BatchState:
        client = self.lm.sdk_client()
        batch = await self.lm.sdk_call("batch retrieve", lambda: client.messages.batches.retrieve(batch_id))
        c = batch.request_counts
        return BatchState(
            batch_id=batch_id,
            status=batch.processing_status,
            ended=batch.processing_status == "ended",
            total=c.processing + c.succeeded + c.errored + c.canceled + c.expired,
            succeeded=c.succeeded,
            failed=c.errored + c.canceled + c.expired,
        )

    async def results(self, state: BatchState) -> dict[str, dict[str, Any] | BatchItemError]:
        """Every result of the ended batch by custom id."""
        client = self.lm.sdk_client()

        async def fetch() -> dict[str, dict[str, Any] | BatchItemError]:
            out: dict[str, dict[str, Any] | BatchItemError] = {}
            async for row in await client.messages.batches.results(state.batch_id):
                got = _anthropic_result(row.result)
                if isinstance(got, BatchItemError):  # the result's text is the server's: no key leaves in it
                    got = got.model_copy(update={"message": self.lm.scrubber.text(got.message)})
                out[row.custom_id] = got
            return out

        return await self.lm.sdk_call("batch results", fetch)

    def response(self, request: LMRequest, answers: Sequence[dict[str, Any]]) -> LMResponse:
        """The request's samples (one message per line) as one response, priced as batch tokens."""
        return self.lm.response_from([self.lm.parse_message(a) for a in answers], batch=True)


def _timestamp(value: Any) -> float:
    if isinstance(value, dt.datetime):
        return value.timestamp()
    return dt.datetime.fromisoformat(str(value).replace("Z", "+00:00")).timestamp()


def _anthropic_result(result: Any) -> dict[str, Any] | BatchItemError:
    kind = result.type
    if kind == "succeeded":
        return dict(result.message.model_dump(mode="json"))
    if kind == "errored":
        err = result.error.error
        err_type = getattr(err, "type", "error")
        return BatchItemError(
            kind="errored",
            message=f"{err_type}: {getattr(err, 'message', '')}",
            status=_ERROR_STATUS.get(err_type),
            retryable=err_type in _RETRYABLE_ERRORS,
        )
    if kind == "expired":
        return BatchItemError(
            kind="expired", message="the request was not run before the batch expired", retryable=True
        )
    return BatchItemError(kind="canceled", message="the batch was canceled before the request ran")
