"""Small text helpers the rule-based probes share: sentence splitting and joining an insertion."""

from __future__ import annotations

import re
from typing import Literal

Where = Literal["start", "end"]
"""Where an insertion goes: before the text or after it."""

_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=\S)")


def sentences(text: str) -> list[str]:
    """``text`` split into sentences at ``.``, ``!`` or ``?`` followed by white space (line breaks too)."""
    flat = " ".join(text.split())
    return [s for s in _SENTENCE_END.split(flat) if s]


def join(text: str, added: str, where: Where, sep: str = " ") -> str:
    """``added`` placed before (``start``) or after (``end``) ``text``, separated by ``sep``."""
    body = text.rstrip() if where == "end" else text.lstrip()
    return f"{added}{sep}{body}" if where == "start" else f"{body}{sep}{added}"
