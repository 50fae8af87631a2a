"""Panels of judges ("juries"; Verga et al. 2024) and reducers of their votes.

:class:`Panel` sends the wrapped judge's prompts to other backends and :class:`PanelJudge` reduces the
members' answers; after a panel, :class:`DawidSkene` (Dawid and Skene 1979) reduces the votes by each member's
confusion matrix, and :class:`MinorityVeto` (Jain et al. 2025) lets named members veto a pass.
"""

from __future__ import annotations

import asyncio
import math
import statistics
import warnings
from collections import Counter
from collections.abc import Sequence
from functools import partial
from typing import Any, ClassVar, Literal, Self

from mitigate.constraints import Interval, IsInstance, Options, Satisfies
from mitigate.data import Benchmark, Item
from mitigate.errors import ConfigError, DataError, UnverifiedFitWarning
from mitigate.judge import CompositeJudge, FitContext, Judge, Judgment, PromptJudge, merge_judgments
from mitigate.lm import LM, get, wrap
from mitigate.measures import (
    DawidSkeneModel,
    Kind,
    dawid_skene_posterior,
    fit_dawid_skene,
    gold_check,
    panel_votes,
    score_class,
)
from mitigate.parse import Verdict
from mitigate.registry import Tags, register
from mitigate.run import run
from mitigate.selectors import GOLD_VERDICT
from mitigate.strategies._base import AdjustingJudge, Mitigation

PanelReducer = Literal["mean", "median", "majority"]
FAILED_FLAG = "panel_member_failed"
"""Flag on a panel judgment in which at least one member gave no answer."""
NO_MAJORITY = "no_majority"
"""Flag on a majority-reduced judgment where no value had more than half of the members."""

_VERDICT_VALUE: dict[str, float] = {"first": 1.0, "tie": 0.5, "second": 0.0}


def reduce_panel(
    values: Sequence[float | None], reducer: PanelReducer, quorum: int | None = None
) -> float | None:
    """The panel's value from one value per member (None for a failed member), or None when it has none.
    ``majority`` needs a value given by more than half of all members; ``mean``/``median`` at least
    ``quorum`` answers (None: every member)."""
    n = len(values)
    if n == 0:
        raise ConfigError("expected at least one panel member; got none")
    answered = [v for v in values if v is not None]
    if reducer == "majority":
        if not answered:
            return None
        value, count = Counter(answered).most_common(1)[0]
        return float(value) if count * 2 > n else None
    need = n if quorum is None else quorum
    if len(answered) < need or not answered:
        return None
    return float(statistics.fmean(answered)) if reducer == "mean" else float(statistics.median(answered))


def _as_verdict(value: float | None) -> Verdict | None:
    return None if value is None else "first" if value > 0.5 else "second" if value < 0.5 else "tie"


