"""Copies: the runs of words of an answer that stand verbatim in a text the judge was shown
(:func:`copied_runs`), compared normalised (:func:`flat_lines`)."""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Sequence

_DROP = str.maketrans("", "", "*`_\"“”‘’'")  # markdown emphasis and quotation marks, dropped


@functools.lru_cache(maxsize=1 << 16)
def _norm_folded(token: str) -> str:
    """A token as compared with a source: lower case (``_norm_cased``: case kept), markdown and quotation
    marks dropped, a trailing comma, colon or semicolon dropped, a sentence end kept as one full stop ("5!"
    is "5."); empty for a token with no letter or digit (">", "-")."""
    return _normalised(token.translate(_DROP).lower())


@functools.lru_cache(maxsize=1 << 12)
def _norm_cased(token: str) -> str:
    return _normalised(token.translate(_DROP))


def _normalised(low: str) -> str:
    low = _unbracketed(low).rstrip(",;:")
    core = low.rstrip(".!?")
    norm = core + "." if core != low and core else core
    return norm if has_alnum(norm) else ""


_OPENER_OF = {")": "(", "]": "[", "}": "{"}
_CLOSER_OF = {v: k for k, v in _OPENER_OF.items()}


def _unbracketed(word: str) -> str:
    """``word`` without the brackets it closes or opens but not both ("5)" is "5", "(the" is "the", "(a)"
    and "[[b]]" stay): a judge's own bracket around a copy is not part of it. A closing sentence end or
    separator stays at the end ("5)." is "5.")."""
    core = word.rstrip(".!?,;:")
    if not core or (core[0] not in _CLOSER_OF and core[-1] not in _OPENER_OF):
        return word
    tail = word[len(core) :]
    while core and core[-1] in _OPENER_OF and core.count(core[-1]) > core.count(_OPENER_OF[core[-1]]):
        core = core[:-1]
    while core and core[0] in _CLOSER_OF and core.count(core[0]) > core.count(_CLOSER_OF[core[0]]):
        core = core[1:]
    return core + tail


_WORD = re.compile(r"\S+")
has_alnum = re.compile(r"[^\W_]").search
_DIGIT = re.compile(r"\d")


def stands_in(run: str, index: str) -> bool:
    """Whether the run ``run`` stands in a line of ``index`` (its last word with or without a full stop)."""
    last = run.rstrip(".")
    return f" {last} " in index or f" {last}. " in index


@functools.lru_cache(maxsize=1024)
def flat_lines(text: str, fold: bool = True) -> str:
    """``text`` normalised as :func:`_norm_folded` does each word, one line per line, each with a space at
    both ends (for whole-token search); a line with no word is dropped."""
    return "\n".join(flat for flat in map(_flat_line, lowered(text, fold).splitlines()) if flat)


def _flat_line(line: str) -> str:
    """One line of :func:`lowered` text as :func:`flat_lines` writes it ("" when it holds no word)."""
    words = [w for w in map(_flat_word, line.split()) if w]
    return " " + " ".join(words) + " " if words else ""


@functools.lru_cache(maxsize=1 << 16)  # bounded: words recur in every text
def _flat_word(word: str) -> str:
    """A word of :func:`lowered` text normalised as :func:`_norm_folded` does a token."""
    word = _unbracketed(word).rstrip(",;:")
    if not _WORD_CHAR(word):
        return ""
    core = word.rstrip(".!?")
    return core + "." if core != word else word


_WORD_CHAR = re.compile(r"\w").search


@functools.lru_cache(maxsize=512)
def lowered(text: str, fold: bool) -> str:
    """``text`` lower-cased (with ``fold``), markdown and quotation marks dropped."""
    return _unmarked(text.lower() if fold else text)


_MARKS = "*`_\"“”‘’'"


def _unmarked(text: str) -> str:
    """``text.translate(_DROP)``, faster on long texts."""
    for mark in _MARKS:
        if mark in text:
            text = text.replace(mark, "")
    return text


def source_index(texts: Sequence[str], fold: bool = True) -> str:
    """Every line of every text, normalised (see :func:`flat_lines`), one per line."""
    return "\n".join(flat_lines(x, fold) for x in texts if x and not x.isspace())


class _Corpus:
    """A source text as lines of normalised tokens; a run is looked for in the text itself until the source
    has served :data:`_PAIRS_AFTER` searches, then in ``pairs`` (built once): both find the same runs."""

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
        """ "token next" -> where the pair starts (line, position)."""
        if self._pairs is None:
            pairs: dict[str, list[tuple[int, int]]] = {}
            for n, tokens in enumerate(self.lines):
                for k, token in enumerate(tokens):
                    if k + 1 < len(tokens):
                        pairs.setdefault(f"{token} {tokens[k + 1].rstrip('.')}", []).append((n, k))
            self._pairs = pairs
        return self._pairs

    def longest(self, toks: Sequence[str], i: int) -> int:
        """How many tokens from ``toks[i]`` on stand together in one line (the last with or without its
        sentence end, the others exactly as written)."""
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
            alive = [
                (n, k)
                for n, k in alive
                if k + size < len(self.lines[n])
                and self.lines[n][k + size - 1] == exact
                and self.lines[n][k + size].rstrip(".") == loose
            ]
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
    return _Corpus(flat_lines(text, fold))


