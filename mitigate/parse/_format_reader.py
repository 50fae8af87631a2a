"""Reading a judge's answer in the format its template prescribes: echoed rubric lines dropped
(:func:`strip_echoed_lines`) and what is not the judge's own blanked (:func:`.unquote`), the format's own
answer line, a JSON field, two scores on a line or a bare final letter, else the general reader of the
kind."""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Iterator, Sequence
from typing import Any, Literal

from mitigate.errors import MitigateError, ParseError
from mitigate.parse._answer_line import VALUE, AnswerLine
from mitigate.parse._common import Verdict, comparable, normalise_answer, refuse, with_raw
from mitigate.parse._quoted import unquote
from mitigate.parse._reported import reported_spans
from mitigate.parse._score import parse_mcq, parse_score
from mitigate.parse._stub import StubCompletion
from mitigate.parse._verdict import parse_pairwise
from mitigate.scale import Scale

_ANY_SCORE = Scale(min=-1e6, max=1e6, step=0.001)
"""A scale every plain number is on: what a score-shaped statement reads as, whatever the prompt's scale."""
_FINAL: dict[str, Literal["last", "first", "either"]] = {"before": "last", "after": "first", "none": "either"}


class FormatReader:
    """An answer format's reading, built once per format: ``fmt`` is a
    :class:`~mitigate.prompt.answer.AnswerFormat` (read through its fields: ``kind``, ``line``, ``json_key``,
    ``reason_key``, ``labels``, ``tie``, ``relations``, ``two_scores``, ``case_sensitive``, ``reasoning``,
    ``inferred``) and ``shown`` its description, which error messages quote."""

    def __init__(self, fmt: Any, shown: str) -> None:
        self.fmt, self.shown = fmt, shown

    # ------------------------------------------------------------------ what the format is made of
    @functools.cached_property
    def _labels(self) -> tuple[str, ...]:
        """The format's labels, and its tie label when it has one."""
        return (*self.fmt.labels, *([self.fmt.tie] if self.fmt.tie else []))

    @functools.cached_property
    def _label_words(self) -> frozenset[str]:
        """The labels in lower case, as :meth:`_bare_alone` looks for a second value beside the line's."""
        return frozenset(x.lower() for x in self._labels)

    @functools.cached_property
    def answer_line(self) -> AnswerLine:
        """The format's own answer line, as :mod:`.answer_line` looks for it."""
        return AnswerLine(
            line=self.fmt.line,
            value=self.value_regex,
            kind=self.fmt.kind,
            first=self.fmt.reasoning == "after",
            case_sensitive=self.fmt.case_sensitive,
            relations=self.fmt.relations,
            shown=self.shown,
        )

    @functools.cached_property
    def completion(self) -> StubCompletion | None:
        """How the answer completes the template's answer stub; None for a format without one."""
        if not self.fmt.stub:
            return None
        return StubCompletion(
            label=self.fmt.stub_label,
            continuation=self.fmt.continuation,
            value=self.value_regex,
            shown=self.shown,
        )

    @functools.cached_property
    def value_regex(self) -> str:
        """A regex of one value: a label (or relation), a letter, or a number with an optional modifier."""
        if self.fmt.kind == "pairwise":
            if self.fmt.relations:
                return r"[^\]\s]{1,3}(?:\s*(?:>>|>|=|<|<<)\s*[^\]\s]{1,3})?"
            return "|".join(sorted({re.escape(x) for x in self._labels}, key=len, reverse=True))
        if self.fmt.kind == "mcq":
            return r"[A-Za-z]"
        return r"(?:weak\s+|strong\s+)?-?\d+(?:\.\d+)?"

    @functools.cached_property
    def hint(self) -> re.Pattern[str]:
        """What any answer of this format holds: a number (or number word), a label, or a letter."""
        return value_hint(self.fmt.kind, self._labels, self.fmt.case_sensitive)

    @functools.cached_property
    def line_cues(self) -> tuple[str, ...]:
        """Words of the answer line that mark a score ("Coherence" of "Coherence: N")."""
        head = self.fmt.line.split(VALUE)[0]
        words = re.findall(r"[A-Za-z][A-Za-z ]{1,40}?(?=\s*[:=]\s*$)", head.strip())
        label = self.fmt.stub_label
        return tuple(dict.fromkeys([w.strip() for w in words if w.strip()] + ([label] if label else [])))

    @functools.cached_property
    def _own_words(self) -> frozenset[str]:
        own = {w.lower() for w in re.findall(r"[A-Za-z]+", self.fmt.line.replace(VALUE, " "))}
        own |= {k.lower() for k in (self.fmt.json_key, self.fmt.reason_key) if k}
        own |= {w[:-1] for w in own if len(w) > 3 and w.endswith("s")}  # "stars" also stands for "One star"
        own |= {x.lower() for x in self._labels}
        if self.fmt.kind == "score":
            own |= {"out", "of", "weak", "strong"}
        return frozenset(own)

    # ------------------------------------------------------------------ reading
    def read(
        self,
        text: str,
        scale: Scale,
        *,
        echoes: Sequence[str] = (),
        cues: Sequence[str] = (),
        quoted: Sequence[str] = (),
        judged: Sequence[str] = (),
    ) -> float | Verdict:
        """The score (or verdict) in ``text``; see :meth:`mitigate.prompt.answer.AnswerFormat.read`."""
        work = strip_echoed_lines(text, echoes) if echoes else text

        def plain(part: str) -> float | Verdict:
            return self.read_plain(part, text, scale, cues)

        if len(work) <= _SHORT and self._bare_alone(comparable(work)):
            # the answer is one value in the format's own words, nothing quoted or reported: whatever a text
            # shown holds, it is the judge's statement (what unquote would find: a bare copy, read alone)
            return plain(comparable(work))
        own, strict = unquote(
            work,
            statement=lambda span: self.states(span, scale, cues),
            bare=self.bare,
            sources=quoted,
            judged=judged,
            fold=not self.fmt.case_sensitive,
            hint=self.hint,
        )
        if self.fmt.json_key is not None and "{" in own:
            # what was blanked inside the strings of an object the judge wrote whole is not read anyway
            whole = comparable(work)
            own, strict = _objects_restored(whole, own), _objects_restored(whole, strict)
        value = plain(own)
        if strict != own:
            try:
                other = plain(strict)
            except ParseError:
                return value  # the bare copy is the answer's only statement: the judge gave that value itself
            if other != value:
                got = f"{other!r} and also {value!r}, which the judged text holds as written"
                raise refuse(
                    f"one answer {self.shown}", f"{got}: no way to tell which is the judge's own", text
                )
        return value

    def read_plain(self, work: str, text: str, scale: Scale, cues: Sequence[str]) -> float | Verdict:
        """The value in ``work`` (the answer with what is not its own blanked); errors carry ``text``."""
        if self.fmt.json_key is not None:
            found = json_value(work, self.fmt.json_key)
            if found is not None:
                return self.accept(str(found), text, scale)
            if "{" in work and f'"{self.fmt.json_key}"' in work:  # the field, but in no object read whole
                raise refuse(
                    f"a JSON object with a top-level {self.fmt.json_key!r} field",
                    "the field only in text that is not such an object (invalid JSON, or nested)",
                    text,
                )
        elif self.fmt.two_scores:
            return self._two_scores(work, text, scale)
        else:
            if self.completion is not None and self.fmt.reasoning != "before":
                # the answer starts where the template's stub stops: its first line completes the stub
                value = self.completion.find(work, raw=text)
                if value is not None:
                    return self.accept(value, text, scale)
            value = self.answer_line.find(work)
            if value is not None:
                return self.accept(value, text, scale)
            letter = self._final_letter(work, scale)
            if letter is not None:
                return self.accept(letter, text, scale)
        return self._general(work, text, scale, cues)

    def read_json(self, text: str, scale: Scale) -> float | Verdict:
        """Read a reply that is the JSON object of the format's schema (strictly)."""
        expected = f"a JSON object following the answer schema for {self.shown}"
        obj = json_object(text, expected)
        if self.fmt.two_scores:
            if "score_1" not in obj or "score_2" not in obj:
                raise refuse(expected, f"keys {sorted(obj)}", text)
            s1, s2 = (parse_score(f"Score: {obj[k]}", scale, raw=text) for k in ("score_1", "score_2"))
            return "first" if s1 > s2 else "second" if s2 > s1 else "tie"
        key = self.fmt.json_key or (
            "verdict" if self.fmt.kind == "pairwise" else "answer" if self.fmt.kind == "mcq" else "score"
        )
        if key not in obj:
            raise refuse(expected, f"keys {sorted(obj)}", text)
        return self.accept(str(obj[key]), text, scale)

    def states(self, span: str, scale: Scale, cues: Sequence[str]) -> bool:
        """Whether ``span`` holds an answer in this format: it reads as one on its own (a score off the scale,
        "Score: 0", counts too), or holds the format's answer line, once or several times."""
        if not self.hint.search(span):
            return False
        for each in [scale] + ([_ANY_SCORE] if self.fmt.kind == "score" else []):
            try:
                self.read_plain(span, span, each, cues)
            except MitigateError:
                continue
            return True
        if self.fmt.json_key is not None or self.fmt.two_scores or self.fmt.line.strip() == VALUE:
            return False
        return self.answer_line.holds(span)

    def _bare_alone(self, text: str) -> bool:
        """Whether ``text`` (normalised) is one value in this format's own words, with no quotation mark,
        backtick, blockquote or reported speech: :func:`.unquote` can blank nothing in it that would change
        its reading."""
        if _MARK_CHARS.search(text) is not None or not self.bare(text):
            return False
        ends = [(m.start(), m.end()) for m in self.hint.finditer(text)]
        if not ends or any(ends[k][1] != ends[k + 1][0] for k in range(len(ends) - 1)):
            return False  # no value, or two ("Score: 2 Score: 5"; "4.5" takes the full path too)
        rest = text[: ends[0][0]] + " " + text[ends[-1][1] :]
        if any(w[0].isdigit() or w.lower() in self._label_words for w in _BARE_WORDS.findall(rest)):
            return False  # another value beside the line's ("Output (a) is better. b"): the full path decides
        return not reported_spans(text)

    def bare(self, span: str) -> bool:
        """Whether ``span`` is nothing but an answer in this format's own words ("Score: 5", "[[B]]")."""
        own, mcq = self._own_words, self.fmt.kind == "mcq"
        words = _BARE_WORDS.findall(normalise_answer(span))
        return all(w.lower() in own or w[0].isdigit() or (mcq and len(w) == 1) for w in words)

    def accept(self, value: str, text: str, scale: Scale) -> float | Verdict:
        """Check one value read from the format's own line."""
        if self.fmt.kind == "pairwise":
            return self._verdict(value.strip(), text)
        if self.fmt.kind == "mcq":
            return parse_mcq(f"Answer: {value.strip()}", scale, raw=text)
        if _PLAIN_NUMBER.fullmatch(value.strip()) and scale.on_grid(number := float(value)):
            return number  # what parse_score reads from "Score: 4", without its search
        return parse_score(f"Score: {value.strip()}", scale, raw=text)

    def _final_letter(self, text: str, scale: Scale) -> str | None:
        """For an MCQ format whose line is the bare letter, after reasoning ("... so the answer is yes.\nY"):
        the last line holding nothing but one letter of ``scale.letters`` (markdown and a full stop allowed),
        with no other letter answer after it; else None (the general parser decides)."""
        fmt = self.fmt
        if fmt.kind != "mcq" or fmt.reasoning != "before" or fmt.line.strip() != VALUE or not scale.letters:
            return None
        lines = [ln.strip() for ln in text.strip().splitlines() if ln.strip()]
        known = {k.upper() for k in scale.letters}
        for back in range(len(lines) - 1, -1, -1):
            bare = _LETTER_MARKUP.sub("", lines[back]).strip()
            if len(bare) == 1 and bare.upper() in known:
                rest = "\n".join(lines[back + 1 :])
                try:
                    parse_mcq(rest, scale)
                except ParseError:
                    return bare.upper()
                return None
        return None

    def _verdict(self, value: str, text: str) -> Verdict:
        a, b = self.fmt.labels
        expected = f"a verdict in the format {self.shown}"
        if self.fmt.relations:
            m = _RELATION.fullmatch(value)
            if m is not None:
                left, op, right = m.groups()
                norm = {a.lower(): "first", b.lower(): "second"}
                sides = (norm.get(left.lower()), norm.get(right.lower()))
                if None not in sides and sides[0] != sides[1]:
                    if op == "=":
                        return "tie"
                    return sides[0] if op.startswith(">") else sides[1]  # type: ignore[return-value]
            raise refuse(expected, repr(value), text)
        same = (lambda x, y: x == y) if self.fmt.case_sensitive else (lambda x, y: x.lower() == y.lower())
        named: tuple[tuple[Verdict, str | None], ...] = (("first", a), ("second", b), ("tie", self.fmt.tie))
        for side, label in named:
            if label is not None and same(value, label):
                return side
        raise refuse(expected, repr(value), text)

    def _two_scores(self, work: str, text: str, scale: Scale) -> Verdict:
        # after a chain of thought the scores end the answer
        where = "last" if self.fmt.reasoning == "before" else "first"
        expected = f"a {where} line with two scores from {scale.describe()} (one per output)"
        lines = [ln for ln in work.strip().splitlines() if ln.strip()]
        if not lines:
            raise refuse(expected, "an empty answer", text)
        line = lines[-1] if where == "last" else lines[0]
        nums = _TWO_NUMBERS.findall(line.replace(",", " "))
        if len(nums) != 2:
            raise refuse(expected, repr(line[:80]), text)
        first, second = (parse_score(f"Score: {n}", scale, raw=text) for n in nums)
        return "first" if first > second else "second" if second > first else "tie"

    def _general(self, work: str, text: str, scale: Scale, cues: Sequence[str] = ()) -> float | Verdict:
        """The general strict parsers, told the format's labels and cue."""
        try:
            if self.fmt.kind == "pairwise":
                # a tie only where the template offers one (a named tie label, or A=B); a template that
                # named no answer format said nothing against ties
                offered = (
                    self.fmt.tie is not None
                    or self.fmt.relations
                    or not self.fmt.inferred
                    or self.fmt.line.strip() == VALUE
                )
                return parse_pairwise(
                    work,
                    (self.fmt.labels[0], self.fmt.labels[1]),
                    tie=self.fmt.tie,
                    case_sensitive=self.fmt.case_sensitive,
                    ties=offered,
                    final=_FINAL[self.fmt.reasoning],
                )
            if self.fmt.kind == "mcq":
                return parse_mcq(work, scale)
            return parse_score(work, scale, cues=(*self.line_cues, *cues))
        except ParseError as exc:
            raise with_raw(exc, text) from None


