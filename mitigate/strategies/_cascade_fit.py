"""Fitting cascades of selective judges: in a given order (:func:`fit_cascade`, Jung et al. 2024), or the
cheapest cascade that keeps a guarantee of agreement with humans: judges priced per judgment, a human
priced per label, and a fit that picks which judges to use, in which order, with which confidence and which
thresholds, so that the expected cost per item is smallest while the items the judges settle agree with
humans at the target 1 − α with probability 1 − δ (issue 50; the stages are Jung et al.'s selective
evaluation, :mod:`mitigate.strategies._selective`).

**Why the choice keeps the guarantee.** The candidate cascades are fixed before the calibration labels are
read (every ordered choice of up to ``max_stages`` stages, or the list given). A stage of a candidate is
calibrated by fixed-sequence testing on the items its earlier stages escalated, so a stage is one test per
*prefix* (the same stages before it are the same test, shared by every candidate that starts with them). With
T distinct prefixes, every test runs at δ/T; by the union bound, with probability ≥ 1 − δ every tested stage
of every candidate holds at once, so whichever candidate the costs then pick, its stages hold: the choice made
by looking at the calibration split costs nothing more. Humans only (nothing tested) is always a candidate.

The price of that union is a smaller δ per test as candidates grow; ``selection="split"`` avoids it: the
cascade is chosen on a random part of the calibration items (half by default) and its stages calibrated
on the rest (δ/K over its K stages, as :func:`fit_cascade`), which is valid because the choice is independent
of the items that certify it, at the price of fewer items for the thresholds.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Mapping, Sequence
from typing import Literal

import numpy as np
from pydantic import BaseModel, ConfigDict, Field

from mitigate.data import Item
from mitigate.errors import ConfigError, DataError
from mitigate.judge import Judge, Judgment
from mitigate.lm import Usage, cost
from mitigate.strategies._selective import (
    CascadeJudge,
    Confidence,
    Guarantee,
    SelectiveEvaluation,
    agrees,
    confidence,
    fixed_sequence_threshold,
)


class CascadeStage(BaseModel):
    """One judge a cascade may use: the name its judgments (and judge) go by, the confidence its trust is read
    from, and its price in USD per judgment (every call that judgment makes, e.g. both orders)."""

    model_config = ConfigDict(frozen=True, extra="forbid")
    name: str = Field(min_length=1)
    confidence: Confidence = "samples"
    cost: float = Field(ge=0.0)

    @classmethod
    def priced(
        cls, name: str, model: str, usage: Usage, *, confidence: Confidence = "samples", calls: int = 1
    ) -> CascadeStage:
        """A stage priced from the price table (``mitigate.lm.register_price`` adds to it): ``calls`` calls of
        ``model``, each using ``usage`` (mean tokens per call)."""
        one = cost(model, usage)
        if one is None:
            raise ConfigError(
                f"expected a list price for {model!r} to price cascade stage {name!r}; it has none "
                "(add one with mitigate.lm.register_price, or give cost= in USD per judgment)"
            )
        return cls(name=name, confidence=confidence, cost=one * calls)

    @classmethod
    def measured(
        cls, name: str, judgments: Sequence[Judgment], *, confidence: Confidence = "samples"
    ) -> CascadeStage:
        """A stage priced at the mean cost its backend charged for ``judgments`` (cached calls free)."""
        known = [j.cost_usd for j in judgments]
        if not known or any(c is None for c in known):
            raise ConfigError(
                f"expected a known cost for every judgment of cascade stage {name!r}; "
                f"{sum(c is None for c in known)} of {len(known)} have none (an unpriced backend: give "
                "cost= or use CascadeStage.priced)"
            )
        return cls(name=name, confidence=confidence, cost=float(np.mean([c for c in known if c is not None])))


class CascadeOutcome(BaseModel):
    """What a cascade did on some labelled items: the share each stage settled, the share left to humans,
    the agreement of the settled items with the humans, and the cost per 1,000 items."""

    model_config = ConfigDict(frozen=True, extra="forbid")
    n: int
    settled: tuple[float, ...]
    escalated: float
    agreement: float | None
    cost_per_1000: float


class CheapestCascade(BaseModel):
    """The cheapest valid cascade a fit found (:func:`fit_cheapest_cascade`), as a value to read.

    ``stages`` in order (none: humans label everything) with ``fitted`` their calibrated selective stages;
    ``calibration`` what it did on the calibration items; ``alone_per_1000`` each candidate judge run on every
    item (no guarantee), ``humans_per_1000`` humans only; ``tests`` the stage tests the guarantee is split
    over (each at δ/tests: every distinct one of every candidate under "bonferroni", the chosen cascade's
    under "split"); ``certified`` the lowest agreement the chosen stages' bounds certify.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")
    target: float
    delta: float
    human_cost: float
    selection: Literal["bonferroni", "split"] = "bonferroni"
    stages: tuple[CascadeStage, ...]
    fitted: tuple[SelectiveEvaluation, ...]
    candidates: int
    tests: int
    calibration: CascadeOutcome
    alone_per_1000: dict[str, float]
    humans_per_1000: float
    certified: float | None

    def judge(self, judges: Mapping[str, Judge]) -> Judge:
        """The cascade as a judge: ``judges`` by stage name; what its last stage escalates is flagged
        ``needs_human``."""
        if not self.stages:
            raise ConfigError(
                "the cheapest valid cascade is humans only (no judge reached the target on the calibration "
                "items); there is no judge to build"
            )
        missing = [s.name for s in self.stages if s.name not in judges]
        if missing:
            raise ConfigError(f"expected a judge for every cascade stage; {missing} have none")
        return CascadeJudge({s.name: judges[s.name] for s in self.stages}, stages=self.fitted)

    def outcome(self, judgments: Mapping[str, Sequence[Judgment]], items: Sequence[Item]) -> CascadeOutcome:
        """What this cascade does on labelled ``items`` (``judgments`` by stage name, in the order of
        ``items``): measure it on items held apart from the fit."""
        left = np.ones(len(items), dtype=bool)
        counts: list[tuple[int, int, int, int]] = []  # per stage: reached, settled, settled labelled, agreed
        for stage, fitted in zip(self.stages, self.fitted, strict=True):
            conf, agreed, labelled = _evidence(judgments.get(stage.name), items, fitted, stage.name)
            g = fitted.guarantee_
            take = left & _accepted(conf, None if g is None else g.threshold)
            counts.append(_counts(left, take, agreed, labelled))
            left &= ~take
        return _outcome(len(items), counts, self.stages, self.human_cost)

    def summary(self) -> str:
        """The chosen cascade, its shares, costs and guarantee in a few lines."""
        chain = " -> ".join([*(f"{s.name} ({s.confidence})" for s in self.stages), "human"])
        cal = self.calibration
        lines = [
            f"cascade: {chain}",
            f"guarantee: settled items agree with humans >= {self.target:g} with probability >= "
            f"{1 - self.delta:g} ({self.candidates} candidates, {self.selection}: {self.tests} stage tests "
            f"at delta/{self.tests}); certified {_fmt(self.certified)}"
            if self.stages
            else f"humans label every item ({self.candidates} candidates, {self.selection})",
            "settled (calibration): "
            + "".join(f"{s.name} {v:.1%}, " for s, v in zip(self.stages, cal.settled, strict=True))
            + f"human {cal.escalated:.1%}; agreement {_fmt(cal.agreement)}",
            f"USD per 1,000 items: cascade {cal.cost_per_1000:.2f}; humans only {self.humans_per_1000:.2f}; "
            + "; ".join(f"{k} alone {v:.2f}" for k, v in self.alone_per_1000.items()),
        ]
        return "\n".join(lines)


