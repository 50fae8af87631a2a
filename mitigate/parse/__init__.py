"""Strict readers of a judge's answer: a score, a verdict, a choice, scores per criterion, or a distribution from logprobs.

A reply the readers cannot read is a :class:`~mitigate.errors.ParseError`, never a guessed
score. The readers live in :mod:`.answers`.
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
