"""Deprecated: the readers that lived here are one module per answer kind now (import them from
:mod:`mitigate.parse`).

``parse_score`` is in :mod:`mitigate.parse.score`, ``parse_mcq`` in :mod:`mitigate.parse.choice`,
``parse_pairwise`` and ``Verdict`` in :mod:`mitigate.parse.verdict`, ``parse_criteria`` in
:mod:`mitigate.parse.criteria`, ``expected_score``, ``score_distribution`` and ``score_tokens`` in
:mod:`mitigate.parse.logprobs`, ``strip_echoed_lines`` in :mod:`mitigate.parse.echoes` and
``normalise_answer`` in :mod:`mitigate.parse.common`. Each name is still found here, with a
:class:`DeprecationWarning` naming its new home.
"""

from __future__ import annotations

from mitigate.deprecation import moved

_MOVED = {
    "Verdict": "mitigate.parse.common",
    "expected_score": "mitigate.parse.logprobs",
    "normalise_answer": "mitigate.parse.common",
    "parse_criteria": "mitigate.parse.criteria",
    "parse_mcq": "mitigate.parse.choice",
    "parse_pairwise": "mitigate.parse.verdict",
    "parse_score": "mitigate.parse.score",
    "score_distribution": "mitigate.parse.logprobs",
    "score_tokens": "mitigate.parse.logprobs",
    "strip_echoed_lines": "mitigate.parse.echoes",
}

__all__ = sorted(_MOVED)
__getattr__ = moved(__name__, _MOVED, "mitigate.parse")
