"""What in a judge's answer is not the judge's own statement, blanked (with spaces: positions hold) before
any reader runs (docs/answer_reading.md): **reported speech** (:mod:`._reported`); **a copy with context**,
a run of words standing in a text the judge was shown and holding an answer and more (:mod:`._copies`); **a
marked copy**, a bare answer quoted from a source. A bare, unmarked copy of a judged text's answer may be
the judge's own value: it is blanked only in a second, *strict* text, and two different readings of the two
are a failure."""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Sequence

from mitigate.parse._common import comparable
from mitigate.parse._copies import (
    copied_runs,
    flat_lines,
    has_alnum,
    line_ends,
    lowered,
    source_index,
    stands_in,
)
from mitigate.parse._reported import marked_spans, reported_spans

Span = tuple[int, int]


def _within(span: Span, marks: Sequence[Span]) -> bool:
    """Whether the letters and digits of ``span`` lie inside one of ``marks``."""
    start, end = span
    return any(m0 <= start and end <= m1 for m0, m1 in marks)


def _core(text: str, span: Span) -> Span:
    """``span`` without its leading and trailing punctuation (a quotation mark around it)."""
    start, end = span
    while start < end and not text[start].isalnum():
        start += 1
    while end > start and not text[end - 1].isalnum() and text[end - 1] not in ")]}>":
        end -= 1
    return start, end


_DIGIT = re.compile(r"\d")
_KEEP = frozenset(".!?,;:\"'”’)")


def _alone(text: str, start: int, end: int) -> bool:
    """Whether ``text[start:end]`` is all its line holds, markup and punctuation aside."""
    left = text.rfind("\n", 0, start) + 1
    right = text.find("\n", end)
    line = text[left : len(text) if right < 0 else right]
    return re.sub(r"[\W_]+", "", line) == re.sub(r"[\W_]+", "", text[start:end])


def blank(text: str, spans: Sequence[Span]) -> str:
    """``text`` with every span replaced by spaces (line breaks kept); punctuation closing a span is kept, so
    the sentence it ended still ends there."""
    if not spans:
        return text
    chars = list(text)
    for start, end in spans:
        while end > start and text[end - 1] in _KEEP:
            end -= 1
        for k in range(max(0, start), min(end, len(chars))):
            if chars[k] not in "\r\n":
                chars[k] = " "
    return "".join(chars)


@functools.lru_cache(maxsize=64)  # the samples and criteria of one request read the same prompt and texts
def _template_parts(
    sources: tuple[str, ...], judged: tuple[str, ...], fold: bool, fast: bool
) -> tuple[str, ...]:
    """What ``sources`` hold besides the judged texts: the template's own words (and demos)."""
    texts = sorted((j for j in judged if j and not j.isspace()), key=len, reverse=True)
    lines_of: dict[str, set[str]] = {}

    # a line of some judged text's index (with ``fast``, its end words asked first)
    def inside(flat: str) -> bool:
        words = flat.split()
        for j in texts:
            heads, tails = line_ends(j, fold) if fast else ({words[0]}, {words[-1]}) if words else ((), ())
            if words and words[0] in heads and words[-1] in tails:
                if j not in lines_of:
                    lines_of[j] = set(flat_lines(j, fold).splitlines())
                if flat in lines_of[j]:
                    return True
        return False

    out = []
    for source in sources:
        for j in texts:
            source = source.replace(j, "\n")
        out.append("\n".join(line for line in source.splitlines() if not inside(flat_lines(line, fold))))
    return tuple(out)


def unquote(
    text: str,
    *,
    statement: Callable[[str], bool],
    bare: Callable[[str], bool],
    sources: Sequence[str] = (),
    judged: Sequence[str] = (),
    fold: bool = True,
    hint: re.Pattern[str] | None = None,
    fast: bool = True,
) -> tuple[str, str]:
    """``(own, strict)``: ``text`` with what is not the judge's own statement blanked (see the module
    docstring), and ``strict`` also blanking bare, unmarked copies of an answer a judged text holds and copies
    of the template's wording that hold more than an answer (an echoed prompt line). Both are ``text`` as
    :func:`~mitigate.parse._common.comparable` writes it, compared with ``sources`` and ``judged`` written
    alike.

    ``sources`` are the texts the judge was shown, ``judged`` the texts under judgment; with ``judged``, a
    copy of the template's own wording holding an answer is the judge's own statement. ``statement`` says
    whether a span alone reads as an answer (False where ``hint`` does not match), ``bare`` whether it is
    nothing but the answer in the format's own words; ``fold=False`` compares case. ``hint`` spares the search
    where no answer can be; ``fast=False`` searches every stretch, with the same result
    (``tests/parse/test_reading_fast_path.py``).
    """
    text, sources, judged = (
        comparable(text),
        [comparable(x) for x in sources],
        [comparable(x) for x in judged],
    )
    seen: dict[str, bool] = {}

    def states(span: str) -> bool:
        if span not in seen:
            seen[span] = statement(span)
        return seen[span]

    reported = reported_spans(text)
    own: list[Span] = [
        s for s in reported if (hint is None or hint.search(text, *s)) and states(text[s[0] : s[1]])
    ]
    strict: list[Span] = []
    if any(x and not x.isspace() for x in [*sources, *judged]):
        # whether the judged texts' index is non-empty, without building it: two texts or more (their lines
        # joined), or one holding a letter or digit (which every token has)
        given = [x for x in judged if x and not x.isspace()]
        judging = (
            (len(given) > 1 or any(has_alnum(lowered(x, fold)) for x in given))
            if fast
            else bool(source_index(judged, fold))
        )
        template = list(_template_parts(tuple(sources), tuple(judged), fold, fast) if judging else sources)
        runs = copied_runs(text, [*template, *judged], fold, hint, whole=sources, hot=hint if fast else None)
        judged_index = source_index(judged, fold) if runs else ""
        marks = marked_spans(text) if runs else []
        template_index = source_index(template, fold) if judging and runs else ""
        for start, end, norm in runs:
            piece = text[start:end]
            if " " not in norm and norm.isalnum():
                # one plain word or number standing in a source ("5", "a") is no quotation, unless it is a
                # whole line of a judged text (a bare answer "B" it holds alone) and alone on its line of the
                # answer or marked as a quotation there
                lines = f"\n{judged_index}\n"
                if (f"\n {norm} \n" in lines or f"\n {norm}. \n" in lines) and states(text[start:end]):
                    if _within(_core(text, (start, end)), marks):
                        own.append((start, end))
                    elif _alone(text, start, end):
                        strict.append((start, end))
                continue
            core = _core(text, (start, end))
            # a copy starting inside a third party's words is marked by the verb ("it claims Therefore, ...")
            if _within(core, marks) or any(r0 <= core[0] < r1 for r0, r1 in reported):
                if _DIGIT.search(piece) or states(piece):
                    own.append((start, end))
            elif states(piece):
                if bare(piece):
                    # the answer in the format's own words: the judge's own statement, unless a judged text
                    # holds it as written
                    if stands_in(norm, judged_index):
                        strict.append((start, end))
                elif template_index and stands_in(norm, template_index) and not stands_in(norm, judged_index):
                    # a line of the template holding an answer (a verdict from its list of verdicts, or an
                    # echoed instruction): the judge's own only when nothing else it says reads otherwise
                    strict.append((start, end))
                else:
                    own.append((start, end))
    own_text = blank(text, own)
    return own_text, blank(own_text, strict)
