"""The quotation search's fast path finds exactly what the full search finds, and its shortcuts are sound.

:func:`mitigate.parse._quoted.unquote` searches for copied runs only in the stretches of copied
words that meet a value of the format (``fast=True``, what every reader does); ``fast=False``
searches every stretch. Both must give the same ``(own, strict)`` texts, hence the same reading,
on every answer: the planted-value answers of ``tests/prompt/test_planted_values.py``, answers built from
fragments of the judged texts with values spliced in, and (when a copy is present) LLMBar's
released answers. The shortcuts underneath are checked against the code they replaced: word-by-word
normalisation against the three regular expressions it replaced, the reporting-verb search against
the case-insensitive one, run search by text against the pair index, and the lower-cased-text checks
that decide whether a source is indexed at all (never False for a word the index holds).
"""

from __future__ import annotations

import functools
import itertools
import re
from collections.abc import Callable, Sequence

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mitigate.data import Item
from mitigate.data._released import RTS_SCALE
from mitigate.data._released_pairwise import release_copy
from mitigate.errors import DataError, ParseError
from mitigate.parse import _copies as C
from mitigate.parse import _criteria as criteria
from mitigate.parse import _format_reader as format_reader
from mitigate.parse import _quoted as Q
from mitigate.parse import _reported as R
from mitigate.prompt import AnswerFormat, JudgePrompt
from mitigate.scale import Scale
from tests.prompt.test_planted_values import FORMATS, WORDS, _line, cases
from tests.support.planted import ISSUE_CASES, POSITIONS, QUOTES, judge_answer, quote_back

pytestmark = pytest.mark.slow  # reads every released SummEval answer twice (~40 s)


def _both(
    fmt: AnswerFormat, scale: Scale, answer: str, sources: Sequence[str], judged: Sequence[str]
) -> tuple[tuple[str, str], tuple[str, str]]:
    reader = fmt.reader()
    args = {
        "statement": lambda span: reader.states(span, scale, ()),
        "bare": reader.bare,
        "sources": sources,
        "judged": judged,
        "fold": not fmt.case_sensitive,
        "hint": reader.hint,
    }
    return Q.unquote(answer, **args, fast=True), Q.unquote(answer, **args, fast=False)


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.filter_too_much])
@given(case=cases())
def test_the_fast_search_blanks_exactly_what_the_full_search_blanks_on_planted_values(
    case: dict[str, object],
) -> None:
    fast, full = _both(case["fmt"], case["scale"], case["answer"], (case["prompt"],), case["judged"])  # type: ignore[arg-type]
    assert fast == full, (case["format"], case["answer"])


PUNCT = ["", ".", ",", ":", "!", "?", ";", "...", ")", "**", '"', "'"]


