"""What every answer reader shares: the verdict type, the ParseError (the full response on ``.raw``, what
was expected on ``.expected``) and the answer normalised for reading."""

from __future__ import annotations

import re
from typing import Literal

from mitigate.errors import ParseError

Verdict = Literal["first", "second", "tie"]
"""A pairwise verdict: the first output, the second, or a tie."""

SNIPPET_CHARS = 80


def snippet(text: str, limit: int = SNIPPET_CHARS) -> str:
    """A one-line, truncated view of ``text`` for error messages (the full text stays on ``.raw``)."""
    flat = " ".join(text.split())
    if not flat:
        return "<empty response>"
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def format_number(x: float) -> str:
    """A number as error messages show it: at most six decimals, no trailing zeros ("4", "3.5")."""
    return f"{round(x, 6):g}"


def fail(reason: str, text: str, expected: str, **context: object) -> ParseError:
    """The :class:`ParseError` for ``text``: "expected <expected>; got <reason> in '<snippet>'"."""
    return ParseError(
        f"expected {expected}; got {reason} in {snippet(text)!r}", raw=text, expected=expected, **context
    )


def refuse(expected: str, got: str, raw: str, **context: object) -> ParseError:
    """The :class:`ParseError` "expected <expected>; got <got>", keeping ``raw`` and ``expected``."""
    return ParseError(f"expected {expected}; got {got}", raw=raw, expected=expected, **context)


def with_raw(exc: ParseError, raw: str) -> ParseError:
    """``exc`` again, carrying ``raw`` (the whole answer) instead of the part that was read."""
    return ParseError(exc.message, raw=raw, expected=exc.context.get("expected", ""))


WORD_NUMBERS = {
    word: str(n) for n, word in enumerate("zero one two three four five six seven eight nine ten".split())
}
"""Number words read as numbers ("scoring a one out of five")."""
_WORD_RE = re.compile(r"\b(" + "|".join(WORD_NUMBERS) + r")\b", re.IGNORECASE)
_EMPHASIS = re.compile(r"[*`]+")
_UNDERSCORES = re.compile(r"(?<=\w)_{1,2}|_{1,2}(?=\w)")
_DASHES = str.maketrans({"\u2013": "-", "\u2014": "-", "\u2212": "-", "\u2044": "/"})


def normalise_answer(text: str) -> str:
    """An answer with markdown emphasis and backticks dropped, dashes unified and number words as digits."""
    out = _UNDERSCORES.sub("", _EMPHASIS.sub("", text))
    return _WORD_RE.sub(lambda m: WORD_NUMBERS[m.group(1).lower()], out.translate(_DASHES))
