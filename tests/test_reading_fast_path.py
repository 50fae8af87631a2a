"""The quotation search's fast path finds exactly what the full search finds, and its shortcuts are sound.

:func:`mitigate.parse.quoted.unquote` searches for copied runs only in the stretches of copied
words that meet a value of the format (``fast=True``, what every reader does); ``fast=False``
searches every stretch. Both must give the same ``(own, strict)`` texts, hence the same reading,
on every answer: the planted-value answers of ``tests/test_planted_values.py``, answers built from
fragments of the judged texts with values spliced in, and (when a copy is present) LLMBar's
released answers. The shortcuts underneath are checked against the code they replaced: word-by-word
normalisation against the three regular expressions it replaced, the reporting-verb search against
the case-insensitive one, run search by text against the pair index, and the lower-cased-text checks
that decide whether a source is indexed at all (never False for a word the index holds).
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Sequence

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_planted_values import FORMATS, WORDS, cases

from mitigate.data.released_pairwise import release_copy
from mitigate.parse import quoted as Q
from mitigate.prompt.answer import AnswerFormat
from mitigate.scale import Scale


def _both(fmt: AnswerFormat, scale: Scale, answer: str, sources: Sequence[str],
          judged: Sequence[str]) -> tuple[tuple[str, str], tuple[str, str]]:
    reader = fmt.reader()
    args = {"statement": lambda span: reader.states(span, scale, ()), "bare": reader.bare, "sources": sources,
            "judged": judged, "fold": not fmt.case_sensitive, "hint": reader.hint}
    return Q.unquote(answer, **args, fast=True), Q.unquote(answer, **args, fast=False)


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.filter_too_much])
@given(case=cases())
def test_the_fast_search_blanks_exactly_what_the_full_search_blanks_on_planted_values(case: dict[str, object]) -> None:
    fast, full = _both(case["fmt"], case["scale"], case["answer"], (case["prompt"],), case["judged"])  # type: ignore[arg-type]
    assert fast == full, (case["format"], case["answer"])


PUNCT = ["", ".", ",", ":", "!", "?", ";", "...", ")", "**", "\"", "'"]


@st.composite
def copied_answers(draw: st.DrawFn) -> dict[str, object]:
    """An answer stitched from fragments of the judged texts (copies), the format's values and answer lines, and
    punctuation, in any order, so copies meet values in every way."""
    name = draw(st.sampled_from(sorted(FORMATS)))
    fmt, scale = FORMATS[name]
    values = fmt.values(scale)
    vocabulary = WORDS + values + ["1999", "5", "3.5", "a", "I", "first", "second", "score"]
    pieces = [draw(st.sampled_from(vocabulary)) + draw(st.sampled_from(PUNCT)) for _ in range(draw(st.integers(6, 30)))]
    breaks = draw(st.lists(st.integers(0, len(pieces)), max_size=3))
    judged_text = " ".join(pieces[: len(pieces) // 2]) + "\n" + " ".join(pieces[len(pieces) // 2:])
    line = fmt.line.replace("{value}", draw(st.sampled_from(values))) if fmt.json_key is None else values[0]
    words: list[str] = []
    for _ in range(draw(st.integers(1, 4))):
        start = draw(st.integers(0, len(pieces) - 1))
        words += pieces[start: start + draw(st.integers(1, 8))]
        words.append(draw(st.sampled_from([line, draw(st.sampled_from(values)), "says", "claims that", "\"" + line +
                                            "\"", "> " + line, "", "Therefore,", "I"])))
    for at in sorted(set(breaks), reverse=True):
        words.insert(min(at, len(words)), "\n")
    answer = " ".join(words).replace(" \n ", "\n")
    judged: tuple[str, ...] = (judged_text,) if fmt.kind != "pairwise" else (judged_text, "Another short text.")
    prompt = "Judge the text.\n\n" + "\n\n".join(f"Text {i + 1}:\n{t}" for i, t in enumerate(judged)) + \
        "\n\n" + fmt.instruction(scale)
    return {"format": name, "fmt": fmt, "scale": scale, "answer": answer, "judged": judged, "prompt": prompt}


@settings(max_examples=600, deadline=None)
@given(case=copied_answers(), with_prompt=st.booleans())
def test_the_fast_search_blanks_exactly_what_the_full_search_blanks_on_copies_meeting_values(
        case: dict[str, object], with_prompt: bool) -> None:
    sources = (case["prompt"],) if with_prompt else ()
    fast, full = _both(case["fmt"], case["scale"], case["answer"], sources, case["judged"])  # type: ignore[arg-type]
    assert fast == full, (case["format"], case["answer"], case["judged"])


def test_the_fast_search_blanks_what_the_full_search_blanks_on_released_llmbar_answers() -> None:
    path = release_copy("llmbar")
    if path is None:
        pytest.skip("no copy of the LLMBar release (set $MITIGATE_LLMBAR_DIR)")
    from mitigate.data.llmbar import read_llmbar
    from mitigate.harness.released_pairwise import _judged as judged_texts  # the texts parse_release passes

    release = read_llmbar(path, sets="all")
    items = {it.id: it for it in release.benchmark.items}
    fmt = AnswerFormat(kind="pairwise", line="Therefore, Output ({value}) is better.", labels=("a", "b"),
                       reasoning="before")
    checked = 0
    for answer in release.answers[::40]:
        fast, full = _both(fmt, Scale(), answer.raw, (), judged_texts(items.get(answer.item_id), answer))
        assert fast == full, answer.raw
        checked += 1
    assert checked > 2000


# --------------------------------------------------------------------------- the shortcuts underneath

_DROP = str.maketrans("", "", "*`_\"“”‘’'")
_TRAIL_SEP = re.compile(r"[,;:]+(?=\s|$)")
_TRAIL_END = re.compile(r"(?<=\S)[.!?]+(?=\s|$)")
_NO_ALNUM = re.compile(r"(?<!\S)[^\w\s]+(?=\s|$)")


def _flat_lines_by_regex(text: str, fold: bool) -> str:
    """The normalisation as it was written before (three regular expressions per line)."""
    out = []
    for line in (text.lower() if fold else text).translate(_DROP).splitlines():
        flat = _NO_ALNUM.sub(" ", _TRAIL_END.sub(".", _TRAIL_SEP.sub("", line)))
        if flat.strip():
            out.append(" " + " ".join(flat.split()) + " ")
    return "\n".join(out)


TRICKY = st.text(st.sampled_from(list("ab AB5.!?,;:_*`\"'“”‘’\n\r\t\u00a0\u2028\u0085ΣσςΟΔİıſ\u212a-()[]>#")), max_size=60)


@settings(max_examples=3000, deadline=None)
@given(text=TRICKY, fold=st.booleans())
def test_word_by_word_normalisation_equals_the_regular_expressions_it_replaced(text: str, fold: bool) -> None:
    assert Q._flat_lines.__wrapped__(text, fold) == _flat_lines_by_regex(text, fold)


@settings(max_examples=3000, deadline=None)
@given(text=TRICKY, fold=st.booleans())
def test_the_words_of_a_text_are_its_index_words_and_every_line_end_is_known(text: str, fold: bool) -> None:
    lowered = Q._lowered(text, fold)
    assert lowered == (text.lower() if fold else text).translate(_DROP)
    index = Q._flat_lines.__wrapped__(text, fold)
    where = {word.rstrip(".") for word in index.split()}
    heads, tails = Q._line_ends(text, fold)
    for line in index.splitlines():
        words = line.split()
        assert words[0] in heads and words[-1] in tails
        for word in words:
            assert not word.rstrip(".").endswith(".")  # at most one sentence end: the text search finds the same runs
    assert Q._words_of(text, fold) == where - {""}  # the index's words, read without building it


_REPORT_AS_WRITTEN = re.compile(Q._REPORT_PATTERN, re.IGNORECASE)


@settings(max_examples=2000, deadline=None)
@given(text=st.lists(st.sampled_from(list("saySAYtmwroeqdSTtHhAaIi\u0130\u0131\u017f\u212a :\"'`\n.,") + [
    "says", "SAYS", "wrote", "claims that", "ends with", "ENDS WITH", "ſays", "İnsists", "\u212aeeps", "mentioned:",
    " the text ", "I "]), max_size=30).map("".join))
def test_reporting_verbs_are_found_where_the_case_insensitive_search_finds_them(text: str) -> None:
    assert [m.span() for m in Q._verbs(text)] == [m.span() for m in _REPORT_AS_WRITTEN.finditer(text)]


@settings(max_examples=1500, deadline=None)
@given(source=st.lists(st.lists(st.sampled_from(["a", "b", "c", "a.", "b.", "5", "5."]), max_size=8), max_size=5),
       query=st.lists(st.sampled_from(["a", "b", "c", "a.", "b.", "5", "5."]), min_size=1, max_size=8))
def test_a_run_is_as_long_by_text_search_as_by_the_pair_index(source: list[list[str]], query: list[str]) -> None:
    index = "\n".join(" " + " ".join(line) + " " for line in source if line)
    by_text, by_pairs = Q._Corpus(index), Q._Corpus(index)
    by_pairs._searches = Q._PAIRS_AFTER  # the next search builds and uses the pair index
    for i in range(len(query)):
        assert by_text.longest(query, i) == by_pairs.longest(query, i), (index, query, i)


@pytest.mark.parametrize("judged", list(itertools.product(["...", "", " ", "_", "a", "\"\"", ",,,", "x\n...", "5"],
                                                          repeat=2)))
def test_whether_judged_texts_are_given_is_read_without_building_their_index(judged: tuple[str, str]) -> None:
    given = [x for x in judged if x and not x.isspace()]
    assert (len(given) > 1 or any(Q._HAS_ALNUM(Q._lowered(x, True)) for x in given)) == bool(Q._index(judged, True))
