"""Strict parsers that turn a judge's raw answer into a score, a letter, or a verdict.

Every parser either returns a value on the declared :class:`~mitigate.scale.Scale` or raises
:class:`~mitigate.errors.ParseError` carrying the full response on ``.raw`` and what was
expected on ``.expected``. Nothing is ever coerced to a default score.

Design choices (pinned by ``tests/test_parse.py``):

* **Last explicit cue wins.** Judges reason first and score last, and a reasoning may quote
  the judged item ("the summary says 'Score: 10' ... My score: 3"); what an answer quotes back
  is blanked before these readers run (:func:`mitigate.parse.quoted.unquote`, called by
  :meth:`~mitigate.prompt.answer_format.AnswerFormat.read` and :func:`parse_criteria`). A number is a candidate
  only when a score cue marks it: a noun cue before it ("Score: 4", "a rating of 7", "final
  score is 3"), a verb cue ("I would give it a 4", "earning a 3", "I rate it 2"), or a
  denominator after it ("4/5", "2 out of 5"). The last candidate in the text decides; when it
  is malformed (a range "3-4", out of scale, off the grid, a different denominator) the text
  is rejected rather than falling back to an earlier number.
* **Bare numbers only as a last resort**, and only when the response *ends* with a number
  standing alone (the whole answer, the last line, the last sentence "... level. 5", or a
  closing "(4)"). A number inside prose without a cue is never taken.
* **Not scores:** scale descriptions ("1-5 scale", "on a scale of 1 to 10", "(1-5)",
  "scale of 5"), list markers at the start of a line ("1. ..."), numbers glued to words or
  symbols ("M10", "50th", "$2.6"), denominators, and numbers followed by a noun after a verb
  cue ("scored 2 goals").
* **Decimals follow the scale's grid.** A value is accepted only when it is on
  ``scale.step`` (``3.5`` needs ``Scale(step=0.5)``; ``3.0`` is fine on an integer scale).
  A decimal that the scale does not allow is a parse failure with a message suggesting the
  step, never a silent rounding. With ``scale.modifiers`` the words "weak N"/"strong N" give
  N ∓ ``MODIFIER_STEP`` (those values are off the grid by design); without modifiers the
  words are read as plain English ("a strong 4" is 4).
* **Number words** "zero" to "ten" count as numbers ("scoring a one out of five").
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from mitigate.errors import ConfigError, ParseError, ScaleError
from mitigate.lm.base import TokenLogprob
from mitigate.parse.quoted import unquote
from mitigate.scale import MODIFIER_STEP, Scale

__all__ = [
    "Verdict",
    "expected_score",
    "parse_criteria",
    "parse_mcq",
    "parse_pairwise",
    "parse_score",
    "normalise_answer",
    "score_distribution",
    "score_tokens",
    "strip_echoed_lines",
]

Verdict = Literal["first", "second", "tie"]

_SNIPPET = 80

# --------------------------------------------------------------------------- helpers


def _snippet(text: str, limit: int = _SNIPPET) -> str:
    """A one-line, truncated view of ``text`` for error messages (the full text stays on ``.raw``)."""
    flat = " ".join(text.split())
    if not flat:
        return "<empty response>"
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def _fmt(x: float) -> str:
    return f"{round(x, 6):g}"


def _fail(reason: str, text: str, expected: str, **context: object) -> ParseError:
    return ParseError(f"expected {expected}; got {reason} in {_snippet(text)!r}", raw=text, expected=expected, **context)


_WORD_NUMBERS = {
    "zero": "0",
    "one": "1",
    "two": "2",
    "three": "3",
    "four": "4",
    "five": "5",
    "six": "6",
    "seven": "7",
    "eight": "8",
    "nine": "9",
    "ten": "10",
}
_WORD_RE = re.compile(r"\b(" + "|".join(_WORD_NUMBERS) + r")\b", re.IGNORECASE)


def normalise_answer(text: str) -> str:
    """An answer with markdown emphasis and backticks dropped, dashes unified and number words as digits."""
    return _normalise(text)


def _normalise(text: str) -> str:
    """Drop markdown emphasis/backticks, unify dashes, and spell number words as digits."""
    out = re.sub(r"[*`]+", "", text)
    out = re.sub(r"(?<=\w)_{1,2}|_{1,2}(?=\w)", "", out)
    out = out.replace("\u2013", "-").replace("\u2014", "-").replace("\u2212", "-").replace("\u2044", "/")
    return _WORD_RE.sub(lambda m: _WORD_NUMBERS[m.group(1).lower()], out)


# --------------------------------------------------------------------------- numeric scores

_NUM = r"\d+(?:\.\d+)?"
_SNUM = r"-?\d+(?:\.\d+)?"
# A number that stands on its own: not glued to a word, a currency sign, a slash or a minus.
_NUM_RE = re.compile(rf"(?<![\w.$£€/\\-])(?<!\d,)(-?{_NUM})(?![\w%]|\.\d|-[A-Za-z])")

# Spans that describe the scale or number a list; blanked (same length) before searching.
_MASKS = [
    re.compile(rf"\b(?:scale|range)\s+(?:of|from)?\s*{_SNUM}\s*(?:-|to)\s*{_SNUM}", re.I),
    re.compile(rf"\b(?:from|between)\s+{_SNUM}\s*(?:-|to|and)\s*{_SNUM}\b(?!\s*(?:/|out\s+of))", re.I),
    re.compile(rf"\b{_SNUM}\s*(?:-|to)\s*{_SNUM}[\s-]*(?:point\s+|star\s+)?(?:scale|range|rating\s+scale)\b", re.I),
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
_DENOM_RE = re.compile(rf"\s*(?:/|out\s+of|of\s+a\s+possible|of\s+a\s+maximum\s+of)\s*({_NUM})\b(?!/\d)", re.I)
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


def _mask(text: str) -> str:
    for pattern in _MASKS:
        text = pattern.sub(lambda m: " " * len(m.group(0)), text)
    return text


def _follow_ok(text: str, end: int, allowed: frozenset[str]) -> bool:
    rest = text[end:]
    word = re.match(r"[ \t]*([A-Za-z]+)", rest)
    if word is None:
        return True  # end of text, punctuation or a newline
    return word.group(1).lower() in allowed


def _candidate_at(text: str, m: re.Match[str]) -> _Candidate | None:
    """The candidate score at number match ``m``; None when it is not a score given.

    Not given: a match result such as "2-0 win", or a negated score ("not a 5 out of 5").
    """
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
    modifier = None
    mod = _MODIFIER_RE.search(text[max(0, m.start() - 12) : m.start()])
    if mod is not None:
        modifier = mod.group(1).lower()
    literal = " ".join(text[m.start() : end].split()) if is_range else m.group(1)
    return _Candidate(m.start(), end, float(m.group(1)), literal, denom, is_range, modifier)


def _gap_ok(gap: str) -> bool:
    """Whether the words between a cue and a number are ones that may sit there (see ``_GAP_WORDS``)."""
    words = re.findall(r"[A-Za-z']+", gap)
    return all(w.lower() in _GAP_WORDS for w in words) and len(words) <= 6


def _cue_re(cues: Sequence[str]) -> re.Pattern[str]:
    """The cue pattern, with extra noun cues (a criterion name such as "Coherence") when given."""
    if not cues:
        return _CUE_RE
    extra = "|".join(re.escape(c) for c in sorted(cues, key=len, reverse=True))
    return re.compile(rf"\b(?:(?P<noun>{_NOUN_CUE}|{extra})|(?P<verb>{_VERB_CUE}))\b", re.I)


def _candidates(text: str, cues: Sequence[str] = ()) -> list[_Candidate]:
    """Every cued number in (normalised, masked) ``text``, in order of position.

    Label-form cues ("Score 2: fair", the number between the cue and a colon) that occur
    with two or more different numbers are an echoed list of scale labels, not answers,
    and are dropped; a single "Score 4: the summary is clear" still counts. A number in
    double brackets ("[[4]]", MT-Bench) or after "[RESULT]" (Prometheus) is cued by its marker.
    """
    found: dict[int, _Candidate] = {}
    labels: dict[int, float] = {}
    for num in _NUM_RE.finditer(text):
        if _DENOM_RE.match(text, num.end()):
            cand = _candidate_at(text, num)
            if cand is not None:
                found[num.start()] = cand
    for marker in _MARKER_RE.finditer(text):
        num = _NUM_RE.match(text, marker.start("n"))
        if num is not None:
            cand = _candidate_at(text, num)
            if cand is not None:
                found[num.start()] = cand
    for cue in _cue_re(cues).finditer(text):
        gap = _GAP_RE.match(text, cue.end())
        if gap is None:
            continue
        num = _NUM_RE.search(text, gap.end())
        if num is None or num.start() > gap.end() + 8 or re.search(r"\d", text[cue.end() : num.start()]):
            continue
        if not _gap_ok(text[cue.end() : num.start()]):
            continue
        cand = _candidate_at(text, num)
        if cand is None:
            continue
        if cand.denominator is None and not cand.range_:
            allowed = _FOLLOW_NOUN_OK if cue.group("noun") else _FOLLOW_OK
            if not _follow_ok(text, num.end(), allowed):
                continue
        found.setdefault(num.start(), cand)
        if not text[cue.end():num.start()].strip() and re.match(r"[ \t]*:", text[num.end():]):
            labels[num.start()] = cand.value
    if len(set(labels.values())) >= 2:
        for start in labels:
            found.pop(start, None)
    return [found[k] for k in sorted(found)]


# Answer markers of published formats: "[[4]]" (MT-Bench) and "[RESULT] 4" (Prometheus).
_MARKER_RE = re.compile(rf"(?:\[\[\s*|\[RESULT\]\s*:?\s*\(?)(?P<n>-?{_NUM})", re.I)
# A score written first: "2. The response ...", "4\nThe summary ...", "3 - mostly coherent".
_LEAD_RE = re.compile(rf"^\s*(?:(weak|strong)\s+)?(-?{_NUM})\s*(?:[.):\-]|\n|$)", re.I)

_TRAIL_RE = re.compile(rf"(?:^|\n|[.!?;:,]\s+|\s[(\[])\s*[(\[]?\s*(?:(weak|strong)\s+)?(-?{_NUM})\s*[)\]]?[\s.!]*$", re.I)


def _trailing(text: str) -> _Candidate | None:
    """A number standing alone at the very end of the response (the last-resort rule)."""
    m = _TRAIL_RE.search(text)
    if m is None:
        return None
    mod = m.group(1).lower() if m.group(1) else None
    return _Candidate(m.start(2), m.end(2), float(m.group(2)), m.group(2), None, False, mod)


def _example(scale: Scale) -> str:
    return _fmt(scale.max - 1 if scale.max - 1 >= scale.min else scale.max)


def _check_value(cand: _Candidate, text: str, scale: Scale, expected: str) -> float:
    shown = f"{cand.modifier} {cand.literal}" if cand.modifier else cand.literal
    if cand.range_:
        raise _fail(f"a range or alternatives {shown!r} instead of one score", text, expected)
    if cand.denominator is not None and not math.isclose(cand.denominator, scale.max):
        raise _fail(f"a score out of {_fmt(cand.denominator)} ({cand.literal}/{_fmt(cand.denominator)})", text, expected)
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
    """Read one numeric score on ``scale`` from a judge's free-text answer.

    Takes the last explicitly cued number (see the module docstring for the rules), or a
    number standing alone at the start ("2. The response ...") or at the end of the text
    when nothing is cued (both, with different values, is ambiguous). ``cues`` adds words
    that mark a score, such as the criterion of a "Coherence: N" answer line. Raises
    :class:`ParseError` for no number, a range, a score outside the scale or off its grid, or
    a score given out of a different maximum ("7/10" on a 1–5 scale); ``raw`` (default
    ``text``) is the full response kept on the error.
    """
    return _score(text, scale, raw=text if raw is None else raw, cues=cues)


def _leading(text: str) -> _Candidate | None:
    """A score written first ("2. The response ...", "4\nreason"), unless the text is a numbered list."""
    m = _LEAD_RE.match(text)
    if m is None:
        return None
    if len(re.findall(r"(?m)^[ \t]*\d+[.)][ \t]", text)) > 1:
        return None  # "1. ... 2. ...": a numbered list, not an answer
    mod = m.group(1).lower() if m.group(1) else None
    return _Candidate(m.start(2), m.end(2), float(m.group(2)), m.group(2), None, False, mod)


def _score(text: str, scale: Scale, *, raw: str, cued: bool = False, criterion: str | None = None,
           cues: Sequence[str] = ()) -> float:
    """Parse ``text``; errors quote ``text`` but keep ``raw`` (the whole response) on ``.raw``.

    ``cued`` says the text starts right after a score label ("Coherence: <text>").
    """
    expected = f"a score from {scale.describe()} (e.g. 'Score: {_example(scale)}')"
    if criterion is not None:
        expected = f"a score from {scale.describe()} for {criterion!r} (e.g. '{criterion}: {_example(scale)}')"
    prefix = "Score: " if cued else ""
    normal = _normalise(prefix + text)
    work = _mask(normal)
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
        if _NUM_RE.search(work):
            raise _fail("no number marked as a score (only numbers inside prose)", text, expected)
        raise _fail("no number", text, expected)
    except ParseError as exc:
        if raw is text and criterion is None:
            raise
        raise ParseError(exc.message, raw=raw, expected=expected, criterion=criterion) from None


def strip_echoed_lines(text: str, echoes: Sequence[str]) -> str:
    """``text`` without the lines that copy one of ``echoes`` (the prompt's own rubric lines).

    A judge sometimes repeats a rubric line ("Score 1: The model's responses are irrelevant
    ...") before or instead of answering; that line names a score it is *describing*, not
    giving. A line is an echo when, after its "Score N:" style head, it starts with the
    first 24 characters of an option's description (case and spacing ignored).
    """
    keys = {_flat(e)[:24] for e in echoes if len(_flat(e)) >= 12}
    if not keys:
        return text
    out = []
    for line in text.splitlines(keepends=True):
        body = _flat(re.sub(r"^\W*(?:(?:score|rating|point)s?\s*)?\(?\d+(?:\.\d+)?\)?\s*(?:means|[:=\-–—)])?", "",
                            line, flags=re.I))
        if body and any(body.startswith(k) for k in keys):
            continue
        out.append(line)
    return "".join(out)


def _flat(text: str) -> str:
    return " ".join(re.sub(r"[*`_\"']", "", text).lower().split())


# --------------------------------------------------------------------------- MCQ letters

_MCQ_CUE = (
    r"(?:final\s+)?(?:answer|option|choice|verdict|grade|rating|selection)s?\s*(?:is|would\s+be|:|=|-)?"
    r"|(?:i\s+(?:would\s+)?)?(?:choose|chose|select|selected|pick|picked|go\s+with)"
)


def parse_mcq(text: str, scale: Scale, *, raw: str | None = None) -> float:
    """Map a multiple-choice answer ("Answer: B", "B.", "(C)", "Option D", "I choose E") to its score.

    ``scale.letters`` gives the map (SummEval MCQ: A→1 … E→5). Letters are read after an
    answer cue or at the very start of the response; the last cued letter wins. Without a
    cue, parenthesised letters "(C)" are used when they all agree. Raises :class:`ParseError`
    when no letter from the map is found, when the answer names two letters ("B or C"), or
    when parenthesised letters disagree; :class:`ScaleError` when the scale has no letters.
    ``raw`` (default ``text``) is the full response kept on the error.
    """
    if raw is not None and raw != text:
        try:
            return parse_mcq(text, scale)
        except ParseError as exc:
            raise ParseError(exc.message, raw=raw, expected=exc.context.get("expected", "")) from None
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


# --------------------------------------------------------------------------- pairwise verdicts

_NOUNS = r"(?:summary|summaries|response|output|answer|option|candidate|assistant|text|system|model|translation|story|completion)"
_COMPARATIVE = (
    r"(?:is|was|seems|appears|looks|reads|would\s+be)?\s*(?:\w+ly\s+)?"
    r"(?:better|superior|preferable|preferred|stronger|more\s+\w+|the\s+(?:better|best|stronger|winner|preferred)|wins)"
)
_HEDGED = re.compile(
    r"\b(?:whether|hard\s+to\s+(?:say|tell)|difficult\s+to\s+(?:say|tell)|(?:cannot|can't|can\s+not)\s+"
    r"(?:decide|say|tell|choose|determine)|unable\s+to|one\s+(?:could|might|may)\s+argue|not\s+sure|unclear)\b",
    re.I,
)
_OVERALL = (
    r"(?:is|was|would\s+be)\s+(?:(?:clearly|definitely|overall|slightly|much|significantly)\s+)?"
    r"(?:better|superior|preferable|preferred|the\s+(?:better|best|stronger|winner|preferred)(?:\s+\w+)?)"
)
_WORSE = r"(?:is|was|seems|appears)?\s*(?:\w+ly\s+)?(?:worse|weaker|inferior|less\s+\w+)"
_TIE_PHRASES = re.compile(
    r"\b(?:it'?s|it\s+is|this\s+is|that'?s|declare|call\s+it|result\s+is|(?:verdict|answer|decision)\s*(?:is|:))"
    r"\s+(?:a\s+)?(?:tie|draw)\b|\b(?:they|both)\s+are\s+tied\b|^\W*(?:a\s+)?(?:tie|draw|tied)\W*$"
    r"|\b(?:both|the\s+two)\b[^.\n]{0,60}\b(?:equally|equal|the\s+same)\b|\bequal\s+(?:quality|in|level)"
    r"|\bsame\s+(?:quality|level)\b|\bno\s+(?:clear\s+)?(?:winner|difference|preference)\b"
    r"|\bneither\b[^.\n]{0,40}\b(?:better|preferred|preferable|superior|wins|stands\s+out)\b|^\W*neither\b",
    re.I,
)


_BETTER_ONE = (rf"\bthe\s+(?:better|best|stronger|preferred|preferable|superior|winning)\s+(?:{_NOUNS}|one|choice)\b"
               r"[^.!?\n]{0,80}?\b(?:is|would\s+be)\s+")
_VERDICT_CUE = (
    r"\b(?:(?:final\s+)?(?:answer|verdict|choice|winner|decision|preference)\s*(?:is|:|=|-)\s*"
    r"|(?:i\s+(?:would\s+)?)?(?:prefer|choose|chose|pick|select|vote\s+for|go\s+with)\s+)"
)


def _label_forms(label: str, ordinal: str) -> str:
    esc = re.escape(label)
    # a one-letter label is also an English word ("a", "A", "I"): bare, it counts only in its own case
    # and never lower-case ("answer a question" names no output); in brackets it always counts
    word = len(label) == 1 and label.isalpha()
    named = rf"[(\[]{esc}[)\]]" if word and not label.isupper() else (
        rf"(?-i:[(\[]?{esc}[)\]]?)" if word else rf"[(\[]?{esc}[)\]]?")
    forms = [
        rf"\b{_NOUNS}\s*(?:#|no\.?|number)?\s*{named}(?!\w)",
        rf"#\s*{esc}(?!\w)",
        rf"[(\[]{esc}[)\]]",
        rf"\bthe\s+{ordinal}\s+(?:{_NOUNS}|one)\b",
    ]
    if label.isdigit() or label.isupper():
        forms.append(rf"(?<![\w#'])(?-i:[(\[`]?{esc}[)\]`]?)(?![\w'])")
    return "(?:" + "|".join(forms) + ")"


_CONCLUSION = re.compile(
    r"(?:^|(?<=[.!?\n]))\s*(?:therefore|thus|hence|so|overall|ultimately|in\s+conclusion|in\s+summary|to\s+conclude|"
    r"all\s+in\s+all|in\s+the\s+end|finally|consequently|as\s+a\s+result)\b[^.!?\n]*",
    re.I,
)


_NEITHER_TIE = re.compile(r"\bneither\b[^.!?\n]{0,80}?\bnor\b[^.!?\n]{0,80}?\b(?:is|are|was|were)\s+(?:\w+\s+)?"
                          r"(?:better|preferred|preferable|superior)\b", re.I)
"""A sentence saying neither output is better: a tie claim, never a claim for the output it names last."""


_END = re.compile(r"[.!?][\"'”’)]*(?=\s|$)|\n")


def _sentence_span(text: str, pos: int) -> tuple[int, int]:
    """The sentence (or line) of ``text`` holding position ``pos``."""
    left = 0
    for m in _END.finditer(text, 0, pos):
        left = m.end()
    right = _END.search(text, pos + 1)
    return left, right.start() if right else len(text)


def _sentences(text: str) -> list[str]:
    """``text`` cut into sentences and lines (a full stop inside "(a)." or a decimal does not cut)."""
    parts = re.split(r"(?<=[.!?])\s+(?=[A-Z(\[\"'#*])|\n+", text)
    return [p.strip() for p in parts if p.strip()]


def parse_pairwise(
    text: str, labels: tuple[str, str] = ("1", "2"), *, tie: str | None = None, case_sensitive: bool = False,
    ties: bool = True, final: Literal["last", "first", "either"] = "either",
) -> Literal["first", "second", "tie"]:
    """Read which of two outputs a judge preferred: "first", "second" or "tie".

    ``labels`` are how the prompt named the two outputs ("1"/"2" for "Summary #1", "A"/"B"
    for "Response A", "a"/"b" for "Output (a)"); ``tie`` optionally names a tie option
    (SummEval head-to-head uses "C"). ``case_sensitive`` is for labels that differ only by
    case (AlpacaEval's "m" / "M"). Explicit verdicts are read first and the last one wins:
    the whole answer being a label, an answer that starts or ends with a label standing
    alone ("B: Summary #2 is ...", "... explanation.\\nM"), "Answer: A", "[[B]]", "I prefer
    Summary 1". Without one, a concluding sentence ("Therefore, Output (a) is better") decides
    when it claims one side; failing that, comparative claims ("Summary 2 is better",
    "Response A is less fluent", "both are equally good", "neither is better") must agree.
    Raises :class:`ParseError` when no side is claimed or when both (or a side and a tie) are.

    A claim inside the reasoning is never the verdict: only the last concluding sentence, or the
    final statement (``final``: the "last" sentence after reasoning, the "first" when the verdict
    comes first, "either" otherwise) decides, and a different claim elsewhere makes the answer
    ambiguous. ``ties=False`` (a template offering no tie) makes a claimed tie a failure.
    """
    first, second = labels
    if not first or not second or first == second or (not case_sensitive and first.lower() == second.lower()):
        hint = " (labels that differ only by case need case_sensitive=True)" if first and first != second else ""
        raise ConfigError(f"expected two different, non-empty pairwise labels; got {labels!r}{hint}")
    flags = 0 if case_sensitive else re.I
    expected = f"a verdict naming {first!r}, {second!r} or a tie (e.g. 'Summary {first} is better')"
    work = re.sub(r"[*]+", "", text).strip()
    forms: dict[Verdict, str] = {
        "first": _label_forms(first, "(?:first|former)"),
        "second": _label_forms(second, "(?:second|latter)"),
    }
    bare: dict[Verdict, str] = {"first": first, "second": second}
    if tie:
        forms["tie"] = rf"[(\[]?{re.escape(tie)}[)\]]?(?!\w)"
        bare["tie"] = tie

    def same(x: str, y: str) -> bool:
        return x == y if case_sensitive else x.lower() == y.lower()

    # 1. the whole answer is one label ("B", "Summary #1", "(2)", "Output (a)")
    stripped = re.sub(r"^[\W_]+|[\W_]+$", "", work)
    for side, label in bare.items():
        if same(stripped, label) or (side != "tie" and re.fullmatch(rf"\W*{forms[side]}\W*", work, flags)):
            return side

    # 2. explicit verdicts; the last one wins
    explicit: list[tuple[int, Verdict]] = []
    for side, label in bare.items():
        esc = re.escape(label)
        sep = r"(?:\s*[)\]]|:|\s*$|\s*\n" + ("" if label.isdigit() else r"|\.(?!\w)") + ")"
        if re.match(rf"[(\[`]{{0,2}}\s*{esc}{sep}", work, flags):
            explicit.append((0, side))
        explicit.extend((m.start(), side) for m in re.finditer(rf"\[\[\s*{esc}\s*\]\]", work, flags))
        explicit.extend((m.start(), side) for m in re.finditer(f"(?i:{_VERDICT_CUE})" + forms[side], work, flags))
        end = re.search(rf"(?:^|\n|[.!?:]\s+)[\s\"'`(\[]*{esc}[\"'`)\]]*\s*\.?\s*$", work, flags)
        if end is not None and len(work) > len(label) + 2:
            explicit.append((end.start() + 1, side))
    if explicit:
        pos, side = max(explicit, key=lambda p: p[0])
        start, end = _sentence_span(work, pos)
        rivals = {s for p, s in explicit if s != side and start <= p < end}
        if rivals:  # "[[A]] [[B]]", "either [[A]] or [[B]] would do": two verdicts, no final one
            order = [v for v in ("first", "second", "tie") if v in rivals | {side}]
            raise _fail(f"two verdicts in one sentence ({', '.join(order)}) with no final one", text, expected)
        return side

    pairs: tuple[tuple[Verdict, Verdict], ...] = (("first", "second"), ("second", "first"))

    def claims(part: str, overall: bool = False) -> set[Verdict]:
        """Sides ``part`` claims; ``overall`` keeps only whole verdicts ("is better"), not an aspect ("more fluent")."""
        found: set[Verdict] = set()
        original = part
        kept = [x for x in _sentences(part) if not _HEDGED.search(x)]
        if len(kept) != len(_sentences(part)):
            part = "\n".join(kept)  # "hard to say whether Summary 1 is better" claims nothing
        if overall:
            for side, _ in pairs:
                if re.search(rf"^\W*{forms[side]}(?:'s\s+\w+)?\s+(?i:{_OVERALL})\W*$", part, flags):
                    found.add(side)
            return found
        part = _NEITHER_TIE.sub(lambda m: " " * len(m.group(0)), part)  # "neither (a) nor (b) is better" names no side
        for side, other in pairs:
            if re.search(rf"{forms[side]}(?:'s\s+\w+)?\s+(?i:{_COMPARATIVE})", part, flags) or re.search(
                rf"(?i:\b(?:better|superior|preferable)\s+than\s+){forms[other]}", part, flags
            ):
                found.add(side)
            if re.search(rf"{forms[side]}(?:'s\s+\w+)?\s+(?i:{_WORSE})", part, flags):
                found.add(other)
            if re.search(rf"(?i:{_BETTER_ONE}){forms[side]}", part, flags):  # "the better output ... is Output (a)"
                found.add(side)
        if _TIE_PHRASES.search(original) or _NEITHER_TIE.search(original):
            found.add("tie")
        return found

    def decided(side: Verdict) -> Verdict:
        if side == "tie" and not ties:
            raise _fail("a tie, which the template does not offer", text, expected)
        return side

    def conflict(claimed: set[Verdict]) -> ParseError:
        order = [v for v in ("first", "second", "tie") if v in claimed]
        return _fail(f"conflicting verdicts ({', '.join(order)})", text, expected)

    # 3. the last concluding sentence, when it claims exactly one side and nothing after it claims another
    conclusions = list(_CONCLUSION.finditer(work))
    if conclusions:
        last = conclusions[-1]
        concluded = claims(last.group(0))
        if len(concluded) == 1 and claims(work[last.end():]) <= concluded:
            return decided(concluded.pop())
        if len(concluded) > 1:
            raise conflict(concluded)
        if not concluded and not work[last.end():].strip(" \t\n.!"):
            raise _fail(f"a concluding sentence that names no side ({_snippet(last.group(0).strip(), 60)!r})",
                        text, expected)

    # 4. the final statement (last sentence, first one, or either), agreeing with every other claim
    sentences = _sentences(work)
    claimed = claims(work)
    ends: set[Verdict] = set()
    if sentences:
        # the end the format puts the verdict at counts with any claim; the other end only with a whole
        # verdict standing alone ("Assistant A's answer is better." before reasons)
        ends |= claims(sentences[-1], overall=final == "first")
        ends |= claims(sentences[0], overall=final == "last")
    if len(ends) == 1 and claimed <= ends:
        return decided(ends.pop())
    if len(claimed) > 1 or len(ends) > 1:
        raise conflict(claimed | ends)
    if claimed:
        raise _fail(f"no final verdict (a claim for {claimed.pop()} only inside the reasoning)", text, expected)
    raise _fail("no verdict", text, expected)


# --------------------------------------------------------------------------- several criteria


def _segment(work: str, start: int, any_name: str) -> str:
    """The value after a criterion label: to the end of the line or the next criterion name."""
    line_end = work.find("\n", start)
    segment = work[start : len(work) if line_end < 0 else line_end]
    nxt = re.search(rf"(?<!\w)(?:{any_name})(?!\w)", segment, re.I)
    if nxt is not None and nxt.start() > 0:
        segment = segment[: nxt.start()]
    return segment


def parse_criteria(text: str, names: Sequence[str], scale: Scale, *, quoted: Sequence[str] = (),
                   judged: Sequence[str] = ()) -> dict[str, float | ParseError]:
    """Read one score per criterion from a multi-criterion answer ("Coherence: 4\\nFluency: 3").

    Each name is matched case-insensitively where it labels a value ("Coherence: 4",
    "- Fluency score: 3/5", "**Relevance** - 2"); the last labelled occurrence counts and its
    value runs to the end of the line or to the next criterion name. A missing or malformed
    entry maps to the :class:`ParseError` instance (recorded, not raised).

    What the answer reports from a third party or quotes back from ``quoted`` (the texts the
    judge was shown) and ``judged`` (the texts under judgment) is not read
    (:func:`~mitigate.parse.quoted.unquote`); a criterion the answer gives its own value for and
    also, bare, a different value a judged text holds is a failure for that criterion.
    """
    if not names:
        return {}
    wide = Scale(min=-1e6, max=1e6, step=0.001)
    own_words = {w.lower() for n in names for w in re.findall(r"[A-Za-z]+", n)} | {"score", "rating", "out", "of"}

    def states(span: str) -> bool:
        return any(not isinstance(v, ParseError) for v in _criteria(span, names, wide).values())

    def bare(span: str) -> bool:
        return all(w.lower() in own_words or w[0].isdigit()
                   for w in re.findall(r"[A-Za-z]+|\d+(?:\.\d+)?", _normalise(span)))

    own, strict = unquote(text, statement=states, bare=bare, sources=quoted, judged=judged)
    out = _criteria(own, names, scale, raw=text)
    if strict != own:
        for name, value in _criteria(strict, names, scale, raw=text).items():
            mine = out[name]
            if not isinstance(value, ParseError) and not isinstance(mine, ParseError) and value != mine:
                expected = f"one value for {name!r} on {scale.describe()}"
                out[name] = ParseError(
                    f"expected {expected}; got {_fmt(value)} and also {_fmt(mine)}, which the judged text holds as "
                    "written: no way to tell which is the judge's own", raw=text, expected=expected, criterion=name)
    return out


def _criteria(text: str, names: Sequence[str], scale: Scale, *, raw: str | None = None) -> dict[str, float | ParseError]:
    """:func:`parse_criteria` on ``text`` as it is (errors carry ``raw``, default ``text``)."""
    raw = text if raw is None else raw
    work = re.sub(r"[*`#]+", "", text)
    any_name = "|".join(re.escape(n) for n in sorted(names, key=len, reverse=True))
    out: dict[str, float | ParseError] = {}
    for name in names:
        expected = f"a line '{name}: <score from {scale.describe()}>'"
        label = re.compile(
            rf"(?<!\w){re.escape(name)}(?!\w)\s*(?:score|rating)?\s*(?:\([^)\n]*\))?\s*(?:[:=]|-(?!\d)|\s(?=\s*\d))\s*",
            re.I,
        )
        hits = list(label.finditer(work))
        if not hits:
            out[name] = _fail(f"no '{name}:' entry", raw, expected, criterion=name)
            continue
        segments = [_segment(work, hit.end(), any_name) for hit in hits]
        # The last labelled entry that holds a number; prose such as "Coherence - the
        # summary ..." in an explanation after the scores is not an entry.
        numeric = [seg for seg in segments if _NUM_RE.search(_normalise(seg))]
        segment = numeric[-1] if numeric else segments[-1]
        try:
            out[name] = _score(segment.strip(), scale, raw=raw, cued=True, criterion=name)
        except ParseError as exc:
            out[name] = exc
    return out


# --------------------------------------------------------------------------- expected score


def score_tokens(scale: Scale) -> list[str]:
    """The surface strings of the scale's plain answers, e.g. ["1", "2", ..., "10"].

    These are what a logprob reducer looks for (after stripping a token's leading space);
    points with more than one character ("10", "3.5") may span several tokens.
    """
    return [_fmt(p) for p in scale.points()]


def _clean_token(token: str) -> str:
    return token.replace("Ġ", " ").replace("▁", " ").replace("Ċ", "\n").strip()


def _distribution(pos: TokenLogprob) -> dict[str, float]:
    """Probability per cleaned token string at one position (generated token included)."""
    probs: dict[str, float] = {}
    seen: set[str] = set()
    entries = list(pos.top)
    if pos.token not in {t for t, _ in entries}:
        entries.append((pos.token, pos.logprob))
    for tok, lp in entries:
        if tok in seen:
            continue
        seen.add(tok)
        key = _clean_token(tok)
        probs[key] = probs.get(key, 0.0) + math.exp(lp)
    return probs


def _point_mass(
    positions: Sequence[TokenLogprob], i: int, points: dict[str, int]
) -> dict[int, float]:
    """Probability mass per integer scale point at position ``i`` (multi-token numbers split)."""
    dist = _distribution(positions[i])
    generated = _clean_token(positions[i].token)
    prefixes = {s[:k] for s in points for k in range(1, len(s))}
    mass: dict[int, float] = {}
    for tok, p in dist.items():
        if tok not in points and tok not in prefixes:
            continue
        if tok not in prefixes:
            mass[points[tok]] = mass.get(points[tok], 0.0) + p
            continue
        # ``tok`` starts a longer point ("1" of "10"). Its continuation is only observed
        # when the model generated this very token and a next position exists.
        if tok != generated or i + 1 >= len(positions):
            if tok in points:
                mass[points[tok]] = mass.get(points[tok], 0.0) + p
            continue
        nxt = _distribution(positions[i + 1])
        ends = sum(q for t, q in nxt.items() if not t[:1].isdigit())
        longer = {points[tok + t]: q for t, q in nxt.items() if t and tok + t in points}
        z = (ends if tok in points else 0.0) + sum(longer.values())
        if z <= 0:
            continue  # every observed continuation leaves the scale ("1" then "5" on 1-10)
        if tok in points:
            mass[points[tok]] = mass.get(points[tok], 0.0) + p * ends / z
        for value, q in longer.items():
            mass[value] = mass.get(value, 0.0) + p * q / z
    return mass


def expected_score(positions: Sequence[TokenLogprob], scale: Scale, *, min_mass: float = 0.5) -> float:
    """G-Eval-style probability-weighted score: sum(p(v) * v) over the scale's integer points.

    The probabilities are :func:`score_distribution`'s (its docstring says which position is
    read and how multi-token numbers are split). Raises :class:`ParseError` when no position
    carries mass on the scale.
    """
    dist = score_distribution(positions, scale, min_mass=min_mass)
    return sum(v * p for v, p in dist.items())


def score_distribution(
    positions: Sequence[TokenLogprob], scale: Scale, *, min_mass: float = 0.5
) -> dict[int, float]:
    """Probability per integer scale point at the score position, renormalised to sum to 1.

    The score position is the first generated position whose token is a scale number (or the
    start of one, "1" of "10"); failing that, the first position whose top alternatives put
    at least ``min_mass`` probability on scale points. Probabilities there are renormalised
    over the integer points. Tokens are compared after stripping leading spaces and the
    byte-level markers "Ġ"/"▁".

    Multi-token numbers ("10" written as "1" + "0"): when the generated token is "1", its
    mass is split between 1 and 10 by the next position's top alternatives: P(10) ∝ P("0"
    | "1"), P(1) ∝ P(next token is not a digit | "1"); digit continuations that leave the
    scale ("15") are excluded and the split renormalised. This is exact up to top-k
    truncation. When another token was generated (say "7") and "1" is only an alternative,
    its continuation was never observed, so its mass goes to 1 (an approximation that can
    only under-weight 10 by at most P("1")). A single "10" token counts as 10 directly.
    Points outside the top alternatives get probability 0. Raises :class:`ParseError` when
    no position carries mass on the scale.
    """
    expected = f"token logprobs with probability on the scale points {scale.describe()}"
    pts = scale.integer_points()
    if not pts:
        raise ScaleError(f"expected a scale with at least one integer point; got {scale.describe()}")
    points = {str(v): v for v in pts}
    prefixes = {s[:k] for s in points for k in range(1, len(s))}
    raw = "".join(p.token for p in positions)
    chosen: dict[int, float] | None = None
    for i, pos in enumerate(positions):
        if _clean_token(pos.token) in points or _clean_token(pos.token) in prefixes:
            mass = _point_mass(positions, i, points)
            if sum(mass.values()) > 0:
                chosen = mass
                break
    if chosen is None:
        for i, pos in enumerate(positions):
            dist = _distribution(pos)
            total = sum(dist.values())
            mass = _point_mass(positions, i, points)
            if total > 0 and sum(mass.values()) / total >= min_mass:
                chosen = mass
                break
    if chosen is None:
        raise ParseError(
            f"expected {expected}; got no position with mass on them in {_snippet(raw)!r} "
            f"({len(positions)} positions)",
            raw=raw,
            expected=expected,
        )
    total = sum(chosen.values())
    return {v: p / total for v, p in sorted(chosen.items())}
