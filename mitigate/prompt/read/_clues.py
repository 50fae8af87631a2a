"""Reading a judge template's structure from its words: scale statements, criterion, judged slots, pairwise
labels. Each function returns what it found and where (the evidence ``prompts inspect`` shows), preferring
what names the scale of *the score* over incidental numbers."""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

OUTPUT_SLOT_NAMES = tuple(
    "output summary response answer hypothesis candidate text conversation completion generation prediction "
    "actual_output submission translation story generated_text model_output test_case_content reply".split()
)
"""Slot names taken to hold the judged text when ``output_slot`` is not given."""


@dataclass(frozen=True)
class ScaleStatement:
    """A range the template states, with the words that stated it."""

    lo: float
    hi: float
    text: str
    criterion_line: bool = False
    lo_span: tuple[int, int] | None = None  # where the low end is written (None: implicit, "7-point")
    hi_span: tuple[int, int] | None = None


_NUM = r"-?\d+(?:\.\d+)?"
_SCALE_PATTERNS = [
    # "Coherence (1-5)", "(0-1)", "(1 - 3)"
    re.compile(rf"\((?P<lo>{_NUM})\s*(?:-|–|to)\s*(?P<hi>{_NUM})\)"),
    # "on a scale of 1 to 10", "scale from 1-5", "rating scale of 0 to 100"
    re.compile(rf"\bscale\s+(?:of|from)\s+(?P<lo>{_NUM})\s*(?:-|–|to)\s*(?P<hi>{_NUM})\b", re.I),
    # "an integer between 1 and 5", "a score between 0 and 1", "score from 1 to 10", "rate from 1 to 5"
    re.compile(
        rf"\b(?:score|scores|rating|rate|integer|number|grade|value|points?|from|rated)\b[^.\n\d]{{0,30}}?"
        rf"\b(?:between|from)\s+(?P<lo>{_NUM})\s*(?:and|to|-|–)\s*(?P<hi>{_NUM})\b",
        re.I,
    ),
    # "1-10 scale", "1 to 5 scale"
    re.compile(rf"\b(?P<lo>{_NUM})\s*(?:-|–|to)\s*(?P<hi>{_NUM})[\s-]*(?:point\s+)?(?:scale|range)\b", re.I),
    # "score of 1 to 5", "rating of 1-10"
    re.compile(rf"\b(?:score|rating|grade)\s+of\s+(?P<lo>{_NUM})\s*(?:-|–|to)\s*(?P<hi>{_NUM})\b", re.I),
    # "a 7-point scale" / "5-point Likert"
    re.compile(r"\b(?P<hi>\d+)[\s-]*point\s+(?:likert\s+)?scale\b", re.I),
]

_CRITERION_LINE = re.compile(
    r"^[ \t]*(?:[-*•]\s*)?(?P<name>[A-Z][A-Za-z "
    rf"/&'-]{{1,40}}?)\s*\((?P<lo>{_NUM})\s*(?:-|–|to)\s*(?P<hi>{_NUM})\)"
    rf"[ \t]*(?:[-–—:][ \t]*)?(?P<def>[^\n]*)(?:\n(?P<next>[^\n]+))?",
    re.MULTILINE,
)
_NAMED_CRITERION = re.compile(
    r"^[ \t]*(?:#+\s*)?(?:evaluation\s+)?(?:criterion|criteria|metric|aspect|dimension)\s*:"
    r"\s*(?P<name>[A-Za-z][\w /&-]{1,40}?)\s*$",
    re.I | re.MULTILINE,
)
_RATE_THE_X_OF = re.compile(
    r"\b(?:rate|score|evaluate|assess|judge|grade|measure)\s+(?:the\s+)?(?P<name>[a-z]+)\s+of\s+(?:the|a|this|each)\s+"
    r"(?:summary|summaries|response|responses|answer|output|text|translation|story|dialogue|conversation|sentence)",
    re.I,
)
_RATE_ITS_X = re.compile(
    r"\b(?:rate|score|evaluate|assess|judge|grade)\s+(?:the\s+)?(?:summary|response|answer|output|text|translation|"
    r"story)(?:'s|s')\s+(?P<name>[a-z]+)\b|\b(?:rate|score|evaluate|assess)\s+[^.\n]{0,40}?\bon\s+(?:its|their)\s+"
    r"(?P<name2>[a-z]+)\b",
    re.I,
)
_NOT_NAMES = frozenset(
    "the a an one two this that its their each quality overall following given response summary text output "
    "answer performance model models responses outputs".split()
)


