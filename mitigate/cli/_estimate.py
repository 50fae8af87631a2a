"""``mitigate estimate``: each system's bias-corrected mean from a judge on every item and a few human
labels."""

import json
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, ClassVar, Literal

import typer

from mitigate.cli._app import command
from mitigate.cli._files import run_dir, writable_file
from mitigate.cli.options._backend import DEFAULT_BACKEND, Backend, BackendOptions
from mitigate.cli.options._declare import Override, option
from mitigate.cli.options._prompt import Prompt, PromptOptions, SampledAnswerOptions, Samples
from mitigate.cli.options._results import JSON, OUT, PLAN, PLOT, Seed
from mitigate.cli.options._run import PIPELINE, RUN_DIR, RunOptions
from mitigate.cli.options._task import JUDGE, LABELS, RECORDED, RELEASED, Criterion, Limit, TaskOptions
from mitigate.constraints import Interval
from mitigate.errors import ConfigError

if TYPE_CHECKING:
    from mitigate.cli._build import LoadedWorkload
    from mitigate.data import Benchmark, Item

# the choices of the estimators' Method, By, Target, tuned slope and Calibration (mitigate.estimators)
Method = Literal["ppi", "calibrated", "human", "judge"]
By = Literal["auto", "system", "pair", "none"]
Target = Literal["items", "population"]
Tune = Literal["overall", "group"]
Calibration = Literal["isotonic", "linear"]

METHOD = option(
    "method",
    help="ppi (PPI++ with power tuning: the judge's values corrected by the labels), calibrated (a "
    "cross-fitted judge-to-human calibration), human (the labels alone) or judge (the judge's mean alone, "
    "NOT bias-corrected); the labels-alone and judge-alone values are always shown beside",
)
BY = option(
    "by",
    "--by",
    help="group by system (the default when every item names its system), pair (pairwise: each "
    "system pair) or none (one estimate over all items)",
)
CONFIDENCE = option(
    "confidence",
    help="confidence level of the intervals",
    accepts=(Interval(float, 0.0, 1.0, closed="neither"),),
)
TARGET = option(
    "target",
    help="items: the mean over each group's items had every one been labelled; population: the "
    "mean of the distribution the items were drawn from (wider)",
)
LABELS_PER_GROUP = option(
    "labels_per_group",
    "--labels-per-group",
    help="experiment on a labelled benchmark: keep this many labels per group, drawn with --seed, and "
    "hide the rest (their mean is shown as 'all labels')",
    accepts=(Interval(int, 2, None),),
)
LABELLED_FRACTION = option(
    "labelled_fraction",
    "--labelled-fraction",
    help="experiment: keep this share of each group's labels (drawn with --seed)",
    accepts=(Interval(float, 0.0, 1.0, closed="right"),),
)
TUNE = option(
    "tune",
    help="with --method ppi: overall (one judge slope fitted on every group's labels, each group "
    "keeping its own intercept) or group (one slope per group, from its own labels)",
)
CALIBRATION = option("calibration", help="with --method calibrated: isotonic or linear")
FOLDS = option(
    "folds", help="with --method calibrated: cross-fitting folds", accepts=(Interval(int, 2, None),)
)
CONTRASTS = option(
    "contrasts",
    help="also the differences between groups: 'all' (every pair) or pairs A:B separated by commas, with "
    "intervals that hold jointly (Bonferroni over the pairs)",
)
SELECT = option(
    "select",
    "--select",
    help="also choose N unlabelled items to label next and write them to "
    "--select-out, with the weights that keep the estimate unbiased (not recommended for now: on released "
    "judges it has not beaten labels drawn at random; see docs/estimate.md)",
    accepts=(Interval(int, 1, None),),
)
SELECT_OUT = option(
    "select_out",
    "--select-out",
    help="where --select writes the items to label (.csv, or JSON lines otherwise)",
)
FLOOR = option(
    "floor",
    help="with --select: share of the labels spread evenly over the unlabelled items (the rest "
    "goes where the judge is least reliable)",
    accepts=(Interval(float, 0.0, 1.0, closed="right"),),
)


