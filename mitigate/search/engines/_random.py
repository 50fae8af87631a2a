"""The seeded random-search engine (``"random"``): round robin over the selectors, a ``k`` and a template
per trial, each draw with a fresh seed; a set already tried (in any order) is skipped, and the search ends
at the budget, ``max_trials`` or 200 draws in a row giving nothing new."""

from __future__ import annotations

import random as _random
from typing import ClassVar

from mitigate.constraints import Interval
from mitigate.registry import register
from mitigate.search._session import (
    MAX_MISSES,
    Candidate,
    Engine,
    Outcome,
    SearchSpace,
    Session,
    reseeded,
    with_demos,
)
from mitigate.strategies import Demos, Mitigation


@register("engine", "random")
class RandomEngine(Engine):
    """Seeded random search over the selectors' draws (see the module docstring).

    Parameters:
        max_trials: stop after this many evaluated candidates, the baseline included (None: no limit).
    """

    max_trials: int | None = None
    parameter_constraints: ClassVar = {"max_trials": [Interval(int, 1), None]}

    async def run(self, s: Session, space: SearchSpace) -> Outcome:
        """Draw and evaluate demo sets until the budget, ``max_trials`` or the draws run out."""
        rng = _random.Random(s.seed)
        misses = 0
        draw = 0
        while True:
            if self.max_trials is not None and len(s.trials) >= self.max_trials:
                return Outcome("max-trials", {})
            sel = space.selectors[draw % len(space.selectors)]
            draw += 1
            k = rng.choice(space.ks)
            template = rng.choice(space.templates)
            if sel.tags.query_dependent:
                mit: Mitigation = Demos(selector=sel, k=k, per_item=True, placement="append")
                cand = Candidate(f"random: per-item {sel.describe()} k={k}", mit, sel.registry_name)
            else:
                picked = reseeded(sel, rng)
                demos = picked.select(k, prompt_scale=s.prompt_scale)
                mit = with_demos(template, demos)
                label = f"random: {picked.describe()} k={k}" + (" perturbed" if template is not None else "")
                cand = Candidate(label, mit, sel.registry_name, [d.item.id for d in demos])
            if cand.key in s.seen:
                misses += 1
                if misses >= MAX_MISSES:
                    return Outcome("exhausted", {})
                continue
            misses = 0
            if await s.evaluate(cand) is None:
                return Outcome("budget", {})