class PanelJudge(CompositeJudge):
    """Asks every member judge (the children, by name) concurrently and reduces their answers.

    A verdict counts first = 1, tie = 0.5, second = 0; ``mean``/``median`` need ``quorum`` answers (default:
    all), ``majority`` more than half of *all* members (else the flag ``no_majority``). A member that fails or
    raises is flagged ``panel_member_failed`` and named in ``meta["panel"]``.
    """

    kind = "panel"
    requests_are_children = True

    def __init__(
        self, children: dict[str, Judge], *, reducer: PanelReducer = "median", quorum: int | None = None
    ) -> None:
        super().__init__(children)
        if reducer not in ("mean", "median", "majority"):
            raise ConfigError(f"expected a panel reducer 'mean', 'median' or 'majority'; got {reducer!r}")
        if quorum is not None and not 1 <= quorum <= len(children):
            raise ConfigError(f"expected a quorum between 1 and the {len(children)} members; got {quorum}")
        self.reducer: PanelReducer = reducer
        self.quorum = quorum  # the fewest answering members mean/median need (None: all)

    def params(self) -> dict[str, Any]:
        return {"reducer": self.reducer, "quorum": self.quorum}

    async def judge(self, item: Item) -> Judgment:
        names = list(self.children)
        results = await asyncio.gather(*(self.children[n].judge(item) for n in names), return_exceptions=True)
        parts: list[Judgment] = []
        errors: dict[str, str] = {}
        for name, r in zip(names, results, strict=True):
            if isinstance(r, BaseException):
                if not isinstance(r, Exception):
                    raise r
                errors[name] = f"{type(r).__name__}: {r}"
                parts.append(Judgment(item_id=item.id, error=errors[name]))
            else:
                parts.append(r)
                if r.error:
                    errors[name] = r.error
        pairwise = any(p.verdict is not None for p in parts)
        criteria = list(dict.fromkeys(c for p in parts for c in p.scores))
        failed: set[str] = set(errors)
        scores: dict[str, float | None] = {}
        samples: dict[str, tuple[float | None, ...]] = {}
        members: dict[str, Any] = {}
        for c in criteria:
            values = [p.scores.get(c) if p.error is None else None for p in parts]
            failed |= {n for n, v in zip(names, values, strict=True) if v is None}
            scores[c] = reduce_panel(values, self.reducer, self.quorum)
            samples[c] = tuple(values)
            members[c] = dict(zip(names, values, strict=True))
        verdict: Verdict | None = None
        if pairwise:
            votes = [_VERDICT_VALUE[p.verdict] if p.verdict and p.error is None else None for p in parts]
            failed |= {n for n, v in zip(names, votes, strict=True) if v is None}
            verdict = _as_verdict(reduce_panel(votes, self.reducer, self.quorum))
            members["verdict"] = {n: p.verdict for n, p in zip(names, parts, strict=True)}
        flags = [f for p in parts for f in p.flags]
        if failed:
            flags.append(FAILED_FLAG)
        unanswered = any(v is None for v in scores.values()) or (pairwise and verdict is None)
        if self.reducer == "majority" and unanswered and len(failed) < len(names):
            flags.append(NO_MAJORITY)
        panel: dict[str, Any] = {"reducer": self.reducer, "quorum": self.quorum, "members": members}
        panel |= {"failed": [n for n in names if n in failed], "errors": errors, "n_members": len(names)}
        meta = {"panel": panel}
        flat = tuple(dict.fromkeys(flags))
        merged = merge_judgments(
            item.id, parts, scores=scores, samples=samples, verdict=verdict, flags=flat, meta=meta
        )
        # failed members are reported in meta, not as a failed call
        return merged.model_copy(update={"error": None}) if len(errors) < len(names) else merged


def _distinct_names(v: Any) -> bool:
    return (
        isinstance(v, (tuple, list))
        and all(isinstance(s, str) and s.strip() for s in v)
        and len(set(v)) == len(v)
    )


_SPECS = Satisfies(
    lambda v: _distinct_names(v) and len(v) > 0, "a non-empty tuple of distinct backend spec strings"
)


def _on_lm(lm: LM, leaf: PromptJudge) -> PromptJudge:  # a panel member: ``leaf`` asking ``lm``
    return PromptJudge(leaf.prompt, lm, leaf.config)


@register("mitigation", "panel")
class Panel(Mitigation):
    """A panel of the wrapped judge's prompts sent to several backends (Verga et al. 2024).

    Parameters:
        backends: backend specs; each member (named by its spec) asks the wrapped judge's prompts there.
        include_base: also keep the wrapped judge itself as a member (named "base").
        reducer: "mean", "median" or "majority" (strict majority of all members).
        quorum: the fewest answering members ``mean``/``median`` need (None: all of them).
    """

    paper = "Verga et al. 2024"

    backends: tuple[str, ...]
    include_base: bool = True
    reducer: PanelReducer = "median"
    quorum: int | None = None
    parameter_constraints: ClassVar = {
        "backends": [_SPECS],
        "include_base": [bool],
        "reducer": [Options("mean", "median", "majority")],
        "quorum": [Interval(int, 1), None],
    }

    @classmethod
    def examples(cls) -> list[Mitigation]:
        return [
            cls(backends=("local",)),
            cls(backends=("local", "local:other.gguf"), include_base=False, reducer="majority", quorum=1),
        ]

    def wrap(self, judge: Judge) -> Judge:
        """A :class:`PanelJudge` of the judge (when ``include_base``) and its copies on each backend."""
        members: dict[str, Judge] = {"base": judge} if self.include_base else {}
        for spec in self.backends:
            lm = wrap(get(spec))
            members[spec] = judge.map_leaves(partial(_on_lm, lm))
        if self.quorum is not None and self.quorum > len(members):
            raise ConfigError(f"The panel's quorum {self.quorum} exceeds its {len(members)} members")
        return PanelJudge(members, reducer=self.reducer, quorum=self.quorum)


# --------------------------------------------------------------------------- Dawid-Skene, minority veto

VETOED = "vetoed"
"""Flag on a judgment whose pass a minority of the panel vetoed."""


def _criterion(judgment: Judgment, criterion: str | None) -> str | None:
    if criterion is not None:
        return criterion
    return next(iter(judgment.scores)) if len(judgment.scores) == 1 else None


