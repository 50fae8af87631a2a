"""``mitigate judge``: judge the first items of a benchmark and print each judgment beside the human score."""

# no ``from __future__ import annotations``: the option annotations are read by Typer and must be real objects

import asyncio
import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, ClassVar

import typer

from mitigate.cli.app import command
from mitigate.cli.build import Task, batch_session, build_judge, dry_run_text, load_task, with_pipeline
from mitigate.cli.errors import EXIT_FAILED, fail_when_all_failed, say_error
from mitigate.cli.files import run_dir, writable_file, writing_after_run
from mitigate.cli.options import (
    BackendOptions,
    BatchOptions,
    Override,
    PromptOptions,
    ReducedAnswerOptions,
    RunOptions,
    TaskOptions,
    ThresholdOptions,
    check_batch,
    parse_scale,
)
from mitigate.cli.options.backend import BATCH, BATCH_HELP
from mitigate.cli.options.prompt import Prompt, Scale
from mitigate.cli.options.results import OUT
from mitigate.cli.options.run import PIPELINE, RESTART, RUN_DIR, STOP_AFTER, Cache, DryRun, Progress
from mitigate.cli.options.task import Limit
from mitigate.paths import one_line, write_output
from mitigate.run.runner import preflight, run

if TYPE_CHECKING:
    from mitigate.judge import Judgment
    from mitigate.run.runner import RunResult

# Imported where used: the strategies (--pipeline), the judgments file (--out) and the threshold report
# (--threshold), so a plain judge loads none of them.


@dataclass(frozen=True)
class JudgeOptions(TaskOptions, BackendOptions, PromptOptions, ReducedAnswerOptions, RunOptions, BatchOptions,
                   ThresholdOptions):
    """``mitigate judge``: judge the first items of a benchmark and print each judgment beside the human
    score."""

    COMMAND: ClassVar[str] = "judge"
    HELP_FIRST: ClassVar[dict[str, tuple[str, ...]]] = {
        "What to judge": ("benchmark", "criterion", "limit", "prompt"),
        "The judge": ("backend", "base_url", "pipeline", "samples", "temperature"),
        "Results": ("out", "run_dir", "dry_run", "config_file"),
    }
    """The options ``--help`` shows, grouped (``--help-all`` and docs/cli.md: every option)."""

    pipeline: Annotated[str | None, PIPELINE] = None
    scale: Scale = None
    stop_after: Annotated[int, STOP_AFTER] = 3
    run_dir: Annotated[Path | None, RUN_DIR] = None
    restart: Annotated[bool, RESTART] = False
    out: Annotated[Path | None, OUT] = None
    dry_run: DryRun = False

    limit: Limit = 5
    prompt: Annotated[Prompt, Override(help="judge prompt template file with {{slots}}")] = None
    cache: Annotated[Cache, Override(help="cache LM calls on disk (identical re-runs make no calls)")] = True
    progress: Annotated[Progress, Override(help="show a progress bar")] = True
    batch: Annotated[bool, BATCH, Override(help=BATCH_HELP + " (needs --run-dir)")] = False

    def check(self) -> None:
        """``--batch`` needs ``--run-dir`` and a backend with a batch API; ``--scale`` is MIN,MAX."""
        check_batch(self.backend, self.batch, self.batch_retries, folder=self.run_dir,
                    folder_option="--run-dir")
        parse_scale(self.scale)

    @property
    def scale_range(self) -> tuple[float, float] | None:
        """``--scale`` as (min, max), None when the prompt says."""
        return parse_scale(self.scale)


@command("judge", JudgeOptions)
def judge(options: JudgeOptions) -> None:
    """Judge the first items of a benchmark and print each judgment beside the human score."""
    if options.out is not None:
        writable_file(options.out, "--out")
    with run_dir(options.run_dir):
        asyncio.run(_judge(options))


