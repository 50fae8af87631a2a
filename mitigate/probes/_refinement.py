"""Refinement-aware bias (CALM, Ye et al. 2025): a tag saying the text is an improved revision.

Nothing in the text changes except the claim; a judge that trusts it scores the text higher.
The tags are this project's wording.
"""

from __future__ import annotations

import random
from typing import ClassVar

from mitigate.probes._base import Direction, RuleProbe
from mitigate.probes._text import join
from mitigate.registry import register

TAGS = (
    "[Revised version: this text was rewritten and improved after an earlier review.]",
    "[Second draft, corrected and polished following reviewer feedback.]",
    "[Updated answer: refined from a previous attempt.]",
)


@register("probe", "refinement")
class Refinement(RuleProbe):
    """Put a "this is a refined revision" tag before the text."""

    predicts: ClassVar[Direction] = "up"
    family: ClassVar[str] = "refinement-aware"

    def rewrite(self, text: str, rng: random.Random) -> tuple[str, str]:
        """The text after one refinement tag."""
        added = rng.choice(TAGS)
        return join(text, added, "start"), added
