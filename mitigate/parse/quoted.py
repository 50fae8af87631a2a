"""What in a judge's answer is not the judge's own statement: reported speech and quotations of what it was shown.

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

__all__ = ["copied_runs", "marked_spans", "reported_spans", "unquote"]

Span = tuple[int, int]

_DROP = str.maketrans("", "", "*`_\"“”‘’'")


@functools.lru_cache(maxsize=1 << 16)
def _norm(token: str, fold: bool = True) -> str:
    """A token as compared with a source: lower case (unless ``fold`` is False), markdown and quotation marks
    dropped, a comma, colon or semicolon after it dropped, and a sentence end after it kept as one full stop
    ("5." and "5!" are "5.")."""
    low = token.translate(_DROP)
    low = (low.lower() if fold else low).rstrip(",;:")
    core = low.rstrip(".!?")
    return core + "." if core != low and core else core


def _tokens(text: str, fold: bool = True) -> list[tuple[str, int, int]]:
    """The words of ``text`` (normalised, with their spans); tokens with no letter or digit (">", "-", "#") are left out."""
    out = []
    for m in _WORD.finditer(text):
        norm = _norm(m.group(0), fold)
        if norm and _HAS_ALNUM(norm):
            out.append((norm, m.start(), m.end()))
    return out


_WORD = re.compile(r"\S+")
_HAS_ALNUM = re.compile(r"[^\W_]").search


def _stands(run: str, index: str) -> bool:
    """Whether the run of tokens ``run`` stands in a line of ``index`` (its last word with or without a sentence end)."""
    last = run.rstrip(".")
    return f" {last} " in index or f" {last}. " in index


_TRAIL_SEP = re.compile(r"[,;:]+(?=\s|$)")
_TRAIL_END = re.compile(r"(?<=\S)[.!?]+(?=\s|$)")
_NO_ALNUM = re.compile(r"(?<!\S)[^\w\s]+(?=\s|$)")


@functools.lru_cache(maxsize=1024)
def _flat_lines(text: str, fold: bool = True) -> str:
    """``text`` as :func:`_tokens` sees it, one line per line, each with a space at both ends (whole-token search).

    The same normalisation as :func:`_norm`, done on the whole text at once.
    """
    out = []
    for line in (text.lower() if fold else text).translate(_DROP).splitlines():
        flat = _NO_ALNUM.sub(" ", _TRAIL_END.sub(".", _TRAIL_SEP.sub("", line)))
        if flat.strip():
            out.append(" " + " ".join(flat.split()) + " ")
    return "\n".join(out)


def _index(texts: Sequence[str], fold: bool = True) -> str:
    """Every line of every text, normalised (see :func:`_flat_lines`), one per line."""
    return "\n".join(_flat_lines(x, fold) for x in texts if x and x.strip())


class _Corpus:
    """The source texts as lines of normalised tokens, with where each token (sentence end aside) occurs."""

    def __init__(self, index: str) -> None:
        self.text = index
        self.lines = [line.split() for line in index.split("\n")]
        self.where: set[str] = set()
        self.pairs: dict[str, list[tuple[int, int]]] = {}  # "token next" -> where the pair starts
        for n, tokens in enumerate(self.lines):
            for k, token in enumerate(tokens):
                self.where.add(token.rstrip("."))
                if k + 1 < len(tokens):
                    self.pairs.setdefault(f"{token} {tokens[k + 1].rstrip('.')}", []).append((n, k))

    def longest(self, toks: Sequence[str], i: int) -> int:
        """How many tokens from ``toks[i]`` on stand together in one line (the last with or without its sentence end,
        the others exactly as written)."""
        if toks[i].rstrip(".") not in self.where:
            return 0
        alive = self.pairs.get(f"{toks[i]} {toks[i + 1].rstrip('.')}") if i + 1 < len(toks) else None
        if not alive:
            return 1
        size = 2
        while i + size < len(toks):
            exact, loose = toks[i + size - 1], toks[i + size].rstrip(".")
            alive = [(n, k) for n, k in alive if k + size < len(self.lines[n]) and self.lines[n][k + size - 1] == exact
                     and self.lines[n][k + size].rstrip(".") == loose]
            if not alive:
                break
            size += 1
        return size


@functools.lru_cache(maxsize=512)  # bounded: the corpus of a 2,000-character article holds about 100 kB
def _corpus(text: str, fold: bool) -> _Corpus:
    return _Corpus(_flat_lines(text, fold))


def copied_runs(text: str, sources: Sequence[str], fold: bool = True, hint: re.Pattern[str] | None = None,
                whole: Sequence[str] = ()) -> list[tuple[int, int, str]]:
    """The maximal runs of words of ``text`` that stand verbatim in one of ``sources``: (start, end, normalised run).

    Runs are found left to right, each as long as it can be, within one line of ``text`` and
    one line of a source (so a copied line never swallows the answer line after it). With
    ``hint``, only lines where it matches are searched (a line without a value holds no answer).
    ``whole`` are texts the sources are parts of (a rendered prompt, of its template's words and
    the judged texts): two adjacent runs that stand together in one of them are one run.
    """
    corpora = [_corpus(x, fold) for x in sources if x and x.strip()]
    if not corpora:
        return []
    joined: list[str] = []  # the index of ``whole``, built the first time two runs meet

    def together(run: str) -> bool:
        if not whole:
            return False
        if not joined:
            joined.append(_index(whole, fold))
        return _stands(run, joined[0])

    runs: list[tuple[int, int, str]] = []
    offset = 0
    for line in text.splitlines(keepends=True):
        if hint is not None and not hint.search(line):
            offset += len(line)
            continue
        toks = _tokens(line, fold)
        words = [t for t, _, _ in toks]
        i = 0
        last: tuple[int, int] | None = None  # the previous run's token range, to join an adjacent one
        while i < len(toks):
            size = max(c.longest(words, i) for c in corpora)
            if not size:
                i += 1
                continue
            start = i
            if last is not None and last[1] == i and together(" ".join(words[last[0]: i + size])):
                start = last[0]
                runs.pop()
            runs.append((toks[start][1] + offset, toks[i + size - 1][2] + offset,
                         " ".join(words[start: i + size]).rstrip(".")))
            last = (start, i + size)
            i += size
        offset += len(line)
    return runs


_FENCE = re.compile(r"```.*?(?:```|\Z)", re.S)
_TICKS = re.compile(r"`[^`\n]+`")
_QUOTES = re.compile(r"\"[^\"\n]+\"|“[^”\n]+”|‘[^’\n]+’|(?<![\w])'[^'\n]+'(?![\w])")
_BLOCKQUOTE = re.compile(r"(?m)^[ \t]*>.*$")


def marked_spans(text: str) -> list[Span]:
    """Spans ``text`` marks as quotations: a fenced code block, backticks, quotation marks, a blockquote line."""
    spans: list[Span] = []
    for pattern in (_FENCE, _TICKS, _QUOTES, _BLOCKQUOTE):
        spans.extend((m.start(), m.end()) for m in pattern.finditer(text))
    return spans


# A verb of saying whose clause reports someone else's words ("the text claims", "Summary A wrote"). Forms that
# are also participles ("the groups mentioned", "as stated") count only before "that", a colon or a quotation.
_QUOTE_NEXT = r"(?=[ \t]*(?:that\b|[:\"“'‘`]))"
_REPORT = re.compile(
    r"\b(?:says|states|claims|writes|wrote|argues|asserts|insists|declares|quotes|"
    r"(?:reads|goes|ends|finishes|closes|begins|starts|opens|mentions|contains|includes)"
    + _QUOTE_NEXT + "|"
    r"(?:said|stated|claimed|argued|asserted|insisted|declared|quoted|mentioned|written)" + _QUOTE_NEXT + "|"
    r"(?:ends|ended|concludes|concluded|closes|closed|finishes|finished|opens|opened|begins|began|starts|started)"
    r"\s+(?:with|by))\b",
    re.IGNORECASE,
)
# The judge speaking of itself ("as I said", "we stated"): its own words, not reported.
_OWN_SUBJECT = re.compile(r"\b(?:I|we|me|my|our|I've|I'd|I'll|I'm|we've|we'd)\b", re.IGNORECASE)
# Where the subject of a verb begins: the last clause boundary before it.
_SUBJECT_START = re.compile(r"(?:[.!?;:,\n]|\bthat\b|\band\b|\bbut\b|\bwhile\b|\bbecause\b|\bso\b)", re.IGNORECASE)
# Where a reported clause ends.
_CLAUSE_END = re.compile(r"[.!?](?=[\s\"'”’)]|$)|[;,]|\n|\s(?:but|however|whereas|while|so)\b", re.IGNORECASE)
_LETTER = re.compile(r"[A-Za-z]")
_LEAD = re.compile(r"[ \t]*(?:that\b)?[ \t]*:?[ \t]*")
_PARAGRAPH = re.compile(r"\n*[^\n]*(?:\n(?![ \t]*(?:\n|$))[^\n]*)*")
_OPEN = {'"': '"', "“": "”", "'": "'", "‘": "’", "`": "`"}


def reported_spans(text: str) -> list[Span]:
    """The clauses ``text`` reports from a third party: after "<someone> says/claims/wrote/argues ...".

    The span runs from after the verb (and an optional "that" or colon) to the end of the
    reported clause: the closing quotation mark when the report opens one, the next paragraph
    when the verb ends its line ("The summary ends with:"), else the end of the clause (a full
    stop, a semicolon, a line break, ", but", ", so" ...). A verb whose subject is the judge
    ("as I said") reports nothing.
    """
    spans: list[Span] = []
    for verb in _REPORT.finditer(text):
        starts = [m.end() for m in _SUBJECT_START.finditer(text, max(0, verb.start() - 200), verb.start())]
        subject = text[starts[-1] if starts else max(0, verb.start() - 200): verb.start()]
        if _OWN_SUBJECT.search(subject) or not _LETTER.search(subject):
            continue  # the judge's own words, or no subject at all ("Reads well.")
        lead = _LEAD.match(text, verb.end())
        begin = lead.end() if lead else verb.end()
        if begin < len(text) and text[begin] in ",.;)!?":
            continue  # nothing reported ("the groups mentioned, Output (a) is better")
        if begin < len(text) and text[begin] in _OPEN:
            close = text.find(_OPEN[text[begin]], begin + 1)
            line_end = text.find("\n", begin)
            if close > 0 and (line_end < 0 or close < line_end):
                spans.append((begin, close + 1))
                continue
        if begin >= len(text) or text[begin] == "\n":
            # a lead-in line ("The summary ends with:"): the reported text is the next paragraph
            body = _PARAGRAPH.match(text, begin)
            if body is not None:
                spans.append((begin, body.end()))
            continue
        end = _CLAUSE_END.search(text, begin)
        spans.append((begin, end.start() if end else len(text)))
    return spans


def _within(span: Span, marks: Sequence[Span]) -> bool:
    """Whether the letters and digits of ``span`` lie inside one of ``marks``."""
    start, end = span
    return any(m0 <= start and end <= m1 for m0, m1 in marks)


def _core(text: str, span: Span) -> Span:
    """``span`` without its leading and trailing punctuation (so a quotation mark around it does not count)."""
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
    line = text[left: len(text) if right < 0 else right]
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


def _template_parts(sources: Sequence[str], judged: Sequence[str], fold: bool) -> list[str]:
    """What ``sources`` (the rendered prompt) hold besides the judged texts: the template's own words (and demos)."""
    texts = sorted((j for j in judged if j and j.strip()), key=len, reverse=True)
    inside = {line for j in texts for line in _flat_lines(j, fold).splitlines()}
    out = []
    for source in sources:
        for j in texts:
            source = source.replace(j, "\n")
        out.append("\n".join(line for line in source.splitlines() if _flat_lines(line, fold) not in inside))
    return out