class DawidSkeneJudge(AdjustingJudge):
    """The inner judge (a panel, or one judge) with its members' answers reduced by a fitted Dawid-Skene
    model. A verdict is the most probable class (an exact tie between the best two is "tie"); a score the
    posterior mean of the classes. ``meta["dawid_skene"]`` holds the posterior and the answer before."""

    kind = "dawid-skene"
    model: DawidSkeneModel
    criterion: str | None

    def params(self) -> dict[str, Any]:
        return {"model": self.model.model_dump(mode="json"), "criterion": self.criterion}

    def score_bounds(self) -> dict[str, tuple[float, float]] | None:
        return self.children["inner"].score_bounds()

    def adjust(self, judgment: Judgment, item: Item) -> Judgment:
        return reduce_dawid_skene(judgment, self.model, self.criterion)


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
    reduced = {"posterior": posterior, "before": before, "supervised": model.supervised}
    meta = {**j.meta, "dawid_skene": reduced}
    if model.kind == "verdict":
        verdict: Verdict | None = None
        if posterior is not None:
            ranked = sorted(posterior.items(), key=lambda kv: -kv[1])
            tied = len(ranked) > 1 and math.isclose(ranked[0][1], ranked[1][1], rel_tol=1e-12, abs_tol=1e-15)
            verdict = "tie" if tied else GOLD_VERDICT[ranked[0][0]]
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
        supervised: True fits the matrices from the gold labels (the preference, or the rounded human score);
            False by EM from the answers alone; "auto": supervised when the split has labels.
        smoothing: pseudo-counts added to every confusion cell.
        criterion: the criterion whose labels and scores are read (None: the only one).
        max_iter: EM iterations at most.

    A judge that is no panel counts as a panel of one member, "judge".
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
        return self.model_ is not None

    def wrap(self, judge: Judge) -> Judge:
        """``judge`` with its (members') answers reduced by the fitted model."""
        if self.model_ is None:
            raise ConfigError(
                "DawidSkene is not fitted; expected `m = m.fit(train, panel_judge)` first (it learns each "
                "member's confusion matrix from the panel's answers on a training split)"
            )
        return DawidSkeneJudge(judge, model=self.model_, criterion=self.criterion)

    async def learn(self, train: Benchmark, judge: Judge, ctx: FitContext) -> Self:
        """A fitted copy: ``judge`` run over ``train``, the model fitted on its members' answers."""
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
        if not supervised:
            if has_gold:
                model = model.model_copy(update={"checks": (*model.checks, gold_check(model, votes, gold))})
            for check in model.checks:
                warnings.warn(f"Dawid-Skene: {check}", UnverifiedFitWarning, stacklevel=2)
        fitted_criterion = self.criterion if kind == "verdict" else crit
        return self.model_copy(update={"model_": model, "criterion": fitted_criterion})


def _gold(item: Item, kind: Kind, criterion: str | None) -> str | None:
    if kind == "verdict":
        prefs = item.preference
        only = next(iter(prefs.values())) if len(prefs) == 1 else None
        pref = prefs.get(criterion) if criterion is not None else only
        return pref if pref in ("A", "B", "tie") else None
    value = item.human.get(criterion) if criterion is not None else None
    return None if value is None or not math.isfinite(value) else score_class(value)


def _panels_in(judge: Judge) -> list[PanelJudge]:
    if isinstance(judge, PanelJudge):
        return [judge]
    below = [*getattr(judge, "children", {}).values(), getattr(judge, "inner", None)]
    return [panel for child in below if isinstance(child, Judge) for panel in _panels_in(child)]


class MinorityVetoJudge(AdjustingJudge):
    """The inner panel's judgment, with its pass vetoed when at least ``min_vetoes`` of the named members
    fail the item. A score at or above ``threshold`` vetoed becomes the highest score among the vetoers who
    failed it; a decisive verdict vetoed (vetoers preferring the other text) becomes a tie. A vetoed
    judgment is flagged ``vetoed``, with ``meta["minority_veto"]``."""

    kind = "minority-veto"
    vetoers: tuple[str, ...]
    min_vetoes: int
    threshold: float | None
    criterion: str | None

    def adjust(self, judgment: Judgment, item: Item) -> Judgment:
        return veto(judgment, self.vetoers, self.min_vetoes, self.threshold, self.criterion)


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


_NAMES = Satisfies(_distinct_names, "a tuple of distinct member names")


@register("mitigation", "minority-veto")
class MinorityVeto(Mitigation):
    """Let a minority of a panel veto a pass (Jain et al. 2025): judges accept invalid outputs too readily.

    Parameters:
        vetoers: the members (by name: "base", or a backend spec) whose fail is a veto (empty: all).
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
        return MinorityVetoJudge(judge, **self.model_dump())
