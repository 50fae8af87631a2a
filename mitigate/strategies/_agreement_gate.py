"""RTS/MCQ agreement gating (Shen et al. 2023): send systems the judge is unsure about to humans.

Each output is scored reason-then-score and multiple-choice; a system whose R_i = corr(RTS, MCQ) is below the
tolerance, or undefined, goes to human evaluation (:meth:`AgreementGate.gate`). :func:`gate_released` does so
on Shen et al.'s released ChatGPT answers.
"""

from __future__ import annotations

import asyncio
import math
from collections.abc import Hashable, Sequence
from pathlib import Path
from typing import Any, ClassVar, Literal

import numpy as np
from pydantic import BaseModel, ConfigDict, Field

from mitigate import measures
from mitigate.constraints import Interval, Options
from mitigate.data import CRITERIA, Item, load_released, load_summeval
from mitigate.errors import ConfigError, DataError
from mitigate.judge import CompositeJudge, Judge, Judgment, ParseFailure, merge_judgments
from mitigate.measures import CORRELATIONS
from mitigate.registry import Tags, register
from mitigate.strategies._base import NEEDS_HUMAN, Mitigation
from mitigate.strategies._forms import mcq_form, rts_form

Decision = Literal["accept", "needs_human", "insufficient data"]


class AgreementJudge(CompositeJudge):
    """Scores each item in RTS and MCQ form (children ``"rts"`` and ``"mcq"``), concurrently. ``scores``
    holds the RTS scores; ``meta["rts"]`` / ``meta["mcq"]`` both forms' scores per criterion (a parse
    failure is None, kept in ``failures`` prefixed "rts: " or "mcq: ")."""

    kind = "rts-mcq"
    requests_are_children = True

    def __init__(self, children: dict[str, Judge], *, tolerance: float, method: str, min_items: int) -> None:
        if set(children) != {"rts", "mcq"}:
            raise ConfigError(f"an AgreementJudge needs children 'rts' and 'mcq'; got {sorted(children)}")
        super().__init__(children)
        self.tolerance, self.method, self.min_items = tolerance, method, min_items

    def params(self) -> dict[str, Any]:
        return {"tolerance": self.tolerance, "method": self.method, "min_items": self.min_items}

    async def judge(self, item: Item) -> Judgment:
        rts, mcq = await asyncio.gather(self.children["rts"].judge(item), self.children["mcq"].judge(item))
        failures = tuple(
            f.model_copy(update={"reason": f"{form}: {f.reason}"})
            for form, part in (("rts", rts), ("mcq", mcq))
            for f in part.failures
        )
        meta: dict[str, Any] = {"rts": dict(rts.scores), "mcq": dict(mcq.scores)}
        meta.update({f"{form}_meta": part.meta for form, part in (("rts", rts), ("mcq", mcq)) if part.meta})
        answer: dict[str, Any] = {"scores": dict(rts.scores), "samples": dict(rts.samples)}
        return merge_judgments(item.id, [rts, mcq], failures=failures, meta=meta, **answer)


class GateDecision(BaseModel):
    """The gate's decision for one system: R_i over ``n`` items (NaN with a ``reason``) and what to do."""

    model_config = ConfigDict(frozen=True, extra="forbid")
    system: str
    r: float
    n: int
    n_failed: int = 0
    decision: Decision
    reason: str | None = None

    @property
    def needs_human(self) -> bool:
        """True when the system's items should go to human review."""
        return self.decision != "accept"


class GateReport(BaseModel):
    """The gate's decisions, one per system in order of first appearance, and the flagged judgments."""

    model_config = ConfigDict(frozen=True, extra="forbid")
    criterion: str
    tolerance: float
    method: str
    min_items: int
    decisions: tuple[GateDecision, ...]
    judgments: tuple[Judgment, ...]

    def flagged_systems(self) -> list[str]:
        """Systems whose items need human review (R_i < tolerance, or R_i undefined)."""
        return [d.system for d in self.decisions if d.needs_human]

    def r_by_system(self) -> dict[str, float]:
        """System -> R_i (NaN where undefined)."""
        return {d.system: d.r for d in self.decisions}

    def decision(self, system: str) -> GateDecision:
        """The decision for ``system``; DataError naming the known systems when absent."""
        for d in self.decisions:
            if d.system == system:
                return d
        raise DataError(
            f"expected one of the gated systems {[d.system for d in self.decisions]}; got {system!r}"
        )


