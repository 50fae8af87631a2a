"""The objective a demonstration search maximises, computed from judgments on a split.

``agreement + λ · consistency − μ · |BiasScore|``: correlation (or exact agreement) with the human labels, the
judge's consistency under perturbed guidelines (Ghazarian et al. 2024; chance corrected by default, since the
raw share rewards a judge that collapses to one answer), and Spearman(LS, US) (Ohi et al. 2024). Unscored
items are left out; low coverage, a NaN weighted term or no label make it NaN, and NaN never wins.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar, Literal

import numpy as np
from pydantic import BaseModel, ConfigDict

from mitigate import measures
from mitigate.constraints import Interval, Options
from mitigate.data import Item
from mitigate.errors import DataError
from mitigate.judge import Judgment
from mitigate.measures import Measure, bootstrap_ci, correlation_function
from mitigate.registry import Component
from mitigate.scale import Scale

LS = Mapping[str, float] | Sequence[float] | None
"""Log-likelihood per item: a mapping item id -> LS, or one value per item in order."""


VERDICT_CODE: dict[str, float] = {"first": 1.0, "tie": 1.5, "second": 2.0}
"""A pairwise verdict as a number, so the objective compares it with the gold preference (A = first)."""
PREFERENCE_CODE: dict[str, float] = {"A": 1.0, "tie": 1.5, "B": 2.0}
"""A gold preference as the number of the verdict that agrees with it."""


def judgment_score(judgment: Judgment, criterion: str) -> float | None:
    """The judgment's score for ``criterion`` (or its only one; a verdict's :data:`VERDICT_CODE`)."""
    if judgment.error is not None:
        return None
    if not judgment.scores and judgment.verdict is not None:
        return VERDICT_CODE[judgment.verdict]
    if criterion in judgment.scores:
        return judgment.scores[criterion]
    return next(iter(judgment.scores.values())) if len(judgment.scores) == 1 else None


def consistent(judgment: Judgment) -> float:
    """1.0 if every perturbation output equals the first, 0.0 if not, NaN when any is missing or absent."""
    per = judgment.meta.get("perturbations")
    values = list(per.values()) if isinstance(per, Mapping) else []
    if len(values) < 2 or any(v is None for v in values):
        return math.nan
    return 1.0 if all(measures.labels_equal(values[0], v) for v in values[1:]) else 0.0


class ObjectiveValue(BaseModel):
    """The objective on one split (NaN with a ``reason``), its terms, coverage and optional interval."""

    model_config = ConfigDict(frozen=True, extra="forbid")
    value: float
    agreement: Measure
    consistency: Measure | None = None
    bias: Measure | None = None
    n: int
    n_failed: int
    coverage: float
    ci_low: float | None = None
    ci_high: float | None = None
    reason: str | None = None

    @property
    def ok(self) -> bool:
        """True when the value is a finite number."""
        return math.isfinite(self.value)

    def line(self) -> str:
        """One human-readable line: value, interval and terms."""

        def f(x: float | None) -> str:
            return "nan" if x is None or not math.isfinite(x) else f"{x:.3f}"

        ci = f" [{f(self.ci_low)}, {f(self.ci_high)}]" if self.ci_low is not None else ""
        named = {"agreement": self.agreement, "consistency": self.consistency, "BiasScore": self.bias}
        terms = [f"{name} {f(m.value)}" for name, m in named.items() if m is not None]
        why = f" ({self.reason})" if self.reason else ""
        return f"{f(self.value)}{ci}: {', '.join(terms)}; n={self.n}, coverage {self.coverage:.0%}{why}"


_COLLAPSED = (
    "kappa is undefined: every perturbation gave one same answer to every item (a collapsed judge; chance "
    "agreement is 1)"
)


class Gain(BaseModel):
    """A paired difference of the objective between two judges on the same items, with an interval."""

    model_config = ConfigDict(frozen=True, extra="forbid")
    value: float
    ci_low: float | None = None
    ci_high: float | None = None
    n: int
    reason: str | None = None


def _variant_rows(judgments: Sequence[Judgment]) -> list[tuple[Any, ...] | None]:
    """Per judgment, its outputs under every perturbation (in one column order), None when any is missing."""
    pers = [per if isinstance(per := j.meta.get("perturbations"), Mapping) else None for j in judgments]
    names = list(dict.fromkeys(str(k) for per in pers if per is not None for k in per))
    rows: list[tuple[Any, ...] | None] = []
    for per in pers:
        by_name = {str(k): v for k, v in per.items()} if per is not None and len(names) >= 2 else {}
        row = tuple(by_name.get(n) for n in names)
        rows.append(row if by_name and not any(measures.is_missing(v) for v in row) else None)
    return rows


@dataclass
class _Arrays:
    """Per-item columns the objective is computed from (aligned with the items)."""

    scores: np.ndarray
    human: np.ndarray
    consistent: np.ndarray
    ls: np.ndarray
    variants: list[tuple[Any, ...] | None]
    pairwise: bool = False


class Objective(Component):
    """agreement + λ·consistency − μ·|BiasScore| on a split (see the module docstring).

    Parameters:
        agreement: the correlation with humans ("spearman", "kendall" or "pearson"), or "accuracy".
        consistency_weight: λ >= 0.
        consistency: "kappa" (chance-corrected) or "raw" (the paper's share, which rewards a collapsed judge).
        bias_weight: μ >= 0 (needs LS per item).
        min_coverage: the least share of labelled items that must get a score, else NaN.
    """

    agreement: Literal["spearman", "kendall", "pearson", "accuracy"] = "spearman"
    consistency_weight: float = 0.0
    consistency: Literal["kappa", "raw"] = "kappa"
    bias_weight: float = 0.0
    min_coverage: float = 0.8
    parameter_constraints: ClassVar = {
        "agreement": [Options("spearman", "kendall", "pearson", "accuracy")],
        "consistency_weight": [Interval(float, 0)],
        "consistency": [Options("kappa", "raw")],
        "bias_weight": [Interval(float, 0)],
        "min_coverage": [Interval(float, 0, 1)],
    }

    def describe(self) -> str:
        """The formula with its weights, e.g. ``spearman + 0.5·consistency − 1·|BiasScore|``."""
        out: str = self.agreement
        if self.consistency_weight:
            term = "consistency" if self.consistency == "raw" else "κ(consistency)"
            out += f" + {self.consistency_weight:g}·{term}"
        if self.bias_weight:
            out += f" − {self.bias_weight:g}·|BiasScore|"
        return out

    @property
    def needs_perturbations(self) -> bool:
        """True when the consistency term counts (the judge must record perturbation outputs)."""
        return self.consistency_weight > 0

    @property
    def needs_likelihood(self) -> bool:
        """True when the BiasScore term counts (LS per item is needed)."""
        return self.bias_weight > 0

    # ------------------------------------------------------------------ computing
    def _arrays(
        self, judgments: Sequence[Judgment], items: Sequence[Item], criterion: str, ls: LS
    ) -> _Arrays:
        if len(judgments) != len(items):
            raise DataError(
                f"expected one judgment per item; got {len(judgments)} judgments for {len(items)} items"
            )
        for j, it in zip(judgments, items, strict=True):
            if j.item_id != it.id:
                raise DataError(
                    f"expected judgments in item order; judgment {j.item_id!r} stands where item "
                    f"{it.id!r} is",
                    item_id=it.id,
                )
        scores = np.array(
            [math.nan if (s := judgment_score(j, criterion)) is None else s for j in judgments], float
        )
        human = measures.human_scores(items, criterion)
        pairwise = False
        for i, it in enumerate(items):  # a gold preference: the code of the verdict that agrees with it
            if not math.isfinite(human[i]) and criterion in it.preference:
                human[i], pairwise = PREFERENCE_CODE[it.preference[criterion]], True
        consistent_ = np.array([consistent(j) for j in judgments], float)
        if ls is None:
            ls_arr = np.full(len(items), np.nan)
        elif isinstance(ls, Mapping):
            ls_arr = np.array(
                [float(ls[it.id]) if ls.get(it.id) is not None else math.nan for it in items], float
            )
        else:
            if len(ls) != len(items):
                raise DataError(f"expected one LS per item ({len(items)}); got {len(ls)}")
            ls_arr = np.array([math.nan if v is None else float(v) for v in ls], float)
        return _Arrays(scores, human, consistent_, ls_arr, _variant_rows(judgments), pairwise)

    def agreement_for(self, pairwise: bool) -> str:
        """The agreement used: exact match (accuracy) against gold preferences, else ``agreement``."""
        return "accuracy" if pairwise else self.agreement

    def _agreement_point(self, s: np.ndarray, h: np.ndarray, pairwise: bool = False) -> float:
        if self.agreement_for(pairwise) == "accuracy":
            both = np.isfinite(s) & np.isfinite(h)
            return float(np.mean(np.abs(s[both] - h[both]) < 1e-9)) if both.any() else math.nan
        return float(correlation_function(self.agreement)(s, h))

    def _consistency_point(self, a: _Arrays, idx: np.ndarray) -> float:
        if self.consistency == "raw":
            c = a.consistent[idx]
            c = c[np.isfinite(c) & np.isfinite(a.scores[idx])]
            return float(c.mean()) if len(c) else math.nan
        rows = [row for i in idx if (row := a.variants[i]) is not None and math.isfinite(a.scores[i])]
        return measures.consistency_kappa(rows)[2]

    def _point(self, a: _Arrays, idx: np.ndarray) -> float:
        """The objective on the items at ``idx`` (a bootstrap resample), NaN under the same rules."""
        s, h = a.scores[idx], a.human[idx]
        labelled = np.isfinite(h)
        if labelled.sum() == 0 or (np.isfinite(s) & labelled).sum() / labelled.sum() < self.min_coverage:
            return math.nan
        value = self._agreement_point(s, h, a.pairwise)
        if self.consistency_weight:
            value += self.consistency_weight * self._consistency_point(a, idx)
        if self.bias_weight:
            us = measures.unfairness_scores(s, h)
            value -= self.bias_weight * abs(correlation_function("spearman")(a.ls[idx], us))
        return float(value)

    def evaluate(
        self,
        judgments: Sequence[Judgment],
        items: Sequence[Item],
        criterion: str,
        *,
        ls: LS = None,
        ci: bool = False,
        n_boot: int = 1000,
        alpha: float = 0.05,
        seed: int = 0,
    ) -> ObjectiveValue:
        """The objective of ``judgments`` (in item order) against the items' human ``criterion`` scores.
        ``ls``: LS per item (for ``bias_weight`` > 0); ``ci``: a percentile bootstrap interval over items."""
        a = self._arrays(judgments, items, criterion, ls)
        labelled = np.isfinite(a.human)
        scored = np.isfinite(a.scores) & labelled
        coverage = float(scored.sum() / labelled.sum()) if labelled.any() else 0.0
        if self.agreement_for(a.pairwise) == "accuracy":
            agreement = measures.accuracy(
                [None if not math.isfinite(v) else v for v in a.scores],
                [None if not math.isfinite(v) else v for v in a.human],
            )
        else:
            agreement = measures.item_correlation(a.scores, a.human, self.agreement)
        consistency: Measure | None = None
        bias: Measure | None = None
        reasons: list[str] = []
        value = agreement.value
        if not agreement.ok:
            reasons.append(f"agreement: {agreement.reason}")
        if self.consistency_weight:
            outputs: dict[str, dict[str, Any]] = {}
            for j in judgments:
                per = j.meta.get("perturbations")
                if isinstance(per, Mapping) and judgment_score(j, criterion) is not None:
                    for name, out in per.items():
                        outputs.setdefault(str(name), {})[j.item_id] = out
            if len(outputs) < 2:
                why = (
                    "no judgment records outputs under 2 or more perturbations in meta['perturbations'] "
                    "(wrap the judge in a PerturbedGuidelines)"
                )
                consistency = Measure(name="perturbation-consistency", value=math.nan, n=0, reason=why)
            else:
                consistency = measures.perturbation_consistency(outputs)
                if self.consistency == "kappa" and consistency.ok:
                    kappa = float(consistency.extra["kappa"])
                    extra = {**consistency.extra, "raw": consistency.value}
                    update = {"name": "perturbation_consistency_kappa", "value": kappa}
                    reason = None if math.isfinite(kappa) else _COLLAPSED
                    consistency = consistency.model_copy(update={**update, "reason": reason, "extra": extra})
            value += self.consistency_weight * consistency.value
            if not consistency.ok:
                reasons.append(f"consistency: {consistency.reason}")
        if self.bias_weight:
            if not np.isfinite(a.ls).any():
                why = "no LS was given for these items (pass ls= or a likelihood backend)"
                bias = Measure(name="bias-score", value=math.nan, n=0, reason=why)
            else:
                bias = measures.bias_score(a.ls, measures.unfairness_scores(a.scores, a.human))
            value -= self.bias_weight * abs(bias.value)
            if not bias.ok:
                reasons.append(f"BiasScore: {bias.reason}")
        if labelled.any() and coverage < self.min_coverage:
            value = math.nan
            why = f"coverage {coverage:.0%} of labelled items got a score; expected at least "
            reasons.insert(0, why + f"{self.min_coverage:.0%}")
        elif not labelled.any():
            value = math.nan
            reasons.insert(0, f"no item has a human {criterion!r} score")
        low = high = None
        if ci and math.isfinite(value):
            indices = np.arange(len(items))
            lo, hi = bootstrap_ci(
                lambda i: self._point(a, i.astype(int)), indices, n_boot=n_boot, alpha=alpha, seed=seed
            )
            if math.isfinite(lo) and math.isfinite(hi):
                low, high = lo, hi
        return ObjectiveValue(
            value=float(value),
            agreement=agreement,
            consistency=consistency,
            bias=bias,
            n=int(scored.sum()),
            n_failed=int((labelled & ~scored).sum()),
            coverage=coverage,
            ci_low=low,
            ci_high=high,
            reason="; ".join(reasons) if not math.isfinite(value) and reasons else None,
        )

    def gain(
        self,
        better: Sequence[Judgment],
        base: Sequence[Judgment],
        items: Sequence[Item],
        criterion: str,
        *,
        ls: LS = None,
        n_boot: int = 1000,
        alpha: float = 0.05,
        seed: int = 0,
    ) -> Gain:
        """objective(better) − objective(base) on the same items, with a paired bootstrap interval."""
        a = self._arrays(better, items, criterion, ls)
        b = self._arrays(base, items, criterion, ls)
        idx = np.arange(len(items))
        value = self._point(a, idx) - self._point(b, idx)
        if not math.isfinite(value):
            return Gain(value=math.nan, n=len(items), reason="the objective is NaN for one of the two judges")
        if n_boot <= 0:
            return Gain(value=float(value), n=len(items))

        def paired(i: np.ndarray) -> float:
            return self._point(a, i.astype(int)) - self._point(b, i.astype(int))

        lo, hi = bootstrap_ci(paired, idx, n_boot=n_boot, alpha=alpha, seed=seed)
        finite = math.isfinite(lo) and math.isfinite(hi)
        return Gain(
            value=float(value), ci_low=lo if finite else None, ci_high=hi if finite else None, n=len(items)
        )

    def item_metric(
        self, predicted: float | None, human: float, scale: Scale, consistent: float | None = None
    ) -> float:
        """The per-item part of the objective, for optimizers that average a per-example metric (DSPy). ``1
        − |predicted − human| / (scale.max − scale.min)``, plus ``λ`` when the output was identical under
        every perturbation (the raw indicator: chance correction needs the whole split). A missing
        prediction counts 0, never a score."""
        if predicted is None or not math.isfinite(predicted):
            return 0.0
        span = scale.max - scale.min
        close = max(0.0, 1.0 - abs(predicted - human) / span)
        if self.consistency_weight and consistent is not None and math.isfinite(consistent):
            close += self.consistency_weight * consistent
        return float(close)
