"""The answer format a judge prompt prescribes, as one value that drives everything about answers.

A published judge template says how the judge must answer: ``Score: 4`` on a final line,
``[RESULT] 4`` after a feedback (Prometheus), ``Rating: [[4]]`` (MT-Bench), a JSON object
with a ``"score"`` field (DeepEval G-Eval), ``<score>4</score>`` (Flow Judge), a letter, or
for a comparison ``[[A]]`` / ``[[A>B]]`` (MT-Bench, Arena-Hard), ``Output (a)`` (AlpacaEval,
LLMBar), ``m`` / ``M`` (AlpacaEval's classifier). :class:`AnswerFormat` holds that format and is
the single source of truth for:

- **parsing** (:meth:`AnswerFormat.read`): the format's own answer line is looked for first
  (the last one wins when reasoning comes first, the first one when the answer comes first);
  when the judge wrote none, the general strict parsers of :mod:`mitigate.parse.answers` read the
  text, with the format's labels and cues. Ambiguity stays a :class:`~mitigate.errors.ParseError`.
- **demonstrations** (:meth:`AnswerFormat.render`): how a demo shows its gold answer.
- **instructions** (:meth:`AnswerFormat.instruction`): one sentence asking for the format,
  for mitigations that add an answer request (chain of thought, granularity, "rate only").
- **constrained decoding** (:meth:`AnswerFormat.constraint`): the same answer as a llama.cpp
  grammar, a regular expression and a JSON schema (:class:`~mitigate.lm.constraint.AnswerConstraint`).
  With reasoning, only the final answer line is constrained.

:func:`infer_answer_format` recovers the format from a template's text; explicit arguments to
:meth:`~mitigate.prompt.JudgePrompt.from_template` override what it finds.

The ``line`` is the answer as written, with ``{value}`` where the score, letter or verdict
label goes (``"[RESULT] {value}"``, ``"Rating: [[{value}]]"``, ``"Output ({value})"``).
"""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Sequence
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, model_validator

from mitigate.errors import ConfigError, MitigateError, ParseError, TemplateError
from mitigate.lm.constraint import AnswerConstraint, ConstraintMode
from mitigate.parse.answers import (
    Verdict,
    normalise_answer,
    parse_mcq,
    parse_pairwise,
    parse_score,
    strip_echoed_lines,
)
from mitigate.parse.quoted import unquote
from mitigate.scale import Scale

AnswerKind = Literal["score", "mcq", "pairwise"]
Reasoning = Literal["none", "before", "after"]

DEFAULT_SCORE_LINE = "Score: {value}"
"""The answer line a prompt gets when its template names none (what mitigate's own prompts ask for)."""

VALUE = "{value}"
_ANY_SCORE = Scale(min=-1e6, max=1e6, step=0.001)
"""A scale every plain number is on: what a score-shaped statement reads as, whatever the prompt's scale."""
_REASON_CHARS = 600
"""At most how many characters of reasoning a constrained answer writes before its answer line."""
_REASON_MIN = 32
"""At least how many characters of reasoning a constrained answer writes when the format reasons first."""
_ANSWER_ROOM = 48
"""Tokens kept free for the answer line after the reasoning part (see :func:`reasoning_budget`)."""


def reasoning_budget(max_tokens: int | None = None) -> int:
    """How many characters of reasoning a bounded answer constraint allows before the answer line.

    At most :data:`_REASON_CHARS`; with a token limit, ``max_tokens - 48`` (a character of
    reasoning is at least one token's worth of text, so the answer line always fits), and
    never below 16.
    """
    if max_tokens is None:
        return _REASON_CHARS
    return max(16, min(_REASON_CHARS, max_tokens - _ANSWER_ROOM))


def _fmt(v: float) -> str:
    r = round(float(v), 6)
    return str(int(r)) if r == int(r) else f"{r:g}"


