"""Reading a numeric score (``parse_score``) or an option letter (``parse_mcq``) from a judge's free-text
answer (rules pinned by ``tests/parse/test_parse.py``). For a score:

* **The last cued number wins**: a noun cue before it ("Score: 4", "a rating of 7"), a verb cue ("I would
  give it a 4", "I rate it 2") or a denominator after it ("4/5", "2 out of 5"). When that number is
  malformed (a range "3-4", out of scale, off the grid, another denominator) the text is rejected, never
  read from an earlier number. What the answer quotes back is blanked before (:mod:`._quoted`).
* **A bare number only as a last resort**, standing alone at the start or the very end of the answer.
* **Not scores**: scale descriptions ("1-5 scale", "(1-5)"), list markers, numbers glued to words or
  symbols ("M10", "$2.6"), and numbers followed by a noun after a verb cue ("scored 2 goals").
* **Decimals follow the scale's grid**: off the grid is a failure, never a rounding. With
  ``scale.modifiers`` "weak N"/"strong N" give N -/+ ``MODIFIER_STEP``; number words "zero" to "ten" count.
"""

from __future__ import annotations

import functools
import math
import re
from collections.abc import Sequence
from dataclasses import dataclass

from mitigate.errors import ParseError, ScaleError
from mitigate.parse._common import fail as _fail
from mitigate.parse._common import format_number as _fmt
from mitigate.parse._common import normalise_answer as _normalise
from mitigate.parse._common import with_raw
from mitigate.scale import MODIFIER_STEP, Scale

_NUM = r"\d+(?:\.\d+)?"
_SNUM = r"-?\d+(?:\.\d+)?"
# A number that stands on its own: not glued to a word, a currency sign, a slash or a minus.
NUM_RE = re.compile(rf"(?<![\w.$£€/\\-])(?<!\d,)(-?{_NUM})(?![\w%]|\.\d|-[A-Za-z])")

# Spans that describe the scale or number a list; blanked (same length) before searching.
_MASKS = [
    re.compile(rf"\b(?:scale|range)\s+(?:of|from)?\s*{_SNUM}\s*(?:-|to)\s*{_SNUM}", re.I),
    re.compile(rf"\b(?:from|between)\s+{_SNUM}\s*(?:-|to|and)\s*{_SNUM}\b(?!\s*(?:/|out\s+of))", re.I),
    re.compile(
        rf"\b{_SNUM}\s*(?:-|to)\s*{_SNUM}[\s-]*(?:point\s+|star\s+)?(?:scale|range|rating\s+scale)\b", re.I
    ),
    re.compile(rf"\(\s*{_SNUM}\s*(?:-|to)\s*{_SNUM}\s*\)"),
    re.compile(rf"\bscale\s+of\s+{_SNUM}\b", re.I),
    re.compile(rf"\b{_SNUM}[\s-]*point\s+(?:scale|likert)\b", re.I),
    re.compile(r"^[ \t]*\d+[.)][ \t]+(?=[A-Za-z\"'(])", re.M),
]

_NOUN_CUE = r"(?:score|rating|grade)s?"
_VERB_CUE = (
    r"(?:scor(?:e|es|ed|ing)|rat(?:e|es|ed)|giv(?:e|es|ing|en)|gave|assign\w*|award\w*|"
    r"gets?|getting|got|earn\w*|receiv\w*|deserv\w*|merit\w*|"
    # "making it a 5", "the summary is a solid 4": only with the article right before the number
    r"(?:mak(?:e|es|ing)\s+it|(?:summary|response|answer|output|it)\s+(?:is|was))\s+(?:a|an)\s+(?:\w+\s+)?(?=\d))"
)
_CUE_RE = re.compile(rf"\b(?:(?P<noun>{_NOUN_CUE})|(?P<verb>{_VERB_CUE}))\b", re.I)
# What may sit between a cue and its number: no digits and no sentence boundary.
_GAP_RE = re.compile(r"[^\d\n.!?;]{0,40}?(?=(?:weak|strong)?\s*-?\d)", re.I)
# Words a cue may be separated from its number by ("a score of 4", "I would give it a solid 4",
# "rating for coherence: 3"); any other word means the number belongs to something else
# ("the rating takes into account the events in 1916").
_GAP_WORDS = frozenset(
    "a an the of is was be would will should could i it this that its my our final overall total "
    "give gives given gave assign assigned award awarded me them summary response answer output text "
    "story translation candidate for at about around approximately roughly as to score scores rating "
    "ratings grade solid strong weak high low perfect full middling modest decent generous fair "
    "mere respectable moderate reasonable good poor excellent so therefore thus hence here my "
    "coherence consistency fluency relevance quality helpfulness accuracy overall i'd i'll id "
    "deserves deserve merits earns gets receives get receive earn".split()
)
_DENOM_RE = re.compile(
    rf"\s*(?:/|out\s+of|of\s+a\s+possible|of\s+a\s+maximum\s+of)\s*({_NUM})\b(?!/\d)", re.I
)
_RANGE_RE = re.compile(rf"\s*(-|to|or)\s*({_NUM})\b", re.I)
# A score the judge is *not* giving: "it's not a 5 out of 5", "keeps it from being a perfect 5",
# "not engaging enough to score a 3", "falls short of a 4", "with a few tweaks it could be a perfect 5".
_NEGATED_RE = re.compile(
    r"(?:\bnot|n't|\bnever|\bfrom\s+(?:being|getting|achieving|reaching|receiving)|\benough\s+to|"
    r"\bshort\s+of|\brather\s+than|\binstead\s+of|\bwould\s+need|\bto\s+(?:reach|achieve|warrant|justify|make\s+it)|"
    r"\bcould\s+(?:be|become|reach|earn|get|achieve|have\s+been)|\bmight\s+(?:be|get|earn))"
    r"\b[^,.;:!?\n]*$",
    re.I,
)
_MODIFIER_RE = re.compile(r"\b(weak|strong)\s*$", re.I)
# Words that may follow a cued number without making it something other than a score
# ("a score of 2 for coherence", "rated 4 because ..."); anything else ("scored 2 goals")
# disqualifies a number cued only by a verb.
_FOLLOW_OK = frozenset(
    "out for on in and as because due since given based overall with but so from which indicating "
    "meaning reflecting representing showing suggesting this it i is was being considering at "
    "while although though however here there the stars star".split()
)
_FOLLOW_NOUN_OK = _FOLLOW_OK | {"points", "point"}


