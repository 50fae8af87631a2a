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

_DROP = str.maketrans("", "", "*`_\"“”‘’'")  # markdown emphasis and quotation marks, dropped


def _norm(token: str, fold: bool = True) -> str:
    """A token as compared with a source: lower case (unless ``fold`` is False), markdown and quotation marks
    dropped, a comma, colon or semicolon after it dropped, and a sentence end after it kept as one full stop
    ("5." and "5!" are "5."); empty for a token with no letter or digit left (">", "-", "#")."""
    return _norm_folded(token) if fold else _norm_cased(token)


@functools.lru_cache(maxsize=1 << 16)
def _norm_folded(token: str) -> str:
    return _normalised(token.translate(_DROP).lower())


@functools.lru_cache(maxsize=1 << 12)
def _norm_cased(token: str) -> str:
    return _normalised(token.translate(_DROP))


def _normalised(low: str) -> str:
    low = low.rstrip(",;:")
    core = low.rstrip(".!?")
    norm = core + "." if core != low and core else core
    return norm if _HAS_ALNUM(norm) else ""


def _tokens(text: str, fold: bool = True) -> list[tuple[str, int, int]]:
    """The words of ``text`` (normalised, with their spans); tokens with no letter or digit (">", "-", "#") are left out."""
    out = []
    for m in _WORD.finditer(text):
        norm = _norm(m.group(0), fold)
        if norm:
            out.append((norm, m.start(), m.end()))
    return out


_WORD = re.compile(r"\S+")
_HAS_ALNUM = re.compile(r"[^\W_]").search


def _stands(run: str, index: str) -> bool:
    """Whether the run of tokens ``run`` stands in a line of ``index`` (its last word with or without a sentence end)."""
    last = run.rstrip(".")
    return f" {last} " in index or f" {last}. " in index




@functools.lru_cache(maxsize=1024)
def _flat_lines(text: str, fold: bool = True) -> str:
    """``text`` as :func:`_tokens` sees it, one line per line, each with a space at both ends (whole-token search).

    The same normalisation as :func:`_norm`, done on the whole text: lower case, markdown and quotation
    marks dropped (:func:`_lowered`), then word by word (:func:`_flat_word`): a word with no letter or
    digit dropped, separators after a word dropped and a sentence end after it kept as one full stop.
    """
    return "\n".join(flat for flat in map(_flat_line, _lowered(text, fold).splitlines()) if flat)


def _flat_line(line: str) -> str:
    """One line of :func:`_lowered` text as :func:`_flat_lines` writes it ("" when it holds no word)."""
    words = [w for w in map(_flat_word, line.split()) if w]
    return " " + " ".join(words) + " " if words else ""


@functools.lru_cache(maxsize=1 << 16)  # bounded: words recur in every text
def _flat_word(word: str) -> str:
    """A whitespace-delimited word of :func:`_lowered` text, normalised: "" when it holds no letter, digit or
    underscore; else without trailing commas, colons and semicolons, its trailing sentence end one full stop."""
    word = word.rstrip(",;:")
    if not _WORD_CHAR(word):
        return ""
    core = word.rstrip(".!?")
    return core + "." if core != word else word


_WORD_CHAR = re.compile(r"\w").search


@functools.lru_cache(maxsize=512)
def _lowered(text: str, fold: bool) -> str:
    """``text`` lower-cased (with ``fold``), markdown and quotation marks dropped: what :func:`_flat_lines` and
    :func:`_words_of` read."""
    return _unmarked(text.lower() if fold else text)


_MARKS = "*`_\"“”‘’'"


def _unmarked(text: str) -> str:
    """``text`` without markdown emphasis and quotation marks (``text.translate(_DROP)``, faster on long texts)."""
    for mark in _MARKS:
        if mark in text:
            text = text.replace(mark, "")
    return text


def _index(texts: Sequence[str], fold: bool = True) -> str:
    """Every line of every text, normalised (see :func:`_flat_lines`), one per line."""
    return "\n".join(_flat_lines(x, fold) for x in texts if x and not x.isspace())


