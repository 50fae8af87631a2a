"""Highest-RS demonstrations as a selector (Ohi et al. 2024), and the RS ranking itself: RS = \\|LS* +
US*\\|, LS the log-likelihood of the output and US the judge's excess over the human score, both centred
and scaled (:func:`mitigate.measures.rs_scores`)."""

from __future__ import annotations

import math
import random
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, ClassVar, Literal, Self

from mitigate import measures
from mitigate.constraints import Interval, Options
from mitigate.data import Benchmark, Item
from mitigate.errors import CapabilityError, ConfigError, DataError
from mitigate.judge import FitContext, Judge, Judgment, LikelihoodScorer
from mitigate.registry import Tags, register
from mitigate.run import run
from mitigate.selectors._base import Selector, example_pool


def rank_by_rs(
    items: Sequence[Item], ls: Sequence[float | None], us: Sequence[float | None]
) -> list[tuple[Item, float]]:
    """Items with an RS = |LS* + US*| (Ohi et al. 2024), highest first (ties in order), with their RS."""
    items = list(items)
    if not (len(items) == len(ls) == len(us)):
        raise DataError(
            f"expected one LS and one US per item; got {len(items)} items, {len(ls)} LS, {len(us)} US"
        )
    rs = measures.rs_scores(ls, us)
    ranked = [(item, float(r)) for item, r in zip(items, rs, strict=True) if math.isfinite(r)]
    return sorted(ranked, key=lambda pair: -pair[1])


def judge_score(judgment: Judgment, criterion: str) -> float | None:
    """The judgment's score for ``criterion`` (or its only one); None for a failure."""
    scores = judgment.scores
    if criterion in scores:
        return scores[criterion]
    if len(scores) <= 1:
        return next(iter(scores.values()), None)
    raise ConfigError(
        f"the judge scored {sorted(scores)} for item {judgment.item_id!r}; expected a score for "
        f"{criterion!r} (name the criterion the judge scores with criterion=...)",
        item_id=judgment.item_id,
    )


def _no_us(scores: Sequence[float], humans: Iterable[float]) -> str:
    """Why no item has a US: too few items scored by both, or one side's scores all equal."""
    both = [(j, h) for j, h in zip(scores, humans, strict=True) if math.isfinite(j) and math.isfinite(h)]
    if len(both) < 2:
        return f"{len(both)} item{'' if len(both) == 1 else 's'} scored by both"
    if len({j for j, _ in both}) == 1:
        return f"the judge gave every one of the {len(both)} judged items the same score, {both[0][0]:g}"
    return f"the humans gave every one of the {len(both)} judged items the same score, {both[0][1]:g}"


def _counted(excluded: Mapping[str, str]) -> str:
    """``"; excluded: 3 the judge's answer failed to parse, ..."``: the reasons items were left out, counted
    (what comes before a reason's first colon), or "" for none."""
    counts = Counter(why.split(":")[0] for why in excluded.values())
    return "".join(f"; {n} excluded: {why}" for why, n in counts.most_common())


