"""An answer format as a constraint for a backend: a llama.cpp grammar, a regular expression and a JSON
schema.

:func:`answer_constraint` builds the three of the same shape (what
:meth:`~mitigate.prompt.answer.AnswerFormat.constraint` returns); :func:`json_schema` the JSON
object alone. Every grammar is bounded (:func:`reasoning_budget`), so a small model cannot loop
before it reaches its answer.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from mitigate.lm.constraint import AnswerConstraint, ConstraintMode
from mitigate.parse.answer_line import VALUE
from mitigate.scale import Scale

if TYPE_CHECKING:
    from mitigate.prompt.answer.format import AnswerFormat

__all__ = ["answer_constraint", "json_schema", "reasoning_budget"]

_REASON_CHARS = 600
"""At most how many characters of reasoning a constrained answer writes before its answer line."""
_REASON_MIN = 32
"""At least how many characters of reasoning a constrained answer writes when the format reasons first."""
_ANSWER_ROOM = 48
"""Tokens kept free for the answer line after the reasoning part (see :func:`reasoning_budget`)."""


def reasoning_budget(max_tokens: int | None = None) -> int:
    """How many characters of reasoning a bounded answer constraint allows before the answer line.

    At most :data:`_REASON_CHARS`; with a token limit, ``max_tokens - 48`` (a character of
    reasoning is at least one token's worth of text, so the answer line always fits), and
    never below 16.
    """
    if max_tokens is None:
        return _REASON_CHARS
    return max(16, min(_REASON_CHARS, max_tokens - _ANSWER_ROOM))


def answer_constraint(fmt: AnswerFormat, scale: Scale, mode: ConstraintMode = "format", *,
                      max_tokens: int | None = None) -> AnswerConstraint:
    """The answer as an :class:`AnswerConstraint`: GBNF, regex and JSON schema of the same shape.

    Every grammar is bounded, so a small model cannot loop before it reaches its answer:

    - ``reasoning="before"``: a reasoning part of at least 32 and at most
      :func:`reasoning_budget` characters (two lines at most, starting with a letter, and holding none of the
      answer line's
      brackets ``[`` ``<`` ``{``, so an answer marker cannot be repeated inside it:
      ``[[A]] [[B]] ...`` or ``[RESULT] 5 [RESULT] 5``), then the answer line, then the end;
    - ``"after"``: the answer line first, then at most one capped line of explanation;
    - ``"none"``: the answer line alone.

    With a stub (the template's last line is the start of the answer line, "- Fluency (1-3):"),
    the answer line is only its rest, after at most one space ("3", " [[3]]"); after reasoning
    the final line is the whole line, the stub repeated and completed.

    ``max_tokens`` (the request's token limit) sets the reasoning budget so that the
    answer line always fits within it: a character is at least one token's worth of
    text, so a budget of ``max_tokens - 48`` characters leaves room for the answer.
    """
    values = fmt.values(scale)
    budget = reasoning_budget(max_tokens)
    if fmt.two_scores:
        value_g = f"({_gbnf_alts(values)}) \" \" ({_gbnf_alts(values)})"
        value_r = f"(?:{_regex_alts(values)}) (?:{_regex_alts(values)})"
        answer_g, answer_r = value_g, value_r
    elif fmt.json_key is not None:
        shown = [json.dumps(v) if fmt.kind != "score" else v for v in values]
        head = "{" + (f'"{fmt.reason_key}": "' if fmt.reason_key else "")
        mid = (f'", "{fmt.json_key}": ' if fmt.reason_key else f'"{fmt.json_key}": ')
        text_g = f'[^"\\\\\\n]{{0,{budget}}}'
        reason_g = " " + text_g + " " if fmt.reason_key else " "
        reason_r = f'[^"\\\\\\n]{{0,{budget}}}' if fmt.reason_key else ""
        answer_g = (_gbnf_lit(head) + reason_g + _gbnf_lit(mid) + " (" + _gbnf_alts(shown) + ") "
                    + _gbnf_lit("}"))
        answer_r = (re.escape(head) + reason_r + re.escape(mid) + "(?:" + _regex_alts(shown) + ")"
                    + re.escape("}"))
    else:
        head, tail = fmt.line.split(VALUE, 1)
        answer_g = " ".join(p for p in (_gbnf_lit(head), f"({_gbnf_alts(values)})", _gbnf_lit(tail)) if p)
        answer_r = re.escape(head) + f"(?:{_regex_alts(values)})" + re.escape(tail)
        if fmt.stub and fmt.reasoning != "before":
            # the template wrote the line's start: only its rest is generated, after at most one space
            head = fmt.continuation.split(VALUE, 1)[0].lstrip()
            answer_g = " ".join(p
                                for p in ('" "?', _gbnf_lit(head), f"({_gbnf_alts(values)})", _gbnf_lit(tail))
                                if p)
            answer_r = "[ ]?" + re.escape(head) + f"(?:{_regex_alts(values)})" + re.escape(tail)
    if fmt.reasoning == "before" and fmt.json_key is None:
        sep = "\n" if not fmt.line.startswith("[RESULT]") else " "
        sep_r = "\\n" if sep == "\n" else " "
        banned = "".join(ch for ch in "[<{" if ch in fmt.line.split(VALUE, 1)[0] or (
            fmt.kind == "pairwise" and ch == "[" and "[" in fmt.line))
        cls_g = "[^\\n" + "".join("\\" + ch if ch in "[]" else ch for ch in banned) + "]"
        cls_r = "[^\\n" + "".join(re.escape(ch) for ch in banned) + "]"
        per_line = max(1, budget // 2)
        least = min(_REASON_MIN - 1, per_line)  # the asked-for reasoning is written, not a bare "Rating: 9"
        gbnf = (f"root ::= reason {_gbnf_lit(sep)} answer\n"
                f"reason ::= [A-Za-z] {cls_g}{{{least},{per_line}}} (\"\\n\" {cls_g}{{0,{per_line}}})?\n"
                f"answer ::= {answer_g}\n")
        regex = f"[A-Za-z]{cls_r}{{{least},{per_line}}}(?:\\n{cls_r}{{0,{per_line}}})?{sep_r}{answer_r}"
    elif fmt.reasoning == "after" and fmt.json_key is None:
        gbnf = (f"root ::= answer (\"\\n\" [^\\n]{{0,{budget}}})?\n"
                f"answer ::= {answer_g}\n")
        regex = f"{answer_r}(?:\\n[^\\n]{{0,{budget}}})?"
    else:
        gbnf = f"root ::= {answer_g}\n"
        regex = answer_r
    return AnswerConstraint(mode=mode, gbnf=gbnf, regex=regex, json_schema=json_schema(fmt, scale),
                            name="judge_answer", describe=fmt.describe())


def json_schema(fmt: AnswerFormat, scale: Scale) -> dict[str, Any]:
    """The answer as a JSON object: an explanation field first when the format reasons first, then the
    value."""
    values = fmt.values(scale)
    key = fmt.json_key or ("verdict" if fmt.kind == "pairwise" else "answer" if fmt.kind == "mcq"
                           else "score")
    props: dict[str, Any] = {}
    reason = fmt.reason_key or ("reasoning" if fmt.reasoning != "none" else None)
    if reason is not None:
        props[reason] = {"type": "string"}
    if fmt.two_scores:
        props["score_1"] = {"enum": [float(v) if "." in v else int(v) for v in values]}
        props["score_2"] = {"enum": [float(v) if "." in v else int(v) for v in values]}
    elif fmt.kind == "score":
        props[key] = {"enum": [float(v) if "." in v else int(v) for v in values]}
    else:
        props[key] = {"type": "string", "enum": values}
    return {"type": "object", "properties": props, "required": list(props), "additionalProperties": False}


def _gbnf_lit(text: str) -> str:
    """A GBNF string literal for ``text`` (empty text gives '')."""
    if not text:
        return ""
    return json.dumps(text, ensure_ascii=False)


def _gbnf_alts(values: Sequence[str]) -> str:
    return " | ".join(_gbnf_lit(v) for v in sorted(values, key=len, reverse=True))


def _regex_alts(values: Sequence[str]) -> str:
    return "|".join(re.escape(v) for v in sorted(values, key=len, reverse=True))

