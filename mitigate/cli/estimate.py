"""``mitigate estimate``: each system's bias-corrected mean from a judge on every item and a few human labels."""

from __future__ import annotations

import json
import sys
from typing import TYPE_CHECKING, Any

import typer

from mitigate.cli.app import command
from mitigate.cli.estimate_options import EstimateOptions
from mitigate.cli.files import run_dir, writable_file

if TYPE_CHECKING:
    from mitigate.cli.build import Task
    from mitigate.data.schema import Benchmark, Item

# The rest is imported inside the functions that use it: `import mitigate.cli` registers this command without the
# data, the judges, the estimators or the harness (tests/test_cli_imports.py).


@command("estimate", EstimateOptions)
def estimate_cmd(options: EstimateOptions) -> None:
    """Estimate each system's mean human label from a judge on every item and human labels on a few.

    The labelled items must be a random draw from each group (or drawn by --select, whose file carries the
    weights); the estimate then corrects the judge's bias, with an interval that accounts for it.
    """
    for path, flag in ((options.plot, "--plot"), (options.out, "--out")):
        if path is not None:
            writable_file(path, flag)
    if options.select is not None:
        writable_file(options.select_out, "--select-out")
    with run_dir(options.run_dir):
        _estimate(options)


def _group_key(by: str, pairwise: bool) -> Any:
    """How labels are grouped when some are hidden: by the estimate's groups (pairwise by system: per pair)."""
    if by == "none":
        return None
    if pairwise:
        return lambda it: f"{min(str(it.system), str(it.system_b))} vs {max(str(it.system), str(it.system_b))}"
    return lambda it: str(it.system)


def _labelled_benchmark(o: EstimateOptions, task: Task) -> tuple[Benchmark, dict[str, float] | None,
                                                                dict[str, float], dict[str, int], list[str]]:
    """The benchmark of the chosen items with labels hidden (an experiment) and labels files added.

    Returns it, the labels before hiding (None when none were hidden), the selection weights
    and rounds (the weighted files in the order given are rounds 1, 2 ...), and notes.
    """
    from mitigate.data.labels import apply_labels, hide_labels, read_labels
    from mitigate.errors import DataError
    from mitigate.harness.estimate import resolve_by

    bench = task.benchmark.model_copy(update={"items": task.items})
    crit = task.criterion
    truth = None
    notes: list[str] = []
    if o.labels_per_group is not None or o.labelled_fraction is not None:
        by = resolve_by(bench.items, o.by)
        bench, truth = hide_labels(bench, crit, per_group=o.labels_per_group, fraction=o.labelled_fraction,
                                   seed=o.seed, group=_group_key(by, bench.pairwise))
        unit = "system pair" if bench.pairwise and by == "system" else "group"
        kept = f"labels per {unit}" if o.labels_per_group is not None else f"of each {unit}'s labels"
        amount = o.labels_per_group if o.labels_per_group is not None else f"{o.labelled_fraction:.0%}"
        notes.append(f"an experiment: {amount} {kept} kept (seed {o.seed}), the other labels hidden; 'all labels' is "
                     "the mean of every label")
    weights: dict[str, float] = {}
    rounds: dict[str, int] = {}
    scale = bench.scale_for(crit)
    for path in o.labels or []:
        found = read_labels(path, crit, scale, pairwise=bench.pairwise)
        bench = apply_labels(bench, crit, found.labels)
        if found.weighted:
            again = next((i for i in found.weights if i in weights), None)
            if again is not None:
                raise DataError(f"item {again!r} is in two selection files; expected each selected item in one round")
            number = max(rounds.values(), default=0) + 1
            weights.update(found.weights)
            rounds.update(dict.fromkeys(found.weights, number))
    return bench, truth, weights, rounds, notes