_SHORT = 200
"""Answers up to this long are checked for being one bare value before the quotation search."""
_MARK_CHARS = re.compile(r"[\"'`>]")
_PLAIN_NUMBER = re.compile(r"\d{1,6}(?:\.\d{1,6})?")
_BARE_WORDS = re.compile(r"[A-Za-z]+|\d+(?:\.\d+)?")
_LETTER_MARKUP = re.compile(r"[*_`\"'()\[\].]")
_RELATION = re.compile(r"(\S{1,3}?)\s*(>>|>|=|<<|<)\s*(\S{1,3})")
_TWO_NUMBERS = re.compile(r"(?<![\w.])(\d+(?:\.\d+)?)(?![\w.]|\.\d)")


@functools.lru_cache(maxsize=64)
def value_hint(kind: str, labels: tuple[str, ...], case_sensitive: bool = False) -> re.Pattern[str]:
    """What every answer of a kind holds: a number (or number word), a letter, or a label as the readers name
    it (a lower-case letter only in brackets, "(a)"; an upper-case letter only in its case, "A")."""
    if kind == "score":
        return re.compile(r"\d|\b(?:zero|one|two|three|four|five|six|seven|eight|nine|ten)\b", re.IGNORECASE)
    if kind == "mcq":
        return re.compile(r"(?<![A-Za-z])[A-Za-z](?![A-Za-z])")
    if case_sensitive:
        return re.compile("|".join(rf"(?<![A-Za-z0-9]){re.escape(x)}(?![A-Za-z0-9])" for x in labels))
    forms = []
    for label in labels:
        esc = re.escape(label)
        if len(label) == 1 and label.isalpha():
            forms.append(rf"(?i:[(\[]\s*{esc}\s*[)\]])")
            if label.isupper():
                forms.append(rf"(?<![A-Za-z]){esc}(?![A-Za-z])")
        else:
            forms.append(rf"(?i:(?<![A-Za-z0-9]){esc}(?![A-Za-z0-9]))")
    # "the first one", a tie
    forms.append(r"(?i:\b(?:first|second|former|latter|tie|draw|equal\w*|neither)\b)")
    return re.compile("|".join(forms))