@register("selector", "highest-rs")
class HighestRS(Selector):
    """The ``k`` pool items with the highest RS = \\|LS* + US*\\| (Ohi et al. 2024).

    Parameters:
        likelihood: backend spec of the causal LM computing LS when ``fit`` runs the judge.
        task: the task's description conditioning LS (None: the judge prompt's task paragraph).
        pool_size: judge and score only this many labelled pool items, drawn with ``seed`` (None: all).
        seed: the random seed of that draw.
        scaling: how US normalises judge and human scores (:func:`mitigate.measures.unfairness_scores`).

    Fitted: ``rs_``, ``ls_`` and ``us_`` (item id -> value; items without an RS are never selected) and, when
    fitted with a judge, ``n_parse_failures_`` and ``excluded_`` (item id -> why it has no RS).
    """

    paper = "Ohi et al. 2024"

    declared_tags: ClassVar[Tags] = Tags(needs_fitting=True, calls_judge_while_fitting=True)

    likelihood: str = "local"
    task: str | None = None
    pool_size: int | None = None
    seed: int = 0
    scaling: Literal["range", "max-deviation"] = "range"
    rs_: dict[str, float] | None = None
    ls_: dict[str, float] | None = None
    us_: dict[str, float] | None = None
    n_parse_failures_: int | None = None
    excluded_: dict[str, str] | None = None
    n_excluded_: int | None = None
    parameter_constraints: ClassVar = {
        "likelihood": [str],
        "task": [str, None],
        "pool_size": [Interval(int, 1), None],
        "seed": [Interval(int)],
        "scaling": [Options(*measures.US_SCALINGS)],
    }

    @classmethod
    def examples(cls) -> list[Selector]:
        pool = example_pool()
        ls = {"ex-1": -20.0, "ex-2": -35.0, "ex-3": -12.0, "ex-4": -40.0}
        judge = {"ex-1": 4.0, "ex-2": 3.0, "ex-3": 5.0, "ex-4": 2.0}
        return [cls().fit(pool, criterion="score", ls=ls, judge_scores=judge)]

    async def learn(self, train: Benchmark | Sequence[Item], judge: Judge | None, ctx: FitContext) -> Self:
        """A fitted copy ranking the pool ``train`` by RS. With ``ctx.ls`` and ``ctx.judge_scores`` (item
        id -> value) no LM is called; otherwise ``judge`` (without demos) is run over the pool and LS
        computed with ``ctx.lm`` (whose spec the fitted copy records) or the ``likelihood`` spec."""
        if ctx.ls is not None and ctx.judge_scores is not None:
            return self._fit_scores(train, ctx.criterion, ctx.ls, ctx.judge_scores, judge)
        assert judge is not None  # the fit protocol's judge check (tags: calls_judge_while_fitting)
        state = self.fit_state(train, ctx.criterion, judge)
        items = self._draw(state["pool_"], train)
        crit: str = state["criterion_"]
        task = self.task if self.task is not None else next((lf.prompt.task for lf in judge.leaves()), "")
        scorer = LikelihoodScorer(ctx.lm) if ctx.lm is not None else LikelihoodScorer(self.likelihood)
        if not scorer.backend.scores_text():  # refused before any LM call
            raise CapabilityError(
                "highest-rs-demos scores each training output's likelihood from the token log-probabilities "
                "of a given text; expected a likelihood backend that returns them (local or "
                f"local:<path.gguf>), got likelihood={scorer.lm}, which cannot",
                backend=scorer.lm,
            )
        desc = "highest-rs: judging the pool"
        result = await run(judge, items, concurrency=ctx.concurrency, progress=ctx.progress, desc=desc)
        scores: list[float] = []
        excluded: dict[str, str] = {}
        n_parse = 0
        for item, j in zip(items, result.judgments, strict=True):
            value: float | None = None
            if j.error is not None:
                excluded[item.id] = f"the judge's LM call failed: {j.error}"
            else:
                value = judge_score(j, crit)
                if value is None:
                    n_parse += 1
                    why = "; ".join(f.reason for f in j.failures) or "no score"
                    excluded[item.id] = f"the judge's answer failed to parse: {why}"
            scores.append(math.nan if value is None else value)
        humans = measures.human_scores(items, crit)
        if not any(map(math.isfinite, measures.unfairness_scores(scores, humans, scaling=self.scaling))):
            raise ConfigError(  # before the likelihoods are computed: no item could get an RS
                f"highest-rs-demos ranks the training items by how far the judge is from the humans (US), "
                f"which needs at least 2 items scored by both and varied scores on each side; got "
                f"{_no_us(scores, humans)} (of the {len(items)} pool items{_counted(excluded)})",
                excluded=excluded,
            )
        ls_values = await scorer.score_many(items, task, progress=ctx.progress)
        for item, lsv in zip(items, ls_values, strict=True):
            if not math.isfinite(lsv) and item.id not in excluded:
                excluded[item.id] = "no likelihood score (LS is NaN)"
        fitted = self._ranked(state, items, [float(v) for v in ls_values], scores)
        for item in items:
            if item.id not in (fitted.rs_ or {}) and item.id not in excluded:
                excluded[item.id] = (
                    "no RS: LS* is undefined (fewer than 2 items have an LS, or all are equal)"
                )
        update: dict[str, Any] = {
            "n_parse_failures_": n_parse,
            "excluded_": excluded,
            "n_excluded_": len(excluded),
        }
        if ctx.lm is not None:
            update["likelihood"] = ctx.lm.spec
        return fitted.model_copy(update=update)

    def with_choice(self, k: int) -> Self:
        """As :meth:`Selector.with_choice`, keeping the chosen items' RS, LS and US only."""
        slim = super().with_choice(k)
        if slim is self:
            return self
        ids = {it.id for it in slim.chosen_ or ()}

        def only(values: dict[str, float] | None) -> dict[str, float] | None:
            return None if values is None else {i: v for i, v in values.items() if i in ids}

        return slim.model_copy(
            update={"rs_": only(self.rs_), "ls_": only(self.ls_), "us_": only(self.us_), "excluded_": None}
        )

    def _draw(self, kept: tuple[Item, ...], pool: Benchmark | Sequence[Item]) -> tuple[Item, ...]:
        """The labelled items to judge: all, or ``pool_size`` of them drawn with ``seed`` (in pool order)."""
        if self.pool_size is None or self.pool_size >= len(kept):
            if self.pool_size is not None and self.pool_size > len(kept):
                where = f"benchmark {pool.name!r}" if isinstance(pool, Benchmark) else "the pool"
                raise ConfigError(
                    f"The 'pool_size' parameter of {type(self).__name__} asks for {self.pool_size} items, "
                    f"but {where} has only {len(kept)} labelled items."
                )
            return kept
        keep = sorted(random.Random(self.seed).sample(range(len(kept)), self.pool_size))
        return tuple(kept[i] for i in keep)

    def _fit_scores(
        self,
        pool: Benchmark | Sequence[Item],
        criterion: str | None,
        ls: Mapping[str, float],
        judge_scores: Mapping[str, float | None],
        judge: Judge | None = None,
    ) -> Self:
        """The fitted copy from given LS and judge scores (no LM call)."""
        state = self.fit_state(pool, criterion, judge)
        items = self._draw(state["pool_"], pool)
        ls_list = [float(ls[it.id]) if ls.get(it.id) is not None else math.nan for it in items]
        js = [math.nan if (v := judge_scores.get(it.id)) is None else float(v) for it in items]
        return self._ranked(state, items, ls_list, js)

    def _ranked(
        self, state: dict[str, Any], items: tuple[Item, ...], ls: list[float], scores: list[float]
    ) -> Self:
        us = measures.unfairness_scores(
            scores, measures.human_scores(items, state["criterion_"]), scaling=self.scaling
        )
        ranked = rank_by_rs(items, ls, list(us))
        return self.model_copy(
            update={
                **state,
                "pool_": items,
                "n_pool_": len(items),
                "rs_": {it.id: rs for it, rs in ranked},
                "ls_": {it.id: v for it, v in zip(items, ls, strict=True) if math.isfinite(v)},
                "us_": {it.id: float(v) for it, v in zip(items, us, strict=True) if math.isfinite(v)},
            }
        )

    def _pick(self, k: int, candidates: list[Item], query: Item | None) -> list[Item]:
        rs = self.rs_ or {}
        ranked = sorted((it for it in candidates if it.id in rs), key=lambda it: -rs[it.id])
        if len(ranked) < k:
            n_pool = self.n_pool_ if self.n_pool_ is not None else len(self.pool_ or ())
            failures = "" if self.n_parse_failures_ is None else f"{self.n_parse_failures_} parse failures; "
            raise ConfigError(
                f"The 'k' parameter of HighestRS asks for {k} demos, but only {len(ranked)} of the pool's "
                f"{n_pool} items have an RS ({failures}LS and a judge score are needed, and US needs varied "
                f"scores{_counted(self.excluded_ or {})}).",
                excluded=dict(self.excluded_ or {}),
            )
        return ranked[:k]