class _Corpus:
    """The source texts as lines of normalised tokens, with where each token (sentence end aside) occurs.

    ``where`` (the tokens) is built at once. A run is looked for in the normalised text itself until the
    source has served :data:`_PAIRS_AFTER` searches; from then on (a template read for every item) in
    ``pairs``, where each pair of tokens starts, built once. Both find the same runs: a source token ends
    with at most one full stop, so "the last word with or without its sentence end" is two whole-token
    searches.
    """

    def __init__(self, index: str) -> None:
        self.text = index
        self._pairs: dict[str, list[tuple[int, int]]] | None = None
        self._searches = 0

    @functools.cached_property
    def where(self) -> set[str]:
        """Every token (sentence end stripped)."""
        return {token.rstrip(".") for token in self.text.split()}

    @functools.cached_property
    def lines(self) -> list[list[str]]:
        """The tokens of each line."""
        return [line.split() for line in self.text.split("\n")]

    @property
    def pairs(self) -> dict[str, list[tuple[int, int]]]:
        """"token next" -> where the pair starts (line, position)."""
        if self._pairs is None:
            pairs: dict[str, list[tuple[int, int]]] = {}
            for n, tokens in enumerate(self.lines):
                for k, token in enumerate(tokens):
                    if k + 1 < len(tokens):
                        pairs.setdefault(f"{token} {tokens[k + 1].rstrip('.')}", []).append((n, k))
            self._pairs = pairs
        return self._pairs

    def longest(self, toks: Sequence[str], i: int) -> int:
        """How many tokens from ``toks[i]`` on stand together in one line (the last with or without its sentence end,
        the others exactly as written)."""
        if toks[i].rstrip(".") not in self.where:
            return 0
        return self.extend(toks, i)

    def extend(self, toks: Sequence[str], i: int) -> int:
        """:meth:`longest` for a ``toks[i]`` known to be a token here."""
        if i + 1 >= len(toks):
            return 1
        if self._pairs is None:
            self._searches += 1
            if self._searches <= _PAIRS_AFTER:
                return self._longest_in_text(toks, i)
        alive = self.pairs.get(f"{toks[i]} {toks[i + 1].rstrip('.')}")
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

    def _longest_in_text(self, toks: Sequence[str], i: int) -> int:
        """:meth:`longest` by whole-token search in the normalised text (a line is " tok tok ... ")."""
        run, size = " " + toks[i], 1
        while i + size < len(toks):
            loose = toks[i + size].rstrip(".")
            if f"{run} {loose} " not in self.text and f"{run} {loose}. " not in self.text:
                break
            run += " " + toks[i + size]
            size += 1
        return size


_PAIRS_AFTER = 32
"""How many run searches a source serves by text search before its pair index is built."""


@functools.lru_cache(maxsize=512)  # bounded: the corpus of a 2,000-character article holds about 100 kB
def _corpus(text: str, fold: bool) -> _Corpus:
    return _Corpus(_flat_lines(text, fold))


def copied_runs(text: str, sources: Sequence[str], fold: bool = True, hint: re.Pattern[str] | None = None,
                whole: Sequence[str] = (), *, hot: re.Pattern[str] | None = None) -> list[tuple[int, int, str]]:
    """The maximal runs of words of ``text`` that stand verbatim in one of ``sources``: (start, end, normalised run).

    Runs are found left to right, each as long as it can be, within one line of ``text`` and
    one line of a source (so a copied line never swallows the answer line after it). With
    ``hint``, only lines where it matches are searched (a line without a value holds no answer).
    ``whole`` are texts the sources are parts of (a rendered prompt, of its template's words and
    the judged texts): two adjacent runs that stand together in one of them are one run.

    A run lies within a *stretch*: consecutive words each of which stands somewhere in a source.
    Runs are found stretch by stretch (a run never crosses a word no source holds). With ``hot``,
    only the runs of stretches where ``hot`` or a digit matches are returned (a run holding a value
    lies in such a stretch; the runs of the others are left out, the rest are the same). ``hot`` must
    match no empty string and look around a match only for letters, digits or the underscore: then a
    match inside a stretch is a match of the line there, and a stretch that meets no match the line's
    own search finds holds none (the line is searched once, and a stretch only when it meets one).
    """
    texts = [x for x in sources if x and not x.isspace()]
    if not texts:
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
    norm = _norm_folded if fold else _norm_cased
    sources_ = _Sources(texts, fold)
    for line in text.splitlines(keepends=True):
        if hint is not None and not hint.search(line):
            offset += len(line)
            continue
        if hot is not None:
            runs += _hot_runs(line, hot, norm, sources_, together, offset)
            offset += len(line)
            continue
        corpora = [_corpus(x, fold) for x in texts]
        wheres = [c.where for c in corpora]
        chunks = line.split()  # the \S+ runs _tokens reads, in order
        norms = list(map(norm, chunks))
        kept = [k for k, word in enumerate(norms) if word]
        words = [norms[k] for k in kept]
        bare = [w.rstrip(".") for w in words]
        present = set(bare)
        standing = set().union(*(present & where for where in wheres))
        if not standing:  # no word of the line stands in a source: no run
            offset += len(line)
            continue
        held = [w in standing for w in bare]
        spans = [(m.start(), m.end()) for m in _WORD.finditer(line)]
        toks = [(words[t], *spans[k]) for t, k in enumerate(kept)]
        i, n = 0, len(toks)
        while i < n:
            if not held[i]:
                i += 1
                continue
            j = i + 1
            while j < n and held[j]:
                j += 1
            # the stretch of words i..j-1
            runs += _stretch_runs(toks, words, i, j, functools.partial(_longest, corpora), together, offset)
            i = j
        offset += len(line)
    return runs


