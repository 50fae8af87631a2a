"""Strict readers of a judge's answer: a reply they cannot read is a :class:`~mitigate.errors.ParseError`,
never a guessed score (one module per answer kind; :mod:`._format_reader` reads a template's format after
:mod:`._quoted` blanked what is not the judge's own statement, docs/answer_reading.md)."""

from typing import TYPE_CHECKING

from mitigate._lazy import lazy_exports

if TYPE_CHECKING:
    from mitigate.parse._answer_line import VALUE
    from mitigate.parse._common import Verdict, normalise_answer
    from mitigate.parse._criteria import parse_criteria
    from mitigate.parse._format_reader import FormatReader, strip_echoed_lines
    from mitigate.parse._logprobs import expected_score, score_distribution, verdict_probabilities
    from mitigate.parse._quoted import unquote
    from mitigate.parse._score import parse_mcq, parse_score
    from mitigate.parse._stub import LIST_MARKER, RANGE
    from mitigate.parse._verdict import parse_pairwise

__getattr__, __dir__, __all__ = lazy_exports(__name__)
