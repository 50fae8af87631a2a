"""``mitigate compare``: mitigation pipelines, recorded and released judges on one benchmark, side by side."""

from __future__ import annotations

import sys
import warnings
from pathlib import Path
from typing import TYPE_CHECKING, Any

import typer

from mitigate.cli.app import command
from mitigate.cli.config import split_label
from mitigate.cli.errors import EXIT_FAILED, say_error
from mitigate.cli.files import check_run_folder, writable_dir, writing_after_run
from mitigate.cli.options import CompareOptions
from mitigate.errors import ConfigError

if TYPE_CHECKING:
    from mitigate.cli.build import Task
    from mitigate.data.schema import Benchmark
    from mitigate.judge import Judge, PromptJudge

# The rest is imported inside the functions that use it: `import mitigate.cli` (what `mitigate --help`
# and every command load first) registers this command without its judges, harness or strategies (issue 29).


@command("compare", CompareOptions)
def compare_cmd(options: CompareOptions) -> None:
    """Compare mitigation pipelines, recorded and released judges on a benchmark: accuracy and bias side by side."""
    writable_dir(options.out, "--out")
    check_run_folder(options.out)
    import asyncio  # lazy: not loaded for --help

    asyncio.run(_compare(options, command_line=" ".join(["mitigate", *sys.argv[1:]])))


def recorded_reader(o: CompareOptions, criterion: str, bench: Benchmark) -> Any:
    """Reads recorded rows that hold only ``raw`` with ``--prompt``'s answer format, the template and the item's
    texts as what the judge was shown (a value they hold and the answer quotes back is not read); None without
    --prompt."""
    from mitigate.cli.build import naming_template, template_origin, template_text
    from mitigate.prompt import JudgePrompt, TemplateHints

    if o.prompt is None:
        return None
    template = template_text(o.prompt, o.benchmark, criterion)
    with naming_template(template_origin(o.prompt)):
        jp = JudgePrompt.from_template(template, TemplateHints.of(
            criterion=criterion, answer="pairwise" if bench.pairwise else None))
    texts = {item.id: item.texts() for item in bench.items}
    return lambda raw, crit, item_id: jp.format.read(raw, jp.scale, quoted=(template,), judged=texts.get(item_id, ()))


async def _compare(o: CompareOptions, command_line: str) -> None:
    from mitigate.cli.build import batch_session, build_judge, load_task, scoring_for
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
    labelled = [split_label(text) for text in pipelines]  # "NAME=pipeline": NAME is what the report shows
    parsed = [(label or text.strip() or "baseline", parse_pipeline(text))  # bad text fails before data or calls
              for label, text in labelled]
    chosen_probes = compare_probes(o.probes, o.rewriter, bool(pipelines), o.probe_tolerance)
    task = load_task(o.benchmark, o.criterion, o.limit)
    bench, crit = task.benchmark, task.criterion
    entries: list[Entry] = []
    lm = None
    base = None
    if pipelines:  # recorded and released judges alone call no LM: no backend is built
        base = build_judge(o, task, declared=o.dry_run)  # a dry run needs no SDK, key or model file
        lm = base.lm
        for name, pipe in parsed:  # --scoring auto reads the text of an entry that asks for reasoning
            own = base.with_config(**scoring_for(o, lm, base.prompt, pipe))
            entries.append(Entry.from_pipeline(name, own, pipe))
    read = recorded_reader(o, crit, bench) if recorded else None
    for path in recorded:
        entries += Entry.all_recorded(path, crit, read)
    entries += [e for name in released for e in Entry.all_released(name, crit)]
    train = o.train_split
    with warnings.catch_warnings():  # a run's compare() gives the same warnings, once, when it runs
        if not o.dry_run:
            warnings.simplefilter("ignore")
        check_compare(bench, crit, entries, limit=o.limit or None, seed=o.seed, train=train)
    if o.dry_run:
        try:
            typer.echo(_dry_run(entries, base, task, train, o.seed))
        finally:
            if lm is not None:
                await lm.aclose()
        return
    outside = recorded_outside(bench, crit, entries)
    if outside:
        typer.echo(outside, err=True)
    for entry in entries:  # every item fits every pipeline's prompts: checked before anything is called
        if entry.kind == "pipeline":  # an entry still to be fitted is checked through the judge it wraps
            preflight(entry.judge if entry.judge is not None else entry.base, task.items)
    typer.echo(f"{bench.summary()}\ncomparing {len(entries)} entries on {crit!r}: "
               f"{', '.join(e.name for e in entries)}", err=True)
    session = batch_session(o.batch and bool(pipelines), o.out, o.batch_retries, o.progress)
    probe_kw = probe_kwargs(chosen_probes, o)
    try:
        result = await compare(
            bench, crit, entries, out_dir=o.out, concurrency=o.concurrency, limit=o.limit or None,
            likelihood=o.likelihood, progress=o.progress, n_boot=o.n_boot, seed=o.seed, restart=o.restart,
            command=command_line, batch=session, train=train, report=False,  # written below, paths listed
            **probe_kw,
        )
    finally:
        if session is not None:
            await session.aclose()
            typer.echo(session.stats.line(), err=True)
        if probe_kw.get("rewriter") is not None:
            await probe_kw["rewriter"].aclose()
        if lm is not None:
            await lm.aclose()
    for e in result.entries:
        typer.echo(f"{e.name}: {e.summary.line()}", err=True)
    with writing_after_run(f"the journals in {o.out / 'journals'}"):
        paths = write_report(result, o.out)
        if o.threshold is not None:
            from mitigate.harness.threshold import threshold_section
            from mitigate.paths import write_output

            section = threshold_section(result, o.threshold, o.require_pass_rate)
            report_md = o.out / "report.md"
            write_output(report_md, report_md.read_text(encoding="utf-8") + "\n" + section + "\n", "the report")
    typer.echo(_report_head(o.out / "report.md"))
    if o.threshold is not None:
        typer.echo(section)
    typer.echo("wrote " + ", ".join(str(p) for p in paths), err=True)
    failed = [e for e in result.entries if e.summary.items and e.summary.errors == e.summary.items]
    if failed:
        first = next((j.error for j in failed[0].judgments if j.error), "")
        say_error(f"every item of {', '.join(repr(e.name) for e in failed)} failed; the first: {first}")
        raise typer.Exit(code=EXIT_FAILED)


