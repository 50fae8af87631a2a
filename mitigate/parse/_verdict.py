"""Reading which of two outputs a judge preferred ("first", "second" or "tie") from its free-text answer."""

from __future__ import annotations

import re
from typing import Literal

from mitigate.errors import ConfigError, ParseError
from mitigate.parse._answer_line import sentence_bounds
from mitigate.parse._common import Verdict
from mitigate.parse._common import fail as _fail
from mitigate.parse._common import snippet as _snippet

_NOUNS = (
    r"(?:summary|summaries|response|output|answer|option|candidate|assistant|text|system|model"
    r"|translation|story|completion)"
)
_COMPARATIVE = (
    r"(?:is|was|seems|appears|looks|reads|would\s+be)?\s*(?:\w+ly\s+)?"
    r"(?:better|superior|preferable|preferred|stronger|more\s+\w+|the\s+(?:better|best|stronger|winner|preferred)|wins)"
)
_HEDGED = re.compile(
    r"\b(?:whether|hard\s+to\s+(?:say|tell)|difficult\s+to\s+(?:say|tell)|(?:cannot|can't|can\s+not)\s+"
    r"(?:decide|say|tell|choose|determine)|unable\s+to|one\s+(?:could|might|may)\s+argue|not\s+sure|unclear)\b",
    re.I,
)
_OVERALL = (
    r"(?:is|was|would\s+be)\s+(?:(?:clearly|definitely|overall|slightly|much|significantly)\s+)?"
    r"(?:better|superior|preferable|preferred|the\s+(?:better|best|stronger|winner|preferred)(?:\s+\w+)?)"
)
_WORSE = r"(?:is|was|seems|appears)?\s*(?:\w+ly\s+)?(?:worse|weaker|inferior|less\s+\w+)"
_TIE_PHRASES = re.compile(
    r"\b(?:it'?s|it\s+is|this\s+is|that'?s|declare|call\s+it|result\s+is|(?:verdict|answer|decision)\s*(?:is|:))"
    r"\s+(?:a\s+)?(?:tie|draw)\b|\b(?:they|both)\s+are\s+tied\b|^\W*(?:a\s+)?(?:tie|draw|tied)\W*$"
    r"|\b(?:both|the\s+two)\b[^.\n]{0,60}\b(?:equally|equal|the\s+same)\b|\bequal\s+(?:quality|in|level)"
    r"|\bsame\s+(?:quality|level)\b|\bno\s+(?:clear\s+)?(?:winner|difference|preference)\b"
    r"|\bneither\b[^.\n]{0,40}\b(?:better|preferred|preferable|superior|wins|stands\s+out)\b|^\W*neither\b",
    re.I,
)


_BETTER_ONE = (
    r"\bthe\s+(?:better|best|stronger|preferred|preferable|superior|winning)"
    rf"\s+(?:{_NOUNS}|one|choice)\b"
    r"[^.!?\n]{0,80}?\b(?:is|would\s+be)\s+"
)
_VERDICT_CUE = (
    r"\b(?:(?:final\s+)?(?:answer|verdict|choice|winner|decision|preference)\s*(?:is|:|=|-)\s*"
    r"|(?:i\s+(?:would\s+)?)?(?:prefer|choose|chose|pick|select|vote\s+for|go\s+with)\s+)"
)


def _label_forms(label: str, ordinal: str) -> str:
    esc = re.escape(label)
    # a one-letter label is also an English word ("a", "A", "I"): bare, it counts only in its own case
    # and never lower-case ("answer a question" names no output); in brackets it always counts
    word = len(label) == 1 and label.isalpha()
    named = (
        rf"[(\[]{esc}[)\]]"
        if word and not label.isupper()
        else (rf"(?-i:[(\[]?{esc}[)\]]?)" if word else rf"[(\[]?{esc}[)\]]?")
    )
    forms = [
        rf"\b{_NOUNS}\s*(?:#|no\.?|number)?\s*{named}(?!\w)",
        rf"#\s*{esc}(?!\w)",
        rf"[(\[]{esc}[)\]]",
        rf"\bthe\s+{ordinal}\s+(?:{_NOUNS}|one)\b",
    ]
    if label.isdigit() or label.isupper():
        forms.append(rf"(?<![\w#'])(?-i:[(\[`]?{esc}[)\]`]?)(?![\w'])")
    return "(?:" + "|".join(forms) + ")"


