"""Panel reducers beyond mean, median and majority: Dawid-Skene and minority veto.

Both re-reduce the members' answers a panel judgment carries (``meta["panel"]["members"]``), so they follow a
panel in a pipeline: ``panel(backends=[...]) | dawid-skene``. :class:`DawidSkene` (Dawid and Skene 1979)
models each member by its confusion matrix, fitted supervised from gold labels or by EM from the votes alone
(:mod:`mitigate.measures`); :class:`MinorityVeto` (Jain et al. 2025) lets named members veto a pass, since
judges readily accept invalid outputs.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any, ClassVar, Literal, Self

from mitigate.constraints import Interval, IsInstance, Options, Satisfies
from mitigate.data import Benchmark, Item
from mitigate.errors import ConfigError, DataError
from mitigate.judge import CompositeJudge, FitContext, Judge, Judgment
from mitigate.measures import (
    DawidSkeneModel,
    Kind,
    dawid_skene_posterior,
    fit_dawid_skene,
    panel_votes,
    score_class,
)
from mitigate.parse import Verdict
from mitigate.registry import Tags, register
from mitigate.run import run
from mitigate.strategies._base import Mitigation
from mitigate.strategies._panel import PanelJudge

VETOED = "vetoed"
"""Flag on a judgment whose pass a minority of the panel vetoed."""

_AS_VERDICT: dict[str, Verdict] = {"A": "first", "B": "second", "tie": "tie"}


def _criterion(judgment: Judgment, criterion: str | None) -> str | None:
    if criterion is not None:
        return criterion
    return next(iter(judgment.scores)) if len(judgment.scores) == 1 else None


class DawidSkeneJudge(CompositeJudge):
    """The inner judge (a panel, or one judge) with its members' answers reduced by a fitted Dawid-Skene
    model.

    A verdict is the most probable class (an exact tie between the best two is "tie"); a score the posterior
    mean of the classes. ``meta["dawid_skene"]`` holds the posterior and the answer before.
    """

    kind = "dawid-skene"
    requests_are_children = True

    def __init__(self, children: dict[str, Judge], *, model: DawidSkeneModel, criterion: str | None) -> None:
        super().__init__(children)
        self.model, self.criterion = model, criterion

    def params(self) -> dict[str, Any]:
        """The fitted model and the criterion read."""
        return {"model": self.model.model_dump(mode="json"), "criterion": self.criterion}

    def score_bounds(self) -> dict[str, tuple[float, float]] | None:
        """The inner judge's (a posterior mean of whole-number classes stays within them)."""
        return self.children["inner"].score_bounds()

    async def judge(self, item: Item) -> Judgment:
        """The inner judgment, re-reduced."""
        j = await self.children["inner"].judge(item)
        return reduce_dawid_skene(j, self.model, self.criterion)


def reduce_dawid_skene(j: Judgment, model: DawidSkeneModel, criterion: str | None = None) -> Judgment:
    """``j`` with its members' answers reduced by ``model`` (see :class:`DawidSkeneJudge`)."""
    crit = _criterion(j, criterion) if model.kind == "score" else None
    if model.kind == "score" and crit is None:
        raise ConfigError(
            f"Dawid-Skene needs the criterion to read; judgment {j.item_id!r} scores "
            f"{sorted(j.scores)}: expected criterion=... on dawid-skene"
        )
    names, rows = panel_votes([j], model.kind, crit)
    if set(names) != set(model.members):
        raise ConfigError(
            f"the Dawid-Skene model was fitted on the members {list(model.members)}; this "
            f"judge's members are {names}: expected the panel it was fitted on"
        )
    votes = dict(zip(names, rows[0], strict=True))
    posterior = dawid_skene_posterior(model, {m: votes.get(m) for m in model.members})
    before: Any = j.verdict if model.kind == "verdict" else j.scores.get(crit) if crit is not None else None
    meta = {
        **j.meta,
        "dawid_skene": {"posterior": posterior, "before": before, "supervised": model.supervised},
    }
    if model.kind == "verdict":
        verdict: Verdict | None = None
        if posterior is not None:
            ranked = sorted(posterior.items(), key=lambda kv: -kv[1])
            tied = len(ranked) > 1 and math.isclose(ranked[0][1], ranked[1][1], rel_tol=1e-12, abs_tol=1e-15)
            verdict = "tie" if tied else _AS_VERDICT[ranked[0][0]]
        return j.model_copy(update={"verdict": verdict, "meta": meta})
    value = None if posterior is None else float(sum(float(k) * p for k, p in posterior.items()))
    assert crit is not None
    return j.model_copy(update={"scores": {**j.scores, crit: value}, "meta": meta})


