"""The answer format a template's text prescribes (:func:`infer_answer_format`), and what its instructions
say about reasoning (:func:`stated_reasoning`, :func:`reasoning_ban`)."""

from __future__ import annotations

import os
import re
from collections.abc import Sequence
from typing import Any

from mitigate.parse import LIST_MARKER, RANGE, VALUE
from mitigate.prompt.answer._format import AnswerFormat, AnswerKind, Reasoning

_NO_REASON = re.compile(  # an explicit ban on explanations
    r"\b(?:do\s+not|don'?t|never|without)\s+(?:provide\s+|give\s+|include\s+|write\s+|add\s+)?(?:any\s+)?"
    r"(?:explanations?|explain|reasons?|reasoning|justifications?|comments?|commentary)"
    r"|\bscores?\s+only\b|\bno\s+explanations?\b|\bgive\s+the\s+score\s+only\b",
    re.IGNORECASE,
)
_ONLY = re.compile(  # "only the answer", which a reasoning-first instruction may still precede
    r"\bonly\s+(?:the|a|one|your)\s+(?:final\s+)?(?:score|rating|number|letter|answer)"
    r"|\bjust\s+(?:say|give|write|answer)\b|\bnothing\s+else\b|\bonly\s+contain\b"
    r"|\bonly\s+output\b|\boutput\s+only\b",
    re.IGNORECASE,
)
_REASON_FIRST = re.compile(
    r"\b(?:first|begin|start)\b[^.\n]{0,80}\b(?:explanation|explain|feedback|reason|reasoning|analysis|justif\w+|compar\w+"
    r"|critique|critici[sz]e|rationale|review|comments?|assess\w*|discuss\w*|describe|think)"
    r"|\b(?:write|give|provide)\s+(?:a|an|your|some)\s+(?:short\s+|brief\s+|concise\s+)?(?:critique|rationale|"
    r"analysis|explanation|justification|feedback)\b[^\n]{0,200}?\b(?:then|followed\s+by|after\s+that|afterwards)\b"
    r"|\bafter\s+(?:providing|writing|giving)\s+(?:your|an?|the)\s+(?:explanation|feedback|reasoning|analysis)"
    r"|\bwrite\s+a\s+(?:detailed\s+)?feedback\b|\(write\s+a\s+feedback"
    r"|\bstep\s+by\s+step\b|\bthink\s+(?:carefully|step)|\bconcise\s+explanation\s+(?:followed|then)"
    r"|\b(?:justification|explanation|explain|reason(?:ing)?|rationale|analy[sz]e|justify)\b[^.\n]{0,40}\bthen\b"
    r"|\b(?:explain|reason|justify|analy[sz]e|think)\w*\s+first\b"
    r"|\b(?:justify|explain|reason|analy[sz]e|think)\w*\b[^.\n]{0,40}\bbefore\s+(?:giving|writing|stating|providing|"
    r"answering|scoring|you\s+(?:give|answer|score|rate))"
    r"|\bthen\b[^.\n]{0,30}\bfinal\s+(?:line|answer|verdict|score)"
    r"|\bfinal\s+line\b|\bend\s+(?:your\s+(?:answer|response)\s+)?with\b"
    r"|\b(?:first|begin|start)\b[^.\n]{0,60}\b(?:your\s+own\s+answer|evaluation|assessment|comparison|comparing|analy\w+)",
    re.IGNORECASE,
)
_ANSWER_FIRST = re.compile(
    r"\bfirst\s+output\s+a\s+single\s+line\b|\b(?:in\s+the\s+)?subsequent\s+line\b[^.\n]{0,80}\bexplanation",
    re.IGNORECASE,
)
_JSON = re.compile(r"\bJSON\b")
_JSON_KEY = re.compile(
    r"[\"'`](score|rating|grade|verdict|winner|preference|result|answer)[\"'`]", re.IGNORECASE
)
_JSON_REASON_KEY = re.compile(
    r"[\"'`](reason|reasoning|explanation|feedback|rationale|justification)[\"'`]", re.IGNORECASE
)
_CUE_WORDS = r"(?:final\s+)?(?:score|rating|grade|answer|verdict|result)"


def infer_answer_format(
    texts: Sequence[str],
    *,
    kind: AnswerKind,
    labels: Sequence[str] = (),
    tie: str | None = None,
    criterion: str | None = None,
) -> AnswerFormat:
    """The answer format a template's ``texts`` (slots unfilled) prescribe (the default, ``inferred=False``,
    when they name none); a closing line starting the answer (:func:`closing_stub`) is its ``stub``."""
    fmt = _line_format(texts, kind, labels, tie, criterion)
    stub = closing_stub(texts, criterion) if kind != "pairwise" else None
    if stub is None or fmt.json_key is not None or fmt.two_scores:
        return fmt
    return fmt.with_stub(stub).model_copy(update={"inferred": True})