_HEAD = re.compile(r"^\W*(?:(?:score|rating|point)s?\s*)?\(?\d+(?:\.\d+)?\)?\s*(?:means|[:=\-–—)])?", re.I)
_MARKUP = re.compile(r"[*`_\"']")


def strip_echoed_lines(text: str, echoes: Sequence[str]) -> str:
    """``text`` without the lines that copy one of ``echoes`` (the prompt's own rubric lines: "Score 1: The
    model's responses are irrelevant ..." describes a score, it does not give one): after its "Score N:"
    style head, such a line starts with the first 24 characters of an option's description (case and spacing
    ignored)."""
    keys = _keys(tuple(echoes))
    if not keys:
        return text
    out = []
    for line in text.splitlines(keepends=True):
        body = _flat(_HEAD.sub("", line))
        if body and body.startswith(keys):
            continue
        out.append(line)
    return "".join(out)


@functools.lru_cache(maxsize=256)  # the same options for every answer to one prompt
def _keys(echoes: tuple[str, ...]) -> tuple[str, ...]:
    """What an echoed line starts with: the first 24 characters of each option description of 12 or more."""
    return tuple(sorted({_flat(e)[:24] for e in echoes if len(_flat(e)) >= 12}))


def _flat(text: str) -> str:
    return " ".join(_MARKUP.sub("", text).lower().split())


