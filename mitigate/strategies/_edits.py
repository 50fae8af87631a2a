"""Prompt edits shared by several mitigations, in one place instead of mitigations importing each other.

- Where added text goes. Every paragraph a mitigation adds goes at the end of the last user
  message but *before its answer stub* (:meth:`~mitigate.prompt.JudgePrompt.answer_stub`:
  G-Eval's "Evaluation Form (scores ONLY):\n\n- Coherence:", Prometheus' "###Feedback: "),
  so the template still ends where the judge's answer starts; the message's trailing
  whitespace stays after the added text too.
- Managed instruction paragraphs. A few mitigations add one-line paragraphs there
  (SingleAttribute's "rate only" paragraph, Granularity's answer scale note, Sampling's
  chain-of-thought instruction). Each starts with a fixed lead (:data:`ONLY_LEAD`,
  :data:`SCALE_LEAD`, :data:`COT_LEAD`) so it can be found, replaced or removed again; they
  are kept in that order, after any other added paragraph. :func:`set_addendum` and
  :func:`addenda` manage them; :func:`cot_instruction`, :func:`only_paragraph` and
  :func:`scale_note` write them, and :func:`set_cot` adds or removes the chain of thought
  together with the answer format's reasoning.
- Every answer request is worded from the prompt's answer format (``prompt.format``, see
  :class:`~mitigate.prompt.answer.AnswerFormat`): a template that asks for "[RESULT] N" or
  "Rating: [[N]]" is asked for that, never for "Score: N".
- Fixed instructions: :data:`DEFAULT_HINT` (ConsistencyHint), :data:`DEFAULT_COT` (the lead
  of SelfConsistency's instruction, :func:`self_consistency_instruction`) and
  :data:`RTS_LEAD` (how the RTS form's answer instruction begins), with
  :func:`append_instruction` and :func:`insert_after_guideline` to place a paragraph.
- :func:`allow_reasoning`: an added reasoning request never stands before words that forbid
  reasoning ("Do NOT provide any explanation", "only the score",
  :func:`~mitigate.prompt.answer._infer.reasoning_ban`): such words in the answer stub are
  rewritten, elsewhere the combination is refused.
- :func:`multi_criterion_prompt`: the built-in rating template (our own wording) that scores
  one or several criteria in one answer, and :func:`is_multi_criterion_template`, which
  recognises it exactly.

Size: over 600 lines because every prompt edit mitigations share lives here, so that no mitigation
imports another; each edit is short.
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
    infer_answer_format,
    item_layout,
    reasoning_ban,
)
from mitigate.prompt import answer_label as _label
from mitigate.scale import Scale

# --------------------------------------------------------------------------- fixed instructions

DEFAULT_HINT = (
    "Important: the order in which the score options are listed, and how long or detailed each "
    "option's description is, say nothing about which score is right. Decide only from what each "
    "option means; you would give the same score if the options were listed in another order or "
    "described at another length."
)
"""The default :class:`ConsistencyHint` text, for a prompt that lists score options."""

PAIRWISE_HINT = (
    "Important: the order in which the two outputs are shown, and how long each is, say nothing about which "
    "is better. Decide only from what each output says; you would give the same verdict if they were shown "
    "in the other order."
)
"""What :class:`ConsistencyHint` says by default on a pairwise prompt (no options and no score to speak
of)."""

NO_OPTIONS_HINT = (
    "Important: how long the text is, and where things stand in this prompt, say nothing about which answer "
    "is right. Decide only from what the text says; you would give the same answer if it were presented in "
    "another way."
)
"""What :class:`ConsistencyHint` says by default on a prompt that lists no score options."""


def consistency_hint(prompt: JudgePrompt) -> str:
    """The default consistency hint for ``prompt``: about its options only when it lists some, never a score
    on a pairwise one."""
    if prompt.answer == "pairwise":
        return PAIRWISE_HINT
    if prompt.guideline is None:
        return NO_OPTIONS_HINT
    return DEFAULT_HINT


DEFAULT_COT = "Think step by step first and explain your reasoning."
"""How the chain-of-thought instruction :class:`SelfConsistency` adds when ``cot=True`` begins
(:func:`self_consistency_instruction` writes the rest from the prompt's answer format)."""


def self_consistency_instruction(prompt: JudgePrompt) -> str:
    """SelfConsistency's chain-of-thought paragraph for ``prompt``: :data:`DEFAULT_COT`, what to compare, the
    answer line."""
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
    """A copy of ``prompt`` with ``text`` as a new paragraph at the end of its last user message.

    The paragraph goes before the message's answer stub and before the managed paragraphs
    (see the module docstring).
    """
    idx = _target_index(prompt)
    body, end = _split_end(prompt, idx)
    core, found = _split_tail(body)
    return _with_template(prompt, idx, core + "\n\n" + text + _joined(found) + end)


def insert_after_guideline(prompt: JudgePrompt, text: str) -> JudgePrompt:
    """A copy of ``prompt`` with ``text`` as its own paragraph right after the guideline (else at the end).

    A guideline that stands inside the judged item's section (between two of its slots) gets
    no text after it: the paragraph goes at the end instead, so the item's headings and texts
    stay together.
    """
    if prompt.guideline is None or _guideline_inside_item(prompt):
        return append_instruction(prompt, text)
    msgs = tuple(
        PromptMessage(
            role=m.role, template=m.template.replace(GUIDELINE_MARK, GUIDELINE_MARK + "\n\n" + text)
        )
        if GUIDELINE_MARK in m.template
        else m
        for m in prompt.messages
    )
    return prompt.model_copy(update={"messages": msgs})


def _guideline_inside_item(prompt: JudgePrompt) -> bool:
    """True when the guideline stands between the first heading and the last slot of the judged item."""
    for message in prompt.messages:
        at = message.template.find(GUIDELINE_MARK)
        where = item_layout(message.template) if at >= 0 else None
        if where is not None and where.start <= at < where.end:
            return True
    return False


def first_phrase(prompt: JudgePrompt, pattern: re.Pattern[str]) -> str | None:
    """The first phrase of ``prompt``'s own message templates that ``pattern`` matches (None when none
    does)."""
    for message in prompt.messages:
        found = pattern.search(message.template)
        if found:
            return found.group(0)
    return None


STUB_REASONING = "reasoning first, then the answer"
"""What words of an answer stub that ask for the answer alone ("scores ONLY") become when reasoning is
added."""


def allow_reasoning(
    prompt: JudgePrompt, who: str = "Sampling(cot=True)", *, added: Sequence[str] = ()
) -> JudgePrompt:
    """``prompt`` made fit for an added request to reason before the answer, or a one-line ConfigError.

    The template's own words are read by :func:`~mitigate.prompt.answer._infer.reasoning_ban`
    ("Do NOT provide any explanation", "only the score", "scores ONLY"), leaving out the
    managed paragraphs and the ``added`` instruction texts. Words that stand in the answer stub
    closing the prompt (G-Eval's "Evaluation Form (scores ONLY):") are rewritten there to
    :data:`STUB_REASONING`; the rest of the template is left as written. Words elsewhere in the
    template, or a format that asks for the answer first and the explanation after it, cannot
    be reconciled with the request: the combination is refused, naming both.
    """
    if prompt.format.reasoning == "before" and not added:
        return prompt
    core = _without_addenda(prompt)
    texts = core.template_text()
    for text in added:
        texts = [t.replace(text, "") for t in texts]
    found = reasoning_ban(texts)
    if found is None and prompt.format.reasoning == "after" and not core.format.json_key:
        found = "the answer first, then the explanation"
        raise ConfigError(
            f"{who} asks for reasoning before the answer, but the template asks for {found}; expected a "
            "template whose answer instruction allows text before the answer line (or leave the reasoning "
            "request out)"
        )
    if found is None:
        return prompt
    idx = _target_index(prompt)
    stub = prompt.answer_stub(idx)
    if found in stub:
        template = prompt.messages[idx].template
        rewritten = template[: len(template) - len(stub)] + stub.replace(found, STUB_REASONING)
        out = _with_template(prompt, idx, rewritten)
        again = [t for t in _without_addenda(out).template_text()]
        for text in added:
            again = [t.replace(text, "") for t in again]
        if reasoning_ban(again) is None:
            return out
        found = reasoning_ban(again) or found
    raise ConfigError(
        f"{who} asks for reasoning before the answer, but the template says {found!r}; expected a template "
        "whose answer instruction allows text before the answer line (or leave the reasoning request out)"
    )


# --------------------------------------------------------------------------- managed paragraphs

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
    """Index of the message that carries added paragraphs: the last user message (else the last one)."""
    for i in range(len(prompt.messages) - 1, -1, -1):
        if prompt.messages[i].role == "user":
            return i
    return len(prompt.messages) - 1


def _split_tail(template: str) -> tuple[str, dict[str, str]]:
    """The template without its trailing managed paragraphs, and those paragraphs by lead."""
    found: dict[str, str] = {}
    while True:
        m = _TAIL_RE.search(template)
        if m is None:
            break
        line = m.group(1)
        lead = next((lead for lead in MANAGED_LEADS if line.startswith(lead)), None)
        if lead is None or lead in found:
            break
        found[lead] = line
        template = template[: m.start()]
    return template, found


def _split_end(prompt: JudgePrompt, idx: int) -> tuple[str, str]:
    """Message ``idx``'s template cut where added paragraphs go: the text before, and the rest (whitespace,
    answer stub)."""
    template = prompt.messages[idx].template
    stub = prompt.answer_stub(idx)
    body = template[: len(template) - len(stub)].rstrip()
    return body, template[len(body) :]


def message_end(prompt: JudgePrompt) -> tuple[int, str, str]:
    """Where added paragraphs go: the last user message's index, its text before that point, and the rest.

    The rest is the message's trailing whitespace and its answer stub
    (:meth:`~mitigate.prompt.JudgePrompt.answer_stub`); ``with_message(prompt, idx, body +
    added + rest)`` puts text there.
    """
    idx = _target_index(prompt)
    body, end = _split_end(prompt, idx)
    return idx, body, end


def with_message(prompt: JudgePrompt, idx: int, template: str) -> JudgePrompt:
    """A copy of ``prompt`` whose message ``idx`` has the text ``template`` (same role)."""
    return _with_template(prompt, idx, template)


def _joined(found: dict[str, str]) -> str:
    """The managed paragraphs in their canonical order, each after a blank line."""
    return "".join(f"\n\n{found[k]}" for k in MANAGED_LEADS if k in found)


def _with_template(prompt: JudgePrompt, idx: int, template: str) -> JudgePrompt:
    messages = list(prompt.messages)
    messages[idx] = PromptMessage(role=messages[idx].role, template=template)
    return prompt.model_copy(update={"messages": tuple(messages)})


def addenda(prompt: JudgePrompt) -> dict[str, str]:
    """The managed instruction paragraphs at the end of ``prompt``'s last user message (before its stub), by
    lead."""
    idx = _target_index(prompt)
    return _split_tail(_split_end(prompt, idx)[0])[1]


def set_addendum(prompt: JudgePrompt, lead: str, text: str | None) -> JudgePrompt:
    """A copy of ``prompt`` whose managed paragraph with ``lead`` is ``text`` (None removes it).

    ``text`` must start with ``lead`` and be a single line. Other managed paragraphs are
    kept, and all are re-appended in the canonical order (rate-only, scale, chain of thought,
    SelfConsistency's chain of thought), before the message's answer stub.
    """
    if lead not in MANAGED_LEADS:
        raise ConfigError(f"expected one of the managed paragraph leads {list(MANAGED_LEADS)}; got {lead!r}")
    if text is not None and (not text.startswith(lead) or "\n" in text):
        raise ConfigError(f"expected a single-line paragraph starting with {lead!r}; got {text!r}")
    idx = _target_index(prompt)
    body, end = _split_end(prompt, idx)
    core, found = _split_tail(body)
    if text is None:
        found.pop(lead, None)
    else:
        found[lead] = text
    return _with_template(prompt, idx, core + _joined(found) + end)


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
    """The chain-of-thought paragraph for ``prompt``: reason step by step, then the answer line of its format.

    A prompt scoring several criteria in one answer asks for one "<Criterion>: <score>" line
    each (what :func:`multi_criterion_prompt` reads); every other prompt asks for its answer
    format's line (:meth:`~mitigate.prompt.answer.AnswerFormat.instruction`), e.g. 'End your
    answer with a final line "[RESULT] N", with N a score from 1 to 5.'
    """
    return f"{COT_LEAD} {_final_answer(prompt)}"


_REASONING_LEADS = {COT_LEAD: cot_instruction, DEFAULT_COT: self_consistency_instruction}
"""The managed paragraphs that ask for reasoning before the answer, and what writes each."""


def _single_answer(prompt: JudgePrompt) -> bool:
    """True when the prompt's answer format is one value (not one line per criterion)."""
    return prompt.answer != "score" or len(prompt.criteria) <= 1


def set_cot(prompt: JudgePrompt, on: bool, *, lead: str = COT_LEAD, who: str | None = None) -> JudgePrompt:
    """A copy of ``prompt`` with a chain-of-thought paragraph added (``on``) or removed.

    ``lead`` picks the paragraph: :data:`COT_LEAD` (Sampling's, :func:`cot_instruction`) or
    :data:`DEFAULT_COT` (SelfConsistency's, :func:`self_consistency_instruction`). The answer
    format follows: with such a paragraph its reasoning is "before" (the answer is read from
    the last answer line, and a constrained backend lets the reasoning through); without any,
    the reasoning the template itself states again. The other managed paragraphs that word
    the answer are rewritten to match (:func:`refresh_addenda`). Adding one goes through
    :func:`allow_reasoning` (``who`` names the asker in its refusal).
    """
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
    """The reasoning ``prompt``'s own text asks for, without the managed paragraphs (what from_template would
    read)."""
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

    ``prompt`` is the child, scoring its one criterion. With ``answer=True`` the paragraph
    also asks for the child's answer line, worded from its answer format
    (:meth:`~mitigate.prompt.answer.AnswerFormat.request`); ``answer=False`` leaves the answer
    to the prompt's own closing instruction (what the RTS/MCQ forms of
    :mod:`mitigate.strategies._forms` use, since they write their own).
    """
    criterion = prompt.criteria[0]
    definition = _one_line(criterion.definition)
    what = f"{criterion.name} ({definition.rstrip('.')})" if definition else criterion.name
    text = f"{ONLY_LEAD} {what}; ignore the other criteria mentioned above."
    return text + " " + prompt.format.request(prompt.scale) if answer else text


def refresh_addenda(prompt: JudgePrompt) -> JudgePrompt:
    """Every managed paragraph present rewritten for the prompt's current criteria, scale and answer format.

    For a transform that changed one of them (SingleAttribute's child, the RTS/MCQ forms,
    a chain of thought switching the format's reasoning): the "rate only" paragraph keeps
    whether it asked for the answer line, the scale note names the current format, and the
    chain-of-thought paragraphs ask for the current answer line. An MCQ prompt loses the
    scale note (it answers with a letter).
    """
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


def _num(x: float) -> str:
    return f"{round(x, 6):g}"


def scale_note(scale: Scale, fmt: AnswerFormat | None = None) -> str:
    """The answer-scale paragraph Granularity adds to free-form templates (one line, starts with
    ``SCALE_LEAD``).

    It states the range and, when the answer format is not the plain "Score: N", the answer
    line the number goes in; with word modifiers, examples written in that line.
    """
    fmt = fmt or AnswerFormat.default()
    lo, hi = _num(scale.min), _num(scale.max)
    text = f"{SCALE_LEAD} give a whole number from {lo} to {hi}, where {lo} is the worst and {hi} the best"
    if fmt.stub and fmt.reasoning != "before" and not fmt.is_default_score_line:
        text += f', completing the last line "{fmt.stub}"'
    elif not fmt.is_default_score_line:
        text += f', written as "{fmt.shape()}"'
    text += "."
    if scale.modifiers:
        mid = _num(round((scale.min + scale.max) / 2))
        weak, strong = (fmt.render(f"{word} {mid}", scale) for word in ("weak", "strong"))
        text += (
            f' You may put "weak" or "strong" in front of it (for example "{weak}" or "{strong}") when '
            "the text is "
            "a little below or a little above that point."
        )
    return text


# --------------------------------------------------------------------------- built-in template


def _title(slot: str) -> str:
    return slot.replace("_", " ").strip().capitalize()


def scale_sentence(scale: Scale, *, each: bool) -> str:
    """How the built-in template states the scale (range, step, optional word modifiers)."""
    lo, hi = _num(scale.min), _num(scale.max)
    what = "each criterion" if each else "it"
    text = f"Score {what} on a scale from {lo} to {hi}, where {lo} is the worst and {hi} the best"
    if scale.step != 1:
        text += f", in steps of {_num(scale.step)}"
    text += "."
    if scale.modifiers:
        mid = _num(round((scale.min + scale.max) / 2))
        text += (
            f' You may put "weak" or "strong" in front of a score to mean a little below or a little '
            f'above that point (for example "weak {mid}" or "strong {mid}").'
        )
    return text


def _slot_order(templates: Sequence[str]) -> list[str]:
    seen: list[str] = []
    for t in templates:
        for m in SLOT_RE.finditer(t):
            name = m.group(1).strip()
            if name not in seen:
                seen.append(name)
    return seen


def multi_criterion_prompt(
    base: JudgePrompt, criteria: Sequence[Criterion], order: Sequence[str] | None = None
) -> JudgePrompt:
    """A rating prompt (our own wording) that scores ``criteria`` of ``base``'s judged text in one answer.

    Kept from ``base``: its system messages (those without a guideline), its input and output slots (shown as
    "<Slot>:" blocks in the order they first appear), scale, task, slot mapping and demos; a chain-of-thought
    paragraph added by ``Sampling(cot=True)`` or ``SelfConsistency`` is carried over (reworded for the new
    criteria). Dropped: the user messages' own wording and the guideline (a scoring guideline describes one
    criterion). ``order`` (criterion names) sets the order the criteria are listed and answered in; the
    returned prompt's ``criteria`` are in that order. With one criterion the answer is the base's own answer
    line (its format, renamed for the criterion where it names another one: "Score: N", "[RESULT] N",
    "Fluency: N"); with several, one line "<Criterion>: N" per criterion (read by ``parse_criteria``; the
    prompt's ``answer_format`` is then None).
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
        if sorted(order) != sorted(names) or len(order) != len(names):
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
    out_word = out_title.lower()
    several = len(crits) > 1

    listed = "\n".join(
        f"- {_label(c.name)}: {_one_line(c.definition)}" if c.definition.strip() else f"- {_label(c.name)}"
        for c in crits
    )
    if several:
        intro = f"Evaluate the {out_word} below on each of these {len(crits)} criteria, in the order listed:"
        # a placeholder in angle brackets: a 0.5B judge copied a bare "N" literally ("N N N N")
        answer = (
            "Answer with one line per criterion, in this order, replacing each <score> with your score "
            f"from {_num(base.scale.min)} to {_num(base.scale.max)}:\n"
            + "\n".join(f"{_label(c.name)}: <score>" for c in crits)
        )
        answer_format = AnswerFormat.default("score")
    else:
        intro = f"Evaluate the {out_word} below on one criterion:"
        # the base's own answer line, renamed for this criterion ("Coherence: N" -> "Fluency: N"); worded so
        # that
        # it reads the same with or without a chain of thought before it
        # the template's closing stub is not in the new prompt: the whole line is the judge's to write
        answer_format = base.format.for_criterion(
            crits[0].name, [c.name for c in base.criteria]
        ).without_stub()
        answer = answer_format.with_reasoning("before").instruction(base.scale)
    blocks = [f"{_title(s)}:\n{{{{{s}}}}}" for s in inputs] + [f"{out_title}:\n{{{{{base.output_slot}}}}}"]
    user = "\n\n".join([intro, listed, scale_sentence(base.scale, each=several), *blocks, answer])

    built = base.model_copy(
        update={
            "messages": (*systems, PromptMessage(role="user", template=user)),
            "criteria": tuple(crits),
            "guideline": None,
            "answer_format": answer_format,
        }
    )
    built = JudgePrompt.model_validate(built.model_dump())
    for lead in cots:
        built = set_cot(built, True, lead=lead)
    return built


def _without_addenda(prompt: JudgePrompt) -> JudgePrompt:
    for lead in MANAGED_LEADS:
        prompt = set_addendum(prompt, lead, None)
    return prompt


def is_multi_criterion_template(prompt: JudgePrompt) -> bool:
    """True when ``prompt`` is exactly what :func:`multi_criterion_prompt` builds for its criteria.

    Managed paragraphs (chain of thought ...) are ignored; any other edit of the text makes
    the prompt count as a free-form template.
    """
    if prompt.answer != "score" or not prompt.criteria or prompt.guideline is not None:
        return False
    core = _without_addenda(prompt)
    try:
        rebuilt = multi_criterion_prompt(core, core.criteria)
    except ConfigError:
        return False
    return rebuilt == core
