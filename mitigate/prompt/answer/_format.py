"""The answer format a judge prompt prescribes: one value that drives everything about answers.

:class:`AnswerFormat` holds how a template says the judge answers (``Score: 4``, ``[RESULT] 4``, ``Rating:
[[4]]``, a JSON object, a letter, ``[[A]]``, ``Output (a)`` ...: its ``line``, ``{value}`` where the value
goes) and is the one source of truth for reading answers, showing a demo's gold answer, asking for the
format and constraining decoding (a grammar, a regex and a JSON schema of the same shape). A template
ending with the start of the answer line (``- Fluency (1-3):``) leaves the judge to complete it: that
start is the format's ``stub``, and only the rest is constrained.
"""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Sequence
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, model_validator

from mitigate.errors import ConfigError, TemplateError
from mitigate.lm import AnswerConstraint, ConstraintMode
from mitigate.parse import LIST_MARKER, RANGE, VALUE, FormatReader, Verdict
from mitigate.prompt._parts import format_number
from mitigate.scale import Scale

AnswerKind = Literal["score", "mcq", "pairwise"]
Reasoning = Literal["none", "before", "after"]

DEFAULT_SCORE_LINE = "Score: {value}"
"""The answer line a prompt gets when its template names none (what mitigate's own prompts ask for)."""


_OPENING_MARKER = re.compile(rf"^\s*{LIST_MARKER}\s+")


def _label(stub: str) -> str:
    """The label of an answer stub or cue ("- Fluency (1-3):" -> "Fluency")."""
    text = re.sub(rf"\s*{RANGE}\s*", " ", _OPENING_MARKER.sub("", stub.strip(), count=1))
    return " ".join(text.rstrip().rstrip(":").split()).strip("*_ ")


_REASON_CHARS = 600  # at most this many characters of reasoning before a constrained answer line
_REASON_MIN = 32  # at least this many when the format reasons first
_ANSWER_ROOM = 48  # tokens kept free for the answer line after the reasoning