class _Sources:
    """The source texts of one search, each indexed only when a question needs it: whether a word stands in a
    source is asked of its words (:func:`_words_of`); a source's index (:func:`_corpus`) is built only to find
    a run of two words or more in it."""

    def __init__(self, texts: Sequence[str], fold: bool) -> None:
        self.texts, self.fold = texts, fold
        self._words: list[frozenset[str]] | None = None
        self._corpora: dict[int, _Corpus] = {}
        self._holding: dict[str, list[int]] = {}

    def corpus(self, k: int) -> _Corpus:
        if k not in self._corpora:
            self._corpora[k] = _corpus(self.texts[k], self.fold)
        return self._corpora[k]

    def holding(self, word: str) -> list[int]:
        """The sources whose index holds ``word`` (normalised, sentence end stripped) as a token."""
        if word not in self._holding:
            if self._words is None:
                self._words = [_words_of(x, self.fold) for x in self.texts]
            self._holding[word] = [k for k, words in enumerate(self._words) if word in words]
        return self._holding[word]

    def stands(self, word: str) -> bool:
        return bool(self.holding(word))

    def longest(self, words: Sequence[str], i: int) -> int:
        """The longest run from ``words[i]`` in any source (see :meth:`_Corpus.longest`); 0 when none holds it."""
        return max((self.corpus(k).extend(words, i) for k in self.holding(words[i].rstrip("."))), default=0)




@functools.lru_cache(maxsize=512)
def _words_of(text: str, fold: bool) -> frozenset[str]:
    """The tokens of ``text``'s index (:func:`_flat_lines`), sentence end stripped, read word by word from its
    lower-cased text without building the index (the same words: the index is those words, line by line)."""
    return frozenset(map(_bare_word, _lowered(text, fold).split())) - {""}


@functools.lru_cache(maxsize=1 << 16)  # bounded: words recur in every text
def _bare_word(word: str) -> str:
    return _flat_word(word).rstrip(".")


def _hot_runs(line: str, hot: re.Pattern[str], norm: Callable[[str], str], sources: _Sources,
              together: Callable[[str], bool], offset: int) -> list[tuple[int, int, str]]:
    """The runs of the stretches of ``line`` that hold a match of ``hot`` or a digit (see :func:`copied_runs`).

    Only the words around a match are looked at: a stretch holding a match meets a match of the
    line's own search, so each stretch is found from such a match, outwards.
    """
    values = [m.span() for m in hot.finditer(line)] + [m.span() for m in _DIGIT.finditer(line)]
    if not values:
        return []
    chunks = line.split()  # the \S+ runs _tokens reads, in order
    words: dict[int, str] = {}  # chunk index -> its normalised word ("" for a chunk with no letter or digit)
    held: dict[int, bool] = {}

    def word(k: int) -> str:
        if k not in words:
            words[k] = norm(chunks[k])
        return words[k]

    def stands(k: int) -> bool:  # the word of chunk k stands somewhere in a source
        if k not in held:
            held[k] = sources.stands(word(k).rstrip("."))
        return held[k]

    def neighbour(k: int, step: int) -> int | None:  # the nearest chunk holding a word, from k in direction step
        k += step
        while 0 <= k < len(chunks):
            if word(k):
                return k
            k += step
        return None

    stretches: set[tuple[int, int]] = set()
    for v0, v1 in values:
        # the chunks meeting line[v0:v1]: those starting before v1, less those ending at or before v0
        first_met = len(line[:v0].split())
        if 0 < v0 < len(line) and not line[v0 - 1].isspace() and not line[v0].isspace():
            first_met -= 1  # a chunk runs across v0
        for k in range(first_met, len(line[:v1].split())):
            if word(k):
                anchor = k if stands(k) else None
            else:  # a chunk with no word: inside a stretch only between two of its words
                left, right = neighbour(k, -1), neighbour(k, 1)
                anchor = left if left is not None and right is not None and stands(left) and stands(right) else None
            if anchor is None:
                continue
            lo = hi = anchor
            while (nxt := neighbour(lo, -1)) is not None and stands(nxt):
                lo = nxt
            while (nxt := neighbour(hi, 1)) is not None and stands(nxt):
                hi = nxt
            stretches.add((lo, hi))
    if not stretches:
        return []
    starts, at = [], 0
    for chunk in chunks[: max(hi for _, hi in stretches) + 1]:  # each chunk is the next non-space run
        at = line.find(chunk, at)
        starts.append(at)
        at += len(chunk)
    runs: list[tuple[int, int, str]] = []
    for lo, hi in sorted(stretches):
        if _holds_value(line, starts[lo], starts[hi] + len(chunks[hi]), hot):
            toks = [(words[k], starts[k], starts[k] + len(chunks[k])) for k in range(lo, hi + 1) if word(k)]
            runs += _stretch_runs(toks, [w for w, _, _ in toks], 0, len(toks), sources.longest, together, offset)
    return runs


