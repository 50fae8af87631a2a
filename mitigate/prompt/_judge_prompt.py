"""The judge prompt as a structured, frozen value.

:meth:`JudgePrompt.from_template` takes a judge prompt as it was published (a G-Eval style
text, a system + user pair, a ChatML or Llama-3 chat text, ``{{slot}}``, ``{slot}`` or Jinja
placeholders; see :mod:`mitigate.prompt.read._syntax`) and recovers its structure — task
description, criterion (name, definition), scale, the scoring guideline as separate
:class:`ScoreOption` lines, whether it compares two outputs and how it names them, and the
answer format it prescribes (:class:`~mitigate.prompt.answer.AnswerFormat`) — so that
transforms can reorder or lengthen options and insert demonstrations, and answers are read
in the template's own format. Rendering a parsed prompt with no transforms reproduces the
original text exactly (:meth:`JudgePrompt.template_source`).
:func:`~mitigate.prompt.read._evidence.read_prompt` also returns the evidence for each recovered
field (what ``mitigate prompts inspect`` prints).

Slots are filled in a single pass: the judged text is inserted verbatim and never scanned
again, so braces or a "Score: 10" inside it cannot break templating. Demonstrations are
inserted the same way, after the slots are filled: a demo whose text holds ``{{summary}}``
shows those characters, never the current item's summary.
"""

from __future__ import annotations

import re
import string
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from mitigate.data import Item
from mitigate.errors import DataError, TemplateError
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
    format_number,
    slot_names,
)
from mitigate.prompt.answer._format import AnswerFormat, AnswerKind
from mitigate.prompt.read._fields import read_fields
from mitigate.prompt.read._hints import TemplateHints
from mitigate.prompt.read._layout import item_layout
from mitigate.prompt.read._syntax import TemplateSource
from mitigate.scale import Scale

DEMO_FIELDS = ("inputs", "output_name", "output", "guideline", "reason", "criterion", "score")
"""The fields a ``demo_template`` may use (see :meth:`JudgePrompt._scored_demo`)."""


