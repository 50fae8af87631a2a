"""Reading the fields of a server's HTTP 200 answer, each checked for what it must be.

A field that is not what the API says it is (``"usage": "lots"``, a token count of ``"ten"``,
``1e999`` or ``-5``, a ``finish_reason`` that is an object, a ``model`` that is a list) is a
typed :class:`~mitigate.errors.LMCallError` with ``reason="malformed"``, naming the field,
what was expected, what came and the server (``where``, the backend's identity with its URL).
The run records it as that item's failure, and the circuit breaker stops a run whose server
answers every request so. Nothing is guessed: a count is never read as 0 because it was
unreadable, a reason never turned into text.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from mitigate.errors import LMCallError
from mitigate.lm._base import Usage

_LARGEST_COUNT = 2**53
"""Token counts at or above this are not counts (a float could not even hold them exactly)."""


def shown(value: Any, limit: int = 80) -> str:
    """``value`` as a short repr for a message."""
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


class AnswerFields:
    """Typed readers of one server's answer fields; each raises a malformed LMCallError naming the field."""

    __slots__ = ("backend", "where")

    def __init__(self, where: str, backend: str) -> None:
        self.where = where
        self.backend = backend

    def error(self, field: str, expected: str, got: Any) -> LMCallError:
        """The error of a field that is not ``expected``."""
        return LMCallError(
            f"{self.where} answered HTTP 200 with a malformed {field}; expected {expected}; got {shown(got)}",
            backend=self.backend,
            reason="malformed",
            kind=f"a malformed {field}",
            field=field,
        )

    def mapping(self, value: Any, field: str) -> Mapping[str, Any]:
        """An object (a missing or null one is empty)."""
        if value is None:
            return {}
        if not isinstance(value, Mapping):
            raise self.error(field, "an object", value)
        return value

    def count(self, value: Any, field: str) -> int:
        """A token count: a whole number >= 0 (a missing or null one is 0, as the APIs leave out what is
        none)."""
        if value is None:
            return 0
        if isinstance(value, int) and not isinstance(value, bool):
            if 0 <= value < _LARGEST_COUNT:
                return value
        elif (
            isinstance(value, float)
            and math.isfinite(value)
            and value.is_integer()
            and 0 <= value < _LARGEST_COUNT
        ):
            return int(value)
        raise self.error(field, f"a whole number from 0 to {_LARGEST_COUNT:,}", value)

    def text(self, value: Any, field: str) -> str:
        """A string."""
        if not isinstance(value, str):
            raise self.error(field, "a string", value)
        return value

    def optional_text(self, value: Any, field: str) -> str | None:
        """A string or null."""
        if value is not None and not isinstance(value, str):
            raise self.error(field, "a string or null", value)
        return value

    def logprob(self, value: Any, field: str) -> float:
        """A log-probability: a finite number <= 0 (a tiny positive rounding error is read as 0)."""
        if (
            isinstance(value, int | float)
            and not isinstance(value, bool)
            and math.isfinite(value)
            and value <= 1e-6
        ):
            return min(float(value), 0.0)
        raise self.error(field, "a finite number <= 0", value)

    def openai_usage(self, value: Any) -> Usage:
        """An OpenAI ``usage`` object (``prompt_tokens_details.cached_tokens``: the prompt tokens read from a
        cache)."""
        usage = self.mapping(value, "usage")
        details = self.mapping(usage.get("prompt_tokens_details"), "usage.prompt_tokens_details")
        prompt = self.count(usage.get("prompt_tokens"), "usage.prompt_tokens")
        cached = self.count(details.get("cached_tokens"), "usage.prompt_tokens_details.cached_tokens")
        if cached > prompt:
            raise self.error(
                "usage.prompt_tokens_details.cached_tokens", f"at most prompt_tokens ({prompt})", cached
            )
        return Usage(
            prompt_tokens=prompt,
            completion_tokens=self.count(usage.get("completion_tokens"), "usage.completion_tokens"),
            cached_prompt_tokens=cached,
        )