def find_scales(text: str) -> list[ScaleStatement]:
    """Every plausible scale statement in ``text``, in order of position."""
    found: dict[int, ScaleStatement] = {}
    crit_spans = [m.span() for m in _CRITERION_LINE.finditer(text)]
    for pattern in _SCALE_PATTERNS:
        for m in pattern.finditer(text):
            gd = m.groupdict()
            lo = float(gd["lo"]) if gd.get("lo") is not None else 1.0
            hi = float(gd["hi"])
            if not _plausible_range(lo, hi):
                continue
            in_crit = any(a <= m.start() < b for a, b in crit_spans)
            lo_span = m.span("lo") if gd.get("lo") is not None else None
            found.setdefault(m.start(), ScaleStatement(lo, hi, m.group(0), in_crit, lo_span, m.span("hi")))
    return [found[k] for k in sorted(found)]


@dataclass(frozen=True)
class ScaleMention:
    """A number of the text stating an end ("lo" or "hi") of a scale, and where it is written."""

    value: float
    end: str
    span: tuple[int, int]


_TOP_WORDS = r"highest|best|maximum|max|most|top|greatest|excellent|perfect"
_BOTTOM_WORDS = r"lowest|worst|minimum|min|least|poorest"
_ANCHORS = [
    # "where 5 is the highest", "1 being the worst", "10 = best", "1 means the lowest"
    re.compile(
        rf"(?<![\w.])(?P<v>{_NUM})(?!\w|\.\d)\s*(?:\([^)\n]{{0,20}}\)\s*)?(?:is|being|=|means|meaning|indicates|"
        rf"represents)\s+(?:the\s+)?(?:very\s+)?(?P<w>{_TOP_WORDS}|{_BOTTOM_WORDS})\b",
        re.I,
    ),
    # "the highest score is 5", "a lowest rating of 1"
    re.compile(
        rf"\b(?P<w>{_TOP_WORDS}|{_BOTTOM_WORDS})\s+(?:possible\s+)?(?:score|rating|grade|value)?\s*"
        rf"(?:is|of|=|being)\s+(?P<v>{_NUM})(?!\w|\.\d)",
        re.I,
    ),
]


def scale_mentions(text: str) -> list[ScaleMention]:
    """Every number of ``text`` stating an end of a scale, in order: the ends of :func:`find_scales`'
    statements and anchors naming one end ("where 5 is the highest", "1 being the worst")."""
    found: dict[tuple[int, int], ScaleMention] = {}
    for st in find_scales(text):
        if st.lo_span is not None:
            found[st.lo_span] = ScaleMention(st.lo, "lo", st.lo_span)
        if st.hi_span is not None:
            found[st.hi_span] = ScaleMention(st.hi, "hi", st.hi_span)
    for pattern in _ANCHORS:
        for m in pattern.finditer(text):
            end = "hi" if re.fullmatch(_TOP_WORDS, m.group("w"), re.I) else "lo"
            found.setdefault(m.span("v"), ScaleMention(float(m.group("v")), end, m.span("v")))
    # "where 1 is useless and 10 is flawless": an end of a stated scale named by a word
    ends = {**{st.lo: "lo" for st in find_scales(text)}, **{st.hi: "hi" for st in find_scales(text)}}
    for m in _NAMED_END.finditer(text):
        value = float(m.group("v"))
        if value in ends:
            found.setdefault(m.span("v"), ScaleMention(value, ends[value], m.span("v")))
    return [found[k] for k in sorted(found)]


_NAMED_END = re.compile(
    rf"(?:\b(?:where|with|and|while|whereas|or)\s+|[,;(]\s*|^\s*[-*•]?\s*)(?:a\s+(?:score|rating)\s+of\s+)?"
    rf"(?P<v>{_NUM})(?!\w|\.\d)\s*(?:is|being|=|means|meaning|indicates|represents|stands\s+for)\s+\S",
    re.I | re.M,
)
"""A number named as an end of the scale by a word of its own ("where 1 is useless")."""


def _plausible_range(lo: float, hi: float) -> bool:
    integers = float(lo).is_integer() and float(hi).is_integer()
    return lo < hi and -10 <= lo <= 1 and hi <= 100 and (hi - lo) >= 1 and integers


def choose_scale(statements: Sequence[ScaleStatement]) -> tuple[float, float] | None:
    """The template's scale: a criterion line's range, else the most stated range (first on ties)."""
    if not statements:
        return None
    crit = [s for s in statements if s.criterion_line]
    if crit:
        return crit[0].lo, crit[0].hi
    counts = Counter((s.lo, s.hi) for s in statements)
    best = max(counts.values())
    return next((s.lo, s.hi) for s in statements if counts[(s.lo, s.hi)] == best)


