"""Prompt edits shared by several mitigations, in one place instead of mitigations importing each other.

Added paragraphs go at the end of the last user message, before its answer stub; the *managed* one-line
paragraphs (rate only one criterion, the answer scale, a chain of thought) start with fixed leads
(:data:`MANAGED_LEADS`) so they can be found, replaced or removed. Every answer request is worded from the
prompt's answer format.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Literal

from mitigate.errors import ConfigError
from mitigate.prompt import (
    GUIDELINE_MARK,
    SLOT_RE,
    AnswerFormat,
    Criterion,
    JudgePrompt,
    PromptMessage,
    format_number,
    infer_answer_format,
    item_layout,
    reasoning_ban,
)
from mitigate.prompt import answer_label as _label
from mitigate.scale import Scale

# --------------------------------------------------------------------------- fixed instructions

DEFAULT_HINT = (
    "Important: the order in which the score options are listed, and how long or detailed each option's "
    "description is, say nothing about which score is right. Decide only from what each option means; you "
    "would give the same score if the options were listed in another order or described at another length."
)
"""The default :class:`ConsistencyHint` text, for a prompt that lists score options."""

PAIRWISE_HINT = (
    "Important: the order in which the two outputs are shown, and how long each is, say nothing about which "
    "is better. Decide only from what each output says; you would give the same verdict if they were shown "
    "in the other order."
)
"""The default :class:`ConsistencyHint` text on a pairwise prompt."""

NO_OPTIONS_HINT = (
    "Important: how long the text is, and where things stand in this prompt, say nothing about which answer "
    "is right. Decide only from what the text says; you would give the same answer if it were presented in "
    "another way."
)
"""The default :class:`ConsistencyHint` text on a prompt that lists no score options."""


def consistency_hint(prompt: JudgePrompt) -> str:
    """The default consistency hint for ``prompt``: about its options only when it lists some."""
    if prompt.answer == "pairwise":
        return PAIRWISE_HINT
    return NO_OPTIONS_HINT if prompt.guideline is None else DEFAULT_HINT


DEFAULT_COT = "Think step by step first and explain your reasoning."
"""How :class:`SelfConsistency`'s chain-of-thought paragraph begins."""


def self_consistency_instruction(prompt: JudgePrompt) -> str:
    """SelfConsistency's chain-of-thought paragraph: :data:`DEFAULT_COT`, what to compare, the answer line."""
    if prompt.answer == "pairwise":
        what = "Compare the two outputs point by point."
    elif prompt.guideline is not None:
        what = "Compare the text with each option of the guideline."
    else:
        what = ""
    return " ".join(p for p in (DEFAULT_COT, what, _final_answer(prompt)) if p)


RTS_LEAD = "First give a brief reason for your rating"
"""How the RTS form's answer instruction begins (used to recognise an RTS prompt)."""


def append_instruction(prompt: JudgePrompt, text: str) -> JudgePrompt:
    """A copy of ``prompt`` with ``text`` as a new paragraph where added paragraphs go."""
    idx, body, end = message_end(prompt)
    core, found = _split_tail(body)
    return with_message(prompt, idx, core + "\n\n" + text + _joined(found) + end)


def insert_after_guideline(prompt: JudgePrompt, text: str) -> JudgePrompt:
    """A copy of ``prompt`` with ``text`` as its own paragraph right after the guideline (else at the end).
    A guideline inside the judged item's section gets no text after it: the paragraph goes at the end
    instead."""
    if prompt.guideline is None or _guideline_inside_item(prompt):
        return append_instruction(prompt, text)
    after = GUIDELINE_MARK + "\n\n" + text
    return prompt.map_templates(
        lambda m: PromptMessage(role=m.role, template=m.template.replace(GUIDELINE_MARK, after))
    )


def _guideline_inside_item(prompt: JudgePrompt) -> bool:
    for message in prompt.messages:
        at = message.template.find(GUIDELINE_MARK)
        where = item_layout(message.template) if at >= 0 else None
        if where is not None and where.start <= at < where.end:
            return True
    return False


STUB_REASONING = "reasoning first, then the answer"
"""What answer-stub words that ask for the answer alone ("scores ONLY") become when reasoning is added."""