def fit_cascade(
    judgments: Sequence[Sequence[Judgment]],
    items: Sequence[Item],
    stage: SelectiveEvaluation | Sequence[SelectiveEvaluation],
    *,
    union_bound: bool = True,
) -> list[SelectiveEvaluation]:
    """One fitted stage per cascade stage, in the order given, from every stage's judgments (in the order of
    ``items``) on the calibration items. Stage k is calibrated on the items stages 1..k-1 escalated; ``stage``
    is one unfitted ``SelectiveEvaluation`` for all or one per stage. With ``union_bound`` each of the K
    stages is calibrated at δ/K, so the whole cascade keeps the 1 − δ guarantee."""
    stages = [stage] * len(judgments) if isinstance(stage, SelectiveEvaluation) else list(stage)
    if len(stages) != len(judgments):
        raise ConfigError(
            f"expected one SelectiveEvaluation per cascade stage ({len(judgments)}); got {len(stages)}"
        )
    if union_bound:
        stages = [s.model_copy(update={"delta": s.delta / len(stages)}) for s in stages]
    left = np.ones(len(items), dtype=bool)
    fitted: list[SelectiveEvaluation] = []
    for k, (js, unfit) in enumerate(zip(judgments, stages, strict=True)):
        conf, agreed, labelled = _evidence(js, items, unfit, f"stage {k + 1}")
        if k == 0 and not labelled.any():
            raise ConfigError(
                "fit_cascade found no calibration item with a human label; expected human scores for the "
                "criterion, or gold preferences for pairwise items"
            )
        s, left = _calibrate(unfit, conf, agreed, labelled, left)
        fitted.append(s)
    return fitted


