"""The judge prompt as a structured, frozen value (:class:`JudgePrompt`), read from a template as published
(:meth:`JudgePrompt.from_template`; :func:`read_prompt` with the evidence, :func:`describe_template` what
``mitigate prompts inspect`` prints), written back exactly, and rendered for one item: guideline, demos and
slots filled in one pass. The judged text and the demos are inserted verbatim after the slots are filled,
never templated; each demo repeats the template's own item section filled with its texts, then its gold
answer in the prompt's answer format.
"""

from __future__ import annotations

import hashlib
import re
import string
from collections.abc import Callable, Sequence
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from mitigate.data import Item
from mitigate.errors import DataError, MitigateError, TemplateError
from mitigate.lm import Message
from mitigate.parse import VALUE
from mitigate.prompt._parts import (
    DEFAULT_DEMO_TEMPLATE,
    DEMOS_MARK,
    GUIDELINE_MARK,
    SLOT_RE,
    Criterion,
    Demo,
    Guideline,
    Layout,
    PromptMessage,
    answer_label,
    field_text,
    format_number,
    slot_names,
)
from mitigate.prompt.answer._format import AnswerFormat, AnswerKind
from mitigate.prompt.read._fields import TemplateHints, read_fields
from mitigate.prompt.read._layout import item_layout
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
            check_demo_fits(demo, self)
        if demos:
            checked_place(self)
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

    # ------------------------------------------------------------------ rendering
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
        for name in self.source.unset if self.source is not None else ():
            if field_text(item, name) is not None:
                raise TemplateError(
                    f"the template's Jinja tests {name!r}, which no constant gave, so it was read as false "
                    f"when the template was read; item {item.id!r} has a field {name!r} the prompt would "
                    f"leave out: expected --const {name}=... (constants={{{name!r}: ...}}, one value for "
                    f"every item), or {{{{{name}}}}} "
                    "outside the condition (Jinja is rendered once, before judging)",
                    item_id=item.id,
                )
        guideline_text = self.guideline.render() if self.guideline else ""
        place = checked_place(self) if self.demos else None
        out: list[Message] = []
        for i, m in enumerate(self.messages):
            template, demos_text = m.template, ""
            if place is not None and place[0] == i:
                _, at, after_guideline = place
                nl = "\r\n" if "\r\n" in template else "\n"  # the template's line break
                mark = nl * 2 + DEMOS_MARK if after_guideline else DEMOS_MARK + nl * 2
                template = template[:at] + mark + template[at:]
                demos_text = self.render_demos(newline=nl)
                if not after_guideline:  # the judged item follows: a line parts it from the last demo
                    demos_text += self.demo_separator.replace("\n", nl) + DEMOS_END
            template = template.replace(GUIDELINE_MARK, guideline_text)
            # demos are texts like the judged one: inserted verbatim after the slots are filled
            content = demos_text.join(fill(self, part, item) for part in template.split(DEMOS_MARK))
            out.append(Message(role=m.role, content=content))
        if self.demos and place is None:  # no slot anywhere: demos go before the last message's text
            last = out[-1]
            demos = self.render_demos() + self.demo_separator + DEMOS_END
            out[-1] = Message(role=last.role, content=demos + self.demo_separator + last.content)
        return tuple(out)

    def demo_place(self) -> tuple[int, int, bool] | str | None:
        """Where the demos block goes: (message index, offset, whether right after the guideline); a str says
        why no place is coherent, None that no message holds a slot. Layout "invariant_first": before the
        judged item's first heading and lead-in (a prefix every item shares); "as_written": after the
        guideline."""
        messages = self.messages
        holders = [i for i, m in enumerate(messages) if SLOT_RE.search(m.template)]
        if not holders:
            return None
        own = [i for i in holders if self.output_slot in slot_names(messages[i].template)]
        idx = (own or holders)[0]
        template = messages[idx].template
        where = item_layout(template)
        assert where is not None
        if where.problem:
            return where.problem
        marked = [i for i, m in enumerate(messages) if GUIDELINE_MARK in m.template]
        if self.layout == "as_written" and marked:
            g = marked[0]
            at = messages[g].template.index(GUIDELINE_MARK) + len(GUIDELINE_MARK)
            if g > idx or (g == idx and at > where.insert_at):
                heading = template[where.start :].split("\n", 1)[0].strip()
                return (
                    "layout 'as_written' puts the demos right after the guideline, which stands after "
                    f"the judged item's first heading {heading!r}; expected layout 'invariant_first' for "
                    "this template"
                )
            return g, at, True
        return idx, where.insert_at, False

    def render_demos(self, *, newline: str = "\n") -> str:
        """The demonstrations block (empty without demos), each demo's item shown as the template shows the
        judged item, then its gold answer (and ``reason``) in the answer format."""
        if not self.demos:
            return ""
        for demo in self.demos:
            check_demo_fits(demo, self)
        show = _pairwise_demo if self.answer == "pairwise" else _scored_demo
        parts = [show(self, d, newline) for d in self.demos]
        header, fmt = self.demo_header, self.format
        default = header == "Examples:\n\n" and self.demo_template == DEFAULT_DEMO_TEMPLATE
        if default and fmt.reasoning != "none" and any(not d.reason for d in self.demos):
            where = "first" if fmt.reasoning == "before" else "after the answer line"
            header = (
                "Examples (each shows only its final answer; in your own answer, write the reasoning "
                f"the instructions ask for {where}):\n\n"
            )
        return header.replace("\n", newline) + self.demo_separator.replace("\n", newline).join(parts)

    def item_section(self) -> tuple[int, int, int] | None:
        """Where the template shows the judged item: (message index, start, end) of its item section; None
        when the slots span messages or the section holds the guideline."""
        where = _section_span(self)
        if where is None:
            return None
        idx, start, end = where
        section = self.messages[idx].template[start:end]
        return None if GUIDELINE_MARK in section or DEMOS_MARK in section else where

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


