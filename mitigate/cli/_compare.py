"""``mitigate compare``: mitigation pipelines, recorded and released judges on one benchmark, side by side."""

# no ``from __future__ import annotations``: the option annotations are read by Typer and must be real objects

import asyncio
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any, ClassVar

import typer

from mitigate.cli._app import command
from mitigate.cli._build import (
    Workload,
    batch_session,
    build_judge,
    dry_run_text,
    load_benchmark,
    named_probes,
    recorded_reader,
    scoring_for,
)
from mitigate.cli._config import split_label
from mitigate.cli._errors import EXIT_FAILED, say_error
from mitigate.cli._files import check_run_folder, say_interrupted, writable_dir, writing_after_run
from mitigate.cli.options._backend import (
    BATCH,
    BATCH_HELP,
    DEFAULT_BACKEND,
    Backend,
    BackendOptions,
    BatchOptions,
    check_batch,
)
from mitigate.cli.options._declare import Override, check
from mitigate.cli.options._prompt import PromptOptions, SampledAnswerOptions, Samples, Temperature
from mitigate.cli.options._results import LIKELIHOOD, OUT, ProbeBattery, StatsOptions, ThresholdOptions
from mitigate.cli.options._run import PIPELINE, RESTART, DryRun, RunOptions
from mitigate.cli.options._task import LABELS, RECORDED, RELEASED, TRAIN, TaskOptions
from mitigate.constraints import Interval
from mitigate.errors import ConfigError
from mitigate.harness import CompareConfig, ComparePlan, Entry, check_compare, compare
from mitigate.judge import Judge, PromptJudge
from mitigate.report import render_summary, write_report
from mitigate.run import COLUMNS_FILE
from mitigate.strategies import parse_pipeline

# Imported where used: the bias probes (--probes), the threshold section (--threshold), the split of a dry
# run.


@dataclass(frozen=True)
class CompareOptions(
    TaskOptions,
    BackendOptions,
    PromptOptions,
    SampledAnswerOptions,
    RunOptions,
    BatchOptions,
    StatsOptions,
    ProbeBattery,
    ThresholdOptions,
):
    """``mitigate compare``: pipelines, recorded and released judges on one benchmark, side by side."""

    COMMAND: ClassVar[str] = "compare"
    HELP_FIRST: ClassVar[dict[str, tuple[str, ...]]] = {
        "What to compare": (
            "benchmark",
            "criterion",
            "limit",
            "pipeline",
            "recorded",
            "released",
            "train",
            "labels",
        ),
        "The judge": ("backend", "base_url", "prompt"),
        "Results": ("out", "dry_run", "config_file", "save_config"),
    }
    """The options ``--help`` shows, grouped (``--help-all`` and docs/cli.md: every option)."""

    pipeline: Annotated[
        list[str] | None,
        PIPELINE,
        Override(
            flags=("--pipeline", "-p"),
            help=(
                'a mitigation pipeline to compare, e.g. baseline, "name(k=v) | name2" or @file.json, '
                "optionally "
                'named for the report: "NAME=pipeline"; repeat for several (the first entry is '
                "the reference)"
            ),
        ),
    ] = None
    recorded: Annotated[list[Path] | None, RECORDED] = None
    released: Annotated[list[str] | None, RELEASED] = None
    train: Annotated[str | None, TRAIN] = None
    labels: Annotated[
        list[Path] | None,
        LABELS,
        Override(
            help=(
                "a labels file (CSV or JSON lines with id,label[,weight]; a filled selection file of "
                "mitigate "
                "estimate --select is one) whose labels are added to the benchmark's: when some compared "
                "items are "
                "labelled and some not, each entry gets its bias-corrected estimate per system beside its "
                "raw mean; "
                "repeat for several"
            )
        ),
    ] = None
    out: Annotated[
        Path, OUT, Override(help="folder for journals, results.json, report.md and plots (a rerun resumes)")
    ] = Path("reports/compare")
    samples: Annotated[Samples, Override(help="samples per item of the base judge")] = 1
    likelihood: Annotated[bool, LIKELIHOOD] = False
    restart: Annotated[bool, RESTART, Override(help="discard existing journals in --out")] = False
    dry_run: DryRun = False

    backend: Annotated[
        Backend,
        Override(
            help="LM for the pipelines: openai:<model>, anthropic:<model>, dspy:<model>, "
            "local, local:<path.gguf>"
        ),
    ] = DEFAULT_BACKEND
    temperature: Annotated[Temperature, Override(help="sampling temperature of the base judge")] = 0.0
    batch: Annotated[bool, BATCH, Override(help=BATCH_HELP + "; the pipelines' requests share batches")] = (
        False
    )

    def check(self) -> None:
        """``--batch`` needs a backend with a batch API (when a pipeline calls one); a ``--train`` fraction in
        (0, 1)."""
        # released or recorded judges alone make no call
        check_batch(
            self.backend, self.batch, self.batch_retries, folder=self.out, calls_lm=bool(self.pipeline)
        )
        self.train_split  # noqa: B018 - a bad --train fraction is refused here

    @property
    def train_split(self) -> float | str | None:
        """``--train``: a fraction strictly between 0 and 1, a benchmark name / ``jsonl:<path>``, or None."""
        if self.train is None:
            return None
        try:
            fraction = float(self.train)
        except ValueError:
            return self.train
        check(self.COMMAND, "--train", fraction, Interval(float, 0.0, 1.0, closed="neither"))
        return fraction


