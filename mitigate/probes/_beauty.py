"""Beauty / style (CALM's "beauty"; Arena-Hard style control): markdown headers, bold, lists and emoji.

The words stay the same; only the presentation changes: a header, each sentence as a bullet
with its first words in bold, and an emoji. A judge with this bias scores the formatted
text higher. (The style covariates of :mod:`mitigate.measures._style` count the same marks.)
"""

from __future__ import annotations

import random
from typing import ClassVar

from mitigate.constraints import Interval, IsInstance
from mitigate.probes._base import Direction, RuleProbe
from mitigate.probes._text import sentences
from mitigate.registry import register

HEADERS = ("## Summary", "## Key points", "### Overview")
EMOJI = ("\u2728", "\u2705", "\U0001f4cc", "\U0001f680")


@register("probe", "beauty")
class Beauty(RuleProbe):
    """Reformat the text as markdown: a header, one bullet per sentence with bold lead words, emoji
    (``emoji``)."""

    emoji: bool = True
    bold_words: int = 3
    predicts: ClassVar[Direction] = "up"
    family: ClassVar[str] = "beauty"
    parameter_constraints: ClassVar = {
        **RuleProbe.parameter_constraints,
        "emoji": [IsInstance(bool)],
        "bold_words": [Interval(int, 0)],
    }

    def rewrite(self, text: str, rng: random.Random) -> tuple[str, str]:
        """The same sentences under a header, as bullets with bold lead words (and emoji)."""
        header = rng.choice(HEADERS)
        mark = rng.choice(EMOJI) if self.emoji else ""
        if mark:
            header = f"{header} {mark}"
        bullets = []
        for s in sentences(text) or [text.strip()]:
            words = s.split(" ")
            k = max(0, min(self.bold_words, len(words) - 1))
            bullets.append(f"- **{' '.join(words[:k])}** {' '.join(words[k:])}" if k else f"- {s}")
        out = "\n".join([header, "", *bullets])
        added = f"{header}; bullets; bold lead words"
        if mark:
            out += f"\n\n{mark}"
        return out, added