DEMOS_END = "End of examples. Now evaluate the following."
"""The line between the last demo and the judged item (after the demos, before the item's first heading)."""


def checked_place(prompt: JudgePrompt) -> tuple[int, int, bool] | None:
    """:meth:`JudgePrompt.demo_place`, with a TemplateError when no place for demos is coherent."""
    place = prompt.demo_place()
    if isinstance(place, str):
        raise TemplateError(f"demos cannot be shown: {place}")
    return place


def _section_span(prompt: JudgePrompt) -> tuple[int, int, int] | None:
    """The item section whatever it holds; None when slots span messages."""
    holders = [i for i, m in enumerate(prompt.messages) if SLOT_RE.search(m.template)]
    if len(holders) != 1:
        return None
    where = item_layout(prompt.messages[holders[0]].template)
    return None if where is None else (holders[0], where.start, where.end)


def _demo_section(prompt: JudgePrompt) -> str | None:
    """The item section a demo repeats, without a guideline paragraph standing between two slots."""
    where = _section_span(prompt)
    if where is None:
        return None
    idx, start, end = where
    section = prompt.messages[idx].template[start:end].strip("\r\n")
    if DEMOS_MARK in section:
        return None
    if GUIDELINE_MARK in section:
        paragraphs = re.split(r"((?:\r?\n)[ \t]*\r?\n)", section)
        at = next(i for i, p in enumerate(paragraphs) if GUIDELINE_MARK in p)
        if SLOT_RE.search(paragraphs[at]) or at == 0 or at == len(paragraphs) - 1:
            return None
        section = "".join(paragraphs[:at] + paragraphs[at + 2 :])
    return section


