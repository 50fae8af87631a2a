"""Length and style control for pointwise scores: the judge's score regressed on ``z = tanh((words − mean) /
std)`` and reported as ``score − slope · z`` (after Dubois et al. 2024, "Length-controlled AlpacaEval"), and
the same regression on Arena-Hard's style covariates (Li et al. 2024): length, markdown headers, bold and
lists."""

from __future__ import annotations

import math
from typing import Any, ClassVar, Literal, Self

import numpy as np

from mitigate.constraints import Options, Satisfies
from mitigate.data import Benchmark, Item
from mitigate.errors import ConfigError
from mitigate.judge import FitContext, Judge, Judgment
from mitigate.measures import STYLE_FEATURES, score_style_regression, style_features, word_count
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


class StyleControlledJudge(AdjustingJudge):
    """Its child's judgment with each score moved to what the regression predicts at the mean style."""

    kind = "style-control"
    coefficients: dict[str, dict[str, float]]
    mean: dict[str, float]
    sd: dict[str, float]

    def score_bounds(self) -> None:
        return None

    def z(self, item: Item) -> dict[str, float]:
        """The squashed, standardised style features of the item's output."""
        f = style_features(item.output)
        return {
            k: (math.tanh((f[k] - self.mean[k]) / self.sd[k]) if self.sd.get(k, 0) > 0 else 0.0)
            for k in self.mean
        }

    def adjust(self, j: Judgment, item: Item) -> Judgment:
        z = self.z(item)
        scores = {
            c: (
                None
                if v is None
                else v - sum(b * z.get(k, 0.0) for k, b in self.coefficients.get(c, {}).items())
            )
            for c, v in j.scores.items()
        }
        meta = {**j.meta, "style_control": {"raw": dict(j.scores), "z": z}}
        return j.model_copy(update={"scores": scores, "meta": meta})


def _is_coefficients(v: Any) -> bool:
    return isinstance(v, dict) and all(
        isinstance(c, str)
        and isinstance(row, dict)
        and all(
            k in STYLE_FEATURES and isinstance(x, int | float) and math.isfinite(x) for k, x in row.items()
        )
        for c, row in v.items()
    )


def _is_stats(v: Any) -> bool:
    return isinstance(v, dict) and all(
        k in STYLE_FEATURES and isinstance(x, int | float) and math.isfinite(x) and x >= 0
        for k, x in v.items()
    )


@register("mitigation", "style-control")
class StyleControl(Mitigation):
    """Remove a pointwise judge's slopes on length, markdown headers, bold and lists, fitted on a training
    split (Arena-Hard's style covariates in AlpacaEval's tanh-standardised length-control form; see the module
    docstring).

    Parameters:
        reference: "none" regresses the score on the features; "human" its excess over the human score.
        features: the covariates (default all of :data:`~mitigate.measures.STYLE_FEATURES`).

    Fitted: ``coefficients_`` (criterion -> feature -> slope per unit of z), ``mean_`` and ``sd_`` of each
    feature.
    """

    paper = "Li et al. 2024 (Arena-Hard's style covariates); Dubois et al. 2024 (AlpacaEval's normalisation)"

    declared_tags: ClassVar[Tags] = Tags(needs_fitting=True, calls_judge_while_fitting=True, needs_judge=True)
    reference: Literal["none", "human"] = "none"
    features: tuple[str, ...] = STYLE_FEATURES
    coefficients_: dict[str, dict[str, float]] | None = None
    mean_: dict[str, float] = {}
    sd_: dict[str, float] = {}
    parameter_constraints: ClassVar = {
        "reference": [Options("none", "human")],
        "features": [
            Satisfies(
                lambda v: len(v) > 0 and len(set(v)) == len(v) and all(f in STYLE_FEATURES for f in v),
                f"a non-empty tuple of distinct features among {list(STYLE_FEATURES)}",
            )
        ],
        "coefficients_": [
            Satisfies(_is_coefficients, "a dict of criterion -> {feature: finite slope}"),
            None,
        ],
        "mean_": [Satisfies(_is_stats, "a dict of feature -> finite value >= 0")],
        "sd_": [Satisfies(_is_stats, "a dict of feature -> finite value >= 0")],
    }

    @classmethod
    def examples(cls) -> list[Mitigation]:
        return [
            cls(),
            cls(
                reference="human",
                coefficients_={"coherence": {"length": 0.3, "bold": 0.5}},
                mean_={"length": 60.0, "headers": 0.0, "bold": 0.4, "lists": 0.0},
                sd_={"length": 12.0, "headers": 0.0, "bold": 0.6, "lists": 0.0},
            ),
        ]

    @property
    def is_fitted(self) -> bool:
        return self.coefficients_ is not None

    def wrap(self, judge: Judge) -> Judge:
        """A judge reporting style-controlled scores."""
        if self.coefficients_ is None:
            raise ConfigError("StyleControl is not fitted; expected `m = m.fit(train, judge)` first")
        return StyleControlledJudge(
            judge,
            coefficients={c: dict(r) for c, r in self.coefficients_.items()},
            mean=dict(self.mean_),
            sd=dict(self.sd_),
        )

    async def learn(self, train: Benchmark, judge: Judge, ctx: FitContext) -> Self:
        """A fitted copy: the score (or excess over humans) regressed on the style features over ``train``."""
        items, scores = await fitting_scores("StyleControl", train, judge, ctx, "fitting style control")
        texts = [it.output for it in items]
        coefficients: dict[str, dict[str, float]] = {}
        mean: dict[str, float] = {}
        sd: dict[str, float] = {}
        for c, y in scores.items():
            human = (
                np.array([it.human.get(c, np.nan) for it in items], dtype=float)
                if self.reference == "human"
                else None
            )
            m = score_style_regression(y, texts, human=human, features=self.features)
            if m.n < 3 or not m.extra.get("coefficients"):
                raise ConfigError(
                    f"StyleControl.fit needs at least 3 training items with a score"
                    f"{' and a human label' if self.reference == 'human' else ''} for {c!r} and outputs "
                    f"whose style varies; got {m.n} ({m.reason or 'no feature varies'})"
                )
            coefficients[c] = m.extra["coefficients"]
            mean, sd = m.extra["mean"], m.extra["sd"]
        return self.model_copy(update={"coefficients_": coefficients, "mean_": mean, "sd_": sd})
