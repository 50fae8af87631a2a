"""The template's own answer line found in a judge's answer: "Score: 4", "[RESULT] 4", "[[B]]", "Output (a)",
"Therefore, Output (b) is better." (:class:`AnswerLine`, built once per answer format)."""

from __future__ import annotations

import functools
import re
from collections.abc import Sequence
from dataclasses import dataclass

from mitigate.errors import ParseError
from mitigate.parse._common import normalise_answer, refuse

VALUE = "{value}"
"""Where the value goes in an answer line."""


@dataclass(frozen=True)
class AnswerLine:
    """An answer line as the readers look for it: ``line`` with ``{value}``, ``value`` a regex of one
    value, ``first`` whether the first line decides (else the last), ``relations`` Arena-Hard's (``A>B``),
    ``shown`` the format as errors name it."""

    line: str
    value: str
    kind: str
    first: bool = False
    case_sensitive: bool = False
    relations: bool = False
    shown: str = ""

    @functools.cached_property
    def _flags(self) -> int:
        return 0 if self.case_sensitive else re.IGNORECASE

    @functools.cached_property
    def _pattern(self) -> re.Pattern[str]:
        return re.compile(line_pattern(self.line, self.value), self._flags)

    @functools.cached_property
    def _verdict_pattern(self) -> re.Pattern[str]:
        return re.compile(verdict_line_pattern(self.line, self.value), self._flags)

    @functools.cached_property
    def _verdict_alone(self) -> re.Pattern[str]:
        """The verdict line where the deciding one must stand alone (see :meth:`_verdict`)."""
        pattern = verdict_line_pattern(self.line, self.value)
        if len(re.findall(r"[A-Za-z]+", self.line.replace(VALUE, " "))) <= 1:
            # "Summary {value}", "Output ({value})": the line is also how the reasoning names an output,
            # so only a line holding it alone (after a short lead-in: "Answer:", "On balance,") is the verdict
            pattern = (
                r"(?m)^[ \t>#\-*\"'“]*(?:[A-Za-z][A-Za-z ]{0,24}[:,\-]\s*)?" + pattern + r"[ \t\"'”.!]*$"
            )
        return re.compile(pattern, self._flags)

    def holds(self, span: str) -> bool:
        """Whether ``span`` holds this line anywhere (a worded verdict line as a sentence)."""
        pattern = self._verdict_pattern if self.kind == "pairwise" and worded(self.line) else self._pattern
        return pattern.search(normalise_answer(span) if self.kind == "score" else span) is not None

    def find(self, text: str) -> str | None:
        """The value of the deciding answer line in ``text``, or None when there is none; a ParseError for two
        different values in its own sentence ("either [[A]] or [[B]]"), an echoed list of the options, or a
        hedged verdict sentence."""
        if self.line.strip() == VALUE:
            return None  # a bare value has no distinctive line: the general parser reads it
        if self.kind == "pairwise" and not self.relations and worded(self.line):
            return self._verdict(text)
        work = normalise_answer(text) if self.kind == "score" else text
        hits = list(self._pattern.finditer(work))
        if not hits:
            return None
        distinct = {self._same_value(h.group("v")) for h in hits}
        if self.kind != "score" and len(distinct) >= 3:  # scores may come with a per-aspect breakdown
            raise ParseError(
                f"expected one answer in the format {self.shown}; got {len(distinct)} different ones "
                f"({', '.join(dict.fromkeys(h.group('v').strip() for h in hits))}): an echoed list of "
                "the options?",
                raw=text,
                expected=f"one answer {self.shown}",
            )
        chosen = hits[0] if self.first else hits[-1]
        self._one_in_sentence(work, chosen, hits, text)
        if self.kind != "score":
            self._one_value(hits, text)
        return chosen.group("v")

    def _one_value(self, hits: Sequence[re.Match[str]], text: str) -> None:
        """Raise when the answer states two different verdicts in the format's own line, neither marked as a
        quotation ("[[A]]" and "[[B]]" on two lines): nothing tells which is the judge's own, so the answer
        is a recorded failure, never the last or the first of the two (docs/answer_reading.md)."""
        shown = dict.fromkeys(h.group("v").strip() for h in hits)
        if len({self._same_value(v) for v in shown}) >= 2:
            got = " and ".join(repr(v) for v in shown)
            raise refuse(
                f"one answer {self.shown}", f"{got} on different lines or sentences, neither quoted", text
            )

    def _full(self, work: str, hit: re.Match[str]) -> bool:
        """Whether the sentence of ``hit`` (a verdict line found in ``work``) opens with the connective the
        template's line opens with ("Therefore, Output (a) is better.", "Therefore, based on ..., Output (a)
        is better."); False for a line without one."""
        connective = _CONNECTIVE.match(self.line.strip())
        if connective is None:
            return False
        word = connective.group(0).split()[0].rstrip(",")
        start, _ = sentence_bounds(work, hit.start(), hit.end())
        return re.match(rf"[\W_]*{re.escape(word)}\b", work[start : hit.end()], re.IGNORECASE) is not None

    def _same_value(self, value: str) -> str:
        return value.strip() if self.case_sensitive else value.strip().lower()

    def _one_in_sentence(
        self, work: str, chosen: re.Match[str], hits: Sequence[re.Match[str]], text: str
    ) -> None:
        """Raise when a hit with another value shares ``chosen``'s sentence (no final verdict)."""
        start, end = sentence_bounds(work, chosen.start(), chosen.end())
        mine = self._same_value(chosen.group("v"))
        rival = [
            h.group("v").strip()
            for h in hits
            if h is not chosen and start <= h.start() < end and self._same_value(h.group("v")) != mine
        ]
        if rival:
            sentence = " ".join(work[start:end].split())[:120]
            got = f"{rival[0]!r} and {chosen.group('v').strip()!r} in one sentence {sentence!r}"
            raise refuse(f"one answer {self.shown}", f"{got}, with no final one", text)

    def _verdict(self, text: str) -> str | None:
        """The label of the deciding verdict written in the template's own words, or None when "neither ...
        nor" names no side. Its own clause decides (docs/answer_reading.md, principles 4 and 5): a hedge or
        question in it, or a reversal after it, is a :class:`ParseError`."""
        work = _EMPHASIS.sub("", text)
        hits = list(self._verdict_alone.finditer(work))
        if not hits:
            return None
        # the line written in full (with the template's "Therefore,") decides over a bare mention of it
        full = [h for h in hits if self._full(work, h)] or hits
        hit = full[0] if self.first else full[-1]
        self._one_in_sentence(work, hit, hits, text)
        self._one_value(full, text)
        start, end = sentence_bounds(work, hit.start(), hit.end())
        clause = own_clause(work[start : hit.start()])
        rest = _REASON_AFTER.sub(" ", _NOT_ONLY.sub(" ", work[hit.end() : end]))
        if _NEITHER.search(clause):
            return None
        if (
            _HEDGE.search(clause)
            or work[hit.end() : hit.end() + 2].startswith("?")
            or _QUALIFIED.search(rest)
        ):
            line = " ".join(work[start : hit.end()].split())
            raise refuse(
                f"a verdict in the format {self.shown}", f"a hedged or questioned verdict line {line!r}", text
            )
        return hit.group("v")


