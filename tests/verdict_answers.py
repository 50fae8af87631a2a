"""Reasoning-then-verdict pairwise answers written for mitigate's parse-precision test, each hand-labelled.

Three templates of our own wording ask for three published answer lines: LLMBar's verdict
sentence ("Therefore, Output (a) is better."), MT-Bench's "[[A]]" / "[[B]]" / "[[C]]" with a
tie, and a bare "Summary 1" / "Summary 2" on the last line. Each answer is assembled from the
building blocks below in the styles released judges write (verdict sentence with a trailing
explanation, verdict then reasons, both outputs named in the reasoning, a reasoning that first
leans the other way, hedges, refusals, cut-off answers); its expected reading ("first",
"second", "tie" or "failure") is assigned by hand per style, not computed by a parser.

Used by ``tests/parse/test_verdict_precision.py`` and ``benchmarks/parse_reasoning_verdicts.py``.
"""

from __future__ import annotations

from dataclasses import dataclass

from mitigate.prompt import JudgePrompt

TEMPLATES = {
    "llmbar": (
        "Decide which output follows the instruction better. Give a short explanation first. Your response "
        'should end with "Therefore, Output (a) is better." or "Therefore, Output (b) is better."\n\n'
        "# Instruction:\n{{instruction}}\n\n# Output (a):\n{{output_1}}\n\n# Output (b):\n{{output_2}}\n"
    ),
    "mtbench": (
        "Compare the two assistants' answers to the question.\n\n[Question]\n{{question}}\n\n[Assistant A]\n"
        "{{answer_a}}\n\n[Assistant B]\n{{answer_b}}\n\nExplain your comparison first, then "
        "output your final "
        'verdict by strictly following this format: "[[A]]" if assistant A is better, "[[B]]" if assistant B '
        'is better, and "[[C]]" for a tie.'
    ),
    "summary": (
        "Read the article and both summaries. Explain which summary is more faithful, then write on the last "
        'line "Summary 1" or "Summary 2".\n\nArticle: {{source}}\n\nSummary 1: {{summary_1}}\n\n'
        "Summary 2: {{summary_2}}\n"
    ),
}

NAMES = {  # how the reasoning names the two outputs
    "llmbar": ("Output (a)", "Output (b)"),
    "mtbench": ("Assistant A", "Assistant B"),
    "summary": ("Summary 1", "Summary 2"),
}


def verdict_line(fmt: str, side: str) -> str:
    """The answer line the template asks for, for ``side`` ("first", "second" or "tie")."""
    if fmt == "llmbar":
        return f"Therefore, Output ({'a' if side == 'first' else 'b'}) is better."
    if fmt == "mtbench":
        return {"first": "[[A]]", "second": "[[B]]", "tie": "[[C]]"}[side]
    return f"Summary {'1' if side == 'first' else '2'}"


# Neutral reasoning: names both outputs, claims neither is better overall ({x} first, {y} second).
NEUTRAL = [
    "{x} lists three steps and {y} lists four; both cover the main request.",
    "Both {x} and {y} answer the question. {x} is shorter; {y} adds an example.",
    "The instruction asks for a polite reply. {x} opens with a greeting, while {y} goes straight "
    "to the point.",
    "{y} mentions the deadline that {x} leaves out, but {x} keeps the requested tone.",
    "Looking at accuracy, {x} states the date correctly and {y} states it correctly too.",
]
# Reasoning that supports one side ({w} winner, {l} loser).
FOR_WINNER = [
    "{w} follows the instruction exactly, whereas {l} drifts to a related topic.",
    "{l} contains a factual error about the year, which {w} avoids.",
    "{w} answers every part of the question; {l} skips the second part.",
    "{l} is fluent but ignores the requested format, while {w} respects it.",
    "Neither is perfect: {w} has a typo, and {l} misreads the question entirely.",
]
# Reasoning that first leans the other way ({l} praised), before the verdict for {w}.
LEANS_OTHER = [
    "At first glance {l} seems more detailed. On closer reading, {l} invents a source and {w} does not.",
    "{l} is more polished in style, yet {w} is the only one that answers what was asked.",
]
TRAILING = [
    " as it answers the question directly.",
    " because it keeps to the facts of the article.",
    ", since it covers every requested point.",
]
HEDGES = [
    "It is hard to say whether {x} is better; both have clear strengths.",
    "Both outputs have merits and flaws, and I cannot decide which one is better.",
    "One could argue that {x} is better, but {y} is also defensible. I am unable to choose.",
]
REFUSALS = [
    "I'm sorry, but I can't help with evaluating this content.",
    "As an AI, I do not have personal preferences, so I will not pick between these outputs.",
]
TIE_TEXT = ["Both are equally helpful and accurate.", "The two answers are of the same quality."]


