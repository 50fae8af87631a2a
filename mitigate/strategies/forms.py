"""Reason-then-score (RTS) and multiple-choice (MCQ) forms of a judge prompt (Shen et al. 2023).

Shen et al. ("Large language models are not yet human-level evaluators for abstractive
summarization", 2023) ask the same judge for the same item in two ways:

- **RTS** (reason-then-score): write a short reason, then the score ("Score: N");
- **MCQ**: pick one of the options A, B, C ... where each option is a fixed reason paired
  with a score (SummEval: A -> 1 ... E -> 5), answered with a letter.

Both forms here are derived from an existing score prompt, so a user's own judge prompt
(its task, criterion, guideline, slots and demos) is kept; only the answer format changes:

- :func:`rts_form` replaces the prompt's closing answer instruction (see
  :func:`answer_instruction`) with one asking for a reason and a final "Score: N" line.
- :func:`mcq_form` turns every line of the prompt's parsed scoring guideline into an
  option "A: <that score's description>. Score: <score>", sets ``answer="mcq"`` and maps
  each letter to its option's score in ``scale.letters``, and replaces the answer
  instruction with one asking for the letter.

The closing answer instruction is recognised as the last paragraph of the last message when
it holds no slot and no guideline and talks about replying/answering with a
score/rating/number/letter; when there is none, the new instruction is appended as a last
paragraph instead. Other text of the prompt (e.g. "choose the score from 1 to 5" in a list of
steps) is left as written.

Paragraphs that other mitigations added at the end of the prompt (single-attribute's "rate
only <criterion>", granularity's answer scale, the chain-of-thought instructions of
``Sampling(cot=True)`` and ``SelfConsistency``, the default consistency hint) are not taken for
the answer instruction: they stay after it, so ``SingleAttribute() | AgreementGate()`` still asks
each child about its own criterion. Those that name an answer format are reworded for the form:
"rate only" loses its "Score: N" clause, the chain-of-thought paragraph asks for the form's
final line, and the answer-scale note is dropped from the MCQ form (it answers with a letter).
"""

from __future__ import annotations

import re
import string

from mitigate.errors import TemplateError
from mitigate.prompt import GUIDELINE_MARK, SLOT_RE, Guideline, JudgePrompt, PromptMessage, ScoreOption
from mitigate.scale import Scale
from mitigate.strategies.edits import (
    COT_LEAD,
    DEFAULT_COT,
    DEFAULT_HINT,
    ONLY_LEAD,
    RTS_LEAD,
    SCALE_LEAD,
    cot_instruction,
    only_paragraph,
)

__all__ = ["RTS_LEAD", "answer_instruction", "mcq_form", "mcq_instruction", "rts_form", "rts_instruction"]

_ANSWER_VERB = re.compile(r"(?i)\b(reply|respond|answer|output|return|give|write|provide|format|print|state|end)\b")
_ANSWER_NOUN = re.compile(r"(?i)\b(score|rating|number|letter|grade|digit|option)\b")
_PARAGRAPH_BREAK = re.compile(r"\n[ \t]*\n")
_MAX_LISTED_POINTS = 10


def _fmt(value: float) -> str:
    return str(int(value)) if float(value).is_integer() else f"{value:g}"


def _or_list(words: list[str]) -> str:
    return words[0] if len(words) == 1 else f"{', '.join(words[:-1])} or {words[-1]}"


def _check_single(prompt: JudgePrompt, form: str) -> None:
    if prompt.answer == "pairwise":
        raise TemplateError(
            f"the {form} form scores one output; expected a prompt with answer 'score' or 'mcq', got 'pairwise'"
        )
    if len(prompt.criteria) > 1:
        raise TemplateError(
            f"the {form} form asks for one score per call; expected a prompt with one criterion, got "
            f"{[c.name for c in prompt.criteria]} (apply SingleAttribute before the RTS/MCQ forms)"
        )


def answer_instruction(prompt: JudgePrompt) -> tuple[int, int, int] | None:
    """Where the prompt's closing answer instruction is: (message index, start, end) in its template.

    The instruction is the last paragraph of the last message when it holds no ``{{slot}}``
    and no guideline and mentions replying/answering with a score, rating, number or letter.
    None when the prompt has no such paragraph.
    """
    idx = len(prompt.messages) - 1
    template = prompt.messages[idx].template
    body = template[: _added_tail(template)]
    breaks = list(_PARAGRAPH_BREAK.finditer(body))
    start = breaks[-1].end() if breaks else 0
    para = body[start:]
    if not para.strip() or SLOT_RE.search(para) or GUIDELINE_MARK in para:
        return None
    if _ANSWER_VERB.search(para) and _ANSWER_NOUN.search(para):
        return idx, start, len(body)
    return None


_ADDED_LEADS = (ONLY_LEAD, SCALE_LEAD, COT_LEAD)


def _is_added(paragraph: str) -> bool:
    """True for a one-line paragraph another mitigation put at the end of the prompt."""
    text = paragraph.strip()
    return "\n" not in text and (text.startswith(_ADDED_LEADS) or text in (DEFAULT_COT, DEFAULT_HINT))


def _added_tail(template: str) -> int:
    """Where the trailing paragraphs added by other mitigations begin in ``template`` (else the end of its text)."""
    body = template.rstrip()
    while True:
        breaks = list(_PARAGRAPH_BREAK.finditer(body))
        if not breaks or not _is_added(body[breaks[-1].end():]):
            return len(body)
        body = body[: breaks[-1].start()]


