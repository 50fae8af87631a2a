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
  text, with the format's labels and cues (:class:`~mitigate.parse.format_reader.FormatReader`,
  built once per format). Ambiguity stays a :class:`~mitigate.errors.ParseError`.
- **demonstrations** (:meth:`AnswerFormat.render`): how a demo shows its gold answer.
- **instructions** (:meth:`AnswerFormat.instruction`): one sentence asking for the format,
  for mitigations that add an answer request (chain of thought, granularity, "rate only").
- **constrained decoding** (:meth:`AnswerFormat.constraint`, built by :mod:`.constraint`): the
  same answer as a llama.cpp grammar, a regular expression and a JSON schema
  (:class:`~mitigate.lm.constraint.AnswerConstraint`). With reasoning, only the final answer
  line is constrained.

:func:`~mitigate.prompt.answer.infer.infer_answer_format` recovers the format from a template's
text; explicit arguments to :meth:`~mitigate.prompt.JudgePrompt.from_template` override what it finds.

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

from mitigate.errors import ConfigError, TemplateError
from mitigate.lm.constraint import AnswerConstraint, ConstraintMode
from mitigate.parse.answer_line import VALUE
from mitigate.parse.common import Verdict
from mitigate.parse.format_reader import FormatReader
from mitigate.prompt.answer import constraint as _constraint
from mitigate.scale import Scale

__all__ = ["DEFAULT_SCORE_LINE", "VALUE", "AnswerFormat", "AnswerKind", "Reasoning"]

AnswerKind = Literal["score", "mcq", "pairwise"]
Reasoning = Literal["none", "before", "after"]

DEFAULT_SCORE_LINE = "Score: {value}"
"""The answer line a prompt gets when its template names none (what mitigate's own prompts ask for)."""


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
        if self.kind == "pairwise" and len({x if self.case_sensitive else x.lower()
                                            for x in self.labels}) != 2:
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

    @property
    def is_default_score_line(self) -> bool:
        """True for the plain "Score: N" line (what mitigate's built-in prompts and mitigations ask for)."""
        return self.kind == "score" and self.json_key is None and self.line == DEFAULT_SCORE_LINE

    # ------------------------------------------------------------------ text
    def describe(self) -> str:
        """A short human description, e.g. '"[RESULT] N" after reasoning' (for inspect and errors)."""
        shape = self.shape()
        where = {"none": "alone", "before": "after reasoning",
                 "after": "first, then reasoning"}[self.reasoning]
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
                    raise ConfigError("this pairwise format has no tie label; cannot show a tie in "
                                      f"{self.describe()}")
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
        where = {"none": "Answer with only", "before": "End your answer with a final line",
                 "after": "Start your answer with a line"}
        if self.two_scores:
            a, b = self.labels
            return (f'{where[self.reasoning]} "N1 N2": two scores from {scale.describe()}, N1 for '
                    f'output {a!r} '
                    f"and N2 for output {b!r}.")
        if self.kind == "pairwise":
            a, b = self.labels
            options = f"{a!r} or {b!r}" + (f" (or {self.tie!r} for a tie)" if self.tie else "")
            if self.relations:
                options = f"one of {a}>>{b}, {a}>{b}, {a}={b}, {b}>{a}, {b}>>{a}"
            what, noun, choices = f"with X being {options}", "your verdict", options
        elif self.kind == "mcq":
            what, noun, choices = (f"with X one of the option letters {scale.describe()}",
                                   "the option letter",
                                   f"one of {scale.describe()}")
        else:
            what, noun, choices = (f"with N a score from {scale.describe()}", "the score",
                                   f"from {scale.describe()}")
        if self.json_key is None and self.line.strip() == VALUE:
            # a bare answer line ("4", "A"): quoting it as "X" would read as a literal; name what goes on it
            bare = {"none": f"Answer with only {noun}",
                    "before": f"End your answer with a final line holding only {noun}",
                    "after": f"Start your answer with a line holding only {noun}"}
            return f"{bare[self.reasoning]}, {choices}."
        if self.json_key is not None:
            reason = f'whose "{self.reason_key}" field holds your reasoning and ' if self.reason_key else ""
            return (f'Answer with a JSON object {reason}whose "{self.json_key}" field holds your '
                    f'answer, {what}.')
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

    def cues(self) -> tuple[str, ...]:
        """Words in the answer line that mark a score ("Coherence" of "Coherence: N"), for the general
        parser."""
        return self.reader().line_cues

    # ------------------------------------------------------------------ reading
    def reader(self) -> FormatReader:
        """How an answer in this format is read (:class:`~mitigate.parse.format_reader.FormatReader`, built
        once
        per format)."""
        return _reader(self)

    def read(self, text: str, scale: Scale, *, echoes: Sequence[str] = (), cues: Sequence[str] = (),
             quoted: Sequence[str] = (), judged: Sequence[str] = ()) -> float | Verdict:
        """The score (or verdict) in a judge's answer ``text``; :class:`ParseError` when there is none or it
        is ambiguous.

        The verdict is the judge's own final statement in this format. ``echoes`` are lines of
        the prompt (its scoring options) that a judge may copy into its answer; such copied
        lines are not answers. ``cues`` are extra words that mark a score for the general parser
        (the criterion's name: "Fluency: 3"). ``quoted`` are the texts the judge was shown (the
        rendered prompt) and ``judged`` the texts under judgment: what the answer reports from a
        third party or quotes back from them is never read as the judge's own
        (:func:`~mitigate.parse.quoted.unquote`), and an answer that gives its own value and also,
        bare, a different one a judged text holds is a failure, never the judged text's value.
        """
        return _reader(self).read(text, scale, echoes=echoes, cues=cues, quoted=quoted, judged=judged)

    def read_json(self, text: str, scale: Scale) -> float | Verdict:
        """Read an answer that a backend returned as the JSON object of :meth:`json_schema` (strictly)."""
        return _reader(self).read_json(text, scale)

    # ------------------------------------------------------------------ constraints
    def constraint(self, scale: Scale, mode: ConstraintMode = "format", *,
                   max_tokens: int | None = None) -> AnswerConstraint:
        """The answer as an :class:`AnswerConstraint`: GBNF, regex and JSON schema of the same shape
        (see :func:`mitigate.prompt.answer.constraint.answer_constraint`)."""
        return _constraint.answer_constraint(self, scale, mode, max_tokens=max_tokens)

    def json_schema(self, scale: Scale) -> dict[str, Any]:
        """The answer as a JSON object: an explanation field first when the format reasons first, then the
        value."""
        return _constraint.json_schema(self, scale)


@functools.lru_cache(maxsize=256)  # one reader per format: its patterns are compiled once, not per answer
def _reader(fmt: AnswerFormat) -> FormatReader:
    return FormatReader(fmt, fmt.describe())