@dataclass(frozen=True)
class _Candidate:
    start: int
    end: int
    value: float
    literal: str
    denominator: float | None
    range_: bool
    modifier: str | None


def _follow_ok(text: str, end: int, allowed: frozenset[str]) -> bool:
    rest = text[end:]
    word = re.match(r"[ \t]*([A-Za-z]+)", rest)
    if word is None:
        return True  # end of text, punctuation or a newline
    return word.group(1).lower() in allowed


def _candidate_at(text: str, m: re.Match[str]) -> _Candidate | None:
    """The candidate score at number match ``m``; None for a match result ("2-0") or a negated score."""
    end = m.end()
    denom: float | None = None
    is_range = False
    d = _DENOM_RE.match(text, end)
    r = _RANGE_RE.match(text, end)
    if d is not None:
        denom = float(d.group(1))
        end = d.end()
    elif r is not None:
        if r.group(1) == "-" and float(r.group(2)) < float(m.group(1)):
            return None  # a match result or tally ("2-0 win"), not a low-high range
        is_range = True
        end = r.end()
    if _NEGATED_RE.search(text[max(0, m.start() - 60) : m.start()]):
        return None
    mod = _MODIFIER_RE.search(text[max(0, m.start() - 12) : m.start()])
    modifier = mod.group(1).lower() if mod is not None else None
    literal = " ".join(text[m.start() : end].split()) if is_range else m.group(1)
    return _Candidate(m.start(), end, float(m.group(1)), literal, denom, is_range, modifier)


def _gap_ok(gap: str) -> bool:
    """Whether the words between a cue and a number are ones that may sit there (see ``_GAP_WORDS``)."""
    words = re.findall(r"[A-Za-z']+", gap)
    return all(w.lower() in _GAP_WORDS for w in words) and len(words) <= 6


@functools.lru_cache(maxsize=256)  # one pattern per criterion name, built once
def _cue_pattern(cues: tuple[str, ...]) -> re.Pattern[str]:
    """The cue pattern with extra noun cues (a criterion name such as "Coherence")."""
    extra = "|".join(re.escape(c) for c in sorted(cues, key=len, reverse=True))
    return re.compile(rf"\b(?:(?P<noun>{_NOUN_CUE}|{extra})|(?P<verb>{_VERB_CUE}))\b", re.I)