async def _judge(o: JudgeOptions) -> None:
    pipe = None
    if o.pipeline is not None:
        from mitigate.strategies import parse_pipeline

        pipe = parse_pipeline(o.pipeline)  # bad text fails before data or calls
    task = load_task(o.benchmark, o.criterion, o.limit)
    base = build_judge(o, task, pipe, declared=o.dry_run)  # a dry run needs no SDK, key or model file
    lm = base.lm
    if o.dry_run:
        try:
            judge_obj = with_pipeline(base, o.pipeline)
            typer.echo(dry_run_text([(o.pipeline or "baseline", judge_obj)], base, task.items))
        finally:
            await lm.aclose()
        return
    session = batch_session(o.batch, o.run_dir, o.batch_retries, o.progress)
    try:
        judge_obj = with_pipeline(base, o.pipeline)
        # every item fits the prompt: checked before anything is printed or called
        preflight(judge_obj, task.items)
        typer.echo(f"{task.benchmark.summary()}\njudging {len(task.items)} items on {task.criterion!r} with "
                   f"{lm.spec}", err=True)
        journal = o.run_dir / "journal.jsonl" if o.run_dir else None
        result = await run(judge_obj, task.items, concurrency=o.concurrency, journal=journal, check=False,
                           restart=o.restart, progress=o.progress, stop_after=o.stop_after, batch=session)
    finally:
        if session is not None:
            await session.aclose()
            typer.echo(session.stats.line(), err=True)
        await lm.aclose()
    _print_judgments(result, task)
    typer.echo(result.summary.line(), err=True)
    kept = (f"the journal {o.run_dir / 'journal.jsonl'}" if o.run_dir else
            "the LM cache" if o.cache else None)
    with writing_after_run(kept):
        if o.out is not None:
            from mitigate.harness.judgments_file import write_judgments  # lazy: only for --out

            written = write_judgments(result, o.out, items=task.items, criterion=task.criterion)
            typer.echo(f"wrote {written} ({len(result.judgments)} rows)", err=True)
        if o.run_dir:
            out = write_output(o.run_dir / "results.json", json.dumps({
                "benchmark": task.benchmark.name, "criterion": task.criterion, "backend": lm.spec,
                "summary": result.summary.model_dump(mode="json"),
                "judgments": [j.model_dump(mode="json") for j in result.judgments],
            }, indent=1), "the results file")
            typer.echo(f"wrote {out}", err=True)
    fail_when_all_failed(result)
    if o.threshold is not None:
        threshold_gate(result.judgments, task.criterion, o.threshold, o.require_pass_rate)


def threshold_gate(judgments: Sequence["Judgment"], criterion: str, threshold: float,
                   require: float | None) -> None:
    """Print the threshold gate; exit 1 (one line on stderr) when a required pass rate is not shown to be
    met."""
    from mitigate.harness.threshold import threshold_report, threshold_text

    report = threshold_report(judgments, criterion, threshold, require=require)
    typer.echo(threshold_text(report))
    if report.decision not in (None, "pass"):
        say_error(f"pass rate {report.pass_rate:.3f} [{report.low or 0:.3f}, {report.high or 0:.3f}] at "
                  f"{criterion} >= {threshold:g}: {report.decision}, required {require:g}")
        raise typer.Exit(code=EXIT_FAILED)


def _print_judgments(result: "RunResult", task: Task) -> None:
    """One line per judgment on stdout: item id, the judge's score (or FAILED), the human score, a detail.

    The table is written once, not one flushed write per judgment (a 1,000-judgment rerun prints fast).
    """
    by_id = {it.id: it for it in task.items}
    lines: list[str] = []
    for j in result.judgments:
        item = by_id[j.item_id]
        if task.benchmark.pairwise:  # a verdict beside the gold preference
            gold = item.preference.get(task.criterion)
            shown = "FAILED" if j.verdict is None else str(j.verdict)
            human_s = "-" if gold is None else str(gold)
            detail = j.error or (j.failures[0].reason if j.failures and j.verdict is None else
                                 first_line(j.raw[0] if j.raw else ""))
            lines.append(f"{one_line(j.item_id)}\tjudge={shown}\tgold={human_s}\t{one_line(first_line(detail))}")
            continue
        human = item.human.get(task.criterion)
        score = j.scores.get(task.criterion)
        shown = "FAILED" if score is None else f"{score:g}"
        human_s = "-" if human is None else f"{human:.2f}"
        detail = j.error or (j.failures[0].reason if j.failures and score is None
                             else first_line(j.raw[0] if j.raw else ""))
        lines.append(f"{one_line(j.item_id)}\tjudge={shown}\thuman={human_s}\t{one_line(first_line(detail))}")
    if lines:
        typer.echo("\n".join(lines))


def first_line(text: str, width: int = 100) -> str:
    """``text`` flattened to one line of at most ``width`` characters."""
    flat = " ".join(text.split())
    return flat if len(flat) <= width else flat[: width - 1] + "…"