def copied_runs(
    text: str,
    sources: Sequence[str],
    fold: bool = True,
    hint: re.Pattern[str] | None = None,
    whole: Sequence[str] = (),
    *,
    hot: re.Pattern[str] | None = None,
) -> list[tuple[int, int, str]]:
    """The maximal runs of words of ``text`` that stand verbatim in one of ``sources``: (start, end,
    normalised run), each within one line of the text and of a source.

    With ``hint``, only lines where it matches are searched; two adjacent runs that stand together in one of
    ``whole`` (the rendered prompt) are one; with ``hot``, only the runs of stretches of copied words holding
    a match of it or a digit are returned (``hot`` must match no empty string and look around only for word
    characters).
    """
    texts = [x for x in sources if x and not x.isspace()]
    if not texts:
        return []
    joined: list[str] = []  # the index of ``whole``, built the first time two runs meet

    def together(run: str) -> bool:
        if not whole:
            return False
        if not joined:
            joined.append(source_index(whole, fold))
        return stands_in(run, joined[0])

    runs: list[tuple[int, int, str]] = []
    offset = 0
    norm = _norm_folded if fold else _norm_cased
    sources_ = _Sources(texts, fold)
    for line in text.splitlines(keepends=True):
        if hint is not None and not hint.search(line):
            pass
        elif hot is not None:
            runs += _hot_runs(line, hot, norm, sources_, together, offset)
        else:  # every stretch of the line
            chunks = line.split()  # the \S+ runs of _WORD, in order
            norms = list(map(norm, chunks))
            kept = [k for k, word in enumerate(norms) if word]
            words = [norms[k] for k in kept]
            held = [sources_.stands(w.rstrip(".")) for w in words]
            spans = [m.span() for m in _WORD.finditer(line)]
            toks = [(words[t], *spans[k]) for t, k in enumerate(kept)]
            i, n = 0, len(toks)
            while i < n:
                if not held[i]:
                    i += 1
                    continue
                j = i + 1
                while j < n and held[j]:
                    j += 1
                runs += _stretch_runs(toks, words, i, j, sources_.longest, together, offset)  # words i..j-1
                i = j
        offset += len(line)
    return runs


class _Sources:
    """The source texts of one search, each indexed (:func:`_corpus`) only when a run is looked for in it."""

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
        """The longest run from ``words[i]`` in any source (:meth:`_Corpus.longest`); 0 when none holds it."""
        return max((self.corpus(k).extend(words, i) for k in self.holding(words[i].rstrip("."))), default=0)


@functools.lru_cache(maxsize=512)
def _words_of(text: str, fold: bool) -> frozenset[str]:
    """The tokens of ``text``'s index (:func:`flat_lines`), sentence end stripped, without building it."""
    return frozenset(map(_bare_word, lowered(text, fold).split())) - {""}


@functools.lru_cache(maxsize=1 << 16)  # bounded: words recur in every text
def _bare_word(word: str) -> str:
    return _flat_word(word).rstrip(".")


def _hot_runs(
    line: str,
    hot: re.Pattern[str],
    norm: Callable[[str], str],
    sources: _Sources,
    together: Callable[[str], bool],
    offset: int,
) -> list[tuple[int, int, str]]:
    """The runs of the stretches of ``line`` holding a match of ``hot`` or a digit (:func:`copied_runs`)."""
    values = [m.span() for m in hot.finditer(line)] + [m.span() for m in _DIGIT.finditer(line)]
    if not values:
        return []
    chunks = line.split()  # the \S+ runs of _WORD, in order
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

    # the nearest chunk holding a word, from k in direction step
    def neighbour(k: int, step: int) -> int | None:
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
                anchor = (
                    left
                    if left is not None and right is not None and stands(left) and stands(right)
                    else None
                )
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
        piece = line[starts[lo] : starts[hi] + len(chunks[hi])]
        if hot.search(piece) is not None or _DIGIT.search(piece) is not None:  # the stretch holds a value
            toks = [(words[k], starts[k], starts[k] + len(chunks[k])) for k in range(lo, hi + 1) if word(k)]
            runs += _stretch_runs(
                toks, [w for w, _, _ in toks], 0, len(toks), sources.longest, together, offset
            )
    return runs


def _stretch_runs(
    toks: Sequence[tuple[str, int, int]],
    words: Sequence[str],
    i: int,
    j: int,
    longest: Callable[[Sequence[str], int], int],
    together: Callable[[str], bool],
    offset: int,
) -> list[tuple[int, int, str]]:
    """The runs of the stretch ``words[i:j]``, left to right, joined where they stand together."""
    runs: list[tuple[int, int, str]] = []
    last: tuple[int, int] | None = None  # the previous run's token range, to join an adjacent one
    while i < j:
        size = longest(words, i)
        if not size:
            i += 1
            continue
        start = i
        if last is not None and last[1] == i and together(" ".join(words[last[0] : i + size])):
            start = last[0]
            runs.pop()
        runs.append(
            (
                toks[start][1] + offset,
                toks[i + size - 1][2] + offset,
                " ".join(words[start : i + size]).rstrip("."),
            )
        )
        last = (start, i + size)
        i += size
    return runs


@functools.lru_cache(maxsize=512)
def line_ends(text: str, fold: bool) -> tuple[frozenset[str], frozenset[str]]:
    """The first and last words of each line of ``text``'s index, without building it."""
    heads, tails = set(), set()
    for line in lowered(text, fold).splitlines():
        chunks = line.split()
        head = next((w for w in map(_flat_word, chunks) if w), None)
        if head is not None:
            heads.add(head)
            tails.add(next(w for w in map(_flat_word, reversed(chunks)) if w))
    return frozenset(heads), frozenset(tails)
