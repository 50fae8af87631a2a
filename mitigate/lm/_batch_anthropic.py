"""Anthropic Message Batches for :mod:`mitigate.lm._batch` (at most 100,000 requests and 256 MB a batch).

The Messages API has no ``n``: a request with ``n`` samples becomes ``n`` lines whose messages its answer
joins. Prompt-cache breakpoints are planned over the whole batch first
(:meth:`~mitigate.lm._anthropic.AnthropicLM.observe_cache`), so a group's first request is marked too. The
API takes no tag: a batch created by a run killed before it recorded the id is found
(:meth:`AnthropicBatchAPI.find`) as the oldest batch no record claims, created after the intent was written
and holding exactly its request count; the session checks the result ids against the record.
"""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Iterable, Sequence
from typing import Any

from mitigate.lm._anthropic import AnthropicLM
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

    def __init__(self, lm: AnthropicLM) -> None:
        super().__init__(lm)
        self.backend = lm

    def lines(self, requests: Sequence[tuple[str, LMRequest]]) -> list[Group]:
        """One line per sample; every request shown to the cache planner before any is planned."""
        for _, request in requests:
            self.backend.observe_cache(request)
        out: list[Group] = []
        for key, request in requests:
            body = self.backend.message_body(request, learn=False)
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
        client = self.backend.sdk_client()
        requests: list[Any] = [{"custom_id": cid, "params": body} for cid, body in lines]  # JSON bodies
        batch = await self.backend.sdk_call(
            "batch create", lambda: client.messages.batches.create(requests=requests)
        )
        return str(batch.id)

    async def find(self, local_id: str, count: int, since: float, claimed: Iterable[str]) -> str | None:
        """The oldest unclaimed batch created after ``since`` with exactly ``count`` requests."""
        client = self.backend.sdk_client()
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

        return await self.backend.sdk_call("batch list", scan)

    async def poll(self, batch_id: str) -> BatchState:
        """Processing status and counts of one batch."""
        client = self.backend.sdk_client()
        batch = await self.backend.sdk_call(
            "batch retrieve", lambda: client.messages.batches.retrieve(batch_id)
        )
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
        client = self.backend.sdk_client()

        async def fetch() -> dict[str, dict[str, Any] | BatchItemError]:
            out: dict[str, dict[str, Any] | BatchItemError] = {}
            async for row in await client.messages.batches.results(state.batch_id):
                got = _result(row.result)
                if isinstance(got, BatchItemError):  # the result's text is the server's: no key leaves in it
                    got = got.model_copy(update={"message": self.backend.scrubber.text(got.message)})
                out[row.custom_id] = got
            return out

        return await self.backend.sdk_call("batch results", fetch)

    def response(self, request: LMRequest, answers: Sequence[dict[str, Any]]) -> LMResponse:
        """The request's samples (one message per line) as one response, priced as batch tokens."""
        return self.backend.response_from([self.backend.parse_message(a) for a in answers], batch=True)


def _timestamp(value: Any) -> float:
    if isinstance(value, dt.datetime):
        return value.timestamp()
    return dt.datetime.fromisoformat(str(value).replace("Z", "+00:00")).timestamp()


def _result(result: Any) -> dict[str, Any] | BatchItemError:
    """One result: the message's JSON, or why there is none."""
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
