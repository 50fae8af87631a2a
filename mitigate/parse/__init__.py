"""Strict readers of a judge's answer: a reply they cannot read is a :class:`~mitigate.errors.ParseError`,
never a guessed score.

:mod:`._score` reads a numeric score or an option letter, :mod:`._verdict` a pairwise verdict,
:mod:`._criteria` one score per criterion, :mod:`._logprobs` scores and verdicts from token log-probabilities.
:mod:`._format_reader` reads an answer in the format its template prescribes (its own answer line,
:mod:`._answer_line`, :mod:`._stub`; a JSON field; echoed rubric lines dropped), after :mod:`._quoted` has
blanked what is not the judge's own statement (:mod:`._reported`: a third party's words, marked quotations;
:mod:`._copies`: runs of words copied from the texts it was shown; docs/answer_reading.md).
"""

from typing import TYPE_CHECKING

from mitigate._lazy import lazy_exports

if TYPE_CHECKING:
    from mitigate.parse._answer_line import VALUE
    from mitigate.parse._common import Verdict, normalise_answer
    from mitigate.parse._criteria import parse_criteria
    from mitigate.parse._format_reader import FormatReader, strip_echoed_lines
    from mitigate.parse._logprobs import (
        expected_score,
        score_distribution,
        score_tokens,
        verdict_probabilities,
    )
    from mitigate.parse._quoted import unquote
    from mitigate.parse._score import parse_mcq, parse_score
    from mitigate.parse._stub import LIST_MARKER, RANGE
    from mitigate.parse._verdict import parse_pairwise

__getattr__, __dir__, __all__ = lazy_exports(__name__)