_EMPHASIS = re.compile(r"[*`]+")


@functools.lru_cache(maxsize=512)  # a pure function of the format: built once per format, not per answer read
def line_pattern(line: str, value_regex: str) -> str:
    """A regex finding ``line`` in an answer: whitespace-tolerant, words before a bracket optional."""
    head, tail = line.split(VALUE, 1)
    bracket = re.search(r"(\[\[|\[|<\w+>|\(|\"|`)\s*$", head)
    parts: list[str] = []
    if bracket is not None and head[: bracket.start()].strip():
        # "Rating: [[5]]": the words are optional, the brackets are what identify the answer
        parts.append(f"(?:{loose(head[: bracket.start()])})?")
        parts.append(loose(head[bracket.start() :]))
    else:
        parts.append(loose(head))
    # after a cue ("Score:") the value is on the same line; inside brackets or tags it may sit on its own line
    gap = r"\s*" if bracket is not None or not head.strip() else r"[ \t]*"
    parts.append(rf"{gap}(?P<v>{value_regex})(?![.)]\s+[A-Za-z])[ \t]*")
    parts.append(loose(tail))
    pattern = "".join(parts)
    if not head.strip():
        pattern = r"(?<![\w\[(])" + pattern
    if not tail.strip():
        # not a range or a fraction ("3-4", "3 or 4", "4/5"): the general parser judges those
        pattern += r"(?![\w.]\d|\w)(?!\s*(?:-|–|to\b|or\b|/)\s*\d)"
    return pattern


