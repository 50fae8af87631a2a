"""RTS/MCQ agreement gating (Shen et al. 2023): send systems the judge is unsure about to humans.

Shen et al. ("Large language models are not yet human-level evaluators for abstractive
summarization", 2023) found that how well an LLM judge agrees with humans depends on the
system being judged, and proposed a check that needs no human labels: score every output of
system *i* twice, once reason-then-score (RTS) and once multiple-choice (MCQ), and compute

    R_i = corr(RTS scores of system i, MCQ scores of system i)   (over system i's items).

When the two forms disagree (R_i < tolerance r), the judge's scores for that system are not
trusted and the system goes to human evaluation.

- :class:`AgreementGate` (registered as ``"agreement-gate"``): ``wrap(judge)`` gives an
  :class:`AgreementJudge` whose children ``"rts"`` and ``"mcq"`` are the wrapped judge with
  every prompt turned into its RTS / MCQ form (:mod:`mitigate.strategies._forms`). Each item
  gets both scores: ``scores[<criterion>]`` is the RTS score, ``meta["rts"]`` and
  ``meta["mcq"]`` map criterion -> score (None for a parse failure, which is also kept in
  ``failures`` with its reason prefixed "rts: " or "mcq: ").
- The decision is per system across items, so it is a separate step:
  :meth:`AgreementGate.gate` takes the judgments and their items and returns a
  :class:`GateReport` with one :class:`GateDecision` per system and the judgments with the
  flag ``"needs_human"`` added to every item of a flagged system.
- :func:`gate_released` makes the same decision from the RTS and MCQ answers ChatGPT gave in
  Shen et al.'s released outputs (no LM call) and measures how well R_i predicts P_i, each
  system's correlation with human scores.

Decisions: ``"accept"`` (R_i >= tolerance), ``"needs_human"`` (R_i < tolerance) and
``"insufficient data"`` (R_i is NaN: fewer than ``min_items`` items with both scores, or one
form gave every item the same score). Insufficient data is treated conservatively: those
systems are flagged ``needs_human`` too, since nothing shows the judge can be trusted on them.
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
from mitigate.strategies._base import Mitigation
from mitigate.strategies._forms import mcq_form, rts_form

NEEDS_HUMAN = "needs_human"
"""The flag put on judgments whose system failed the gate."""

Decision = Literal["accept", "needs_human", "insufficient data"]


class AgreementJudge(CompositeJudge):
    """Scores each item in RTS and MCQ form (children ``"rts"`` and ``"mcq"``), concurrently.

    ``scores`` holds the RTS scores (the headline answer); ``meta["rts"]`` / ``meta["mcq"]``
    hold both forms' scores per criterion, for :meth:`AgreementGate.gate`.
    """

    kind = "rts-mcq"
    requests_are_children = True

    def __init__(self, children: dict[str, Judge], *, tolerance: float, method: str, min_items: int) -> None:
        if set(children) != {"rts", "mcq"}:
            raise ConfigError(f"an AgreementJudge needs children 'rts' and 'mcq'; got {sorted(children)}")
        super().__init__(children)
        self.tolerance = tolerance
        self.method = method
        self.min_items = min_items

    def params(self) -> dict[str, Any]:
        """The gate's parameters (they do not change per-item judging, only the later decision)."""
        return {"tolerance": self.tolerance, "method": self.method, "min_items": self.min_items}

    async def judge(self, item: Item) -> Judgment:
        """Both forms' judgments for ``item``, merged: RTS scores as ``scores``, both in ``meta``."""
        rts, mcq = await asyncio.gather(self.children["rts"].judge(item), self.children["mcq"].judge(item))
        failures = tuple(
            f.model_copy(update={"reason": f"{form}: {f.reason}"})
            for form, part in (("rts", rts), ("mcq", mcq))
            for f in part.failures
        )
        meta: dict[str, Any] = {"rts": dict(rts.scores), "mcq": dict(mcq.scores)}
        if rts.meta:
            meta["rts_meta"] = rts.meta
        if mcq.meta:
            meta["mcq_meta"] = mcq.meta
        return merge_judgments(
            item.id,
            [rts, mcq],
            scores=dict(rts.scores),
            samples=dict(rts.samples),
            failures=failures,
            meta=meta,
        )


