"""Reason-then-score (RTS) and multiple-choice (MCQ) forms of a judge prompt (Shen et al. 2023).

Both keep the user's prompt and change only its answer: :func:`rts_form` asks for a short reason, then the
template's own answer line; :func:`mcq_form` turns every guideline line into an option answered with a letter.
Paragraphs other mitigations added stay after the new instruction, reworded for the form.
"""

from __future__ import annotations

import re
import string

from mitigate.errors import TemplateError
from mitigate.prompt import (
    GUIDELINE_MARK,
    SLOT_RE,
    AnswerFormat,
    Guideline,
    JudgePrompt,
    ScoreOption,
    closing_stub,
    format_number,
)
from mitigate.scale import Scale
from mitigate.strategies._edits import (
    DEFAULT_HINT,
    MANAGED_LEADS,
    NO_OPTIONS_HINT,
    ONLY_LEAD,
    PAIRWISE_HINT,
    RTS_LEAD,
    addenda,
    allow_reasoning,
    message_end,
    only_paragraph,
    refresh_addenda,
    set_addendum,
    with_message,
)

_ANSWER_VERB = re.compile(
    r"(?i)\b(reply|respond|answer|output|return|give|write|provide|format|print|state|end)\b"
)
_ANSWER_NOUN = re.compile(r"(?i)\b(score|rating|number|letter|grade|digit|option)\b")
_PARAGRAPH_BREAK = re.compile(r"\n[ \t]*\n")
_MAX_LISTED_POINTS = 10


def _or_list(words: list[str]) -> str:
    return words[0] if len(words) == 1 else f"{', '.join(words[:-1])} or {words[-1]}"


def _check_single(prompt: JudgePrompt, form: str) -> None:
    if prompt.answer == "pairwise":
        raise TemplateError(
            f"the {form} form scores one output; expected a prompt with answer 'score' or 'mcq', "
            "got 'pairwise'"
        )
    if len(prompt.criteria) > 1:
        raise TemplateError(
            f"the {form} form asks for one score per call; expected a prompt with one criterion, got "
            f"{[c.name for c in prompt.criteria]} (apply SingleAttribute before the RTS/MCQ forms)"
        )


def answer_instruction(prompt: JudgePrompt) -> tuple[int, int, int] | None:
    """Where the prompt's closing answer instruction is: (message index, start, end) in its template, or
    None. It is the last paragraph of the last user message (before its stub and the paragraphs other
    mitigations added) when it holds no slot and no guideline and mentions answering with a score, rating,
    number or letter."""
    idx, body, _ = message_end(prompt)
    body = body[: _added_tail(body)]
    breaks = list(_PARAGRAPH_BREAK.finditer(body))
    start = breaks[-1].end() if breaks else 0
    para = body[start:]
    if not para.strip() or SLOT_RE.search(para) or GUIDELINE_MARK in para:
        return None
    return (idx, start, len(body)) if _ANSWER_VERB.search(para) and _ANSWER_NOUN.search(para) else None


def _is_added(paragraph: str) -> bool:
    """True for a one-line paragraph another mitigation put at the end of the prompt."""
    text = paragraph.strip()
    return "\n" not in text and (
        text.startswith(MANAGED_LEADS) or text in (DEFAULT_HINT, NO_OPTIONS_HINT, PAIRWISE_HINT)
    )


def _added_tail(template: str) -> int:
    """Where the trailing paragraphs other mitigations added begin in ``template``."""
    body = template.rstrip()
    while True:
        breaks = list(_PARAGRAPH_BREAK.finditer(body))
        if not breaks or not _is_added(body[breaks[-1].end() :]):
            return len(body)
        body = body[: breaks[-1].start()]


def _with_instruction(prompt: JudgePrompt, form: JudgePrompt, instruction: str) -> JudgePrompt:
    """``form`` with ``prompt``'s closing answer instruction replaced by (or followed by) ``instruction``."""
    idx, body, end = message_end(prompt)
    cut = _added_tail(body)
    core, tail = body[:cut], body[cut:]
    found = answer_instruction(prompt)
    core = core + "\n\n" + instruction if found is None else core[: found[1]] + instruction + core[found[2] :]
    out = with_message(form, idx, core + tail + end)
    if ONLY_LEAD in addenda(out) and len(out.criteria) == 1:
        out = set_addendum(out, ONLY_LEAD, only_paragraph(out, answer=False))
    return refresh_addenda(out)


def _option_score(option: ScoreOption, scale: Scale) -> float:
    """An option's score: its own, or the letter's in ``scale.letters``; TemplateError when neither says."""
    if option.score is not None:
        return option.score
    score = (scale.letters or {}).get(option.label.upper())
    if score is None:
        raise TemplateError(
            f"option {option.label!r} ({option.description[:40]!r}) states no score, so the RTS/MCQ forms "
            "cannot pair it with one; expected JudgePrompt.from_template(..., letters={'A': <score>, ...})"
        )
    return score


def _points_text(scale: Scale) -> str:
    points = scale.points()
    if len(points) <= _MAX_LISTED_POINTS:
        return _or_list([format_number(p) for p in points])
    return f"a number from {format_number(scale.min)} to {format_number(scale.max)}"


def rts_instruction(scale: Scale, answer_format: AnswerFormat | None = None) -> str:
    """The RTS form's answer instruction (our wording), asking for ``answer_format``'s line."""
    if answer_format is None or answer_format.is_default_score_line:
        return (
            f"{RTS_LEAD} in one or two sentences. Then write a final line "
            f'"Score: " followed by {_points_text(scale)}.'
        )
    ask = answer_format.with_reasoning("before").instruction(scale)
    return f"{RTS_LEAD} in one or two sentences. Then {ask[:1].lower()}{ask[1:]}"


