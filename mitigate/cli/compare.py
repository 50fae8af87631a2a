"""``mitigate compare``: mitigation pipelines, recorded and released judges on one benchmark, side by side."""

from __future__ import annotations

import asyncio
import sys
from typing import Any

import typer

from mitigate.cli.app import command
from mitigate.cli.errors import EXIT_FAILED, say_error
from mitigate.cli.files import writable_dir
from mitigate.cli.options import CompareOptions
from mitigate.errors import ConfigError


@command("compare", CompareOptions)
def compare_cmd(options: CompareOptions) -> None:
    """Compare mitigation pipelines, recorded and released judges on a benchmark: accuracy and bias side by side."""
    writable_dir(options.out, "--out")
    asyncio.run(_compare(options, command_line=" ".join(["mitigate", *sys.argv[1:]])))


def recorded_reader(o: CompareOptions, criterion: str, pairwise: bool) -> Any:
    """Reads recorded rows that hold only ``raw`` with ``--prompt``'s answer format; None without --prompt."""
    from mitigate.cli.build import template_text
    from mitigate.prompt import JudgePrompt

    if o.prompt is None:
        return None
    jp = JudgePrompt.from_template(template_text(o.prompt, o.benchmark, criterion), criterion=criterion,
                                   **({"answer": "pairwise"} if pairwise else {}))
    return lambda raw, crit: jp.format.read(raw, jp.scale)


async def _compare(o: CompareOptions, command_line: str) -> None:
    # lazy: `import mitigate.cli` (so `mitigate --help`) loads only the command group and the options (issue 29)
    from mitigate.cli.build import batch_session, build_judge, load_task
    from mitigate.harness.compare import Entry, check_compare, compare, recorded_outside
    from mitigate.harness.report import write_report
    from mitigate.run.runner import preflight
    from mitigate.strategies import parse_pipeline

    pipelines = list(o.pipeline or [])
    recorded = list(o.recorded or [])
    released = list(o.released or [])
    if not pipelines and not released and not recorded:
        raise ConfigError("expected at least one --pipeline (e.g. --pipeline baseline), --recorded file or "
                          "--released judge; got none")
    parsed = [(text, parse_pipeline(text)) for text in pipelines]  # bad pipeline text fails before data or calls
    task = load_task(o.benchmark, o.criterion, o.limit)
    bench, crit = task.benchmark, task.criterion
    entries: list[Entry] = []
    lm = None
    if pipelines:  # recorded and released judges alone call no LM: no backend is built
        base = build_judge(o, task)
        lm = base.lm
        entries += [Entry.from_pipeline(text.strip() or "baseline", base, pipe) for text, pipe in parsed]
    read = recorded_reader(o, crit, bench.pairwise) if recorded else None
    for path in recorded:
        entries += Entry.all_recorded(path, crit, read)
    entries += [e for name in released for e in Entry.all_released(name, crit)]
    train = o.train_split
    check_compare(bench, crit, entries, limit=o.limit or None, seed=o.seed, train=train)
    outside = recorded_outside(bench, crit, entries)
    if outside:
        typer.echo(outside, err=True)
    for entry in entries:  # every item fits every pipeline's prompts: checked before anything is called
        if entry.kind == "pipeline":  # an entry still to be fitted is checked through the judge it wraps
            preflight(entry.judge if entry.judge is not None else entry.base, task.items)
    typer.echo(f"{bench.summary()}\ncomparing {len(entries)} entries on {crit!r}: "
               f"{', '.join(e.name for e in entries)}", err=True)
    session = batch_session(o.batch and bool(pipelines), o.out, o.batch_retries, o.progress)
    try:
        result = await compare(
            bench, crit, entries, out_dir=o.out, concurrency=o.concurrency, limit=o.limit or None,
            likelihood=o.likelihood, progress=o.progress, n_boot=o.n_boot, seed=o.seed, restart=o.restart,
            command=command_line, batch=session, train=train,
        )
    finally:
        if session is not None:
            await session.aclose()
            typer.echo(session.stats.line(), err=True)
        if lm is not None:
            await lm.aclose()
    for e in result.entries:
        typer.echo(f"{e.name}: {e.summary.line()}", err=True)
    paths = write_report(result, o.out)
    typer.echo((o.out / "report.md").read_text(encoding="utf-8").split("\n## Every measure")[0])
    typer.echo("wrote " + ", ".join(str(p) for p in paths), err=True)
    failed = [e for e in result.entries if e.summary.items and e.summary.errors == e.summary.items]
    if failed:
        first = next((j.error for j in failed[0].judgments if j.error), "")
        say_error(f"every item of {', '.join(repr(e.name) for e in failed)} failed; the first: {first}")
        raise typer.Exit(code=EXIT_FAILED)
