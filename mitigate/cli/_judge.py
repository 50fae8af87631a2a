"""``mitigate judge``: judge the first items of a benchmark and print each judgment beside the human score."""

import asyncio
import contextlib
import json
import sys
import tempfile
from collections.abc import Sequence
from contextlib import ExitStack
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, ClassVar, Literal

import typer

from mitigate.cli._app import command
from mitigate.cli._build import (
    Workload,
    batch_session,
    build_judge,
    dry_run_text,
    stream_workload,
    with_pipeline,
)
from mitigate.cli._errors import EXIT_FAILED, fail_when_all_failed, say_error
from mitigate.cli._files import run_dir, writable_file, writing_after_run
from mitigate.cli.options._backend import BATCH, BATCH_HELP, BackendOptions, BatchOptions, check_batch
from mitigate.cli.options._declare import Override
from mitigate.cli.options._prompt import Prompt, PromptOptions, ReducedAnswerOptions, Scale, parse_scale
from mitigate.cli.options._results import OUT, ThresholdOptions
from mitigate.cli.options._run import (
    ENGINE,
    PIPELINE,
    RAY_ADDRESS,
    RESTART,
    RUN_DIR,
    STOP_AFTER,
    WORKERS,
    Cache,
    DryRun,
    Progress,
    RunOptions,
)
from mitigate.cli.options._task import Limit, TaskOptions
from mitigate.data import Item
from mitigate.errors import MitigateError
from mitigate.judge import Judgment
from mitigate.paths import one_line, open_output, write_output
from mitigate.run import COLUMNS_FILE, Tally, preflight, run_stream

if TYPE_CHECKING:
    from mitigate.judge import Judge
    from mitigate.run import RunSummary


@dataclass(frozen=True)
class JudgeOptions(
    TaskOptions,
    BackendOptions,
    PromptOptions,
    ReducedAnswerOptions,
    RunOptions,
    BatchOptions,
    ThresholdOptions,
):
    """``mitigate judge``: the first items of a benchmark judged, each beside the human score."""

    COMMAND: ClassVar[str] = "judge"
    HELP_FIRST: ClassVar[dict[str, tuple[str, ...]]] = {
        "What to judge": ("benchmark", "criterion", "limit", "prompt"),
        "The judge": ("backend", "base_url", "pipeline", "samples", "temperature"),
        "Results": ("out", "run_dir", "dry_run", "config_file"),
    }

    pipeline: Annotated[str | None, PIPELINE] = None
    scale: Scale = None
    stop_after: Annotated[int, STOP_AFTER] = 3
    run_dir: Annotated[Path | None, RUN_DIR] = None
    restart: Annotated[bool, RESTART] = False
    out: Annotated[Path | None, OUT] = None
    dry_run: DryRun = False
    engine: Annotated[Literal["process", "ray"], ENGINE] = "process"
    ray_address: Annotated[str | None, RAY_ADDRESS] = None
    workers: Annotated[int, WORKERS] = 2

    limit: Limit = 5
    prompt: Annotated[Prompt, Override(help="judge prompt template file with {{slots}}")] = None
    cache: Annotated[Cache, Override(help="cache LM calls on disk (identical re-runs make no calls)")] = True
    progress: Annotated[Progress, Override(help="show a progress bar")] = True
    batch: Annotated[bool, BATCH, Override(help=BATCH_HELP + " (needs --run-dir)")] = False

    def check(self) -> None:
        """``--batch`` needs ``--run-dir`` and a backend with a batch API; ``--scale`` is MIN,MAX."""
        check_batch(
            self.backend, self.batch, self.batch_retries, folder=self.run_dir, folder_option="--run-dir"
        )
        parse_scale(self.scale)
        if self.engine == "ray" and self.batch:
            raise MitigateError("expected --batch or --engine ray; got both (a batch API needs one process)")

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
    task = stream_workload(o.benchmark, o.criterion, o.limit)
    base = build_judge(o, task, pipe, declared=o.dry_run)  # a dry run needs no SDK, key or model file
    lm = base.lm
    session = None if o.dry_run else batch_session(o.batch, o.run_dir, o.batch_retries, o.progress)
    try:
        judge_obj = with_pipeline(base, o.pipeline)
        if o.dry_run:
            typer.echo(dry_run_text([(o.pipeline or "baseline", judge_obj)], base, task.items))
            return
        outputs = Outputs(o, task, lm.spec)
        # every item fits the prompt: checked before anything is printed or called
        preflight(judge_obj, task.items)
        typer.echo(
            f"{task.benchmark.summary()}\njudging {len(task.items)} items on {task.criterion!r} with "
            f"{lm.spec}",
            err=True,
        )
        journal = o.run_dir / "journal.jsonl" if o.run_dir else None
        with outputs:
            if o.engine == "ray":
                stream: Any = on_ray(o, judge_obj, task, outputs)
            else:
                async with run_stream(
                    judge_obj,
                    task.items,
                    concurrency=o.concurrency,
                    journal=journal,
                    check=False,
                    restart=o.restart,
                    progress=o.progress,
                    stop_after=o.stop_after,
                    batch=session,
                ) as stream:
                    async for item, judgment in stream:
                        outputs.add(item, judgment)
    finally:
        if session is not None:
            await session.aclose()
            typer.echo(session.stats.line(), err=True)
        await lm.aclose()
    summary = stream.summary
    journals = o.run_dir / ("ray/journals" if o.engine == "ray" else "journal.jsonl") if o.run_dir else None
    kept = f"the journal {journals}" if journals else "the LM cache" if o.cache else None
    try:
        outputs.print_table()
        typer.echo(summary.line(), err=True)
        with writing_after_run(kept):
            outputs.finish(summary)
    finally:
        outputs.abandon()
    fail_when_all_failed(stream)
    if o.threshold is not None:
        threshold_gate(outputs.kept, task.criterion, o.threshold, o.require_pass_rate)


