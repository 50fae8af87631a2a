"""The machinery every search engine shares: the engine protocol, the budgeted judge, candidates, evaluation
on dev, and the report.

The budget counts **distinct** LM requests, answered by the cache or the backend alike (:func:`instrument`),
so a rerun with a warm cache retraces the same trials; a candidate whose worst-case cost exceeds what is left
is not started; the final evaluation on test is outside the budget.
"""

from __future__ import annotations

import json
import random as _random
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, ClassVar, NamedTuple, Self

from tqdm.auto import tqdm

from mitigate.constraints import Interval, Satisfies, check_param
from mitigate.data import Benchmark, Item, Split, split_items
from mitigate.errors import ConfigError
from mitigate.judge import FitContext, Judge, Judgment, LikelihoodScorer, PromptJudge
from mitigate.lm import LM, BudgetedLM, CachedLM, CallBudget, LMCache
from mitigate.prompt import Demo
from mitigate.registry import Component, Tags
from mitigate.run import run
from mitigate.search._objective import Objective
from mitigate.search._result import SearchResult, Trial, rank_key
from mitigate.selectors import Selector
from mitigate.strategies import Demos, Mitigation, PerturbedGuidelines, Pipeline, from_spec

MAX_MISSES = 200
"""Draws in a row that give nothing new before a sampling engine stops ("exhausted")."""


def instrument(
    judge: Judge, budget: CallBudget, cache: bool | str | Path | LMCache = True
) -> tuple[Judge, list[LMCache]]:
    """``judge`` with every leaf LM wrapped as ``BudgetedLM(CachedLM(lm))`` (or ``BudgetedLM(lm)`` without
    cache), and the caches this opened (to close). A leaf LM that is already a :class:`CachedLM` keeps its
    cache, with the budget outside it."""
    if cache is True or isinstance(cache, str | Path):
        shared: LMCache | None = LMCache() if cache is True else LMCache(cache)
    elif cache is False or isinstance(cache, LMCache):
        shared = None if cache is False else cache
    else:
        raise ConfigError(
            f"expected cache to be True, False, a path or an LMCache; got {type(cache).__name__}"
        )
    opened = [shared] if shared is not None and shared is not cache else []
    wrapped: dict[int, LM] = {}

    def wrap(lm: LM) -> LM:
        if id(lm) not in wrapped:
            if isinstance(lm, CachedLM):
                wrapped[id(lm)] = BudgetedLM(lm, budget)
            elif shared is not None:
                wrapped[id(lm)] = BudgetedLM(CachedLM(lm, shared), budget)
            else:  # no cache: a repeated request is a new backend call, so every call counts
                wrapped[id(lm)] = BudgetedLM(lm, budget, dedupe=False)
        return wrapped[id(lm)]

    return judge.map_leaves(lambda leaf: PromptJudge(leaf.prompt, wrap(leaf.lm), leaf.config)), opened


class Candidate:
    """A candidate pipeline before evaluation; ``key`` identifies it (a demo set in any order)."""

    def __init__(
        self,
        label: str,
        mitigation: Mitigation | None,
        selector: str | None = None,
        demo_ids: Sequence[str] = (),
        meta: dict[str, Any] | None = None,
    ) -> None:
        self.label, self.mitigation, self.selector = label, mitigation, selector
        self.demo_ids, self.meta = tuple(demo_ids), meta or {}
        self.spec = spec = mitigation.spec() if mitigation is not None else Pipeline().spec()
        if isinstance(mitigation, Demos) and mitigation.demos:
            # a set already tried in another order is not tried again
            rest = mitigation.model_dump(mode="json", exclude={"demos"})
            self.key = json.dumps([type(mitigation).__name__, sorted(self.demo_ids), rest], sort_keys=True)
        else:
            self.key = json.dumps(spec, sort_keys=True, default=str)


def with_demos(template: Demos | None, demos: Sequence[Demo]) -> Mitigation:
    """``Demos(demos=demos)`` shown plain, or the perturbation template's display holding ``demos``."""
    if template is None:
        return Demos(demos=tuple(demos), k=len(demos))
    if not isinstance(template, Demos) or template.display == "plain":
        raise ConfigError(
            f"expected perturbation templates to be Demos with a guideline display (e.g. "
            f"perturbed-demos) or None; got {template!r}"[:300]
        )
    fitted = {name: None for name in type(template).model_fields if name.endswith("_")}
    params = {**dict(template), **fitted, "selector": None, "demos": tuple(demos), "k": len(demos)}
    return Demos.model_validate(params)


