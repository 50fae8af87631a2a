"""``mitigate probe``: the bias battery on the judged text, each probe beside the judge's own rerun noise."""

from __future__ import annotations

import typer

from mitigate.cli.app import command
from mitigate.cli.files import writable_file, writing_after_run
from mitigate.cli.options import ProbeOptions

# The rest is imported inside the command: `import mitigate.cli` (what `mitigate --help` and every command
# load first) registers it without what it uses (issue 29).


@command("probe", ProbeOptions)
def probe_cmd(options: ProbeOptions) -> None:
    """Run the bias battery: judge items as they are, again (the noise floor) and under each probe; print the table."""
    if options.out is not None:
        writable_file(options.out, "--out")
    import asyncio  # lazy: not loaded for --help

    asyncio.run(_probe(options))


async def _probe(o: ProbeOptions) -> None:
    from mitigate.cli.build import RewriterOptions, build_backend, build_judge, load_task, with_pipeline
    from mitigate.harness.probe import render_probe_table, run_probes
    from mitigate.probes import check_rewriter, resolve_probes
    from mitigate.run.runner import preflight
    from mitigate.strategies import parse_pipeline

    chosen = [p.with_params(seed=o.seed, side=o.side) for p in resolve_probes(o.probes, rewriter=o.rewriter is not None)]
    if o.rewriter is None:
        check_rewriter(chosen, None)  # refused before data or calls
    pipe = parse_pipeline(o.pipeline) if o.pipeline is not None else None
    task = load_task(o.benchmark, o.criterion, o.limit)
    base = build_judge(o, task, pipe)
    lm = base.lm
    rewriter_lm = None if o.rewriter is None else build_backend(RewriterOptions(o))
    try:
        judge_obj = with_pipeline(base, o.pipeline)
        items = list(task.items)
        preflight(judge_obj, items)
        typer.echo(f"{task.benchmark.summary()}\nprobing {len(items)} items on {task.criterion!r} with {lm.spec}: "
                   f"{', '.join(p.name for p in chosen)} ({(2 + len(chosen)) * len(items)} judgments)", err=True)
        report = await run_probes(judge_obj, items, chosen, criterion=task.criterion, rewriter=rewriter_lm,
                                  concurrency=o.concurrency, progress=o.progress, alpha=o.alpha,
                                  tolerance=o.tolerance, n_boot=o.n_boot, seed=o.seed,
                                  label=o.pipeline or "baseline")
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