class AnswerFormat(BaseModel):
    """How a judge answers (see the module docstring).

    - ``kind``: "score" (a number on the prompt's scale), "mcq" (a letter of ``scale.letters``)
      or "pairwise" (a verdict between two outputs).
    - ``line``: the answer as written, ``{value}`` standing for the value.
    - ``json_key``: the answer is a JSON object and the value sits under this key
      (``line`` is then ignored); ``reason_key`` names its explanation field, if any.
    - ``labels`` / ``tie``: how the two outputs (and a tie) are named in a pairwise answer;
      ``relations``: Arena-Hard style verdicts ``A>>B``, ``A>B``, ``A=B``, ``B>A``, ``B>>A``;
      ``two_scores``: one score per output on one line ("8 6"), compared to give the verdict.
    - ``case_sensitive``: labels differ only by case (AlpacaEval's ``m`` / ``M``).
    - ``reasoning``: "before" (explanation, then the answer on the last line), "after"
      (answer first, then explanation) or "none" (the answer alone).
    - ``inferred``: False when the template named no format and this is the default.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")
    kind: AnswerKind = "score"
    line: str = DEFAULT_SCORE_LINE
    json_key: str | None = None
    reason_key: str | None = None
    labels: tuple[str, ...] = ()
    tie: str | None = None
    relations: bool = False
    two_scores: bool = False
    case_sensitive: bool = False
    reasoning: Reasoning = "none"
    inferred: bool = True

    @model_validator(mode="after")
    def _check(self) -> AnswerFormat:
        if self.json_key is None and VALUE not in self.line:
            raise TemplateError(f"an answer line needs a {VALUE} placeholder; got {self.line!r}")
        if self.kind == "pairwise" and len(self.labels) != 2:
            raise TemplateError(f"a pairwise answer format needs two output labels; got {list(self.labels)}")
        if self.kind == "pairwise" and len({x if self.case_sensitive else x.lower() for x in self.labels}) != 2:
            raise TemplateError(f"the two pairwise labels must differ; got {list(self.labels)}")
        return self

    # ------------------------------------------------------------------ constructors
    @classmethod
    def default(cls, kind: AnswerKind = "score", labels: Sequence[str] = ("1", "2")) -> AnswerFormat:
        """The format used when a template names none ("Score: N", "Answer: X", or a verdict label)."""
        if kind == "pairwise":
            return cls(kind=kind, line=VALUE, labels=tuple(labels), inferred=False)
        if kind == "mcq":
            return cls(kind=kind, line="Answer: {value}", inferred=False)
        return cls(kind=kind, inferred=False)

    def with_reasoning(self, reasoning: Reasoning) -> AnswerFormat:
        """A copy asking for reasoning ``"before"`` the answer (chain of thought), ``"after"`` it, or ``"none"``."""
        return self.model_copy(update={"reasoning": reasoning})

    @property
    def is_default_score_line(self) -> bool:
        """True for the plain "Score: N" line (what mitigate's built-in prompts and mitigations ask for)."""
        return self.kind == "score" and self.json_key is None and self.line == DEFAULT_SCORE_LINE

    # ------------------------------------------------------------------ text
    def describe(self) -> str:
        """A short human description, e.g. '"[RESULT] N" after reasoning' (for inspect and errors)."""
        shape = self.shape()
        where = {"none": "alone", "before": "after reasoning", "after": "first, then reasoning"}[self.reasoning]
        what = f'"{shape}" {where}'
        if self.kind == "pairwise":
            options = list(self.labels) + ([self.tie] if self.tie else [])
            if self.relations:
                a, b = self.labels
                options = [f"{a}>>{b}", f"{a}>{b}", f"{a}={b}", f"{b}>{a}", f"{b}>>{a}"]
            what += f" with X one of {options}"
        return what + ("" if self.inferred else " (default: the template names no format)")

    def value_text(self, value: float | str, scale: Scale) -> str:
        """The value as the judge writes it: the number, the nearest letter, or a verdict's label."""
        if self.kind == "pairwise":
            if value == "first":
                return self.labels[0] if not self.relations else f"{self.labels[0]}>{self.labels[1]}"
            if value == "second":
                return self.labels[1] if not self.relations else f"{self.labels[1]}>{self.labels[0]}"
            if value == "tie":
                if self.relations:
                    return f"{self.labels[0]}={self.labels[1]}"
                if self.tie is None:
                    raise ConfigError(f"this pairwise format has no tie label; cannot show a tie in {self.describe()}")
                return self.tie
            raise ConfigError(f"expected a verdict first/second/tie; got {value!r}")
        if isinstance(value, str):
            return value
        if self.kind == "mcq" and scale.letters:
            return min(scale.letters.items(), key=lambda kv: (abs(kv[1] - value), kv[0]))[0]
        return _fmt(value)

    def render(self, value: float | str, scale: Scale, *, reason: str | None = None) -> str:
        """The answer line showing ``value`` (what a demonstration's gold answer looks like).

        A JSON format with an explanation field shows ``reason`` there (empty when None).
        """
        text = self.value_text(value, scale)
        if self.json_key is not None:
            shown: str | float = text
            if self.kind == "score" and re.fullmatch(r"-?\d+(?:\.\d+)?", text):
                shown = float(text) if "." in text else int(text)
            obj: dict[str, Any] = {self.reason_key: reason or ""} if self.reason_key else {}
            obj[self.json_key] = shown
            return json.dumps(obj)
        if self.two_scores:
            raise ConfigError("a two-scores pairwise format has no single-answer line for a demo")
        return self.line.replace(VALUE, text)

    def shape(self) -> str:
        """The answer line with a placeholder for the value: 'Score: N', '[RESULT] N', 'Output (X)', 'N1 N2'."""
        if self.two_scores:
            return "N1 N2"
        if self.json_key is not None:
            return "{" + (f'"{self.reason_key}": "...", ' if self.reason_key else "") + f'"{self.json_key}": ' \
                + ("N" if self.kind == "score" else '"X"') + "}"
        return self.line.replace(VALUE, "N" if self.kind == "score" else "X")

    def instruction(self, scale: Scale) -> str:
        """One sentence asking for this format (for mitigations that add an answer request)."""
        where = {"none": "Answer with only", "before": "End your answer with a final line",
                 "after": "Start your answer with a line"}
        if self.two_scores:
            a, b = self.labels
            return (f'{where[self.reasoning]} "N1 N2": two scores from {scale.describe()}, N1 for output {a!r} '
                    f"and N2 for output {b!r}.")
        if self.kind == "pairwise":
            a, b = self.labels
            options = f"{a!r} or {b!r}" + (f" (or {self.tie!r} for a tie)" if self.tie else "")
            if self.relations:
                options = f"one of {a}>>{b}, {a}>{b}, {a}={b}, {b}>{a}, {b}>>{a}"
            what, noun, choices = f"with X being {options}", "your verdict", options
        elif self.kind == "mcq":
            what, noun, choices = (f"with X one of the option letters {scale.describe()}", "the option letter",
                                   f"one of {scale.describe()}")
        else:
            what, noun, choices = f"with N a score from {scale.describe()}", "the score", f"from {scale.describe()}"
        if self.json_key is None and self.line.strip() == VALUE:
            # a bare answer line ("4", "A"): quoting it as "X" would read as a literal; name what goes on it
            bare = {"none": f"Answer with only {noun}", "before": f"End your answer with a final line holding only {noun}",
                    "after": f"Start your answer with a line holding only {noun}"}
            return f"{bare[self.reasoning]}, {choices}."
        if self.json_key is not None:
            reason = f'whose "{self.reason_key}" field holds your reasoning and ' if self.reason_key else ""
            return f'Answer with a JSON object {reason}whose "{self.json_key}" field holds your answer, {what}.'
        return f'{where[self.reasoning]} "{self.shape()}", {what}.'

    def request(self, scale: Scale) -> str:
        """:meth:`instruction` as a mitigation adds it: a format the template did not name allows text before it.

        A default format (``inferred=False``) says nothing about reasoning, so the added
        request asks for the answer as the final line rather than for the answer alone.
        """
        fmt = self if self.inferred or self.reasoning != "none" else self.with_reasoning("before")
        return fmt.instruction(scale)

    def for_criterion(self, name: str, others: Sequence[str] = ()) -> AnswerFormat:
        """A copy whose answer line names criterion ``name`` where it named one of ``others``.

        A multi-criterion template's answer stub names its first criterion ("Coherence: N");
        the call that scores only fluency answers "Fluency: N". Other lines are kept.
        """
        if self.json_key is not None or self.kind != "score" or VALUE not in self.line:
            return self
        head, tail = self.line.split(VALUE, 1)
        for other in others:
            if other.lower() == name.lower() or other.lower() == "score":
                continue
            found = re.search(rf"(?<![A-Za-z]){re.escape(other)}(?![A-Za-z])", head, re.IGNORECASE)
            if found is not None:
                label = name[:1].upper() + name[1:]
                head = head[: found.start()] + label + head[found.end():]
                return self.model_copy(update={"line": head + VALUE + tail})
        return self

    # ------------------------------------------------------------------ values
    def values(self, scale: Scale) -> list[str]:
        """Every answer value the format allows on ``scale`` (scale points, letters or verdict labels)."""
        if self.kind == "pairwise" and not self.two_scores:
            a, b = self.labels
            if self.relations:
                return [f"{a}>>{b}", f"{a}>{b}", f"{a}={b}", f"{b}>{a}", f"{b}>>{a}"]
            return [a, b] + ([self.tie] if self.tie else [])
        if self.kind == "mcq":
            if not scale.letters:
                raise ConfigError("an MCQ answer format needs a scale with a letter map; got none")
            return list(scale.letters)
        return [_fmt(p) for p in scale.points()]

    # ------------------------------------------------------------------ parsing
    def read(self, text: str, scale: Scale, *, echoes: Sequence[str] = (), cues: Sequence[str] = (),
             quoted: Sequence[str] = (), judged: Sequence[str] = ()) -> float | Verdict:
        """The score (or verdict) in a judge's answer ``text``; :class:`ParseError` when there is none or it is ambiguous.

        The verdict is the judge's own final statement in this format. ``echoes`` are lines of
        the prompt (its scoring options) that a judge may copy into its answer; such copied
        lines are not answers. ``cues`` are extra words that mark a score for the general parser
        (the criterion's name: "Fluency: 3"). ``quoted`` are the texts the judge was shown (the
        rendered prompt) and ``judged`` the texts under judgment: what the answer reports from a
        third party or quotes back from them is never read as the judge's own
        (:func:`~mitigate.parse.quoted.unquote`), and an answer that gives its own value and also,
        bare, a different one a judged text holds is a failure, never the judged text's value.
        """
        work = strip_echoed_lines(text, echoes) if echoes else text

        def plain(part: str) -> float | Verdict:
            return self._read_plain(part, text, scale, cues)

        own, strict = unquote(work, statement=lambda span: self._states(span, scale, cues), bare=self._bare,
                              sources=quoted, judged=judged, fold=not self.case_sensitive, hint=self._value_hint())
        value = plain(own)
        if strict != own:
            try:
                other = plain(strict)
            except ParseError:
                return value  # the bare copy is the answer's only statement: the judge gave that value itself
            if other != value:
                expected = f"one answer {self.describe()}"
                raise ParseError(f"expected {expected}; got {other!r} and also {value!r}, which the judged text "
                                 f"holds as written: no way to tell which is the judge's own", raw=text,
                                 expected=expected)
        return value

    def _read_plain(self, work: str, text: str, scale: Scale, cues: Sequence[str]) -> float | Verdict:
        """The value in ``work`` (the answer with what is not the judge's own blanked); errors carry ``text``."""
        if self.json_key is not None:
            found = _json_value(work, self.json_key)
            if found is not None:
                return self._accept(str(found), text, scale)
        elif self.two_scores:
            return self._two_scores(work, text, scale)
        else:
            value = self._from_line(work)
            if value is not None:
                return self._accept(value, text, scale)
            letter = self._final_letter(work, scale)
            if letter is not None:
                return self._accept(letter, text, scale)
        return self._general(work, text, scale, cues)

    def _states(self, span: str, scale: Scale, cues: Sequence[str]) -> bool:
        """Whether ``span`` holds an answer in this format: it reads as one on its own (a score off the scale,
        "Score: 0", counts too), or holds the format's answer line, once or several times."""
        if not self._value_hint().search(span):
            return False
        for each in [scale] + ([_ANY_SCORE] if self.kind == "score" else []):
            try:
                self._read_plain(span, span, each, cues)
            except MitigateError:
                continue
            return True
        if self.json_key is not None or self.two_scores or self.line.strip() == VALUE:
            return False
        flags = 0 if self.case_sensitive else re.IGNORECASE
        pattern = _verdict_line_pattern(self.line, self._value_regex()) if self.kind == "pairwise" and _worded(
            self.line) else _line_pattern(self.line, self._value_regex())
        return re.search(pattern, normalise_answer(span) if self.kind == "score" else span, flags) is not None

    def _value_hint(self) -> re.Pattern[str]:
        """What any answer of this format holds: a number (or number word), a label, or a letter."""
        return _value_hint(self.kind, tuple(self.labels) + ((self.tie,) if self.tie else ()), self.case_sensitive)

    def _bare(self, span: str) -> bool:
        """Whether ``span`` is nothing but an answer in this format's own words ("Score: 5", "[[B]]", "Output (a)")."""
        own = {w.lower() for w in re.findall(r"[A-Za-z]+", self.line.replace(VALUE, " "))}
        own |= {k.lower() for k in (self.json_key, self.reason_key) if k}
        own |= {w[:-1] for w in own if len(w) > 3 and w.endswith("s")}  # "stars" also stands for "One star"
        labels = {x.lower() for x in (*self.labels, *([self.tie] if self.tie else []))}
        if self.kind == "score":
            own |= {"out", "of", "weak", "strong"}
        for word in re.findall(r"[A-Za-z]+|\d+(?:\.\d+)?", normalise_answer(span)):
            low = word.lower()
            if low in own or low in labels or word[0].isdigit() or (self.kind == "mcq" and len(word) == 1):
                continue
            return False
        return True

    def _is_answer_line(self, line: str) -> bool:
        """Whether ``line`` is this format's answer line and nothing else ("Score: 3", "**[RESULT] 4**")."""
        body = normalise_answer(line).strip()
        if self.line.strip() == VALUE:
            return re.fullmatch(r"[\W_]*" + self._value_regex() + r"[\W_]*", body) is not None
        flags = 0 if self.case_sensitive else re.IGNORECASE
        hits = list(re.finditer(_line_pattern(self.line, self._value_regex()), body, flags))
        if len(hits) != 1:
            return False
        rest = body[: hits[0].start()] + " " + body[hits[0].end():]
        own = {w.lower() for w in re.findall(r"[A-Za-z]+", self.line.replace(VALUE, " "))}
        return not [w for w in re.findall(r"[A-Za-z0-9]+", rest) if w.lower() not in own]

    def _final_letter(self, text: str, scale: Scale) -> str | None:
        """For a bare letter answer after reasoning ("... so the answer is yes.\nY"): the last line that is one letter.

        Only for an MCQ format whose line is the bare letter and whose reasoning comes first,
        and only a line holding nothing but one letter of ``scale.letters`` (markdown and a
        full stop allowed), with no other letter answer after it; anything else is left to the
        general parser.
        """
        if self.kind != "mcq" or self.reasoning != "before" or self.line.strip() != VALUE or not scale.letters:
            return None
        lines = [ln.strip() for ln in text.strip().splitlines() if ln.strip()]
        known = {k.upper() for k in scale.letters}
        for back in range(len(lines) - 1, -1, -1):
            bare = re.sub(r"[*_`\"'()\[\].]", "", lines[back]).strip()
            if len(bare) == 1 and bare.upper() in known:
                rest = "\n".join(lines[back + 1:])
                try:
                    parse_mcq(rest, scale)
                except ParseError:
                    return bare.upper()
                return None
        return None

    def _from_line(self, text: str) -> str | None:
        """The value of the format's own answer line in ``text`` (last one, or first when the answer comes first).

        Two different values in the deciding line's own sentence ("[[A]] [[B]]", "either [[A]] or
        [[B]]") are two verdicts with no final one: a :class:`ParseError`.
        """
        if self.line.strip() == VALUE:
            return None  # a bare value has no distinctive line: the general parser reads it
        if self.kind == "pairwise" and not self.relations and _worded(self.line):
            return self._verdict_from_line(text)
        pattern = _line_pattern(self.line, self._value_regex())
        flags = 0 if self.case_sensitive else re.IGNORECASE
        work = normalise_answer(text) if self.kind == "score" else text
        hits = list(re.finditer(pattern, work, flags))
        if not hits:
            return None
        distinct = {self._same_value(h.group("v")) for h in hits}
        if self.kind != "score" and len(distinct) >= 3:  # scores may come with a per-aspect breakdown
            raise ParseError(
                f"expected one answer in the format {self.describe()}; got {len(distinct)} different ones "
                f"({', '.join(dict.fromkeys(h.group('v').strip() for h in hits))}): an echoed list of the options?",
                raw=text, expected=f"one answer {self.describe()}",
            )
        chosen = hits[0] if self.reasoning == "after" else hits[-1]
        self._one_in_sentence(work, chosen, hits, text)
        return chosen.group("v")

    def _same_value(self, value: str) -> str:
        return value.strip() if self.case_sensitive else value.strip().lower()

    def _one_in_sentence(self, work: str, chosen: re.Match[str], hits: Sequence[re.Match[str]], text: str) -> None:
        """Raise when another hit with a different value shares ``chosen``'s sentence (two verdicts, no final one)."""
        start, end = _sentence_bounds(work, chosen.start(), chosen.end())
        mine = self._same_value(chosen.group("v"))
        rival = [h.group("v").strip() for h in hits if h is not chosen and start <= h.start() < end
                 and self._same_value(h.group("v")) != mine]
        if rival:
            expected = f"one answer {self.describe()}"
            raise ParseError(f"expected {expected}; got {rival[0]!r} and {chosen.group('v').strip()!r} in one sentence "
                             f"{' '.join(work[start:end].split())[:120]!r}, with no final one", raw=text,
                             expected=expected)

    def _verdict_from_line(self, text: str) -> str | None:
        """The label of the last verdict written in the template's own words (the first when the answer comes first).

        The line may sit anywhere, be followed by more words ("Therefore, Output (b) is better as
        it ...") and drop a leading connective or the closing full stop. Its own clause decides: a
        subordinate clause before it ("because Output (a) does not, Output (b) is better", "While
        both are useful, ...") or a coordinate one ("Output (a) is not better, and Output (b) is
        better") does not hedge it, nor does a "but" inside the reasons that follow it ("... is better
        as it is shorter, but ..."). A line the judge hedged or asked about in its own clause
        ("whether Output (a) is better", "Output (a) is better?") or qualified after it ("..., but
        it ignores the instruction") is not a verdict: when the deciding line is such, the answer is
        a :class:`ParseError`, never a guess. A line negated by "neither ... nor" names no winner
        and is left to the general reader (a tie where the template offers one).
        """
        flags = 0 if self.case_sensitive else re.IGNORECASE
        work = re.sub(r"[*`]+", "", text)
        pattern = _verdict_line_pattern(self.line, self._value_regex())
        if len(re.findall(r"[A-Za-z]+", self.line.replace(VALUE, " "))) <= 1:
            # "Summary {value}", "Output ({value})": the line is also how the reasoning names an output,
            # so only a line holding it alone (after a short lead-in: "Answer:", "On balance,") is the verdict
            pattern = (r"(?m)^[ \t>#\-*\"'“]*(?:[A-Za-z][A-Za-z ]{0,24}[:,\-]\s*)?"
                       + pattern + r"[ \t\"'”.!]*$")
        hits = list(re.finditer(pattern, work, flags))
        if not hits:
            return None
        hit = hits[0] if self.reasoning == "after" else hits[-1]
        self._one_in_sentence(work, hit, hits, text)
        start, end = _sentence_bounds(work, hit.start(), hit.end())
        clause = _own_clause(work[start: hit.start()])
        rest = _REASON_AFTER.sub(" ", _NOT_ONLY.sub(" ", work[hit.end(): end]))
        if _NEITHER.search(clause):
            return None
        if _HEDGE.search(clause) or work[hit.end(): hit.end() + 2].startswith("?") or _QUALIFIED.search(rest):
            expected = f"a verdict in the format {self.describe()}"
            raise ParseError(f"expected {expected}; got a hedged or questioned verdict line "
                             f"{' '.join(work[start: hit.end()].split())!r}", raw=text, expected=expected)
        return hit.group("v")

    def _value_regex(self) -> str:
        if self.kind == "pairwise":
            labels = sorted({re.escape(x) for x in (*self.labels, *([self.tie] if self.tie else []))}, key=len, reverse=True)
            if self.relations:
                return r"[^\]\s]{1,3}(?:\s*(?:>>|>|=|<|<<)\s*[^\]\s]{1,3})?"
            return "|".join(labels)
        if self.kind == "mcq":
            return r"[A-Za-z]"
        return r"(?:weak\s+|strong\s+)?-?\d+(?:\.\d+)?"

    def _accept(self, value: str, text: str, scale: Scale) -> float | Verdict:
        """Check one value read from the format's own line."""
        if self.kind == "pairwise":
            return self._verdict(value.strip(), text)
        if self.kind == "mcq":
            return parse_mcq(f"Answer: {value.strip()}", scale, raw=text)
        return parse_score(f"Score: {value.strip()}", scale, raw=text)

    def _verdict(self, value: str, text: str) -> Verdict:
        a, b = self.labels
        expected = f"a verdict in the format {self.describe()}"
        if self.relations:
            m = re.fullmatch(r"(\S{1,3}?)\s*(>>|>|=|<<|<)\s*(\S{1,3})", value)
            if m is not None:
                left, op, right = m.groups()
                norm = {a.lower(): "first", b.lower(): "second"}
                sides = (norm.get(left.lower()), norm.get(right.lower()))
                if None not in sides and sides[0] != sides[1]:
                    if op == "=":
                        return "tie"
                    winner = sides[0] if op.startswith(">") else sides[1]
                    return winner  # type: ignore[return-value]
            raise ParseError(f"expected {expected}; got {value!r}", raw=text, expected=expected)
        same = (lambda x, y: x == y) if self.case_sensitive else (lambda x, y: x.lower() == y.lower())
        if same(value, a):
            return "first"
        if same(value, b):
            return "second"
        if self.tie is not None and same(value, self.tie):
            return "tie"
        raise ParseError(f"expected {expected}; got {value!r}", raw=text, expected=expected)

    def _two_scores(self, work: str, text: str, scale: Scale) -> Verdict:
        where = "last" if self.reasoning == "before" else "first"  # after a chain of thought the scores end the answer
        expected = f"a {where} line with two scores from {scale.describe()} (one per output)"
        lines = [ln for ln in work.strip().splitlines() if ln.strip()]
        if not lines:
            raise ParseError(f"expected {expected}; got an empty answer", raw=text, expected=expected)
        line = lines[-1] if where == "last" else lines[0]
        nums = re.findall(r"(?<![\w.])(\d+(?:\.\d+)?)(?![\w.]|\.\d)", line.replace(",", " "))
        if len(nums) != 2:
            raise ParseError(f"expected {expected}; got {line[:80]!r}", raw=text, expected=expected)
        first, second = (parse_score(f"Score: {n}", scale, raw=text) for n in nums)
        return "first" if first > second else "second" if second > first else "tie"

    def _general(self, work: str, text: str, scale: Scale, cues: Sequence[str] = ()) -> float | Verdict:
        """The general strict parsers, told the format's labels and cue."""
        try:
            if self.kind == "pairwise":
                # a tie only where the template offers one (a named tie label, or A=B); a template that
                # named no answer format said nothing against ties
                offered = self.tie is not None or self.relations or not self.inferred or self.line.strip() == VALUE
                final = {"before": "last", "after": "first", "none": "either"}[self.reasoning]
                return parse_pairwise(work, (self.labels[0], self.labels[1]), tie=self.tie,
                                      case_sensitive=self.case_sensitive, ties=offered, final=final)
            if self.kind == "mcq":
                return parse_mcq(work, scale)
            return parse_score(work, scale, cues=(*self.cues(), *cues))
        except ParseError as exc:
            raise ParseError(exc.message, raw=text, expected=exc.context.get("expected", "")) from None

    def cues(self) -> tuple[str, ...]:
        """Words in the answer line that mark a score ("Coherence" of "Coherence: N"), for the general parser."""
        head = self.line.split(VALUE)[0]
        words = re.findall(r"[A-Za-z][A-Za-z ]{1,40}?(?=\s*[:=]\s*$)", head.strip())
        return tuple(w.strip() for w in words if w.strip())

    # ------------------------------------------------------------------ constraints
    def constraint(self, scale: Scale, mode: ConstraintMode = "format", *,
                   max_tokens: int | None = None) -> AnswerConstraint:
        """The answer as an :class:`AnswerConstraint`: GBNF, regex and JSON schema of the same shape.

        Every grammar is bounded, so a small model cannot loop before it reaches its answer:

        - ``reasoning="before"``: a reasoning part of at least 32 and at most
          :func:`reasoning_budget` characters (two lines at most, starting with a letter, and holding none of the answer line's
          brackets ``[`` ``<`` ``{``, so an answer marker cannot be repeated inside it:
          ``[[A]] [[B]] ...`` or ``[RESULT] 5 [RESULT] 5``), then the answer line, then the end;
        - ``"after"``: the answer line first, then at most one capped line of explanation;
        - ``"none"``: the answer line alone.

        ``max_tokens`` (the request's token limit) sets the reasoning budget so that the
        answer line always fits within it: a character is at least one token's worth of
        text, so a budget of ``max_tokens - 48`` characters leaves room for the answer.
        """
        values = self.values(scale)
        budget = reasoning_budget(max_tokens)
        if self.two_scores:
            value_g = f"({_gbnf_alts(values)}) \" \" ({_gbnf_alts(values)})"
            value_r = f"(?:{_regex_alts(values)}) (?:{_regex_alts(values)})"
            answer_g, answer_r = value_g, value_r
        elif self.json_key is not None:
            shown = [json.dumps(v) if self.kind != "score" else v for v in values]
            head = "{" + (f'"{self.reason_key}": "' if self.reason_key else "")
            mid = (f'", "{self.json_key}": ' if self.reason_key else f'"{self.json_key}": ')
            text_g = f'[^"\\\\\\n]{{0,{budget}}}'
            reason_g = " " + text_g + " " if self.reason_key else " "
            reason_r = f'[^"\\\\\\n]{{0,{budget}}}' if self.reason_key else ""
            answer_g = _gbnf_lit(head) + reason_g + _gbnf_lit(mid) + " (" + _gbnf_alts(shown) + ") " + _gbnf_lit("}")
            answer_r = re.escape(head) + reason_r + re.escape(mid) + "(?:" + _regex_alts(shown) + ")" + re.escape("}")
        else:
            head, tail = self.line.split(VALUE, 1)
            answer_g = " ".join(p for p in (_gbnf_lit(head), f"({_gbnf_alts(values)})", _gbnf_lit(tail)) if p)
            answer_r = re.escape(head) + f"(?:{_regex_alts(values)})" + re.escape(tail)
        if self.reasoning == "before" and self.json_key is None:
            sep = "\n" if not self.line.startswith("[RESULT]") else " "
            sep_r = "\\n" if sep == "\n" else " "
            banned = "".join(ch for ch in "[<{" if ch in self.line.split(VALUE, 1)[0] or (
                self.kind == "pairwise" and ch == "[" and "[" in self.line))
            cls_g = "[^\\n" + "".join("\\" + ch if ch in "[]" else ch for ch in banned) + "]"
            cls_r = "[^\\n" + "".join(re.escape(ch) for ch in banned) + "]"
            per_line = max(1, budget // 2)
            least = min(_REASON_MIN - 1, per_line)  # the asked-for reasoning is written, not a bare "Rating: 9"
            gbnf = (f"root ::= reason {_gbnf_lit(sep)} answer\n"
                    f"reason ::= [A-Za-z] {cls_g}{{{least},{per_line}}} (\"\\n\" {cls_g}{{0,{per_line}}})?\n"
                    f"answer ::= {answer_g}\n")
            regex = f"[A-Za-z]{cls_r}{{{least},{per_line}}}(?:\\n{cls_r}{{0,{per_line}}})?{sep_r}{answer_r}"
        elif self.reasoning == "after" and self.json_key is None:
            gbnf = (f"root ::= answer (\"\\n\" [^\\n]{{0,{budget}}})?\n"
                    f"answer ::= {answer_g}\n")
            regex = f"{answer_r}(?:\\n[^\\n]{{0,{budget}}})?"
        else:
            gbnf = f"root ::= {answer_g}\n"
            regex = answer_r
        return AnswerConstraint(mode=mode, gbnf=gbnf, regex=regex, json_schema=self.json_schema(scale),
                                name="judge_answer", describe=self.describe())

    def json_schema(self, scale: Scale) -> dict[str, Any]:
        """The answer as a JSON object: an explanation field first when the format reasons first, then the value."""
        values = self.values(scale)
        key = self.json_key or ("verdict" if self.kind == "pairwise" else "answer" if self.kind == "mcq" else "score")
        props: dict[str, Any] = {}
        reason = self.reason_key or ("reasoning" if self.reasoning != "none" else None)
        if reason is not None:
            props[reason] = {"type": "string"}
        if self.two_scores:
            props["score_1"] = {"enum": [float(v) if "." in v else int(v) for v in values]}
            props["score_2"] = {"enum": [float(v) if "." in v else int(v) for v in values]}
        elif self.kind == "score":
            props[key] = {"enum": [float(v) if "." in v else int(v) for v in values]}
        else:
            props[key] = {"type": "string", "enum": values}
        return {"type": "object", "properties": props, "required": list(props), "additionalProperties": False}

    def read_json(self, text: str, scale: Scale) -> float | Verdict:
        """Read an answer that a backend returned as the JSON object of :meth:`json_schema` (strictly)."""
        expected = f"a JSON object following the answer schema for {self.describe()}"
        try:
            obj = json.loads(text)
        except json.JSONDecodeError as exc:
            raise ParseError(f"expected {expected}; got invalid JSON ({exc.msg})", raw=text, expected=expected) from None
        if not isinstance(obj, dict):
            raise ParseError(f"expected {expected}; got {type(obj).__name__}", raw=text, expected=expected)
        if self.two_scores:
            if "score_1" not in obj or "score_2" not in obj:
                raise ParseError(f"expected {expected}; got keys {sorted(obj)}", raw=text, expected=expected)
            s1, s2 = (parse_score(f"Score: {obj[k]}", scale, raw=text) for k in ("score_1", "score_2"))
            return "first" if s1 > s2 else "second" if s2 > s1 else "tie"
        key = self.json_key or ("verdict" if self.kind == "pairwise" else "answer" if self.kind == "mcq" else "score")
        if key not in obj:
            raise ParseError(f"expected {expected}; got keys {sorted(obj)}", raw=text, expected=expected)
        return self._accept(str(obj[key]), text, scale)


# --------------------------------------------------------------------------- helpers


@functools.lru_cache(maxsize=64)
def _value_hint(kind: str, labels: tuple[str, ...], case_sensitive: bool = False) -> re.Pattern[str]:
    """What every answer of a kind holds: a number (or number word), a letter, or a label as the readers name it
    (a lower-case letter only in brackets, "(a)"; an upper-case letter only in its case, "A")."""
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
    forms.append(r"(?i:\b(?:first|second|former|latter|tie|draw|equal\w*|neither)\b)")  # "the first one", a tie
    return re.compile("|".join(forms))


@functools.lru_cache(maxsize=512)  # a pure function of the format: built once per format, not per answer read
def _line_pattern(line: str, value_regex: str) -> str:
    """A regex finding ``line`` in an answer: whitespace-tolerant, words before a bracket optional."""
    head, tail = line.split(VALUE, 1)
    bracket = re.search(r"(\[\[|\[|<\w+>|\(|\"|`)\s*$", head)
    parts: list[str] = []
    if bracket is not None and head[: bracket.start()].strip():
        # "Rating: [[5]]": the words are optional, the brackets are what identify the answer
        parts.append(f"(?:{_loose(head[: bracket.start()])})?")
        parts.append(_loose(head[bracket.start():]))
    else:
        parts.append(_loose(head))
    # after a cue ("Score:") the value is on the same line; inside brackets or tags it may sit on its own line
    gap = r"\s*" if bracket is not None or not head.strip() else r"[ \t]*"
    parts.append(rf"{gap}(?P<v>{value_regex})(?![.)]\s+[A-Za-z])[ \t]*")
    parts.append(_loose(tail))
    pattern = "".join(parts)
    if not head.strip():
        pattern = r"(?<![\w\[(])" + pattern
    if not tail.strip():
        # not a range or a fraction ("3-4", "3 or 4", "4/5"): the general parser judges those
        pattern += r"(?![\w.]\d|\w)(?!\s*(?:-|–|to\b|or\b|/)\s*\d)"
    return pattern


_CONNECTIVE = re.compile(r"(?i)^(?:therefore|thus|hence|so|overall|in\s+conclusion|in\s+summary|finally|"
                         r"consequently|in\s+the\s+end|ultimately)\b\s*,?\s*")
_HEDGE = re.compile(
    r"(?i)\b(?:whether|if|unless|not|never|no|cannot|can't|couldn't|could|might|may|would\s+argue|argue|"
    r"unclear|unsure|uncertain|hard\s+to\s+(?:say|tell)|difficult\s+to\s+(?:say|tell)|one\s+could|some|"
    r"seems?\s+like|at\s+first|initially|claims?|claimed)\b|n't\b"
)

_QUALIFIED = re.compile(r"(?i)\b(?:but|however|yet)\b")
"""After a verdict line in its sentence: a reversal ("..., but it ignores the instruction"). A concession
("even though ...", "although ...") leaves the verdict standing."""
_NOT_ONLY = re.compile(r"(?i)\bnot\s+only\b[^.!?\n]*?\bbut\s+also\b")
# The verdict's reasons after it ("... is better as it is shorter, but ..."): a "but" inside them qualifies a reason,
# not the verdict.
_REASON_AFTER = re.compile(r"(?i)\b(?:as|because|since|given\s+that|considering\s+that)\b.*")
_NEITHER = re.compile(r"(?i)\b(?:neither|nor)\b")
# Subordinate clauses before a verdict ("because Output (a) does not,", "While both are useful,", "based on
# whether it follows the instruction,"): what they say does not hedge the main clause that follows.
_SUBORDINATE = re.compile(
    r"(?i)\b(?:because|since|as|while|whereas|although|though|given|considering|based\s+on|after|when|despite|"
    r"in\s+light\s+of|due\s+to|upon|according\s+to)\b[^,;:]*[,;:]")
# Where a coordinate clause starts: the verdict's own clause is the last one.
_COORDINATE = re.compile(r"(?i),\s*(?:and|but|so|yet)\b|;|:")


def _own_clause(before: str) -> str:
    """The words of a verdict's own clause before it, from the text of its sentence before it."""
    text = _SUBORDINATE.sub(" ", before)
    cuts = list(_COORDINATE.finditer(text))
    return text[cuts[-1].end():] if cuts else text


def _sentence_bounds(text: str, start: int, end: int) -> tuple[int, int]:
    """The sentence (or line) of ``text`` around ``text[start:end]``: from after the last boundary to the next."""
    left = max(m.end() for m in (*_BOUNDARY.finditer(text, 0, start), None) if m is not None) \
        if _BOUNDARY.search(text, 0, start) else 0
    right = _BOUNDARY.search(text, end)
    return left, right.start() if right else len(text)


_BOUNDARY = re.compile(r"[.!?][\"'”’)]*(?=\s|$)|\n")


def _worded(line: str) -> bool:
    """Whether a verdict line names its label with words around it ("Output ({value})"), not brackets alone."""
    head, tail = line.split(VALUE, 1)
    return bool(re.search(r"[A-Za-z]", head + tail))


@functools.lru_cache(maxsize=512)
def _verdict_line_pattern(line: str, value_regex: str) -> str:
    """A regex finding a worded verdict line anywhere: a leading connective and the closing stop are optional,
    and words may follow ("Therefore, Output (b) is better as it ...")."""
    head, tail = line.split(VALUE, 1)
    head_text = head.strip()
    connective = _CONNECTIVE.match(head_text)
    parts = []
    if connective is not None:
        parts.append(f"(?:{_loose(connective.group(0).rstrip(', '))}" + r"\s*,?\s*)?")
        head_text = head_text[connective.end():]
    if head_text:
        parts.append(r"(?<![\w(\[])" + _loose(head_text) + (r"\s*" if head.endswith(" ") else ""))
    else:
        parts.append(r"(?<![\w(\[])")
    parts.append(f"(?P<v>{value_regex})")
    tail_text = tail.rstrip().rstrip(".!")
    if tail_text.strip():
        parts.append((r"\s*" if tail.startswith(" ") else "") + _loose(tail_text))
    parts.append(r"(?![\w])")
    return "".join(parts)


def _loose(text: str) -> str:
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


def _json_value(text: str, key: str) -> Any:
    """The value under ``key`` in the last JSON object of ``text`` that has it (code fences allowed); None if none."""
    found = None
    for m in re.finditer(r"\{", text):
        depth = 0
        for j in range(m.start(), len(text)):
            ch = text[j]
            if ch == "{":
                depth += 1
            elif ch == "}":
                depth -= 1
                if depth == 0:
                    try:
                        obj = json.loads(text[m.start(): j + 1])
                    except json.JSONDecodeError:
                        break
                    if isinstance(obj, dict) and key in obj:
                        found = obj[key]
                    break
    return found


def _gbnf_lit(text: str) -> str:
    """A GBNF string literal for ``text`` (empty text gives '')."""
    if not text:
        return ""
    return json.dumps(text, ensure_ascii=False)


def _gbnf_alts(values: Sequence[str]) -> str:
    return " | ".join(_gbnf_lit(v) for v in sorted(values, key=len, reverse=True))


def _regex_alts(values: Sequence[str]) -> str:
    return "|".join(re.escape(v) for v in sorted(values, key=len, reverse=True))


# --------------------------------------------------------------------------- inference from a template

_NO_REASON = re.compile(  # an explicit ban on explanations
    r"\b(?:do\s+not|don'?t|never|without)\s+(?:provide\s+|give\s+|include\s+|write\s+|add\s+)?(?:any\s+)?"
    r"(?:explanations?|explain|reasons?|reasoning|justifications?|comments?|commentary)"
    r"|\bscores?\s+only\b|\bno\s+explanations?\b|\bgive\s+the\s+score\s+only\b",
    re.IGNORECASE,
)
_ONLY = re.compile(  # "only the answer", which a reasoning-first instruction may still precede
    r"\bonly\s+(?:the|a|one|your)\s+(?:final\s+)?(?:score|rating|number|letter|answer)"
    r"|\bjust\s+(?:say|give|write|answer)\b|\bnothing\s+else\b|\bonly\s+contain\b"
    r"|\bonly\s+output\b|\boutput\s+only\b",
    re.IGNORECASE,
)
_REASON_FIRST = re.compile(
    r"\b(?:first|begin|start)\b[^.\n]{0,80}\b(?:explanation|explain|feedback|reason|reasoning|analysis|justif\w+|compar\w+"
    r"|critique|critici[sz]e|rationale|review|comments?|assess\w*|discuss\w*|describe|think)"
    r"|\b(?:write|give|provide)\s+(?:a|an|your|some)\s+(?:short\s+|brief\s+|concise\s+)?(?:critique|rationale|"
    r"analysis|explanation|justification|feedback)\b[^\n]{0,200}?\b(?:then|followed\s+by|after\s+that|afterwards)\b"
    r"|\bafter\s+(?:providing|writing|giving)\s+(?:your|an?|the)\s+(?:explanation|feedback|reasoning|analysis)"
    r"|\bwrite\s+a\s+(?:detailed\s+)?feedback\b|\(write\s+a\s+feedback"
    r"|\bstep\s+by\s+step\b|\bthink\s+(?:carefully|step)|\bconcise\s+explanation\s+(?:followed|then)"
    r"|\b(?:justification|explanation|explain|reason(?:ing)?|rationale|analy[sz]e|justify)\b[^.\n]{0,40}\bthen\b"
    r"|\b(?:explain|reason|justify|analy[sz]e|think)\w*\s+first\b"
    r"|\b(?:justify|explain|reason|analy[sz]e|think)\w*\b[^.\n]{0,40}\bbefore\s+(?:giving|writing|stating|providing|"
    r"answering|scoring|you\s+(?:give|answer|score|rate))"
    r"|\bthen\b[^.\n]{0,30}\bfinal\s+(?:line|answer|verdict|score)"
    r"|\bfinal\s+line\b|\bend\s+(?:your\s+(?:answer|response)\s+)?with\b"
    r"|\b(?:first|begin|start)\b[^.\n]{0,60}\b(?:your\s+own\s+answer|evaluation|assessment|comparison|comparing|analy\w+)",
    re.IGNORECASE,
)
_ANSWER_FIRST = re.compile(
    r"\bfirst\s+output\s+a\s+single\s+line\b|\b(?:in\s+the\s+)?subsequent\s+line\b[^.\n]{0,80}\bexplanation",
    re.IGNORECASE,
)
_JSON = re.compile(r"\bJSON\b")
_JSON_KEY = re.compile(r"[\"'`](score|rating|grade|verdict|winner|preference|result|answer)[\"'`]", re.IGNORECASE)
_JSON_REASON_KEY = re.compile(r"[\"'`](reason|reasoning|explanation|feedback|rationale|justification)[\"'`]",
                              re.IGNORECASE)
_CUE_WORDS = r"(?:final\s+)?(?:score|rating|grade|answer|verdict|result)"


def infer_answer_format(
    texts: Sequence[str],
    *,
    kind: AnswerKind,
    labels: Sequence[str] = (),
    tie: str | None = None,
    criterion: str | None = None,
) -> AnswerFormat:
    """The answer format a template's ``texts`` (its messages, slots unfilled) prescribe.

    ``kind`` and ``labels`` come from the template reader (pairwise detection, option
    letters); ``criterion`` lets an answer stub such as "- Coherence:" be recognised.
    Returns the default format (``inferred=False``) when the text names none.
    """
    text = "\n".join(texts)
    instructions = _SLOT_VALUES.sub(" ", text)
    reasoning = _reasoning(instructions)
    pair_labels = tuple(labels) if labels else ("1", "2")
    base: dict[str, Any] = {"kind": kind, "reasoning": reasoning}
    if kind == "pairwise":
        if tie is None:  # "Answer with 1, 2 or tie": the template offers a tie, so the constraint must allow it
            a, b = (re.escape(x) for x in pair_labels)
            offered = re.search(rf"[\"'“(\[]*\b{a}\b[\"'”)\]]*\s*[,/]\s*[\"'“(\[]*\b{b}\b[\"'”)\]]*\s*,?\s*(?:or|/)\s*"
                                rf"[\"'“]?(tie|draw|equal)\b", instructions, re.I)
            tie = offered.group(1) if offered else None
        base.update(labels=pair_labels, tie=tie, case_sensitive=len({x.lower() for x in pair_labels}) < len(pair_labels))

    # JSON answers
    if _JSON.search(instructions) and (key := _JSON_KEY.search(instructions)) is not None:
        reason = _JSON_REASON_KEY.search(instructions)
        return AnswerFormat(**{**base, "json_key": key.group(1), "line": VALUE,
                               "reason_key": reason.group(1) if reason else None,
                               "reasoning": "before" if reason else "none"})
    # two scores on one line (the lmsys pairwise judge)
    if kind == "pairwise" and re.search(r"\b(?:two|both)\s+(?:values|scores)\b", instructions, re.I) and re.search(
            r"\bsingle\s+line\b|\bfirst\s+line\b", instructions, re.I):
        return AnswerFormat(**{**base, "two_scores": True, "line": VALUE,
                               "reasoning": "after" if _ANSWER_FIRST.search(instructions) else reasoning})
    # [RESULT] marker (Prometheus)
    if "[RESULT]" in instructions:
        return AnswerFormat(**{**base, "line": "[RESULT] {value}", "reasoning": "before" if reasoning != "none" or
                               re.search(r"feedback", instructions, re.I) else "none"})
    # XML-style tags (<score>...</score>)
    tag = re.search(r"<(score|rating|answer|verdict|result)>", instructions, re.I)
    if tag is not None and re.search(rf"\b(?:inside|within|in|between)\s+(?:the\s+)?<{tag.group(1)}>\s*(?:tags?)?",
                                     instructions, re.I):
        name = tag.group(1)
        return AnswerFormat(**{**base, "line": f"<{name}>{{value}}</{name}>",
                               "reasoning": "before" if re.search(r"\bfeedback\b|\bbefore\b|\bafter\s+the\s+feedback",
                                                                  instructions, re.I) else reasoning})
    # Arena-Hard relations [[A>>B]]
    if kind == "pairwise" and re.search(r"\[\[\s*\w{1,3}\s*>>?\s*\w{1,3}\s*\]\]", instructions):
        found = re.search(r"(?:\"|')?((?:[A-Za-z ]+:\s*)?)\[\[\s*\w{1,3}\s*>>?", instructions)
        head = "" if found is None else found.group(1)
        if head and not re.search(_CUE_WORDS + r"\s*:\s*$", head, re.I):
            head = ""
        return AnswerFormat(**{**base, "line": head + "[[{value}]]", "relations": True, "tie": None})
    # double brackets: [[A]] verdicts, [[rating]] / Rating: [[5]]
    bracket = re.search(r"\[\[\s*([A-Za-z]{1,2}|\d+(?:\.\d+)?|rating|score)\s*\]\]", instructions)
    if bracket is not None:
        example = re.search(r"([A-Za-z][A-Za-z ]{0,20}:\s*)\[\[\s*(?:\d|[NX]\s*\]\]|rating\b|score\b)", instructions,
                            re.IGNORECASE)
        head = example.group(1) if example else ""
        if kind == "pairwise":
            tie_m = re.search(r"\[\[\s*([A-Za-z])\s*\]\]\s*(?:\"|'|”)?\s*(?:for|if|when)\s+(?:a\s+)?tie", instructions,
                              re.I)
            return AnswerFormat(**{**base, "line": "[[{value}]]", "tie": tie_m.group(1) if tie_m else tie})
        return AnswerFormat(**{**base, "line": head + "[[{value}]]"})
    # a star rating: "how many stars", "1 to 5 stars"
    if kind == "score" and re.search(r"\bhow\s+many\s+stars\b|\b\d+\s+(?:to|-)\s+\d+\s+stars\b|\bnumber\s+of\s+stars\b",
                                     instructions, re.I):
        return AnswerFormat(**{**base, "line": "{value} stars"})
    # a quoted verdict sentence per output: "Therefore, Output (a) is better." or "Therefore, Output (b) is better."
    if kind == "pairwise":
        sentence = _verdict_sentence(instructions, pair_labels)
        if sentence is not None:
            return AnswerFormat(**{**base, "line": sentence})
    # a quoted answer line: "Score: ", 'Rating: <score>', "Answer: X", "Final verdict: ..."
    quoted = _quoted_cue(instructions, criterion)
    if quoted is not None:
        return AnswerFormat(**{**base, "line": quoted + " {value}"})
    # pairwise labels written as "Output (a)" (AlpacaEval, LLMBar)
    if kind == "pairwise":
        a, b = pair_labels
        q_open, q_close = "[\"'“‘`]?", "[\"'”’`]?"
        form = re.search(rf"\b([A-Z][a-z]+)\s*\(\s*{re.escape(a)}\s*\){q_close}\s*(?:or|and|,)\s*{q_open}(?:\1\s*)?"
                         rf"\(\s*{re.escape(b)}\s*\)", instructions)
        if form is not None:
            return AnswerFormat(**{**base, "line": form.group(1) + " ({value})"})
        # "Answer 'Summary 1' or 'Summary 2'": the label after a word the answer repeats
        named = re.search(rf"{q_open}\b([A-Z][a-z]+)\s+{re.escape(a)}\b{q_close}\s*or\s*{q_open}\1\s+{re.escape(b)}\b",
                          instructions)
        if named is not None:
            return AnswerFormat(**{**base, "line": named.group(1) + " {value}"})
        if re.search(rf"\(\s*{re.escape(a)}\s*\)\s*or\s*\(\s*{re.escape(b)}\s*\)", instructions):
            return AnswerFormat(**{**base, "line": "({value})"})
        return AnswerFormat(**{**base, "line": VALUE, "inferred": True})
    # an answer stub ending the prompt: "- Coherence:", "Score:", "Rating:"
    stub = _answer_stub(texts[-1] if texts else "", criterion)
    if stub is not None:
        # what the text asks for stands: "First write a short critique ... Then rate" before "Rating:" is reasoning first
        return AnswerFormat(**{**base, "line": stub + " {value}"})
    if kind == "mcq":
        return AnswerFormat(**{**base, "line": VALUE}) if re.search(
            r"\b(?:letter|option|character|choice)\b", instructions, re.I) else AnswerFormat(**{**base, "line": "Answer: {value}",
                                                                              "inferred": False})
    if re.search(r"\b(?:only|just|single)\s+(?:the\s+|a\s+|one\s+)?(?:score|number|rating|integer|digit)\b|"
                 r"\bscore\s+only\b|\bnumber\s+only\b", instructions, re.I):
        return AnswerFormat(**{**base, "line": VALUE, "reasoning": "none"})
    return AnswerFormat(**{**base, "inferred": False})


_SLOT_VALUES = re.compile(r"\{\{[^{}]*\}\}")


def _verdict_sentence(text: str, labels: Sequence[str]) -> str | None:
    """The answer line of two quoted verdicts that differ only by the output's label, with ``{value}`` there.

    'end with "Therefore, Output (a) is better." or "Therefore, Output (b) is better."' gives
    "Therefore, Output ({value}) is better."; None when the template quotes no such pair.
    """
    a, b = labels
    for m in re.finditer(r"[\"“]([^\"“”\n]{1,160})[\"”]\s*,?\s*(?:or|and)\s*[\"“]([^\"“”\n]{1,160})[\"”]", text):
        one, two = m.group(1), m.group(2)
        n = 0
        while n < min(len(one), len(two)) and one[n] == two[n]:
            n += 1
        k = 0
        while k < min(len(one), len(two)) - n and one[len(one) - 1 - k] == two[len(two) - 1 - k]:
            k += 1
        # the prefix may have eaten the start of a label ("Summary 1" / "Summary 12" never occur; labels differ)
        mid_one, mid_two = one[n: len(one) - k], two[n: len(two) - k]
        if (mid_one, mid_two) == (a, b) and re.search(r"[A-Za-z]", one[:n] + one[len(one) - k:]) \
                and re.search(r"\s", one.strip()):
            return one[:n] + VALUE + one[len(one) - k:]
    return None


def stated_reasoning(texts: Sequence[str]) -> Reasoning:
    """Whether a template's ``texts`` ask for reasoning "before" the answer, "after" it, or "none" (the answer alone)."""
    return _reasoning(_SLOT_VALUES.sub(" ", "\n".join(texts)))


_NO_OTHER_TEXT = re.compile(r"\bno\s+other\s+text\b|\b(?:number|rating|digit)\s+only\b", re.IGNORECASE)


def reasoning_ban(texts: Sequence[str]) -> str | None:
    """The words of a template that ask for the answer alone ("Do NOT provide any explanation", "only the score").

    None when the template says nothing of the kind. A chain-of-thought request contradicts
    such words; a template that first asks for reasoning and then for "only the score" on the
    last line does not count (its stated reasoning is "before").
    """
    text = _SLOT_VALUES.sub(" ", "\n".join(texts))
    if _reasoning(text) == "before":
        return None
    for pattern in (_NO_REASON, _ONLY, _NO_OTHER_TEXT):
        found = pattern.search(text)
        if found is not None:
            return found.group(0)
    return None


def _reasoning(text: str) -> Reasoning:
    if _ANSWER_FIRST.search(text):
        return "after"
    if _NO_REASON.search(text):
        return "none"
    ordered = _stated_order(text)
    if ordered is not None:
        return ordered
    if _REASON_FIRST.search(text):
        return "before"
    return "none"  # with _ONLY or nothing said: the answer alone


# Words naming the reasoning part of an answer, and words naming its value part.
_REASON_PART = re.compile(
    r"\b(?:analy[sz]\w*|explain\w*|explanation|reason(?:s|ing)?|rationale|justif\w+|feedback|critique|"
    r"comment(?:s|ary)?|assess\w*|evaluat\w*|compar\w+|discuss\w*|think\w*|thought\w*|review)\b", re.IGNORECASE)
_VALUE_PART = re.compile(r"\b(?:score|rating|grade|verdict|label|number|letter|choice|decision|stars?)\b",
                         re.IGNORECASE)
# An instruction ordering two parts: "<first part> then <second part>" (or "followed by", "after that", "next").
_THEN = re.compile(r"\b(?:and\s+)?(?:then|followed\s+by|after\s+that|afterwards|next)\b", re.IGNORECASE)
_OPENING = re.compile(r"\b(?:start|begin|open|lead)(?:s|ning|ing|ed)?\s+(?:\w+\s+){0,3}?(?:with|by)\b|\bfirst\b",
                      re.IGNORECASE)


def _stated_order(text: str) -> Reasoning | None:
    """The order an instruction gives the answer's parts: "before" when it opens with the reasoning part and
    then asks for the value, "after" when it opens with the value; None when no sentence orders the two.

    A sentence orders them when it says what the answer starts with ("starting with 'Analysis:' ...",
    "give your rating first") and what comes then ("... then give the numeric rating on the next line"):
    the part named in the clause of the opening is first. Reasoning words ("analysis", "explain", "feedback", "compare" ...) and value
    words ("score", "rating", "verdict", "label" ...) tell the parts apart.
    """
    for sentence in re.split(r"(?<=[.!?])\s+|\n", text):
        opening = _OPENING.search(sentence)
        then = _THEN.search(sentence, opening.end()) if opening else None
        if opening is None or then is None:
            continue
        clause = max((sentence.rfind(ch, 0, opening.start()) for ch in ",;:("), default=-1) + 1
        head, tail = sentence[clause: then.start()], sentence[then.end():]
        if _REASON_PART.search(head) and _VALUE_PART.search(tail):
            return "before"
        if _VALUE_PART.search(head) and not _REASON_PART.search(head) and _REASON_PART.search(tail):
            return "after"
    return None


def _quoted_cue(text: str, criterion: str | None) -> str | None:
    """A quoted answer-line cue such as "Score: " or 'Rating: <n>' (the cue text, colon included)."""
    names = _CUE_WORDS + (rf"|{re.escape(criterion)}" if criterion and criterion != "score" else "")
    quoted = list(re.finditer(
        rf"[\"'“`]\s*(?P<cue>(?:{names})(?:\s+score)?\s*:)\s*(?:<[^>\"'”`]*>|\[[^\]\"'”`]*\]|[A-Z]|N|X|\d+|\.\.\.)?\s*[\"'”`]",
        text, re.IGNORECASE))
    if quoted:
        return quoted[-1].group("cue").strip()
    named = list(re.finditer(
        rf"\b(?:format|form|line|as)\s*:?\s*(?P<cue>(?:{names})\s*:)\s*(?:<[^>\n]*>|\[[^\]\n]*\]|N\b|X\b)",
        text, re.IGNORECASE))
    return named[-1].group("cue").strip() if named else None


def _answer_stub(last: str, criterion: str | None) -> str | None:
    """The cue of an answer stub closing the template ("- Coherence:", "Score:"), or None."""
    lines = [ln for ln in last.rstrip().splitlines() if ln.strip()]
    if not lines:
        return None
    tail = lines[-1].strip()
    names = _CUE_WORDS + (rf"|{re.escape(criterion)}" if criterion and criterion != "score" else "")
    m = re.fullmatch(rf"(?:[-*•]\s*)?(?P<cue>(?:{names})(?:\s+score)?\s*:)", tail, re.IGNORECASE)
    return m.group("cue") if m else None
