"""The judge prompt as a structured, frozen value (:class:`JudgePrompt`), read from a template as published
(:meth:`JudgePrompt.from_template`; :func:`read_prompt` with the evidence, :func:`describe_template` what
``mitigate prompts inspect`` prints) and written back exactly; rendering is :mod:`mitigate.prompt._render`'s.
"""

from __future__ import annotations

import hashlib
import re
import string
from collections.abc import Callable, Sequence
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from mitigate.data import Item
from mitigate.errors import MitigateError, TemplateError
from mitigate.lm import Message
from mitigate.parse import VALUE
from mitigate.prompt import _render
from mitigate.prompt._parts import (
    DEFAULT_DEMO_TEMPLATE,
    GUIDELINE_MARK,
    SLOT_RE,
    Criterion,
    Demo,
    Guideline,
    Layout,
    PromptMessage,
    format_number,
    slot_names,
)
from mitigate.prompt.answer._format import AnswerFormat, AnswerKind
from mitigate.prompt.read._fields import TemplateHints, read_fields
from mitigate.prompt.read._syntax import TemplateSource
from mitigate.scale import Scale

DEMO_FIELDS = ("inputs", "output_name", "output", "guideline", "reason", "criterion", "score")
"""The fields a ``demo_template`` may use."""


class JudgePrompt(BaseModel):
    """A judge prompt: message templates plus the structure recovered from them.

    ``messages`` are the templates (slots as ``{{name}}``, a parsed guideline as a mark rendered from
    ``guideline``); ``answer_format`` alone holds the answer kind (:attr:`answer`); ``output_slot`` holds
    the judged text and ``slot_fields`` maps other slots to item fields (a pairwise template's second text
    to ``output_b``); ``demos`` are placed by ``layout``; ``source`` writes the template back exactly.
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
    demo_template: str = DEFAULT_DEMO_TEMPLATE
    demo_header: str = "Examples:\n\n"
    demo_separator: str = "\n\n"
    layout: Layout = "invariant_first"
    source: TemplateSource | None = None

    @field_validator("demo_template")
    @classmethod
    def _plain_demo_fields(cls, value: str) -> str:
        """Only the :data:`DEMO_FIELDS`, plain: never ``{output.__class__}``, ``{inputs[0]}`` or
        ``{score:>999999999}`` (format-string tricks that read internals or build any size)."""
        try:
            fields = [
                (f, spec, conv) for _, f, spec, conv in string.Formatter().parse(value) if f is not None
            ]
        except ValueError as exc:
            raise TemplateError(
                f"expected demo_template to be a format string; got {value!r} ({exc})"
            ) from None
        for name, spec, conv in fields:
            if name not in DEMO_FIELDS or spec or conv:
                shown = "{" + name + (f"!{conv}" if conv else "") + (f":{spec}" if spec else "") + "}"
                raise TemplateError(
                    "expected demo_template fields among "
                    f"{', '.join('{' + f + '}' for f in DEMO_FIELDS)}, each plain (no "
                    f"attribute, index, conversion or format spec); got {shown}"
                )
        return value

    @model_validator(mode="after")
    def _check(self) -> JudgePrompt:
        if not self.messages:
            raise TemplateError("a judge prompt needs at least one message; got none")
        found = self.slots()
        if self.output_slot not in found:
            raise TemplateError(
                f"expected a slot {{{{{self.output_slot}}}}} for the judged text in the template; "
                f"found slots {sorted(found) or 'none'}"
            )
        marks = sum(m.template.count(GUIDELINE_MARK) for m in self.messages)
        if (self.guideline is None) != (marks == 0) or marks > 1:
            raise TemplateError(
                f"expected one guideline mark when a guideline is set and none otherwise; got {marks} "
                f"mark(s) and guideline={'set' if self.guideline else 'None'}"
            )
        return self

    @property
    def answer(self) -> AnswerKind:
        """The answer kind ("score", "mcq" or "pairwise"), read from :attr:`answer_format`."""
        return self.answer_format.kind

    @property
    def format(self) -> AnswerFormat:
        """The answer format in force (:attr:`answer_format`)."""
        return self.answer_format

    def with_answer_format(self, answer_format: AnswerFormat) -> JudgePrompt:
        """A copy answering in ``answer_format``; a closing stub ("- Coherence:") is rewritten to the new
        format's ("- Fluency:"), so the judge still completes the line its format reads."""
        old, new = self.answer_format.stub, answer_format.stub
        update: dict[str, Any] = {"answer_format": answer_format}
        if old and new and old != new:
            template = self.messages[-1].template
            found = re.search(rf"{re.escape(old)}(?=\s*\Z)", template)
            if found is not None:
                last = PromptMessage(
                    role=self.messages[-1].role,
                    template=template[: found.start()] + new + template[found.end() :],
                )
                update["messages"] = (*self.messages[:-1], last)
        return self.model_copy(update=update)

    def answer_stub(self, index: int = -1) -> str:
        """The answer stub closing a message, the last by default ("###Feedback: ", "- Coherence:"): short
        lines after the last slot ending with ":" or "?", before which a mitigation's text goes; else ""."""
        template = self.messages[index].template
        slots = list(SLOT_RE.finditer(template))
        tail_start = slots[-1].end() if slots else 0
        tail = template[tail_start:]
        m = re.search(r"(?:\n[ \t]*(?:[-*#]+[ \t]*)?[^\n]{1,80}?[:?][ \t]*(?:\n[ \t]*)*)+\Z", tail)
        if m is None or GUIDELINE_MARK in m.group(0):
            return ""
        return tail[m.start() :]

    def echo_lines(self) -> tuple[str, ...]:
        """The guideline's option descriptions: lines a judge may copy into its answer (not answers)."""
        return tuple(o.description for o in self.guideline.options) if self.guideline else ()

    # ------------------------------------------------------------------ building
    @classmethod
    def from_template(
        cls, text: str, hints: TemplateHints | None = None, /, *, system: str | None = None, **overrides: Any
    ) -> JudgePrompt:
        """Recover a :class:`JudgePrompt` from a judge template as published: ``text`` (a user message or a
        chat text) and an optional ``system`` message; ``hints`` (:class:`~mitigate.prompt.TemplateHints`)
        and keywords named after its fields override what is recovered."""
        fields, _ = read_fields(text, TemplateHints.of(hints, **overrides), system=system)
        return cls(**fields)

    # ------------------------------------------------------------------ transforms (each returns a copy)
    def with_guideline(self, guideline: Guideline) -> JudgePrompt:
        """A copy with another guideline (same mark); the prompt must have had one."""
        if self.guideline is None:
            raise TemplateError(
                "this prompt has no parsed guideline to replace; expected one from from_template"
            )
        return self.model_copy(update={"guideline": guideline})

    def with_demos(self, demos: Sequence[Demo]) -> JudgePrompt:
        """A copy with ``demos`` (replacing any), each gold score put on this prompt's scale; TemplateError
        when a demo cannot answer like this prompt or the template has no coherent place for demos."""
        for demo in demos:
            _render.check_demo_fits(demo, self)
        if demos:
            _render.checked_place(self)
        shown = tuple(d.on_scale(self.scale) if self.answer != "pairwise" else d for d in demos)
        return self.model_copy(update={"demos": shown})

    def with_layout(self, layout: Layout) -> JudgePrompt:
        """A copy with another demo layout."""
        return self.model_copy(update={"layout": layout})

    def with_criteria(self, criteria: Sequence[Criterion]) -> JudgePrompt:
        """A copy scoring ``criteria``."""
        return self.model_copy(update={"criteria": tuple(criteria)})

    def with_scale(self, scale: Scale) -> JudgePrompt:
        """A copy on another answer scale; its demos move with it (:meth:`Demo.on_scale`)."""
        demos = tuple(d.labelled_on(self.scale).on_scale(scale) for d in self.demos)
        return self.model_copy(update={"scale": scale, "demos": demos})

    def map_templates(self, fn: Callable[[PromptMessage], PromptMessage]) -> JudgePrompt:
        """A copy with every message template passed through ``fn``."""
        return self.model_copy(update={"messages": tuple(fn(m) for m in self.messages)})

    # ------------------------------------------------------------------ rendering (mitigate.prompt._render)
    def slots(self) -> set[str]:
        """Names of every ``{{slot}}`` in the templates."""
        return {s for m in self.messages for s in slot_names(m.template)}

    def template_text(self) -> list[str]:
        """The templates with the guideline put back (slots unfilled, as ``{{name}}``), one per message."""
        gl = self.guideline.render() if self.guideline else ""
        return [m.template.replace(GUIDELINE_MARK, gl) for m in self.messages]

    def template_source(self) -> str:
        """The whole template written back as given (for an unchanged prompt, the exact text
        :meth:`from_template` read); without a recorded source the messages joined by blank lines."""
        texts = self.template_text()
        return "\n\n".join(texts) if self.source is None else self.source.restore(texts)

    def render(self, item: Item) -> tuple[Message, ...]:
        """Chat messages for judging ``item``: guideline, demos (at :meth:`demo_place`) and slots filled in
        one pass. An item with a field a Jinja condition read as false (``source.unset``) is refused."""
        return _render.render(self, item)

    def demo_place(self) -> tuple[int, int, bool] | str | None:
        """Where the demos block goes: (message index, offset, whether right after the guideline); a str says
        why no place is coherent, None that no message holds a slot. Layout "invariant_first": before the
        judged item's first heading and lead-in (a prefix every item shares); "as_written": after the
        guideline."""
        return _render.demo_place(self)

    def render_demos(self, *, newline: str = "\n") -> str:
        """The demonstrations block (empty without demos), each demo's item shown as the template shows the
        judged item, then its gold answer (and ``reason``) in the answer format."""
        return _render.render_demos(self, newline=newline)

    def item_section(self) -> tuple[int, int, int] | None:
        """Where the template shows the judged item: (message index, start, end) of its item section; None
        when the slots span messages or the section holds the guideline."""
        return _render.item_section(self)

    def _input_slots(self) -> list[str]:
        """Slots other than the judged text, in order of first appearance."""
        names = (n for m in self.messages for n in slot_names(m.template))
        return list(dict.fromkeys(n for n in names if n != self.output_slot))

    def _field_for(self, slot: str) -> str:
        """The item field filling ``slot``."""
        return "output" if slot == self.output_slot else self.slot_fields.get(slot, slot)

    def fingerprint(self) -> str:
        """A short digest of the prompt's content, for journals and replay keys."""
        return hashlib.sha256(self.model_dump_json().encode()).hexdigest()[:16]