_DECODER = json.JSONDecoder()


def json_value(text: str, key: str) -> Any:
    """The value under ``key`` at the top level of the last JSON object in ``text`` that has it; None if none.

    Read by structure: an object nested in another, or written inside one of its strings (``{"score": 2,
    "quote": {"score": 5}}``, ``"reason": "it says {\\"score\\": 5}"``), is part of that object and never
    read on its own, even when the object around it is not valid JSON."""
    found = None
    for _, _, obj in _objects(text):
        if isinstance(obj, dict) and key in obj:
            found = obj[key]
    return found


def _objects_restored(whole: str, blanked: str) -> str:
    """``blanked`` (``whole`` with spans blanked) with each JSON object of ``whole`` whose opening brace was
    not blanked written back whole: a blank inside its strings or nested objects (a quotation in its
    "reason") would break the structure that says what is read, and nothing there is read."""
    for at, end, obj in _objects(whole):
        if obj is not None and blanked[at] == "{" and blanked[at:end] != whole[at:end]:
            blanked = blanked[:at] + whole[at:end] + blanked[end:]
    return blanked


def _objects(text: str) -> Iterator[tuple[int, int, dict[str, Any] | None]]:
    """Each outermost ``{...}`` of ``text``, left to right: where it starts and ends, and its value (None when
    it is not valid JSON; it then ends where its braces close)."""
    at = text.find("{")
    while at >= 0:
        try:
            obj, end = _DECODER.raw_decode(text, at)
        except json.JSONDecodeError:
            obj, end = None, _object_end(text, at)
        yield at, end, obj
        at = text.find("{", end)


def _object_end(text: str, at: int) -> int:
    """Where the braces opened at ``text[at]`` close (strings skipped), or the end of ``text``."""
    depth, inside, escaped = 0, False, False
    for j in range(at, len(text)):
        ch = text[j]
        if inside:
            if escaped:
                escaped = False
            elif ch == "\\":
                escaped = True
            elif ch == '"':
                inside = False
        elif ch == '"':
            inside = True
        elif ch == "{":
            depth += 1
        elif ch == "}":
            depth -= 1
            if depth == 0:
                return j + 1
    return len(text)


def json_object(text: str, expected: str) -> dict[str, Any]:
    """``text`` (the whole reply) as a JSON object; a :class:`ParseError` naming ``expected`` otherwise."""
    try:
        obj = json.loads(text)
    except json.JSONDecodeError as exc:
        raise refuse(expected, f"invalid JSON ({exc.msg})", text) from None
    if not isinstance(obj, dict):
        raise refuse(expected, type(obj).__name__, text)
    return obj
