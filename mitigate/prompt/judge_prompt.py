"""The judge prompt as a structured, frozen value.

:meth:`JudgePrompt.from_template` takes a judge prompt as it was published (a G-Eval style
text, a system + user pair, a ChatML or Llama-3 chat text, ``{{slot}}``, ``{slot}`` or Jinja
placeholders; see :mod:`mitigate.prompt.template_syntax`) and recovers its structure — task
description, criterion (name, definition), scale, the scoring guideline as separate
:class:`ScoreOption` lines, whether it compares two outputs and how it names them, and the
answer format it prescribes (:class:`~mitigate.prompt.answer_format.AnswerFormat`) — so that
transforms can reorder or lengthen options and insert demonstrations, and answers are read
in the template's own format. Rendering a parsed prompt with no transforms reproduces the
original text exactly (:meth:`JudgePrompt.template_source`). :func:`read_prompt` also returns
the evidence for each recovered field (what ``mitigate prompts inspect`` prints).

Slots are filled in a single pass: the judged text is inserted verbatim and never scanned
again, so braces or a "Score: 10" inside it cannot break templating. Demonstrations are
inserted the same way, after the slots are filled: a demo whose text holds ``{{summary}}``
shows those characters, never the current item's summary.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from mitigate.data.schema import Item
from mitigate.errors import DataError, MitigateError, TemplateError
from mitigate.lm.base import Message, Role
from mitigate.parse.answers import Verdict
from mitigate.prompt.answer_format import AnswerFormat, AnswerKind, infer_answer_format
from mitigate.prompt.template_reader import (
    OUTPUT_SLOT_NAMES,
    choose_scale,
    find_criterion,
    find_pair,
    find_scales,
    guess_output_slot,
    pair_labels,
)
from mitigate.prompt.template_syntax import DOUBLE_SLOT_RE, TemplateSource, placeholder_hint, read_template
from mitigate.scale import Scale

SLOT_RE = DOUBLE_SLOT_RE
"""A template slot in canonical form: ``{{name}}``."""

GUIDELINE_MARK = "\x00guideline\x00"
"""Where the guideline block stood in a parsed template (internal; never reaches an LM)."""

__all__ = ["OUTPUT_SLOT_NAMES", "Criterion", "Demo", "Guideline", "JudgePrompt", "PromptMessage", "ScoreOption",
           "describe_template", "read_prompt"]

DEMOS_MARK = "\x00demos\x00"
"""Where the demos block goes while slots are filled (internal; demos are inserted verbatim after)."""

_WORD_NUMBERS = {
    "zero": 0, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7,
    "eight": 8, "nine": 9, "ten": 10,
}

# Guideline lines: "Score 2 means ...", "Score 2: ...", "- A score of 2 means ...", "score2_description: ...",
# "- 5: ...", "5 - ...", "A: ... Score: One.", "(A) ..."
_OPT_SCORE_WORD = re.compile(
    r"^(?P<head>\s*(?:[-*•]\s*)?(?:(?:an?\s+)?(?:score|rating|point)s?\s+(?:of\s+)?(?P<num>\d+(?:\.\d+)?)"
    r"\s*(?:means|indicates|=|:|-|–|—|\))|\"?score(?P<num2>\d+)_description\"?\s*:)\s*)"
    r"(?P<desc>\S.*?)(?P<tail>\s*)$",
    re.IGNORECASE,
)
_OPT_NUMBER = re.compile(
    r"^(?P<head>\s*(?:[-*•]\s*)?\(?(?P<num>\d+(?:\.\d+)?)\)?\s*(?::|-|–|—|=|\))\s*)(?P<desc>\S.*?)(?P<tail>\s*)$"
)
_OPT_LETTER = re.compile(
    r"^(?P<head>\s*(?:[-*•]\s*)?\(?(?P<letter>[A-J])\)?\s*[:.)]\s*)(?P<desc>\S.*?)"
    r"(?P<tail>\s*(?:score|points?)\s*[:=]?\s*(?P<num>\d+|[A-Za-z]+)\s*\.?\s*)$",
    re.IGNORECASE,
)
_OPT_LETTER_PLAIN = re.compile(
    r"^(?P<head>\s*(?:[-*•]\s*)?\((?P<letter>[A-J])\)\s+)(?P<desc>\S.*?)(?P<tail>\s*)$"
)
_NO_OPTION_HEADERS = re.compile(r"\b(steps?|instructions?|procedure)\b", re.IGNORECASE)


class Criterion(BaseModel):
    """One thing a judge scores: its name, what it means, and optionally its own guideline."""

    model_config = ConfigDict(frozen=True, extra="forbid")
    name: str
    definition: str = ""

    @model_validator(mode="after")
    def _check(self) -> Criterion:
        if not self.name.strip():
            raise TemplateError("a criterion needs a non-empty name; got an empty string")
        return self


class ScoreOption(BaseModel):
    """One line of a scoring guideline: what a given score means.

    The line renders as ``head + description + tail`` so a lengthened description keeps
    the original formatting. ``position`` is the option's index in the original guideline
    (kept through reorderings so answers can be mapped back). ``score`` is None for a
    lettered option whose score the template does not state (AutoEvals' "(A) ..." choices);
    pass ``letters={...}`` to :meth:`JudgePrompt.from_template` to score them.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")
    label: str
    score: float | None
    description: str
    head: str = ""
    tail: str = ""
    position: int = 0

    @property
    def text(self) -> str:
        """The line as it appears in the prompt."""
        return f"{self.head}{self.description}{self.tail}"

    def with_description(self, description: str) -> ScoreOption:
        """A copy whose description is replaced (e.g. lengthened); returns a new option."""
        return self.model_copy(update={"description": description})


class Guideline(BaseModel):
    """The ordered score options and the exact text that separated them in the template."""

    model_config = ConfigDict(frozen=True, extra="forbid")
    options: tuple[ScoreOption, ...]
    separators: tuple[str, ...] = ()

    @model_validator(mode="after")
    def _check(self) -> Guideline:
        if len(self.options) < 2:
            raise TemplateError(f"a guideline needs at least 2 options; got {len(self.options)}")
        if self.separators and len(self.separators) != len(self.options) - 1:
            raise TemplateError(
                f"a guideline with {len(self.options)} options needs {len(self.options) - 1} separators; "
                f"got {len(self.separators)}"
            )
        return self

    def render(self) -> str:
        """The guideline text: options in their current order, original separators in place."""
        seps = self.separators or ("\n",) * (len(self.options) - 1)
        out = [self.options[0].text]
        for sep, opt in zip(seps, self.options[1:], strict=True):
            out.append(sep)
            out.append(opt.text)
        return "".join(out)

    def reordered(self, order: Sequence[int]) -> Guideline:
        """A copy with options in ``order`` (indices into the current tuple); separators stay put."""
        if sorted(order) != list(range(len(self.options))):
            raise TemplateError(
                f"expected a permutation of 0..{len(self.options) - 1}; got {list(order)}"
            )
        return self.model_copy(update={"options": tuple(self.options[i] for i in order)})


class Demo(BaseModel):
    """A worked example shown to the judge: an item and its gold score (and optional reason).

    ``guideline`` lets a demo be shown under its own (e.g. perturbed) guideline, as in
    Ghazarian et al.'s perturbed-guideline demonstrations. A demo for a pairwise prompt
    shows a pairwise item (``output`` and ``output_b``) and its gold ``verdict`` ("first",
    "second" or "tie") instead of a score.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")
    item: Item
    score: float | dict[str, float] | None = None
    reason: str | None = None
    guideline: Guideline | None = None
    verdict: Verdict | None = None

    @model_validator(mode="after")
    def _check(self) -> Demo:
        if (self.score is None) == (self.verdict is None):
            raise TemplateError(
                f"a demo shows either a gold score or (for a pairwise prompt) a gold verdict; demo {self.item.id!r} "
                f"got {'both' if self.score is not None else 'neither'}"
            )
        if self.verdict is not None and self.item.output_b is None:
            raise TemplateError(
                f"a demo with a verdict compares two outputs; expected item {self.item.id!r} to have output_b, got None"
            )
        return self

    @classmethod
    def from_item(
        cls,
        item: Item,
        criterion: str,
        reason: str | None = None,
        *,
        human_scale: Scale | None = None,
        prompt_scale: Scale | None = None,
    ) -> Demo:
        """A demo showing ``item`` with its human score for ``criterion``.

        When both scales are given the human score is mapped linearly from ``human_scale``
        onto ``prompt_scale`` (e.g. a WebNLG 0–100 rating shown to a 1–5 judge) and rounded
        to the prompt scale's step, so the demo answers the way the judge is asked to.
        """
        if criterion not in item.human:
            raise DataError(
                f"item {item.id!r} has no human score for {criterion!r}; expected one of {sorted(item.human)}",
                item_id=item.id,
            )
        score = item.human[criterion]
        if human_scale is not None and prompt_scale is not None and human_scale != prompt_scale:
            score = prompt_scale.snap(prompt_scale.min + human_scale.normalise(score) * (prompt_scale.max - prompt_scale.min))
        return cls(item=item, score=score, reason=reason)


DEFAULT_DEMO_TEMPLATE = "{inputs}{output_name}: {output}\n{guideline}{reason}{criterion}: {score}"
"""How a demonstration is shown by default: its inputs, the judged text, then "<Criterion> score: N"."""
_OWN_FORMAT_DEMO_TEMPLATE = "{inputs}{output_name}: {output}\n{guideline}{reason}{score}"


class PromptMessage(BaseModel):
    """One message of a prompt template (role + text with ``{{slots}}``)."""

    model_config = ConfigDict(frozen=True, extra="forbid")
    role: Role
    template: str


Layout = Literal["invariant_first", "as_written"]


class JudgePrompt(BaseModel):
    """A judge prompt: message templates plus the structure recovered from them.

    - ``messages``: the templates (slots as ``{{name}}``); a parsed guideline is replaced by
      an internal mark and rendered from ``guideline`` so transforms can change it.
    - ``task``: the task description (first paragraph of the instructions).
    - ``criteria``: what is scored (one for a G-Eval prompt; several for a multi-attribute one).
    - ``scale``: the answer scale.
    - ``answer_format``: how the template asks the judge to answer (see
      :class:`~mitigate.prompt.answer_format.AnswerFormat`), the default "Score: N" line when
      the template names none. It alone holds the answer kind (:attr:`answer`): "score" (a
      number), "mcq" (a letter mapped by ``scale.letters``) or "pairwise" (a verdict).
    - ``output_slot``: the slot holding the judged text; ``slot_fields`` maps other slot
      names to item fields when they differ (e.g. ``{"Document": "source"}``; the second
      text of a pairwise template maps to ``output_b``).
    - ``demos``: demonstrations, rendered with ``demo_template`` and inserted before the
      first paragraph that holds an item slot (layout "invariant_first", so instructions and
      demos form a prefix shared by every item) or right after the guideline ("as_written").
    - ``source``: how the template was written (chat markup, placeholder syntax), to write
      it back exactly (:meth:`template_source`).
    """

    model_config = ConfigDict(frozen=True, extra="forbid")
    messages: tuple[PromptMessage, ...]
    task: str = ""
    criteria: tuple[Criterion, ...] = ()
    scale: Scale = Field(default_factory=Scale)
    answer_format: AnswerFormat = Field(default_factory=AnswerFormat.default)
    guideline: Guideline | None = None
    output_slot: str = "output"
    slot_fields: dict[str, str] = Field(default_factory=dict)
    demos: tuple[Demo, ...] = ()
    demo_template: str = "{inputs}{output_name}: {output}\n{guideline}{reason}{criterion}: {score}"  # DEFAULT_DEMO_TEMPLATE
    demo_header: str = "Examples:\n\n"
    demo_separator: str = "\n\n"
    layout: Layout = "invariant_first"
    source: TemplateSource | None = None

    @model_validator(mode="after")
    def _check(self) -> JudgePrompt:
        if not self.messages:
            raise TemplateError("a judge prompt needs at least one message; got none")
        found = self.slots()
        if self.output_slot not in found:
            raise TemplateError(
                f"expected a slot {{{{{self.output_slot}}}}} for the judged text in the template; "
                f"found slots {sorted(found) or 'none'}",
            )
        marks = sum(m.template.count(GUIDELINE_MARK) for m in self.messages)
        if (self.guideline is None) != (marks == 0) or marks > 1:
            raise TemplateError(
                f"expected one guideline mark when a guideline is set and none otherwise; got {marks} mark(s) "
                f"and guideline={'set' if self.guideline else 'None'}"
            )
        return self

    @property
    def answer(self) -> AnswerKind:
        """The answer kind ("score", "mcq" or "pairwise"), read from :attr:`answer_format` (its sole owner)."""
        return self.answer_format.kind

    @property
    def format(self) -> AnswerFormat:
        """The answer format in force (:attr:`answer_format`)."""
        return self.answer_format

    def with_answer_format(self, answer_format: AnswerFormat) -> JudgePrompt:
        """A copy answering in ``answer_format`` (its kind becomes the prompt's ``answer``)."""
        return self.model_copy(update={"answer_format": answer_format})

    def answer_stub(self, index: int = -1) -> str:
        """The answer stub closing a message, the last by default ("###Feedback: ", "- Coherence:", "## Which is best, ...?").

        The short trailing lines after the message's last slot that end with ":" or "?" (with
        any whitespace after them): where the judge's answer starts. Text a mitigation adds to
        the prompt belongs before it. Empty when the template closes with an instruction.
        """
        template = self.messages[index].template
        slots = list(SLOT_RE.finditer(template))
        tail_start = slots[-1].end() if slots else 0
        tail = template[tail_start:]
        m = re.search(r"(?:\n[ \t]*(?:[-*#]+[ \t]*)?[^\n]{1,80}?[:?][ \t]*(?:\n[ \t]*)*)+\Z", tail)
        if m is None or GUIDELINE_MARK in m.group(0):
            return ""
        return tail[m.start():]

    def echo_lines(self) -> tuple[str, ...]:
        """The guideline's option descriptions: lines a judge may copy into its answer (not answers)."""
        if self.guideline is None:
            return ()
        return tuple(o.description for o in self.guideline.options)

    # ------------------------------------------------------------------ building
    @classmethod
    def from_template(
        cls,
        text: str,
        *,
        system: str | None = None,
        scale: Scale | tuple[float, float] | None = None,
        criterion: str | Criterion | None = None,
        criteria: Sequence[str | Criterion] | None = None,
        output_slot: str | None = None,
        slot_fields: Mapping[str, str] | None = None,
        answer: Literal["score", "mcq", "pairwise"] | None = None,
        parse_guideline: bool = True,
        constants: Mapping[str, Any] | None = None,
        labels: tuple[str, str] | None = None,
        tie: str | None = None,
        letters: Mapping[str, float] | None = None,
        answer_format: AnswerFormat | None = None,
    ) -> JudgePrompt:
        """Recover a :class:`JudgePrompt` from a judge template as it was published.

        ``text`` is the template (the user message, or a chat text in ChatML / Llama-3 /
        "Human:" markup); ``system`` an optional system message. Placeholders may be
        ``{{x}}``, ``{x}`` or Jinja (rendered with ``constants``, which also fill slots that
        are the same for every item, such as a rubric). Every other argument overrides what
        is recovered from the text: ``scale``, ``criterion``/``criteria``, ``output_slot``,
        ``slot_fields``, ``answer`` ("score", "mcq", "pairwise"), ``labels`` (how a pairwise
        prompt names its two outputs) and ``tie``, ``letters`` (scores of lettered options)
        and ``answer_format``. Guideline lines ("Score 2 means ...", "5: ...", "- A score of
        1 means ...", "score1_description: ...", "A: ... Score: One.", "(A) ...") become
        separate options when ``parse_guideline`` is True. :func:`read_prompt` does the
        same and also returns the evidence for what was recovered.
        """
        return read_prompt(
            text, system=system, scale=scale, criterion=criterion, criteria=criteria, output_slot=output_slot,
            slot_fields=slot_fields, answer=answer, parse_guideline=parse_guideline, constants=constants,
            labels=labels, tie=tie, letters=letters, answer_format=answer_format,
        )[0]

    # ------------------------------------------------------------------ transforms (each returns a copy)
    def with_guideline(self, guideline: Guideline) -> JudgePrompt:
        """A copy with another guideline (same mark); the prompt must have had one."""
        if self.guideline is None:
            raise TemplateError("this prompt has no parsed guideline to replace; expected one from from_template")
        return self.model_copy(update={"guideline": guideline})

    def with_demos(self, demos: Sequence[Demo]) -> JudgePrompt:
        """A copy with ``demos`` (replacing any demos it had).

        TemplateError when a demo cannot answer like this prompt: a pairwise prompt needs
        demos with a gold ``verdict``, a scoring prompt demos with a gold ``score``.
        """
        for demo in demos:
            _check_demo_fits(demo, self)
        return self.model_copy(update={"demos": tuple(demos)})

    def with_layout(self, layout: Layout) -> JudgePrompt:
        """A copy with another demo layout."""
        return self.model_copy(update={"layout": layout})

    def with_criteria(self, criteria: Sequence[Criterion]) -> JudgePrompt:
        """A copy scoring ``criteria``."""
        return self.model_copy(update={"criteria": tuple(criteria)})

    def with_scale(self, scale: Scale) -> JudgePrompt:
        """A copy on another answer scale."""
        return self.model_copy(update={"scale": scale})

    def map_templates(self, fn: Callable[[PromptMessage], PromptMessage]) -> JudgePrompt:
        """A copy with every message template passed through ``fn``."""
        return self.model_copy(update={"messages": tuple(fn(m) for m in self.messages)})

    # ------------------------------------------------------------------ rendering
    def slots(self) -> set[str]:
        """Names of every ``{{slot}}`` in the templates."""
        return {s for m in self.messages for s in _slot_names(m.template)}

    def template_text(self) -> list[str]:
        """The templates with the guideline put back (slots unfilled, as ``{{name}}``), one per message."""
        gl = self.guideline.render() if self.guideline else ""
        return [m.template.replace(GUIDELINE_MARK, gl) for m in self.messages]

    def template_source(self) -> str:
        """The whole template written back as it was given: chat markup, placeholder syntax and all.

        For an unchanged prompt this is the exact text :meth:`from_template` read (after
        Jinja rendering and constants, which happen once). Without a recorded source (a
        prompt built by hand) the messages are joined with blank lines.
        """
        texts = self.template_text()
        if self.source is None:
            return "\n\n".join(texts)
        return self.source.restore(texts)

    def render(self, item: Item) -> tuple[Message, ...]:
        """Chat messages for judging ``item``: guideline, demos and slots filled in one pass."""
        guideline_text = self.guideline.render() if self.guideline else ""
        demos_text = self.render_demos()
        placed = not demos_text
        out: list[Message] = []
        for m in self.messages:
            template = m.template.replace(GUIDELINE_MARK, guideline_text)
            if not placed:
                template, placed = _insert_demos(template, DEMOS_MARK, self.layout, guideline_text)
            # demos are texts like the judged one: inserted verbatim after the slots are filled, never templated
            content = demos_text.join(self._fill(part, item) for part in template.split(DEMOS_MARK))
            out.append(Message(role=m.role, content=content))
        if not placed:  # no slot paragraph found anywhere: demos go before the last message's text
            last = out[-1]
            out[-1] = Message(role=last.role, content=demos_text + self.demo_separator + last.content)
        return tuple(out)

    def render_demos(self) -> str:
        """The demonstrations block (empty when there are none)."""
        if not self.demos:
            return ""
        if self.answer == "pairwise":
            return self.demo_header + self.demo_separator.join(self._pairwise_demo(d) for d in self.demos)
        crit_name = self.criteria[0].name if self.criteria else "score"
        score_label = "Score" if crit_name.lower() == "score" else f"{_title(crit_name)} score"
        if self.answer == "mcq" and self.scale.letters:
            score_label = "Answer"
        parts = []
        for demo in self.demos:
            _check_demo_fits(demo, self)
            assert demo.score is not None
            inputs = "".join(
                f"{_title(s)}: {value}\n"
                for s in self._input_slots()
                if (value := _lookup(demo.item, self._field_for(s))) is not None
            )
            label = score_label
            if isinstance(demo.score, dict) and len(self.criteria) > 1 and all(
                    c.name in demo.score for c in self.criteria):
                # a multi-criterion prompt answers one line per criterion: the demo answers the same way
                names = [c.name for c in self.criteria]
                label = answer_label(names[0])
                score_text = "\n".join([self._answer_text(demo.score[names[0]]),
                                        *(f"{answer_label(n)}: {self._answer_text(demo.score[n])}" for n in names[1:])])
            elif isinstance(demo.score, dict):
                score_text = ", ".join(f"{k}: {self._answer_text(v)}" for k, v in demo.score.items())
            else:
                score_text = self._answer_text(demo.score)
            template = self.demo_template
            fmt = self.format
            reason = f"Reason: {demo.reason}\n" if demo.reason else ""
            own_line = (fmt.inferred and not fmt.is_default_score_line and not fmt.two_scores
                        and (fmt.json_key is not None or fmt.line.strip() != VALUE_MARK))
            if own_line and template == DEFAULT_DEMO_TEMPLATE and not isinstance(demo.score, dict):
                # the template prescribes its own answer line ("[RESULT] 4", "Rating: [[4]]"): demos answer in it
                template = _OWN_FORMAT_DEMO_TEMPLATE
                score_text = fmt.render(demo.score, self.scale, reason=demo.reason)
                if fmt.json_key is not None and fmt.reason_key is not None:
                    reason = ""  # the reason is shown inside the JSON answer
            parts.append(
                template.format(
                    inputs=inputs,
                    output_name=_title(self.output_slot),
                    output=demo.item.output,
                    guideline=(f"Scoring guideline:\n{demo.guideline.render()}\n" if demo.guideline else ""),
                    reason=reason,
                    criterion=label,
                    score=score_text,
                )
            )
        return self.demo_header + self.demo_separator.join(parts)

    def _pairwise_demo(self, demo: Demo) -> str:
        """One pairwise demonstration: every slot in the template's order (the two outputs as the template places
        them), then the gold verdict in the prompt's answer format."""
        _check_demo_fits(demo, self)
        assert demo.verdict is not None
        fmt = self.format
        if fmt.two_scores:
            raise TemplateError(
                "this pairwise prompt answers with two scores (one per output), which a demo's verdict cannot show; "
                "expected a format naming the better output (e.g. [[A]] or Output (a))"
            )
        shown = []
        for slot in [self.output_slot, *self._input_slots()]:
            value = _lookup(demo.item, self._field_for(slot))
            if value is not None:
                shown.append((self._slot_position(slot), f"{_heading(slot)}: {value}\n"))
        fields = "".join(text for _, text in sorted(shown))
        answer = fmt.render(demo.verdict, self.scale)
        if fmt.line.strip() == VALUE_MARK:  # a bare label would read as a stray word: name it as a verdict
            answer = f"Verdict: {answer}"
        reason = f"Reason: {demo.reason}\n" if demo.reason else ""
        return f"{fields}{reason}{answer}"

    def _slot_position(self, slot: str) -> tuple[int, int]:
        """Where ``slot`` first appears: (message index, offset)."""
        for i, m in enumerate(self.messages):
            for found in SLOT_RE.finditer(m.template):
                if found.group(1).strip() == slot:
                    return i, found.start()
        return len(self.messages), 0

    def _answer_text(self, score: float) -> str:
        """How a gold score is written in a demo: the number, or for MCQ the nearest option's letter."""
        if self.answer == "mcq" and self.scale.letters:
            return min(self.scale.letters.items(), key=lambda kv: (abs(kv[1] - score), kv[0]))[0]
        return _fmt(score)

    def _input_slots(self) -> list[str]:
        """Slots other than the judged text, in order of first appearance."""
        seen: list[str] = []
        for m in self.messages:
            for name in _slot_names(m.template):
                if name != self.output_slot and name not in seen:
                    seen.append(name)
        return seen

    def _field_for(self, slot: str) -> str:
        if slot == self.output_slot:
            return "output"
        return self.slot_fields.get(slot, slot)

    def _fill(self, template: str, item: Item) -> str:
        def repl(match: re.Match[str]) -> str:
            name = match.group(1).strip()
            field = self._field_for(name)
            value = _lookup(item, field)
            if value is None:
                raise DataError(
                    f"slot {{{{{name}}}}} needs item field {field!r}; item {item.id!r} has "
                    f"{['output', *item.inputs]} (map it with slot_fields={{{name!r}: '<field>'}})",
                    item_id=item.id,
                )
            return value

        return SLOT_RE.sub(repl, template)

    def fingerprint(self) -> str:
        """A short digest of the prompt's content, for journals and replay keys."""
        import hashlib

        return hashlib.sha256(self.model_dump_json().encode()).hexdigest()[:16]


_FIELD_ALIASES: dict[str, tuple[str, ...]] = {
    "document": ("source", "article", "text"),
    "source": ("document", "article", "context"),
    "article": ("source", "document"),
    "context": ("dialogue", "source", "history"),
    "dialogue": ("context", "history"),
    "input": ("source", "document", "context", "triples"),
    "triples": ("input", "source", "data"),
    "data": ("triples", "input", "source"),
}


def _lookup(item: Item, field: str) -> str | None:
    """The item's text for ``field``, trying common aliases (document/source/article ...); None if absent."""
    for name in (field, *_FIELD_ALIASES.get(field.lower(), ())):
        try:
            return item.field(name)
        except DataError:
            continue
    return None


def field_text(item: Item, field: str) -> str | None:
    """The item's text for ``field`` as prompts read it (aliases such as document/source are tried); None if absent."""
    return _lookup(item, field)


def answer_label(name: str) -> str:
    """A criterion name as written in answer lines ("coherence" -> "Coherence"); parsing is case-insensitive."""
    return name[:1].upper() + name[1:]


def _title(name: str) -> str:
    return name.replace("_", " ").strip().capitalize()


def _heading(name: str) -> str:
    """A slot name as a heading that keeps its case ("response_B" -> "Response B", "output_1" -> "Output 1")."""
    text = name.replace("_", " ").strip()
    return text[:1].upper() + text[1:]


VALUE_MARK = "{value}"


def _check_demo_fits(demo: Demo, prompt: JudgePrompt) -> None:
    """TemplateError unless ``demo`` answers the way ``prompt`` does (a verdict for pairwise, else a score)."""
    if prompt.answer == "pairwise" and demo.verdict is None:
        raise TemplateError(
            f"a pairwise prompt's demos show a gold verdict; demo {demo.item.id!r} shows a score "
            f"({demo.score!r}): expected Demo(item=<item with output_b>, verdict='first'|'second'|'tie')"
        )
    if prompt.answer == "pairwise" and demo.guideline is not None:
        raise TemplateError(
            f"a pairwise prompt's demos show the two outputs and a verdict; demo {demo.item.id!r} carries a guideline "
            "of its own (guideline demos are for prompts that score one output): expected guideline=None"
        )
    if prompt.answer != "pairwise" and demo.score is None:
        raise TemplateError(
            f"a prompt answering {prompt.answer!r} shows demos with a gold score; demo {demo.item.id!r} shows the "
            f"verdict {demo.verdict!r}"
        )


def _fmt(v: float) -> str:
    return str(int(v)) if float(v).is_integer() else f"{v:g}"


def _slot_names(text: str) -> list[str]:
    return [m.group(1).strip() for m in SLOT_RE.finditer(text)]


def _as_criterion(c: str | Criterion) -> Criterion:
    return c if isinstance(c, Criterion) else Criterion(name=c)


def _first_paragraph(text: str) -> str:
    para = re.split(r"\n\s*\n", text.strip(), maxsplit=1)[0].strip()
    return "" if SLOT_RE.search(para) else para


def _insert_demos(template: str, demos: str, layout: Layout, guideline_text: str) -> tuple[str, bool]:
    """Place the demos block in one message template; returns (template, placed).

    "invariant_first" puts the block before the paragraph holding the first slot (a blank
    line, LF or CRLF, ends the paragraph before it); when that slot sits in the first
    paragraph, before the line holding it, or at the very start when it is on the first line.
    """
    newline = "\r\n" if "\r\n" in template else "\n"
    if layout == "as_written" and guideline_text and guideline_text in template:
        i = template.index(guideline_text) + len(guideline_text)
        return template[:i] + newline * 2 + demos + template[i:], True
    m = SLOT_RE.search(template)
    if m is None:
        return template, False
    breaks = list(re.finditer(r"\r?\n[ \t]*\r?\n", template[: m.start()]))
    if breaks:
        start = breaks[-1].end()
    else:
        line_start = template.rfind("\n", 0, m.start()) + 1
        start = line_start  # 0 when the slot is on the first line
    return template[:start] + demos + newline * 2 + template[start:], True


def _option_from_line(line: str, pattern: re.Pattern[str]) -> ScoreOption | None:
    m = pattern.match(line)
    if m is None:
        return None
    gd = m.groupdict()
    score: float | None
    if gd.get("letter"):
        num = gd.get("num")
        if num is None:  # "(A) ..." states no score
            score = None
        else:
            score = float(num) if num.isdigit() else _WORD_NUMBERS.get(num.lower())
            if score is None:
                return None
        label = gd["letter"]
    else:
        num = gd.get("num") or gd.get("num2")
        if num is None:
            return None
        score = float(num)
        label = num
    return ScoreOption(label=label, score=score, description=gd["desc"], head=gd["head"], tail=gd["tail"])


def _find_guideline(text: str, scale_hint: tuple[float, float] | None = None) -> tuple[int, int, Guideline] | None:
    """Locate a block of >= 2 consecutive guideline lines; returns (start, end, guideline).

    ``scale_hint`` is the scale the template states; plainly numbered lines ("(1) ...",
    "1: ...") are options only when they run from its minimum to its maximum, so numbered
    rules in a 0-9 rating prompt are not read as a 1-3 scale.
    """
    lines = text.splitlines(keepends=True)
    offsets = [0]
    for ln in lines:
        offsets.append(offsets[-1] + len(ln))
    for pattern in (_OPT_SCORE_WORD, _OPT_LETTER, _OPT_LETTER_PLAIN, _OPT_NUMBER):
        i = 0
        while i < len(lines):
            opt = _option_from_line(lines[i].rstrip("\r\n"), pattern)
            if opt is None:
                i += 1
                continue
            block: list[tuple[int, ScoreOption]] = [(i, opt)]
            j = i + 1
            while j < len(lines):
                if not lines[j].strip():  # allow blank lines between options
                    k = j
                    while k < len(lines) and not lines[k].strip():
                        k += 1
                    if k < len(lines) and _option_from_line(lines[k].rstrip("\r\n"), pattern):
                        j = k
                        continue
                    break
                nxt = _option_from_line(lines[j].rstrip("\r\n"), pattern)
                if nxt is None:
                    break
                block.append((j, nxt))
                j += 1
            if len(block) >= 2 and _plausible(block, pattern, lines, i, scale_hint):
                start = offsets[block[0][0]]
                last_line = lines[block[-1][0]]
                end = offsets[block[-1][0]] + len(last_line.rstrip("\r\n"))
                options = []
                separators = []
                for n, (ln_idx, o) in enumerate(block):
                    options.append(o.model_copy(update={"position": n}))
                    if n:
                        prev_idx = block[n - 1][0]
                        prev_end = offsets[prev_idx] + len(lines[prev_idx].rstrip("\r\n"))
                        separators.append(text[prev_end : offsets[ln_idx]])
                gl = Guideline(options=tuple(options), separators=tuple(separators))
                return start, end, gl
            i = j
    return None


def _plausible(
    block: list[tuple[int, ScoreOption]], pattern: re.Pattern[str], lines: list[str], first: int,
    scale_hint: tuple[float, float] | None = None,
) -> bool:
    """Guard against numbered instruction steps being read as score options."""
    if pattern is _OPT_LETTER_PLAIN:
        letters = [o.label for _, o in block]
        return letters == [chr(ord("A") + k) for k in range(len(letters))]
    scores = [o.score for _, o in block]
    if len(set(scores)) != len(scores) or any(s is None for s in scores):
        return False
    values = [float(s) for s in scores if s is not None]
    if pattern is _OPT_NUMBER:
        header = "".join(lines[max(0, first - 2) : first])
        if _NO_OPTION_HEADERS.search(header):
            return False
        # plain "N: ..." lines must cover a contiguous integer range
        ints = sorted(values)
        if any(s != int(s) for s in ints) or ints != list(range(int(ints[0]), int(ints[0]) + len(ints))):
            return False
        if scale_hint is not None and (min(ints), max(ints)) != tuple(scale_hint):
            return False
    elif scale_hint is not None and pattern is _OPT_SCORE_WORD:
        lo, hi = scale_hint
        if any(not lo <= v <= hi for v in values):
            return False
    return True


def demo_field_names(prompt: JudgePrompt) -> list[str]:
    """The item fields a demo for ``prompt`` must carry (its non-output slots)."""
    return [prompt._field_for(s) for s in prompt._input_slots()]


def prompt_from_spec(spec: Mapping[str, Any]) -> JudgePrompt:
    """Rebuild a prompt from ``model_dump()`` output."""
    return JudgePrompt.model_validate(dict(spec))


def _guess_labels(text: str) -> tuple[str, str] | None:
    """Pairwise labels named by the instructions when no heading labels the slots ("[[A]]", "Output (a)")."""
    for pattern, pair in (
        (r"\[\[\s*A\s*\]\]", ("A", "B")),
        (r"\bOutput\s*\(\s*a\s*\)", ("a", "b")),
        (r"(?<![\w`])`?m`?\s+or\s+`?M`?(?![\w`])", ("m", "M")),
        (r"\b(?:Response|Assistant|Output|Answer|Summary)\s+A\b", ("A", "B")),
        (r"\b(?:Response|Assistant|Output|Answer|Summary)\s*#?\s*1\b", ("1", "2")),
    ):
        if re.search(pattern, text):
            return pair
    return None


def read_prompt(
    text: str,
    *,
    system: str | None = None,
    scale: Scale | tuple[float, float] | None = None,
    criterion: str | Criterion | None = None,
    criteria: Sequence[str | Criterion] | None = None,
    output_slot: str | None = None,
    slot_fields: Mapping[str, str] | None = None,
    answer: Literal["score", "mcq", "pairwise"] | None = None,
    parse_guideline: bool = True,
    constants: Mapping[str, Any] | None = None,
    labels: tuple[str, str] | None = None,
    tie: str | None = None,
    letters: Mapping[str, float] | None = None,
    answer_format: AnswerFormat | None = None,
) -> tuple[JudgePrompt, list[str]]:
    """:meth:`JudgePrompt.from_template`, also returning one line of evidence per recovered field.

    The evidence says what was found and where ("scale 1-10 from 'on a scale of 1 to 10'"),
    what was given explicitly, and what fell back to a default, so a user can check a
    template before spending money on it (``mitigate prompts inspect FILE``).
    """
    if not isinstance(text, str):
        raise TemplateError(f"expected the prompt template as a str; got {type(text).__name__}")
    read = read_template(text, system, constants)
    source = read.source
    texts = [t for _, t in read.messages]
    joined = "\n\n".join(texts)
    all_slots = [s for t in texts for s in _slot_names(t)]
    fields = dict(slot_fields or {})
    evidence: list[str] = []
    roles = ", ".join(r for r, _ in read.messages)
    evidence.append(
        f"template: {source.syntax} placeholders"
        + (f", {source.markup} chat markup" if source.markup else "")
        + f"; messages: {roles}"
        + (f"; constants filled: {', '.join(source.constants)}" if source.constants else "")
    )

    # the judged text (and the second one of a pairwise template)
    pair = find_pair(all_slots) if answer in (None, "pairwise") and output_slot is None else None
    if answer == "pairwise" and pair is None and not (output_slot and any(f == "output_b" for f in fields.values())):
        raise TemplateError(
            "a pairwise prompt needs two slots for the judged texts (e.g. {{output_1}} and {{output_2}}, or "
            f"{{{{output}}}} and {{{{output_b}}}}); found slots {sorted(set(all_slots)) or 'none'}"
        )
    out_slot = output_slot or (pair[0] if pair else guess_output_slot(all_slots))
    if out_slot is None or out_slot not in all_slots:
        seen = sorted(set(all_slots))
        raise TemplateError(
            "expected a slot for the judged text, e.g. {{output}}, {{summary}} or {response}"
            + (f" (output_slot={output_slot!r})" if output_slot else "")
            + (f"; found slots {seen}, none of them a known judged-text name (pass output_slot=...)" if seen
               else f"; found no {{{{slot}}}} or {{slot}} placeholder (placeholder-like text seen: "
                    f"{placeholder_hint(text)})")
        )
    if pair is not None:
        fields.setdefault(pair[1], "output_b")
    inputs = [s for s in dict.fromkeys(all_slots) if s != out_slot]
    evidence.append(
        f"judged text: {{{{{out_slot}}}}}" + (f"; second judged text: {{{{{pair[1]}}}}} (item field output_b)"
                                              if pair else "")
        + (f"; other slots: {', '.join('{{' + s + '}}' for s in inputs if not pair or s != pair[1])}"
           if [s for s in inputs if not pair or s != pair[1]] else "")
    )

    # scale statements and criterion
    statements = find_scales(joined)
    found_crit = find_criterion(joined)
    stated = choose_scale(statements)
    explicit_scale = Scale.of(scale) if scale is not None else None
    hint = (explicit_scale.min, explicit_scale.max) if explicit_scale is not None else stated

    # guideline options
    guideline: Guideline | None = None
    templates = list(texts)
    if parse_guideline:
        for idx, t in enumerate(templates):
            located = _find_guideline(t, hint)
            if located is not None:
                start, end, gl = located
                guideline = gl
                templates[idx] = t[:start] + GUIDELINE_MARK + t[end:]
                break

    # what kind of answer
    letter_options = guideline is not None and all(o.label.isalpha() for o in guideline.options)
    kind: Literal["score", "mcq", "pairwise"] = answer or (
        "pairwise" if pair is not None else "mcq" if letter_options else "score")
    if answer_format is not None:
        kind = answer_format.kind

    # the scale
    final_scale: Scale | None = explicit_scale
    how_scale = "given" if explicit_scale is not None else ""
    if final_scale is None and stated is not None:
        final_scale = Scale(min=stated[0], max=stated[1])
        used = next(s for s in statements if (s.lo, s.hi) == stated)
        how_scale = f"from {used.text.strip()!r}"
        others = sorted({(s.lo, s.hi) for s in statements} - {stated})
        if others:
            how_scale += "; other ranges stated: " + ", ".join(f"{lo:g}-{hi:g}" for lo, hi in others)
    if kind == "mcq" and guideline is not None:
        letter_map = dict(letters) if letters is not None else (
            {o.label.upper(): float(o.score) for o in guideline.options} if all(
                o.score is not None for o in guideline.options) else None)
        if letter_map:
            base = final_scale or Scale(min=min(letter_map.values()), max=max(letter_map.values())) if min(
                letter_map.values()) < max(letter_map.values()) else Scale(min=0, max=1)
            final_scale = Scale.model_validate({**base.model_dump(), "letters": letter_map})
            how_scale = how_scale or ("letter scores given" if letters is not None else "from the options' scores")
        else:
            evidence.append(f"options {', '.join(o.label for o in guideline.options)} state no scores: pass "
                            "letters={...} to score them (answers are read, but cannot become scores)")
    elif letters is not None and kind == "mcq":
        final_scale = Scale.model_validate({**(final_scale or Scale(min=min(letters.values()), max=max(
            letters.values()))).model_dump(), "letters": dict(letters)})
        how_scale = how_scale or "letter scores given"
    if final_scale is None and guideline is not None:
        scores = [o.score for o in guideline.options if o.score is not None]
        if scores and min(scores) < max(scores):
            final_scale = Scale(min=min(scores), max=max(scores))
            how_scale = "from the options' scores"
    if final_scale is None:
        final_scale = Scale()
        how_scale = "default 1-5: the template states no scale"
    if kind == "mcq" and not final_scale.letters:
        evidence.append("scale: none (the options state no scores)")
    elif kind != "pairwise" or statements:
        evidence.append(f"scale: {final_scale.describe()} ({how_scale})")

    # the criterion
    crits: tuple[Criterion, ...]
    if criteria is not None:
        crits = tuple(_as_criterion(c) for c in criteria)
        evidence.append(f"criteria: {', '.join(c.name for c in crits)} (given)")
    elif criterion is not None:
        crits = (_as_criterion(criterion),)
        evidence.append(f"criterion: {crits[0].name} (given)")
    elif found_crit is not None:
        crits = (Criterion(name=found_crit.name, definition=found_crit.definition),)
        evidence.append(f"criterion: {found_crit.name} (from the {found_crit.how})")
    else:
        crits = (Criterion(name="score"),)
        evidence.append("criterion: none named ('score')")

    if guideline is not None:
        shown = ", ".join(o.label if o.score is None or o.label == _fmt(o.score) else f"{o.label}={_fmt(o.score)}"
                          for o in guideline.options)
        evidence.append(f"options: {len(guideline.options)} ({shown}), first {guideline.options[0].text.strip()[:60]!r}")
    else:
        evidence.append("options: none found")

    # pairwise labels and the answer format
    pair_names: tuple[str, str] | None = None
    if kind == "pairwise":
        if labels is not None:
            pair_names, how_labels = tuple(labels), "given"  # type: ignore[assignment]
        elif pair is not None and (found := pair_labels(joined, pair[0], pair[1])) is not None:
            pair_names, how_labels = found, "from the headings before the two texts"
        elif (guessed := _guess_labels(joined)) is not None:
            pair_names, how_labels = guessed, "from the instructions"
        else:
            pair_names, how_labels = ("1", "2"), "default"
        evidence.append(f"pairwise: outputs named {pair_names[0]!r} and {pair_names[1]!r} ({how_labels})")
    if answer_format is None:
        fmt = infer_answer_format(templates, kind=kind, labels=pair_names or (), tie=tie, criterion=crits[0].name)
        evidence.append(f"answer: {kind}, format {fmt.describe()}")
    else:
        fmt = answer_format
        evidence.append(f"answer: {kind}, format {fmt.describe()} (given)")

    task = _first_paragraph(read.messages[0][1])
    prompt = JudgePrompt(
        messages=tuple(PromptMessage(role=r, template=t) for (r, _), t in zip(read.messages, templates, strict=True)),
        task=task,
        criteria=crits,
        scale=final_scale,
        answer_format=fmt,
        guideline=guideline,
        output_slot=out_slot,
        slot_fields=fields,
        source=source,
    )
    return prompt, evidence


def describe_template(text: str, **hints: Any) -> str:
    """A report of what :func:`read_prompt` recovers from ``text`` (what ``mitigate prompts inspect`` prints).

    ``hints`` are :meth:`JudgePrompt.from_template` arguments. The report lists the
    evidence, the scoring options, the answer format with the sentence mitigations would
    use to ask for it, how a demonstration shows its answer, and the constraint a backend
    would enforce.
    """
    prompt, evidence = read_prompt(text, **hints)
    fmt = prompt.format
    lines = ["Recovered from the template:", *(f"  {e}" for e in evidence)]
    if prompt.guideline is not None:
        lines.append("Scoring options:")
        lines += [f"  [{o.label}] " + (f"score {_fmt(o.score)}: " if o.score is not None else "(no score) ")
                  + o.description[:90] for o in prompt.guideline.options]
    lines.append("Answers:")
    lines.append(f"  format: {fmt.describe()}")
    try:
        lines.append(f"  asked for as: {fmt.instruction(prompt.scale)}")
        example = prompt.scale.max if fmt.kind == "score" else (
            "first" if fmt.kind == "pairwise" else next(iter(prompt.scale.letters or {"A": 0})))
        if not fmt.two_scores:
            lines.append(f"  a demo answers: {fmt.render(example, prompt.scale)}")
        if fmt.kind != "mcq" or prompt.scale.letters:
            lines.append(f"  constrained decoding (regex): {fmt.constraint(prompt.scale).regex[:160]}")
    except MitigateError as exc:
        lines.append(f"  ({exc})")
    lines.append(f"Messages: {len(prompt.messages)} ({', '.join(m.role for m in prompt.messages)}); "
                 f"task: {prompt.task[:100]!r}")
    return "\n".join(lines)