def allow_reasoning(
    prompt: JudgePrompt, who: str = "Sampling(cot=True)", *, added: Sequence[str] = ()
) -> JudgePrompt:
    """``prompt`` made fit for an added request to reason before the answer, or a one-line ConfigError.

    Words forbidding reasoning (:func:`~mitigate.prompt.reasoning_ban`) are rewritten to
    :data:`STUB_REASONING` in the answer stub (words confining the answer to one line: anywhere after the
    last slot, "Answer with one line" becoming "Answer with reasoning first, then the answer"); anywhere
    else, or with a format that answers first, ``who``'s request is refused.
    """
    if prompt.format.reasoning == "before" and not added:
        return prompt
    found = _ban(prompt, added)
    if found is None and prompt.format.reasoning == "after" and not prompt.format.json_key:
        raise ConfigError(
            f"{who} asks for reasoning before the answer, but the template asks for the answer first, then "
            "the explanation; expected a template whose answer instruction allows text before the answer "
            "line (or leave the reasoning request out)"
        )
    if found is None:
        return prompt
    idx = _target_index(prompt)
    template = prompt.messages[idx].template
    slots = list(SLOT_RE.finditer(template))
    # an answer confined to one line may be asked anywhere after the last slot; other words only in the stub
    tail = template[slots[-1].end() if slots else 0 :] if "line" in found.lower() else prompt.answer_stub(idx)
    if tail and found in tail:
        words = ("with " if re.match(r"(?:with|in|on|as)\s", found, re.I) else "") + STUB_REASONING
        words = words[0].upper() + words[1:] if found[0].isupper() else words
        out = with_message(prompt, idx, template[: len(template) - len(tail)] + tail.replace(found, words))
        again = _ban(out, added)
        if again is None:
            return out
        found = again
    raise ConfigError(
        f"{who} asks for reasoning before the answer, but the template says {found!r}; expected a template "
        "whose answer instruction allows text before the answer line (or leave the reasoning request out)"
    )


def _ban(prompt: JudgePrompt, added: Sequence[str]) -> str | None:
    """What in the template's own words forbids reasoning (managed paragraphs and ``added`` texts aside)."""
    texts = _without_addenda(prompt).template_text()
    for text in added:
        texts = [t.replace(text, "") for t in texts]
    return reasoning_ban(texts)


ONLY_LEAD = "For this request, rate only"
"""Lead of the paragraph that restricts a free-form multi-criterion template to one criterion."""

SCALE_LEAD = "Answer scale:"
"""Lead of the answer-scale paragraph added by Granularity to free-form templates."""

COT_LEAD = "Before answering, explain your reasoning step by step."
"""Lead of the chain-of-thought paragraph added by Sampling(cot=True)."""

MANAGED_LEADS = (ONLY_LEAD, SCALE_LEAD, COT_LEAD, DEFAULT_COT)
"""The leads of the managed paragraphs, in their canonical order at the end of the message."""

_TAIL_RE = re.compile(r"\n\n([^\n]*)\Z")


def _target_index(prompt: JudgePrompt) -> int:
    """The index of the message that carries added paragraphs: the last user message (else the last one)."""
    last = len(prompt.messages) - 1
    return next((i for i in range(last, -1, -1) if prompt.messages[i].role == "user"), last)


def _split_tail(template: str) -> tuple[str, dict[str, str]]:
    """The template without its trailing managed paragraphs, and those paragraphs by lead."""
    found: dict[str, str] = {}
    while (m := _TAIL_RE.search(template)) is not None:
        line = m.group(1)
        lead = next((lead for lead in MANAGED_LEADS if line.startswith(lead)), None)
        if lead is None or lead in found:
            break
        found[lead] = line
        template = template[: m.start()]
    return template, found


def message_end(prompt: JudgePrompt) -> tuple[int, str, str]:
    """Where added paragraphs go: the last user message's index, its text before that point (its answer stub
    and the blank space before that left out), and the rest."""
    idx = _target_index(prompt)
    template = prompt.messages[idx].template
    body = template[: len(template) - len(prompt.answer_stub(idx))].rstrip()
    return idx, body, template[len(body) :]


def _joined(found: dict[str, str]) -> str:
    """The managed paragraphs in their canonical order, each after a blank line."""
    return "".join(f"\n\n{found[k]}" for k in MANAGED_LEADS if k in found)