_SUPERVISED = Options(True, False, "auto")


@register("mitigation", "dawid-skene")
class DawidSkene(Mitigation):
    """Reduce a panel's votes by each member's confusion matrix (Dawid and Skene 1979), fitted on a training
    split.

    Parameters:
        supervised: True fits the matrices from the gold labels (the preference, or the human score as the
            nearest whole number); False by EM from the answers alone; "auto" supervised when the split has
            labels.
        smoothing: pseudo-counts added to every confusion cell.
        criterion: the criterion whose labels and scores are read (None: the only one).
        max_iter: EM iterations at most (unsupervised).

    ``fit(train, judge)`` runs ``judge`` over ``train``; a judge that is no panel is a panel of one member,
    "judge".
    """

    paper = "Dawid and Skene 1979"

    declared_tags: ClassVar[Tags] = Tags(needs_fitting=True, calls_judge_while_fitting=True, needs_judge=True)
    supervised: bool | Literal["auto"] = "auto"
    smoothing: float = 0.5
    criterion: str | None = None
    max_iter: int = 200
    model_: DawidSkeneModel | None = None
    parameter_constraints: ClassVar = {
        "supervised": [_SUPERVISED],
        "smoothing": [Interval(float, 0)],
        "criterion": [IsInstance(str), None],
        "max_iter": [Interval(int, 1)],
        "model_": [IsInstance(DawidSkeneModel, dict, noun="a DawidSkeneModel"), None],
    }

    @classmethod
    def examples(cls) -> list[Mitigation]:
        """Unfitted (auto), and fitted on a made-up two-member pairwise panel."""
        model = DawidSkeneModel(
            kind="verdict",
            classes=("A", "B"),
            responses=("A", "B", "tie"),
            members=("m1", "m2"),
            priors=(0.5, 0.5),
            confusion=(((0.9, 0.05, 0.05), (0.2, 0.7, 0.1)), ((0.6, 0.3, 0.1), (0.3, 0.6, 0.1))),
            supervised=True,
        )
        return [cls(), cls(supervised=False, smoothing=1.0, model_=model)]

    @property
    def is_fitted(self) -> bool:
        """True once ``model_`` is fitted."""
        return self.model_ is not None

    def wrap(self, judge: Judge) -> Judge:
        """``judge`` with its (members') answers reduced by the fitted model."""
        if self.model_ is None:
            raise ConfigError(
                "DawidSkene is not fitted; expected `m = m.fit(train, panel_judge)` first (it "
                "learns each member's confusion matrix from the panel's answers on a "
                "training split)"
            )
        return DawidSkeneJudge({"inner": judge}, model=self.model_, criterion=self.criterion)

    async def learn(self, train: Benchmark, judge: Judge, ctx: FitContext) -> Self:
        """A fitted copy: ``judge`` run over ``train``, the model fitted on its members' answers (and the
        labels)."""
        result = await run(
            judge, train.items, concurrency=ctx.concurrency, progress=ctx.progress, desc="fitting Dawid-Skene"
        )
        return self.fit_judgments(result.judgments, train, criterion=ctx.criterion)

    def fit_judgments(
        self, judgments: Sequence[Judgment], train: Benchmark, *, criterion: str | None = None
    ) -> Self:
        """A fitted copy from judgments already made on ``train``'s items (matched by id)."""
        by_id = {it.id: it for it in train.items}
        rows = [(j, by_id.get(j.item_id)) for j in judgments]
        lost = [j.item_id for j, it in rows if it is None]
        if lost:
            raise DataError(
                f"expected a training item for every judgment; {lost[0]!r} has none", item_id=lost[0]
            )
        kind: Kind = "verdict" if train.pairwise else "score"
        crit = criterion or self.criterion or (train.criteria[0] if len(train.criteria) == 1 else None)
        if crit is None and kind == "score":
            crit = next((c for j, _ in rows if (c := _criterion(j, None)) is not None), None)
        members, votes = panel_votes([j for j, _ in rows], kind, crit)
        gold = [_gold(it, kind, crit) for _, it in rows]  # type: ignore[arg-type]
        has_gold = any(g is not None for g in gold)
        supervised = has_gold if self.supervised == "auto" else bool(self.supervised)
        if supervised and not has_gold:
            raise ConfigError(
                f"DawidSkene(supervised=True) needs gold labels on the training items ({crit!r}); "
                "got none: expected human scores or preferences, or supervised=False"
            )
        gold_used = gold if supervised else None
        model = fit_dawid_skene(
            votes, members, kind=kind, gold=gold_used, smoothing=self.smoothing, max_iter=self.max_iter
        )
        return self.model_copy(
            update={"model_": model, "criterion": self.criterion if kind == "verdict" else crit}
        )