@dataclass
class RayRun:
    """What ``--engine ray`` counted: the tally of the judgments it read back and the run's summary."""

    tally: Tally
    summary: "RunSummary"


def on_ray(o: JudgeOptions, judge_obj: "Judge", task: Workload, outputs: "Outputs") -> RayRun:
    """Judge ``task`` on Ray Data (:func:`mitigate.run.judge_dataset`): the items written once as JSON lines
    (``--run-dir``/ray/items.jsonl, else a temporary folder), read as a Ray Dataset, judged by ``--workers``
    actors with a journal per batch under ``--run-dir``/ray/journals, and read back in item order into the
    same outputs a local run writes, plus ``--run-dir``/results.parquet (a row per item id)."""
    import shutil
    import time

    from mitigate.lm import why_unpriced
    from mitigate.run import items_file, judge_dataset, results_table, start_ray

    ray = start_ray(o.ray_address, progress=o.progress)
    start = time.perf_counter()
    tally = Tally()
    with ExitStack() as stack:
        temporary = Path(stack.enter_context(tempfile.TemporaryDirectory())) if o.run_dir is None else None
        folder = (temporary or o.run_dir / "ray").absolute()  # type: ignore[operator]
        if o.restart and (folder / "journals").exists():
            shutil.rmtree(folder / "journals")
        items_file(iter(task.items), folder / "items.jsonl")
        dataset = judge_dataset(
            ray.data.read_text(str(folder / "items.jsonl")),
            judge_obj,
            folder if o.run_dir else None,
            workers=o.workers,
            criterion=task.criterion,
            item_column="text",
            concurrency=o.concurrency,
            stop_after=o.stop_after,
        )
        parquet = None
        if o.run_dir is not None:
            import pyarrow.parquet as pq

            parquet = stack.enter_context(pq.ParquetWriter(o.run_dir / "results.parquet", results_table()))
        for batch in dataset.iter_batches(batch_size=None, batch_format="numpy"):
            judgments = []
            for text, judged, resumed in zip(batch["text"], batch["judgment"], batch["resumed"], strict=True):
                judgment = Judgment.model_validate_json(judged)
                tally.add(judgment, resumed=bool(resumed))
                outputs.add(Item.model_validate_json(text), judgment)
                judgments.append(judgment)
            if parquet is not None:
                parquet.write_table(results_table(judgments, task.criterion))
    note = "; ".join(dict.fromkeys(why_unpriced(leaf.lm) for leaf in judge_obj.leaves()))
    return RayRun(tally, tally.summary(time.perf_counter() - start, note or None))


