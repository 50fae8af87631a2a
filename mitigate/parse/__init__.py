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

from typing import TYPE_CHECKING

from mitigate._lazy import lazy_exports

if TYPE_CHECKING:
    from mitigate.parse._answer_line import VALUE
    from mitigate.parse._choice import parse_mcq
    from mitigate.parse._common import Verdict, normalise_answer
    from mitigate.parse._criteria import parse_criteria
    from mitigate.parse._echoes import strip_echoed_lines
    from mitigate.parse._format_reader import FormatReader
    from mitigate.parse._logprobs import (
        expected_score,
        score_distribution,
        score_tokens,
        verdict_probabilities,
    )
    from mitigate.parse._quoted import unquote
    from mitigate.parse._score import parse_score
    from mitigate.parse._stub import LIST_MARKER, RANGE
    from mitigate.parse._verdict import parse_pairwise

__getattr__, __dir__, __all__ = lazy_exports(__name__)
