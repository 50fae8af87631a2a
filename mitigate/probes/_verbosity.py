"""Verbosity (CALM, Ye et al. 2025; Saito et al. 2023): the judged text padded without new content.

The padding restates what the text already said in general terms, so the information is
unchanged while the length grows; a judge with verbosity bias scores the longer text higher.
The filler sentences are this project's wording.
"""

from __future__ import annotations

import random
from typing import ClassVar

from mitigate.constraints import Interval
from mitigate.probes._base import Direction, RuleProbe
from mitigate.registry import register

FILLERS = (
    "To put it another way, the points above capture the central content of the matter.",
    "It is worth stressing once more that these are the key elements described here.",
    "In other words, the account above sets out the main facts in a clear order.",
    "Taken together, the details mentioned form a complete picture of what happened.",
    "This summary therefore covers the essential information in a straightforward manner.",
    "Put simply, everything important has been stated above.",
)
"""Content-free restatements (own wording)."""


@register("probe", "verbosity")
class Verbosity(RuleProbe):
    """Append ``sentences`` filler sentences (drawn without repetition) that add length, not content."""

    sentences: int = 3
    predicts: ClassVar[Direction] = "up"
    family: ClassVar[str] = "verbosity"
    parameter_constraints: ClassVar = {
        **RuleProbe.parameter_constraints,
        "sentences": [Interval(int, 1, len(FILLERS))],
    }

    def rewrite(self, text: str, rng: random.Random) -> tuple[str, str]:
        """The text followed by the drawn filler sentences."""
        added = " ".join(rng.sample(FILLERS, self.sentences))
        return f"{text.rstrip()} {added}", added
