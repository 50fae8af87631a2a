"""Strict readers of a judge's answer: a score, a verdict, a choice, scores per criterion, or a distribution from logprobs.

A reply the readers cannot read is a :class:`~mitigate.errors.ParseError`, never a guessed
score. The readers live in :mod:`.answers`; :mod:`.quoted` finds what in an answer is not the
judge's own statement (reported speech, quotations of the texts it was shown), which no reader
takes for the verdict (docs/answer_reading.md).
"""

from mitigate.parse.answers import (
    Verdict,
    expected_score,
    normalise_answer,
    parse_criteria,
    parse_mcq,
    parse_pairwise,
    parse_score,
    score_distribution,
    score_tokens,
    strip_echoed_lines,
)

__all__ = [
    "Verdict",
    "expected_score",
    "normalise_answer",
    "parse_criteria",
    "parse_mcq",
    "parse_pairwise",
    "parse_score",
    "score_distribution",
    "score_tokens",
    "strip_echoed_lines",
]