@st.composite
def copied_answers(draw: st.DrawFn) -> dict[str, object]:
    """An answer stitched from fragments of the judged texts (copies), the format's values and answer lines,
    and punctuation, in any order, so copies meet values in every way."""
    name = draw(st.sampled_from(sorted(FORMATS)))
    fmt, scale = FORMATS[name]
    values = fmt.values(scale)
    vocabulary = WORDS + values + ["1999", "5", "3.5", "a", "I", "first", "second", "score"]
    pieces = [
        draw(st.sampled_from(vocabulary)) + draw(st.sampled_from(PUNCT))
        for _ in range(draw(st.integers(6, 30)))
    ]
    breaks = draw(st.lists(st.integers(0, len(pieces)), max_size=3))
    judged_text = " ".join(pieces[: len(pieces) // 2]) + "\n" + " ".join(pieces[len(pieces) // 2 :])
    line = fmt.line.replace("{value}", draw(st.sampled_from(values))) if fmt.json_key is None else values[0]
    words: list[str] = []
    for _ in range(draw(st.integers(1, 4))):
        start = draw(st.integers(0, len(pieces) - 1))
        words += pieces[start : start + draw(st.integers(1, 8))]
        words.append(
            draw(
                st.sampled_from(
                    [
                        line,
                        draw(st.sampled_from(values)),
                        "says",
                        "claims that",
                        '"' + line + '"',
                        "> " + line,
                        "",
                        "Therefore,",
                        "I",
                    ]
                )
            )
        )
    for at in sorted(set(breaks), reverse=True):
        words.insert(min(at, len(words)), "\n")
    answer = " ".join(words).replace(" \n ", "\n")
    judged: tuple[str, ...] = (
        (judged_text,) if fmt.kind != "pairwise" else (judged_text, "Another short text.")
    )
    prompt = (
        "Judge the text.\n\n"
        + "\n\n".join(f"Text {i + 1}:\n{t}" for i, t in enumerate(judged))
        + "\n\n"
        + fmt.instruction(scale)
    )
    return {"format": name, "fmt": fmt, "scale": scale, "answer": answer, "judged": judged, "prompt": prompt}


@settings(max_examples=600, deadline=None)
@given(case=copied_answers(), with_prompt=st.booleans())
def test_the_fast_search_blanks_exactly_what_the_full_search_blanks_on_copies_meeting_values(
    case: dict[str, object], with_prompt: bool
) -> None:
    sources = (case["prompt"],) if with_prompt else ()
    fast, full = _both(case["fmt"], case["scale"], case["answer"], sources, case["judged"])  # type: ignore[arg-type]
    assert fast == full, (case["format"], case["answer"], case["judged"])


# --------------------------------------------------------------------------- whole readings, fast and full


@pytest.fixture
def full_search(monkeypatch: pytest.MonkeyPatch) -> Callable[[bool], None]:
    """``full_search(True)`` makes every reader run the full quotation search (``fast=False``); ``False``
    restores the fast one. The readers call :func:`~mitigate.parse._quoted.unquote` through their module's
    name for it."""

    def switch(full: bool) -> None:
        chosen = functools.partial(Q.unquote, fast=False) if full else Q.unquote
        monkeypatch.setattr(format_reader, "unquote", chosen)
        monkeypatch.setattr(criteria, "unquote", chosen)

    return switch


def _outcome(read: Callable[..., object], *args: object, **kwargs: object) -> object:
    """A reading as compared: ``read(*args, **kwargs)``, or the failure's message."""
    try:
        return read(*args, **kwargs)
    except ParseError as exc:
        return ("failure", str(exc))


def test_the_switch_to_the_full_search_reaches_the_readers(
    full_search: Callable[[bool], None], monkeypatch: pytest.MonkeyPatch
) -> None:
    calls: list[bool] = []
    full_search(True)
    chosen = format_reader.unquote
    assert isinstance(chosen, functools.partial) and chosen.keywords == {"fast": False}

    def spy(*args: object, **kwargs: object) -> tuple[str, str]:
        calls.append(bool(kwargs.get("fast", True)))
        return chosen(*args, **kwargs)  # type: ignore[no-any-return]

    monkeypatch.setattr(format_reader, "unquote", spy)
    fmt = AnswerFormat(line="Score: {value}", reasoning="before")
    assert fmt.read("Fine.\nScore: 4", Scale(), judged=("A text.",)) == 4.0
    assert calls == [True]  # the spy sees the caller's default; the partial underneath holds fast=False


def _release_readings(release: object, every: int) -> list[object]:
    from mitigate.replay._released_pairwise import parse_release

    sample = release.model_copy(update={"answers": release.answers[::every]})  # type: ignore[attr-defined]
    return [(p.verdict, p.score, p.error) for p in parse_release(sample).parsed]


@pytest.mark.parametrize(("layout", "every"), [("llmbar", 3), ("judgebench", 1)])
def test_every_released_pairwise_answer_reads_the_same_with_the_full_search(
    layout: str, every: int, full_search: Callable[[bool], None]
) -> None:
    """LLMBar's and JudgeBench's released answers, read as ``compare --released`` reads them (each with its
    template's format, the item's texts as judged): the same verdict, score or failure message either way."""
    path = release_copy(layout)
    if path is None:
        pytest.skip(f"no copy of the {layout} release (set $MITIGATE_{layout.upper()}_DIR)")
    from mitigate.data import read_judgebench, read_llmbar

    try:
        release = read_llmbar(path, sets="all") if layout == "llmbar" else read_judgebench(path)
    except DataError as exc:  # a partial copy (JudgeBench without its templates): nothing to read it with
        pytest.skip(f"the {layout} copy at {path} cannot be read: {exc}")
    fast = _release_readings(release, every)
    full_search(True)
    full = _release_readings(release, every)
    assert len(fast) == len(full) > 500
    differ = [(k, a, b) for k, (a, b) in enumerate(zip(fast, full, strict=True)) if a != b]
    assert not differ, differ[:3]


SUMMEVAL_TEMPLATES = {
    "score": (
        "Read the news article and the summary written for it, then judge the summary's {c}.\n\n"
        "Article: {{{{document}}}}\n\nSummary: {{{{summary}}}}\n\nGive your reasons first, then end "
        "with 'Score: N', where N is from 1 to 5 (half points allowed).",
        {"scale": RTS_SCALE},
    ),
    "letter": (
        "How good is the summary's {c}? Read the article and the summary.\n\nArticle: "
        "{{{{document}}}}\n\nSummary: {{{{summary}}}}\n\nA: very poor\nB: poor\nC: fair\nD: good\nE: "
        "very good\n\nExplain briefly, then answer 'Answer: X'.",
        {"letters": {"A": 1, "B": 2, "C": 3, "D": 4, "E": 5}},
    ),
    "stars": (
        "Rate the summary's {c} from 1 to 5 stars.\n\nArticle: {{{{document}}}}\n\nSummary: "
        "{{{{summary}}}}\n\nExplain, then give the rating as 'N stars'.",
        {},
    ),
}


def summeval_cases(step: int = 1) -> list[tuple[JudgePrompt, str, tuple[str, ...], tuple[str, ...]]]:
    """Every ``step``-th released SummEval answer of each judge in the data folder as (prompt in the method's
    format, raw answer, the rendered prompt as shown, the texts as judged);
    raises DataError without the data."""
    from mitigate.data import load, load_released
    from mitigate.data._released import MCQ_METHODS, released_judges
    from mitigate.registry import registered

    texts = {it.id: it for it in load("summeval").items}
    runs = [load_released(name) for name in released_judges()]
    cases = []
    prompts: dict[tuple[str, str], JudgePrompt] = {}
    for run in runs:
        method = registered("released-judge")[run.judge].method
        kind = "letter" if method in MCQ_METHODS else "stars" if "star" in method else "score"
        for judgment in run.iter_judgments()[::step]:
            it = texts.get(judgment.item_id)
            if it is None:
                continue
            if (kind, judgment.criterion) not in prompts:
                template, hints = SUMMEVAL_TEMPLATES[kind]
                prompts[kind, judgment.criterion] = JudgePrompt.from_template(
                    template.format(c=judgment.criterion), **hints
                )
            prompt = prompts[kind, judgment.criterion]
            item = Item(id=it.id, output=it.output, inputs={"document": it.inputs.get("source", "")})
            cases.append((prompt, judgment.raw, tuple(m.content for m in prompt.render(item)), item.texts()))
    return cases


def test_every_released_summeval_answer_reads_the_same_with_the_full_search(
    full_search: Callable[[bool], None],
) -> None:
    """Shen et al.'s released ChatGPT, GPT-4 and Llama-2 answers on SummEval (the data folder's copy), each
    read as a live judgment reads it: the format of a template of ours in the method's format, the rendered
    prompt as shown and the article and summary as judged."""
    try:
        cases = summeval_cases(step=7)
    except DataError as exc:
        pytest.skip(f"no SummEval release in the data folder ({exc})")

    def readings() -> list[object]:
        return [
            _outcome(p.format.read, raw, p.scale, echoes=p.echo_lines(), quoted=shown, judged=judged)
            for p, raw, shown, judged in cases
        ]

    fast = readings()
    full_search(True)
    full = readings()
    assert len(cases) > 3000
    assert sum(not isinstance(x, tuple) for x in fast) > len(cases) // 2  # the templates read most answers
    differ = [(cases[k][1], a, b) for k, (a, b) in enumerate(zip(fast, full, strict=True)) if a != b]
    assert not differ, differ[:3]


def test_every_quotation_style_and_position_reads_the_same_with_the_full_search(
    full_search: Callable[[bool], None],
) -> None:
    """Every format of the planted-values battery, every way of quoting a planted value back, in every
    position, the planted line alone on its line of the judged text and after its words; and the hand-written
    hostile cases."""
    cases = []
    for fmt, scale in FORMATS.values():
        values = fmt.values(scale)
        own, planted = values[0], values[-1]
        planted_line = _line(fmt, planted)
        for inline, quote, position in itertools.product((False, True), QUOTES, POSITIONS):
            if (quote.own_lines and position == "same line") or (inline and fmt.line.strip() == "{value}"):
                continue
            ctx = "The council approved the budget"
            judged_text = f"{ctx} {planted_line}\nIt met on Monday." if inline else f"{ctx}.\n{planted_line}"
            text = quote_back(quote, planted_line, ctx if inline else "", keep_case=fmt.case_sensitive)
            answer = judge_answer(_line(fmt, own), text, position, fmt.reasoning, "The text is clear.")
            judged = (judged_text,) if fmt.kind != "pairwise" else (judged_text, "A short plain answer.")
            prompt = "Judge the text.\n\n" + "\n\n".join(judged) + "\n\n" + fmt.instruction(scale)
            cases.append((fmt, scale, answer, (prompt,), judged))
    for case in ISSUE_CASES:
        labels = (
            {"labels": ("a", "b") if "Output" in case.line else ("A", "B")} if case.kind == "pairwise" else {}
        )
        fmt = AnswerFormat(kind=case.kind, line=case.line, reasoning="before", **labels)
        cases.append((fmt, Scale(), case.answer, ("Judge.\n\n" + "\n\n".join(case.judged),), case.judged))

    def readings() -> list[object]:
        return [
            _outcome(fmt.read, answer, scale, quoted=shown, judged=judged)
            for fmt, scale, answer, shown, judged in cases
        ]

    fast = readings()
    full_search(True)
    assert fast == readings()
    assert len(cases) > 300
    assert sum(not isinstance(x, tuple) for x in fast) > len(cases) // 2  # most read a value, as they should


# --------------------------------------------------------------------------- the shortcuts underneath

_DROP = str.maketrans("", "", "*`_\"“”‘’'")
_TRAIL_SEP = re.compile(r"[,;:]+(?=\s|$)")
_TRAIL_END = re.compile(r"(?<=\S)[.!?]+(?=\s|$)")
_NO_ALNUM = re.compile(r"(?<!\S)[^\w\s]+(?=\s|$)")


def _without_lone_brackets(token: str) -> str:
    """``token`` without a closing bracket at its end (before a sentence end or separator) while it holds
    more of that bracket than of its opening one, then the same for an opening bracket at its start."""
    body = re.sub(r"[.!?,;:]+$", "", token)
    tail = token[len(body) :]
    pairs = {")": "(", "]": "[", "}": "{"}
    while body[-1:] in pairs and body.count(body[-1]) > body.count(pairs[body[-1]]):
        body = body[:-1]
    while body[:1] in pairs.values():
        closer = next(c for c, o in pairs.items() if o == body[0])
        if body.count(body[0]) <= body.count(closer):
            break
        body = body[1:]
    return body + tail


def _flat_lines_by_regex(text: str, fold: bool) -> str:
    """The normalisation as it was written before (three regular expressions per line), with a judge's lone
    bracket around a copy dropped from each word (issue 45)."""
    out = []
    for line in (text.lower() if fold else text).translate(_DROP).splitlines():
        line = " ".join(map(_without_lone_brackets, line.split()))
        flat = _NO_ALNUM.sub(" ", _TRAIL_END.sub(".", _TRAIL_SEP.sub("", line)))
        if flat.strip():
            out.append(" " + " ".join(flat.split()) + " ")
    return "\n".join(out)


TRICKY = st.text(
    st.sampled_from(list("ab AB5.!?,;:_*`\"'“”‘’\n\r\t\u00a0\u2028\u0085ΣσςΟΔİıſ\u212a-()[]>#")), max_size=60
)


@settings(max_examples=3000, deadline=None)
@given(text=TRICKY, fold=st.booleans())
def test_word_by_word_normalisation_equals_the_regular_expressions_it_replaced(text: str, fold: bool) -> None:
    assert C.flat_lines.__wrapped__(text, fold) == _flat_lines_by_regex(text, fold)


@settings(max_examples=3000, deadline=None)
@given(text=TRICKY, fold=st.booleans())
def test_the_words_of_a_text_are_its_index_words_and_every_line_end_is_known(text: str, fold: bool) -> None:
    lowered = C.lowered(text, fold)
    assert lowered == (text.lower() if fold else text).translate(_DROP)
    index = C.flat_lines.__wrapped__(text, fold)
    where = {word.rstrip(".") for word in index.split()}
    heads, tails = C.line_ends(text, fold)
    for line in index.splitlines():
        words = line.split()
        assert words[0] in heads and words[-1] in tails
        for word in words:
            # at most one sentence end: the text search finds the same runs
            assert not word.rstrip(".").endswith(".")
    assert C._words_of(text, fold) == where - {""}  # the index's words, read without building it


_REPORT_AS_WRITTEN = re.compile(R._REPORT_PATTERN, re.IGNORECASE)


@settings(max_examples=2000, deadline=None)
@given(
    text=st.lists(
        st.sampled_from(
            list("saySAYtmwroeqdSTtHhAaIi\u0130\u0131\u017f\u212a :\"'`\n.,")
            + [
                "says",
                "SAYS",
                "wrote",
                "claims that",
                "ends with",
                "ENDS WITH",
                "ſays",
                "İnsists",
                "\u212aeeps",
                "mentioned:",
                " the text ",
                "I ",
            ]
        ),
        max_size=30,
    ).map("".join)
)
def test_reporting_verbs_are_found_where_the_case_insensitive_search_finds_them(text: str) -> None:
    assert [m.span() for m in R._verbs(text)] == [m.span() for m in _REPORT_AS_WRITTEN.finditer(text)]


@settings(max_examples=1500, deadline=None)
@given(
    source=st.lists(
        st.lists(st.sampled_from(["a", "b", "c", "a.", "b.", "5", "5."]), max_size=8), max_size=5
    ),
    query=st.lists(st.sampled_from(["a", "b", "c", "a.", "b.", "5", "5."]), min_size=1, max_size=8),
)
def test_a_run_is_as_long_by_text_search_as_by_the_pair_index(
    source: list[list[str]], query: list[str]
) -> None:
    index = "\n".join(" " + " ".join(line) + " " for line in source if line)
    by_text, by_pairs = C._Corpus(index), C._Corpus(index)
    by_pairs._searches = C._PAIRS_AFTER  # the next search builds and uses the pair index
    for i in range(len(query)):
        assert by_text.longest(query, i) == by_pairs.longest(query, i), (index, query, i)


@pytest.mark.parametrize(
    "judged", list(itertools.product(["...", "", " ", "_", "a", '""', ",,,", "x\n...", "5"], repeat=2))
)
def test_whether_judged_texts_are_given_is_read_without_building_their_index(judged: tuple[str, str]) -> None:
    given = [x for x in judged if x and not x.isspace()]
    assert (len(given) > 1 or any(C.has_alnum(C.lowered(x, True)) for x in given)) == bool(
        C.source_index(judged, True)
    )


@st.composite
def bare_answers(draw: st.DrawFn) -> dict[str, object]:
    """A short answer in a format's own words (its answer line, its values, bold, a second line), judged on
    texts that hold the format's lines and values too: the answers the bare-value shortcut may take."""
    name = draw(st.sampled_from(sorted(FORMATS)))
    fmt, scale = FORMATS[name]
    values = fmt.values(scale)
    lines = [fmt.line.replace("{value}", v) if fmt.json_key is None else v for v in values]
    parts = draw(
        st.lists(st.sampled_from([*lines, *values, "**" + lines[0] + "**", "\n"]), min_size=1, max_size=3)
    )
    judged_text = " ".join(draw(st.lists(st.sampled_from(WORDS + lines + values), min_size=1, max_size=12)))
    judged = (judged_text,) if fmt.kind != "pairwise" else (judged_text, draw(st.sampled_from(lines)))
    prompt = "Judge the text.\n\n" + "\n\n".join(judged) + "\n\n" + fmt.instruction(scale)
    return {"fmt": fmt, "scale": scale, "answer": " ".join(parts), "judged": judged, "prompt": prompt}


@settings(max_examples=600, deadline=None)
@given(case=bare_answers())
def test_a_bare_value_read_without_the_quotation_search_reads_as_with_it(case: dict[str, object]) -> None:
    """:class:`FormatReader` skips the quotation search for a short answer that is one value in the format's
    own words; the reading (value or failure message) is the one the search gives."""
    fmt, scale = case["fmt"], case["scale"]
    args = (case["answer"], scale)
    kwargs = {"quoted": (case["prompt"],), "judged": case["judged"]}
    short = _outcome(fmt.read, *args, **kwargs)  # type: ignore[union-attr]
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(format_reader, "_SHORT", -1)  # every answer through the quotation search
        full = _outcome(fmt.read, *args, **kwargs)  # type: ignore[union-attr]
    assert short == full, (case["answer"], case["judged"])
