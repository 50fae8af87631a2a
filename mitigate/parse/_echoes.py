"""Lines of an answer that copy the prompt's own scoring options: descriptions of a score, not a score
given."""

from __future__ import annotations

import functools
import re
from collections.abc import Sequence

_HEAD = re.compile(r"^\W*(?:(?:score|rating|point)s?\s*)?\(?\d+(?:\.\d+)?\)?\s*(?:means|[:=\-–—)])?", re.I)
_MARKUP = re.compile(r"[*`_\"']")


def strip_echoed_lines(text: str, echoes: Sequence[str]) -> str:
    """``text`` without the lines that copy one of ``echoes`` (the prompt's own rubric lines).

    A judge sometimes repeats a rubric line ("Score 1: The model's responses are irrelevant
    ...") before or instead of answering; that line names a score it is *describing*, not
    giving. A line is an echo when, after its "Score N:" style head, it starts with the
    first 24 characters of an option's description (case and spacing ignored).
    """
    keys = _keys(tuple(echoes))
    if not keys:
        return text
    out = []
    for line in text.splitlines(keepends=True):
        body = _flat(_HEAD.sub("", line))
        if body and body.startswith(keys):
            continue
        out.append(line)
    return "".join(out)


@functools.lru_cache(maxsize=256)  # the same options for every answer to one prompt
def _keys(echoes: tuple[str, ...]) -> tuple[str, ...]:
    """What an echoed line starts with: the first 24 characters of each option description of 12 or more."""
    return tuple(sorted({_flat(e)[:24] for e in echoes if len(_flat(e)) >= 12}))


def _flat(text: str) -> str:
    return " ".join(_MARKUP.sub("", text).lower().split())