def read_prompt(
    text: str, hints: TemplateHints | None = None, /, *, system: str | None = None, **overrides: Any
) -> tuple[JudgePrompt, list[str]]:
    """:meth:`JudgePrompt.from_template` (same arguments), also returning one line of evidence per field:
    what was found and where ("scale 1-10 from 'on a scale of 1 to 10'"), given, or defaulted."""
    fields, evidence = read_fields(text, TemplateHints.of(hints, **overrides), system=system)
    return JudgePrompt(**fields), evidence


def describe_template(
    text: str, hints: TemplateHints | None = None, /, *, system: str | None = None, **overrides: Any
) -> str:
    """A report of what :func:`read_prompt` recovers from ``text``: the evidence, the scoring options, the
    answer format and how it is asked for, how a demo answers, and the constraint a backend would enforce."""
    prompt, evidence = read_prompt(text, hints, system=system, **overrides)
    fmt = prompt.format
    lines = ["Recovered from the template:", *(f"  {e}" for e in evidence)]
    if prompt.guideline is not None:
        lines.append("Scoring options:")
        lines += [
            f"  [{o.label}] "
            + (f"score {format_number(o.score)}: " if o.score is not None else "(no score) ")
            + o.description[:90]
            for o in prompt.guideline.options
        ]
    lines += ["Answers:", f"  format: {fmt.describe()}"]
    try:
        lines.append(f"  asked for as: {fmt.instruction(prompt.scale)}")
        example = (
            prompt.scale.max
            if fmt.kind == "score"
            else ("first" if fmt.kind == "pairwise" else next(iter(prompt.scale.letters or {"A": 0})))
        )
        if not fmt.two_scores:
            lines.append(f"  a demo answers: {fmt.render(example, prompt.scale)}")
        if fmt.stub and fmt.reasoning != "before":
            shown = fmt.continuation.strip().replace(VALUE, fmt.value_text(example, prompt.scale))
            lines.append(f"  the judge completes {fmt.stub!r} with: {shown}")
        if fmt.kind != "mcq" or prompt.scale.letters:
            lines.append(f"  constrained decoding (regex): {fmt.constraint(prompt.scale).regex[:160]}")
    except MitigateError as exc:
        lines.append(f"  ({exc})")
    lines.append(
        f"Messages: {len(prompt.messages)} ({', '.join(m.role for m in prompt.messages)}); "
        f"task: {prompt.task[:100]!r}"
    )
    return "\n".join(lines)
