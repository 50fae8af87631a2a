"""The search entry points: :func:`asearch` and its synchronous twin :func:`search` (train / dev / test
split with a seed; the winner on dev is reported on held-out test beside the baseline)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from mitigate.constraints import Interval, IsInstance, Options, check_param
from mitigate.data import Benchmark, Item, Split
from mitigate.errors import ConfigError
from mitigate.judge import Judge
from mitigate.lm import LM, LMCache
from mitigate.registry import lookup, registered, run_coroutine
from mitigate.search._objective import Objective
from mitigate.search._result import SearchResult
from mitigate.search._session import (
    Candidate,
    Engine,
    SearchSpace,
    Session,
    as_split,
    demo_counts,
    fit_judged_selectors,
    fit_selectors,
    likelihoods,
    search_criterion,
)
from mitigate.selectors import Random, Selector, Stratified
from mitigate.strategies import Demos, PerturbedGuidelines


def engine_from(engine: str | Engine, options: Mapping[str, Any] | None = None) -> Engine:
    """The engine ``engine`` names (built with ``options``), or ``engine`` itself when it is an Engine."""
    names = tuple(registered("engine"))
    check_param("search", "engine", engine, [Options(*names), IsInstance(Engine, noun="an Engine")])
    if isinstance(engine, Engine):
        if options:
            raise ConfigError(
                f"expected the options of the {engine.registry_name!r} engine on the Engine "
                f"itself; got also {sorted(options)} as keyword arguments"
            )
        return engine
    return lookup("engine", engine).model_validate(dict(options or {}))


async def asearch(
    judge: Judge,
    data: Benchmark | Split | Sequence[Item],
    *,
    engine: str | Engine = "random",
    criterion: str | None = None,
    objective: Objective | None = None,
    k: int | Sequence[int] = 2,
    selectors: Sequence[Selector] | None = None,
    budget: int = 200,
    perturbations: Sequence[Demos | None] = (None,),
    probe: PerturbedGuidelines | None = None,
    ls: Mapping[str, float] | None = None,
    likelihood: str | LM | None = None,
    splits: tuple[float, float, float] = (0.5, 0.25, 0.25),
    cache: bool | str | Path | LMCache = True,
    concurrency: int = 4,
    progress: bool = True,
    n_boot: int = 1000,
    seed: int = 0,
    **engine_options: Any,
) -> SearchResult:
    """Search the demo set that maximises ``objective`` on dev and report it on held-out test.

    Parameters:
        judge: the base judge (no demos); its prompts get the candidate demos.
        data: a labelled benchmark (split with ``splits`` and ``seed``), or a :class:`Split`.
        engine: a registered engine name or an :class:`Engine`; ``engine_options`` are its parameters.
        criterion: the human label optimised against (default: the only one).
        objective: what is maximised (default: Spearman agreement only).
        k: demos per set, or a list of sizes to draw from (the DSPy engines use the largest).
        selectors: candidate generators (default ``Random`` and ``Stratified``), fitted on train if unfitted.
        budget: distinct LM requests the search may make, answered by the cache or the backend alike.
        perturbations: templates searched over: ``None`` for plain demos, or a
            :class:`~mitigate.strategies.Demos` with a perturbed display.
        probe: the :class:`~mitigate.strategies.PerturbedGuidelines` measuring consistency when it counts.
        ls, likelihood: LS per item id for BiasScore, else the LS backend (also for fitting HighestRS).
        cache: the LM cache (True: the default file; a path or LMCache; False: none).
        n_boot: bootstrap resamples for the reported intervals (0: none).
    """
    eng = engine_from(engine, engine_options)
    templates = list(perturbations) or [None]
    if not eng.tags.uses_selectors and (selectors is not None or templates != [None]):
        raise ConfigError(
            f"the {eng.registry_name!r} engine chooses demos its own way; expected no "
            "selectors= or perturbations=, got some"
        )
    for name, value, least in (("budget", budget, 1), ("concurrency", concurrency, 1), ("n_boot", n_boot, 0)):
        check_param("search", name, value, [Interval(int, least)])
    objective = objective or Objective()
    ks = demo_counts(k)
    crit = search_criterion(data, judge, criterion)
    split = as_split(data, splits, seed, crit)
    eng = eng.prepare(judge, split, crit, ks)
    fitted: list[Selector] = []
    if eng.tags.uses_selectors:
        chosen = list(selectors) if selectors is not None else [Random(seed=seed), Stratified(seed=seed)]
        if not chosen:
            raise ConfigError("search needs at least one selector; got none")
        fitted = fit_selectors(chosen, split, crit)
        n_train = min(len(s.pool_ or ()) if s.is_fitted else len(split.train) for s in fitted)
        if max(ks) > n_train:
            raise ConfigError(
                f"The 'k' parameter of search asks for up to {max(ks)} demos, but the train "
                f"split has only {n_train} labelled items"
            )
    needed = objective.needs_perturbations
    probe = (probe or PerturbedGuidelines(kind="order", n=2, seed=seed)) if needed else None
    ls = await likelihoods(objective, ls, likelihood, split, judge)
    s = Session(
        judge,
        split,
        crit,
        objective,
        budget=budget,
        probe=probe,
        ls=ls,
        cache=cache,
        concurrency=concurrency,
        progress=progress,
        n_boot=n_boot,
        seed=seed,
        engine=eng.registry_name,
    )
    try:
        if await s.evaluate(Candidate("baseline (no demos)", None)) is None:
            raise ConfigError(
                f"the budget of {budget} LM calls cannot cover even the baseline on dev (up to "
                f"{s.cost(None, split.dev)} calls); raise the budget or use a smaller dev split"
            )
        if eng.tags.uses_selectors:  # those that judge the pool, within the budget, after the baseline
            fitted = await fit_judged_selectors(s, fitted, likelihood)
        outcome = await eng.run(s, SearchSpace(fitted, ks, templates, likelihood))
        meta = {"selectors": [sel.describe() for sel in fitted], "k": ks} if eng.tags.uses_selectors else {}
        return await s.finish(outcome.stopped, {**meta, **outcome.meta})
    finally:
        s.close()


def search(judge: Judge, data: Benchmark | Split | Sequence[Item], **kwargs: Any) -> SearchResult:
    """:func:`asearch` from synchronous code (inside an event loop, ``await asearch(...)``)."""
    return run_coroutine(asearch(judge, data, **kwargs), what="search()", instead="asearch(...)")