def _judge_source(o: EstimateOptions, task: Task, items: list[Item]) -> Any:
    """The judge's values: a recorded or released run, or the judgments of a live run over ``items``."""
    if o.recorded is not None:
        from mitigate.cli.compare import recorded_reader
        from mitigate.data.recorded import load_recorded_runs
        from mitigate.errors import DataError

        runs = load_recorded_runs(o.recorded, recorded_reader(o, task.criterion, task.benchmark))  # type: ignore[arg-type]
        if o.judge is None:
            if len(runs) > 1:
                raise DataError(f"{o.recorded} holds judgments of several judges {list(runs)}; name one with --judge")
            return next(iter(runs.values()))
        if o.judge not in runs:
            raise DataError(f"expected --judge to name a judge of {o.recorded}, one of {list(runs)}; got {o.judge!r}")
        return runs[o.judge]
    if o.released is not None:
        from mitigate.data.released import released_recorded

        return released_recorded(o.released)
    import asyncio  # lazy: only a live judge runs a loop

    return asyncio.run(_judge_live(o, task, items))


async def _judge_live(o: EstimateOptions, task: Task, items: list[Item]) -> Any:
    from mitigate.cli.build import Task as BuildTask
    from mitigate.cli.build import build_judge, with_pipeline
    from mitigate.cli.errors import fail_when_all_failed
    from mitigate.run.runner import preflight, run
    from mitigate.strategies import parse_pipeline

    pipe = parse_pipeline(o.pipeline or "baseline")
    base = build_judge(o, BuildTask(task.benchmark, task.criterion, tuple(items)), pipe)
    try:
        judge = with_pipeline(base, o.pipeline)
        preflight(judge, items)
        typer.echo(f"judging {len(items)} items on {task.criterion!r} with {base.lm.spec}", err=True)
        journal = o.run_dir / "journal.jsonl" if o.run_dir else None
        result = await run(judge, items, concurrency=o.concurrency, journal=journal, check=False,
                           progress=o.progress)
    finally:
        await base.lm.aclose()
    typer.echo(result.summary.line(), err=True)
    fail_when_all_failed(result)
    return result


def _estimate(o: EstimateOptions) -> None:
    from mitigate.cli.build import load_task
    from mitigate.harness.estimate import (
        columns,
        estimate_columns,
        plan_labels,
        select_for_labelling,
        write_selection,
    )

    task = load_task(o.benchmark, o.criterion, o.limit)
    bench, truth, weights, rounds, notes = _labelled_benchmark(o, task)
    source = _judge_source(o, task, list(bench.items))
    name = o.released or (o.pipeline and f"{o.backend} | {o.pipeline}") or None
    cols = columns(bench, task.criterion, source, by=o.by, weights=weights, rounds=rounds, truth=truth,
                   judge_name=name)
    kw: dict[str, Any] = {"confidence": o.confidence, "target": o.target, "calibration": o.calibration,
                          "folds": o.folds, "seed": o.seed, "tune": o.tune}
    result = estimate_columns(cols, method=o.method, **kw)  # type: ignore[arg-type]
    result = result.model_copy(update={"notes": (*notes, *result.notes)})
    payload = result.to_json()
    payload["command"] = " ".join(["mitigate", *sys.argv[1:]])
    texts = [result.table()]
    if o.plan is not None:
        plan = plan_labels(cols, o.plan, **kw)
        payload["plan"] = plan.to_json()
        texts.append(plan.table())
    if o.select is not None:
        method = o.method if o.method != "judge" else "ppi"
        chosen = select_for_labelling(cols, o.select, method=method, floor=o.floor, seed=o.seed,  # type: ignore[arg-type]
                                      confidence=o.confidence, calibration=o.calibration,  # type: ignore[arg-type]
                                      folds=o.folds, tune=o.tune)
        written = write_selection(chosen, bench.items, o.select_out, pairwise=bench.pairwise)
        payload["selection"] = {**chosen.to_json(), "file": str(written)}
        per = ", ".join(f"{g} {k}" for g, k in chosen.per_group.items() if k)
        texts.append(f"selected {len(chosen.rows)} items to label ({per}); wrote {written}: fill its 'label' column, "
                     f"then rerun with --labels {written}")
    if o.plot is not None:
        from mitigate.harness.estimate_plot import plot_estimate

        texts.append(f"wrote {plot_estimate(result, o.plot)}")
    if o.out is not None:
        from mitigate.paths import write_output

        write_output(o.out, json.dumps(payload, indent=1) + "\n", "the estimate file")
        texts.append(f"wrote {o.out}")
    if o.json:
        typer.echo(json.dumps(payload))
        for line in texts[1:]:
            if line.startswith(("wrote", "selected")):
                typer.echo(line, err=True)
    else:
        typer.echo("\n\n".join(texts))