def closing_stub(texts: Sequence[str], criterion: str | None = None) -> str | None:
    """The answer stub a template's ``texts`` end with (stripped), or None: a last line that is a list marker,
    a cue word (score, rating, answer ...) or the criterion's name, a range and a colon ("- Fluency (1-3):",
    "Score (1-5):", "Rating:")."""
    last = texts[-1] if texts else ""
    lines = [ln for ln in last.rstrip().splitlines() if ln.strip()]
    if not lines:
        return None
    tail = lines[-1].strip()
    names = _CUE_WORDS + "|overall\\s+(?:score|rating|grade)"
    if criterion and criterion.lower() != "score":
        names += "|" + re.escape(criterion).replace("_", "[ _]").replace("\\ ", "\\s+")
    pattern = rf"{LIST_MARKER}?\s*(?:\*\*)?(?:{names})(?:\s+score)?(?:\*\*)?\s*{RANGE}?\s*:(?:\*\*)?"
    return tail if re.fullmatch(pattern, tail, re.IGNORECASE) else None


def _line_format(
    texts: Sequence[str], kind: AnswerKind, labels: Sequence[str], tie: str | None, criterion: str | None
) -> AnswerFormat:
    """The answer format the text names (its answer line), before a closing stub."""
    text = "\n".join(texts)
    instructions = _SLOT_VALUES.sub(" ", text)
    reasoning = _reasoning(instructions)
    pair_labels = tuple(labels) if labels else ("1", "2")
    base: dict[str, Any] = {"kind": kind, "reasoning": reasoning}
    if kind == "pairwise":
        # "Answer with 1, 2 or tie": the template offers a tie, so the constraint must allow it
        if tie is None:
            a, b = (re.escape(x) for x in pair_labels)
            offered = re.search(
                rf"[\"'“(\[]*\b{a}\b[\"'”)\]]*\s*[,/]\s*"
                rf"[\"'“(\[]*\b{b}\b[\"'”)\]]*\s*,?\s*(?:or|/)\s*"
                rf"[\"'“]?(tie|draw|equal)\b",
                instructions,
                re.I,
            )
            tie = offered.group(1) if offered else None
        case_sensitive = len({x.lower() for x in pair_labels}) < len(pair_labels)
        base.update(labels=pair_labels, tie=tie, case_sensitive=case_sensitive)

    def answer(**changes: Any) -> AnswerFormat:
        return AnswerFormat(**{**base, **changes})

    # JSON answers
    if _JSON.search(instructions) and (key := _JSON_KEY.search(instructions)) is not None:
        reason = _JSON_REASON_KEY.search(instructions)
        return answer(
            json_key=key.group(1),
            line=VALUE,
            reason_key=reason.group(1) if reason else None,
            reasoning="before" if reason else "none",
        )
    # two scores on one line (the lmsys pairwise judge)
    if (
        kind == "pairwise"
        and re.search(r"\b(?:two|both)\s+(?:values|scores)\b", instructions, re.I)
        and re.search(r"\bsingle\s+line\b|\bfirst\s+line\b", instructions, re.I)
    ):
        return answer(
            two_scores=True,
            line=VALUE,
            reasoning="after" if _ANSWER_FIRST.search(instructions) else reasoning,
        )
    # [RESULT] marker (Prometheus)
    if "[RESULT]" in instructions:
        feedback = reasoning != "none" or re.search(r"feedback", instructions, re.I)
        return answer(line="[RESULT] {value}", reasoning="before" if feedback else "none")
    # XML-style tags (<score>...</score>)
    tag = re.search(r"<(score|rating|answer|verdict|result)>", instructions, re.I)
    if tag is not None and re.search(
        r"\b(?:inside|within|in|between)\s+(?:the\s+)?"
        rf"<{tag.group(1)}>\s*(?:tags?)?",
        instructions,
        re.I,
    ):
        name = tag.group(1)
        first = re.search(r"\bfeedback\b|\bbefore\b|\bafter\s+the\s+feedback", instructions, re.I)
        return answer(line=f"<{name}>{{value}}</{name}>", reasoning="before" if first else reasoning)
    # Arena-Hard relations [[A>>B]]
    if kind == "pairwise" and re.search(r"\[\[\s*\w{1,3}\s*>>?\s*\w{1,3}\s*\]\]", instructions):
        found = re.search(r"(?:\"|')?((?:[A-Za-z ]+:\s*)?)\[\[\s*\w{1,3}\s*>>?", instructions)
        head = "" if found is None else found.group(1)
        if head and not re.search(_CUE_WORDS + r"\s*:\s*$", head, re.I):
            head = ""
        return answer(line=head + "[[{value}]]", relations=True, tie=None)
    # double brackets: [[A]] verdicts, [[rating]] / Rating: [[5]]
    bracket = re.search(r"\[\[\s*([A-Za-z]{1,2}|\d+(?:\.\d+)?|rating|score)\s*\]\]", instructions)
    if bracket is not None:
        example = _BRACKET_CUE.search(instructions)
        head = example.group(1) if example else ""
        if kind == "pairwise":
            tie_m = re.search(
                r"\[\[\s*([A-Za-z])\s*\]\]\s*(?:\"|'|”)?\s*(?:for|if|when)\s+(?:a\s+)?tie", instructions, re.I
            )
            return answer(line="[[{value}]]", tie=tie_m.group(1) if tie_m else tie)
        return answer(line=head + "[[{value}]]")
    # a star rating: "how many stars", "1 to 5 stars"
    if kind == "score" and _STARS.search(instructions):
        return answer(line="{value} stars")
    # a quoted verdict sentence per output: "Therefore, Output (a) is better." or "..., Output (b) ..."
    if kind == "pairwise":
        sentence = _verdict_sentence(instructions, pair_labels)
        if sentence is not None:
            return answer(line=sentence)
    # a quoted answer line: "Score: ", 'Rating: <score>', "Answer: X", "Final verdict: ..."
    quoted = _quoted_cue(instructions, criterion)
    if quoted is not None:
        return answer(line=quoted + " {value}")
    # pairwise labels written as "Output (a)" (AlpacaEval, LLMBar)
    if kind == "pairwise":
        a, b = pair_labels
        q_open, q_close = "[\"'“‘`]?", "[\"'”’`]?"
        form = re.search(
            rf"\b([A-Z][a-z]+)\s*\(\s*{re.escape(a)}\s*\){q_close}"
            rf"\s*(?:or|and|,)\s*{q_open}(?:\1\s*)?\(\s*{re.escape(b)}\s*\)",
            instructions,
        )
        if form is not None:
            return answer(line=form.group(1) + " ({value})")
        # "Answer 'Summary 1' or 'Summary 2'": the label after a word the answer repeats
        named = re.search(
            rf"{q_open}\b([A-Z][a-z]+)\s+{re.escape(a)}\b{q_close}"
            rf"\s*or\s*{q_open}\1\s+{re.escape(b)}\b",
            instructions,
        )
        if named is not None:
            return answer(line=named.group(1) + " {value}")
        if re.search(rf"\(\s*{re.escape(a)}\s*\)\s*or\s*\(\s*{re.escape(b)}\s*\)", instructions):
            return answer(line="({value})")
        return answer(line=VALUE, inferred=True)
    if kind == "mcq":
        if re.search(r"\b(?:letter|option|character|choice)\b", instructions, re.I):
            return answer(line=VALUE)
        return answer(line="Answer: {value}", inferred=False)
    if _SCORE_ONLY.search(instructions):
        return answer(line=VALUE, reasoning="none")
    return answer(inferred=False)


