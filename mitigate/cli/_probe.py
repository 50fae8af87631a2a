"""``mitigate probe``: the bias battery on the judged text, each probe beside the judge's own rerun noise."""

import asyncio
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, ClassVar, Literal

import typer

from mitigate.cli._app import command
from mitigate.cli._build import (
    RewriterOptions,
    build_backend,
    build_judge,
    load_workload,
    named_probes,
    with_pipeline,
)
from mitigate.cli._files import writable_file, writing_after_run
from mitigate.cli.options._backend import DEFAULT_BACKEND, Backend, BackendOptions
from mitigate.cli.options._declare import Override, option
from mitigate.cli.options._prompt import PromptOptions, ReducedAnswerOptions, Temperature
from mitigate.cli.options._results import OUT, PROBES, Rewriter, Seed, StatsOptions
from mitigate.cli.options._run import PIPELINE, RunOptions
from mitigate.cli.options._task import Limit, TaskOptions
from mitigate.constraints import Interval
from mitigate.probes import render_probe_table, run_probes
from mitigate.run import preflight

SIDE = option("side", help="pairwise items: probe the first text (a) or the second (b)")
TOLERANCE = option(
    "tolerance",
    help="score changes up to this size count as unchanged (0: CALM's robustness rate)",
    accepts=(Interval(float, 0.0, None),),
)
ALPHA = option(
    "alpha", help="level of the probe-vs-rerun test", accepts=(Interval(float, 0.0, 1.0, closed="neither"),)
)


@dataclass(frozen=True)
class ProbeOptions(
    TaskOptions, BackendOptions, PromptOptions, ReducedAnswerOptions, RunOptions, StatsOptions
):
    """``mitigate probe``: items judged as they are, again (the noise floor) and under each probe."""

    COMMAND: ClassVar[str] = "probe"
    HELP_FIRST: ClassVar[dict[str, tuple[str, ...]]] = {
        "What to probe": ("benchmark", "criterion", "limit", "probes"),
        "The judge": ("backend", "base_url", "prompt", "pipeline", "rewriter"),
        "Results": ("out", "config_file"),
    }

    probes: Annotated[
        str,
        PROBES,
        Override(
            help="'all' (every rule-based probe, plus the LM-assisted ones with "
            "--rewriter) or names such as authority,bandwagon"
        ),
    ] = "all"
    rewriter: Annotated[
        Rewriter,
        Override(
            help="LM spec that writes the LM-assisted probes' rewrites (sentiment, "
            "assertiveness, fallacy, factual-error)"
        ),
    ] = None
    side: Annotated[Literal["a", "b"], SIDE] = "a"
    pipeline: Annotated[
        str | None,
        PIPELINE,
        Override(
            help="mitigations wrapping the judge (pipeline text or @file.json); they must not need fitting"
        ),
    ] = None
    tolerance: Annotated[float, TOLERANCE] = 0.0
    alpha: Annotated[float, ALPHA] = 0.05
    out: Annotated[
        Path | None, OUT, Override(help="write the whole report (every rewrite included) to this JSON file")
    ] = None

    limit: Annotated[Limit, Override(help="probe the first N items, document by document (0 = all)")] = 20
    backend: Annotated[
        Backend,
        Override(
            help="the judge's LM: openai:<model>, anthropic:<model>, dspy:<model>, "
            "local, local:<path.gguf>, replay:<path>"
        ),
    ] = DEFAULT_BACKEND
    temperature: Annotated[
        Temperature, Override(help="sampling temperature (the rerun for the noise floor uses the same)")
    ] = 0.0
    seed: Annotated[Seed, Override(help="seed of the probes' wording and of the bootstrap")] = 0


@command("probe", ProbeOptions)
def probe_cmd(options: ProbeOptions) -> None:
    """Run the bias battery: items judged as they are, again (noise floor), under each probe; a table."""
    if options.out is not None:
        writable_file(options.out, "--out")
    asyncio.run(_probe(options))


async def _probe(o: ProbeOptions) -> None:
    chosen = [p.with_params(seed=o.seed, side=o.side) for p in named_probes(o.probes, o.rewriter)]
    pipe = None
    if o.pipeline is not None:
        from mitigate.strategies import parse_pipeline  # only with --pipeline

        pipe = parse_pipeline(o.pipeline)
    task = load_workload(o.benchmark, o.criterion, o.limit)
    base = build_judge(o, task, pipe)
    lm = base.lm
    rewriter_lm = None if o.rewriter is None else build_backend(RewriterOptions(o))
    try:
        judge_obj = with_pipeline(base, o.pipeline)
        items = list(task.items)
        preflight(judge_obj, items)
        typer.echo(
            f"{task.benchmark.summary()}\nprobing {len(items)} items on {task.criterion!r} with {lm.spec}: "
            f"{', '.join(p.name for p in chosen)} ({(2 + len(chosen)) * len(items)} judgments)",
            err=True,
        )
        report = await run_probes(
            judge_obj,
            items,
            chosen,
            criterion=task.criterion,
            rewriter=rewriter_lm,
            concurrency=o.concurrency,
            progress=o.progress,
            alpha=o.alpha,
            tolerance=o.tolerance,
            n_boot=o.n_boot,
            seed=o.seed,
            label=o.pipeline or "baseline",
        )
    finally:
        await lm.aclose()
        if rewriter_lm is not None:
            await rewriter_lm.aclose()
    typer.echo(render_probe_table(report))
    if o.out is not None:
        from mitigate.paths import write_output

        with writing_after_run("the LM cache" if o.cache else None):
            written = write_output(o.out, report.model_dump_json(indent=1), "--out")
        typer.echo(f"wrote {written} ({len(report.records)} rewrites)", err=True)
