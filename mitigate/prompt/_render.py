"""Rendering a judge prompt for one item: guideline, demos and slots filled in one pass. The judged text and
the demos are inserted verbatim after the slots are filled, never templated; each demo repeats the
template's own item section filled with its texts, then its gold answer in the prompt's answer format."""

from __future__ import annotations

import re
from typing import Protocol

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
    slot_names,
)
from mitigate.prompt.answer._format import AnswerFormat, AnswerKind
from mitigate.prompt.read._layout import item_layout
from mitigate.prompt.read._syntax import TemplateSource
from mitigate.scale import Scale


class Renderable(Protocol):
    """What rendering reads of a prompt (:class:`~mitigate.prompt.JudgePrompt` is one)."""

    messages: tuple[PromptMessage, ...]
    criteria: tuple[Criterion, ...]
    scale: Scale
    guideline: Guideline | None
    output_slot: str
    demos: tuple[Demo, ...]
    demo_template: str
    demo_header: str
    demo_separator: str
    layout: Layout
    source: TemplateSource | None

    @property
    def answer(self) -> AnswerKind: ...
    @property
    def format(self) -> AnswerFormat: ...
    def _field_for(self, slot: str) -> str: ...
    def _input_slots(self) -> list[str]: ...


DEMOS_END = "End of examples. Now evaluate the following."
"""The line between the last demo and the judged item (after the demos, before the item's first heading)."""


def render(prompt: Renderable, item: Item) -> tuple[Message, ...]:
    """Chat messages for judging ``item`` (see :meth:`~mitigate.prompt.JudgePrompt.render`)."""
    for name in prompt.source.unset if prompt.source is not None else ():
        if field_text(item, name) is not None:
            raise TemplateError(
                f"the template's Jinja tests {name!r}, which no constant gave, so it was read as false "
                f"when the template was read; item {item.id!r} has a field {name!r} the prompt would "
                f"leave out: expected --const {name}=... (constants={{{name!r}: ...}}, one value for "
                f"every item), or {{{{{name}}}}} "
                "outside the condition (Jinja is rendered once, before judging)",
                item_id=item.id,
            )
    guideline_text = prompt.guideline.render() if prompt.guideline else ""
    place = checked_place(prompt) if prompt.demos else None
    out: list[Message] = []
    for i, m in enumerate(prompt.messages):
        template, demos_text = m.template, ""
        if place is not None and place[0] == i:
            _, at, after_guideline = place
            nl = "\r\n" if "\r\n" in template else "\n"  # the template's line break
            mark = nl * 2 + DEMOS_MARK if after_guideline else DEMOS_MARK + nl * 2
            template = template[:at] + mark + template[at:]
            demos_text = render_demos(prompt, newline=nl)
            if not after_guideline:  # the judged item follows: a line parts it from the last demo
                demos_text += prompt.demo_separator.replace("\n", nl) + DEMOS_END
        template = template.replace(GUIDELINE_MARK, guideline_text)
        # demos are texts like the judged one: inserted verbatim after the slots are filled
        content = demos_text.join(fill(prompt, part, item) for part in template.split(DEMOS_MARK))
        out.append(Message(role=m.role, content=content))
    if prompt.demos and place is None:  # no slot anywhere: demos go before the last message's text
        last = out[-1]
        demos = render_demos(prompt) + prompt.demo_separator + DEMOS_END
        out[-1] = Message(role=last.role, content=demos + prompt.demo_separator + last.content)
    return tuple(out)


def checked_place(prompt: Renderable) -> tuple[int, int, bool] | None:
    """:func:`demo_place`, with a TemplateError when no place for demos is coherent."""
    place = demo_place(prompt)
    if isinstance(place, str):
        raise TemplateError(f"demos cannot be shown: {place}")
    return place


