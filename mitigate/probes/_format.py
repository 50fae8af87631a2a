"""Format (rule-based): the same words as markdown or as plain prose, as a bullet list or as running text.

A judge with a format bias scores the same content differently when it is presented as
markdown rather than plain text, or as bullets rather than prose (Arena-Hard's style control
measures the same marks). Unlike :class:`~mitigate.probes._beauty.Beauty`, this probe adds no
header, bold lead words or emoji: it converts one presentation into the other and keeps every
word of the text.

``to``: ``auto`` (markdown becomes plain prose; plain prose becomes a bullet list), ``plain``,
``bullets`` or ``prose`` (bullets or numbered items joined into running text). A text already in
the asked-for form is a recorded failure of that item (no change to measure), never judged.
"""

from __future__ import annotations

import random
import re
from typing import ClassVar, Literal

from mitigate.constraints import Options
from mitigate.data import Item
from mitigate.probes._base import Direction, ProbedItem, ProbeRecord, RuleProbe
from mitigate.probes._text import sentences
from mitigate.registry import register

_HEADER = re.compile(r"^[ \t]{0,3}#{1,6}[ \t]+", re.MULTILINE)
_ITEM = re.compile(r"^[ \t]*(?:[-*+•]|\d{1,3}[.)])[ \t]+", re.MULTILINE)
_EMPHASIS = re.compile(r"(\*\*|__)(?=\S)(.+?)(?<=\S)\1|(?<![\w*])\*(?=\S)([^*\n]+?)(?<=\S)\*(?![\w*])")
_CODE = re.compile(r"`([^`\n]+)`")


def has_markdown(text: str) -> bool:
    """Whether ``text`` holds markdown marks: headers, list items, bold or italic spans, inline code."""
    return bool(_HEADER.search(text) or _ITEM.search(text) or _EMPHASIS.search(text) or _CODE.search(text))


def _unmark(line: str) -> str:
    line = _EMPHASIS.sub(lambda m: m.group(2) or m.group(3), line)
    return _CODE.sub(r"\1", line)


def to_plain(text: str) -> str:
    """Markdown as plain running text: marks removed, each header, list item or line one sentence, in
    order."""
    parts = []
    for raw in text.splitlines():
        line = _unmark(_ITEM.sub("", _HEADER.sub("", raw))).strip()
        if not line:
            continue
        parts.append(line if line[-1] in ".!?:;" else line + ".")
    return " ".join(parts)


def to_bullets(text: str) -> str:
    """Running text as a markdown bullet list, one sentence per item (words unchanged)."""
    return "\n".join(f"- {s}" for s in sentences(text) or [text.strip()])


@register("probe", "format")
class Format(RuleProbe):
    """Present the same words in another format: markdown <-> plain text, bullets <-> prose (``to``)."""

    to: Literal["auto", "plain", "bullets", "prose"] = "auto"
    predicts: ClassVar[Direction] = "any"
    family: ClassVar[str] = "format"
    parameter_constraints: ClassVar = {
        **RuleProbe.parameter_constraints,
        "to": [Options("auto", "plain", "bullets", "prose")],
    }

    def rewrite(self, text: str, rng: random.Random) -> tuple[str, str]:
        """``(probed text, what changed)``; the probed text equals ``text`` when there is nothing to
        convert."""
        target = self.to
        if target == "auto":
            target = "plain" if has_markdown(text) else "bullets"
        if target in ("plain", "prose"):
            if target == "prose" and not _ITEM.search(text):
                return text, "no list items to join"
            return to_plain(text), "markdown -> plain prose" if target == "plain" else "list -> prose"
        if _ITEM.search(text):
            return text, "already a list"
        return to_bullets(text), "prose -> bullet list"

    def apply(self, item: Item) -> ProbedItem:
        """The probed copy, or a recorded failure when the text is already in the asked-for form."""
        field = self.field_for(item)
        original = item.field(field)
        probed, added = self.rewrite(original, self.rng(item))
        if probed.strip() == original.strip():
            record = ProbeRecord(
                probe=self.name,
                item_id=item.id,
                field=field,
                original=original,
                probed="",
                added=added,
                error=f"nothing to convert: {added}",
            )
            return ProbedItem(None, record)
        record = ProbeRecord(
            probe=self.name, item_id=item.id, field=field, original=original, probed=probed, added=added
        )
        return ProbedItem(self.with_text(item, field, probed), record)