@command("compare", CompareOptions)
def compare_cmd(options: CompareOptions) -> None:
    """Compare pipelines, recorded and released judges on a benchmark: accuracy and bias side by side."""
    writable_dir(options.out, "--out")
    check_run_folder(options.out)
    try:
        asyncio.run(_compare(options, command_line=" ".join(["mitigate", *sys.argv[1:]])))
    except KeyboardInterrupt:
        say_interrupted(options.out, "--out")
        raise


async def _compare(o: CompareOptions, command_line: str) -> None:
    pipelines = list(o.pipeline or [])
    recorded = list(o.recorded or [])
    released = list(o.released or [])
    if not pipelines and not released and not recorded:
        raise ConfigError(
            "expected at least one --pipeline (e.g. --pipeline baseline), --recorded file or "
            "--released judge; got none"
        )
    labelled = [split_label(text) for text in pipelines]  # "NAME=pipeline": NAME is what the report shows
    # bad text fails before data or calls
    parsed = [(label or text.strip() or "baseline", parse_pipeline(text)) for label, text in labelled]
    chosen_probes = compare_probes(o.probes, o.rewriter, bool(pipelines))
    bench, crit = load_benchmark(o.benchmark, o.criterion)  # the items are chosen once, by the plan
    entries: list[Entry] = []
    lm = None
    base = None
    if pipelines:  # recorded and released judges alone call no LM: no backend is built
        # a dry run needs no SDK, key or model file; the base judge reads answers as the first entry does
        base = build_judge(o, Workload(bench, crit, ()), parsed[0][1], declared=o.dry_run)
        lm = base.lm
        # --scoring auto reads the text of an entry asking for reasoning
        for k, (name, pipe) in enumerate(parsed):
            own = base if k == 0 else base.with_config(**scoring_for(o, lm, base.prompt, pipe))
            entries.append(Entry.from_pipeline(name, own, pipe))
    read = recorded_reader(o, crit, bench) if recorded else None
    for path in recorded:
        entries += Entry.all_recorded(path, crit, read)
    entries += [e for name in released for e in Entry.all_released(name, crit)]
    config = CompareConfig(
        benchmark=bench,
        criterion=crit,
        entries=tuple(entries),
        out_dir=o.out,
        concurrency=o.concurrency,
        limit=o.limit or None,
        likelihood=o.likelihood,
        progress=o.progress,
        n_boot=o.n_boot,
        seed=o.seed,
        restart=o.restart,
        command=command_line,
        train=o.train_split,
        report=False,  # the report stage runs below, once the run's journals are safe
        labels=tuple(o.labels or ()),
    )
    plan = check_compare(config)  # the one plan: checked before any output, then run as it is
    session = (
        None if o.dry_run else batch_session(o.batch and bool(pipelines), o.out, o.batch_retries, o.progress)
    )
    probe_kw = {} if o.dry_run else probe_kwargs(chosen_probes, o)
    try:
        if o.dry_run:
            typer.echo(_dry_run(plan, base))
            return
        if plan.outside:
            typer.echo(plan.outside, err=True)
        typer.echo(
            f"{bench.summary()}\ncomparing {len(entries)} entries on {crit!r}: "
            f"{', '.join(e.name for e in entries)}",
            err=True,
        )
        result = await compare(plan.with_options(batch=session, **probe_kw))
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
    section = ""
    if o.threshold is not None:
        from mitigate.diff import threshold_section

        section = threshold_section(result, o.threshold, o.require_pass_rate)
    with writing_after_run(f"the journals in {o.out / 'journals'}"):
        paths = write_report(result.model_copy(update={"appendix": section}), o.out)
    typer.echo(render_summary(result))
    if section:
        typer.echo(section)
    paths.insert(1, o.out / COLUMNS_FILE)  # written by the judge stage
    typer.echo("wrote " + ", ".join(str(p) for p in paths), err=True)
    failed = [e for e in result.entries if e.summary.items and e.summary.errors == e.summary.items]
    if failed:
        first = next((j.error for j in failed[0].judgments if j.error), "")
        say_error(f"every item of {', '.join(repr(e.name) for e in failed)} failed; the first: {first}")
        raise typer.Exit(code=EXIT_FAILED)


