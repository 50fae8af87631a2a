"""Authority bias (CALM, Ye et al. 2025): a made-up citation added to the judged text.

A judge with authority bias scores a text higher when it cites a source, even one that does
not exist and supports nothing. The references below are invented for this project (no such
authors or venues); one is drawn per item.
"""

from __future__ import annotations

import random
from typing import ClassVar

from mitigate.constraints import Options
from mitigate.probes._base import Direction, RuleProbe
from mitigate.probes._text import Where, join
from mitigate.registry import register

CITATIONS = (
    "(Source: Marlow, T. and Adeyemi, K. (2019). Accuracy in condensed news reporting. "
    "Journal of Applied Text Studies, 14(2), 101-118.)",
    "(See: Lindqvist, P. (2021). Evidence and summary quality. Proceedings of the Northern Conference on "
    "Information Synthesis, 233-241.)",
    "(Reference: Okafor, B., Hale, S. and Ruiz, D. (2020). What readers need from a short report. "
    "Review of Communication Methods, 7(4), 55-72.)",
    "(Cited from: Brennan, A. (2018). Reliable reporting: a handbook, 3rd edition. Eastfield Academic "
    "Press, p. 142.)",
)
"""Invented references (own wording; no real authors or venues)."""


@register("probe", "authority")
class Authority(RuleProbe):
    """Add an invented academic reference to the judged text (``where``: end or start)."""

    where: Where = "end"
    predicts: ClassVar[Direction] = "up"
    family: ClassVar[str] = "authority"
    parameter_constraints: ClassVar = {**RuleProbe.parameter_constraints, "where": [Options("start", "end")]}

    def rewrite(self, text: str, rng: random.Random) -> tuple[str, str]:
        """The text with one citation before or after it."""
        added = rng.choice(CITATIONS)
        return join(text, added, self.where), added