def _longest(corpora: Sequence[_Corpus], words: Sequence[str], i: int) -> int:
    return max(c.longest(words, i) for c in corpora)


def _holds_value(line: str, start: int, end: int, hot: re.Pattern[str]) -> bool:
    """Whether ``line[start:end]`` holds a match of ``hot`` or a digit."""
    piece = line[start:end]
    return hot.search(piece) is not None or _DIGIT.search(piece) is not None


def _stretch_runs(toks: Sequence[tuple[str, int, int]], words: Sequence[str], i: int, j: int,
                  longest: Callable[[Sequence[str], int], int], together: Callable[[str], bool],
                  offset: int) -> list[tuple[int, int, str]]:
    """The runs of the stretch ``words[i:j]``, left to right, each as long as it can be; adjacent runs that stand
    together in the whole prompt are one."""
    runs: list[tuple[int, int, str]] = []
    last: tuple[int, int] | None = None  # the previous run's token range, to join an adjacent one
    while i < j:
        size = longest(words, i)
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
    return runs


_FENCE = re.compile(r"```.*?(?:```|\Z)", re.S)
_TICKS = re.compile(r"`[^`\n]+`")
_QUOTES = re.compile(r"\"[^\"\n]+\"|“[^”\n]+”|‘[^’\n]+’|(?<![\w])'[^'\n]+'(?![\w])")
_BLOCKQUOTE = re.compile(r"(?m)^[ \t]*>.*$")


def marked_spans(text: str) -> list[Span]:
    """Spans ``text`` marks as quotations: a fenced code block, backticks, quotation marks, a blockquote line."""
    spans: list[Span] = []
    for pattern, needs in ((_FENCE, "`"), (_TICKS, "`"), (_QUOTES, "\"“‘'"), (_BLOCKQUOTE, ">")):
        if any(ch in text for ch in needs):  # each pattern needs one of these characters
            spans.extend((m.start(), m.end()) for m in pattern.finditer(text))
    return spans


# A verb of saying whose clause reports someone else's words ("the text claims", "Summary A wrote"). Forms that
# are also participles ("the groups mentioned", "as stated") count only before "that", a colon or a quotation.
_QUOTE_NEXT = r"(?=[ \t]*(?:that\b|[:\"“'‘`]))"
_SAYS = ("says", "states", "claims", "writes", "wrote", "argues", "asserts", "insists", "declares", "quotes")
_SAYS_BEFORE_QUOTE = ("reads", "goes", "ends", "finishes", "closes", "begins", "starts", "opens", "mentions", "contains",
                      "includes")
_SAID_BEFORE_QUOTE = ("said", "stated", "claimed", "argued", "asserted", "insisted", "declared", "quoted", "mentioned",
                      "written")
_ENDS_WITH = ("ends", "ended", "concludes", "concluded", "closes", "closed", "finishes", "finished", "opens", "opened",
              "begins", "began", "starts", "started")
_REPORT_PATTERN = (r"\b(?:" + "|".join(_SAYS) + "|(?:" + "|".join(_SAYS_BEFORE_QUOTE) + ")" + _QUOTE_NEXT + "|(?:"
                   + "|".join(_SAID_BEFORE_QUOTE) + ")" + _QUOTE_NEXT + "|(?:" + "|".join(_ENDS_WITH)
                   + r")\s+(?:with|by))\b")
_REPORT = re.compile(_REPORT_PATTERN, re.IGNORECASE)
# The same verbs searched faster: in the text with every character that re.IGNORECASE equates with an ASCII letter
# written as that letter (A-Z, and the four others: U+0130, U+0131, U+017F, U+212A), case-sensitively, after a check
# that one of the verbs occurs at all. Same length, so the same spans.
_FOLD = str.maketrans({**{chr(c): chr(c + 32) for c in range(ord("A"), ord("Z") + 1)},
                       "\u0130": "i", "\u0131": "i", "\u017f": "s", "\u212a": "k"})
