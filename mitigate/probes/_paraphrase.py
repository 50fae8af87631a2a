"""Paraphrase (LM-assisted): the same content in other words; a fair judge keeps its verdict.

A judge that rewards familiar wording (Stureborg et al. 2024's familiarity bias) or a template's
own phrasing moves when a text is reworded. The rewriter is asked to reword every sentence and
keep what the text says: its facts, its quality and its mistakes. Every rewrite is recorded with
the rewriter's raw answer for review (:class:`~mitigate.probes._base.ProbeRecord`); an empty or
unchanged answer is a recorded failure of that item, never judged.
"""

from __future__ import annotations

from typing import ClassVar

from mitigate.probes._base import Direction
from mitigate.probes._rewrite import LMProbe
from mitigate.registry import register


@register("probe", "paraphrase")
class Paraphrase(LMProbe):
    """Reword the text without changing what it says (its facts, errors and quality)."""

    predicts: ClassVar[Direction] = "any"
    family: ClassVar[str] = "paraphrase"

    def task(self) -> str:
        """The paraphrase edit."""
        return (
            "Paraphrase the text: reword every sentence with different words and phrasing while keeping "
            "exactly what it says, every fact, name and number, and its quality, including any "
            "mistakes it makes."
        )