def _candidates(text: str, cues: Sequence[str] = ()) -> list[_Candidate]:
    """Every cued number in (normalised, masked) ``text``, in order; an echoed list of scale labels ("Score 2:
    fair" with different numbers) is dropped, and "[[4]]" or "[RESULT] 4" are cued by their marker."""
    found: dict[int, _Candidate] = {}
    labels: dict[int, float] = {}
    marked = [num for num in NUM_RE.finditer(text) if _DENOM_RE.match(text, num.end())]
    marked += [
        num for m in _MARKER_RE.finditer(text) if (num := NUM_RE.match(text, m.start("n"))) is not None
    ]
    for num in marked:
        if (cand := _candidate_at(text, num)) is not None:
            found[num.start()] = cand
    for cue in (_cue_pattern(tuple(cues)) if cues else _CUE_RE).finditer(text):
        gap = _GAP_RE.match(text, cue.end())
        if gap is None:
            continue
        cued = NUM_RE.search(text, gap.end())
        if cued is None or cued.start() > gap.end() + 8 or re.search(r"\d", text[cue.end() : cued.start()]):
            continue
        if not _gap_ok(text[cue.end() : cued.start()]):
            continue
        cand = _candidate_at(text, cued)
        if cand is None:
            continue
        if cand.denominator is None and not cand.range_:
            allowed = _FOLLOW_NOUN_OK if cue.group("noun") else _FOLLOW_OK
            if not _follow_ok(text, cued.end(), allowed):
                continue
        found.setdefault(cued.start(), cand)
        if not text[cue.end() : cued.start()].strip() and re.match(r"[ \t]*:", text[cued.end() :]):
            labels[cued.start()] = cand.value
    if len(set(labels.values())) >= 2:
        for start in labels:
            found.pop(start, None)
    return [found[k] for k in sorted(found)]


# Answer markers of published formats: "[[4]]" (MT-Bench) and "[RESULT] 4" (Prometheus).
_MARKER_RE = re.compile(rf"(?:\[\[\s*|\[RESULT\]\s*:?\s*\(?)(?P<n>-?{_NUM})", re.I)
# A score written first: "2. The response ...", "4\nThe summary ...", "3 - mostly coherent".
_LEAD_RE = re.compile(rf"^\s*(?:(weak|strong)\s+)?(-?{_NUM})\s*(?:[.):\-]|\n|$)", re.I)

_TRAIL_RE = re.compile(
    r"(?:^|\n|[.!?;:,]\s+|\s[(\[])"  # the start, a line or sentence, or an opening bracket
    rf"\s*[(\[]?\s*(?:(weak|strong)\s+)?(-?{_NUM})\s*[)\]]?[\s.!]*$",
    re.I,
)


def _trailing(text: str) -> _Candidate | None:
    """A number standing alone at the very end of the response (the last-resort rule)."""
    m = _TRAIL_RE.search(text)
    return None if m is None else _alone(m)


def _alone(m: re.Match[str]) -> _Candidate:
    """The candidate of a number standing alone: group 1 its modifier, group 2 the number."""
    mod = m.group(1).lower() if m.group(1) else None
    return _Candidate(m.start(2), m.end(2), float(m.group(2)), m.group(2), None, False, mod)


def _example(scale: Scale) -> str:
    return _fmt(scale.max - 1 if scale.max - 1 >= scale.min else scale.max)


def _check_value(cand: _Candidate, text: str, scale: Scale, expected: str) -> float:
    shown = f"{cand.modifier} {cand.literal}" if cand.modifier else cand.literal
    if cand.range_:
        raise _fail(f"a range or alternatives {shown!r} instead of one score", text, expected)
    if cand.denominator is not None and not math.isclose(cand.denominator, scale.max):
        raise _fail(
            f"a score out of {_fmt(cand.denominator)} ({cand.literal}/{_fmt(cand.denominator)})",
            text,
            expected,
        )
    value = cand.value
    if not scale.contains(value):
        raise _fail(f"{shown}, outside the scale", text, expected)
    if not scale.on_grid(value):
        hint = f" (the scale's step is {_fmt(scale.step)}; use a finer step to accept it)"
        raise _fail(f"{shown}, not on the scale's grid{hint}", text, expected)
    if cand.modifier and scale.modifiers:
        value += MODIFIER_STEP if cand.modifier == "strong" else -MODIFIER_STEP
        if not scale.contains(value):
            raise _fail(f"{shown!r} = {_fmt(value)}, outside the scale", text, expected)
    return value


def parse_score(text: str, scale: Scale, *, cues: Sequence[str] = (), raw: str | None = None) -> float:
    """Read one numeric score on ``scale`` from a judge's free-text answer (rules: the module docstring).

    ``cues`` adds words that mark a score (the criterion of a "Coherence: N" line). Raises
    :class:`ParseError` for no number, a range, a score outside the scale or off its grid, or one out of a
    different maximum ("7/10" on 1-5); ``raw`` (default ``text``) is the full response kept on the error.
    """
    return read_score(text, scale, raw=text if raw is None else raw, cues=cues)


def _leading(text: str) -> _Candidate | None:
    """A score written first ("2. The response ...", "4\nreason"), unless the text is a numbered list."""
    m = _LEAD_RE.match(text)
    if m is None:
        return None
    if len(re.findall(r"(?m)^[ \t]*\d+[.)][ \t]", text)) > 1:
        return None  # "1. ... 2. ...": a numbered list, not an answer
    return _alone(m)


