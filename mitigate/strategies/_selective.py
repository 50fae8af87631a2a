"""Selective evaluation with a guarantee of human agreement (Jung et al. 2024, "Trust or Escalate").

A judge is trusted only where its confidence reaches a threshold chosen on labelled calibration items by
fixed-sequence testing, so that with probability ≥ 1 − δ trusted items agree with humans at the target; the
rest are escalated. :class:`CascadeJudge` chains judges from cheap to strong.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Sequence
from typing import Any, ClassVar, Literal, Self

import numpy as np
from pydantic import BaseModel, ConfigDict

from mitigate.constraints import Interval, IsInstance, Options
from mitigate.data import Benchmark, Item
from mitigate.errors import ConfigError, DataError
from mitigate.judge import CompositeJudge, FitContext, Judge, Judgment, PlannedRequest
from mitigate.registry import Tags, register
from mitigate.run import run
from mitigate.selectors import GOLD_VERDICT
from mitigate.strategies._base import NEEDS_HUMAN, AdjustingJudge, Mitigation

Confidence = Literal["samples", "probability", "both-orders", "rts-mcq", "meta"]
CONFIDENCES: tuple[str, ...] = ("samples", "probability", "both-orders", "rts-mcq", "meta")
"""The confidence sources :func:`confidence` reads."""


def binomial_upper_bound(errors: int, n: int, delta: float) -> float:
    """The Clopper-Pearson 1 − δ upper bound of a binomial rate, ``errors`` of ``n``."""
    if n <= 0 or errors >= n:
        return 1.0
    from scipy.stats import beta  # imported here: scipy costs about a second to import

    return float(beta.ppf(1.0 - delta, errors + 1, n - errors))


class Guarantee(BaseModel):
    """A threshold chosen by fixed-sequence testing (None: escalate all), and its calibration counts."""

    model_config = ConfigDict(frozen=True, extra="forbid")
    target: float
    delta: float
    threshold: float | None = None
    n_calibration: int = 0
    n_accepted: int = 0
    n_agreed: int = 0
    upper_risk: float = 1.0
    tested: int = 0

    @property
    def coverage(self) -> float:
        """The share of calibration items accepted."""
        return self.n_accepted / self.n_calibration if self.n_calibration else 0.0

    @property
    def agreement(self) -> float:
        """The calibration agreement among accepted items (NaN when none)."""
        return self.n_agreed / self.n_accepted if self.n_accepted else math.nan


def fixed_sequence_threshold(
    conf: Sequence[float] | np.ndarray,
    agreed: Sequence[bool] | np.ndarray,
    *,
    target: float,
    delta: float,
    grid: int = 1000,
    min_accepted: int = 30,
) -> Guarantee:
    """λ̂ such that agreement among items with confidence >= λ̂ is >= ``target`` with probability >= 1 −
    ``delta``.

    The ``grid + 1`` thresholds of [0, 1] are tested from 1 down (NaN confidences never accepted); one is
    rejected (safe) when the Clopper-Pearson bound of the disagreement rate above it is <= 1 − ``target``.
    Thresholds accepting fewer than ``min_accepted`` items are skipped (as in Jung et al.'s code; a choice
    made on confidences only). Testing stops at the first threshold not rejected; λ̂ is the lowest rejected
    one.
    """
    c = np.asarray(conf, dtype=float)
    a = np.asarray(agreed, dtype=bool)
    if c.shape != a.shape:
        raise DataError(f"expected one agreement per confidence; got {c.shape} and {a.shape}")
    if not 0 < target < 1 or not 0 < delta < 1:
        raise ConfigError(f"expected target and delta in (0, 1); got target={target}, delta={delta}")
    finite = c[np.isfinite(c)]
    if len(finite) and (finite.min() < 0 or finite.max() > 1):
        raise DataError(
            f"expected confidences in [0, 1]; got values from {finite.min():g} to {finite.max():g}"
        )
    alpha = 1.0 - target
    ok = np.isfinite(c)
    best: dict[str, Any] = {}  # the lowest rejected threshold's Guarantee fields
    tested = 0
    order = np.argsort(-np.where(ok, c, -np.inf), kind="stable")
    sorted_conf = np.where(ok, c, -np.inf)[order]
    errors_upto = np.cumsum(~a[order])  # disagreements among the i+1 most confident
    lams = np.linspace(1.0, 0.0, grid + 1)
    counts = np.searchsorted(-sorted_conf, -(lams - 1e-12), side="right")  # items with conf >= lam
    # consecutive thresholds accepting the same items are the same test: one bound per run of equal counts
    starts = np.flatnonzero(np.r_[True, counts[1:] != counts[:-1]])
    for start, stop in zip(starts, np.r_[starts[1:], len(lams)], strict=True):
        n = int(counts[start])
        if n == 0 or n < min_accepted:
            continue
        upper = binomial_upper_bound(int(errors_upto[n - 1]), n, delta)
        if upper > alpha:
            tested += 1
            break
        tested += int(stop - start)
        agreed_n = n - int(errors_upto[n - 1])
        lam = lams[stop - 1]  # the lowest threshold of the run
        best = {"threshold": round(float(lam), 9), "n_accepted": n, "n_agreed": agreed_n, "upper_risk": upper}
    return Guarantee(target=target, delta=delta, n_calibration=len(c), tested=tested, **best)


def _criterion(j: Judgment, criterion: str | None) -> str:
    if criterion is not None:
        return criterion
    names = list(j.scores) or list(j.samples)
    if len(names) != 1:
        raise ConfigError(
            f"judgment {j.item_id!r} has scores for {names}; name the criterion (criterion=...)"
        )
    return names[0]


def confidence(j: Judgment, source: Confidence, criterion: str | None = None) -> float:
    """The judgment's confidence in [0, 1] from ``source`` (NaN for a failed judgment).

    - ``samples``: the share of samples (or panel members' verdicts) that gave the most common answer; failed
      samples stay in the count.
    - ``probability``: the highest answer probability of a calibrated logprob judgment
      (``meta["calibration"]``).
    - ``both-orders``: 1 when the verdict survived swapping the outputs, else 0 (``position-swap``).
    - ``rts-mcq``: ``1 / (1 + |RTS − MCQ|)`` from an ``agreement-gate`` judgment.
    - ``meta``: ``meta["confidence"]`` as a mitigation set it.
    """
    if j.error is not None:
        return math.nan
    meta = j.meta
    if source == "samples":
        panel = meta.get("panel", {}).get("members", {})
        verdicts = j.verdict is not None or "verdict" in panel
        values = list(
            panel.get("verdict", {}).values() if verdicts else j.samples.get(_criterion(j, criterion), ())
        )
        if verdicts and not values:
            raise DataError(
                f"judgment {j.item_id!r} has one verdict and no panel votes; 'samples' confidence needs "
                "a panel of verdicts (use 'both-orders' or 'meta' for a single pairwise judge)"
            )
        given = [v for v in values if v is not None]
        return Counter(given).most_common(1)[0][1] / len(values) if given else math.nan
    if source == "probability":
        cal = meta.get("calibration", {})
        dist = cal.get("mean_q") or cal.get("q") or cal.get("p")
        if not dist:
            raise DataError(
                f"judgment {j.item_id!r} holds no answer distribution; 'probability' confidence "
                "needs a calibrated logprob judge (contextual-calibration or batch-calibration)"
            )
        return float(max(dist.values()))
    if source == "both-orders":
        if "position_consistent" not in meta:
            raise DataError(
                f"judgment {j.item_id!r} has no meta['position_consistent']; 'both-orders' "
                "confidence needs a position-swap judge"
            )
        pc = meta["position_consistent"]
        return math.nan if pc is None else float(bool(pc))
    if source == "rts-mcq":
        rts, mcq = meta.get("rts"), meta.get("mcq")
        if not isinstance(rts, dict) or not isinstance(mcq, dict):
            raise DataError(
                f"judgment {j.item_id!r} has no RTS and MCQ scores; 'rts-mcq' confidence needs "
                "an agreement-gate judge"
            )
        c = _criterion(j, criterion)
        r, m = rts.get(c), mcq.get(c)
        return math.nan if r is None or m is None else 1.0 / (1.0 + abs(r - m))
    if source == "meta":
        value = meta.get("confidence")
        if value is None:
            raise DataError(f"judgment {j.item_id!r} has no meta['confidence']")
        return float(value)
    raise ConfigError(f"expected a confidence source from {list(CONFIDENCES)}; got {source!r}")


def gold_verdict(item: Item, criterion: str | None = None) -> str | None:
    """The gold preference of a pairwise item as a verdict by position (A -> "first", B -> "second",
    "tie"), or None. The criterion's entry of ``item.preference``, or its only one when ``criterion`` is
    None."""
    prefs = item.preference
    if criterion is None and len(prefs) > 1:
        raise DataError(
            f"item {item.id!r} has gold preferences for {sorted(prefs)}; expected a criterion to pick one",
            item_id=item.id,
        )
    pref = next(iter(prefs.values()), None) if criterion is None else prefs.get(criterion)
    return None if pref is None else GOLD_VERDICT[pref]


def agrees(j: Judgment, item: Item, *, tolerance: float, criterion: str | None = None) -> bool | None:
    """Whether ``j`` agrees with ``item``'s human label (None without one; scores within ``tolerance``)."""
    gold = gold_verdict(item, criterion)
    if gold is not None:
        return j.verdict == gold
    c = _criterion(j, criterion) if (j.scores or j.samples) else criterion
    if c is None or c not in item.human:
        return None
    score = j.scores.get(c) if j.error is None else None
    return score is not None and abs(score - item.human[c]) <= tolerance + 1e-9


class SelectiveJudge(AdjustingJudge):
    """Its child's judgment, accepted or escalated by the threshold (:func:`decide`)."""

    kind = "selective"
    threshold: float | None
    source: Confidence
    criterion: str | None
    on_escalate: str

    def adjust(self, judgment: Judgment, item: Item) -> Judgment:
        return decide(judgment, self.threshold, self.source, self.criterion, self.on_escalate)


def decide(
    j: Judgment, threshold: float | None, source: Confidence, criterion: str | None, on_escalate: str
) -> Judgment:
    """``j`` accepted (confidence >= threshold) or escalated (always, when threshold is None).
    ``meta["selective"]`` holds the confidence, threshold and decision. An escalated judgment is flagged
    ``needs_human``; with ``on_escalate="abstain"`` its answer is removed too."""
    conf = confidence(j, source, criterion)
    accept = _accepts(conf, threshold)
    info = {
        "confidence": None if math.isnan(conf) else conf,
        "threshold": threshold,
        "decision": "accept" if accept else "escalate",
    }
    update: dict[str, Any] = {"meta": {**j.meta, "selective": info}}
    if not accept:
        update["flags"] = tuple(dict.fromkeys((*j.flags, NEEDS_HUMAN)))
        if on_escalate == "abstain":
            update["scores"] = dict.fromkeys(j.scores)
            update["verdict"] = None
    return j.model_copy(update=update)


@register("mitigation", "selective")
class SelectiveEvaluation(Mitigation):
    """Trust the judge only where its confidence guarantees a target agreement with humans (Jung et al. 2024).

    Parameters:
        target: the agreement with humans accepted judgments must reach (1 − α).
        delta: the allowed probability that the guarantee fails over the calibration draw.
        confidence: the confidence source (:func:`confidence`).
        tolerance: a score agrees within this distance of the human score (a verdict must equal the gold one).
        criterion: the criterion to read (None: the judgment's only one).
        on_escalate: "flag" keeps an escalated answer flagged ``needs_human``; "abstain" also removes it.
        grid: thresholds tested, evenly spaced on [0, 1].
        min_accepted: thresholds accepting fewer calibration items are not tested.
    """

    paper = "Jung et al. 2024"

    declared_tags: ClassVar[Tags] = Tags(needs_fitting=True, calls_judge_while_fitting=True, needs_judge=True)
    target: float = 0.8
    delta: float = 0.1
    confidence: Confidence = "samples"
    tolerance: float = 0.5
    criterion: str | None = None
    on_escalate: Literal["flag", "abstain"] = "flag"
    grid: int = 1000
    min_accepted: int = 30
    guarantee_: Guarantee | None = None
    parameter_constraints: ClassVar = {
        "target": [Interval(float, 0, 1, closed="neither")],
        "delta": [Interval(float, 0, 1, closed="neither")],
        "confidence": [Options(*CONFIDENCES)],
        "tolerance": [Interval(float, 0)],
        "criterion": [IsInstance(str), None],
        "on_escalate": [Options("flag", "abstain")],
        "grid": [Interval(int, 1)],
        "min_accepted": [Interval(int, 1)],
        "guarantee_": [IsInstance(Guarantee, dict, noun="a Guarantee"), None],
    }

    @property
    def tags(self) -> Tags:
        """As declared; ``pairwise_only`` too when the confidence is read from both orders of a pair."""
        return self.declared_tags.model_copy(update={"pairwise_only": self.confidence == "both-orders"})

    @classmethod
    def examples(cls) -> list[Mitigation]:
        g = Guarantee(target=0.8, delta=0.1, threshold=0.6, n_calibration=100, n_accepted=60, n_agreed=55)
        g = g.model_copy(update={"upper_risk": 0.16, "tested": 401})
        return [cls(), cls(confidence="both-orders", on_escalate="abstain", guarantee_=g)]

    @property
    def is_fitted(self) -> bool:
        return self.guarantee_ is not None

    def wrap(self, judge: Judge) -> Judge:
        """A judge whose judgments are accepted or escalated by the calibrated threshold."""
        if self.guarantee_ is None:
            raise ConfigError(
                "SelectiveEvaluation is not fitted; expected `m = m.fit(calibration, judge)` "
                "first (it calibrates the confidence threshold on labelled items)"
            )
        return SelectiveJudge(
            judge,
            threshold=self.guarantee_.threshold,
            source=self.confidence,
            criterion=self.criterion,
            on_escalate=self.on_escalate,
        )

    def calibrate(self, judgments: Sequence[Judgment], items: Sequence[Item]) -> Self:
        """A fitted copy from judgments already made on labelled ``items`` (matched by id)."""
        by_id = {it.id: it for it in items}
        conf, agreed = [], []
        for j in judgments:
            item = by_id.get(j.item_id)
            if item is None:
                raise DataError(
                    f"expected an item for every judgment; {j.item_id!r} has none", item_id=j.item_id
                )
            a = agrees(j, item, tolerance=self.tolerance, criterion=self.criterion)
            if a is None:
                continue  # no human label: cannot calibrate on it
            conf.append(confidence(j, self.confidence, self.criterion))
            agreed.append(a)
        if not conf:
            raise ConfigError(
                "SelectiveEvaluation.fit found no training item with a human label to calibrate on; "
                "expected human scores for the criterion, or gold preferences for pairwise items"
            )
        g = fixed_sequence_threshold(
            conf, agreed, target=self.target, delta=self.delta, grid=self.grid, min_accepted=self.min_accepted
        )
        return self.model_copy(update={"guarantee_": g})

    async def learn(self, train: Benchmark, judge: Judge, ctx: FitContext) -> Self:
        """A fitted copy: ``judge`` run on ``train``, the threshold calibrated on its judgments."""
        desc = "calibrating selective evaluation"
        result = await run(judge, train.items, concurrency=ctx.concurrency, progress=ctx.progress, desc=desc)
        return self.calibrate(result.judgments, train.items)


class CascadeJudge(CompositeJudge):
    """Judges from cheap to strong (children in order), each trusted only at or above its own threshold.
    The first stage that is trusted answers (``meta["cascade"]``); when none is, the last stage's judgment
    is escalated. A later stage is only called when the earlier ones escalated."""

    kind = "cascade"

    def __init__(self, children: dict[str, Judge], *, stages: Sequence[SelectiveEvaluation]) -> None:
        super().__init__(children)
        if len(stages) != len(children) or not all(s.is_fitted for s in stages):
            raise ConfigError(
                f"expected one fitted SelectiveEvaluation per cascade stage; got {len(stages)} "
                f"for {len(children)} judges"
            )
        self.stages = list(stages)

    def params(self) -> dict[str, Any]:
        return {"stages": [s.spec() for s in self.stages]}

    def requests(self, item: Item) -> list[PlannedRequest]:
        out: list[PlannedRequest] = []
        before: list[str] = []
        for (name, _child), stage in zip(self.children.items(), self.stages, strict=True):
            cond = None
            if before:
                cond = "sent only when " + " and ".join(before) + " escalate(s) (depends on their answers)"
            out.extend(self.child_requests(name, item, condition=cond))
            g = stage.guarantee_
            threshold = (
                "never trusts" if g is None or g.threshold is None else f"confidence < {g.threshold:.3g}"
            )
            before.append(f"stage {name!r} ({threshold})")
        return out

    async def judge(self, item: Item) -> Judgment:
        costs: list[Judgment] = []
        out: Judgment | None = None
        for (name, child), stage in zip(self.children.items(), self.stages, strict=True):
            g = stage.guarantee_
            assert g is not None
            j = await child.judge(item)
            j = decide(j, g.threshold, stage.confidence, stage.criterion, stage.on_escalate)
            costs.append(j)
            out = j.model_copy(
                update={"meta": {**j.meta, "cascade": {"stage": name, "stages_called": len(costs)}}}
            )
            if j.meta["selective"]["decision"] == "accept":
                break
        assert out is not None
        calls = sum(c.calls for c in costs)
        return out.model_copy(update={"calls": calls, "cached_calls": sum(c.cached_calls for c in costs)})


def _accepts(conf: float, threshold: float | None) -> bool:
    return threshold is not None and math.isfinite(conf) and conf >= threshold - 1e-12