class Outputs:
    """Where ``judge`` puts each judgment as the run yields it: the table for stdout (in a temporary file
    until the run ends), ``--out`` and ``--run-dir``'s columns, written as they come and put in place at the
    end. A file that cannot be written is closed at once and its error raised by :meth:`finish`, after the run
    (the journal and LM cache keep every judgment). With ``--threshold`` the gate's scores are kept.
    """

    def __init__(self, o: JudgeOptions, task: Workload, backend: str) -> None:
        self.o = o
        self.task = task
        self.about = {"benchmark": task.benchmark.name, "criterion": task.criterion, "backend": backend}
        self.kept: list[Judgment] = []
        self.table = tempfile.SpooledTemporaryFile(max_size=2**20, mode="w+", encoding="utf-8")
        self.files: dict[str, tuple[ExitStack, Any]] = {}
        self.rows = 0
        self.errors: list[BaseException] = []

    def __enter__(self) -> "Outputs":
        o = self.o
        if o.out is not None:
            from mitigate.report import JudgmentsWriter, check_out_path, is_csv

            stack = ExitStack()
            handle = stack.enter_context(
                open_output(check_out_path(o.out), "--out", newline="" if is_csv(o.out) else None)
            )
            self.files["out"] = (
                stack,
                JudgmentsWriter(handle, csv_format=is_csv(o.out), criterion=self.task.criterion),
            )
        if o.run_dir is not None:
            from mitigate.run import ColumnWriter

            stack = ExitStack()
            try:
                writer = stack.enter_context(
                    ColumnWriter(o.run_dir / COLUMNS_FILE, self.about, criterion=self.task.criterion)
                )
            except BaseException:
                self._close_all(*sys.exc_info())
                raise
            self.files["columns"] = (stack, writer)
        return self

    def __exit__(self, exc_type: Any, exc: Any, tb: Any) -> None:
        if exc_type is not None:  # the run did not finish: no file is put in place
            self._close_all(exc_type, exc, tb)

    def abandon(self) -> None:
        """Close what :meth:`finish` did not put in place, leaving the files there were."""
        if self.files:
            self._close_all(RuntimeError, RuntimeError("not finished"), None)
        if not self.table.closed:
            self.table.close()

    def _close_all(self, exc_type: Any, exc: Any, tb: Any) -> None:
        for name in list(self.files):
            self._close(name, exc_type, exc, tb)

    def _close(self, name: str, exc_type: Any, exc: Any, tb: Any) -> None:
        """Close the file ``name`` as after ``exc``: what was there before it stays."""
        stack, _ = self.files.pop(name)
        with contextlib.suppress(BaseException):
            stack.__exit__(exc_type, exc, tb)

    def add(self, item: Item, judgment: "Judgment") -> None:
        """One judgment, in item order: a line of the table, a row of each file."""
        self.rows += 1
        self.table.write(table_line(judgment, item, self.task) + "\n")
        for name, (_, writer) in list(self.files.items()):
            try:
                if name == "out":
                    writer.write(judgment, item)
                else:
                    writer.append(item, judgment)
            except (MitigateError, OSError) as error:
                self._close(name, type(error), error, error.__traceback__)
                self.errors.append(error)
        if self.o.threshold is not None:
            j = judgment
            self.kept.append(Judgment(item_id=j.item_id, scores=j.scores, samples=j.samples, error=j.error))

    def print_table(self) -> None:
        """The table on stdout: one line per judgment, in item order."""
        self.table.seek(0)
        while chunk := self.table.read(2**16):
            typer.echo(chunk, nl=False)
        self.table.close()

    def finish(self, summary: "RunSummary") -> None:
        """Put the files in place and write ``results.json``; then raise the first write that failed."""
        o = self.o
        for name in list(self.files):
            stack, _ = self.files.pop(name)
            try:
                stack.close()
            except (MitigateError, OSError) as error:
                self.errors.append(error)
            else:
                shown = o.out if name == "out" else o.run_dir / COLUMNS_FILE if o.run_dir else name
                typer.echo(
                    f"wrote {shown} ({self.rows} {'rows' if name == 'out' else 'judgments as columns'})",
                    err=True,
                )
        if o.run_dir:
            results = {**self.about, "summary": summary.model_dump(mode="json"), "columns": COLUMNS_FILE}
            out = write_output(o.run_dir / "results.json", json.dumps(results, indent=1), "the results file")
            typer.echo(f"wrote {out}", err=True)
        if self.errors:
            raise self.errors[0]


def threshold_gate(
    judgments: Sequence["Judgment"], criterion: str, threshold: float, require: float | None
) -> None:
    """Print the threshold gate; exit 1 (one line) when a required pass rate is not shown to be met."""
    from mitigate.diff import threshold_report, threshold_text

    report = threshold_report(judgments, criterion, threshold, require=require)
    typer.echo(threshold_text(report))
    if report.decision not in (None, "pass"):
        say_error(
            f"pass rate {report.pass_rate:.3f} [{report.low or 0:.3f}, {report.high or 0:.3f}] at "
            f"{criterion} >= {threshold:g}: {report.decision}, required {require:g}"
        )
        raise typer.Exit(code=EXIT_FAILED)


def table_line(j: "Judgment", item: Item, task: Workload) -> str:
    """One judgment as a table line: item id, the judge's score (or FAILED), the human one, a detail."""
    crit, pairwise = task.criterion, task.benchmark.pairwise  # pairwise: a verdict beside the gold preference
    value: Any = j.verdict if pairwise else j.scores.get(crit)
    gold: Any = item.preference.get(crit) if pairwise else item.human.get(crit)
    shown = "FAILED" if value is None else str(value) if pairwise else f"{value:g}"
    human = ("gold=" if pairwise else "human=") + (
        "-" if gold is None else str(gold) if pairwise else f"{gold:.2f}"
    )
    raw = first_line(j.raw[0] if j.raw else "")
    detail = j.error or (j.failures[0].reason if j.failures and value is None else raw)
    return f"{one_line(j.item_id)}\tjudge={shown}\t{human}\t{one_line(first_line(detail))}"


def first_line(text: str, width: int = 100) -> str:
    """``text`` flattened to one line of at most ``width`` characters."""
    flat = " ".join(text.split())
    return flat if len(flat) <= width else flat[: width - 1] + "…"
