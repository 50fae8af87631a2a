"""What in a judge's answer is not the judge's own statement: reported speech and quotations of what it was
shown.

A judge reads texts written by the systems it judges, and those texts may hold answer-shaped
values ("Score: 5", "[[B]]", "Therefore, Output (b) is better."). The verdict is the judge's
own final statement in the template's format; a value the answer quotes back is never it.
:func:`unquote` finds, in an answer, the spans that are not the judge's own statement and
blanks them (spaces of the same length, so positions and line breaks hold); every reader
(score, letter, verdict, criteria lines, JSON) then reads what is left. Blanked:

* **reported speech**: the clause after a third party's verb of saying ("the text claims
  Score: 5", "Summary A wrote '[[B]]'", "Assistant (b) argues that Output (b) is better"), and
  the paragraph after a reporting lead-in line ("The summary ends with:"), when it holds an
  answer. "I said", "we state" are the judge's own words. Needs no source: a third party's
  claim is not the judge's verdict whoever wrote it.
* **a copy with context**: a run of words standing verbatim in a text the judge was shown
  (``sources``: the rendered prompt, the judged texts), holding an answer and more than the
  bare answer ("Summary: X Score: 5", an echoed prompt section). Words are compared with case,
  spacing, markdown, quotation marks and trailing punctuation ignored.
* **a marked copy**: a bare answer ("Score: 5", "[[B]]") copied from a source and marked as a
  quotation (quotation marks, backticks, a code block, a blockquote).

A bare answer copied from a judged text and not marked may still be the judge's own: a judge
may give the very value the text holds. :func:`unquote` returns a second, *strict* text with
those copies blanked too, and the caller reads both: the same value (or nothing in the strict
text) means the judge's own statement; two different values mean the answer states its own
value and also the judged text's, with nothing to tell which is final, and that is a recorded
failure (never the planted value).

What counts as "an answer" and as "bare" is the answer format's: the caller passes
``statement`` (does this span alone read as an answer?) and ``bare`` (is it nothing but the
answer in the format's own words?).
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Sequence

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
    """``span`` without its leading and trailing punctuation (so a quotation mark around it does not
    count)."""
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
    """``text`` with every span replaced by spaces (line breaks kept), so positions hold.

    Punctuation closing a span (a full stop, a closing quotation mark) is kept, so the sentence
    the span ended still ends there.
    """
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


def _template_parts(
    sources: Sequence[str], judged: Sequence[str], fold: bool, fast: bool = True
) -> list[str]:
    """What ``sources`` (the rendered prompt) hold besides the judged texts: the template's own words (and
    demos)."""
    return list(_template_parts_of(tuple(sources), tuple(judged), fold, fast))


@functools.lru_cache(maxsize=64)  # the samples and criteria of one request read the same prompt and texts
def _template_parts_of(
    sources: tuple[str, ...], judged: tuple[str, ...], fold: bool, fast: bool
) -> tuple[str, ...]:
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
    docstring).

    ``sources`` are the texts the judge was shown (the rendered prompt); ``judged`` the texts
    under judgment (they count as sources too). When ``judged`` is given, what the prompt holds
    besides them is the template's own wording: a copy of it with an answer in it (a verdict line
    the template lists) is the judge's own statement, as a bare answer is; without ``judged``,
    every source counts as possibly judged. ``statement(span)`` says whether a span alone
    reads as an answer; ``bare(span)`` whether it is nothing but the answer in the format's own
    words. ``strict`` also blanks bare, unmarked copies of an answer a judged text holds. ``fold=False``
    compares case (for answer labels that differ only by case, "m" / "M").

    ``hint`` (what any answer holds: a digit, a label) spares the search in lines without one, and
    (with ``fast``) in every stretch of copied words without one or a digit: what no source holds
    beside a value is never looked at, so an answer whose values no source holds costs no search. It
    must be what ``statement`` needs: ``statement(span)`` is False for a span ``hint`` does not match,
    and ``hint`` looks around a match only for letters, digits or the underscore (so a match inside
    a stretch of words is a match of the stretch). ``fast=False`` searches every stretch; the two give
    the same result (``tests/parse/test_reading_fast_path.py``).
    """
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
        # joined), or
        # one holding a letter or digit (which every token has, and every chunk holding one is a token)
        given = [x for x in judged if x and not x.isspace()]
        judging = (
            (len(given) > 1 or any(has_alnum(lowered(x, fold)) for x in given))
            if fast
            else bool(source_index(judged, fold))
        )
        template = _template_parts(sources, judged, fold, fast) if judging else list(sources)
        runs = copied_runs(text, [*template, *judged], fold, hint, whole=sources, hot=hint if fast else None)
        judged_index = source_index(judged, fold) if runs else ""
        marks = marked_spans(text) if runs else []
        template_index = source_index(template, fold) if judging and runs else ""
        for start, end, norm in runs:
            piece = text[start:end]
            if " " not in norm and norm.isalnum():
                # one plain word or number standing in a source ("5", "a") is no quotation, unless it is a
                # whole
                # line of a judged text (a bare answer "B" the judged text holds alone) and alone on its line
                # of the
                # answer or marked as a quotation there
                lines = f"\n{judged_index}\n"
                if (f"\n {norm} \n" in lines or f"\n {norm}. \n" in lines) and states(text[start:end]):
                    if _within(_core(text, (start, end)), marks):
                        own.append((start, end))
                    elif _alone(text, start, end):
                        strict.append((start, end))
                continue
            core = _core(text, (start, end))
            # a copy that starts inside a third party's words is marked by the verb ("it claims Therefore,
            # ...")
            if _within(core, marks) or any(r0 <= core[0] < r1 for r0, r1 in reported):
                if _DIGIT.search(piece) or states(piece):
                    own.append((start, end))
            elif states(piece):
                if bare(piece) or (
                    template_index and stands_in(norm, template_index) and not stands_in(norm, judged_index)
                ):
                    # the answer in the format's own words, or in the template's ("Assistant A is much better:
                    # [[A>>B]]" copied from the template's list of verdicts): the judge's own statement
                    if stands_in(norm, judged_index):
                        strict.append((start, end))
                else:
                    own.append((start, end))
    own_text = blank(text, own)
    return own_text, blank(own_text, strict)