@dataclass(frozen=True)
class Case:
    """One answer, the format it was written for, its hand-assigned reading and the style it shows."""

    fmt: str
    text: str
    expected: str  # "first", "second", "tie" or "failure"
    style: str


def _name(fmt: str, side: str) -> str:
    return NAMES[fmt][0 if side == "first" else 1]


def _cut(fmt: str, side: str) -> str:
    """A verdict line cut off before its label or its verdict word."""
    line = verdict_line(fmt, side)
    if fmt == "llmbar":
        return line[: line.index("is better")].rstrip()  # "Therefore, Output (b)"
    if fmt == "mtbench":
        return "Final verdict: [["
    return "Final answer: Summary"


def cases() -> list[Case]:
    """Every hand-labelled answer (the same list on every call)."""
    out: list[Case] = []
    for fmt in TEMPLATES:
        x, y = NAMES[fmt]
        for side in ("first", "second"):
            w, lo = _name(fmt, side), _name(fmt, "second" if side == "first" else "first")
            verdict = verdict_line(fmt, side)
            for i, reason in enumerate(NEUTRAL):
                out.append(
                    Case(
                        fmt,
                        reason.format(x=x, y=y) + "\n\n" + verdict,
                        side,
                        "neutral reasoning, verdict last",
                    )
                )
                if i < 3 and fmt != "summary":
                    tail = TRAILING[i]
                    line = verdict[:-1] + tail if verdict.endswith(".") else verdict + " " + tail.lstrip(" ,")
                    out.append(
                        Case(
                            fmt,
                            reason.format(x=x, y=y) + " " + line,
                            side,
                            "verdict sentence with trailing explanation",
                        )
                    )
            for reason in FOR_WINNER:
                text = reason.format(w=w, l=lo)
                out.append(Case(fmt, text + "\n\n" + verdict, side, "both named in reasoning, verdict last"))
                out.append(Case(fmt, verdict + "\n\n" + text, side, "verdict then reasons"))
                out.append(Case(fmt, text + "\n" + _cut(fmt, side), "failure", "cut-off answer"))
                out.append(Case(fmt, text + "\n\n**" + verdict + "**", side, "verdict in markdown emphasis"))
            for reason in LEANS_OTHER:
                out.append(
                    Case(
                        fmt,
                        reason.format(w=w, l=lo) + "\n\n" + verdict,
                        side,
                        "reasoning leans the other way, verdict last",
                    )
                )
        for hedge in HEDGES:
            out.append(Case(fmt, hedge.format(x=x, y=y), "failure", "hedge"))
            out.append(
                Case(fmt, NEUTRAL[0].format(x=x, y=y) + " " + hedge.format(x=y, y=x), "failure", "hedge")
            )
        for refusal in REFUSALS:
            out.append(Case(fmt, refusal, "failure", "refusal"))
        for tie in TIE_TEXT:
            # a tie only where the template offers one: MT-Bench's [[C]]; elsewhere a tie claim is no verdict
            if fmt == "mtbench":
                out.append(Case(fmt, tie + "\n\n[[C]]", "tie", "tie on the answer line"))
            else:
                out.append(Case(fmt, NEUTRAL[1].format(x=x, y=y) + " " + tie, "failure", "tie not offered"))
        for reason in NEUTRAL:
            out.append(Case(fmt, reason.format(x=x, y=y), "failure", "reasoning without a verdict"))
    return out


def prompts() -> dict[str, JudgePrompt]:
    """The three templates read by the template reader (answer format recovered from their text)."""
    return {name: JudgePrompt.from_template(text) for name, text in TEMPLATES.items()}
