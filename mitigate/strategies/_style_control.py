"""Style control for pointwise scores: :class:`~mitigate.strategies.LengthControl`'s regression on
Arena-Hard's style covariates (Li et al. 2024), length, markdown headers, bold and lists."""

from __future__ import annotations

import math
from typing import Any, ClassVar, Literal, Self

import numpy as np

from mitigate.constraints import Options, Satisfies
from mitigate.data import Benchmark, Item
from mitigate.errors import ConfigError
from mitigate.judge import FitContext, Judge, Judgment
from mitigate.measures import STYLE_FEATURES, score_style_regression, style_features
from mitigate.registry import Tags, register
from mitigate.strategies._base import AdjustingJudge, Mitigation
from mitigate.strategies._length_control import fitting_scores


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