_SLOT_VALUES = re.compile(r"\{\{[^{}]*\}\}")
_BRACKET_CUE = re.compile(r"([A-Za-z][A-Za-z ]{0,20}:\s*)\[\[\s*(?:\d|[NX]\s*\]\]|rating\b|score\b)", re.I)
_STARS = re.compile(r"\bhow\s+many\s+stars\b|\b\d+\s+(?:to|-)\s+\d+\s+stars\b|\bnumber\s+of\s+stars\b", re.I)
_SCORE_ONLY = re.compile(
    r"\b(?:only|just|single)\s+(?:the\s+|a\s+|one\s+)?(?:score|number|rating|integer|digit)\b|"
    r"\bscore\s+only\b|\bnumber\s+only\b",
    re.I,
)


def _verdict_sentence(text: str, labels: Sequence[str]) -> str | None:
    """The answer line of two quoted verdicts that differ only by the output's label, ``{value}`` there
    ("Therefore, Output ({value}) is better."); None when the template quotes no such pair."""
    a, b = labels
    for m in re.finditer(
        r"[\"“]([^\"“”\n]{1,160})[\"”]\s*,?\s*(?:or|and)\s*[\"“]([^\"“”\n]{1,160})[\"”]", text
    ):
        one, two = m.group(1), m.group(2)
        n = len(os.path.commonprefix([one, two]))
        k = len(os.path.commonprefix([one[n:][::-1], two[n:][::-1]]))
        mid_one, mid_two = one[n : len(one) - k], two[n : len(two) - k]
        if (
            (mid_one, mid_two) == (a, b)
            and re.search(r"[A-Za-z]", one[:n] + one[len(one) - k :])
            and re.search(r"\s", one.strip())
        ):
            return one[:n] + VALUE + one[len(one) - k :]
    return None