def demo_place(prompt: Renderable) -> tuple[int, int, bool] | str | None:
    """Where the demos block goes (see :meth:`~mitigate.prompt.JudgePrompt.demo_place`)."""
    messages = prompt.messages
    holders = [i for i, m in enumerate(messages) if SLOT_RE.search(m.template)]
    if not holders:
        return None
    own = [i for i in holders if prompt.output_slot in slot_names(messages[i].template)]
    idx = (own or holders)[0]
    template = messages[idx].template
    where = item_layout(template)
    assert where is not None
    if where.problem:
        return where.problem
    marked = [i for i, m in enumerate(messages) if GUIDELINE_MARK in m.template]
    if prompt.layout == "as_written" and marked:
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


def render_demos(prompt: Renderable, *, newline: str = "\n") -> str:
    """The demonstrations block (see :meth:`~mitigate.prompt.JudgePrompt.render_demos`)."""
    if not prompt.demos:
        return ""
    for demo in prompt.demos:
        check_demo_fits(demo, prompt)
    show = _pairwise_demo if prompt.answer == "pairwise" else _scored_demo
    parts = [show(prompt, d, newline) for d in prompt.demos]
    header, fmt = prompt.demo_header, prompt.format
    default = header == "Examples:\n\n" and prompt.demo_template == DEFAULT_DEMO_TEMPLATE
    if default and fmt.reasoning != "none" and any(not d.reason for d in prompt.demos):
        where = "first" if fmt.reasoning == "before" else "after the answer line"
        header = (
            "Examples (each shows only its final answer; in your own answer, write the reasoning "
            f"the instructions ask for {where}):\n\n"
        )
    return header.replace("\n", newline) + prompt.demo_separator.replace("\n", newline).join(parts)


def item_section(prompt: Renderable) -> tuple[int, int, int] | None:
    """Where the template shows the judged item (see :meth:`~mitigate.prompt.JudgePrompt.item_section`)."""
    where = _section_span(prompt)
    if where is None:
        return None
    idx, start, end = where
    section = prompt.messages[idx].template[start:end]
    return None if GUIDELINE_MARK in section or DEMOS_MARK in section else where


def _section_span(prompt: Renderable) -> tuple[int, int, int] | None:
    """The item section whatever it holds; None when slots span messages."""
    holders = [i for i, m in enumerate(prompt.messages) if SLOT_RE.search(m.template)]
    if len(holders) != 1:
        return None
    where = item_layout(prompt.messages[holders[0]].template)
    return None if where is None else (holders[0], where.start, where.end)


def _demo_section(prompt: Renderable) -> str | None:
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


def _demo_item_text(prompt: Renderable, demo: Demo, nl: str) -> tuple[str, str]:
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


def _scored_demo(prompt: Renderable, demo: Demo, nl: str) -> str:
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


def _pairwise_demo(prompt: Renderable, demo: Demo, nl: str) -> str:
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


def _slot_position(prompt: Renderable, slot: str) -> tuple[int, int]:
    """Where ``slot`` first appears: (message index, offset)."""
    for i, m in enumerate(prompt.messages):
        for found in SLOT_RE.finditer(m.template):
            if found.group(1).strip() == slot:
                return i, found.start()
    return len(prompt.messages), 0


MAX_FILLED_CHARS = 20_000_000
"""The longest message a prompt is built into, in characters (more than any model reads): a template that
shows a slot many times (a Jinja loop over it) is refused before the message is built, not after."""


def fill(prompt: Renderable, template: str, item: Item) -> str:
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
    """The item's text for ``field`` as prompts read it (aliases such as document/source tried); None if
    absent."""
    for name in (field, *_FIELD_ALIASES.get(field.lower(), ())):
        try:
            return item.field(name)
        except DataError:
            continue
    return None


def answer_label(name: str) -> str:
    """A criterion name as written in answer lines ("coherence" -> "Coherence")."""
    return name[:1].upper() + name[1:]


def _title(name: str) -> str:
    return name.replace("_", " ").strip().capitalize()


def check_demo_fits(demo: Demo, prompt: Renderable) -> None:
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
