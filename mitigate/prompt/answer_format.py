"""Deprecated: the answer format is the package :mod:`mitigate.prompt.answer` now (import from there).

``AnswerFormat``, ``AnswerKind``, ``Reasoning``, ``DEFAULT_SCORE_LINE`` and ``VALUE`` are in
:mod:`mitigate.prompt.answer.format`; ``infer_answer_format``, ``stated_reasoning`` and
``reasoning_ban`` in :mod:`mitigate.prompt.answer.infer`; ``reasoning_budget`` in
:mod:`mitigate.prompt.answer.constraint`. Each name is still found here, with a
:class:`DeprecationWarning` naming its new home.
"""

from __future__ import annotations

from mitigate.deprecation import moved

_MOVED = {
    "AnswerFormat": "mitigate.prompt.answer.format",
    "AnswerKind": "mitigate.prompt.answer.format",
    "DEFAULT_SCORE_LINE": "mitigate.prompt.answer.format",
    "Reasoning": "mitigate.prompt.answer.format",
    "VALUE": "mitigate.prompt.answer.format",
    "infer_answer_format": "mitigate.prompt.answer.infer",
    "reasoning_ban": "mitigate.prompt.answer.infer",
    "reasoning_budget": "mitigate.prompt.answer.constraint",
    "stated_reasoning": "mitigate.prompt.answer.infer",
}

__all__ = sorted(_MOVED)
__getattr__ = moved(__name__, _MOVED, "mitigate.prompt.answer")