def stated_reasoning(texts: Sequence[str]) -> Reasoning:
    """Whether a template's ``texts`` ask for reasoning "before" the answer, "after" it, or "none"."""
    return _reasoning(_SLOT_VALUES.sub(" ", "\n".join(texts)))


_NO_OTHER_TEXT = re.compile(r"\bno\s+other\s+text\b|\b(?:number|rating|digit)\s+only\b", re.IGNORECASE)
_ONE_LINE = re.compile(  # an answer confined to one line ("Answer with one line", "a one-line answer")
    r"\b(?:(?:with|in|on|as)\s+)?(?:a\s+)?(?:single|one)[- ]line\b(?:\s+(?:answer|response|reply)\b)?"
    r"(?!\s+(?:per|for|each|of)\b)",
    re.IGNORECASE,
)


def reasoning_ban(texts: Sequence[str]) -> str | None:
    """The words of a template that ask for the answer alone ("Do NOT provide any explanation", "Answer with
    one line"), which a chain-of-thought request contradicts; None when there are none or reasoning is asked
    for first."""
    text = _SLOT_VALUES.sub(" ", "\n".join(texts))
    reasoning = _reasoning(text)
    if reasoning == "before":
        return None
    for pattern in (_NO_REASON, _ONLY, _NO_OTHER_TEXT) + ((_ONE_LINE,) if reasoning == "none" else ()):
        found = pattern.search(text)
        if found is not None:
            return found.group(0)
    return None


def _reasoning(text: str) -> Reasoning:
    if _ANSWER_FIRST.search(text):
        return "after"
    if _NO_REASON.search(text):
        return "none"
    ordered = _stated_order(text)
    if ordered is not None:
        return ordered
    if _REASON_FIRST.search(text):
        return "before"
    return "none"  # with _ONLY or nothing said: the answer alone


# Words naming the reasoning part of an answer, and words naming its value part.
_REASON_PART = re.compile(
    r"\b(?:analy[sz]\w*|explain\w*|explanation|reason(?:s|ing)?|rationale|justif\w+|feedback|critique|"
    r"comment(?:s|ary)?|assess\w*|evaluat\w*|compar\w+|discuss\w*|think\w*|thought\w*|review)\b",
    re.IGNORECASE,
)
_VALUE_PART = re.compile(
    r"\b(?:score|rating|grade|verdict|label|number|letter|choice|decision|stars?)\b", re.IGNORECASE
)
# An instruction ordering two parts: "<first part> then <second part>" ("followed by", "after that" ...).
_THEN = re.compile(r"\b(?:and\s+)?(?:then|followed\s+by|after\s+that|afterwards|next)\b", re.IGNORECASE)
_OPENING = re.compile(
    r"\b(?:start|begin|open|lead)(?:s|ning|ing|ed)?\s+(?:\w+\s+){0,3}?(?:with|by)\b"
    r"|\bfirst\b",
    re.IGNORECASE,
)


def _stated_order(text: str) -> Reasoning | None:
    """The order a sentence gives the answer's parts ("starting with 'Analysis:' ... then give the rating"):
    "before" when it opens with reasoning words, "after" when it opens with value words; None when no
    sentence orders the two."""
    for sentence in re.split(r"(?<=[.!?])\s+|\n", text):
        opening = _OPENING.search(sentence)
        then = _THEN.search(sentence, opening.end()) if opening else None
        if opening is None or then is None:
            continue
        clause = max((sentence.rfind(ch, 0, opening.start()) for ch in ",;:("), default=-1) + 1
        head, tail = sentence[clause : then.start()], sentence[then.end() :]
        if _REASON_PART.search(head) and _VALUE_PART.search(tail):
            return "before"
        if _VALUE_PART.search(head) and not _REASON_PART.search(head) and _REASON_PART.search(tail):
            return "after"
    return None


def _quoted_cue(text: str, criterion: str | None) -> str | None:
    """A quoted answer-line cue such as "Score: " or 'Rating: <n>' (colon included)."""
    names = _CUE_WORDS + (rf"|{re.escape(criterion)}" if criterion and criterion != "score" else "")
    quoted = list(
        re.finditer(
            rf"[\"'“`]\s*(?P<cue>(?:{names})(?:\s+score)?\s*:)\s*(?:<[^>\"'”`]*>|\[[^\]\"'”`]*\]|[A-Z]|N|X|\d+|\.\.\.)?\s*[\"'”`]",
            text,
            re.IGNORECASE,
        )
    )
    if quoted:
        return quoted[-1].group("cue").strip()
    named = list(
        re.finditer(
            rf"\b(?:format|form|line|as)\s*:?\s*(?P<cue>(?:{names})\s*:)\s*(?:<[^>\n]*>|\[[^\]\n]*\]|N\b|X\b)",
            text,
            re.IGNORECASE,
        )
    )
    return named[-1].group("cue").strip() if named else None
