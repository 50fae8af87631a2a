"""Prompt edits shared by several mitigations, in one place instead of mitigations importing each other.

- Managed instruction paragraphs. A few mitigations add one-line paragraphs at the end of
  the last user message (SingleAttribute's "rate only" paragraph, Granularity's answer
  scale note, Sampling's chain-of-thought instruction). Each starts with a fixed lead
  (:data:`ONLY_LEAD`, :data:`SCALE_LEAD`, :data:`COT_LEAD`) so it can be found, replaced or
  removed again; they are kept in that order. :func:`set_addendum` and :func:`addenda`
  manage them; :func:`cot_instruction` and :func:`only_paragraph` write two of them.
- Fixed instructions: :data:`DEFAULT_HINT` (ConsistencyHint), :data:`DEFAULT_COT`
  (SelfConsistency) and :data:`RTS_LEAD` (how the RTS form's answer instruction begins),
  with :func:`append_instruction` and :func:`insert_after_guideline` to place a paragraph.
- :func:`warn_if_reasoning_forbidden`: the check that a chain-of-thought request does not
  contradict the user's own "score only" wording.
- :func:`multi_criterion_prompt`: the built-in rating template (our own wording) that scores
  one or several criteria in one answer, and :func:`is_multi_criterion_template`, which
  recognises it exactly.
"""

from __future__ import annotations

import re
import warnings
from collections.abc import Sequence

from mitigate.errors import ConfigError, PromptConflictWarning
from mitigate.prompt import GUIDELINE_MARK, SLOT_RE, Criterion, JudgePrompt, PromptMessage
from mitigate.prompt import answer_label as _label
from mitigate.scale import Scale

__all__ = [
    "COT_LEAD",
    "DEFAULT_COT",
    "DEFAULT_HINT",
    "MANAGED_LEADS",
    "ONLY_LEAD",
    "RTS_LEAD",
    "SCALE_LEAD",
    "addenda",
    "append_instruction",
    "cot_instruction",
    "first_phrase",
    "insert_after_guideline",
    "is_multi_criterion_template",
    "multi_criterion_prompt",
    "only_paragraph",
    "scale_sentence",
    "set_addendum",
    "warn_if_reasoning_forbidden",
]

# --------------------------------------------------------------------------- fixed instructions

DEFAULT_HINT = (
    "Important: the order in which the score options are listed, and how long or detailed each "
    "option's description is, say nothing about which score is right. Decide only from what each "
    "option means; you would give the same score if the options were listed in another order or "
    "described at another length."
)
"""The default :class:`ConsistencyHint` text."""

DEFAULT_COT = (
    "Think step by step first: compare the text with each option of the guideline and explain your "
    "reasoning, then give the score in the format asked for above as your final line."
)
"""The chain-of-thought instruction :class:`SelfConsistency` adds when ``cot=True``."""


RTS_LEAD = "First give a brief reason for your rating"
"""How the RTS form's answer instruction begins (used to recognise an RTS prompt)."""


def append_instruction(prompt: JudgePrompt, text: str) -> JudgePrompt:
    """A copy of ``prompt`` whose last message ends with ``text`` as a new paragraph."""
    msgs = list(prompt.messages)
    last = msgs[-1]
    msgs[-1] = PromptMessage(role=last.role, template=last.template.rstrip() + "\n\n" + text)
    return prompt.model_copy(update={"messages": tuple(msgs)})


def insert_after_guideline(prompt: JudgePrompt, text: str) -> JudgePrompt:
    """A copy of ``prompt`` with ``text`` as its own paragraph right after the guideline (else at the end)."""
    if prompt.guideline is None:
        return append_instruction(prompt, text)
    msgs = tuple(
        PromptMessage(role=m.role, template=m.template.replace(GUIDELINE_MARK, GUIDELINE_MARK + "\n\n" + text))
        if GUIDELINE_MARK in m.template
        else m
        for m in prompt.messages
    )
    return prompt.model_copy(update={"messages": msgs})


_SCORE_ONLY = re.compile(
    r"(?i)\bnothing else\b|\bno other text\b|\bonly (?:the|a|one|your) (?:score|number|rating|digit)\b"
    r"|\b(?:score|number|rating|digit) only\b"
)


def first_phrase(prompt: JudgePrompt, pattern: re.Pattern[str]) -> str | None:
    """The first phrase of ``prompt``'s own message templates that ``pattern`` matches (None when none does)."""
    for message in prompt.messages:
        found = pattern.search(message.template)
        if found:
            return found.group(0)
    return None


def warn_if_reasoning_forbidden(prompt: JudgePrompt, who: str = "Sampling(cot=True)") -> None:
    """Warn when the prompt's own text asks for the score alone, which a chain-of-thought request contradicts."""
    found = first_phrase(prompt, _SCORE_ONLY)
    if found:
        warnings.warn(
            f"{who} asks for reasoning before the score, but the prompt's own text says {found!r}; the model "
            "may obey either. Expected a prompt whose answer instruction allows text before the score line",
            PromptConflictWarning,
            stacklevel=4,
        )


# --------------------------------------------------------------------------- managed paragraphs

ONLY_LEAD = "For this request, rate only"
"""Lead of the paragraph that restricts a free-form multi-criterion template to one criterion."""

SCALE_LEAD = "Answer scale:"
"""Lead of the answer-scale paragraph added by Granularity to free-form templates."""

COT_LEAD = "Before answering, explain your reasoning step by step."
"""Lead of the chain-of-thought paragraph added by Sampling(cot=True)."""

