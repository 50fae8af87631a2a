"""``mitigate search``: the demo set that maximises agreement (+ consistency - bias) on dev, reported on test."""

from __future__ import annotations

from typing import Any

import typer

from mitigate.cli.app import command
from mitigate.cli.files import writable_file, writing_after_run
from mitigate.cli.options import SearchOptions

# The rest is imported inside the command: `import mitigate.cli` (what `mitigate --help` and every command
# load first) registers it without what it uses (issue 29).


@command("search", SearchOptions)
def search_cmd(options: SearchOptions) -> None:
    """Search the demo set that maximises agreement (+ consistency - bias) on dev; report it on held-out test."""
    writable_file(options.out, "--out")
    _search(options)


def _search(o: SearchOptions) -> None:
    from mitigate.cli.build import build_judge, dry_run_text, load_task
    from mitigate.registry import lookup, run_sync
    from mitigate.search import Objective
    from mitigate.strategies import PerturbedDemosPreset, parse_pipeline

    before = parse_pipeline(o.pipeline)  # bad pipeline text fails before data or calls
    task = load_task(o.benchmark, o.criterion, o.limit, labelled=True)
    data = task.benchmark.model_copy(update={"items": task.items})
    base = build_judge(o, task, before, declared=o.dry_run)  # a dry run needs no SDK, key or model file
    judge = before.wrap(base)
    if o.dry_run:
        try:
            typer.echo(dry_run_text([(o.pipeline, judge)], base, task.items)
                       + "\n\n(the search adds each candidate demo set to these prompts; no LM call was made)")
        finally:
            run_sync(base.lm.aclose(), what="mitigate search --dry-run", instead="lm.aclose()")
        return
    classes = [lookup("selector", n) for n in o.selector or ["random", "stratified"]]
    selectors = [cls(seed=o.seed) if "seed" in cls.model_fields else cls() for cls in classes]
    agreement = o.agreement
    if task.benchmark.pairwise and agreement != "accuracy":  # verdicts against gold preferences: exact match
        typer.echo(f"pairwise benchmark: agreement is accuracy against the gold preferences (not {agreement})",
                   err=True)
        agreement = "accuracy"
    objective = Objective(agreement=agreement, consistency_weight=o.consistency_weight,
                          consistency=o.consistency, bias_weight=o.bias_weight)
    templates: list[Any] = [None]
    if o.perturbed:
        templates.append(PerturbedDemosPreset(kind="order", seed=o.seed).build())
    common: dict[str, Any] = {
        "criterion": task.criterion, "objective": objective, "k": o.k or [2], "budget": o.budget,
        "splits": o.split_fractions, "cache": o.cache, "concurrency": o.concurrency,
        "progress": o.progress, "n_boot": o.n_boot, "seed": o.seed,
    }
    if objective.needs_likelihood:
        common["likelihood"] = o.likelihood
    if lookup("engine", o.engine).declared_tags.uses_selectors or o.selector or o.perturbed:
        common.update(selectors=selectors, perturbations=templates)  # an engine that takes none refuses them
    typer.echo(f"{task.benchmark.summary()}\nsearching demos for {task.criterion!r} on {len(task.items)} labelled "
               f"items with {base.lm.spec}, engine {o.engine}, budget {o.budget} LM calls", err=True)
    result = _run(judge, data, o.engine, common)
    typer.echo(result.summary())
    with writing_after_run("the LM cache" if o.cache else None):
        path = result.save_pipeline(o.out, before=before)
        if result.beats_baseline:
            typer.echo(f"wrote {path} (use it with: mitigate judge --pipeline @{path})", err=True)
        else:
            typer.echo(f"wrote {path}: {result.verdict()}; it holds the dev winner for inspection, not a "
                       "recommendation", err=True)
        if o.plot:
            from mitigate.harness.plots import plot_search  # lazy: only with --plot (matplotlib)

            typer.echo(f"wrote {plot_search(result, path.with_suffix('.png'))} (trials on dev; winner vs baseline "
                       "on test)", err=True)


def _run(judge: Any, data: Any, engine: str, common: dict[str, Any]) -> Any:
    """The search, and the judge's backend closed in the same event loop (its HTTP session belongs to that loop)."""
    from mitigate.registry import run_sync
    from mitigate.search import asearch

    async def searched() -> Any:
        try:
            return await asearch(judge, data, engine=engine, **common)
        finally:
            for lm in {id(leaf.lm): leaf.lm for leaf in judge.leaves()}.values():
                await lm.aclose()

    return run_sync(searched(), what="mitigate search", instead="asearch(...)")