class Session:
    """What every engine evaluates candidates through: judge, budget, splits, objective and trials."""

    def __init__(
        self,
        judge: Judge,
        split: Split,
        criterion: str,
        objective: Objective,
        *,
        budget: int,
        probe: PerturbedGuidelines | None,
        ls: Mapping[str, float] | None,
        cache: bool | str | Path | LMCache,
        concurrency: int,
        progress: bool,
        n_boot: int,
        seed: int,
        engine: str,
    ) -> None:
        self.budget = CallBudget(budget)
        self.budget_total = budget
        self.judge, self._opened = instrument(judge, self.budget, cache)
        self.split, self.criterion, self.objective = split, criterion, objective
        self.probe, self.ls, self.engine = probe, ls, engine
        self.concurrency, self.progress, self.n_boot, self.seed = concurrency, progress, n_boot, seed
        self.trials: list[Trial] = []
        self.judgments: dict[int, tuple[Judgment, ...]] = {}
        self.seen: dict[str, int] = {}
        leaves = judge.leaves()
        if not leaves:
            raise ConfigError(f"search needs a judge with at least one prompt; got {type(judge).__name__}")
        self.prompt_scale = leaves[0].prompt.scale
        self.bar = tqdm(
            total=budget, desc=f"search ({engine})", unit="call", disable=not progress, leave=False
        )

    def close(self) -> None:
        """Close the progress bar and the caches this session opened."""
        self.bar.close()
        for c in self._opened:
            c.close()

    def judge_for(self, mitigation: Mitigation | None) -> Judge:
        """The instrumented judge with ``mitigation`` (and the consistency measurement when it counts)."""
        j = mitigation.wrap(self.judge) if mitigation is not None else self.judge
        return self.probe.wrap(j) if self.probe is not None else j

    def cost(self, mitigation: Mitigation | None, items: Sequence[Item]) -> int:
        """Worst-case LM calls to judge ``items``: one per prompt judge per item."""
        return len(items) * max(1, len(self.judge_for(mitigation).leaves()))

    async def run(self, judge: Judge, items: Sequence[Item]) -> tuple[tuple[Judgment, ...], int, bool]:
        """Judge ``items``; returns judgments, calls made, and whether the budget refused a call."""
        before, refused_before = self.budget.used, self.budget.refused
        result = await run(judge, items, concurrency=self.concurrency, progress=False)
        return tuple(result.judgments), self.budget.used - before, self.budget.refused > refused_before

    async def evaluate(self, cand: Candidate, *, precheck: bool = True) -> Trial | None:
        """Score ``cand`` on dev and record it; None when the budget cannot cover it (nothing recorded). A
        candidate already evaluated returns its earlier trial. With ``precheck`` one whose worst-case cost
        exceeds the remaining budget is not started; without, it runs and is dropped only if the budget
        refuses a call (for candidates expected to be cached)."""
        if cand.key in self.seen:
            return self.trials[self.seen[cand.key]]
        remaining = self.budget.remaining
        if precheck and remaining is not None and self.cost(cand.mitigation, self.split.dev) > remaining:
            return None
        judgments, calls, refused = await self.run(self.judge_for(cand.mitigation), self.split.dev)
        self.bar.update(calls)
        if refused:
            return None
        value = self.objective.evaluate(judgments, self.split.dev, self.criterion, ls=self.ls)
        trial = Trial(
            index=len(self.trials),
            label=cand.label,
            selector=cand.selector,
            demo_ids=cand.demo_ids,
            pipeline=cand.spec,
            dev=value,
            calls=calls,
            meta=cand.meta,
        )
        self.seen[cand.key] = trial.index
        self.trials.append(trial)
        self.judgments[trial.index] = judgments
        best = max(self.trials, key=lambda t: rank_key(t.dev.value))
        self.bar.set_postfix(best=f"{best.dev.value:.3f}", trials=len(self.trials))
        return trial

    def best_index(self) -> int:
        """Index of the winning trial: highest dev objective, earliest on ties, NaN last."""
        return max(range(len(self.trials)), key=lambda i: (rank_key(self.trials[i].dev.value), -i))

    async def finish(self, stopped: str, meta: dict[str, Any] | None = None) -> SearchResult:
        """Evaluate the baseline and the winner on test (outside the budget) and build the result."""
        if not self.trials:
            raise ConfigError("the search evaluated no candidate, not even the baseline; raise the budget")
        spent, backend = self.budget.used, self.budget.backend
        self.budget.limit = None
        best = self.best_index()
        base = 0  # the baseline is always the first trial

        async def on_test(i: int) -> tuple[Judgment, ...]:
            return (await self.run(self.judge_for(from_spec(self.trials[i].pipeline)), self.split.test))[0]

        base_test = await on_test(base)
        best_test = base_test if best == base else await on_test(best)
        test_calls = self.budget.used - spent
        boot = {"n_boot": self.n_boot, "seed": self.seed}
        ci = self.n_boot > 0
        obj, crit = self.objective, self.criterion
        dev_items, test_items = self.split.dev, self.split.test
        documents = {it.doc_id for it in test_items} if all(it.doc_id for it in test_items) else None
        return SearchResult(
            engine=self.engine,
            objective=obj,
            criterion=crit,
            budget=self.budget_total,
            seed=self.seed,
            split=self.split.ids(),
            trials=tuple(self.trials),
            best_index=best,
            dev=obj.evaluate(self.judgments[best], dev_items, crit, ls=self.ls, ci=ci, **boot),
            test=obj.evaluate(best_test, test_items, crit, ls=self.ls, ci=ci, **boot),
            baseline_dev=obj.evaluate(self.judgments[base], dev_items, crit, ls=self.ls, ci=ci, **boot),
            baseline_test=obj.evaluate(base_test, test_items, crit, ls=self.ls, ci=ci, **boot),
            test_gain=obj.gain(
                best_test, base_test, test_items, crit, ls=self.ls, n_boot=self.n_boot, seed=self.seed
            ),
            calls_search=spent,
            calls_backend=backend,
            calls_test=test_calls,
            stopped=stopped,
            meta=meta or {},
            test_documents=None if documents is None else len(documents),
        )