def fit_cheapest_cascade(
    judgments: Mapping[str, Sequence[Judgment]],
    items: Sequence[Item],
    stages: Sequence[CascadeStage],
    *,
    human_cost: float,
    target: float = 0.8,
    delta: float = 0.1,
    max_stages: int = 2,
    candidates: Sequence[Sequence[str]] | None = None,
    selection: Literal["bonferroni", "split"] = "bonferroni",
    select_share: float = 0.5,
    seed: int = 0,
    tolerance: float = 0.5,
    criterion: str | None = None,
    grid: int = 1000,
    min_accepted: int = 30,
) -> CheapestCascade:
    """The cascade with the smallest expected cost per item on the calibration ``items`` among the
    candidates, whose stages keep the target with probability 1 − δ (the module docstring says why).

    ``judgments`` holds each stage's judgments of ``items`` (by stage name, in the order of ``items``);
    ``stages`` the priced stages; ``candidates`` the orders of stage names to consider (default: every
    ordered choice of 1 to ``max_stages`` distinct stages), fixed before the labels are read. Expected cost
    per item: each stage's price times the share of items reaching it, plus ``human_cost`` times the share
    no stage settles. Ties go to fewer stages, then to fewer items left to humans.

    ``selection`` "bonferroni" calibrates every distinct stage test of every candidate at δ/T on all items
    and takes the cheapest; "split" chooses on a random ``select_share`` of the items (``seed``; each
    candidate's stages at δ/K as if alone) and calibrates the chosen one on the rest at δ/K: no price for
    many candidates, fewer items for the thresholds.
    """
    if not math.isfinite(human_cost) or human_cost < 0:
        raise ConfigError(f"expected human_cost >= 0 USD per label; got {human_cost}")
    if selection not in ("bonferroni", "split"):
        raise ConfigError(f"expected selection 'bonferroni' or 'split'; got {selection!r}")
    if not 0 < select_share < 1:
        raise ConfigError(f"expected select_share in (0, 1); got {select_share}")
    by_name = {s.name: s for s in stages}
    if not stages or len(by_name) != len(stages):
        names = [s.name for s in stages]
        raise ConfigError(f"expected one or more cascade stages with distinct names; got {names}")
    if candidates is None:
        if max_stages < 1:
            raise ConfigError(f"expected max_stages >= 1; got {max_stages}")
        top = min(max_stages, len(stages))
        orders = [p for k in range(1, top + 1) for p in itertools.permutations(by_name, k)]
    else:
        orders = [tuple(c) for c in candidates if len(c)]
        bad = [c for c in orders if len(set(c)) < len(c) or not set(c) <= set(by_name)]
        if bad:
            raise ConfigError(
                f"expected candidates naming distinct stages among {sorted(by_name)}; got {bad[:3]}"
            )
    unfit = SelectiveEvaluation(
        target=target,
        delta=delta,
        tolerance=tolerance,
        criterion=criterion,
        grid=grid,
        min_accepted=min_accepted,
    )
    stage_fit = {n: unfit.model_copy(update={"confidence": s.confidence}) for n, s in by_name.items()}
    evidence = {n: _evidence(judgments.get(n), items, stage_fit[n], n) for n in by_name}
    if not any(ev[2].any() for ev in evidence.values()):
        raise ConfigError(
            "fit_cheapest_cascade found no calibration item with a human label; expected human scores for "
            "the criterion, or gold preferences for pairwise items"
        )
    everything = np.arange(len(items))
    if selection == "bonferroni":
        tests = len({c[:k] for c in orders for k in range(1, len(c) + 1)})
        chosen, fitted = _cheapest(
            evidence, stage_fit, by_name, orders, everything, human_cost, delta / tests
        )
    else:
        order = np.random.default_rng(seed).permutation(len(items))
        cut = round(len(items) * select_share)
        choose, certify = np.sort(order[:cut]), np.sort(order[cut:])
        chosen, _ = _cheapest(evidence, stage_fit, by_name, orders, choose, human_cost, None, delta)
        tests = len(chosen)  # humans only when the chosen stages, certified, cost more than humans
        chosen, fitted = (
            _cheapest(evidence, stage_fit, by_name, [chosen], certify, human_cost, delta / tests)
            if chosen
            else ((), ())
        )
    bounds = [
        1 - s.guarantee_.upper_risk for s in fitted if s.guarantee_ and s.guarantee_.threshold is not None
    ]
    out = CheapestCascade(
        target=target,
        delta=delta,
        human_cost=human_cost,
        selection=selection,
        stages=tuple(by_name[n] for n in chosen),
        fitted=fitted,
        candidates=len(orders) + 1,
        tests=tests,
        calibration=CascadeOutcome(n=0, settled=(), escalated=1.0, agreement=None, cost_per_1000=0.0),
        alone_per_1000={s.name: 1000 * s.cost for s in stages},
        humans_per_1000=1000 * human_cost,
        certified=min(bounds) if bounds else None,
    )
    return out.model_copy(update={"calibration": out.outcome(judgments, items)})