class JudgePrompt(BaseModel):
    """A judge prompt: message templates plus the structure recovered from them.

    - ``messages``: the templates (slots as ``{{name}}``); a parsed guideline is replaced by
      an internal mark and rendered from ``guideline`` so transforms can change it.
    - ``task``: the task description (first paragraph of the instructions).
    - ``criteria``: what is scored (one for a G-Eval prompt; several for a multi-attribute one).
    - ``scale``: the answer scale.
    - ``answer_format``: how the template asks the judge to answer (see
      :class:`~mitigate.prompt.answer.AnswerFormat`), the default "Score: N" line when
      the template names none. It alone holds the answer kind (:attr:`answer`): "score" (a
      number), "mcq" (a letter mapped by ``scale.letters``) or "pairwise" (a verdict).
    - ``output_slot``: the slot holding the judged text; ``slot_fields`` maps other slot
      names to item fields when they differ (e.g. ``{"Document": "source"}``; the second
      text of a pairwise template maps to ``output_b``).
    - ``demos``: demonstrations, each shown under the template's own item headings
      (:meth:`render_demos`) and inserted before the judged item's first heading and any
      lead-in above it such as G-Eval's "Example:" (layout "invariant_first", so instructions
      and demos form a prefix shared by every item) or right after the guideline
      ("as_written"); see :meth:`demo_place`.
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
    # DEFAULT_DEMO_TEMPLATE
    demo_template: str = "{inputs}{output_name}: {output}\n{guideline}{reason}{criterion}: {score}"
    demo_header: str = "Examples:\n\n"
    demo_separator: str = "\n\n"
    layout: Layout = "invariant_first"
    source: TemplateSource | None = None

    @field_validator("demo_template")
    @classmethod
    def _plain_demo_fields(cls, value: str) -> str:
        """A demo template fills only its named fields, as they are: ``{output}``, never
        ``{output.__class__}``, ``{inputs[0]}`` or ``{score:>999999999}`` (format-string tricks that read
        internals or build any size)."""
        try:
            fields = [
                (name, spec, conv)
                for _, name, spec, conv in string.Formatter().parse(value)
                if name is not None
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
        """The answer kind ("score", "mcq" or "pairwise"), read from :attr:`answer_format` (its sole
        owner)."""
        return self.answer_format.kind

    @property
    def format(self) -> AnswerFormat:
        """The answer format in force (:attr:`answer_format`)."""
        return self.answer_format

    def with_answer_format(self, answer_format: AnswerFormat) -> JudgePrompt:
        """A copy answering in ``answer_format`` (its kind becomes the prompt's ``answer``).

        When the prompt ends with its format's stub ("- Coherence:") and ``answer_format`` has
        another stub ("- Fluency:", a criterion renamed), that last line is rewritten to it, so
        the judge still completes the line its format reads.
        """
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
        """The answer stub closing a message, the last by default ("###Feedback: ", "- Coherence:", "## Which
        is best, ...?").

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
        return tail[m.start() :]

    def echo_lines(self) -> tuple[str, ...]:
        """The guideline's option descriptions: lines a judge may copy into its answer (not answers)."""
        if self.guideline is None:
            return ()
        return tuple(o.description for o in self.guideline.options)

    # ------------------------------------------------------------------ building
    @classmethod
    def from_template(
        cls, text: str, hints: TemplateHints | None = None, /, *, system: str | None = None, **overrides: Any
    ) -> JudgePrompt:
        """Recover a :class:`JudgePrompt` from a judge template as it was published.

        ``text`` is the template (the user message, or a chat text in ChatML / Llama-3 /
        "Human:" markup); ``system`` an optional system message. Placeholders may be
        ``{{x}}``, ``{x}`` or Jinja (rendered with ``constants``, which also fill slots that
        are the same for every item, such as a rubric). ``hints`` (a
        :class:`~mitigate.prompt.read._hints.TemplateHints`), and keyword arguments named after its
        fields, override what is recovered from the text: ``scale``, ``criterion``/``criteria``,
        ``output_slot``, ``slot_fields``, ``answer`` ("score", "mcq", "pairwise"), ``constants``,
        ``labels`` (how a pairwise prompt names its two outputs) and ``tie``, ``letters`` (scores of
        lettered options) and ``answer_format``. Guideline lines ("Score 2 means ...", "5: ...", "- A
        score of 1 means ...", "score1_description: ...", "A: ... Score: One.", "(A) ...") become
        separate options unless ``parse_guideline=False``. :func:`read_prompt` does the same and
        also returns the evidence for what was recovered.
        """
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
        """A copy with ``demos`` (replacing any demos it had).

        TemplateError when a demo cannot answer like this prompt: a pairwise prompt needs
        demos with a gold ``verdict``, a scoring prompt demos with a gold ``score``. Every
        gold score is put on this prompt's scale and step (:meth:`Demo.on_scale`): a demo
        labelled on another scale (its ``scale``) is mapped linearly, one without a scale
        must lie within this prompt's (TemplateError naming both otherwise). TemplateError too
        when the template has no coherent place for demos (:meth:`demo_place`).
        """
        for demo in demos:
            _check_demo_fits(demo, self)
        place = self.demo_place() if demos else None
        if isinstance(place, str):
            raise TemplateError(f"demos cannot be shown: {place}")
        shown = tuple(d.on_scale(self.scale) if self.answer != "pairwise" else d for d in demos)
        return self.model_copy(update={"demos": shown})

    def with_layout(self, layout: Layout) -> JudgePrompt:
        """A copy with another demo layout."""
        return self.model_copy(update={"layout": layout})

    def with_criteria(self, criteria: Sequence[Criterion]) -> JudgePrompt:
        """A copy scoring ``criteria``."""
        return self.model_copy(update={"criteria": tuple(criteria)})

    def with_scale(self, scale: Scale) -> JudgePrompt:
        """A copy on another answer scale; demos it holds move with it (linearly, see
        :meth:`Demo.on_scale`)."""
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
        """Chat messages for judging ``item``: guideline, demos and slots filled in one pass.

        The demos block goes where :meth:`demo_place` says: before the judged item's first
        heading and any lead-in above it (layout "invariant_first"), or right after the
        guideline ("as_written"). TemplateError when no such place is coherent.

        A Jinja condition that read a name as false (``source.unset``) while the item has a field of
        that name is refused: the template was rendered once, before judging, and cannot show it.
        """
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
        place = self.demo_place() if self.demos else None
        if isinstance(place, str):
            raise TemplateError(f"demos cannot be shown: {place}")
        out: list[Message] = []
        for i, m in enumerate(self.messages):
            template, demos_text = m.template, ""
            if place is not None and place[0] == i:
                _, at, after_guideline = place
                nl = "\r\n" if "\r\n" in template else "\n"  # the template's line break
                mark = nl * 2 + DEMOS_MARK if after_guideline else DEMOS_MARK + nl * 2
                template = template[:at] + mark + template[at:]
                demos_text = self.render_demos(newline=nl)
            template = template.replace(GUIDELINE_MARK, guideline_text)
            # demos are texts like the judged one: inserted verbatim after the slots are filled, never
            # templated
            content = demos_text.join(self._fill(part, item) for part in template.split(DEMOS_MARK))
            out.append(Message(role=m.role, content=content))
        if self.demos and place is None:  # no slot anywhere: demos go before the last message's text
            last = out[-1]
            out[-1] = Message(
                role=last.role, content=self.render_demos() + self.demo_separator + last.content
            )
        return tuple(out)

    def demo_place(self) -> tuple[int, int, bool] | str | None:
        """Where the demos block goes: (message index, offset in its template, whether right after the
        guideline).

        The judged item is shown in the message holding the judged text's slot (else the first
        message holding a slot). Layout "invariant_first": the block goes before the item's first
        heading and the lead-in above it (:func:`~mitigate.prompt.read._layout.item_layout`), so
        instructions and demos form a prefix every item shares. "as_written": right after the
        guideline, when the guideline stands before the item's first heading. A str says why no
        place is coherent (the first slot stands inside a sentence, or "as_written" would put the
        demos inside or after the judged item); None when no message holds a slot.
        """
        holders = [i for i, m in enumerate(self.messages) if SLOT_RE.search(m.template)]
        if not holders:
            return None
        own = [i for i in holders if self.output_slot in slot_names(self.messages[i].template)]
        idx = (own or holders)[0]
        template = self.messages[idx].template
        where = item_layout(template)
        assert where is not None
        if where.problem:
            return where.problem
        marked = [i for i, m in enumerate(self.messages) if GUIDELINE_MARK in m.template]
        if self.layout == "as_written" and marked:
            g = marked[0]
            at = self.messages[g].template.index(GUIDELINE_MARK) + len(GUIDELINE_MARK)
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
        """The demonstrations block (empty when there are none); ``newline`` is the template's line break.

        Each demo shows its item the way the template shows the judged item: the template's
        own item section (:meth:`item_section`: every heading and slot, from the first slot's
        heading to the line closing the last slot) filled with the demo's texts, then its gold
        answer in the prompt's answer format
        (:meth:`~mitigate.prompt.answer.AnswerFormat.render`), after a blank line when the
        section spaces its parts with blank lines. Where the format asks for reasoning, a demo
        with a ``reason`` shows it as that reasoning (before the answer line, or after it); a
        demo without one shows its answer line only, and the block's header says so (the demos
        never show a made-up reasoning, nor imply that none is wanted). A template whose items
        are not in one section (slots spread over messages) shows each input under its slot
        name instead; a guideline paragraph between two slots is left out of the demos.
        """
        if not self.demos:
            return ""
        for demo in self.demos:
            _check_demo_fits(demo, self)
        parts = [
            self._pairwise_demo(d, newline) if self.answer == "pairwise" else self._scored_demo(d, newline)
            for d in self.demos
        ]
        header = self.demo_header
        fmt = self.format
        if (
            header == "Examples:\n\n"
            and fmt.reasoning != "none"
            and self.demo_template == DEFAULT_DEMO_TEMPLATE
            and any(not d.reason for d in self.demos)
        ):
            where = "first" if fmt.reasoning == "before" else "after the answer line"
            header = (
                "Examples (each shows only its final answer; in your own answer, write the reasoning "
                f"the instructions ask for {where}):\n\n"
            )
        return header.replace("\n", newline) + self.demo_separator.replace("\n", newline).join(parts)

    def item_section(self) -> tuple[int, int, int] | None:
        """Where the template shows the judged item: (message index, start, end) of its item section.

        The section runs from the first slot's first heading to the end of the line holding
        the last slot, plus the closing markup right after it ("[The End of Assistant's
        Answer]", "</summary>"); see :func:`~mitigate.prompt.read._layout.item_layout`. None when
        the slots are spread over several messages or the section holds the guideline.
        """
        where = self._section_span()
        if where is None:
            return None
        idx, start, end = where
        section = self.messages[idx].template[start:end]
        if GUIDELINE_MARK in section or DEMOS_MARK in section:
            return None
        return where

    def _section_span(self) -> tuple[int, int, int] | None:
        """The item section as :meth:`item_section` finds it, whatever it holds; None when slots span
        messages."""
        holders = [i for i, m in enumerate(self.messages) if SLOT_RE.search(m.template)]
        if len(holders) != 1:
            return None
        where = item_layout(self.messages[holders[0]].template)
        return None if where is None else (holders[0], where.start, where.end)

    def _demo_section(self) -> str | None:
        """The item section a demo repeats: the template's, without a guideline paragraph that stands between
        two slots (its heading and options belong to the prompt, not to each item); None when there is none.
        """
        where = self._section_span()
        if where is None:
            return None
        idx, start, end = where
        section = self.messages[idx].template[start:end].strip("\r\n")
        if DEMOS_MARK in section:
            return None
        if GUIDELINE_MARK in section:
            paragraphs = re.split(r"((?:\r?\n)[ \t]*\r?\n)", section)
            at = next(i for i, p in enumerate(paragraphs) if GUIDELINE_MARK in p)
            if SLOT_RE.search(paragraphs[at]) or at == 0 or at == len(paragraphs) - 1:
                return None
            section = "".join(paragraphs[:at] + paragraphs[at + 2 :])
        return section

    def _demo_item_text(self, demo: Demo, nl: str = "\n") -> tuple[str, str]:
        """The demo's item shown under the template's own headings (its item section filled with the demo's
        texts), and what separates it from the answer (a blank line when the section has blank lines)."""
        section = self._demo_section()
        if section is None or self.demo_template != DEFAULT_DEMO_TEMPLATE:
            shown = []
            for slot in [self.output_slot, *self._input_slots()]:
                value = field_text(demo.item, self._field_for(slot))
                if value is not None:
                    shown.append((self._slot_position(slot), f"{_heading(slot)}: {value}"))
            return nl.join(text for _, text in sorted(shown)), nl

        def repl(match: re.Match[str]) -> str:
            name = match.group(1).strip()
            value = field_text(demo.item, self._field_for(name))
            if value is None:
                raise TemplateError(
                    f"demo {demo.item.id!r} has no text for the template's slot {{{{{name}}}}} (item field "
                    f"{self._field_for(name)!r}); a demo shows every input the judged item shows: expected "
                    f"an item with {['output', *demo.item.inputs]} holding it"
                )
            return value

        spaced = re.search(r"\n[ \t]*\r?\n", section) is not None
        return SLOT_RE.sub(repl, section), nl * 2 if spaced else nl

    def _with_reason(self, answer: str, reason: str | None, nl: str = "\n") -> str:
        """The answer line with the demo's reason placed where the format wants reasoning (none: not
        shown)."""
        fmt = self.format
        if not reason or fmt.reasoning == "none" or fmt.json_key is not None:
            return answer
        if fmt.reasoning == "before":
            sep = " " if fmt.line.startswith("[RESULT]") else nl
            return f"{reason}{sep}{answer}"
        return f"{answer}{nl}{reason}"

    def _scored_demo(self, demo: Demo, nl: str = "\n") -> str:
        """One demonstration of a prompt that scores: the item under the template's headings, then its gold
        answer."""
        assert demo.score is not None
        fmt = self.format
        guideline = f"Scoring guideline:{nl}{demo.guideline.render()}{nl}" if demo.guideline else ""
        # a demo template of the user's own: filled as written
        if self.demo_template != DEFAULT_DEMO_TEMPLATE:
            crit_name = self.criteria[0].name if self.criteria else "score"
            label = (
                "Answer"
                if self.answer == "mcq" and self.scale.letters
                else ("Score" if crit_name.lower() == "score" else f"{_title(crit_name)} score")
            )
            score_text = (
                ", ".join(f"{k}: {self._answer_text(v)}" for k, v in demo.score.items())
                if isinstance(demo.score, dict)
                else self._answer_text(demo.score)
            )
            inputs = "".join(
                f"{_title(s)}: {value}\n"
                for s in self._input_slots()
                if (value := field_text(demo.item, self._field_for(s))) is not None
            )
            return self.demo_template.format(
                inputs=inputs,
                output_name=_title(self.output_slot),
                output=demo.item.output,
                guideline=guideline,
                reason=f"Reason: {demo.reason}\n" if demo.reason else "",
                criterion=label,
                score=score_text,
            )
        names = [c.name for c in self.criteria]
        if isinstance(demo.score, dict) and len(names) > 1 and all(n in demo.score for n in names):
            # a multi-criterion prompt answers one line per criterion: the demo answers the same way
            answer = nl.join(f"{answer_label(n)}: {self._answer_text(demo.score[n])}" for n in names)
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
                self.scale,
                reason=demo.reason or ("(not shown in this example)" if fmt.reason_key else None),
            )
            if fmt.json_key is None and fmt.line.strip() == VALUE:  # a bare value would read as a stray word
                answer = f"Answer: {answer}"
        text, sep = self._demo_item_text(demo, nl)
        return f"{text}{sep}{guideline}{self._with_reason(answer, demo.reason, nl)}"

    def _pairwise_demo(self, demo: Demo, nl: str = "\n") -> str:
        """One pairwise demonstration: the two outputs (and every input) under the template's headings, then
        the gold verdict in the prompt's answer format."""
        _check_demo_fits(demo, self)
        assert demo.verdict is not None
        fmt = self.format
        if fmt.two_scores:
            raise TemplateError(
                "this pairwise prompt answers with two scores (one per output), which a demo's verdict "
                "cannot show; expected a format naming the better output (e.g. [[A]] or Output (a))"
            )
        answer = fmt.render(demo.verdict, self.scale, reason=demo.reason)
        if fmt.line.strip() == VALUE and fmt.json_key is None:  # a bare label would read as a stray word
            answer = f"Verdict: {answer}"
        text, sep = self._demo_item_text(demo, nl)
        return f"{text}{sep}{self._with_reason(answer, demo.reason, nl)}"

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
        return format_number(score)

    def _input_slots(self) -> list[str]:
        """Slots other than the judged text, in order of first appearance."""
        seen: list[str] = []
        for m in self.messages:
            for name in slot_names(m.template):
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
            value = field_text(item, field)
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


def field_text(item: Item, field: str) -> str | None:
    """The item's text for ``field`` as prompts read it (aliases such as document/source are tried); None if
    absent."""
    for name in (field, *_FIELD_ALIASES.get(field.lower(), ())):
        try:
            return item.field(name)
        except DataError:
            continue
    return None


def answer_label(name: str) -> str:
    """A criterion name as written in answer lines ("coherence" -> "Coherence"); parsing is
    case-insensitive."""
    return name[:1].upper() + name[1:]


def _title(name: str) -> str:
    return name.replace("_", " ").strip().capitalize()


def _heading(name: str) -> str:
    """A slot name as a heading that keeps its case ("response_B" -> "Response B", "output_1" -> "Output
    1")."""
    text = name.replace("_", " ").strip()
    return text[:1].upper() + text[1:]


def _check_demo_fits(demo: Demo, prompt: JudgePrompt) -> None:
    """TemplateError unless ``demo`` answers the way ``prompt`` does (a verdict for pairwise, else a
    score)."""
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


def prompt_from_spec(spec: Mapping[str, Any]) -> JudgePrompt:
    """Rebuild a prompt from ``model_dump()`` output."""
    return JudgePrompt.model_validate(dict(spec))