@dataclass(frozen=True)
class FoundCriterion:
    """A criterion named in the template, and how it was found."""

    name: str
    definition: str
    how: str


def find_criterion(text: str) -> FoundCriterion | None:
    """The criterion the template scores, when its words name one (see the module docstring)."""
    for m in _CRITERION_LINE.finditer(text):
        name = m.group("name").strip()
        lo, hi = float(m.group("lo")), float(m.group("hi"))
        if name.lower() in ("score", "scale", "rating") or not _plausible_range(lo, hi):
            continue
        definition = m.group("def").strip() or (m.group("next") or "").strip()
        if "{{" in definition:
            definition = ""
        return FoundCriterion(name.lower(), definition, "criterion line")
    m2 = _NAMED_CRITERION.search(text)
    if m2 is not None and "{{" not in m2.group("name"):
        return FoundCriterion(m2.group("name").strip().lower(), "", "named criterion")
    for pattern in (_RATE_THE_X_OF, _RATE_ITS_X):
        for m3 in pattern.finditer(text):
            name = (m3.groupdict().get("name") or m3.groupdict().get("name2") or "").lower()
            if name and name not in _NOT_NAMES and len(name) > 3:
                return FoundCriterion(name, "", "instruction")
    return None


def guess_output_slot(slots: Sequence[str]) -> str | None:
    """The slot holding the judged text: a known name, or one starting or ending with one."""
    lowered = {s.lower(): s for s in slots}
    for name in OUTPUT_SLOT_NAMES:
        if name in lowered:
            return lowered[name]
    for s in dict.fromkeys(slots):  # "response_to_evaluate", "model_response"
        if any(s.lower().startswith(n) or s.lower().endswith(n) for n in OUTPUT_SLOT_NAMES if n != "text"):
            return s
    return None


_PAIR_SUFFIX = re.compile(r"^(?P<stem>.*?)[_ ]?(?P<suf>1|2|a|b|A|B|one|two)$")
_PAIR_STEMS = tuple(
    "output response answer summary completion generation candidate text assistant model translation story "
    "output_a".split()
)


def find_pair(slots: Sequence[str]) -> tuple[str, str] | None:
    """Two judged-text slots forming a pair (``output_1``/``output_2`` ...), in the order they appear."""
    unique = list(dict.fromkeys(slots))
    lower = {s.lower(): s for s in unique}
    if "output" in lower and "output_b" in lower:
        return lower["output"], lower["output_b"]
    for i, a in enumerate(unique):
        ma = _PAIR_SUFFIX.match(a)
        if ma is None or not any(ma.group("stem").lower().startswith(st) for st in _PAIR_STEMS):
            continue
        for b in unique[i + 1 :]:
            mb = _PAIR_SUFFIX.match(b)
            if mb is None or mb.group("stem").lower() != ma.group("stem").lower():
                continue
            pair = {ma.group("suf").lower(), mb.group("suf").lower()}
            if pair in ({"1", "2"}, {"a", "b"}, {"one", "two"}):
                return (a, b) if ma.group("suf").lower() in ("1", "a", "one") else (b, a)
    return None


_HEADING_LABEL = [
    re.compile(r"\"model_identifier\"\s*:\s*\"(?P<l>[^\"]{1,3})\""),
    re.compile(
        r"(?:\[|<\|)The Start of (?:Assistant|Response|Model|Answer)\s+(?P<l>[A-Za-z0-9]{1,2})'s", re.I
    ),
    re.compile(
        r"\b(?:Output|Response|Assistant|Answer|Summary|Model|Candidate|Completion|Text)\s*"
        r"[`(\[#]?\s*(?P<l>[A-Za-z0-9]{1,2})\s*[`)\]]?\s*(?:'s\s+\w+\s*)?(?:\]|:|\n|$)",
        re.M,
    ),
]


def pair_labels(text: str, first_slot: str, second_slot: str) -> tuple[str, str] | None:
    """How the template names its two outputs: the heading nearest before each slot."""
    labels = []
    for slot in (first_slot, second_slot):
        m = re.search(r"\{\{\s*" + re.escape(slot) + r"\s*\}\}", text)
        if m is None:
            return None
        before = text[max(0, m.start() - 300) : m.start()]
        found = [(h.end(), h.group("l")) for pattern in _HEADING_LABEL for h in pattern.finditer(before)]
        if not found:
            return None
        labels.append(max(found, key=lambda hit: hit[0])[1])
    a, b = labels
    if a == b or (a.lower() == b.lower() and not (a.islower() != b.islower())):
        return None
    return a, b