def with_message(prompt: JudgePrompt, idx: int, template: str) -> JudgePrompt:
    """A copy of ``prompt`` whose message ``idx`` has the text ``template`` (same role)."""
    messages = list(prompt.messages)
    messages[idx] = PromptMessage(role=messages[idx].role, template=template)
    return prompt.model_copy(update={"messages": tuple(messages)})


def addenda(prompt: JudgePrompt) -> dict[str, str]:
    """The managed paragraphs at the end of ``prompt``'s last user message (before its stub), by lead."""
    return _split_tail(message_end(prompt)[1])[1]


def set_addendum(prompt: JudgePrompt, lead: str, text: str | None) -> JudgePrompt:
    """A copy of ``prompt`` whose managed paragraph ``lead`` is ``text`` (None removes it)."""
    if lead not in MANAGED_LEADS:
        raise ConfigError(f"expected one of the managed paragraph leads {list(MANAGED_LEADS)}; got {lead!r}")
    if text is not None and (not text.startswith(lead) or "\n" in text):
        raise ConfigError(f"expected a single-line paragraph starting with {lead!r}; got {text!r}")
    idx, body, end = message_end(prompt)
    core, found = _split_tail(body)
    if text is None:
        found.pop(lead, None)
    else:
        found[lead] = text
    return with_message(prompt, idx, core + _joined(found) + end)


def _one_line(text: str) -> str:
    return " ".join(text.split())


def _final_answer(prompt: JudgePrompt) -> str:
    """The sentence asking for the final answer line after reasoning, in the prompt's answer format."""
    names = [c.name for c in prompt.criteria] or ["score"]
    if prompt.answer == "score" and len(names) > 1:
        return (
            "Then give your final scores on the last lines, one line per criterion in the form "
            f"'{_label(names[0])}: <score>'."
        )
    return prompt.format.with_reasoning("before").instruction(prompt.scale)


def cot_instruction(prompt: JudgePrompt) -> str:
    """The chain-of-thought paragraph: reason step by step, then the answer line of the format."""
    return f"{COT_LEAD} {_final_answer(prompt)}"


_REASONING_LEADS = {COT_LEAD: cot_instruction, DEFAULT_COT: self_consistency_instruction}
"""The managed paragraphs that ask for reasoning before the answer, and what writes each."""


def _single_answer(prompt: JudgePrompt) -> bool:
    return prompt.answer != "score" or len(prompt.criteria) <= 1


def set_cot(prompt: JudgePrompt, on: bool, *, lead: str = COT_LEAD, who: str | None = None) -> JudgePrompt:
    """A copy of ``prompt`` with the chain-of-thought paragraph ``lead`` (:data:`COT_LEAD` or
    :data:`DEFAULT_COT`) added (``on``) or removed. The answer format's reasoning follows: "before" with
    such a paragraph, else what the template itself states; the other managed paragraphs are reworded to
    match (:func:`refresh_addenda`). Adding goes through :func:`allow_reasoning`."""
    if lead not in _REASONING_LEADS:
        raise ConfigError(f"expected a chain-of-thought lead {list(_REASONING_LEADS)}; got {lead!r}")
    if on:
        prompt = allow_reasoning(
            prompt, who or ("Sampling(cot=True)" if lead == COT_LEAD else "SelfConsistency(cot=True)")
        )
        if _single_answer(prompt):
            prompt = prompt.with_answer_format(prompt.format.with_reasoning("before"))
        prompt = set_addendum(prompt, lead, _REASONING_LEADS[lead](prompt))
    elif lead in addenda(prompt):
        prompt = set_addendum(prompt, lead, None)
        if _single_answer(prompt) and not any(k in addenda(prompt) for k in _REASONING_LEADS):
            prompt = prompt.with_answer_format(prompt.format.with_reasoning(_stated_reasoning(prompt)))
    else:
        return prompt
    return refresh_addenda(prompt)


