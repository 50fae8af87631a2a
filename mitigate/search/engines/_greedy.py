"""The greedy forward-selection engine (``"greedy"``): from no demos, each step adds the candidate item (up
to ``n_candidates``, drawn from the query-free selectors) that raises the dev objective most, until the
largest ``k``, no improvement, or the budget; the final set is then tried under each further perturbation
template."""

from __future__ import annotations

import random as _random
from typing import ClassVar

from mitigate.constraints import Interval
from mitigate.errors import ConfigError
from mitigate.prompt import Demo
from mitigate.registry import register
from mitigate.scale import Scale
from mitigate.search._result import rank_key
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
from mitigate.selectors import Selector


def candidate_demos(
    selectors: list[Selector], k: int, n_candidates: int, seed: int, prompt_scale: Scale
) -> list[Demo]:
    """Up to ``n_candidates`` distinct demos proposed by the query-free selectors (round robin, reseeded)."""
    usable = [s for s in selectors if not s.tags.query_dependent]
    if not usable:
        raise ConfigError(
            "the greedy engine needs at least one selector that does not depend on the query "
            "(e.g. Random or Stratified); got only query-dependent ones"
        )
    rng = _random.Random(seed)
    found: dict[str, Demo] = {}
    stale = 0
    while len(found) < n_candidates and stale < MAX_MISSES:
        before = len(found)
        for sel in usable:
            size = min(k, len(sel.pool_ or ()))
            for d in reseeded(sel, rng).select(size, prompt_scale=prompt_scale):
                if len(found) < n_candidates:
                    found.setdefault(d.item.id, d)
        stale = stale + 1 if len(found) == before else 0
    return list(found.values())


@register("engine", "greedy")
class GreedyEngine(Engine):
    """Greedy forward selection of demos (see the module docstring).

    Parameters:
        n_candidates: how many candidate items the selectors propose.
    """

    n_candidates: int = 8
    parameter_constraints: ClassVar = {"n_candidates": [Interval(int, 1)]}

    async def run(self, s: Session, space: SearchSpace) -> Outcome:
        """Add the most helpful demo at each step; then try the final set under the other templates."""
        kmax = max(space.ks)
        pool = candidate_demos(space.selectors, kmax, self.n_candidates, s.seed, s.prompt_scale)
        template = space.templates[0]
        current: list[Demo] = []
        current_value = s.trials[0].dev.value
        stopped = "done"
        for step in range(1, kmax + 1):
            best: tuple[float, list[Demo]] | None = None
            for demo in pool:
                if any(d.item.id == demo.item.id for d in current):
                    continue
                demos = [*current, demo]
                label = f"greedy: step {step} + {demo.item.id}"
                cand = Candidate(label, with_demos(template, demos), "greedy", [d.item.id for d in demos])
                trial = await s.evaluate(cand)
                if trial is None:
                    return Outcome("budget", {})
                if best is None or rank_key(trial.dev.value) > rank_key(best[0]):
                    best = (trial.dev.value, demos)
            if best is None or not rank_key(best[0]) > rank_key(current_value):
                stopped = "no-improvement"
                break
            current_value, current = best
        if current:
            for other in space.templates[1:]:
                label = "greedy: final set" + (" perturbed" if other is not None else "")
                cand = Candidate(label, with_demos(other, current), "greedy", [d.item.id for d in current])
                if await s.evaluate(cand) is None:
                    return Outcome("budget", {})
        return Outcome(stopped, {})