class SearchSpace(NamedTuple):
    """What an engine searches over: selectors (fitted on train; those that judge the pool by
    :func:`fit_judged_selectors`), demo counts, templates (``None`` for plain demos, or a
    :class:`~mitigate.strategies.Demos` with a perturbed display) and the LS backend for HighestRS."""

    selectors: list[Selector]
    ks: list[int]
    templates: list[Demos | None]
    likelihood: str | LM | None = None


def train_pool(split: Split, criterion: str) -> Benchmark | list[Item]:
    """The train split as a selector's pool (a benchmark carrying the human scale when the split has one)."""
    if split.scale is None:
        return list(split.train)
    return Benchmark(name="search-train", items=split.train, criteria=(criterion,), scale=split.scale)


def fit_selectors(selectors: Sequence[Selector], split: Split, criterion: str) -> list[Selector]:
    """The selectors, fitted on the train split (except those that judge the pool)."""
    out = []
    for sel in selectors:
        if not isinstance(sel, Selector):
            raise ConfigError(f"expected Selector objects in selectors=; got {type(sel).__name__}")
        if sel.chosen_ is not None:
            raise ConfigError(
                f"search draws many demo sets from each selector; expected {sel.describe()} unfitted or "
                f"fitted on its pool, got one keeping only the {len(sel.chosen_)} demos it chose"
            )
        out.append(
            sel
            if sel.is_fitted or sel.tags.calls_judge_while_fitting
            else sel.fit(train_pool(split, criterion), None, FitContext(criterion=criterion))
        )
    return out