def _stated_reasoning(prompt: JudgePrompt) -> Literal["none", "before", "after"]:
    """The reasoning ``prompt``'s own text asks for, without the managed paragraphs."""
    fmt = prompt.format
    if not fmt.inferred:
        return "none"
    core = _without_addenda(prompt)
    labels = fmt.labels if fmt.kind == "pairwise" else ()
    name = prompt.criteria[0].name if prompt.criteria else None
    return infer_answer_format(
        [m.template for m in core.messages], kind=fmt.kind, labels=labels, tie=fmt.tie, criterion=name
    ).reasoning


def only_paragraph(prompt: JudgePrompt, *, answer: bool = True) -> str:
    """The "rate only <criterion>" paragraph :class:`SingleAttribute` adds to a free-form template's child.
    With ``answer=True`` it also asks for the child's answer line; ``answer=False`` leaves that to the
    prompt's own closing instruction (the RTS/MCQ forms write their own)."""
    criterion = prompt.criteria[0]
    definition = _one_line(criterion.definition)
    what = f"{criterion.name} ({definition.rstrip('.')})" if definition else criterion.name
    text = f"{ONLY_LEAD} {what}; ignore the other criteria mentioned above."
    return text + " " + prompt.format.request(prompt.scale) if answer else text


def refresh_addenda(prompt: JudgePrompt) -> JudgePrompt:
    """Every managed paragraph present reworded for the prompt's criteria, scale and answer format."""
    found = addenda(prompt)
    if ONLY_LEAD in found and len(prompt.criteria) == 1:
        answer = found[ONLY_LEAD] != only_paragraph(prompt, answer=False)
        prompt = set_addendum(prompt, ONLY_LEAD, only_paragraph(prompt, answer=answer))
    if SCALE_LEAD in found:
        prompt = set_addendum(
            prompt, SCALE_LEAD, scale_note(prompt.scale, prompt.format) if prompt.answer == "score" else None
        )
    for lead, write in _REASONING_LEADS.items():
        if lead in found:
            prompt = set_addendum(prompt, lead, write(prompt))
    return prompt


def scale_note(scale: Scale, fmt: AnswerFormat | None = None) -> str:
    """The answer-scale paragraph Granularity adds to free-form templates."""
    fmt = fmt or AnswerFormat.default()
    lo, hi = format_number(scale.min), format_number(scale.max)
    text = f"{SCALE_LEAD} give a whole number from {lo} to {hi}, where {lo} is the worst and {hi} the best"
    if fmt.stub and fmt.reasoning != "before" and not fmt.is_default_score_line:
        text += f', completing the last line "{fmt.stub}"'
    elif not fmt.is_default_score_line:
        text += f', written as "{fmt.shape()}"'
    text += "."
    if scale.modifiers:
        mid = format_number(round((scale.min + scale.max) / 2))
        weak, strong = (fmt.render(f"{word} {mid}", scale) for word in ("weak", "strong"))
        text += (
            f' You may put "weak" or "strong" in front of it (for example "{weak}" or "{strong}") when '
            "the text is a little below or a little above that point."
        )
    return text


def _title(slot: str) -> str:
    return slot.replace("_", " ").strip().capitalize()


def scale_sentence(scale: Scale, *, each: bool) -> str:
    """How the built-in template states the scale (range, step, optional word modifiers)."""
    lo, hi = format_number(scale.min), format_number(scale.max)
    what = "each criterion" if each else "it"
    text = f"Score {what} on a scale from {lo} to {hi}, where {lo} is the worst and {hi} the best"
    if scale.step != 1:
        text += f", in steps of {format_number(scale.step)}"
    text += "."
    if scale.modifiers:
        mid = format_number(round((scale.min + scale.max) / 2))
        text += (
            f' You may put "weak" or "strong" in front of a score to mean a little below or a little '
            f'above that point (for example "weak {mid}" or "strong {mid}").'
        )
    return text


def _slot_order(templates: Sequence[str]) -> list[str]:
    return list(dict.fromkeys(m.group(1).strip() for t in templates for m in SLOT_RE.finditer(t)))


