"""Where a template shows the judged item, and where text added before the item goes.

:func:`item_layout` finds in one message template the **item section** (from the first slot's heading,
``Source Text:``, ``<article>``, ``[BEGIN DATA]`` ..., to the last slot's line and its closing markup;
demos repeat it with their own texts), the **lead-in** above it (G-Eval's ``Example:``: part of the judged
item, not repeated) and the **insertion point** (the lead-in's start) where demos go. How many label lines
the first heading takes is read from the later slots' headings. A first slot inside a sentence has no
heading to put text before: :attr:`ItemLayout.problem` says so.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache

from mitigate.prompt._parts import DEMOS_MARK, GUIDELINE_MARK, SLOT_RE

_MAX_HEADING_LINES = 3  # label lines in the first heading when no later slot shows a heading's length
_MAX_LEAD_IN = 2  # lead-in lines at most above the first heading
_LABEL_LEN = 100  # a longer line is prose, never a heading

_MARKUP_RE = re.compile(r"<\|[^|\n]*\|>|</?[A-Za-z_][^<>\n]*>|\[[^\[\]\n]*\]|[^\w]|_")
"""Tags, ``<|...|>`` markers, bracketed labels and punctuation: what a markup-only line consists of."""

_CLOSER_RE = re.compile(r"^\s*(?:</[A-Za-z_][^<>\n]*>|[\[<]\|?[^\]>\n]*\bend\b[^\]>\n]*\|?[\]>])\s*$", re.I)
"""A closing line that may stand after a blank line: ``</summary>``, ``[END DATA]``, ``<|The End of
...|>``."""

_OPEN_TAG_RE = re.compile(r"^\s*<([A-Za-z_][\w.-]*)(?:\s[^<>\n]*)?>\s*$")
_OPENER_RE = re.compile(
    r"^\s*(?:<[A-Za-z_][^<>/\n]*>"  # a tag
    r"|[\[<]\|?[^\]>\n]*\b(?:begin|start)\b[^\]>\n]*\|?[\]>])\s*$",
    re.I,
)
"""An opening line: ``<summary>``, ``[BEGIN DATA]``, ``[The Start of Assistant's Answer]``."""
_INLINE_LABEL_END = (":", "：", ">", "]", "|", "=", "-", "–", "—")


@dataclass(frozen=True)
class ItemLayout:
    """Where one message template shows the judged item (offsets): the item section ``start``/``end``,
    ``insert_at`` for text added before the item, and the ``problem`` when nothing can go there."""

    start: int
    end: int
    insert_at: int
    problem: str | None = None


@dataclass(frozen=True)
class _Line:
    start: int
    end: int  # before the line break
    text: str

    @property
    def blank(self) -> bool:
        return not self.text.strip()


def _lines(template: str) -> list[_Line]:
    """The template's lines split at LF (a CR before it belongs to the break), with their offsets."""
    out: list[_Line] = []
    pos = 0
    for raw in template.split("\n"):
        body = raw[:-1] if raw.endswith("\r") else raw
        out.append(_Line(pos, pos + len(body), body))
        pos += len(raw) + 1
    return out


def _marked(text: str) -> bool:
    return GUIDELINE_MARK in text or DEMOS_MARK in text or bool(SLOT_RE.search(text))


def markup_only(text: str) -> bool:
    """True for a line of tags, bracketed labels and delimiters only ("<inputs>", "[BEGIN DATA]", "***")."""
    s = text.strip()
    return bool(s) and not _marked(s) and not _MARKUP_RE.sub("", s)


def _core(text: str) -> str:
    return text.strip().strip("*_`\"' ").strip()


def _ends_label(text: str) -> bool:
    return _core(text).endswith((":", "："))


def _is_label(text: str) -> bool:
    """A heading line: short, a label ("Source Text:", "## Article", "<article>"), not a sentence."""
    s = text.strip()
    if not s or len(s) > _LABEL_LEN or _marked(s):
        return False
    if markup_only(s) or _ends_label(s) or s.startswith("#"):
        return True
    core = _core(s)
    return bool(core) and len(core) <= 60 and not core.endswith((".", "!", "?", ",", ";"))


def _is_lead_in(text: str) -> bool:
    """A line that introduces the judged item as a whole ("Example:", "Here is the data:", "# Data")."""
    s = text.strip()
    return bool(s) and len(s) <= 80 and not _marked(s) and (_ends_label(s) or s.startswith("#"))


def inline_label(prefix: str) -> bool:
    """True when the words before a slot on its line are a label ("Article: ", "<article>")."""
    core = prefix.rstrip().rstrip("\"'`“«(*_ ").rstrip()
    return core.endswith(_INLINE_LABEL_END)


_TAGS_RE = re.compile(r"<\|[^|\n]*\|>|</?[A-Za-z_][^<>\n]*>|\[[^\[\]\n]*\]")


def _has_words(text: str, *, markup: bool = True) -> bool:
    """True when ``text`` holds a letter or digit (outside tags and brackets unless ``markup``)."""
    return bool(re.search(r"[^\W_]", text if markup else _TAGS_RE.sub(" ", text)))


def _heading_part(text: str) -> str:
    """The heading words of a line: the text before its first slot (the whole line when it holds none)."""
    found = SLOT_RE.search(text)
    return text[: found.start()] if found else text


def _label_lines_between(lines: list[_Line]) -> int:
    """The heading lines (labels, not markup) among ``lines``, the text between two slots' lines."""
    return sum(1 for ln in lines if not ln.blank and not markup_only(ln.text) and _is_label(ln.text))


@lru_cache(maxsize=256)
def item_layout(template: str) -> ItemLayout | None:
    """The item section, lead-in and insertion point of ``template``; None without a slot."""
    slots = list(SLOT_RE.finditer(template))
    if not slots:
        return None
    lines = _lines(template)

    def line_of(offset: int) -> int:
        return next(i for i, ln in enumerate(lines) if ln.start <= offset <= ln.end)

    first, last = slots[0], slots[-1]
    f = line_of(first.start())
    slot_lines = sorted({line_of(s.start()) for s in slots})
    problem = _sentence_problem(template, lines[f], first, slots)

    # how many heading lines a slot has, read from the later slots (None: one slot line only)
    found = [_label_lines_between(lines[a + 1 : b]) for a, b in zip(slot_lines, slot_lines[1:], strict=False)]
    cap = max(found) if found else None

    top, used = f, 0
    prefix = template[lines[f].start : first.start()]
    if not _has_words(prefix):  # the slot starts its line: its heading is the nearest line above
        i = f - 1
        while i >= 0 and lines[i].blank:
            i -= 1
        text = lines[i].text if i >= 0 else ""
        near = i == f - 1 and len(text.strip()) <= _LABEL_LEN
        if i >= 0 and not _marked(text) and not _CLOSER_RE.match(text) and (_is_label(text) or near):
            top, used = i, (0 if markup_only(text) else 1)
    top = _extend_heading(lines, top, used, cap, slot_lines[-1])
    end = _section_end(lines, line_of(last.end()))
    insert_at = lines[_lead_in_top(lines, top)].start
    return ItemLayout(start=lines[top].start, end=end, insert_at=insert_at, problem=problem)


def _sentence_problem(
    template: str, line: _Line, first: re.Match[str], slots: list[re.Match[str]]
) -> str | None:
    """Why the first slot has no heading to stand after (it sits inside a sentence), else None."""
    prefix = template[line.start : first.start()]
    following = [s for s in slots if s.start() > first.start() and s.start() <= line.end]
    suffix = template[first.end() : following[0].start() if following else line.end]
    inside = (_has_words(prefix) and not inline_label(prefix)) or (
        not _has_words(prefix) and _has_words(suffix, markup=False)
    )
    if not inside:
        return None
    shown = line.text.strip()
    shown = shown if len(shown) <= 90 else shown[:87] + "..."
    return (
        f"the template's first slot {first.group(0)} stands inside the sentence {shown!r}, so the judged "
        "item has no heading to put text before; expected the slot on a line of its own or after a "
        "heading such as 'Summary:'"
    )


def _extend_heading(lines: list[_Line], top: int, used: int, cap: int | None, last_slot_line: int) -> int:
    """The first line of the first slot's heading, grown upward from ``top`` (see the module docstring)."""
    limit = _MAX_HEADING_LINES if cap is None else max(cap, used)
    while top > 0:
        i, gap = top - 1, False
        while i >= 0 and lines[i].blank:
            i, gap = i - 1, True
        if i < 0:
            break
        text = lines[i].text
        if _marked(text):
            break
        if markup_only(text):
            if _CLOSER_RE.match(text):
                break  # the end of something above ("</example>"), not part of the item's heading
            opener = _OPEN_TAG_RE.match(text)
            if not gap or (opener and _closes_after(lines, last_slot_line, opener.group(1))):
                top = i
                continue
            break
        if not _is_label(text) or used >= limit or (gap and cap is None):
            break
        if _ends_label(text) and not gap and _ends_label(_heading_part(lines[top].text)):
            break  # "Example:" stacked on "Source Text:": a lead-in
        top, used = i, used + 1
    return top


def _closes_after(lines: list[_Line], last_slot_line: int, tag: str) -> bool:
    closer = f"</{tag}>"
    return any(ln.text.strip() == closer or ln.text.strip().endswith(closer) for ln in lines[last_slot_line:])


def _section_end(lines: list[_Line], last: int) -> int:
    """The end of the item section: the last slot's line, then closing markup (adjacent, or past blanks)."""
    end = lines[last].end
    i = last + 1
    while i < len(lines):
        j, gap = i, False
        while j < len(lines) and lines[j].blank:
            j, gap = j + 1, True
        if j >= len(lines) or not markup_only(lines[j].text) or _OPENER_RE.match(lines[j].text):
            break  # an opening line after the item starts something else ("<instructions>")
        if gap and not _CLOSER_RE.match(lines[j].text):
            break
        end, i = lines[j].end, j + 1
    return end


def _lead_in_top(lines: list[_Line], top: int) -> int:
    """The first line of the lead-in above the heading at ``top`` (``top`` itself when there is none)."""
    start = top
    for _ in range(_MAX_LEAD_IN):
        i, gap = start - 1, False
        while i >= 0 and lines[i].blank:
            i, gap = i - 1, True
        if i < 0 or not _is_lead_in(lines[i].text):
            break
        if gap and i > 0 and not lines[i - 1].blank:
            break  # the last line of a paragraph of instructions, not a lead-in of its own
        start = i
    return start