def _report_head(path: Path) -> str:
    """The report's text before its table of every measure, as written (nothing when report.md is a device)."""
    from mitigate.paths import open_regular

    try:
        with open_regular(path, "r", "the report") as fh:
            return fh.read().split("\n## Every measure")[0]
    except ConfigError:  # written through a device (/dev/null, a terminal): there is nothing to read back
        return ""


def _dry_run(entries: list[Any], base: PromptJudge | None, task: Task, train: float | str | None, seed: int) -> str:
    """Every entry's requests for the first item it would judge; entries fitted first when that needs no LM call."""
    from mitigate.cli.build import dry_run_text
    from mitigate.data.registry import load
    from mitigate.data.split import train_test_split

    items = list(task.items)
    fit_on = None
    if train is not None:
        if isinstance(train, float):
            fit_on, test = train_test_split(task.benchmark, train, seed=seed, criterion=task.criterion)
            items = [it for it in items if it.id in {t.id for t in test.items}] or items
        else:
            fit_on = load(train)
    shown: list[tuple[str, Judge]] = []
    notes: list[str] = []
    for e in entries:
        if e.kind != "pipeline":
            notes.append(f"### entry {e.name!r}: replays {e.kind} answers, sends no LM request")
            continue
        judge = e.judge
        if judge is None:  # still to be fitted
            if fit_on is None:
                notes.append(f"### entry {e.name!r}: learns from data; expected --train to show its requests")
                continue
            if e.pipeline.tags.calls_judge_while_fitting:
                notes.append(f"### entry {e.name!r}: calls the judge while fitting on --train, so its fitted requests "
                             "cannot be shown without LM calls (a dry run makes none)")
                continue
            judge = e.pipeline.compile(e.base, fit_on, progress=False)
        shown.append((e.name, judge))
    text = dry_run_text(shown, base, items) if shown and base is not None else ""
    return "\n\n".join([*notes, text]).strip()


def compare_probes(text: str | None, rewriter: str | None, has_pipelines: bool, tolerance: float = 0.0) -> list[Any]:
    """The probes ``compare --probes`` names (checked before data or calls); [] without the option.

    ``--rewriter`` and ``--probe-tolerance`` apply only with ``--probes``: given without it, each is refused.
    """
    from mitigate.probes import check_rewriter, resolve_probes

    if text is None:
        for flag, value, given in (("--rewriter", rewriter, rewriter is not None),
                                   ("--probe-tolerance", tolerance, bool(tolerance))):
            if given:
                raise ConfigError(f"{flag} applies with --probes; got {flag} {value!r} without --probes")
        return []
    if not has_pipelines:
        raise ConfigError("--probes runs the bias battery over pipeline entries; expected at least one --pipeline; "
                          "got none (recorded and released judges cannot judge probed texts)")
    chosen = resolve_probes(text, rewriter=rewriter is not None)
    if rewriter is None:
        check_rewriter(chosen, None)
    return chosen


def probe_kwargs(probes: list[Any], o: CompareOptions) -> dict[str, Any]:
    """``compare``'s probe arguments: the probes and, when given, the rewriter backend."""
    from mitigate.cli.build import RewriterOptions, build_backend

    if not probes:
        return {}
    return {"probes": probes, "rewriter": None if o.rewriter is None else build_backend(RewriterOptions(o)),
            "probe_tolerance": o.probe_tolerance}
