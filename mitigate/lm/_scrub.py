"""Secrets taken out of whatever a server sent, however it wrote them, before anything is cut or kept.

A :class:`Scrubber` finds a key written plainly or in any encoding a server, an SDK or a ``repr`` may give it:
JSON escapes (``\\/``, ``\\u0073``, doubled backslashes), ``%``-encoding, HTML character references, and
base64 (the key at any of the three alignments of an ``Authorization: Basic`` value or a token, in the
standard or the URL-safe alphabet), each character written any of these ways. :meth:`Scrubber.clip` scrubs
before it cuts a snippet, so a key straddling the cut is never kept in part.
"""

from __future__ import annotations

import base64
import re
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
_MIN_BASE64_CHARS = 12
"""Base64 forms shorter than this are not searched (a short key's base64 is too short to be told apart)."""
_BACKSLASHES = 16
"""The most backslashes an escape is looked for behind (each ``repr`` of an escape doubles them)."""
_LONGEST_UNIT = _BACKSLASHES + 5
"""The most characters one written character of a secret takes (``\\u002f`` behind its backslashes)."""
_MARKS = ("\\u", "\\x", "\\/", "&#")
"""Every written form of a secret but the plain one, base64 and %-encoding holds one of these (a backslash
alone too, for a secret holding a quote or a backslash)."""
_PERCENT = re.compile("%[0-9a-fA-F]{2}")
_ESCAPE = re.compile(
    r"\\+(?:u([0-9a-fA-F]{4})|x([0-9a-fA-F]{2}))?|%([0-9a-fA-F]{2})|&#([xX]?)([0-9a-fA-F]{1,6});"
)
"""One escape (a run of backslashes, ``%XX``, a character reference), for a quick look at the text decoded."""


def _unescaped(match: re.Match[str]) -> str:
    u, x, percent, hexa, number = match.groups()
    code = u or x or percent
    if code is not None:
        return chr(int(code, 16))
    if number is not None:
        value = int(number, 16) if hexa else int(number) if number.isdigit() else -1
        return chr(value) if 0 <= value < 0x110000 else ""
    return ""  # backslashes alone (``\\/``)


def _hex(number: int, width: int) -> str:
    """A regex for ``number`` in hexadecimal either case, zero-padded to ``width`` digits."""
    return "".join(f"[{d}{d.upper()}]" if d.isalpha() else d for d in f"{number:0{width}x}")


def _unit(ch: str) -> str:
    """A regex for one character of a secret written any way: itself or ``\\uXXXX`` or ``\\xXX`` (behind
    any backslashes), ``%XX`` per UTF-8 byte, or an HTML character reference."""
    code = ord(ch)
    escaped = [re.escape(ch)]
    if code < 0x10000:
        escaped.append("u" + _hex(code, 4))
    if code < 0x100:
        escaped.append("x" + _hex(code, 2))
    forms = [rf"\\{{0,{_BACKSLASHES}}}(?:" + "|".join(escaped) + ")"]
    forms.append("".join("%" + _hex(b, 2) for b in ch.encode("utf-8")))
    forms.append(f"&#0{{0,3}}{code};|&#[xX]0{{0,3}}{_hex(code, 1)};")
    return "(?:" + "|".join(forms) + ")"


def _base64_forms(secret: str) -> set[str]:
    """The part of the base64 of ``secret`` that is the same wherever it stands in the encoded bytes (one per
    alignment, standard and URL-safe alphabets)."""
    data = secret.encode("utf-8")
    out: set[str] = set()
    for offset, skip in ((0, 0), (1, 2), (2, 3)):  # bytes before it, the characters they touch
        whole = (offset + len(data)) // 3 * 4  # characters of complete 3-byte groups
        form = base64.b64encode(b"\0" * offset + data).decode("ascii")[skip:whole]
        if len(form) >= _MIN_BASE64_CHARS:
            out.update((form, form.replace("+", "-").replace("/", "_")))
    return out