@dataclass(frozen=True)
class EstimateOptions(TaskOptions, BackendOptions, PromptOptions, SampledAnswerOptions, RunOptions):
    """``mitigate estimate``: each system's mean label from a judge on every item and human labels on a
    few."""

    COMMAND: ClassVar[str] = "estimate"
    HELP_FIRST: ClassVar[dict[str, tuple[str, ...]]] = {
        "What to estimate": ("benchmark", "criterion", "recorded", "released", "labels", "labels_per_group"),
        "How": ("method", "by", "confidence", "contrasts"),
        "Label budget": ("plan", "select", "select_out"),
        "Results": ("json", "out", "plot"),
    }

    recorded: Annotated[
        Path | None,
        RECORDED,
        Override(help="the judge's recorded judgments (JSON lines or .csv, see docs/recorded_format.md)"),
    ] = None
    judge: Annotated[
        str | None,
        JUDGE,
        Override(help="with --recorded: which judge of the file (needed when it holds several)"),
    ] = None
    released: Annotated[
        str | None,
        RELEASED,
        Override(
            help="a released judge to replay, e.g. chatgpt-rts, gpt4-rts "
            "(summeval), chatgpt-h2h (summeval-h2h)"
        ),
    ] = None
    pipeline: Annotated[
        str | None,
        PIPELINE,
        Override(
            flags=("--pipeline", "-p"),
            help=(
                'judge every item live with this pipeline (e.g. baseline, "name(k=v) | name2" or @file.json) '
                "on --backend"
            ),
        ),
    ] = None
    method: Annotated[Method, METHOD] = "ppi"
    by: Annotated[By, BY] = "auto"
    confidence: Annotated[float, CONFIDENCE] = 0.95
    target: Annotated[Target, TARGET] = "items"
    contrasts: Annotated[str | None, CONTRASTS] = None
    labels: Annotated[list[Path] | None, LABELS] = None
    labels_per_group: Annotated[int | None, LABELS_PER_GROUP] = None
    labelled_fraction: Annotated[float | None, LABELLED_FRACTION] = None
    tune: Annotated[Tune, TUNE] = "overall"
    calibration: Annotated[Calibration, CALIBRATION] = "isotonic"
    folds: Annotated[int, FOLDS] = 5
    seed: Annotated[Seed, Override(help="seed of the hidden labels, the folds and the selection")] = 0
    plan: Annotated[float | None, PLAN] = None
    select: Annotated[int | None, SELECT] = None
    select_out: Annotated[Path, SELECT_OUT] = Path("selection.csv")
    floor: Annotated[float, FLOOR] = 0.2
    plot: Annotated[Path | None, PLOT, Override(help="write a plot of the estimates (PNG, SVG or PDF)")] = (
        None
    )
    json: Annotated[bool, JSON, Override(help="print one JSON object instead of the table")] = False
    out: Annotated[Path | None, OUT, Override(help="also write the JSON object to this file")] = None
    run_dir: Annotated[
        Path | None, RUN_DIR, Override(help="with --pipeline: folder for the journal (a rerun resumes)")
    ] = None

    criterion: Annotated[
        Criterion, Override(help="criterion to estimate (default: the benchmark's first)")
    ] = None
    limit: Annotated[Limit, Override(help="only the first N items, document by document (0 = all)")] = 0
    backend: Annotated[
        Backend,
        Override(
            help="LM of --pipeline: openai:<model>, anthropic:<model>, dspy:<model>, local, local:<path.gguf>"
        ),
    ] = DEFAULT_BACKEND
    prompt: Annotated[
        Prompt,
        Override(
            help="judge prompt template file (default: the built-in prompt for the criterion); with "
            "--recorded, reads rows that hold only the judge's raw text"
        ),
    ] = None
    samples: Annotated[Samples, Override(help="samples per item of the live judge")] = 1

    def check(self) -> None:
        """One judge (recorded, released or live); --judge with --recorded; one way of hiding labels;
        --run-dir with --pipeline; no --select for the judge-alone method."""
        judges = {"--recorded": self.recorded, "--released": self.released, "--pipeline": self.pipeline}
        given = [flag for flag, value in judges.items() if value is not None]
        if len(given) != 1:
            raise ConfigError(
                "expected one judge: --recorded FILE, --released NAME or --pipeline PIPELINE "
                f"(a live judge on --backend); got {' and '.join(given) if given else 'none'}"
            )
        if self.judge is not None and self.recorded is None:
            raise ConfigError(
                f"--judge names a judge of a --recorded file; got --judge {self.judge!r} without --recorded"
            )
        if self.labels_per_group is not None and self.labelled_fraction is not None:
            raise ConfigError("expected one of --labels-per-group and --labelled-fraction; got both")
        if self.run_dir is not None and self.pipeline is None:
            raise ConfigError("--run-dir keeps the journal of a live judge; expected --pipeline with it")
        if self.method == "judge" and self.select is not None:
            raise ConfigError(
                "--select chooses labels for a bias-corrected method; got --method judge (use "
                "ppi, calibrated or human)"
            )


@command("estimate", EstimateOptions)
def estimate_cmd(options: EstimateOptions) -> None:
    """Estimate each system's mean human label from a judge on every item and human labels on a few.

    The labelled items must be a random draw from each group (or drawn by --select, whose file carries the
    weights); the estimate then corrects the judge's bias, with an interval that accounts for it.
    """
    for path, flag in ((options.plot, "--plot"), (options.out, "--out")):
        if path is not None:
            writable_file(path, flag)
    if options.plot is not None:
        from mitigate.report import check_plot_path

        check_plot_path(options.plot, "--plot")
    if options.select is not None:
        writable_file(options.select_out, "--select-out")
    with run_dir(options.run_dir):
        _estimate(options)


def _group_key(by: str, pairwise: bool) -> Any:
    """How labels are grouped when some are hidden: by the estimate's groups (pairwise by system: per
    pair)."""
    if by == "none":
        return None
    if pairwise:
        return lambda it: (
            f"{min(str(it.system), str(it.system_b))} vs {max(str(it.system), str(it.system_b))}"
        )
    return lambda it: str(it.system)


