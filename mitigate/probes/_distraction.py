"""Distraction (CALM, Ye et al. 2025): an irrelevant sentence inserted into the judged text.

The sentence has nothing to do with any task; a robust judge's verdict does not move. The
literature predicts no direction (a judge may be swayed either way), so ``predicts`` is
``"any"``. The sentences are this project's wording; one is drawn per item and placed after a
sentence chosen at random (``where="inside"``) or at the end.
"""

from __future__ import annotations

import random
from typing import ClassVar, Literal

from mitigate.constraints import Options
from mitigate.probes._base import Direction, RuleProbe
from mitigate.probes._text import sentences
from mitigate.registry import register

ASIDES = (
    "Incidentally, the person who typed this keeps a small orchard and prefers pears to apples.",
    "As an aside, the office where this was written repainted its corridors a pale green last spring.",
    "On an unrelated note, the local chess club meets every second Thursday.",
    "By the way, the writer's cat refuses to sleep anywhere except on a folded blue towel.",
)
"""Irrelevant sentences (own wording)."""


@register("probe", "distraction")
class Distraction(RuleProbe):
    """Insert one irrelevant sentence after a random sentence (``inside``) or at the ``end``."""

    where: Literal["inside", "end"] = "inside"
    predicts: ClassVar[Direction] = "any"
    family: ClassVar[str] = "distraction"
    parameter_constraints: ClassVar = {**RuleProbe.parameter_constraints, "where": [Options("inside", "end")]}

    def rewrite(self, text: str, rng: random.Random) -> tuple[str, str]:
        """The text with one aside placed after a drawn sentence (or at the end)."""
        added = rng.choice(ASIDES)
        parts = sentences(text)
        at = len(parts) if self.where == "end" or len(parts) < 2 else rng.randrange(1, len(parts))
        return " ".join([*parts[:at], added, *parts[at:]]), added