_REPORT_FOLDED = re.compile(_REPORT_PATTERN)
_ANY_VERB = re.compile("|".join(sorted({*_SAYS, *_SAYS_BEFORE_QUOTE, *_SAID_BEFORE_QUOTE, *_ENDS_WITH},
                                       key=len, reverse=True)))


def _verbs(text: str) -> list[re.Match[str]]:
    """The matches of :data:`_REPORT` in ``text`` (spans as in ``text``)."""
    folded = text.lower() if text.isascii() else text.translate(_FOLD)  # the same on ASCII text, faster
    if _ANY_VERB.search(folded) is None:
        return []
    return list(_REPORT_FOLDED.finditer(folded))


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
    for verb in _verbs(text):
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


def _template_parts(sources: Sequence[str], judged: Sequence[str], fold: bool, fast: bool = True) -> list[str]:
    """What ``sources`` (the rendered prompt) hold besides the judged texts: the template's own words (and demos)."""
    return list(_template_parts_of(tuple(sources), tuple(judged), fold, fast))


@functools.lru_cache(maxsize=64)  # the samples and criteria of one request read the same prompt and texts
def _template_parts_of(sources: tuple[str, ...], judged: tuple[str, ...], fold: bool, fast: bool) -> tuple[str, ...]:
    texts = sorted((j for j in judged if j and not j.isspace()), key=len, reverse=True)
    lines_of: dict[str, set[str]] = {}

    def inside(flat: str) -> bool:  # a line of some judged text's index (with ``fast``, its end words asked first)
        words = flat.split()
        for j in texts:
            heads, tails = _line_ends(j, fold) if fast else ({words[0]}, {words[-1]}) if words else ((), ())
            if words and words[0] in heads and words[-1] in tails:
                if j not in lines_of:
                    lines_of[j] = set(_flat_lines(j, fold).splitlines())
                if flat in lines_of[j]:
                    return True
        return False

    out = []
    for source in sources:
        for j in texts:
            source = source.replace(j, "\n")
        out.append("\n".join(line for line in source.splitlines() if not inside(_flat_lines(line, fold))))
    return tuple(out)


@functools.lru_cache(maxsize=512)
def _line_ends(text: str, fold: bool) -> tuple[frozenset[str], frozenset[str]]:
    """The first and the last word of every line of ``text``'s index (:func:`_flat_lines`), found without building
    it: each line's first and last whitespace-delimited word that normalises to a word."""
    heads, tails = set(), set()
    for line in _lowered(text, fold).splitlines():
        chunks = line.split()
        head = next((w for w in map(_flat_word, chunks) if w), None)
        if head is not None:
            heads.add(head)
            tails.add(next(w for w in map(_flat_word, reversed(chunks)) if w))
    return frozenset(heads), frozenset(tails)


def unquote(text: str, *, statement: Callable[[str], bool], bare: Callable[[str], bool],
            sources: Sequence[str] = (), judged: Sequence[str] = (), fold: bool = True,
            hint: re.Pattern[str] | None = None, fast: bool = True) -> tuple[str, str]:
    """``(own, strict)``: ``text`` with what is not the judge's own statement blanked (see the module docstring).

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
    the same result (``tests/test_reading_fast_path.py``).
    """
    seen: dict[str, bool] = {}

    def states(span: str) -> bool:
        if span not in seen:
            seen[span] = statement(span)
        return seen[span]

    reported = reported_spans(text)
    own: list[Span] = [s for s in reported if (hint is None or hint.search(text, *s)) and states(text[s[0]: s[1]])]
    strict: list[Span] = []
    if any(x and not x.isspace() for x in [*sources, *judged]):
        # whether the judged texts' index is non-empty, without building it: two texts or more (their lines joined), or
        # one holding a letter or digit (which every token has, and every chunk holding one is a token)
        given = [x for x in judged if x and not x.isspace()]
        judging = (len(given) > 1 or any(_HAS_ALNUM(_lowered(x, fold)) for x in given)) if fast else bool(
            _index(judged, fold))
        template = _template_parts(sources, judged, fold, fast) if judging else list(sources)
        runs = copied_runs(text, [*template, *judged], fold, hint, whole=sources, hot=hint if fast else None)
        judged_index = _index(judged, fold) if runs else ""
        marks = marked_spans(text) if runs else []
        template_index = _index(template, fold) if judging and runs else ""
        for start, end, norm in runs:
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