def _cheapest(
    evidence: Mapping[str, tuple[np.ndarray, np.ndarray, np.ndarray]],
    stage_fit: Mapping[str, SelectiveEvaluation],
    by_name: Mapping[str, CascadeStage],
    orders: Sequence[tuple[str, ...]],
    idx: np.ndarray,
    human_cost: float,
    per_test: float | None,
    delta: float = 1.0,
) -> tuple[tuple[str, ...], tuple[SelectiveEvaluation, ...]]:
    """The cheapest of ``orders`` on the items ``idx`` (humans only when none is cheaper), each stage at
    ``per_test`` (None: δ/K for a candidate of K stages), and its fitted stages."""
    fits: dict[
        tuple[tuple[str, ...], float], tuple[SelectiveEvaluation, np.ndarray, tuple[int, int, int, int]]
    ] = {}

    def fit(
        prefix: tuple[str, ...], d: float
    ) -> tuple[SelectiveEvaluation, np.ndarray, tuple[int, int, int, int]]:
        """The last stage of ``prefix`` calibrated on what the stages before it left, and what it leaves."""
        if (prefix, d) not in fits:
            left = fit(prefix[:-1], d)[1] if len(prefix) > 1 else np.ones(len(idx), dtype=bool)
            conf, agreed, labelled = (x[idx] for x in evidence[prefix[-1]])
            unfit = stage_fit[prefix[-1]].model_copy(update={"delta": d})
            s, after = _calibrate(unfit, conf, agreed, labelled, left)
            fits[(prefix, d)] = (s, after, _counts(left, left & ~after, agreed, labelled))
        return fits[(prefix, d)]

    chosen: tuple[str, ...] = ()
    best = (round(1000 * human_cost, 9), 0, 1.0)
    for order in orders:
        d = per_test if per_test is not None else delta / len(order)
        counts = [fit(order[:k], d)[2] for k in range(1, len(order) + 1)]
        o = _outcome(len(idx), counts, [by_name[n] for n in order], human_cost)
        key = (round(o.cost_per_1000, 9), len(order), o.escalated)
        if key < best:
            best, chosen = key, order
    d = per_test if per_test is not None else delta / max(len(chosen), 1)
    return chosen, tuple(fit(chosen[:k], d)[0] for k in range(1, len(chosen) + 1))