class GateDecision(BaseModel):
    """The gate's decision for one system: R_i over ``n`` items, and what to do with the system.

    ``r`` is NaN when it cannot be computed, with ``reason`` saying why (decision
    ``"insufficient data"``). ``n_failed`` counts the system's items missing an RTS or MCQ
    score (parse failures or failed calls). ``needs_human`` is True for every decision but
    ``"accept"``.
    """

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
        tolerance: the threshold r; a system whose R_i = corr(RTS, MCQ) is below it goes to
            human review.
        method: the correlation for R_i: "spearman" (default), "kendall" or "pearson".
        min_items: the fewest items with both scores a system needs for R_i to be computed
            (fewer: R_i is NaN, decision "insufficient data", flagged for humans).

    ``wrap(judge)`` returns an :class:`AgreementJudge` scoring every item in both forms;
    :meth:`gate` then decides per system.
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
        """A new judge scoring each item in RTS and MCQ form; ``judge`` is not changed.

        The children are ``judge`` with every prompt mapped to :func:`rts_form` and to
        :func:`mcq_form`, so both keep the judge's LM, config and any earlier prompt changes.
        A judge scoring by expected value (``ExpectedScore``) is refused with ConfigError: the
        RTS form reasons before its score, so the first scale number need not be the score.
        """
        if any(leaf.config.scoring == "expected" for leaf in judge.leaves()):
            raise ConfigError(
                "AgreementGate's RTS form asks for a reason before the score, but this judge scores by "
                "expected value over the first scale number it generates (ExpectedScore); expected a judge "
                "with scoring='parse' (place ExpectedScore in another pipeline)"
            )
        return AgreementJudge(
            {"rts": judge.map_prompts(rts_form), "mcq": judge.map_prompts(mcq_form)},
            tolerance=self.tolerance,
            method=self.method,
            min_items=self.min_items,
        )

    def gate(
        self, judgments: Sequence[Judgment], items: Sequence[Item], criterion: str | None = None
    ) -> GateReport:
        """Decide per system from judgments made by this gate's judge (``meta["rts"]``, ``meta["mcq"]``).

        ``items`` supplies each judgment's system (matched by item id; every item needs a
        ``system``). ``criterion`` picks the score when the judgments hold several (None: the
        only one). Returns the decisions and new judgments, with ``"needs_human"`` added to
        ``flags`` for every item of a flagged system and ``meta["agreement_gate"]`` holding the
        system's R_i and decision. The input judgments are not changed.
        """
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
        return GateReport(
            criterion=crit,
            tolerance=self.tolerance,
            method=self.method,
            min_items=self.min_items,
            decisions=tuple(decisions),
            judgments=tuple(flagged),
        )

    def _decide(self, systems: Sequence[str], rts: np.ndarray, mcq: np.ndarray) -> list[GateDecision]:
        out: list[GateDecision] = []
        for s in dict.fromkeys(systems):
            idx = [i for i, t in enumerate(systems) if t == s]
            m = measures.item_correlation(rts[idx], mcq[idx], self.method)
            if m.n < self.min_items:
                out.append(
                    GateDecision(
                        system=s,
                        r=math.nan,
                        n=m.n,
                        n_failed=m.n_failed,
                        decision="insufficient data",
                        reason=f"only {m.n} of system {s!r}'s items have both an RTS and an MCQ score; "
                        f"expected at least min_items={self.min_items}",
                    )
                )
            elif not m.ok:
                out.append(
                    GateDecision(
                        system=s,
                        r=math.nan,
                        n=m.n,
                        n_failed=m.n_failed,
                        decision="insufficient data",
                        reason=f"R_i is undefined for system {s!r}: {m.reason} (first input RTS, second MCQ)",
                    )
                )
            else:
                decision: Decision = "accept" if m.value >= self.tolerance else "needs_human"
                reason = (
                    None
                    if decision == "accept"
                    else (
                        f"R_i = {m.value:.3f} < tolerance {self.tolerance:g}: RTS and MCQ disagree on this "
                        "system"
                    )
                )
                out.append(
                    GateDecision(
                        system=s, r=m.value, n=m.n, n_failed=m.n_failed, decision=decision, reason=reason
                    )
                )
        return out

    def gate_released(
        self,
        criteria: str | Sequence[str] | None = None,
        *,
        p_method: str = "spearman",
        predict_method: str = "spearman",
        root: str | Path | None = None,
    ) -> dict[str, ReleasedGateReport]:
        """:func:`gate_released` with this gate's parameters."""
        return gate_released(criteria, gate=self, p_method=p_method, predict_method=predict_method, root=root)