def read_score(
    text: str,
    scale: Scale,
    *,
    raw: str,
    cued: bool = False,
    criterion: str | None = None,
    cues: Sequence[str] = (),
) -> float:
    """:func:`parse_score` on ``text`` (``cued``: right after a score label), errors keeping ``raw``."""
    expected = f"a score from {scale.describe()} (e.g. 'Score: {_example(scale)}')"
    if criterion is not None:
        expected = (
            f"a score from {scale.describe()} for {criterion!r} (e.g. '{criterion}: {_example(scale)}')"
        )
    prefix = "Score: " if cued else ""
    normal = _normalise(prefix + text)
    work = normal
    for pattern in _MASKS:  # scale descriptions and list markers blanked, positions kept
        work = pattern.sub(lambda m: " " * len(m.group(0)), work)
    cands = _candidates(work, cues)
    try:
        if cands:
            return _check_value(cands[-1], text, scale, expected)
        tail = _trailing(work)
        lead = None if cued else _leading(normal)
        if lead is not None and tail is not None and lead.start != tail.start and lead.value != tail.value:
            raise _fail(f"two uncued numbers ({lead.literal} first, {tail.literal} last)", text, expected)
        if tail is None and lead is not None:
            return _check_value(lead, text, scale, expected)
        if tail is not None:
            return _check_value(tail, text, scale, expected)
        if NUM_RE.search(work):
            raise _fail("no number marked as a score (only numbers inside prose)", text, expected)
        raise _fail("no number", text, expected)
    except ParseError as exc:
        if raw is text and criterion is None:
            raise
        raise ParseError(exc.message, raw=raw, expected=expected, criterion=criterion) from None


_MCQ_CUE = (
    r"(?:final\s+)?(?:answer|option|choice|verdict|grade|rating|selection)s?\s*(?:is|would\s+be|:|=|-)?"
    r"|(?:i\s+(?:would\s+)?)?(?:choose|chose|select|selected|pick|picked|go\s+with)"
)


def parse_mcq(text: str, scale: Scale, *, raw: str | None = None) -> float:
    """Map a multiple-choice answer ("Answer: B", "(C)", "I choose E") to its score by ``scale.letters``.

    Letters are read after an answer cue or at the very start; the last cued letter wins, else parenthesised
    letters that all agree. ParseError for no letter of the map, two letters ("B or C") or disagreeing ones;
    ScaleError for a scale without letters. ``raw`` (default ``text``) is the full response kept on the error.
    """
    if raw is not None and raw != text:
        try:
            return parse_mcq(text, scale)
        except ParseError as exc:
            raise with_raw(exc, raw) from None
    if not scale.letters:
        raise ScaleError(f"parse_mcq needs a Scale with a letter map; got letters={scale.letters!r}")
    letters = {k.upper(): v for k, v in scale.letters.items()}
    expected = f"one option letter of {'/'.join(letters)} (e.g. 'Answer: {next(iter(letters))}')"
    work = re.sub(r"[*`]+", "", text)
    cls = "".join(letters)
    other = rf"(?:\s*(?:or|and|/|,)\s*\(?([{cls}])\)?\b)?"
    picks: list[tuple[int, str, str | None]] = []
    lead = re.match(rf"\s*[(\[]?\s*([{cls}])(?:\s*[)\]]|[.:]|\s*$|\s*\n)(?!g\.)", work)
    if lead is not None:
        alt = re.match(rf"\s*(?:or|and|/|,)\s*[(\[]?\s*([{cls}])\b", work[lead.end() :])
        picks.append((lead.start(1), lead.group(1), alt.group(1) if alt else None))
    for m in re.finditer(rf"\b(?:{_MCQ_CUE})\s*[(\[]?\s*([{cls}{cls.lower()}])\b\)?{other}", work, re.I):
        letter = m.group(1)
        if letter.islower() and not re.search(r"[:=]\s*[(\[]?\s*[a-z]\b", m.group(0)):
            continue  # "I choose a summary" is not an answer; "answer: b" is
        second = m.group(2).upper() if m.group(2) else None
        picks.append((m.start(1), letter.upper(), second))
    if picks:
        _, letter, second = max(picks, key=lambda p: p[0])
        if second is not None and second != letter:
            raise _fail(f"two letters ({letter} and {second})", text, expected)
        return float(letters[letter])
    paren = {m.group(1) for m in re.finditer(rf"[(\[]\s*([{cls}])\s*[)\]]", work)}
    if len(paren) == 1:
        return float(letters[paren.pop()])
    if len(paren) > 1:
        raise _fail(f"several letters ({', '.join(sorted(paren))})", text, expected)
    stray = re.search(r"(?i:answer|option|choice)\s*(?i:is|:|=)?\s*\(?([A-Z])\b(?!['\w])", work)
    if stray is not None:
        raise _fail(f"letter {stray.group(1).upper()!r}, which is not in the map", text, expected)
    raise _fail("no option letter", text, expected)