def rts_form(prompt: JudgePrompt) -> JudgePrompt:
    """The reason-then-score form of ``prompt``: a short reason, then its answer line (a new prompt). The
    scale loses any letter map and ``answer`` becomes "score", in the template's own score format (the
    default for an MCQ prompt, whose lettered options become score lines) with reasoning "before".
    TemplateError for pairwise or multi-criterion prompts, and for lettered options with no score."""
    _check_single(prompt, "RTS")
    scale = prompt.scale
    if scale.letters is not None:
        scale = Scale.model_validate(scale.model_dump() | {"letters": None})
    guideline = prompt.guideline
    if guideline is not None and prompt.answer == "mcq":
        # an MCQ prompt's lettered options become plain score lines again
        scores = [_option_score(o, prompt.scale) for o in guideline.options]
        options = tuple(
            o.model_copy(update={"label": t, "score": v, "head": f"Score {t} means ", "tail": ""})
            for o, v in zip(guideline.options, scores, strict=True)
            for t in [format_number(v)]
        )
        guideline = Guideline(options=options, separators=guideline.separators)
    fmt = (prompt.format if prompt.answer == "score" else AnswerFormat.default("score")).with_reasoning(
        "before"
    )
    form = prompt.model_copy(update={"scale": scale, "guideline": guideline}).with_answer_format(fmt)
    instruction = rts_instruction(scale, fmt)
    out = _with_instruction(prompt, form, instruction)
    return allow_reasoning(out, "the RTS form (reason, then score)", added=(instruction,))


def mcq_instruction(letters: list[str], stub: str = "") -> str:
    """The MCQ form's answer instruction (our wording), for option ``letters``."""
    ask = 'Reply with a single line "Answer: " followed by'
    ask = f'Complete the last line "{stub}" with only' if stub else ask
    return f"Choose the option whose description fits best. {ask} the option's letter ({_or_list(letters)})."


def mcq_form(prompt: JudgePrompt) -> JudgePrompt:
    """The multiple-choice form of ``prompt``: its guideline lines become options A, B, C ... (a new prompt).

    Each option reads ``"<letter>: <description>. Score: <score>"`` and ``scale.letters`` maps letters to
    scores; a letter-answering prompt is its own form. TemplateError without a guideline, for pairwise or
    multi-criterion prompts, for options without a score, and past 26 options.
    """
    _check_single(prompt, "MCQ")
    if prompt.answer == "mcq":
        if prompt.guideline is not None:
            for option in prompt.guideline.options:
                _option_score(option, prompt.scale)
        if not prompt.scale.letters:
            raise TemplateError(
                "the MCQ form needs a score for every option letter; expected "
                "JudgePrompt.from_template(..., letters={'A': <score>, ...})"
            )
        return prompt
    gl = prompt.guideline
    if gl is None:
        raise TemplateError(
            "the MCQ form needs guideline options (one line per score, e.g. 'Score 1 means ...') to turn "
            "into choices A, B, C ...; expected a prompt whose guideline was parsed by "
            "JudgePrompt.from_template, got guideline=None"
        )
    if len(gl.options) > len(string.ascii_uppercase):
        raise TemplateError(
            f"the MCQ form letters options A-Z; expected at most 26 guideline options, got {len(gl.options)}"
        )
    options: list[ScoreOption] = []
    letters: dict[str, float] = {}
    for letter, opt in zip(string.ascii_uppercase, gl.options, strict=False):
        description = opt.description.rstrip().rstrip(".").rstrip()
        score = _option_score(opt, prompt.scale)
        options.append(
            ScoreOption(
                label=letter,
                score=score,
                description=description,
                head=f"{letter}: ",
                tail=f". Score: {format_number(score)}",
                position=opt.position,
            )
        )
        letters[letter] = float(score)
    scale = Scale.model_validate(prompt.scale.model_dump() | {"letters": letters})
    form = prompt.model_copy(
        update={"guideline": Guideline(options=tuple(options), separators=gl.separators), "scale": scale}
    )

    def answering(fmt: AnswerFormat, stub: str = "") -> JudgePrompt:
        instruction = mcq_instruction(list(letters), stub)
        return _letter_stub(_with_instruction(prompt, form.with_answer_format(fmt), instruction))

    plain = AnswerFormat.default("mcq")
    out = answering(plain)
    stub = closing_stub([out.messages[-1].template])
    # a prompt ending with "Answer:": the judge completes it with the letter, as the instruction says
    return (
        out if stub is None else answering(plain.with_stub(stub).model_copy(update={"inferred": True}), stub)
    )


def _letter_stub(form: JudgePrompt) -> JudgePrompt:
    """``form`` with the last line of its answer stub made "Answer:" (a score cue would not parse)."""
    idx, body, end = message_end(form)
    stub = form.answer_stub(idx)
    if not stub or not end.endswith(stub):
        return form
    lines = stub.rstrip().split("\n")
    last = lines[-1]
    if re.fullmatch(r"\s*Answer:\s*", last):
        return form
    trailing = stub[len(stub.rstrip()) :]
    indent = last[: len(last) - len(last.lstrip())]
    new_stub = "\n".join([*lines[:-1], indent + "Answer:"]) + trailing
    return with_message(form, idx, body + end[: len(end) - len(stub)] + new_stub)
