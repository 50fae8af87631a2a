"""What every answer reader shares: the verdict type, the ParseError (the full response on ``.raw``, what
was expected on ``.expected``) and the answer normalised for reading."""

from __future__ import annotations

import functools
import html
import re
import string
import unicodedata
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


# Letters of other scripts drawn like a Latin letter (Unicode's confusables, TR39): Cyrillic, Greek, Armenian.
_CONFUSABLE = dict(
    zip(
        "АВЕКМНОРСТХУЅІЈԚԜҮӀаеорсухѕіјԁԛԝһӏүɑΑΒΕΖΗΙΚΜΝΟΡΤΥΧοαιρυχνϲϳՕօսհոıɡ",
        "ABEKMHOPCTXYSIJQWYlaeopcyxsijdqwhlyaABEZHIKMNOPTYXoaipuxvcjOouhnig",
        strict=True,
    )
)
_DOUBLE_QUOTES = "«»“”„‟「」『』〝〞〟﹁﹂﹃﹄＂｢｣⹂"
_SINGLE_QUOTES = "‹›‘’‚‛＇"
_IGNORABLE = re.compile(
    "[\u034f\u115f\u1160\u17b4\u17b5\u180b-\u180f\u3164\ufe00-\ufe0f\uffa0\U000e0100-\U000e01ef]"
)
"""Invisible characters that are no format character (Cf): joiners, fillers, variation selectors."""
_LABEL = re.compile(r"\([A-Za-z0-9]{1,2}\)")
_ASCII_LETTERS = frozenset(string.ascii_letters)


class _Folding(dict[int, "str | None"]):
    """What :func:`comparable` makes of each character past ASCII, worked out on its first use and kept."""

    def __missing__(self, code: int) -> str | None:
        ch = chr(code)
        out: str | None = ch
        if ch in _CONFUSABLE:
            out = _CONFUSABLE[ch]
        elif ch in _DOUBLE_QUOTES:
            out = '"'
        elif ch in _SINGLE_QUOTES:
            out = "'"
        elif unicodedata.category(ch) == "Cf" or _IGNORABLE.match(ch):
            out = None
        elif unicodedata.category(ch) == "Nd":
            out = str(unicodedata.decimal(ch))
        self[code] = out
        return out


_FOLDING = _Folding()
_NON_ASCII = re.compile(r"[^\x00-\x7f]")


def _folded(match: re.Match[str]) -> str:
    """One character past ASCII as :func:`comparable` writes it (only these are looked up)."""
    return _FOLDING[ord(match.group())] or ""


@functools.lru_cache(maxsize=1024)  # the prompt and the judged texts of one judgment are folded once
def comparable(text: str) -> str:
    """``text`` as every answer reader compares and reads it, a judge's answer and the texts it was shown
    alike (docs/answer_reading.md): HTML entities decoded, Unicode NFKC (full-width and styled letters,
    digits and brackets as plain ones), invisible format characters (zero-width, joiners, bidi marks, soft
    hyphens, variation selectors) dropped, letters of other scripts drawn like Latin ones as those, every
    decimal digit as its ASCII digit, every quotation mark Unicode knows as ``"`` (double) or ``'``
    (single), and a space between a word and a short bracketed label ("Output(b)" is "Output (b)")."""
    if "&" in text:
        text = html.unescape(text)
    if not text.isascii():
        text = _NON_ASCII.sub(_folded, unicodedata.normalize("NFKC", text))
    return _spaced_labels(text) if "(" in text else text


def _spaced_labels(text: str) -> str:
    """``text`` with a space between a letter and a short bracketed label right after it ("Output(b)")."""
    pieces, last, at = [], 0, text.find("(")
    while at >= 0:
        if at and text[at - 1] in _ASCII_LETTERS and _LABEL.match(text, at):
            pieces += [text[last:at], " "]
            last = at
        at = text.find("(", at + 1)
    return "".join(pieces) + text[last:] if pieces else text