def _dry_run(plan: ComparePlan, base: PromptJudge | None) -> str:
    """Every entry's requests for the first item it would judge; entries fitted first when that needs no LM
    call."""
    shown: list[tuple[str, Judge]] = []
    notes: list[str] = []
    for e in plan.entries:
        if e.kind != "pipeline":
            notes.append(f"### entry {e.name!r}: replays {e.kind} answers, sends no LM request")
            continue
        judge = e.judge
        if judge is None:  # still to be fitted (the plan refused it without a train split)
            assert e.pipeline is not None and e.base is not None and plan.train is not None
            if e.pipeline.tags.calls_judge_while_fitting:
                notes.append(
                    f"### entry {e.name!r}: calls the judge while fitting on --train, so its fitted "
                    "requests cannot be shown without LM calls (a dry run makes none)"
                )
                continue
            judge = e.pipeline.compile(e.base, plan.train, progress=False)
        shown.append((e.name, judge))
    text = dry_run_text(shown, base, plan.items) if shown and base is not None else ""
    return "\n\n".join([*notes, text]).strip()


def compare_probes(text: str | None, rewriter: str | None, has_pipelines: bool) -> list[Any]:
    """The probes ``compare --probes`` names (checked before data or calls); [] without the option.

    ``--rewriter`` and ``--probe-tolerance`` without ``--probes`` were refused with the options.
    """
    if text is None:
        return []
    if not has_pipelines:
        raise ConfigError(
            "--probes runs the bias battery over pipeline entries; expected at least one "
            "--pipeline; got none (recorded and released judges cannot judge probed texts)"
        )
    return named_probes(text, rewriter)


def probe_kwargs(probes: list[Any], o: CompareOptions) -> dict[str, Any]:
    """``compare``'s probe arguments: the probes and, when given, the rewriter backend."""
    from mitigate.cli._build import RewriterOptions, build_backend  # the rewriter: only with --probes

    if not probes:
        return {}
    return {
        "probes": probes,
        "rewriter": None if o.rewriter is None else build_backend(RewriterOptions(o)),
        "probe_tolerance": o.probe_tolerance,
    }