@register("mitigation", "agreement-gate")
class AgreementGate(Mitigation):
    """Shen et al. (2023)'s RTS/MCQ agreement gate.

    Parameters:
        tolerance: the threshold r; a system with R_i = corr(RTS, MCQ) below it goes to human review.
        method: the correlation for R_i: "spearman", "kendall" or "pearson".
        min_items: the fewest items with both scores a system needs for R_i (fewer: "insufficient data").
    """

    paper = "Shen et al. 2023"

    declared_tags: ClassVar[Tags] = Tags(adds_reasoning=True)  # the RTS form reasons before its score
    tolerance: float = 0.5
    method: str = "spearman"
    min_items: int = 5
    parameter_constraints: ClassVar = {
        "tolerance": [Interval(float, -1, 1)],
        "method": [Options(*sorted(CORRELATIONS))],
        "min_items": [Interval(int, 3)],  # a correlation needs 3 pairs
    }

    def wrap(self, judge: Judge) -> Judge:
        """A judge scoring each item in RTS and MCQ form (a judge scoring by expected value is refused)."""
        if any(leaf.config.scoring == "expected" for leaf in judge.leaves()):
            raise ConfigError(
                "AgreementGate's RTS form asks for a reason before the score, but this judge scores by "
                "expected value over the first scale number it generates (ExpectedScore); expected a judge "
                "with scoring='parse' (place ExpectedScore in another pipeline)"
            )
        children = {"rts": judge.map_prompts(rts_form), "mcq": judge.map_prompts(mcq_form)}
        return AgreementJudge(children, **self.model_dump(include=_PARAMS))

    def gate(
        self, judgments: Sequence[Judgment], items: Sequence[Item], criterion: str | None = None
    ) -> GateReport:
        """Decide per system from judgments made by this gate's judge. ``items`` gives each judgment's
        system (by item id); ``criterion`` picks the score when there are several. The returned judgments
        are copies with ``"needs_human"`` in ``flags`` for every item of a flagged system and
        ``meta["agreement_gate"]``."""
        by_id = {it.id: it for it in items}
        for j in judgments:
            _form_scores(j, "")  # DataError unless the judgment came from an AgreementJudge
        crit = criterion if criterion is not None else _only_criterion(judgments)
        systems: list[str] = []
        rts: list[float] = []
        mcq: list[float] = []
        for j in judgments:
            item = by_id.get(j.item_id)
            if item is None:
                raise DataError(
                    f"expected an item for every judgment; judgment {j.item_id!r} has none among the "
                    f"{len(by_id)} items given",
                    item_id=j.item_id,
                )
            if item.system is None:
                raise DataError(
                    f"the agreement gate decides per system; expected item {item.id!r} to name its "
                    "system, got None",
                    item_id=item.id,
                )
            r_score, m_score = _form_scores(j, crit)
            systems.append(item.system)
            rts.append(math.nan if r_score is None else r_score)
            mcq.append(math.nan if m_score is None else m_score)
        decisions = self._decide(systems, np.array(rts, dtype=float), np.array(mcq, dtype=float))
        by_system = {d.system: d for d in decisions}
        flagged: list[Judgment] = []
        for j, s in zip(judgments, systems, strict=True):
            d = by_system[s]
            flags = tuple(dict.fromkeys((*j.flags, NEEDS_HUMAN))) if d.needs_human else j.flags
            gate_meta = {"system": s, "r": None if math.isnan(d.r) else d.r, "decision": d.decision}
            flagged.append(
                j.model_copy(update={"flags": flags, "meta": {**j.meta, "agreement_gate": gate_meta}})
            )
        params = self.model_dump(include=_PARAMS)
        return GateReport(criterion=crit, decisions=tuple(decisions), judgments=tuple(flagged), **params)

    def _decide(self, systems: Sequence[str], rts: np.ndarray, mcq: np.ndarray) -> list[GateDecision]:
        out: list[GateDecision] = []
        for s in dict.fromkeys(systems):
            idx = [i for i, t in enumerate(systems) if t == s]
            m = measures.item_correlation(rts[idx], mcq[idx], self.method)
            decision: Decision = "insufficient data"
            reason: str | None = None
            r = math.nan
            if m.n < self.min_items:
                reason = (
                    f"only {m.n} of system {s!r}'s items have both an RTS and an MCQ score; "
                    f"expected at least min_items={self.min_items}"
                )
            elif not m.ok:
                reason = f"R_i is undefined for system {s!r}: {m.reason} (first input RTS, second MCQ)"
            elif m.value >= self.tolerance:
                r, decision = m.value, "accept"
            else:
                r, decision = m.value, "needs_human"
                reason = (
                    f"R_i = {m.value:.3f} < tolerance {self.tolerance:g}: RTS and MCQ disagree on this system"
                )
            out.append(
                GateDecision(system=s, r=r, n=m.n, n_failed=m.n_failed, decision=decision, reason=reason)
            )
        return out


_PARAMS = {"tolerance", "method", "min_items"}


def _only_criterion(judgments: Sequence[Judgment]) -> str:
    forms = [part for j in judgments for key in ("rts", "mcq") if isinstance(part := j.meta.get(key), dict)]
    names = {name for part in forms for name in part}
    if len(names) != 1:
        raise ConfigError(
            f"the judgments hold RTS/MCQ scores for {sorted(names) or 'no criterion'}; expected exactly one, "
            "or name it with criterion=..."
        )
    return next(iter(names))