def _only_criterion(judgments: Sequence[Judgment]) -> str:
    names: set[str] = set()
    for j in judgments:
        for key in ("rts", "mcq"):
            part = j.meta.get(key)
            if isinstance(part, dict):
                names.update(part)
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


# ---------------------------------------------------------------------------------------
# the released ChatGPT RTS/MCQ outputs (no LM calls)


class ReleasedGateReport(BaseModel):
    """The gate on one dimension of Shen et al.'s released ChatGPT outputs, and whether R_i predicts P_i.

    - ``gate``: the decisions per system (and the 1,200 gated judgments).
    - ``p``: P_i per system, the ``p_method`` correlation between ChatGPT's RTS scores and the
      mean expert scores over that system's items (NaN where undefined).
    - ``r_predicts_p``: the ``predict_method`` correlation across systems between R_i and
      P_i (a :class:`~mitigate.measures.Measure`; NaN with a reason when fewer than
      3 systems have both). Positive means systems where RTS and MCQ agree are the ones the
      judge scores more like humans, which is what the gate relies on.
    - ``p_accepted_mean`` / ``p_flagged_mean``: mean P_i of the accepted and of the flagged
      systems (NaN when a group is empty).
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
    """Judgments shaped like :class:`AgreementJudge` output, from the released ChatGPT RTS and MCQ answers.

    ``scores[criterion]`` is the RTS score; ``meta["rts"]`` / ``meta["mcq"]`` both forms'
    scores; a released answer the parser rejected is a :class:`~mitigate.judge.ParseFailure`
    (None score), never a default.
    """
    rts_run = load_released("chatgpt-rts", root=root)
    mcq_run = load_released("chatgpt-mcq", root=root)
    out: list[Judgment] = []
    for item in items:
        parts = []
        failures: list[ParseFailure] = []
        for form, run in (("rts", rts_run), ("mcq", mcq_run)):
            rj = run.get(item.id, criterion)
            parts.append(rj)
            if rj.score is None:
                failures.append(ParseFailure(criterion=criterion, raw=rj.raw, reason=f"{form}: {rj.error}"))
        r, m = parts
        out.append(
            Judgment(
                item_id=item.id,
                scores={criterion: r.score},
                raw=(r.raw, m.raw),
                failures=tuple(failures),
                meta={"rts": {criterion: r.score}, "mcq": {criterion: m.score}},
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
    """Run the agreement gate on Shen et al.'s released ChatGPT RTS and MCQ answers, per dimension.

    ``criteria`` are SummEval dimensions (None: all four). ``gate`` holds the tolerance,
    method and ``min_items`` (default :class:`AgreementGate()`). For each dimension, returns
    the decisions for the 12 systems plus how well R_i predicts P_i (see
    :class:`ReleasedGateReport`). Items and expert scores come from
    ``load_summeval("llm_summeval")``; ``root`` overrides the data folder. Missing files raise
    DataError naming them.
    """
    gate = gate or AgreementGate()
    if isinstance(criteria, str):
        wanted = [criteria]
    else:
        wanted = list(criteria) if criteria is not None else list(CRITERIA)
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
        accepted = [
            p[s] for s in order if not report.decision(s).needs_human and math.isfinite(p.get(s, math.nan))
        ]
        flagged = [
            p[s] for s in order if report.decision(s).needs_human and math.isfinite(p.get(s, math.nan))
        ]
        fails = {
            "rts": sum(1 for j in judgments if j.meta["rts"][c] is None),
            "mcq": sum(1 for j in judgments if j.meta["mcq"][c] is None),
        }
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
