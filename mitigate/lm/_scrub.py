"""The one place a backend's secrets are taken out of what a server sent.

A server may echo the API key anywhere (the answer's text, ``model``, a header, an error body, escaped in a
JSON string). Every network backend passes everything it hands on through a :class:`Scrubber` of its
secrets, at its boundary: each response (:meth:`Scrubber.response`) and each error (:meth:`Scrubber.error`,
which also drops a chained exception whose text holds a secret, so not even a ``--debug`` traceback shows
it). Whatever is later stored or printed comes from those two.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, TypeVar

from mitigate.lm._base import LMResponse

_E = TypeVar("_E", bound=BaseException)

MASK = "***"
"""What a secret is replaced with."""
PLACEHOLDER_KEY = "sk-no-key-required"
"""The key sent to a server when none is configured (local servers need none); not a secret."""
MIN_SECRET_CHARS = 4
"""Shorter strings are not treated as secrets (replacing them would mangle ordinary text)."""


class Scrubber:
    """Replaces every secret in server-sent text by :data:`MASK`; empty (and free) when there is no secret."""

    __slots__ = ("secrets",)

    def __init__(self, secrets: Iterable[str | None]) -> None:
        found = {
            s
            for s in secrets
            if s and s != PLACEHOLDER_KEY and len(s) >= MIN_SECRET_CHARS and "\x00" not in s
        }
        self.secrets: tuple[str, ...] = tuple(sorted(found, key=len, reverse=True))  # a longer one first

    def __bool__(self) -> bool:
        return bool(self.secrets)

    def __repr__(self) -> str:
        return f"Scrubber({len(self.secrets)} secret{'s' if len(self.secrets) != 1 else ''})"

    def holds(self, text: str) -> bool:
        """True when ``text`` contains a secret."""
        return any(s in text for s in self.secrets)

    def text(self, text: str) -> str:
        """``text`` with every secret replaced."""
        for secret in self.secrets:
            if secret in text:
                text = text.replace(secret, MASK)
        return text

    def value(self, value: Any) -> Any:
        """A JSON-like value (dicts, lists, strings) with every secret replaced in its strings and keys."""
        if not self.secrets:
            return value
        if isinstance(value, str):
            return self.text(value)
        if isinstance(value, dict):
            return {self.value(k): self.value(v) for k, v in value.items()}
        if isinstance(value, list | tuple):
            return type(value)(self.value(v) for v in value)
        return value

    def response(self, response: LMResponse) -> LMResponse:
        """``response`` with every secret replaced in what came from the server (texts, reasons, tokens,
        model)."""
        if not self.secrets:
            return response
        shown = [response.model]
        for c in response.choices:
            shown.append(c.text)
            if c.finish_reason is not None:
                shown.append(c.finish_reason)
            if c.logprobs is not None:
                shown.extend(t.token for t in c.logprobs)
                shown.extend(a for t in c.logprobs for a, _ in t.top)
        if not self.holds("\x00".join(shown)):  # one search of everything (a secret holds no NUL)
            return response
        return LMResponse.model_validate(self.value(response.model_dump()))

    def error(self, exc: BaseException) -> BaseException:
        """``exc`` (changed in place, and returned) with every secret replaced in its message, arguments and
        context; a chained exception whose text holds a secret is dropped from the chain."""
        if not self.secrets:
            return exc
        exc.args = tuple(self.value(a) if isinstance(a, str | dict | list | tuple) else a for a in exc.args)
        if hasattr(exc, "message") and isinstance(exc.message, str):
            exc.message = self.text(exc.message)
        context = getattr(exc, "context", None)
        if isinstance(context, dict):
            for key, item in list(context.items()):
                if isinstance(item, BaseException):
                    self.error(item)
                else:
                    item = self.value(item)
                context[key] = item
                if hasattr(exc, key):
                    setattr(exc, key, item)
        if self._chain_holds(exc):
            exc.__cause__ = None
            exc.__suppress_context__ = True
        return exc

    def chained(self, error: _E, cause: BaseException) -> _E:
        """``error`` as raised from ``cause``, scrubbed (:meth:`error`): the cause stays in its chain only
        when it shows no secret. Raise what it returns."""
        error.__cause__ = cause
        self.error(error)
        return error

    def _chain_holds(self, exc: BaseException) -> bool:
        """Whether an exception chained to ``exc`` (cause or context, a few levels deep) shows a secret."""
        seen = exc.__cause__ or exc.__context__
        for _ in range(8):
            if seen is None:
                return False
            try:
                shown = f"{seen!s} {seen!r} {seen.args!r}"
            except Exception:  # an exception whose str() fails: drop it rather than risk it
                return True
            if self.holds(shown):
                return True
            seen = seen.__cause__ or seen.__context__
        return False