class AnswerFormat(BaseModel):
    """How a judge answers (see the module docstring).

    - ``kind``: "score" (a number on the scale), "mcq" (a letter of ``scale.letters``) or "pairwise".
    - ``line``: the answer as written, ``{value}`` standing for the value; ``json_key``: the answer is a
      JSON object with the value under this key (``line`` ignored), ``reason_key`` its explanation field.
    - ``labels`` / ``tie``: how a pairwise answer names the two outputs and a tie; ``relations``:
      Arena-Hard verdicts (``A>>B`` ... ``B>>A``); ``two_scores``: one score per output ("8 6");
      ``case_sensitive``: labels differ only by case (AlpacaEval's ``m`` / ``M``).
    - ``reasoning``: "before" the answer line, "after" it, or "none".
    - ``inferred``: False when the template named no format and this is the default.
    - ``stub``: the start of ``line`` the template writes as its last line, which the judge completes.
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
    stub: str = ""

    @model_validator(mode="after")
    def _check(self) -> AnswerFormat:
        if self.json_key is None and VALUE not in self.line:
            raise TemplateError(f"an answer line needs a {VALUE} placeholder; got {self.line!r}")
        no_stub = self.json_key is not None or self.two_scores  # a JSON or two-scores answer has none
        bad = no_stub or not self.stub.strip() or "\n" in self.stub
        if self.stub and (bad or not self.line.split(VALUE, 1)[0].startswith(self.stub)):
            why = " (a JSON or two-scores answer has no stub)" if no_stub else ""
            raise TemplateError(
                f"an answer stub is the start of the answer line before {VALUE}, on one "
                f"line; got stub {self.stub!r} for the line {self.line!r}{why}"
            )
        if self.kind == "pairwise" and len(self.labels) != 2:
            raise TemplateError(f"a pairwise answer format needs two output labels; got {list(self.labels)}")
        distinct = {x if self.case_sensitive else x.lower() for x in self.labels}
        if self.kind == "pairwise" and len(distinct) != 2:
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
        """A copy asking for reasoning ``"before"`` the answer, ``"after"`` it, or ``"none"``."""
        return self.model_copy(update={"reasoning": reasoning})

    def with_stub(self, stub: str) -> AnswerFormat:
        """A copy whose line starts with ``stub``, the template's last line (empty: :meth:`without_stub`),
        keeping what the judge writes after the stub's label; another line becomes the stub and the value."""
        stub = stub.strip()
        if not stub:
            return self.without_stub()
        rest = self.continuation if self.stub else self._after_label(stub)
        rest = VALUE if rest is None else rest
        line = stub + (rest if rest[:1].isspace() else " " + rest)
        return AnswerFormat.model_validate({**self.model_dump(), "line": line, "stub": stub})

    def names_stub(self, stub: str) -> bool:
        """Whether this format's line starts with ``stub`` or its label ("Fluency: {value}" for "- Fluency
        (1-3):"), so :meth:`with_stub` keeps what follows."""
        return (
            self.json_key is None
            and not self.two_scores
            and VALUE in self.line
            and (self.line.startswith(stub.strip()) or self._after_label(stub) is not None)
        )

    def _after_label(self, stub: str) -> str | None:
        """The line after its opening cue when that cue has the stub's label ("[[{value}]]" of "Rating:
        [[{value}]]" for "Rating:"); None when the line opens otherwise."""
        cue = re.match(r"\s*([^\[\](){}<>:\n]{1,40}):[ \t]*", self.line.split(VALUE, 1)[0])
        if cue is None or _label(cue.group(1)).lower() != _label(stub).lower():
            return None
        return self.line[cue.end() :]

    def without_stub(self) -> AnswerFormat:
        """A copy whose whole line is the judge's, opened by the stub's label alone ("- Fluency (1-3):
        {value}" becomes "Fluency: {value}": a range stated there would outlive a rescale)."""
        if not self.stub:
            return self
        return self.model_copy(update={"stub": "", "line": f"{self.stub_label}:{self.continuation}"})

    @property
    def continuation(self) -> str:
        """What the judge writes of the answer line: the line after the stub (all of it without one)."""
        return self.line[len(self.stub) :] if self.stub else self.line

    @property
    def stub_label(self) -> str:
        """The stub's label ("Fluency" of "- Fluency (1-3):"); "" without a stub."""
        return _label(self.stub) if self.stub else ""

    @property
    def is_default_score_line(self) -> bool:
        """True for the plain "Score: N" line (what mitigate's own prompts and mitigations ask for)."""
        return self.kind == "score" and self.json_key is None and self.line == DEFAULT_SCORE_LINE

    # ------------------------------------------------------------------ text
    def describe(self) -> str:
        """A short human description, e.g. '"[RESULT] N" after reasoning' (for inspect and errors)."""
        shape = self.shape()
        where = {"none": "alone", "before": "after reasoning", "after": "first, then reasoning"}[
            self.reasoning
        ]
        what = f'"{shape}" {where}'
        if self.stub:
            what += (
                f', completing the template\'s last line "{self.stub}"'
                if self.reasoning != "before"
                else f', the template ending with "{self.stub}"'
            )
        if self.kind == "pairwise":
            what += f" with X one of {self._verdicts()}"
        return what + ("" if self.inferred else " (default: the template names no format)")

    def value_text(self, value: float | str, scale: Scale) -> str:
        """The value as the judge writes it: the number, the nearest letter, or a verdict's label."""
        if self.kind == "pairwise":
            if value in ("first", "second"):
                a, b = self.labels if value == "first" else self.labels[::-1]
                return f"{a}>{b}" if self.relations else a
            if value == "tie":
                if self.relations:
                    return f"{self.labels[0]}={self.labels[1]}"
                if self.tie is None:
                    raise ConfigError(
                        f"this pairwise format has no tie label; cannot show a tie in {self.describe()}"
                    )
                return self.tie
            raise ConfigError(f"expected a verdict first/second/tie; got {value!r}")
        if isinstance(value, str):
            return value
        if self.kind == "mcq" and scale.letters:
            return min(scale.letters.items(), key=lambda kv: (abs(kv[1] - value), kv[0]))[0]
        return format_number(value)

    def render(self, value: float | str, scale: Scale, *, reason: str | None = None) -> str:
        """The answer line showing ``value`` (a demo's gold answer); a JSON reason field shows ``reason``."""
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
        """The answer line with a placeholder for the value: 'Score: N', 'Output (X)', 'N1 N2'."""
        if self.two_scores:
            return "N1 N2"
        if self.json_key is not None:
            reason = f'"{self.reason_key}": "...", ' if self.reason_key else ""
            value = "N" if self.kind == "score" else '"X"'
            return "{" + reason + f'"{self.json_key}": ' + value + "}"
        return self.line.replace(VALUE, "N" if self.kind == "score" else "X")

    def instruction(self, scale: Scale) -> str:
        """One sentence asking for this format (for mitigations that add an answer request)."""
        where = {
            "none": "Answer with only",
            "before": "End your answer with a final line",
            "after": "Start your answer with a line",
        }
        d = scale.describe()
        if self.two_scores:
            a, b = self.labels
            return (
                f'{where[self.reasoning]} "N1 N2": two scores from {d}, N1 for output {a!r} '
                f"and N2 for output {b!r}."
            )
        if self.kind == "pairwise":
            a, b = self.labels
            options = f"{a!r} or {b!r}" + (f" (or {self.tie!r} for a tie)" if self.tie else "")
            if self.relations:
                options = f"one of {', '.join(self._verdicts())}"
            what, noun, choices = f"with X being {options}", "your verdict", options
        elif self.kind == "mcq":
            what, noun, choices = f"with X one of the option letters {d}", "the option letter", f"one of {d}"
        else:
            what, noun, choices = f"with N a score from {d}", "the score", f"from {d}"
        if self.stub and self.reasoning != "before":
            # the template writes the line's start last: the judge completes it
            rest = self.continuation.strip()
            only = "only " if self.reasoning == "none" else ""
            goes = (
                f"{only}{noun}, {choices}"
                if rest == VALUE
                else f'{only}"{rest.replace(VALUE, "N" if self.kind == "score" else "X")}", {what}'
            )
            then = "" if self.reasoning == "none" else ", then explain it on the lines after"
            return f'Complete the last line "{self.stub}" with {goes}{then}.'
        if self.json_key is None and self.line.strip() == VALUE:
            # a bare answer line ("4", "A"): quoting it as "X" would read as a literal; name what goes on it
            lead = where[self.reasoning] + ("" if self.reasoning == "none" else " holding only")
            return f"{lead} {noun}, {choices}."
        if self.json_key is not None:
            reason = f'whose "{self.reason_key}" field holds your reasoning and ' if self.reason_key else ""
            return (
                f'Answer with a JSON object {reason}whose "{self.json_key}" field holds your answer, {what}.'
            )
        return f'{where[self.reasoning]} "{self.shape()}", {what}.'

    def request(self, scale: Scale) -> str:
        """:meth:`instruction` as a mitigation adds it: a default format (``inferred=False``) says nothing of
        reasoning, so it is asked for as the final line rather than alone."""
        fmt = self if self.inferred or self.reasoning != "none" else self.with_reasoning("before")
        return fmt.instruction(scale)

    def for_criterion(self, name: str, others: Sequence[str] = ()) -> AnswerFormat:
        """A copy whose answer line names criterion ``name`` where it named one of ``others``
        ("Coherence: N" -> "Fluency: N"); a stub is renamed with it (the prompt's last line is renamed by
        :meth:`~mitigate.prompt.JudgePrompt.with_answer_format`)."""
        if self.json_key is not None or self.kind != "score" or VALUE not in self.line:
            return self
        head, tail = self.line.split(VALUE, 1)
        for other in others:
            if other.lower() == name.lower() or other.lower() == "score":
                continue
            pattern = re.compile(rf"(?<![A-Za-z]){re.escape(other)}(?![A-Za-z])", re.IGNORECASE)
            found = pattern.search(head)
            if found is not None:
                label = name[:1].upper() + name[1:]
                head = head[: found.start()] + label + head[found.end() :]
                stub = pattern.sub(label, self.stub, count=1) if self.stub else ""
                return self.model_copy(update={"line": head + VALUE + tail, "stub": stub})
        return self

    # ------------------------------------------------------------------ values
    def values(self, scale: Scale) -> list[str]:
        """Every answer value the format allows on ``scale`` (scale points, letters or verdict labels)."""
        if self.kind == "pairwise" and not self.two_scores:
            return self._verdicts()
        if self.kind == "mcq":
            if not scale.letters:
                raise ConfigError("an MCQ answer format needs a scale with a letter map; got none")
            return list(scale.letters)
        return [format_number(p) for p in scale.points()]

    def _verdicts(self) -> list[str]:
        """A pairwise answer's values: the two labels (and the tie), or the five relations."""
        a, b = self.labels
        if self.relations:
            return [f"{a}>>{b}", f"{a}>{b}", f"{a}={b}", f"{b}>{a}", f"{b}>>{a}"]
        return [a, b] + ([self.tie] if self.tie else [])

    def cues(self) -> tuple[str, ...]:
        """Words in the answer line that mark a score ("Coherence" of "Coherence: N")."""
        return self.reader().line_cues

    # ------------------------------------------------------------------ reading
    def reader(self) -> FormatReader:
        """How an answer in this format is read (a :class:`~mitigate.parse.FormatReader`, one per format)."""
        return _reader(self)

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
        """The score (or verdict) in a judge's answer ``text``; ParseError when none or it is ambiguous.

        ``echoes`` (prompt lines a judge may copy) are not answers; ``cues`` are extra words marking a score;
        what the answer quotes from ``quoted`` (what the judge was shown) or ``judged`` is not its own.
        """
        return _reader(self).read(text, scale, echoes=echoes, cues=cues, quoted=quoted, judged=judged)

    def read_json(self, text: str, scale: Scale) -> float | Verdict:
        """Read an answer that a backend returned as the JSON object of :meth:`json_schema` (strictly)."""
        return _reader(self).read_json(text, scale)

    # ------------------------------------------------------------------ constraints
    def constraint(
        self, scale: Scale, mode: ConstraintMode = "format", *, max_tokens: int | None = None
    ) -> AnswerConstraint:
        """The answer as an :class:`AnswerConstraint`: GBNF, regex and JSON schema of the same shape.

        Every grammar is bounded so a small model cannot loop: reasoning "before" is 32 to ``max_tokens - 48``
        (at most 600) characters on two lines, without the answer line's brackets; "after" one capped line.
        With a stub, only the line's rest is generated (after reasoning: the whole line).
        """
        values = self.values(scale)
        room = _REASON_CHARS if max_tokens is None else max_tokens - _ANSWER_ROOM
        budget = max(16, min(_REASON_CHARS, room))
        if self.two_scores:
            answer_g = f'({_gbnf_alts(values)}) " " ({_gbnf_alts(values)})'
            answer_r = f"(?:{_regex_alts(values)}) (?:{_regex_alts(values)})"
        elif self.json_key is not None:
            shown = [json.dumps(v) if self.kind != "score" else v for v in values]
            head = "{" + (f'"{self.reason_key}": "' if self.reason_key else "")
            mid = f'", "{self.json_key}": ' if self.reason_key else f'"{self.json_key}": '
            reason_r = f'[^"\\\\\\n]{{0,{budget}}}' if self.reason_key else ""
            reason_g = f" {reason_r} " if self.reason_key else " "
            answer_g = (
                _gbnf_lit(head) + reason_g + _gbnf_lit(mid) + " (" + _gbnf_alts(shown) + ") " + _gbnf_lit("}")
            )
            answer_r = (
                re.escape(head) + reason_r + re.escape(mid) + f"(?:{_regex_alts(shown)})" + re.escape("}")
            )
        else:
            head, tail = self.line.split(VALUE, 1)
            space_g = space_r = ""
            if self.stub and self.reasoning != "before":
                # the template wrote the line's start: only its rest is generated, after at most one space
                head, space_g, space_r = self.continuation.split(VALUE, 1)[0].lstrip(), '" "?', "[ ]?"
            parts = (space_g, _gbnf_lit(head), f"({_gbnf_alts(values)})", _gbnf_lit(tail))
            answer_g = " ".join(p for p in parts if p)
            answer_r = space_r + re.escape(head) + f"(?:{_regex_alts(values)})" + re.escape(tail)
        if self.reasoning == "before" and self.json_key is None:
            sep = "\n" if not self.line.startswith("[RESULT]") else " "
            sep_r = "\\n" if sep == "\n" else " "
            banned = "".join(
                ch
                for ch in "[<{"
                if ch in self.line.split(VALUE, 1)[0]
                or (self.kind == "pairwise" and ch == "[" and "[" in self.line)
            )
            cls_g = "[^\\n" + "".join("\\" + ch if ch in "[]" else ch for ch in banned) + "]"
            cls_r = "[^\\n" + "".join(re.escape(ch) for ch in banned) + "]"
            per_line = max(1, budget // 2)
            least = min(_REASON_MIN - 1, per_line)  # the reasoning asked for is written: no bare "Rating: 9"
            gbnf = (
                f"root ::= reason {_gbnf_lit(sep)} answer\n"
                f'reason ::= [A-Za-z] {cls_g}{{{least},{per_line}}} ("\\n" {cls_g}{{0,{per_line}}})?\n'
                f"answer ::= {answer_g}\n"
            )
            regex = f"[A-Za-z]{cls_r}{{{least},{per_line}}}(?:\\n{cls_r}{{0,{per_line}}})?{sep_r}{answer_r}"
        elif self.reasoning == "after" and self.json_key is None:
            gbnf = f'root ::= answer ("\\n" [^\\n]{{0,{budget}}})?\nanswer ::= {answer_g}\n'
            regex = f"{answer_r}(?:\\n[^\\n]{{0,{budget}}})?"
        else:
            gbnf = f"root ::= {answer_g}\n"
            regex = answer_r
        return AnswerConstraint(
            mode=mode,
            gbnf=gbnf,
            regex=regex,
            json_schema=self.json_schema(scale),
            name="judge_answer",
            describe=self.describe(),
        )

    def json_schema(self, scale: Scale) -> dict[str, Any]:
        """The answer as a JSON object: an explanation field first when the format reasons, then the value."""
        values = self.values(scale)
        key = self.json_key or (
            "verdict" if self.kind == "pairwise" else "answer" if self.kind == "mcq" else "score"
        )
        props: dict[str, Any] = {}
        reason = self.reason_key or ("reasoning" if self.reasoning != "none" else None)
        if reason is not None:
            props[reason] = {"type": "string"}
        if self.two_scores or self.kind == "score":
            numbers = [float(v) if "." in v else int(v) for v in values]
            for name in ("score_1", "score_2") if self.two_scores else (key,):
                props[name] = {"enum": numbers}
        else:
            props[key] = {"type": "string", "enum": values}
        return {"type": "object", "properties": props, "required": list(props), "additionalProperties": False}


@functools.lru_cache(maxsize=256)  # one reader per format: its patterns are compiled once, not per answer
def _reader(fmt: AnswerFormat) -> FormatReader:
    return FormatReader(fmt, fmt.describe())


def _gbnf_lit(text: str) -> str:
    """A GBNF string literal for ``text`` (empty text gives '')."""
    if not text:
        return ""
    return json.dumps(text, ensure_ascii=False)


def _gbnf_alts(values: Sequence[str]) -> str:
    return " | ".join(_gbnf_lit(v) for v in sorted(values, key=len, reverse=True))


def _regex_alts(values: Sequence[str]) -> str:
    return "|".join(re.escape(v) for v in sorted(values, key=len, reverse=True))