class Scrubber:
    """Replaces every secret in server-sent text, in any of its written forms, by :data:`MASK`; empty (and
    free) when there is no secret."""

    __slots__ = ("_ascii", "_marks", "_pattern", "plain", "reach", "secrets")

    def __init__(self, secrets: Iterable[str | None]) -> None:
        found = {
            s
            for s in secrets
            if s and s != PLACEHOLDER_KEY and len(s) >= MIN_SECRET_CHARS and "\x00" not in s
        }
        self.secrets: tuple[str, ...] = tuple(sorted(found, key=len, reverse=True))  # a longer one first
        forms = sorted(found.union(*(_base64_forms(s) for s in found)), key=len, reverse=True)
        self.plain: tuple[str, ...] = tuple(forms)
        """The forms searched as they are (the secrets and their base64); any other holds one of _MARKS."""
        self._marks = ("\\", "&#") if any('"' in s or "\\" in s for s in found) else _MARKS
        self.reach = _LONGEST_UNIT * len(forms[0]) if forms else 0
        """The most characters one written secret can take: a cut this far past a point keeps any secret
        starting before it whole."""
        self._ascii = all(f.isascii() for f in forms)
        self._pattern = re.compile("|".join("".join(map(_unit, f)) for f in forms)) if forms else None

    def __bool__(self) -> bool:
        return bool(self.secrets)

    def __repr__(self) -> str:
        return f"Scrubber({len(self.secrets)} secret{'s' if len(self.secrets) != 1 else ''})"

    def _may_hold(self, text: str) -> bool:
        """Whether ``text`` may show a secret: a plain form in it, or in it with its escapes decoded (each
        character once; a secret beyond ASCII, whose UTF-8 bytes the quick look does not join, always)."""
        if any(f in text for f in self.plain):
            return True
        if not any(m in text for m in self._marks) and not ("%" in text and _PERCENT.search(text)):
            return False
        if not self._ascii:
            return True
        decoded = _ESCAPE.sub(_unescaped, text)
        return any(f in decoded for f in self.plain)

    def holds(self, text: str) -> bool:
        """Whether ``text`` shows a secret in any written form."""
        pattern = self._pattern
        return pattern is not None and self._may_hold(text) and pattern.search(text) is not None

    def text(self, text: str) -> str:
        """``text`` with every written form of every secret replaced by :data:`MASK`."""
        pattern = self._pattern
        if pattern is None or not self._may_hold(text):
            return text
        return pattern.sub(MASK, text)

    def clip(self, text: str, limit: int, *, cut: bool = False) -> str:
        """``text`` scrubbed, then cut to ``limit`` characters: a secret straddling the cut is masked whole,
        never kept in part. ``cut``: ``text`` was already broken off at its end (a reader stopped), so a
        secret may straddle that end too: the characters that could hold its first part are dropped."""
        span = limit + self.reach
        if len(text) > span:
            text, cut = text[:span], True
        text = self.text(text)
        if cut and self.reach:
            text = text[: max(0, len(text) - self.reach)]
        return text[:limit]

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
        """``response`` with every secret replaced in what came from the server."""
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
        """``exc`` (changed in place) with every secret replaced, a chain showing one dropped."""
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
        """``error`` raised from ``cause``, scrubbed (the cause kept only when it shows no secret)."""
        error.__cause__ = cause
        self.error(error)
        return error

    def _chain_holds(self, exc: BaseException) -> bool:
        """Whether an exception chained to ``exc`` (cause or context, a few levels deep) shows a secret."""
        for seen in chain(exc, 9)[1:]:
            try:
                shown = f"{seen!s} {seen!r} {seen.args!r}"
            except Exception:  # an exception whose str() fails: drop it rather than risk it
                return True
            if self.holds(shown):
                return True
        return False


def chain(exc: BaseException, most: int = 8) -> list[BaseException]:
    """``exc`` and the exceptions chained to it (each one's cause, else its context): at most ``most``."""
    out: list[BaseException] = []
    seen: BaseException | None = exc
    while seen is not None and len(out) < most and seen not in out:
        out.append(seen)
        seen = seen.__cause__ or seen.__context__
    return out


NO_SECRETS = Scrubber(())
"""A scrubber of nothing (the default of a helper given none)."""
