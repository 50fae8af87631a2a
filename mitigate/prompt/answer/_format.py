"""The answer format a judge prompt prescribes, as one value that drives everything about answers.

A published judge template says how the judge must answer: ``Score: 4`` on a final line,
``[RESULT] 4`` after a feedback (Prometheus), ``Rating: [[4]]`` (MT-Bench), a JSON object
with a ``"score"`` field (DeepEval G-Eval), ``<score>4</score>`` (Flow Judge), a letter, or
for a comparison ``[[A]]`` / ``[[A>B]]`` (MT-Bench, Arena-Hard), ``Output (a)`` (AlpacaEval,
LLMBar), ``m`` / ``M`` (AlpacaEval's classifier). :class:`AnswerFormat` holds that format and is
the single source of truth for:

- **reading** (:meth:`AnswerFormat.read`): the format's own answer line is looked for first
  (the last one wins when reasoning comes first, the first one when the answer comes first);
  when the judge wrote none, the general strict readers of :mod:`mitigate.parse` read the
  text, with the format's labels and cues (:class:`~mitigate.parse._format_reader.FormatReader`,
  built once per format). Ambiguity stays a :class:`~mitigate.errors.ParseError`.
- **demonstrations** (:meth:`AnswerFormat.render`): how a demo shows its gold answer.
- **instructions** (:meth:`AnswerFormat.instruction`): one sentence asking for the format,
  for mitigations that add an answer request (chain of thought, granularity, "rate only").
- **constrained decoding** (:meth:`AnswerFormat.constraint`, built by :mod:`.constraint`): the
  same answer as a llama.cpp grammar, a regular expression and a JSON schema
  (:class:`~mitigate.lm._constraint.AnswerConstraint`). With reasoning, only the final answer
  line is constrained.

:func:`~mitigate.prompt.answer._infer.infer_answer_format` recovers the format from a template's
text; explicit arguments to :meth:`~mitigate.prompt.JudgePrompt.from_template` override what it finds.

The ``line`` is the answer as written, with ``{value}`` where the score, letter or verdict
label goes (``"[RESULT] {value}"``, ``"Rating: [[{value}]]"``, ``"Output ({value})"``).

A template may itself write the start of the answer line as its last line and leave the
judge to complete it (G-Eval's ``Evaluation Form (scores ONLY):`` / ``- Fluency (1-3):``, a
closing ``Score:``). That start is the format's ``stub``: the judge's answer is the rest of
the line (``3``), the constraint constrains only that rest (:attr:`AnswerFormat.continuation`),
a demo shows the whole line completed (``- Fluency (1-3): 3``: the line the judge is left to
complete, as every demo completes it), and the reader takes the bare value as well as the
line repeated in full or by its label (:mod:`mitigate.parse._stub`).
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
from mitigate.scale import Scale

AnswerKind = Literal["score", "mcq", "pairwise"]
Reasoning = Literal["none", "before", "after"]

DEFAULT_SCORE_LINE = "Score: {value}"
"""The answer line a prompt gets when its template names none (what mitigate's own prompts ask for)."""


_OPENING_MARKER = re.compile(rf"^\s*{LIST_MARKER}\s+")


def _label(stub: str) -> str:
    """The label of an answer stub or cue: no list marker, no bracketed range, no colon ("- Fluency (1-3):" ->
    "Fluency")."""
    text = re.sub(rf"\s*{RANGE}\s*", " ", _OPENING_MARKER.sub("", stub.strip(), count=1))
    return " ".join(text.rstrip().rstrip(":").split()).strip("*_ ")


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
    - ``stub``: the start of ``line`` that the template itself writes as its last line
      ("- Fluency (1-3):", "Score:"), which the judge's answer completes; empty when the
      template leaves the whole line to the judge.
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
        if self.stub and (
            self.json_key is not None
            or self.two_scores
            or not self.stub.strip()
            or "\n" in self.stub
            or not self.line.split(VALUE, 1)[0].startswith(self.stub)
        ):
            raise TemplateError(
                f"an answer stub is the start of the answer line before {VALUE}, on one "
                f"line; got stub {self.stub!r} for the line {self.line!r}"
                + (
                    " (a JSON or two-scores answer has no stub)"
                    if self.json_key is not None or self.two_scores
                    else ""
                )
            )
        if self.kind == "pairwise" and len(self.labels) != 2:
            raise TemplateError(f"a pairwise answer format needs two output labels; got {list(self.labels)}")
        if (
            self.kind == "pairwise"
            and len({x if self.case_sensitive else x.lower() for x in self.labels}) != 2
        ):
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
        """A copy asking for reasoning ``"before"`` the answer (chain of thought), ``"after"`` it, or
        ``"none"``."""
        return self.model_copy(update={"reasoning": reasoning})

    def with_stub(self, stub: str) -> AnswerFormat:
        """A copy whose answer line starts with ``stub``, the template's last line (empty: no stub, as
        :meth:`without_stub`).

        What the judge writes is kept: "Rating: [[{value}]]" with the stub "Rating:" is completed
        by " [[N]]", and a stub renamed ("- Coherence:" to "- Fluency:") keeps its continuation; a
        line that does not start with the stub's label is replaced by the stub and the value
        ("- Fluency (1-3): {value}"), since the judge completes the stub.
        """
        stub = stub.strip()
        if not stub:
            return self.without_stub()
        rest = self.continuation if self.stub else self._after_label(stub)
        rest = VALUE if rest is None else rest
        line = stub + (rest if rest[:1].isspace() else " " + rest)
        return AnswerFormat.model_validate({**self.model_dump(), "line": line, "stub": stub})

    def names_stub(self, stub: str) -> bool:
        """Whether this format's line is the answer ``stub`` asks for: it starts with the stub, or with the
        stub's label ("Fluency: {value}" for "- Fluency (1-3):"), so :meth:`with_stub` keeps what follows."""
        return (
            self.json_key is None
            and not self.two_scores
            and VALUE in self.line
            and (self.line.startswith(stub.strip()) or self._after_label(stub) is not None)
        )

    def _after_label(self, stub: str) -> str | None:
        """The line after its opening cue when that cue has the stub's label ("[[{value}]]" of "Rating:
        [[{value}]]"
        for "Rating:"); None when the line opens otherwise."""
        cue = re.match(r"\s*([^\[\](){}<>:\n]{1,40}):[ \t]*", self.line.split(VALUE, 1)[0])
        if cue is None or _label(cue.group(1)).lower() != _label(stub).lower():
            return None
        return self.line[cue.end() :]

    def without_stub(self) -> AnswerFormat:
        """A copy for a prompt that does not end with the stub: the whole line is the judge's, opened by the
        stub's label alone ("- Fluency (1-3): {value}" becomes "Fluency: {value}"; a range stated there would
        outlive a rescale)."""
        if not self.stub:
            return self
        return self.model_copy(update={"stub": "", "line": f"{self.stub_label}:{self.continuation}"})

    @property
    def continuation(self) -> str:
        """What the judge writes of the answer line: the line after the template's stub (the whole line
        without one)."""
        return self.line[len(self.stub) :] if self.stub else self.line

    @property
    def stub_label(self) -> str:
        """The stub's label, without list marker, range and colon ("Fluency" of "- Fluency (1-3):"); ""
        without a stub."""
        return _label(self.stub) if self.stub else ""

    @property
    def is_default_score_line(self) -> bool:
        """True for the plain "Score: N" line (what mitigate's built-in prompts and mitigations ask for)."""
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
                    raise ConfigError(
                        f"this pairwise format has no tie label; cannot show a tie in {self.describe()}"
                    )
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
        """The answer line with a placeholder for the value: 'Score: N', '[RESULT] N', 'Output (X)', 'N1
        N2'."""
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
        if self.two_scores:
            a, b = self.labels
            return (
                f'{where[self.reasoning]} "N1 N2": two scores from {scale.describe()}, N1 for '
                f"output {a!r} "
                f"and N2 for output {b!r}."
            )
        if self.kind == "pairwise":
            a, b = self.labels
            options = f"{a!r} or {b!r}" + (f" (or {self.tie!r} for a tie)" if self.tie else "")
            if self.relations:
                options = f"one of {a}>>{b}, {a}>{b}, {a}={b}, {b}>{a}, {b}>>{a}"
            what, noun, choices = f"with X being {options}", "your verdict", options
        elif self.kind == "mcq":
            what, noun, choices = (
                f"with X one of the option letters {scale.describe()}",
                "the option letter",
                f"one of {scale.describe()}",
            )
        else:
            what, noun, choices = (
                f"with N a score from {scale.describe()}",
                "the score",
                f"from {scale.describe()}",
            )
        if self.stub and self.reasoning != "before":
            # the template writes the line's start last: the judge completes it (after reasoning: the whole
            # line)
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
            bare = {
                "none": f"Answer with only {noun}",
                "before": f"End your answer with a final line holding only {noun}",
                "after": f"Start your answer with a line holding only {noun}",
            }
            return f"{bare[self.reasoning]}, {choices}."
        if self.json_key is not None:
            reason = f'whose "{self.reason_key}" field holds your reasoning and ' if self.reason_key else ""
            return (
                f'Answer with a JSON object {reason}whose "{self.json_key}" field holds your answer, {what}.'
            )
        return f'{where[self.reasoning]} "{self.shape()}", {what}.'

    def request(self, scale: Scale) -> str:
        """:meth:`instruction` as a mitigation adds it: a format the template did not name allows text before
        it.

        A default format (``inferred=False``) says nothing about reasoning, so the added
        request asks for the answer as the final line rather than for the answer alone.
        """
        fmt = self if self.inferred or self.reasoning != "none" else self.with_reasoning("before")
        return fmt.instruction(scale)

    def for_criterion(self, name: str, others: Sequence[str] = ()) -> AnswerFormat:
        """A copy whose answer line names criterion ``name`` where it named one of ``others``.

        A multi-criterion template's answer stub names its first criterion ("Coherence: N");
        the call that scores only fluency answers "Fluency: N". Other lines are kept. A stub the
        template ends with ("- Coherence:") is renamed with the line; the prompt's last line must
        then be renamed too (:meth:`~mitigate.prompt.JudgePrompt.with_answer_format` does it).
        """
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
                # a stub holds the label too: the template's last line is renamed with it
                # (JudgePrompt.with_answer_format)
                stub = pattern.sub(label, self.stub, count=1) if self.stub else ""
                return self.model_copy(update={"line": head + VALUE + tail, "stub": stub})
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

    def cues(self) -> tuple[str, ...]:
        """Words in the answer line that mark a score ("Coherence" of "Coherence: N"), for the general
        parser."""
        return self.reader().line_cues

    # ------------------------------------------------------------------ reading
    def reader(self) -> FormatReader:
        """How an answer in this format is read (:class:`~mitigate.parse._format_reader.FormatReader`, built
        once per format)."""
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
        """The score (or verdict) in a judge's answer ``text``; :class:`ParseError` when there is none or it
        is ambiguous.

        The verdict is the judge's own final statement in this format. ``echoes`` are lines of
        the prompt (its scoring options) that a judge may copy into its answer; such copied
        lines are not answers. ``cues`` are extra words that mark a score for the general parser
        (the criterion's name: "Fluency: 3"). ``quoted`` are the texts the judge was shown (the
        rendered prompt) and ``judged`` the texts under judgment: what the answer reports from a
        third party or quotes back from them is never read as the judge's own
        (:func:`~mitigate.parse._quoted.unquote`), and an answer that gives its own value and also,
        bare, a different one a judged text holds is a failure, never the judged text's value.
        """
        return _reader(self).read(text, scale, echoes=echoes, cues=cues, quoted=quoted, judged=judged)

    def read_json(self, text: str, scale: Scale) -> float | Verdict:
        """Read an answer that a backend returned as the JSON object of :meth:`json_schema` (strictly)."""
        return _reader(self).read_json(text, scale)

    # ------------------------------------------------------------------ constraints
    def constraint(
        self, scale: Scale, mode: ConstraintMode = "format", *, max_tokens: int | None = None
    ) -> AnswerConstraint:
        """The answer as an :class:`AnswerConstraint`: GBNF, regex and JSON schema of the same shape
        (see :func:`answer_constraint`)."""
        return answer_constraint(self, scale, mode, max_tokens=max_tokens)

    def json_schema(self, scale: Scale) -> dict[str, Any]:
        """The answer as a JSON object: an explanation field first when the format reasons first, then the
        value."""
        return json_schema(self, scale)


@functools.lru_cache(maxsize=256)  # one reader per format: its patterns are compiled once, not per answer
def _reader(fmt: AnswerFormat) -> FormatReader:
    return FormatReader(fmt, fmt.describe())


# ------------------------------------------------------------------ the format as a backend constraint
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


def answer_constraint(
    fmt: AnswerFormat, scale: Scale, mode: ConstraintMode = "format", *, max_tokens: int | None = None
) -> AnswerConstraint:
    """The answer as an :class:`AnswerConstraint`: GBNF, regex and JSON schema of the same shape.

    Every grammar is bounded, so a small model cannot loop before it reaches its answer:

    - ``reasoning="before"``: a reasoning part of at least 32 and at most
      :func:`reasoning_budget` characters (two lines at most, starting with a letter, and holding none of the
      answer line's
      brackets ``[`` ``<`` ``{``, so an answer marker cannot be repeated inside it:
      ``[[A]] [[B]] ...`` or ``[RESULT] 5 [RESULT] 5``), then the answer line, then the end;
    - ``"after"``: the answer line first, then at most one capped line of explanation;
    - ``"none"``: the answer line alone.

    With a stub (the template's last line is the start of the answer line, "- Fluency (1-3):"),
    the answer line is only its rest, after at most one space ("3", " [[3]]"); after reasoning
    the final line is the whole line, the stub repeated and completed.

    ``max_tokens`` (the request's token limit) sets the reasoning budget so that the
    answer line always fits within it: a character is at least one token's worth of
    text, so a budget of ``max_tokens - 48`` characters leaves room for the answer.
    """
    values = fmt.values(scale)
    budget = reasoning_budget(max_tokens)
    if fmt.two_scores:
        value_g = f'({_gbnf_alts(values)}) " " ({_gbnf_alts(values)})'
        value_r = f"(?:{_regex_alts(values)}) (?:{_regex_alts(values)})"
        answer_g, answer_r = value_g, value_r
    elif fmt.json_key is not None:
        shown = [json.dumps(v) if fmt.kind != "score" else v for v in values]
        head = "{" + (f'"{fmt.reason_key}": "' if fmt.reason_key else "")
        mid = f'", "{fmt.json_key}": ' if fmt.reason_key else f'"{fmt.json_key}": '
        text_g = f'[^"\\\\\\n]{{0,{budget}}}'
        reason_g = " " + text_g + " " if fmt.reason_key else " "
        reason_r = f'[^"\\\\\\n]{{0,{budget}}}' if fmt.reason_key else ""
        answer_g = (
            _gbnf_lit(head) + reason_g + _gbnf_lit(mid) + " (" + _gbnf_alts(shown) + ") " + _gbnf_lit("}")
        )
        answer_r = (
            re.escape(head) + reason_r + re.escape(mid) + "(?:" + _regex_alts(shown) + ")" + re.escape("}")
        )
    else:
        head, tail = fmt.line.split(VALUE, 1)
        answer_g = " ".join(p for p in (_gbnf_lit(head), f"({_gbnf_alts(values)})", _gbnf_lit(tail)) if p)
        answer_r = re.escape(head) + f"(?:{_regex_alts(values)})" + re.escape(tail)
        if fmt.stub and fmt.reasoning != "before":
            # the template wrote the line's start: only its rest is generated, after at most one space
            head = fmt.continuation.split(VALUE, 1)[0].lstrip()
            answer_g = " ".join(
                p for p in ('" "?', _gbnf_lit(head), f"({_gbnf_alts(values)})", _gbnf_lit(tail)) if p
            )
            answer_r = "[ ]?" + re.escape(head) + f"(?:{_regex_alts(values)})" + re.escape(tail)
    if fmt.reasoning == "before" and fmt.json_key is None:
        sep = "\n" if not fmt.line.startswith("[RESULT]") else " "
        sep_r = "\\n" if sep == "\n" else " "
        banned = "".join(
            ch
            for ch in "[<{"
            if ch in fmt.line.split(VALUE, 1)[0] or (fmt.kind == "pairwise" and ch == "[" and "[" in fmt.line)
        )
        cls_g = "[^\\n" + "".join("\\" + ch if ch in "[]" else ch for ch in banned) + "]"
        cls_r = "[^\\n" + "".join(re.escape(ch) for ch in banned) + "]"
        per_line = max(1, budget // 2)
        least = min(_REASON_MIN - 1, per_line)  # the asked-for reasoning is written, not a bare "Rating: 9"
        gbnf = (
            f"root ::= reason {_gbnf_lit(sep)} answer\n"
            f'reason ::= [A-Za-z] {cls_g}{{{least},{per_line}}} ("\\n" {cls_g}{{0,{per_line}}})?\n'
            f"answer ::= {answer_g}\n"
        )
        regex = f"[A-Za-z]{cls_r}{{{least},{per_line}}}(?:\\n{cls_r}{{0,{per_line}}})?{sep_r}{answer_r}"
    elif fmt.reasoning == "after" and fmt.json_key is None:
        gbnf = f'root ::= answer ("\\n" [^\\n]{{0,{budget}}})?\nanswer ::= {answer_g}\n'
        regex = f"{answer_r}(?:\\n[^\\n]{{0,{budget}}})?"
    else:
        gbnf = f"root ::= {answer_g}\n"
        regex = answer_r
    return AnswerConstraint(
        mode=mode,
        gbnf=gbnf,
        regex=regex,
        json_schema=json_schema(fmt, scale),
        name="judge_answer",
        describe=fmt.describe(),
    )


def json_schema(fmt: AnswerFormat, scale: Scale) -> dict[str, Any]:
    """The answer as a JSON object: an explanation field first when the format reasons first, then the
    value."""
    values = fmt.values(scale)
    key = fmt.json_key or (
        "verdict" if fmt.kind == "pairwise" else "answer" if fmt.kind == "mcq" else "score"
    )
    props: dict[str, Any] = {}
    reason = fmt.reason_key or ("reasoning" if fmt.reasoning != "none" else None)
    if reason is not None:
        props[reason] = {"type": "string"}
    if fmt.two_scores:
        props["score_1"] = {"enum": [float(v) if "." in v else int(v) for v in values]}
        props["score_2"] = {"enum": [float(v) if "." in v else int(v) for v in values]}
    elif fmt.kind == "score":
        props[key] = {"enum": [float(v) if "." in v else int(v) for v in values]}
    else:
        props[key] = {"type": "string", "enum": values}
    return {"type": "object", "properties": props, "required": list(props), "additionalProperties": False}


def _gbnf_lit(text: str) -> str:
    """A GBNF string literal for ``text`` (empty text gives '')."""
    if not text:
        return ""
    return json.dumps(text, ensure_ascii=False)


def _gbnf_alts(values: Sequence[str]) -> str:
    return " | ".join(_gbnf_lit(v) for v in sorted(values, key=len, reverse=True))


def _regex_alts(values: Sequence[str]) -> str:
    return "|".join(re.escape(v) for v in sorted(values, key=len, reverse=True))