def _form_scores(j: Judgment, criterion: str) -> tuple[float | None, float | None]:
    """The RTS and MCQ score of one judgment (None for a failure); DataError if it is not a gate judgment."""
    rts, mcq = j.meta.get("rts"), j.meta.get("mcq")
    if not isinstance(rts, dict) or not isinstance(mcq, dict):
        if j.error is not None:  # a failed call has no scores at all
            return None, None
        raise DataError(
            f"expected judgments from AgreementGate().wrap(judge) with meta['rts'] and meta['mcq']; judgment "
            f"{j.item_id!r} has meta keys {sorted(j.meta)}",
            item_id=j.item_id,
        )
    return rts.get(criterion), mcq.get(criterion)


# --------------------------------------------------------------------------- the released ChatGPT answers


class ReleasedGateReport(BaseModel):
    """The gate on one dimension of Shen et al.'s released ChatGPT outputs, and whether R_i predicts P_i.

    ``p``: P_i per system, the correlation of ChatGPT's RTS scores with the experts'; ``r_predicts_p``: the
    correlation across systems of R_i with P_i (what the gate relies on); mean P_i of the accepted and flagged
    systems.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")
    criterion: str
    gate: GateReport
    p: dict[str, float]
    p_method: str
    r_predicts_p: measures.Measure
    p_accepted_mean: float
    p_flagged_mean: float
    parse_failures: dict[str, int] = Field(default_factory=dict)


def released_gate_judgments(
    criterion: str, items: Sequence[Item], *, root: str | Path | None = None
) -> list[Judgment]:
    """Judgments like :class:`AgreementJudge`'s from the released answers (a rejected one is a failure)."""
    runs = {form: load_released(f"chatgpt-{form}", root=root) for form in ("rts", "mcq")}
    out: list[Judgment] = []
    for item in items:
        got = {form: run.get(item.id, criterion) for form, run in runs.items()}
        failures = tuple(
            ParseFailure(criterion=criterion, raw=rj.raw, reason=f"{form}: {rj.error}")
            for form, rj in got.items()
            if rj.score is None
        )
        r, m = got["rts"], got["mcq"]
        meta = {"rts": {criterion: r.score}, "mcq": {criterion: m.score}}
        out.append(
            Judgment(
                item_id=item.id, scores={criterion: r.score}, raw=(r.raw, m.raw), failures=failures, meta=meta
            )
        )
    return out


def gate_released(
    criteria: str | Sequence[str] | None = None,
    *,
    gate: AgreementGate | None = None,
    p_method: str = "spearman",
    predict_method: str = "spearman",
    root: str | Path | None = None,
) -> dict[str, ReleasedGateReport]:
    """Run the agreement gate on Shen et al.'s released ChatGPT RTS and MCQ answers, per SummEval dimension
    (None: all four). ``gate`` holds the parameters (default :class:`AgreementGate()`); items and expert
    scores come from ``load_summeval("llm_summeval")``."""
    gate = gate or AgreementGate()
    wanted = [criteria] if isinstance(criteria, str) else list(criteria if criteria is not None else CRITERIA)
    for c in wanted:
        if c not in CRITERIA:
            raise DataError(f"expected SummEval dimensions from {list(CRITERIA)}; got {c!r}")
    bench = load_summeval("llm_summeval", root=root)
    items = list(bench.items)
    systems: list[Hashable | None] = list(measures.item_systems(items))
    out: dict[str, ReleasedGateReport] = {}
    for c in wanted:
        judgments = released_gate_judgments(c, items, root=root)
        report = gate.gate(judgments, items, criterion=c)
        rts = [j.scores.get(c) for j in judgments]
        p_measures = measures.per_system_correlation(rts, measures.human_scores(items, c), systems, p_method)
        p = {s: float(m.value) for s, m in p_measures.items()}
        r_by = report.r_by_system()
        order = list(r_by)
        predict = measures.item_correlation(
            [r_by[s] for s in order], [p.get(s, math.nan) for s in order], predict_method
        )
        predict = predict.model_copy(update={"name": f"{predict_method}_R_vs_P"})
        finite = [s for s in order if math.isfinite(p.get(s, math.nan))]
        accepted = [p[s] for s in finite if not report.decision(s).needs_human]
        flagged = [p[s] for s in finite if report.decision(s).needs_human]
        fails = {form: sum(1 for j in judgments if j.meta[form][c] is None) for form in ("rts", "mcq")}
        out[c] = ReleasedGateReport(
            criterion=c,
            gate=report,
            p=p,
            p_method=p_method,
            r_predicts_p=predict,
            p_accepted_mean=float(np.mean(accepted)) if accepted else math.nan,
            p_flagged_mean=float(np.mean(flagged)) if flagged else math.nan,
            parse_failures=fails,
        )
    return out
