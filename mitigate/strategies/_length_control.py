"""Length control for pointwise scores (after Dubois et al. 2024, "Length-controlled AlpacaEval"): the
judge's score regressed on ``z = tanh((words − mean) / std)`` and reported as ``score − slope · z``."""

from __future__ import annotations

import math
from typing import ClassVar, Literal, Self

import numpy as np

from mitigate.constraints import Options, Satisfies
from mitigate.data import Benchmark, Item
from mitigate.errors import ConfigError
from mitigate.judge import FitContext, Judge, Judgment
from mitigate.measures import word_count
from mitigate.registry import Tags, register
from mitigate.run import run
from mitigate.strategies._base import AdjustingJudge, Mitigation


class LengthControlledJudge(AdjustingJudge):
    """Its child's judgment with each score moved to what the regression predicts at the mean length."""

    kind = "length-control"
    slopes: dict[str, float]
    mean: float
    std: float

    def score_bounds(self) -> None:
        return None

    def z(self, item: Item) -> float:
        """The squashed, standardised length of the item's output."""
        return math.tanh((word_count(item.output) - self.mean) / self.std) if self.std > 0 else 0.0

    def adjust(self, j: Judgment, item: Item) -> Judgment:
        z = self.z(item)
        scores = {c: (None if v is None else v - self.slopes.get(c, 0.0) * z) for c, v in j.scores.items()}
        meta = {**j.meta, "length_control": {"raw": dict(j.scores), "z": z}}
        return j.model_copy(update={"scores": scores, "meta": meta})


_SLOPES = Satisfies(
    lambda v: (
        isinstance(v, dict)
        and all(isinstance(k, str) and isinstance(x, (int, float)) and math.isfinite(x) for k, x in v.items())
    ),
    "a dict of criterion -> finite slope",
)


def refuse_pairwise(name: str, train: Benchmark, judge: Judge) -> None:
    """ConfigError when ``name``, which adjusts pointwise scores, is fitted on pairwise data or verdicts."""
    pairwise = any(it.pairwise for it in train.items)
    if pairwise or any(leaf.prompt.answer == "pairwise" for leaf in judge.leaves()):
        got = "a pairwise benchmark" if pairwise else "a judge that answers with a verdict (A or B)"
        raise ConfigError(
            f"{name} adjusts pointwise scores; expected a benchmark of single outputs with a judge that "
            f"scores them; got {got}. For pairwise verdicts read the length- or style-controlled win rate "
            "(measures.length_controlled_win_rate, measures.style_controlled_win_rate) instead"
        )


async def fitting_scores(
    name: str, train: Benchmark, judge: Judge, ctx: FitContext, desc: str
) -> tuple[list[Item], dict[str, np.ndarray]]:
    """The training items and, by criterion, the judge's scores on them (NaN where none)."""
    refuse_pairwise(name, train, judge)
    items = list(train.items)
    if len(items) < 3:
        raise ConfigError(f"{name}.fit needs at least 3 training items; got {len(items)}")
    result = await run(judge, items, concurrency=ctx.concurrency, progress=ctx.progress, desc=desc)
    criteria = dict.fromkeys(c for j in result.judgments for c in j.scores)
    if not criteria:
        raise ConfigError(
            f"{name}.fit needs scores to regress; the judge scored none of the {len(items)} training items "
            "(every judgment failed, or it answers without scores)"
        )
    return items, {
        c: np.array(
            [np.nan if j.scores.get(c) is None else j.scores[c] for j in result.judgments], dtype=float
        )
        for c in criteria
    }


@register("mitigation", "length-control")
class LengthControl(Mitigation):
    """Remove a pointwise judge's length slope, fitted on a training split (Dubois et al. 2024's regression).

    Parameters:
        reference: "none" regresses the score on length; "human" its excess over the human score.

    Fitted: ``slopes_`` (criterion -> slope per unit of z), ``mean_`` and ``std_`` of the training outputs'
    lengths in words.
    """

    paper = "Dubois et al. 2024"

    declared_tags: ClassVar[Tags] = Tags(needs_fitting=True, calls_judge_while_fitting=True, needs_judge=True)
    reference: Literal["none", "human"] = "none"
    slopes_: dict[str, float] | None = None
    mean_: float = 0.0
    std_: float = 0.0
    parameter_constraints: ClassVar = {"reference": [Options("none", "human")], "slopes_": [_SLOPES, None]}

    @classmethod
    def examples(cls) -> list[Mitigation]:
        return [cls(), cls(reference="human", slopes_={"coherence": 0.4}, mean_=60.0, std_=12.0)]

    @property
    def is_fitted(self) -> bool:
        return self.slopes_ is not None

    def wrap(self, judge: Judge) -> Judge:
        """A judge reporting length-controlled scores."""
        if self.slopes_ is None:
            raise ConfigError("LengthControl is not fitted; expected `m = m.fit(train, judge)` first")
        return LengthControlledJudge(judge, slopes=dict(self.slopes_), mean=self.mean_, std=self.std_)

    async def learn(self, train: Benchmark, judge: Judge, ctx: FitContext) -> Self:
        """A fitted copy: the score (or excess over humans) regressed on squashed length over ``train``."""
        items, scores = await fitting_scores("LengthControl", train, judge, ctx, "fitting length control")
        lengths = np.array([word_count(it.output) for it in items], dtype=float)
        mean, std = float(lengths.mean()), float(lengths.std())
        z = np.tanh((lengths - mean) / std) if std > 0 else np.zeros_like(lengths)
        slopes: dict[str, float] = {}
        for c, y in scores.items():
            if self.reference == "human":
                y = y - np.array([it.human.get(c, np.nan) for it in items], dtype=float)
            ok = np.isfinite(y)
            if ok.sum() < 3 or np.var(z[ok]) == 0:
                raise ConfigError(
                    "LengthControl.fit needs at least 3 training items with a "
                    f"score{' and a human label' if self.reference == 'human' else ''} for {c!r} and outputs "
                    f"of different lengths; got {int(ok.sum())}"
                )
            zz, yy = z[ok], y[ok]
            slopes[c] = float(np.cov(zz, yy, bias=True)[0, 1] / np.var(zz))
        return self.model_copy(update={"slopes_": slopes, "mean_": mean, "std_": std})