_CONCLUSION = re.compile(
    r"(?:^|(?<=[.!?\n]))\s*(?:therefore|thus|hence|so|overall|ultimately|in\s+conclusion|in\s+summary|to\s+conclude|"
    r"all\s+in\s+all|in\s+the\s+end|finally|consequently|as\s+a\s+result)\b[^.!?\n]*",
    re.I,
)


_NEITHER_TIE = re.compile(
    r"\bneither\b[^.!?\n]{0,80}?\bnor\b[^.!?\n]{0,80}?"
    r"\b(?:is|are|was|were)\s+(?:\w+\s+)?(?:better|preferred|preferable|superior)\b",
    re.I,
)
"""A sentence saying neither output is better: a tie claim, never a claim for the output it names last."""


def _sentences(text: str) -> list[str]:
    """``text`` cut into sentences and lines (a full stop inside "(a)." or a decimal does not cut)."""
    parts = re.split(r"(?<=[.!?])\s+(?=[A-Z(\[\"'#*])|\n+", text)
    return [p.strip() for p in parts if p.strip()]


def parse_pairwise(
    text: str,
    labels: tuple[str, str] = ("1", "2"),
    *,
    tie: str | None = None,
    case_sensitive: bool = False,
    ties: bool = True,
    final: Literal["last", "first", "either"] = "either",
) -> Literal["first", "second", "tie"]:
    """Read which of two outputs a judge preferred: "first", "second" or "tie".

    ``labels`` name the outputs as the prompt did ("1"/"2", "A"/"B", "a"/"b"), ``tie`` an optional tie option,
    ``case_sensitive`` labels differing only by case. The last explicit verdict wins (the whole answer a
    label, a label alone at its start or end, "Answer: A", "[[B]]", "I prefer Summary 1"); else the last
    concluding sentence when it claims one side; else the final statement (``final``: "last", "first" or
    "either" sentence) when every other claim agrees. A claim inside the reasoning is never the verdict.
    ParseError for no side, conflicting sides, or a tie with ``ties=False``.
    """
    first, second = labels
    if not first or not second or first == second or (not case_sensitive and first.lower() == second.lower()):
        hint = (
            " (labels that differ only by case need case_sensitive=True)" if first and first != second else ""
        )
        raise ConfigError(f"expected two different, non-empty pairwise labels; got {labels!r}{hint}")
    flags = 0 if case_sensitive else re.I
    expected = f"a verdict naming {first!r}, {second!r} or a tie (e.g. 'Summary {first} is better')"
    work = re.sub(r"[*]+", "", text).strip()
    forms: dict[Verdict, str] = {
        "first": _label_forms(first, "(?:first|former)"),
        "second": _label_forms(second, "(?:second|latter)"),
    }
    bare: dict[Verdict, str] = {"first": first, "second": second}
    if tie:
        forms["tie"] = rf"[(\[]?{re.escape(tie)}[)\]]?(?!\w)"
        bare["tie"] = tie

    def same(x: str, y: str) -> bool:
        return x == y if case_sensitive else x.lower() == y.lower()

    # 1. the whole answer is one label ("B", "Summary #1", "(2)", "Output (a)")
    stripped = re.sub(r"^[\W_]+|[\W_]+$", "", work)
    for side, label in bare.items():
        if same(stripped, label) or (side != "tie" and re.fullmatch(rf"\W*{forms[side]}\W*", work, flags)):
            return side

    # 2. explicit verdicts; the last one wins
    explicit: list[tuple[int, Verdict]] = []
    for side, label in bare.items():
        esc = re.escape(label)
        sep = r"(?:\s*[)\]]|:|\s*$|\s*\n" + ("" if label.isdigit() else r"|\.(?!\w)") + ")"
        if re.match(rf"[(\[`]{{0,2}}\s*{esc}{sep}", work, flags):
            explicit.append((0, side))
        explicit.extend((m.start(), side) for m in re.finditer(rf"\[\[\s*{esc}\s*\]\]", work, flags))
        explicit.extend(
            (m.start(), side) for m in re.finditer(f"(?i:{_VERDICT_CUE})" + forms[side], work, flags)
        )
        last = re.search(rf"(?:^|\n|[.!?:]\s+)[\s\"'`(\[]*{esc}[\"'`)\]]*\s*\.?\s*$", work, flags)
        if last is not None and len(work) > len(label) + 2:
            explicit.append((last.start() + 1, side))
    if explicit:
        pos, side = max(explicit, key=lambda p: p[0])
        start, end = sentence_bounds(work, pos, pos + 1)
        rivals = {s for p, s in explicit if s != side and start <= p < end}
        if rivals:  # "[[A]] [[B]]", "either [[A]] or [[B]] would do": two verdicts, no final one
            order = [v for v in ("first", "second", "tie") if v in rivals | {side}]
            raise _fail(
                f"two verdicts in one sentence ({', '.join(order)}) with no final one", text, expected
            )
        return side

    pairs: tuple[tuple[Verdict, Verdict], ...] = (("first", "second"), ("second", "first"))

    def claims(part: str, overall: bool = False) -> set[Verdict]:
        """Sides ``part`` claims; ``overall``: only whole verdicts ("is better"), not an aspect."""
        found: set[Verdict] = set()
        original = part
        kept = [x for x in _sentences(part) if not _HEDGED.search(x)]
        if len(kept) != len(_sentences(part)):
            part = "\n".join(kept)  # "hard to say whether Summary 1 is better" claims nothing
        if overall:
            for side, _ in pairs:
                if re.search(rf"^\W*{forms[side]}(?:'s\s+\w+)?\s+(?i:{_OVERALL})\W*$", part, flags):
                    found.add(side)
            return found
        # "neither (a) nor (b) is better" names no side
        part = _NEITHER_TIE.sub(lambda m: " " * len(m.group(0)), part)
        for side, other in pairs:
            if re.search(rf"{forms[side]}(?:'s\s+\w+)?\s+(?i:{_COMPARATIVE})", part, flags) or re.search(
                rf"(?i:\b(?:better|superior|preferable)\s+than\s+){forms[other]}", part, flags
            ):
                found.add(side)
            if re.search(rf"{forms[side]}(?:'s\s+\w+)?\s+(?i:{_WORSE})", part, flags):
                found.add(other)
            # "the better output ... is Output (a)"
            if re.search(rf"(?i:{_BETTER_ONE}){forms[side]}", part, flags):
                found.add(side)
        if _TIE_PHRASES.search(original) or _NEITHER_TIE.search(original):
            found.add("tie")
        return found

    def decided(side: Verdict) -> Verdict:
        if side == "tie" and not ties:
            raise _fail("a tie, which the template does not offer", text, expected)
        return side

    def conflict(claimed: set[Verdict]) -> ParseError:
        order = [v for v in ("first", "second", "tie") if v in claimed]
        return _fail(f"conflicting verdicts ({', '.join(order)})", text, expected)

    # 3. the last concluding sentence, when it claims exactly one side and nothing after it claims another
    conclusions = list(_CONCLUSION.finditer(work))
    if conclusions:
        last = conclusions[-1]
        concluded = claims(last.group(0))
        if len(concluded) == 1 and claims(work[last.end() :]) <= concluded:
            return decided(concluded.pop())
        if len(concluded) > 1:
            raise conflict(concluded)
        if not concluded and not work[last.end() :].strip(" \t\n.!"):
            raise _fail(
                f"a concluding sentence that names no side ({_snippet(last.group(0).strip(), 60)!r})",
                text,
                expected,
            )

    # 4. the final statement (last sentence, first one, or either), agreeing with every other claim
    sentences = _sentences(work)
    claimed = claims(work)
    ends: set[Verdict] = set()
    if sentences:
        # the end the format puts the verdict at counts with any claim; the other end only with a whole
        # verdict standing alone ("Assistant A's answer is better." before reasons)
        ends |= claims(sentences[-1], overall=final == "first")
        ends |= claims(sentences[0], overall=final == "last")
    if len(ends) == 1 and claimed <= ends:
        return decided(ends.pop())
    if len(claimed) > 1 or len(ends) > 1:
        raise conflict(claimed | ends)
    if claimed:
        raise _fail(
            f"no final verdict (a claim for {claimed.pop()} only inside the reasoning)", text, expected
        )
    raise _fail("no verdict", text, expected)