def _retarget(tail: str, prompt: JudgePrompt, answer: str) -> str:
    """The added paragraphs in ``tail`` reworded for the form's ``answer`` (see the module docstring)."""
    text = tail.rstrip()
    trailing = tail[len(text):]
    out: list[str] = []
    for para in (p for p in _PARAGRAPH_BREAK.split(text) if p.strip()):
        if para.startswith(ONLY_LEAD) and len(prompt.criteria) == 1:
            para = only_paragraph(prompt.criteria[0], answer=False)
        elif para.startswith(COT_LEAD):
            para = cot_instruction(prompt.model_copy(update={"answer": answer}))
        elif para.startswith(SCALE_LEAD) and answer == "mcq":
            continue
        out.append(para)
    return "".join(f"\n\n{p}" for p in out) + trailing


def _with_instruction(prompt: JudgePrompt, instruction: str, answer: str) -> tuple[PromptMessage, ...]:
    """The prompt's messages with the closing answer instruction replaced by (or followed by) ``instruction``.

    Paragraphs added by other mitigations stay after it, reworded for ``answer`` (the form's answer kind).
    """
    messages = list(prompt.messages)
    last = messages[-1]
    cut = _added_tail(last.template)
    body, tail = last.template[:cut], last.template[cut:]
    found = answer_instruction(prompt)
    if found is not None:
        _, start, end = found
        body = body[:start] + instruction + body[end:]
    else:
        body = body + "\n\n" + instruction
    messages[-1] = PromptMessage(role=last.role, template=body + _retarget(tail, prompt, answer))
    return tuple(messages)


def _points_text(scale: Scale) -> str:
    points = scale.points()
    if len(points) <= _MAX_LISTED_POINTS:
        return _or_list([_fmt(p) for p in points])
    return f"a number from {_fmt(scale.min)} to {_fmt(scale.max)}"


def rts_instruction(scale: Scale) -> str:
    """The answer instruction of the RTS form for ``scale`` (our wording)."""
    return (
        f"{RTS_LEAD} in one or two sentences. Then write a final line "
        f'"Score: " followed by {_points_text(scale)}.'
    )


def rts_form(prompt: JudgePrompt) -> JudgePrompt:
    """The reason-then-score form of ``prompt``: a short reason, then "Score: N" (a new prompt).

    The answer instruction is replaced (or appended, see the module docstring); the scale
    loses any letter map and ``answer`` becomes "score". The guideline, if any, is kept as it
    is (including any reordering done before). Raises TemplateError for pairwise or
    multi-criterion prompts.
    """
    _check_single(prompt, "RTS")
    scale = prompt.scale
    if scale.letters is not None:
        scale = Scale.model_validate(scale.model_dump() | {"letters": None})
    guideline = prompt.guideline
    if guideline is not None and prompt.answer == "mcq":
        # an MCQ prompt's lettered options become plain score lines again
        guideline = Guideline(
            options=tuple(
                o.model_copy(update={"label": _fmt(o.score), "head": f"Score {_fmt(o.score)} means ", "tail": ""})
                for o in guideline.options
            ),
            separators=guideline.separators,
        )
    return prompt.model_copy(
        update={
            "messages": _with_instruction(prompt, rts_instruction(scale), "score"),
            "scale": scale,
            "answer": "score",
            "guideline": guideline,
        }
    )


def mcq_instruction(letters: list[str]) -> str:
    """The answer instruction of the MCQ form for option ``letters`` (our wording)."""
    return (
        "Choose the option whose description fits best. Reply with a single line \"Answer: \" followed by "
        f"the option's letter ({_or_list(letters)})."
    )


def mcq_form(prompt: JudgePrompt) -> JudgePrompt:
    """The multiple-choice form of ``prompt``: its guideline lines become options A, B, C ... (a new prompt).

    Each guideline option, in the order the guideline lists it, becomes the line
    ``"<letter>: <description>. Score: <score>"`` (a fixed reason plus a score, as in Shen et
    al.'s MCQ prompts); the original separators between lines are kept. ``answer`` becomes
    "mcq" and ``scale.letters`` maps each letter to its option's score (a guideline listed
    1..5 gives SummEval's A->1 ... E->5). ``position`` of each option is kept, so a later
    reordering can still be traced back. Raises TemplateError when the prompt has no parsed
    guideline (the options come from it), for pairwise and multi-criterion prompts, and for
    more than 26 options.
    """
    _check_single(prompt, "MCQ")
    gl = prompt.guideline
    if gl is None:
        raise TemplateError(
            "the MCQ form needs guideline options (one line per score, e.g. 'Score 1 means ...') to turn into "
            "choices A, B, C ...; expected a prompt whose guideline was parsed by JudgePrompt.from_template, got "
            "guideline=None"
        )
    if len(gl.options) > len(string.ascii_uppercase):
        raise TemplateError(
            f"the MCQ form letters options A-Z; expected at most 26 guideline options, got {len(gl.options)}"
        )
    options: list[ScoreOption] = []
    letters: dict[str, float] = {}
    for letter, opt in zip(string.ascii_uppercase, gl.options, strict=False):
        description = opt.description.rstrip().rstrip(".").rstrip()
        options.append(
            ScoreOption(
                label=letter,
                score=opt.score,
                description=description,
                head=f"{letter}: ",
                tail=f". Score: {_fmt(opt.score)}",
                position=opt.position,
            )
        )
        letters[letter] = float(opt.score)
    scale = Scale.model_validate(prompt.scale.model_dump() | {"letters": letters})
    return prompt.model_copy(
        update={
            "messages": _with_instruction(prompt, mcq_instruction(list(letters)), "mcq"),
            "guideline": Guideline(options=tuple(options), separators=gl.separators),
            "scale": scale,
            "answer": "mcq",
        }
    )