def unquote(text: str, *, statement: Callable[[str], bool], bare: Callable[[str], bool],
            sources: Sequence[str] = (), judged: Sequence[str] = (), fold: bool = True,
            hint: re.Pattern[str] | None = None) -> tuple[str, str]:
    """``(own, strict)``: ``text`` with what is not the judge's own statement blanked (see the module docstring).

    ``sources`` are the texts the judge was shown (the rendered prompt); ``judged`` the texts
    under judgment (they count as sources too). When ``judged`` is given, what the prompt holds
    besides them is the template's own wording: a copy of it with an answer in it (a verdict line
    the template lists) is the judge's own statement, as a bare answer is; without ``judged``,
    every source counts as possibly judged. ``statement(span)`` says whether a span alone
    reads as an answer; ``bare(span)`` whether it is nothing but the answer in the format's own
    words. ``strict`` also blanks bare, unmarked copies of an answer a judged text holds. ``fold=False``
    compares case (for answer labels that differ only by case, "m" / "M"). ``hint`` (what any answer
    holds: a digit, a label) spares the search in lines without one.
    """
    seen: dict[str, bool] = {}

    def states(span: str) -> bool:
        if span not in seen:
            seen[span] = statement(span)
        return seen[span]

    reported = reported_spans(text)
    own: list[Span] = [s for s in reported if (hint is None or hint.search(text, *s)) and states(text[s[0]: s[1]])]
    strict: list[Span] = []
    if any(x and x.strip() for x in [*sources, *judged]):
        marks = marked_spans(text)
        judged_index = _index(judged, fold)
        template = _template_parts(sources, judged, fold) if judged_index else list(sources)
        template_index = _index(template, fold) if judged_index else ""
        for start, end, norm in copied_runs(text, [*template, *judged], fold, hint, whole=sources):
            piece = text[start:end]
            if " " not in norm and norm.isalnum():
                # one plain word or number standing in a source ("5", "a") is no quotation, unless it is a whole
                # line of a judged text (a bare answer "B" the judged text holds alone) and alone on its line of the
                # answer or marked as a quotation there
                lines = f"\n{judged_index}\n"
                if (f"\n {norm} \n" in lines or f"\n {norm}. \n" in lines) and states(text[start:end]):
                    if _within(_core(text, (start, end)), marks):
                        own.append((start, end))
                    elif _alone(text, start, end):
                        strict.append((start, end))
                continue
            core = _core(text, (start, end))
            # a copy that starts inside a third party's words is marked by the verb ("it claims Therefore, ...")
            if _within(core, marks) or any(r0 <= core[0] < r1 for r0, r1 in reported):
                if _DIGIT.search(piece) or states(piece):
                    own.append((start, end))
            elif states(piece):
                if bare(piece) or (template_index and _stands(norm, template_index)
                                   and not _stands(norm, judged_index)):
                    # the answer in the format's own words, or in the template's ("Assistant A is much better:
                    # [[A>>B]]" copied from the template's list of verdicts): the judge's own statement
                    if _stands(norm, judged_index):
                        strict.append((start, end))
                else:
                    own.append((start, end))
    own_text = blank(text, own)
    return own_text, blank(own_text, strict)