def _demo_item_text(prompt: JudgePrompt, demo: Demo, nl: str) -> tuple[str, str]:
    """The demo's item under the template's own headings, and what separates it from the answer."""
    section = _demo_section(prompt)
    if section is None or prompt.demo_template != DEFAULT_DEMO_TEMPLATE:
        shown = []
        for slot in [prompt.output_slot, *prompt._input_slots()]:
            value = field_text(demo.item, prompt._field_for(slot))
            if value is not None:
                heading = answer_label(slot.replace("_", " ").strip())  # keeps its case: "Response B"
                shown.append((_slot_position(prompt, slot), f"{heading}: {value}"))
        return nl.join(text for _, text in sorted(shown)), nl

    def repl(match: re.Match[str]) -> str:
        name = match.group(1).strip()
        value = field_text(demo.item, prompt._field_for(name))
        if value is None:
            raise TemplateError(
                f"demo {demo.item.id!r} has no text for the template's slot {{{{{name}}}}} (item field "
                f"{prompt._field_for(name)!r}); a demo shows every input the judged item shows: expected "
                f"an item with {['output', *demo.item.inputs]} holding it"
            )
        return value

    spaced = re.search(r"\n[ \t]*\r?\n", section) is not None
    return SLOT_RE.sub(repl, section), nl * 2 if spaced else nl


def _with_reason(fmt: AnswerFormat, answer: str, reason: str | None, nl: str) -> str:
    """The answer line with the demo's reason where the format wants reasoning."""
    if not reason or fmt.reasoning == "none" or fmt.json_key is not None:
        return answer
    if fmt.reasoning == "before":
        sep = " " if fmt.line.startswith("[RESULT]") else nl
        return f"{reason}{sep}{answer}"
    return f"{answer}{nl}{reason}"


def _scored_demo(prompt: JudgePrompt, demo: Demo, nl: str) -> str:
    """One demonstration of a prompt that scores: the item, then its gold answer."""
    assert demo.score is not None
    fmt = prompt.format

    def value(score: float) -> str:
        return fmt.value_text(score, prompt.scale)

    guideline = f"Scoring guideline:{nl}{demo.guideline.render()}{nl}" if demo.guideline else ""
    if prompt.demo_template != DEFAULT_DEMO_TEMPLATE:  # the user's own demo template, filled as written
        crit_name = prompt.criteria[0].name if prompt.criteria else "score"
        label = "Score" if crit_name.lower() == "score" else f"{_title(crit_name)} score"
        label = "Answer" if prompt.answer == "mcq" and prompt.scale.letters else label
        score_text = (
            ", ".join(f"{k}: {value(v)}" for k, v in demo.score.items())
            if isinstance(demo.score, dict)
            else value(demo.score)
        )
        inputs = "".join(
            f"{_title(s)}: {text}\n"
            for s in prompt._input_slots()
            if (text := field_text(demo.item, prompt._field_for(s))) is not None
        )
        return prompt.demo_template.format(
            inputs=inputs,
            output_name=_title(prompt.output_slot),
            output=demo.item.output,
            guideline=guideline,
            reason=f"Reason: {demo.reason}\n" if demo.reason else "",
            criterion=label,
            score=score_text,
        )
    names = [c.name for c in prompt.criteria]
    if isinstance(demo.score, dict) and len(names) > 1 and all(n in demo.score for n in names):
        # a multi-criterion prompt answers one line per criterion: the demo answers the same way
        answer = nl.join(f"{answer_label(n)}: {value(demo.score[n])}" for n in names)
    elif isinstance(demo.score, dict):
        raise TemplateError(
            f"demo {demo.item.id!r} shows scores for {sorted(demo.score)}; this prompt answers one value "
            f"({fmt.describe()}): expected one gold score"
        )
    elif fmt.two_scores:
        raise TemplateError("a two-scores format has no single answer a scored demo can show")
    else:
        answer = fmt.render(
            demo.score,
            prompt.scale,
            reason=demo.reason or ("(not shown in this example)" if fmt.reason_key else None),
        )
        if fmt.json_key is None and fmt.line.strip() == VALUE:  # a bare value would read as a stray word
            answer = f"Answer: {answer}"
    text, sep = _demo_item_text(prompt, demo, nl)
    return f"{text}{sep}{guideline}{_with_reason(fmt, answer, demo.reason, nl)}"