async def fit_judged_selectors(
    s: Session, selectors: list[Selector], likelihood: str | LM | None
) -> list[Selector]:
    """Fit the selectors that judge the pool (HighestRS) on the train split, within the budget."""
    out = []
    for sel in selectors:
        if sel.tags.calls_judge_while_fitting and not sel.is_fitted:
            cost = s.cost(None, s.split.train)
            remaining = s.budget.remaining
            if remaining is not None and cost > remaining:
                raise ConfigError(
                    f"fitting {type(sel).__name__} judges the train split (up to {cost} LM calls), but only "
                    f"{remaining} of the budget are left; raise the budget or pass it fitted"
                )
            before = s.budget.used
            lm = likelihood if isinstance(likelihood, LM) else None
            ctx = FitContext(criterion=s.criterion, lm=lm, progress=False)  # the search shows its own bar
            sel = await sel.afit(train_pool(s.split, s.criterion), s.judge, ctx)
            s.bar.update(s.budget.used - before)
        out.append(sel)
    return out


def reseeded(sel: Selector, rng: _random.Random) -> Selector:
    """``sel`` with a fresh seed drawn from ``rng`` (a selector without a seed is returned as it is)."""
    return sel.model_copy(update={"seed": rng.randrange(2**31)}) if "seed" in type(sel).model_fields else sel


def as_split(
    data: Benchmark | Split | Sequence[Item], fractions: tuple[float, float, float], seed: int, criterion: str
) -> Split:
    """``data`` itself when it is a Split, else :func:`~mitigate.data._split.split_items` of it."""
    return data if isinstance(data, Split) else split_items(data, fractions, seed=seed, criterion=criterion)


def search_criterion(data: Benchmark | Split | Sequence[Item], judge: Judge, criterion: str | None) -> str:
    """The human label a search optimises against: given, the benchmark's only one, or the judge's."""
    if criterion is not None:
        return criterion
    if isinstance(data, Benchmark) and len(data.criteria) == 1:
        return data.criteria[0]
    names = list(dict.fromkeys(c.name for leaf in judge.leaves() for c in leaf.prompt.criteria))
    if len(names) == 1:
        return names[0]
    raise ConfigError(
        f"search needs criterion=... (the human label to optimise against); the judge scores {names}"
    )


def demo_counts(k: int | Sequence[int]) -> list[int]:
    """The demo set sizes to search: ``k`` or the list of them, each an int >= 1."""
    one = Interval(int, 1)
    many = Satisfies(
        lambda v: (
            isinstance(v, Sequence) and not isinstance(v, str) and len(v) > 0 and all(map(one.accepts, v))
        ),
        "a non-empty list of ints >= 1",
    )
    check_param("search", "k", k, [one, many])
    return [k] if isinstance(k, int) else list(k)


async def likelihoods(
    objective: Objective,
    ls: Mapping[str, float] | None,
    likelihood: str | LM | None,
    split: Split,
    judge: Judge,
) -> Mapping[str, float] | None:
    """LS per dev and test item when the objective counts BiasScore (given, or computed)."""
    if not objective.needs_likelihood or ls is not None:
        return ls
    if likelihood is None:
        raise ConfigError(
            "the objective counts BiasScore (bias_weight > 0), which needs LS per item: pass ls= (item id "
            "-> log-likelihood) or likelihood='local' (a backend with loglikelihood)"
        )
    scorer = LikelihoodScorer(likelihood)
    items = [*split.dev, *split.test]
    task = next((leaf.prompt.task for leaf in judge.leaves()), "")
    values = await scorer.score_many(items, task, progress=False)
    return {it.id: float(v) for it, v in zip(items, values, strict=True)}


class Outcome(NamedTuple):
    """How an engine's run ended (``stopped``) and what it reports in ``SearchResult.meta``."""

    stopped: str
    meta: dict[str, Any]


class Engine(Component):
    """Base of the search engines; tag ``uses_selectors``: it draws from the search's selectors."""

    declared_tags: ClassVar[Tags] = Tags(uses_selectors=True)

    def prepare(self, judge: Judge, split: Split, criterion: str, ks: list[int]) -> Self:
        """The engine ready to run; ConfigError, before any LM call, for what it cannot do."""
        return self

    async def run(self, session: Session, space: SearchSpace) -> Outcome:
        """Propose candidates and score them with ``session.evaluate`` until done or out of budget."""
        raise NotImplementedError(f"{type(self).__name__} must implement run()")