MANAGED_LEADS = (ONLY_LEAD, SCALE_LEAD, COT_LEAD)
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


def addenda(prompt: JudgePrompt) -> dict[str, str]:
    """The managed instruction paragraphs at the end of ``prompt``'s last user message, by lead."""
    return _split_tail(prompt.messages[_target_index(prompt)].template)[1]


def set_addendum(prompt: JudgePrompt, lead: str, text: str | None) -> JudgePrompt:
    """A copy of ``prompt`` whose managed paragraph with ``lead`` is ``text`` (None removes it).

    ``text`` must start with ``lead`` and be a single line. Other managed paragraphs are
    kept, and all are re-appended in the canonical order (rate-only, scale, chain of thought).
    """
    if lead not in MANAGED_LEADS:
        raise ConfigError(f"expected one of the managed paragraph leads {list(MANAGED_LEADS)}; got {lead!r}")
    if text is not None and (not text.startswith(lead) or "\n" in text):
        raise ConfigError(f"expected a single-line paragraph starting with {lead!r}; got {text!r}")
    idx = _target_index(prompt)
    body, found = _split_tail(prompt.messages[idx].template)
    if text is None:
        found.pop(lead, None)
    else:
        found[lead] = text
    template = body + "".join(f"\n\n{found[k]}" for k in MANAGED_LEADS if k in found)
    messages = list(prompt.messages)
    messages[idx] = PromptMessage(role=messages[idx].role, template=template)
    return prompt.model_copy(update={"messages": tuple(messages)})


def _one_line(text: str) -> str:
    return " ".join(text.split())


def cot_instruction(prompt: JudgePrompt) -> str:
    """The chain-of-thought paragraph for ``prompt`` (its answer form depends on the prompt's task)."""
    names = [c.name for c in prompt.criteria] or ["score"]
    if prompt.answer == "pairwise":
        tail = "Then give your final verdict on its own last line."
    elif prompt.answer == "mcq":
        tail = "Then give your final answer on its own last line as 'Answer: <letter>'."
    elif len(names) > 1:
        tail = (
            "Then give your final scores on the last lines, one line per criterion in the form "
            f"'{_label(names[0])}: <score>'."
        )
    else:
        tail = "Then give your final answer on its own last line as 'Score: <score>'."
    return f"{COT_LEAD} {tail}"


def only_paragraph(criterion: Criterion, *, answer: bool = True) -> str:
    """The "rate only <criterion>" paragraph :class:`SingleAttribute` adds to a free-form template's child.

    With ``answer=True`` it also asks for a final "Score: N" line; ``answer=False`` leaves the
    answer format to the prompt's own closing instruction (what the RTS/MCQ forms of
    :mod:`mitigate.strategies.forms` use, since they set their own answer format).
    """
    definition = _one_line(criterion.definition)
    what = f"{criterion.name} ({definition.rstrip('.')})" if definition else criterion.name
    text = f"{ONLY_LEAD} {what}; ignore the other criteria mentioned above"
    if answer:
        text += f' and end your answer with a line "Score: " followed by your {criterion.name} score'
    return text + "."


# --------------------------------------------------------------------------- built-in template


def _title(slot: str) -> str:
    return slot.replace("_", " ").strip().capitalize()


def _num(x: float) -> str:
    return f"{round(x, 6):g}"


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

    Kept from ``base``: its system messages (those without a guideline), its input and
    output slots (shown as "<Slot>:" blocks in the order they first appear), scale, task,
    slot mapping and demos; a chain-of-thought paragraph added by ``Sampling(cot=True)`` is
    carried over (reworded for the new criteria). Dropped: the user messages' own wording
    and the guideline (a scoring guideline describes one criterion). ``order`` (criterion
    names) sets the order the criteria are listed and answered in; the returned prompt's
    ``criteria`` are in that order. With one criterion the answer is a line "Score: N";
    with several, one line "<Criterion>: N" per criterion (read by ``parse_criteria``).
    """
    if base.answer != "score":
        raise ConfigError(
            f"expected a prompt answering with a score to build a rating template from; got answer={base.answer!r}"
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
    cot = COT_LEAD in addenda(base)
    if len(crits) > 1:
        for demo in base.demos:
            if not isinstance(demo.score, dict) or any(n not in demo.score for n in names):
                raise ConfigError(
                    f"a prompt scoring {names} in one answer needs demos scored on every one of them; demo "
                    f"{demo.item.id!r} has {demo.score!r}. Demo mitigations show one criterion's score: place them "
                    "after SingleAttribute (one call per criterion), or build the prompt with demos scored on every "
                    "criterion (Demo(score={criterion: value, ...}))"
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
    else:
        intro = f"Evaluate the {out_word} below on one criterion:"
        answer = f'End your answer with a line "Score: " followed by your {crits[0].name} score.'
    blocks = [f"{_title(s)}:\n{{{{{s}}}}}" for s in inputs] + [f"{out_title}:\n{{{{{base.output_slot}}}}}"]
    user = "\n\n".join([intro, listed, scale_sentence(base.scale, each=several), *blocks, answer])

    built = base.model_copy(
        update={
            "messages": (*systems, PromptMessage(role="user", template=user)),
            "criteria": tuple(crits),
            "guideline": None,
            "answer": "score",
        }
    )
    built = JudgePrompt.model_validate(built.model_dump())
    if cot:
        built = set_addendum(built, COT_LEAD, cot_instruction(built))
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