def _gold(item: Item, kind: Kind, criterion: str | None) -> str | None:
    if kind == "verdict":
        pref = (
            item.preference.get(criterion)
            if criterion is not None
            else (next(iter(item.preference.values())) if len(item.preference) == 1 else None)
        )
        return pref if pref in ("A", "B", "tie") else None
    value = item.human.get(criterion) if criterion is not None else None
    return None if value is None or not math.isfinite(value) else score_class(value)


def _panels_in(judge: Judge) -> list[PanelJudge]:
    if isinstance(judge, PanelJudge):
        return [judge]
    found: list[PanelJudge] = []
    for child in getattr(judge, "children", {}).values():
        found += _panels_in(child)
    inner = getattr(judge, "inner", None)
    if isinstance(inner, Judge):
        found += _panels_in(inner)
    return found


class MinorityVetoJudge(CompositeJudge):
    """The inner panel's judgment, with its pass vetoed when at least ``min_vetoes`` of the named members fail
    the item.

    A score at or above ``threshold`` vetoed becomes the highest score among the vetoers who failed it; a
    decisive verdict vetoed (vetoers preferring the other text) becomes a tie. A vetoed judgment is flagged
    ``vetoed``, with ``meta["minority_veto"]``.
    """

    kind = "minority-veto"
    requests_are_children = True

    def __init__(
        self,
        children: dict[str, Judge],
        *,
        vetoers: tuple[str, ...],
        min_vetoes: int,
        threshold: float | None,
        criterion: str | None,
    ) -> None:
        super().__init__(children)
        self.vetoers, self.min_vetoes = vetoers, min_vetoes
        self.threshold, self.criterion = threshold, criterion

    def params(self) -> dict[str, Any]:
        """Who may veto, how many must, the pass threshold and the criterion."""
        return {
            "vetoers": list(self.vetoers),
            "min_vetoes": self.min_vetoes,
            "threshold": self.threshold,
            "criterion": self.criterion,
        }

    async def judge(self, item: Item) -> Judgment:
        """The panel's judgment, vetoed or not."""
        j = await self.children["inner"].judge(item)
        return veto(j, self.vetoers, self.min_vetoes, self.threshold, self.criterion)