def multi_criterion_prompt(
    base: JudgePrompt, criteria: Sequence[Criterion], order: Sequence[str] | None = None
) -> JudgePrompt:
    """A rating prompt (our own wording) that scores ``criteria`` of ``base``'s judged text in one answer.

    It keeps ``base``'s system messages, slots (as "<Slot>:" blocks), scale, task, demos and chain-of-thought
    paragraphs, not its wording or guideline; ``order`` sets the order the criteria are asked in. One
    criterion is answered in the base's own answer line, several in one "<Criterion>: N" line each.
    """
    if base.answer != "score":
        raise ConfigError(
            "expected a prompt answering with a score to build a rating template from; got "
            f"answer={base.answer!r}"
        )
    crits = list(criteria)
    if not crits:
        raise ConfigError("expected at least one criterion for a rating template; got none")
    names = [c.name for c in crits]
    if len(set(names)) != len(names):
        raise ConfigError(f"expected distinct criterion names; got {names}")
    if order is not None and len(order) > 0:
        if sorted(order) != sorted(names):
            raise ConfigError(f"expected the order to list exactly the criteria {names}; got {list(order)}")
        by_name = {c.name: c for c in crits}
        crits = [by_name[n] for n in order]
    cots = [lead for lead in _REASONING_LEADS if lead in addenda(base)]
    if len(crits) > 1:
        for demo in base.demos:
            if not isinstance(demo.score, dict) or any(n not in demo.score for n in names):
                raise ConfigError(
                    f"a prompt scoring {names} in one answer needs demos scored on every one of them; demo "
                    f"{demo.item.id!r} has {demo.score!r}. Demo mitigations show one criterion's score: "
                    "place them after SingleAttribute (one call per criterion), or build the prompt with "
                    "demos scored on every criterion (Demo(score={criterion: value, ...}))"
                )

    systems = [m for m in base.messages if m.role == "system" and GUIDELINE_MARK not in m.template]
    system_slots = set(_slot_order([m.template for m in systems]))
    other = [m.template for m in base.messages if m.role != "system"]
    inputs = [s for s in _slot_order(other) if s != base.output_slot and s not in system_slots]
    out_title = _title(base.output_slot)
    out_word, several = out_title.lower(), len(crits) > 1

    listed = "\n".join(
        f"- {_label(c.name)}: {_one_line(c.definition)}" if c.definition.strip() else f"- {_label(c.name)}"
        for c in crits
    )
    if several:
        intro = f"Evaluate the {out_word} below on each of these {len(crits)} criteria, in the order listed:"
        # a placeholder in angle brackets: a 0.5B judge copied a bare "N" literally ("N N N N")
        answer = (
            "Answer with one line per criterion, in this order, replacing each <score> with your score "
            f"from {format_number(base.scale.min)} to {format_number(base.scale.max)}:\n"
            + "\n".join(f"{_label(c.name)}: <score>" for c in crits)
        )
        fmt = AnswerFormat.default("score")
    else:
        intro = f"Evaluate the {out_word} below on one criterion:"
        # the base's own answer line, renamed for this criterion ("Coherence: N" -> "Fluency: N"), without
        # the template's closing stub: the whole line is the judge's to write
        fmt = base.format.for_criterion(crits[0].name, [c.name for c in base.criteria]).without_stub()
        answer = fmt.with_reasoning("before").instruction(base.scale)
    blocks = [f"{_title(s)}:\n{{{{{s}}}}}" for s in inputs] + [f"{out_title}:\n{{{{{base.output_slot}}}}}"]
    user = "\n\n".join([intro, listed, scale_sentence(base.scale, each=several), *blocks, answer])

    messages = (*systems, PromptMessage(role="user", template=user))
    update = {"messages": messages, "criteria": tuple(crits), "guideline": None, "answer_format": fmt}
    built = JudgePrompt.model_validate(base.model_copy(update=update).model_dump())
    for lead in cots:
        built = set_cot(built, True, lead=lead)
    return built


def _without_addenda(prompt: JudgePrompt) -> JudgePrompt:
    for lead in MANAGED_LEADS:
        prompt = set_addendum(prompt, lead, None)
    return prompt


def is_multi_criterion_template(prompt: JudgePrompt) -> bool:
    """True when ``prompt`` is exactly what :func:`multi_criterion_prompt` builds (addenda aside)."""
    if prompt.answer != "score" or not prompt.criteria or prompt.guideline is not None:
        return False
    core = _without_addenda(prompt)
    try:
        rebuilt = multi_criterion_prompt(core, core.criteria)
    except ConfigError:
        return False
    return rebuilt == core