def _pairwise_demo(prompt: JudgePrompt, demo: Demo, nl: str) -> str:
    """One pairwise demonstration: the two outputs under the template's headings, then the gold verdict."""
    assert demo.verdict is not None
    fmt = prompt.format
    if fmt.two_scores:
        raise TemplateError(
            "this pairwise prompt answers with two scores (one per output), which a demo's verdict "
            "cannot show; expected a format naming the better output (e.g. [[A]] or Output (a))"
        )
    answer = fmt.render(demo.verdict, prompt.scale, reason=demo.reason)
    if fmt.line.strip() == VALUE and fmt.json_key is None:  # a bare label would read as a stray word
        answer = f"Verdict: {answer}"
    text, sep = _demo_item_text(prompt, demo, nl)
    return f"{text}{sep}{_with_reason(fmt, answer, demo.reason, nl)}"


def _slot_position(prompt: JudgePrompt, slot: str) -> tuple[int, int]:
    """Where ``slot`` first appears: (message index, offset)."""
    for i, m in enumerate(prompt.messages):
        for found in SLOT_RE.finditer(m.template):
            if found.group(1).strip() == slot:
                return i, found.start()
    return len(prompt.messages), 0


MAX_FILLED_CHARS = 20_000_000
"""The longest message a prompt is built into, in characters (more than any model reads): a template that
shows a slot many times (a Jinja loop over it) is refused before the message is built, not after."""


def fill(prompt: JudgePrompt, template: str, item: Item) -> str:
    """``template`` with every slot filled from ``item`` (DataError naming a field the item lacks, or when the
    filled text would pass :data:`MAX_FILLED_CHARS`)."""
    found = list(SLOT_RE.finditer(template))
    values: list[str] = []
    for match in found:
        name = match.group(1).strip()
        field = prompt._field_for(name)
        value = field_text(item, field)
        if value is None:
            raise DataError(
                f"slot {{{{{name}}}}} needs item field {field!r}; item {item.id!r} has "
                f"{['output', *item.inputs]} (map it with --slot-field {name}=<field>; slot_fields= in "
                "Python)",
                item_id=item.id,
            )
        values.append(value)
    size = len(template) + sum(len(v) - len(m.group(0)) for v, m in zip(values, found, strict=True))
    if size > MAX_FILLED_CHARS:
        raise DataError(
            f"item {item.id!r} would fill the prompt to {size:,} characters ({len(found):,} slots filled); "
            f"expected at most {MAX_FILLED_CHARS:,} (a template that shows a text many times, such as a "
            "Jinja loop over a slot, is refused before it is built)",
            item_id=item.id,
        )
    parts = iter(values)
    return SLOT_RE.sub(lambda _: next(parts), template)


def _title(name: str) -> str:
    return name.replace("_", " ").strip().capitalize()


def check_demo_fits(demo: Demo, prompt: JudgePrompt) -> None:
    """TemplateError unless ``demo`` answers like ``prompt`` (a verdict for pairwise, else a score)."""
    if prompt.answer == "pairwise" and demo.verdict is None:
        raise TemplateError(
            f"a pairwise prompt's demos show a gold verdict; demo {demo.item.id!r} shows a score "
            f"({demo.score!r}): expected Demo(item=<item with output_b>, verdict='first'|'second'|'tie')"
        )
    if prompt.answer == "pairwise" and demo.guideline is not None:
        raise TemplateError(
            f"a pairwise prompt's demos show the two outputs and a verdict; demo {demo.item.id!r} carries a "
            "guideline of its own (guideline demos are for prompts that score one output): expected "
            "guideline=None"
        )
    if prompt.answer != "pairwise" and demo.score is None:
        raise TemplateError(
            f"a prompt answering {prompt.answer!r} shows demos with a gold score; demo {demo.item.id!r} "
            f"shows the verdict {demo.verdict!r}"
        )