def veto(
    j: Judgment,
    vetoers: tuple[str, ...],
    min_vetoes: int,
    threshold: float | None,
    criterion: str | None = None,
) -> Judgment:
    """``j`` with the minority veto applied (see :class:`MinorityVetoJudge`)."""
    panel = j.meta.get("panel")
    members = panel.get("members") if isinstance(panel, dict) else None
    if not isinstance(members, dict):
        raise ConfigError(
            f"minority-veto reads a panel's members; judgment {j.item_id!r} has none: expected "
            "a panel before it (panel(backends=[...]) | minority-veto(...))"
        )
    if j.verdict is not None or "verdict" in members:
        votes = members.get("verdict") or {}
        named = _vetoers(vetoers, votes)
        if j.verdict not in ("first", "second"):
            return j
        other = "second" if j.verdict == "first" else "first"
        against = [m for m in named if votes.get(m) == other]
        if len(against) < min_vetoes:
            return j
        return _vetoed(j, {"verdict": "tie"}, {"vetoed_by": against, "before": j.verdict})
    crit = _criterion(j, criterion)
    if crit is None or not isinstance(members.get(crit), dict):
        raise ConfigError(
            f"minority-veto needs the criterion to read; judgment {j.item_id!r} scores "
            f"{sorted(j.scores)}: expected criterion=..."
        )
    if threshold is None:
        raise ConfigError(
            "minority-veto on scores needs the pass threshold; expected threshold=<score a "
            "pass reaches> (a verdict panel needs none)"
        )
    scores = members[crit]
    named = _vetoers(vetoers, scores)
    value = j.scores.get(crit)
    if value is None or value < threshold:
        return j
    fails = [
        (m, float(scores[m])) for m in named if scores.get(m) is not None and float(scores[m]) < threshold
    ]
    if len(fails) < min_vetoes:
        return j
    new = {"scores": {**j.scores, crit: max(v for _, v in fails)}}
    return _vetoed(j, new, {"vetoed_by": [m for m, _ in fails], "before": value})


def _vetoed(j: Judgment, update: dict[str, Any], info: dict[str, Any]) -> Judgment:
    flags = tuple(dict.fromkeys((*j.flags, VETOED)))
    return j.model_copy(update={**update, "flags": flags, "meta": {**j.meta, "minority_veto": info}})


def _vetoers(vetoers: tuple[str, ...], votes: dict[str, Any]) -> list[str]:
    unknown = [v for v in vetoers if v not in votes]
    if unknown:
        raise ConfigError(
            f"minority-veto names vetoers {unknown} that are not members of the panel; "
            f"expected some of {sorted(votes)}"
        )
    return list(vetoers) if vetoers else list(votes)


_NAMES = Satisfies(
    lambda v: (
        isinstance(v, (tuple, list))
        and all(isinstance(s, str) and s.strip() for s in v)
        and len(set(v)) == len(v)
    ),
    "a tuple of distinct member names",
)


@register("mitigation", "minority-veto")
class MinorityVeto(Mitigation):
    """Let a minority of a panel veto a pass (Jain et al. 2025): judges accept invalid outputs too readily.

    Parameters:
        vetoers: the panel members (by name: "base", or a backend spec) whose fail counts as a veto; empty:
            every member.
        min_vetoes: how many vetoers must fail the item to veto the panel's pass.
        threshold: for a score panel, the lowest score that is a pass.
        criterion: the criterion read (None: the only one).

    It follows a panel (:class:`MinorityVetoJudge`); on a judge with no panel it is refused.
    """

    paper = "Jain et al. 2025"

    vetoers: tuple[str, ...] = ()
    min_vetoes: int = 1
    threshold: float | None = None
    criterion: str | None = None
    parameter_constraints: ClassVar = {
        "vetoers": [_NAMES],
        "min_vetoes": [Interval(int, 1)],
        "threshold": [Interval(float), None],
        "criterion": [IsInstance(str), None],
    }

    @classmethod
    def examples(cls) -> list[Mitigation]:
        """Every member may veto a verdict; one named member vetoes a score below 3."""
        return [cls(), cls(vetoers=("base",), threshold=3.0, min_vetoes=1)]

    def wrap(self, judge: Judge) -> Judge:
        """``judge`` (which must hold a panel) with the veto applied to each judgment."""
        if not _panels_in(judge):
            raise ConfigError(
                "minority-veto re-reduces a panel's votes; expected a panel before it "
                "(panel(backends=[...]) | minority-veto(...)); got a judge with no panel"
            )
        if self.min_vetoes > 1 and self.vetoers and self.min_vetoes > len(self.vetoers):
            raise ConfigError(
                f"minority-veto needs {self.min_vetoes} vetoes from {len(self.vetoers)} "
                f"vetoers {list(self.vetoers)}: expected min_vetoes <= the number of vetoers"
            )
        return MinorityVetoJudge(
            {"inner": judge},
            vetoers=self.vetoers,
            min_vetoes=self.min_vetoes,
            threshold=self.threshold,
            criterion=self.criterion,
        )