_CONNECTIVE = re.compile(
    r"(?i)^(?:therefore|thus|hence|so|overall|in\s+conclusion|in\s+summary|finally|"
    r"consequently|in\s+the\s+end|ultimately)\b\s*,?\s*"
)
_HEDGE = re.compile(
    r"(?i)\b(?:whether|if|unless|not|never|no|cannot|can't|couldn't|could|might|may|would\s+argue|argue|"
    r"unclear|unsure|uncertain|hard\s+to\s+(?:say|tell)|difficult\s+to\s+(?:say|tell)|one\s+could|some|"
    r"seems?\s+like|at\s+first|initially|claims?|claimed)\b|n't\b"
)

_QUALIFIED = re.compile(r"(?i)\b(?:but|however|yet)\b")
"""After a verdict line in its sentence: a reversal ("..., but it ignores the instruction"). A concession
("even though ...", "although ...") leaves the verdict standing."""
_NOT_ONLY = re.compile(r"(?i)\bnot\s+only\b[^.!?\n]*?\bbut\s+also\b")
# The verdict's reasons after it ("... is better as it is shorter, but ..."): a "but" inside them qualifies a
# reason, not the verdict.
_REASON_AFTER = re.compile(r"(?i)\b(?:as|because|since|given\s+that|considering\s+that)\b.*")
_NEITHER = re.compile(r"(?i)\b(?:neither|nor)\b")
# Subordinate clauses before a verdict ("because Output (a) does not,", "While both are useful,", "based on
# whether it follows the instruction,"): what they say does not hedge the main clause that follows.
_SUBORDINATE = re.compile(
    r"(?i)\b(?:because|since|as|while|whereas|although|though|given|considering|based\s+on|after|when|despite|"
    r"in\s+light\s+of|due\s+to|upon|according\s+to)\b[^,;:]*[,;:]"
)
# Where a coordinate clause starts: the verdict's own clause is the last one.
_COORDINATE = re.compile(r"(?i),\s*(?:and|but|so|yet)\b|;|:")


def own_clause(before: str) -> str:
    """The words of a verdict's own clause before it, from the text of its sentence before it."""
    text = _SUBORDINATE.sub(" ", before)
    cuts = list(_COORDINATE.finditer(text))
    return text[cuts[-1].end() :] if cuts else text


def sentence_bounds(text: str, start: int, end: int) -> tuple[int, int]:
    """The sentence (or line) of ``text`` around ``text[start:end]``."""
    left = max((m.end() for m in BOUNDARY.finditer(text, 0, start)), default=0)
    right = BOUNDARY.search(text, end)
    return left, right.start() if right else len(text)


BOUNDARY = re.compile(r"[.!?][\"'”’)]*(?=\s|$)|\n")


def worded(line: str) -> bool:
    """Whether a verdict line names its label with words around it ("Output ({value})")."""
    head, tail = line.split(VALUE, 1)
    return bool(re.search(r"[A-Za-z]", head + tail))


@functools.lru_cache(maxsize=512)
def verdict_line_pattern(line: str, value_regex: str) -> str:
    """A regex finding a worded verdict line anywhere (connective and closing stop optional)."""
    head, tail = line.split(VALUE, 1)
    head_text = head.strip()
    connective = _CONNECTIVE.match(head_text)
    parts = []
    if connective is not None:
        parts.append(f"(?:{loose(connective.group(0).rstrip(', '))}" + r"\s*,?\s*)?")
        head_text = head_text[connective.end() :]
    if head_text:
        parts.append(r"(?<![\w(\[])" + loose(head_text) + (r"\s*" if head.endswith(" ") else ""))
    else:
        parts.append(r"(?<![\w(\[])")
    parts.append(f"(?P<v>{value_regex})")
    tail_text = tail.rstrip().rstrip(".!")
    if tail_text.strip():
        parts.append((r"\s*" if tail.startswith(" ") else "") + loose(tail_text))
    parts.append(r"(?![\w])")
    return "".join(parts)


def loose(text: str) -> str:
    """``text`` as a regex where any run of whitespace matches any whitespace and markdown may wrap words."""
    out = []
    for token in re.split(r"(\s+)", text.strip()):
        if not token:
            continue
        if token.isspace():
            out.append(r"\s*")
        elif re.fullmatch(r"[A-Za-z]{3,}s", token):  # "stars" also matches "One star"
            out.append(r"[*_]*" + re.escape(token[:-1]) + r"s?[*_]*")
        else:
            out.append(r"[*_]*" + re.escape(token) + r"[*_]*")
    return "".join(out)
