"""Random demonstrations: ``k`` labelled pool items drawn with a seed.

The control condition of the demonstration-selection papers (Ohi et al. 2024 compare
their highest-RS demos against random ones); also the simplest candidate generator of the
search (:mod:`mitigate.search`), which varies ``seed`` to draw many sets.
"""

from __future__ import annotations

import random as _random
from typing import ClassVar

from mitigate.constraints import Interval
from mitigate.data import Item
from mitigate.registry import Tags, register
from mitigate.selectors._base import Selector


@register("selector", "random")
class Random(Selector):
    """``k`` items drawn uniformly without replacement from the fitted pool.

    Parameters:
        seed: the seed of the draw; the same seed, pool and ``k`` give the same demos (in
            the same order). The query item, when given, is left out before drawing.
    """

    paper = "Ohi et al. 2024 (control)"

    declared_tags: ClassVar[Tags] = Tags(needs_fitting=True, random_draws=True)
    seed: int = 0
    parameter_constraints: ClassVar = {"seed": [Interval(int)]}

    def _pick(self, k: int, candidates: list[Item], query: Item | None) -> list[Item]:
        """``random.Random(seed).sample(candidates, k)``."""
        return _random.Random(self.seed).sample(candidates, k)