def _labelled_benchmark(
    o: EstimateOptions, task: "LoadedWorkload"
) -> tuple["Benchmark", dict[str, float] | None, dict[str, float], dict[str, int], list[str]]:
    """The benchmark of the chosen items with labels hidden (an experiment) and labels files added.

    Returns it, the labels before hiding (None when none were hidden), the selection weights and rounds (the
    weighted files in the order given are rounds 1, 2 ...), and notes.
    """
    from mitigate.data import add_label_files, hide_labels
    from mitigate.estimators import resolve_by

    bench = task.benchmark.model_copy(update={"items": task.items})
    crit = task.criterion
    truth = None
    notes: list[str] = []
    if o.labels_per_group is not None or o.labelled_fraction is not None:
        by = resolve_by(bench.items, o.by)
        bench, truth = hide_labels(
            bench,
            crit,
            per_group=o.labels_per_group,
            fraction=o.labelled_fraction,
            seed=o.seed,
            group=_group_key(by, bench.pairwise),
        )
        unit = "system pair" if bench.pairwise and by == "system" else "group"
        kept = f"labels per {unit}" if o.labels_per_group is not None else f"of each {unit}'s labels"
        amount = o.labels_per_group if o.labels_per_group is not None else f"{o.labelled_fraction:.0%}"
        notes.append(
            f"an experiment: {amount} {kept} kept (seed {o.seed}), the other labels hidden; 'all "
            "labels' is the mean of every label"
        )
    added = add_label_files(bench, crit, o.labels or [])
    return added.benchmark, truth, added.weights, added.rounds, notes


def _judge_source(o: EstimateOptions, task: "LoadedWorkload", items: list["Item"]) -> Any:
    """The judge's values: a recorded or released run, or the judgments of a live run over ``items``."""
    if o.recorded is not None or o.released is not None:
        from mitigate.cli._build import recorded_reader, replayed_run

        read = recorded_reader(o, task.criterion, task.benchmark) if o.recorded is not None else None
        return replayed_run(o.recorded, o.judge, o.released, read)
    import asyncio  # lazy: only a live judge runs a loop

    return asyncio.run(_judge_live(o, task, items))


async def _judge_live(o: EstimateOptions, task: "LoadedWorkload", items: list["Item"]) -> Any:
    from mitigate.cli._build import LoadedWorkload as BuildTask
    from mitigate.cli._build import build_judge, with_pipeline
    from mitigate.cli._errors import fail_when_all_failed
    from mitigate.run import preflight, run
    from mitigate.strategies import parse_pipeline

    pipe = parse_pipeline(o.pipeline or "baseline")
    base = build_judge(o, BuildTask(task.benchmark, task.criterion, tuple(items)), pipe)
    try:
        judge = with_pipeline(base, o.pipeline)
        preflight(judge, items)
        typer.echo(f"judging {len(items)} items on {task.criterion!r} with {base.lm.spec}", err=True)
        journal = o.run_dir / "journal.jsonl" if o.run_dir else None
        result = await run(
            judge, items, concurrency=o.concurrency, journal=journal, check=False, progress=o.progress
        )
    finally:
        await base.lm.aclose()
    typer.echo(result.summary.line(), err=True)
    fail_when_all_failed(result)
    return result


def _estimate(o: EstimateOptions) -> None:
    from mitigate.cli._build import load_workload
    from mitigate.estimators import (
        columns,
        estimate_columns,
        plan_labels,
        select_for_labelling,
        write_selection,
    )

    task = load_workload(o.benchmark, o.criterion, o.limit)
    bench, truth, weights, rounds, notes = _labelled_benchmark(o, task)
    source = _judge_source(o, task, list(bench.items))
    name = o.released or (o.pipeline and f"{o.backend} | {o.pipeline}") or None
    cols = columns(
        bench, task.criterion, source, by=o.by, weights=weights, rounds=rounds, truth=truth, judge_name=name
    )
    kw: dict[str, Any] = {
        "confidence": o.confidence,
        "target": o.target,
        "calibration": o.calibration,
        "folds": o.folds,
        "seed": o.seed,
        "tune": o.tune,
    }
    result = estimate_columns(cols, method=o.method, contrasts=o.contrasts, **kw)
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
        settings = {k: v for k, v in kw.items() if k != "target"}  # the estimate's, but its target
        chosen = select_for_labelling(cols, o.select, method=method, floor=o.floor, **settings)
        written = write_selection(chosen, bench.items, o.select_out, pairwise=bench.pairwise)
        payload["selection"] = {**chosen.to_json(), "file": str(written)}
        per = ", ".join(f"{g} {k}" for g, k in chosen.per_group.items() if k)
        texts.append(
            f"selected {len(chosen.rows)} items to label ({per}); wrote {written}: fill its 'label' "
            f"column, then rerun with --labels {written}"
        )
    if o.plot is not None:
        from mitigate.report import plot_estimate

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