def _evidence(
    js: Sequence[Judgment] | None, items: Sequence[Item], stage: SelectiveEvaluation, name: str
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per item: the stage's confidence, whether it agrees with the human label, whether there is one."""
    if js is None or len(js) != len(items):
        got = "none" if js is None else len(js)
        raise DataError(
            f"expected one judgment per calibration item for every stage; {name} has {got} for {len(items)}"
        )
    conf, agreed, labelled = [], [], []
    for j, it in zip(js, items, strict=True):
        if j.item_id != it.id:
            raise DataError(
                f"expected the judgments of {name} in the order of the items; {j.item_id!r} stands where "
                f"{it.id!r} does",
                item_id=it.id,
            )
        a = agrees(j, it, tolerance=stage.tolerance, criterion=stage.criterion)
        labelled.append(a is not None)
        agreed.append(bool(a))
        conf.append(confidence(j, stage.confidence, stage.criterion))
    return np.array(conf, dtype=float), np.array(agreed, dtype=bool), np.array(labelled, dtype=bool)


def _calibrate(
    unfit: SelectiveEvaluation, conf: np.ndarray, agreed: np.ndarray, labelled: np.ndarray, left: np.ndarray
) -> tuple[SelectiveEvaluation, np.ndarray]:
    """``unfit`` calibrated on the labelled items still ``left``, and the items it leaves in turn."""
    use = left & labelled
    if use.any():
        fit = unfit.model_dump(include={"target", "delta", "grid", "min_accepted"})
        g = fixed_sequence_threshold(conf[use], agreed[use], **fit)
    else:  # nothing left to calibrate on: this stage trusts nothing
        g = Guarantee(target=unfit.target, delta=unfit.delta)
    return unfit.model_copy(update={"guarantee_": g}), left & ~_accepted(conf, g.threshold)


def _accepted(conf: np.ndarray, threshold: float | None) -> np.ndarray:
    if threshold is None:
        return np.zeros(len(conf), dtype=bool)
    return np.isfinite(conf) & (np.nan_to_num(conf, nan=-1.0) >= threshold - 1e-12)


def _counts(
    left: np.ndarray, take: np.ndarray, agreed: np.ndarray, labelled: np.ndarray
) -> tuple[int, int, int, int]:
    """Items reaching a stage, settled by it, settled with a label, settled in agreement."""
    return (
        int(left.sum()),
        int(take.sum()),
        int((take & labelled).sum()),
        int((take & labelled & agreed).sum()),
    )


def _outcome(
    n: int, counts: Sequence[tuple[int, int, int, int]], stages: Sequence[CascadeStage], human_cost: float
) -> CascadeOutcome:
    spent = sum(stage.cost * reached for (reached, *_), stage in zip(counts, stages, strict=True))
    escalated = n - sum(c[1] for c in counts)
    taken, hits = sum(c[2] for c in counts), sum(c[3] for c in counts)
    return CascadeOutcome(
        n=n,
        settled=tuple(c[1] / n for c in counts) if n else (),
        escalated=escalated / n if n else 0.0,
        agreement=hits / taken if taken else None,
        cost_per_1000=1000 * (spent + human_cost * escalated) / n if n else 0.0,
    )


def _fmt(x: float | None) -> str:
    return "-" if x is None else f"{x:.3f}"
