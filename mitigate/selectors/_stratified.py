"""Random and stratified demonstrations.

:class:`Random` draws ``k`` pool items with a seed (Ohi et al. 2024's control); :class:`Stratified` spreads
them evenly over the gold labels (Ghazarian et al. 2024), or over ``k`` equal strata of the pool sorted by
gold score (:func:`stratified_pick`).
"""

from __future__ import annotations

import math
import random as _random
from collections.abc import Sequence
from itertools import accumulate, pairwise
from typing import ClassVar, Literal, Self

from mitigate.constraints import Interval, Options
from mitigate.data import Benchmark, Item
from mitigate.errors import ConfigError
from mitigate.judge import FitContext, Judge, judge_scale
from mitigate.registry import Tags, register
from mitigate.scale import Scale
from mitigate.selectors._base import Selector


@register("selector", "random")
class Random(Selector):
    """``k`` items drawn uniformly without replacement from the fitted pool.

    Parameters:
        seed: the seed of the draw; the same seed, pool and ``k`` give the same demos, in the same order.
    """

    paper = "Ohi et al. 2024 (control)"

    declared_tags: ClassVar[Tags] = Tags(needs_fitting=True, random_draws=True)
    seed: int = 0
    parameter_constraints: ClassVar = {"seed": [Interval(int)]}

    def _pick(self, k: int, candidates: list[Item], query: Item | None) -> list[Item]:
        return _random.Random(self.seed).sample(candidates, k)


def _on_scale(value: float, scale: Scale) -> bool:
    return any(abs(value - p) <= 1e-9 for p in scale.points())


def stratified_pick(
    items: Sequence[Item], criteria: Sequence[str], m: int, scale: Scale | None = None, seed: int = 0
) -> list[Item]:
    """Pick ``m`` demo items spread over the gold-score range (seeded). Items need a human score for every
    criterion; with ``scale``, only gold scores that are its points are used when at least ``m`` are. The
    pool, sorted by the first criterion's score, is cut into ``m`` contiguous strata of near-equal size,
    one item is drawn from each, and the picks are shuffled."""
    if not criteria:
        raise ConfigError("expected at least one criterion to pick demos for; got none")
    eligible = [it for it in items if all(c in it.human and math.isfinite(it.human[c]) for c in criteria)]
    if len(eligible) < m:
        raise ConfigError(
            f"expected at least m={m} training items with human scores for {list(criteria)}; got "
            f"{len(eligible)}"
        )
    if scale is not None:
        on_scale = [it for it in eligible if all(_on_scale(it.human[c], scale) for c in criteria)]
        if len(on_scale) >= m:
            eligible = on_scale
    key = criteria[0]
    ordered = sorted(eligible, key=lambda it: (it.human[key], it.id))
    rng = _random.Random(seed)
    size, extra = divmod(len(ordered), m)  # the first ``extra`` strata hold one more item
    bounds = accumulate((size + (k < extra) for k in range(m)), initial=0)
    picks = [rng.choice(ordered[start:end]) for start, end in pairwise(bounds)]
    rng.shuffle(picks)
    return picks


def balanced_quotas(sizes: list[int], k: int, rng: _random.Random) -> list[int]:
    """How many demos each label (sorted ascending, with ``sizes[i]`` items) gets, summing to ``k``. Equal
    shares; the remainder goes to labels spread evenly from the lowest to the highest; a label with too few
    items gives its shortfall to the labels with room, fewest-assigned first."""
    n = len(sizes)
    if sum(sizes) < k:
        raise ConfigError(f"expected at least k={k} items over the labels; got {sum(sizes)}")
    quotas = [k // n] * n
    extra = k % n
    if extra:
        if extra == 1:
            spread = [rng.randrange(n)]
        else:
            spread = sorted({round(i * (n - 1) / (extra - 1)) for i in range(extra)})
        for i in spread:
            quotas[i] += 1
    # move any shortfall to labels with room
    short = sum(max(0, q - s) for q, s in zip(quotas, sizes, strict=True))
    quotas = [min(q, s) for q, s in zip(quotas, sizes, strict=True)]
    while short:
        room = [i for i in range(n) if quotas[i] < sizes[i]]
        target = min(room, key=lambda i: (quotas[i], i))
        quotas[target] += 1
        short -= 1
    return quotas


@register("selector", "stratified")
class Stratified(Selector):
    """``k`` demos balanced over the gold labels (Ghazarian et al. 2024); see the module docstring.

    Parameters:
        seed: seeds which item of a label is drawn, which labels get the remainder, and the final shuffle.
        by: ``"label"`` (balance over distinct gold labels) or ``"range"`` (:func:`stratified_pick`).
        scale: gold scores are snapped to this scale's points to form the labels (else each distinct score is
            one); with ``by="range"`` and no ``scale``, the judge's scale at fit is used (``judge_scale_``).
    """

    paper = "Ghazarian et al. 2024"

    declared_tags: ClassVar[Tags] = Tags(needs_fitting=True, random_draws=True)
    seed: int = 0
    by: Literal["label", "range"] = "label"
    scale: Scale | None = None
    judge_scale_: Scale | None = None
    parameter_constraints: ClassVar = {
        "seed": [Interval(int)],
        "by": [Options("label", "range")],
        "scale": [Scale, dict, None],
    }

    async def learn(self, train: Benchmark | Sequence[Item], judge: Judge | None, ctx: FitContext) -> Self:
        """As :meth:`Selector.learn`; with ``by="range"`` and no ``scale``, also the judge's prompt scale."""
        state = self.fit_state(train, ctx.criterion, judge)
        if self.by == "range" and self.scale is None and judge is not None:
            state["judge_scale_"] = judge_scale(judge)
        return self.model_copy(update=state)

    def label_of(self, item: Item) -> float:
        """An item's label: its gold score (snapped to ``scale``) or preference (A, tie, B: 0, 0.5, 1)."""
        assert self.criterion_ is not None
        if self.criterion_ not in item.human:
            return {"A": 0.0, "tie": 0.5, "B": 1.0}[item.preference[self.criterion_]]
        value = item.human[self.criterion_]
        return self.scale.snap(value) if self.scale is not None else round(value, 6)

    def _pick(self, k: int, candidates: list[Item], query: Item | None) -> list[Item]:
        assert self.criterion_ is not None
        if self.by == "range" and all(self.criterion_ in it.human for it in candidates):
            return stratified_pick(
                candidates, [self.criterion_], k, self.scale or self.judge_scale_, self.seed
            )
        rng = _random.Random(self.seed)
        groups: dict[float, list[Item]] = {}
        for it in sorted(candidates, key=lambda it: it.id):
            groups.setdefault(self.label_of(it), []).append(it)
        labels = sorted(groups)
        quotas = balanced_quotas([len(groups[lb]) for lb in labels], k, rng)
        picks = [
            it
            for lb, quota in zip(labels, quotas, strict=True)
            if quota
            for it in rng.sample(groups[lb], quota)
        ]
        rng.shuffle(picks)
        return picks
