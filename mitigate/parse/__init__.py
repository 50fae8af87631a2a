"""Strict readers of a judge's answer, one module per answer kind.

A reply the readers cannot read is a :class:`~mitigate.errors.ParseError`, never a guessed
score. :mod:`.score` reads a numeric score, :mod:`.choice` an option letter, :mod:`.verdict`
a pairwise verdict, :mod:`.criteria` one score per criterion, :mod:`.json_answer` a JSON
field, :mod:`.logprobs` a distribution over the scale from token log-probabilities.
:mod:`.answer_line` finds a template's own answer line and :mod:`.format_reader` reads an
answer in the format its template prescribes. :mod:`.quoted` finds what in an answer is not the
judge's own statement (reported speech, quotations of the texts it was shown), which no reader
takes for the verdict (docs/answer_reading.md), from :mod:`.reported` (a third party's words,
marked quotations) and :mod:`.copies` (runs of words copied from those texts); :mod:`.echoes` drops lines
copying the prompt's
scoring options; :mod:`.common` holds the verdict type, error messages and normalisation.
"""

from mitigate.parse.choice import parse_mcq
from mitigate.parse.common import Verdict, normalise_answer
from mitigate.parse.criteria import parse_criteria
from mitigate.parse.echoes import strip_echoed_lines
from mitigate.parse.logprobs import expected_score, score_distribution, score_tokens
from mitigate.parse.quoted import unquote
from mitigate.parse.score import parse_score
from mitigate.parse.verdict import parse_pairwise

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
    "unquote",
]
