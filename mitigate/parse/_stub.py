"""Reading an answer that completes the template's answer stub: "3" after "- Fluency (1-3):"
(docs/answer_reading.md). The first line is the completion ("3", "[[3]]", the line again in full or by its
label); a later line with another value, or a range ("2-3"), is a ParseError; an answer not starting with
it is left to the other readers (None)."""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass

from mitigate.errors import ParseError
from mitigate.parse._answer_line import VALUE, loose
from mitigate.parse._common import refuse

LIST_MARKER = r"(?:[-*•+]|\d{1,2}[.)]|\(?[A-Za-z0-9]\))"
"""A list marker opening a stub line: "-", "*", "3.", "(c)"."""
RANGE = r"(?:[\[(][^\[\]()\n]{0,24}[\])])"
"""A bracketed range after a stub's label: "(1-3)", "[1-10]"."""
_MARKUP = r"[*_`]*"


@dataclass(frozen=True)
class StubCompletion:
    """How the completion of an answer stub is found: ``label`` is the stub's ("Fluency"), ``continuation``
    what the judge writes after it with ``{value}`` ("[[{value}]]"), ``value`` a regex of one value,
    ``shown`` the format as error messages name it."""

    label: str
    continuation: str
    value: str
    shown: str = ""

    @functools.cached_property
    def _parts(self) -> tuple[str, str]:
        head, tail = self.continuation.strip().split(VALUE, 1)
        return (loose(head) + r"\s*" if head.strip() else ""), (r"\s*" + loose(tail) if tail.strip() else "")

    @functools.cached_property
    def _bare(self) -> re.Pattern[str]:
        """The completion alone on a line: "3", "**3**", "3.", "[[3]]"."""
        head, tail = self._parts
        return re.compile(
            rf"[ \t>]*{_MARKUP}{head}(?P<v>{self.value}){tail}{_MARKUP}[ \t]*[.!]?[ \t]*", re.IGNORECASE
        )

    @functools.cached_property
    def _labelled(self) -> re.Pattern[str]:
        """The stub's line written again and completed: "- Fluency (1-3): 3", "Fluency: 3"."""
        head, tail = self._parts
        label = loose(self.label)
        return re.compile(
            rf"[ \t>]*{LIST_MARKER}?[ \t]*{_MARKUP}{label}{_MARKUP}[ \t]*{RANGE}?[ \t]*"
            rf"{_MARKUP}[ \t]*[:=][ \t]*{_MARKUP}[ \t]*{head}(?P<v>{self.value}){tail}{_MARKUP}[ "
            r"\t]*[.!]?[ \t]*",
            re.IGNORECASE,
        )

    @functools.cached_property
    def _opening(self) -> re.Pattern[str]:
        """The completion opening a longer first line: "3 - it reads well"."""
        head, tail = self._parts
        return re.compile(
            rf"[ \t>]*{_MARKUP}{head}(?P<v>{self.value})(?!\w|\.\d){tail}{_MARKUP}(?P<rest>.*)", re.IGNORECASE
        )

    def _line_value(self, line: str) -> str | None:
        for pattern in (self._bare, self._labelled):
            found = pattern.fullmatch(line)
            if found is not None:
                return found.group("v").strip()
        return None

    def find(self, text: str, raw: str | None = None) -> str | None:
        """The value the answer ``text`` completes the stub with, or None; errors carry ``raw`` (default
        ``text``)."""
        raw = text if raw is None else raw
        lines = text.strip().splitlines()
        if not lines:
            return None
        first = lines[0]
        value = self._line_value(first)
        if value is None:
            opening = self._opening.fullmatch(first)
            if opening is None:
                return None
            rest = opening.group("rest")
            if re.match(r"\s*(?:-|–|—|to\b|or\b|and\b|,)\s*[*_`]*\d", rest):
                got = f"a range or alternatives {first.strip()[:80]!r}, not one value completing the stub"
                raise refuse(f"one answer {self.shown}", got, raw)
            if re.search(r"\d", rest):
                # "3 out of 3", "3/3", "3 (of 3)": the general reader judges a line with more numbers
                return None
            value = opening.group("v").strip()
        for later in lines[1:]:
            other = self._line_value(later)
            if other is not None and other.lower() != value.lower():
                expected = f"one answer {self.shown}"
                raise ParseError(
                    f"expected {expected}; the answer completes the stub with {value!r} and a "
                    f"later line gives {other!r}: no way to tell which is the judge's answer",
                    raw=raw,
                    expected=expected,
                )
        return value
