"""``mitigate diff``: judge B against judge A on the same items; exit 1 when B is significantly worse, 3
when a margin check cannot decide.

The two judges differ in one thing: two recorded files, two released judges, or two live judges that share
everything but their ``--prompt``, ``--pipeline`` or ``--backend`` (that option given twice).
"""

import asyncio
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, ClassVar, Literal

import typer

from mitigate.cli._app import command
from mitigate.cli._errors import EXIT_FAILED, EXIT_INCONCLUSIVE
from mitigate.cli._files import writable_dir, writable_file
from mitigate.cli.options._backend import BACKEND, DEFAULT_BACKEND, BaseUrl, ServerOptions, check_backend
from mitigate.cli.options._declare import Override, option
from mitigate.cli.options._prompt import PROMPT, SampledAnswerOptions, Samples, TemplateOverrides
from mitigate.cli.options._results import JSON, OUT, PROBE_TOLERANCE, PROBES, ProbeBattery, StatsOptions
from mitigate.cli.options._run import PIPELINE, RunOptions
from mitigate.cli.options._task import CRITERION, DEFAULT_BENCHMARK, RECORDED, RELEASED, Benchmark, Limit
from mitigate.constraints import Interval
from mitigate.errors import ConfigError

if TYPE_CHECKING:
    from mitigate.cli._build import LoadedWorkload
    from mitigate.diff import DiffReport
    from mitigate.judge import Judge, Judgment

FAIL_ON = option(
    "fail_on",
    "--fail-on",
    help="measures that fail the run when B is significantly worse, each with an "
    "optional level: 'agreement' (Spearman with humans, or accuracy for verdicts), spearman, "
    "spearman-document, length-bias, failure-rate; accuracy, position-consistency, length-lean "
    "for pairwise judges; e.g. spearman:0.01,failure-rate (level 0.05 by default)",
)
MARGIN = option(
    "margin",
    help="non-inferiority margins of gated measures, e.g. spearman:0.05,failure-rate:0.02: pass (exit 0) "
    "only when B − A is shown above -M (below +M for lower-is-better), fail (1) when B is shown worse, "
    "inconclusive (3) otherwise; a gated measure without one passes unless shown worse",
)
CORRECTION = option(
    "correction",
    help="multiple-comparison adjustment of the gated p-values: holm (step-down), bonferroni or none",
)
SCALE_MAP = option(
    "scale_map",
    "--scale-map",
    help="none (judges on different scales are refused) or linear (B's scores mapped onto A's range)",
)
N_PERM = option("n_perm", help="permutations of each paired test", accepts=(Interval(int, 1, None),))
SHOW = option(
    "show", help="item changes and slices listed in the text output", accepts=(Interval(int, 0, None),)
)
JUNIT = option("junit", help="also write the gate as JUnit XML (one testcase per gated measure) to this file")


@dataclass(frozen=True)
class DiffOptions(
    ServerOptions, TemplateOverrides, SampledAnswerOptions, RunOptions, StatsOptions, ProbeBattery
):
    """``mitigate diff``: two judges on the same items, B − A with intervals, and a gate for CI."""

    COMMAND: ClassVar[str] = "diff"
    HELP_FIRST: ClassVar[dict[str, tuple[str, ...]]] = {
        "What to compare": ("benchmark", "criterion", "limit", "recorded", "released", "pipeline", "prompt"),
        "The judges": ("backend", "base_url"),
        "The gate": ("fail_on", "margin", "correction"),
        "Results": ("json", "junit", "out", "show"),
    }

    benchmark: Benchmark = DEFAULT_BENCHMARK
    criterion: Annotated[
        list[str] | None,
        CRITERION,
        Override(
            help=(
                "criterion to compare; repeat for several, or 'all' for every criterion both judges answered "
                "(default: the benchmark's first)"
            )
        ),
    ] = None
    limit: Annotated[Limit, Override(help="compare on the first N items, document by document (0 = all)")] = 0
    recorded: Annotated[
        list[Path] | None,
        RECORDED,
        Override(
            help=(
                "a recorded-judgments file: give two (A then B), or one holding exactly two judges (file "
                "order); FILE#JUDGE picks one judge of a file"
            )
        ),
    ] = None
    released: Annotated[
        list[str] | None, RELEASED, Override(help="a released judge, e.g. chatgpt-rts; give two (A then B)")
    ] = None
    pipeline: Annotated[
        list[str] | None,
        PIPELINE,
        Override(
            flags=("--pipeline", "-p"),
            help=(
                "a mitigation pipeline; give two (A then B) to compare pipelines, or one shared "
                "by both judges"
            ),
        ),
    ] = None
    prompt: Annotated[
        list[Path] | None,
        PROMPT,
        Override(help="a judge template file; give two (A then B) to compare templates, or one shared"),
    ] = None
    backend: Annotated[
        list[str] | None,
        BACKEND,
        Override(
            help="the judge LM; give two (A then B) to compare backends, or one shared (default: local)"
        ),
    ] = None
    samples: Annotated[Samples, Override(help="samples per item of each live judge")] = 1
    fail_on: Annotated[str, FAIL_ON] = "agreement,failure-rate"
    margin: Annotated[str | None, MARGIN] = None
    correction: Annotated[Literal["holm", "bonferroni", "none"], CORRECTION] = "holm"
    scale_map: Annotated[Literal["none", "linear"], SCALE_MAP] = "none"
    n_perm: Annotated[int, N_PERM] = 2000
    show: Annotated[int, SHOW] = 10
    json: Annotated[
        bool,
        JSON,
        Override(help="print the report as JSON (measures with a, b, delta, low, high, p) instead of text"),
    ] = False
    junit: Annotated[Path | None, JUNIT] = None
    out: Annotated[
        Path | None,
        OUT,
        Override(help="folder for the live judges' journals (a rerun resumes) and diff.json"),
    ] = None

    base_url: Annotated[BaseUrl, Override(help="server URL of the openai, anthropic or dspy backend")] = None
    probes: Annotated[
        str | None,
        PROBES,
        Override(
            help=(
                "live judges: also run these bias probes on both and add a probe slice (robustness rate "
                "of A and B), e.g. authority,format,option-order"
            )
        ),
    ] = None
    probe_tolerance: Annotated[
        float,
        PROBE_TOLERANCE,
        Override(help="with --probes: score changes up to this size count as unchanged"),
    ] = 0.0

    def check(self) -> None:
        """The server options each live judge's backend does not take are refused."""
        for spec in self.backend or [DEFAULT_BACKEND]:
            check_backend(self, spec)


@command("diff", DiffOptions)
def diff_cmd(options: DiffOptions) -> None:
    """Judge B against judge A on the same items: B − A with paired intervals and p; exit 1 if B is worse."""
    if options.junit is not None:
        writable_file(options.junit, "--junit")
    if options.out is not None:
        writable_dir(options.out, "--out")
    asyncio.run(_diff(options))


def _sides(o: DiffOptions) -> tuple[str, list[Any]]:
    """What differs between A and B (the option given twice) and its two values; ConfigError otherwise."""
    sources = ("recorded", "released", "pipeline", "prompt", "backend")
    given: dict[str, list[Any]] = {f"--{k}": list(getattr(o, k) or []) for k in sources}
    many = [k for k, v in given.items() if len(v) > 2]
    if many:
        raise ConfigError(f"expected two judges, A and B; got {len(given[many[0]])} values of {many[0]}")
    replayed = [k for k in ("--recorded", "--released") if given[k]]
    if replayed:
        live = [k for k in ("--pipeline", "--prompt", "--backend") if given[k]]
        if len(replayed) > 1 or live:
            raise ConfigError(
                "expected the two judges from one source (two --recorded files, two "
                "--released judges, or live judges); got "
                f"{', '.join(replayed + live)} together"
            )
        key = replayed[0]
        if key == "--recorded" and len(given[key]) == 1:
            return key, given[key]  # one file holding two judges
        if len(given[key]) != 2:
            raise ConfigError(f"expected {key} twice (A then B); got it once")
        return key, given[key]
    twice = [k for k in ("--pipeline", "--prompt", "--backend") if len(given[k]) == 2]
    if len(twice) != 1:
        what = f"{', '.join(twice)} each twice" if twice else "no option twice"
        raise ConfigError(
            "expected judges A and B to differ in one thing: --recorded A --recorded B, "
            "--released A --released B, or one of --pipeline, --prompt, --backend given "
            f"twice; got {what}"
        )
    return twice[0], given[twice[0]]


def _recorded_runs(paths: list[Path], criterion: str) -> list[Any]:
    """The two recorded runs: one judge per file (FILE#JUDGE picks one), or one file holding two."""
    from mitigate.data import load_recorded_runs

    def runs_of(path: Path) -> tuple[dict[str, Any], str | None]:
        text = str(path)
        if not path.exists() and "#" in text:
            file, _, judge = text.rpartition("#")
            return load_recorded_runs(file), judge
        return load_recorded_runs(path), None

    chosen = []
    for path in paths:
        runs, judge = runs_of(path)
        answering = {k: r for k, r in runs.items() if criterion in r.criteria}
        if judge is not None:
            if judge not in runs:
                raise ConfigError(f"expected judge {judge!r} in {path}; its judges are {list(runs)}")
            chosen.append(runs[judge])
        elif len(paths) == 1:
            if len(answering) != 2:
                raise ConfigError(
                    "expected one --recorded file to hold exactly two judges answering "
                    f"{criterion!r} (A then B, in file order); {path} holds {list(answering)}"
                )
            chosen.extend(answering.values())
        else:
            if len(answering) != 1:
                raise ConfigError(
                    f"expected {path} to hold one judge answering {criterion!r}; it holds "
                    f"{list(answering) or 'none'} (pick one with {path}#JUDGE)"
                )
            chosen.append(next(iter(answering.values())))
    return chosen


def _criteria(o: DiffOptions, bench: Any) -> list[str]:
    wanted = list(o.criterion or [])
    if wanted == ["all"]:
        return list(bench.criteria)
    if "all" in wanted:
        raise ConfigError("expected -c all on its own or criterion names; got 'all' among names")
    return wanted or ([bench.criteria[0]] if bench.criteria else [])


async def _live(
    o: DiffOptions, task: "LoadedWorkload", key: str, values: list[Any]
) -> tuple[list[Any], list[str]]:
    """The two live judges for ``task`` (the shared options and the differing one) and their names."""
    from mitigate.cli._build import Replaced, build_judge
    from mitigate.strategies import parse_pipeline

    shared_backend = (o.backend or [DEFAULT_BACKEND])[0]
    shared_prompt = o.prompt[0] if o.prompt else None
    shared_pipeline = (o.pipeline or ["baseline"])[0]
    judges = []
    for value in values:
        backend = value if key == "--backend" else shared_backend
        prompt = value if key == "--prompt" else shared_prompt
        pipe = parse_pipeline(value if key == "--pipeline" else shared_pipeline)
        judges.append(pipe.wrap(build_judge(Replaced(o, backend=backend, prompt=prompt), task, pipe)))
    return judges, [str(v) for v in values]


async def _judge_both(
    o: DiffOptions, task: "LoadedWorkload", judges: list[Any], names: list[str]
) -> list[list[Any]]:
    from mitigate.run import preflight, run

    out = []
    for side, judge, name in zip("ab", judges, names, strict=True):
        if not getattr(judge, "recorded", None):
            preflight(judge, task.items)
        journal = None if o.out is None else o.out / "journals" / f"{task.criterion}-{side}.jsonl"
        result = await run(
            judge,
            task.items,
            concurrency=o.concurrency,
            progress=o.progress,
            journal=journal,
            check=False,
            desc=f"{side.upper()}: {name}",
        )
        out.append(list(result.judgments))
    return out


def _check_covered(judges: list[Any], names: list[str], items: Any, criterion: str) -> None:
    for name, judge in zip(names, judges, strict=True):
        covers = getattr(judge, "covers", None)
        missing = covers(items) if covers is not None else []
        if missing:
            raise ConfigError(
                f"expected judge {name!r} to have an answer on {criterion!r} for every item "
                f"compared; {len(missing)} of {len(items)} have none, e.g. {missing[:3]} "
                "(check the item ids, or pass --limit)"
            )


def _not_in_benchmark(
    judges: list[Any], names: list[str], ids: set[str], criterion: str, bench: str
) -> list[str]:
    """A note per replayed judge that answers items the benchmark does not hold (they are left out)."""
    out = []
    for name, judge in zip(names, judges, strict=True):
        run = getattr(judge, "recorded", None)
        answered = getattr(run, "judgments", None)
        if not isinstance(answered, dict):
            continue
        extra = sorted(i for i, per in answered.items() if criterion in per and i not in ids)
        if extra:
            out.append(
                f"judge {name!r} answers {len(extra)} items on {criterion!r} that benchmark {bench!r} "
                f"does not hold, e.g. {extra[:3]}; they are left out of the comparison (check the item ids)"
            )
    return out


def _kind(judgments: "list[Judgment]") -> str | None:
    if any(j.verdict is not None for j in judgments):
        return "pairwise"
    return "score" if any(v is not None for j in judgments for v in j.scores.values()) else None


async def _diff(o: DiffOptions) -> None:
    from mitigate.cli._build import load_workload, named_probes
    from mitigate.diff import DiffReport, diff_judgments, gate, parse_fail_on, parse_margin
    from mitigate.judge import judge_scale
    from mitigate.replay import RecordedJudge, ReleasedJudge

    key, values = _sides(o)
    live = key not in ("--recorded", "--released")
    if o.probes is not None and not live:
        raise ConfigError(
            "--probes judges probed items; expected live judges (--prompt, --pipeline or "
            "--backend twice), got replayed answers"
        )
    chosen = None if o.probes is None else named_probes(o.probes, o.rewriter)
    first = load_workload(o.benchmark, None, o.limit)
    bench = first.benchmark
    kind: Literal["score", "pairwise"] = "pairwise" if bench.pairwise else "score"
    fail_on = parse_fail_on(o.fail_on, kind)
    margins = parse_margin(o.margin, kind, [n for n, _ in fail_on])
    reports = []
    for crit in _criteria(o, bench):
        task = load_workload(o.benchmark, crit, o.limit)
        lms: list[Any] = []
        if key == "--recorded":
            runs = _recorded_runs(values, crit)
            judges: list[Judge] = [RecordedJudge(r, crit) for r in runs]
            names = [r.judge for r in runs]
        elif key == "--released":
            judges = [ReleasedJudge(v, crit) for v in values]
            names = list(values)
        else:
            judges, names = await _live(o, task, key, values)
            lms = [leaf.lm for j in judges for leaf in j.leaves()]
        if names[0] == names[1]:
            names = [f"A: {names[0]}", f"B: {names[1]}"]
        _check_covered(judges, names, task.items, crit)
        try:
            ja, jb = await _judge_both(o, task, judges, names)
            probed = None if chosen is None else await _probe_both(o, chosen, task, judges, names, (ja, jb))
        finally:
            for lm in dict.fromkeys(lms):
                await lm.aclose()
        kinds = {k for k in (_kind(ja), _kind(jb)) if k is not None}
        if len(kinds) > 1:
            raise ConfigError(
                f"expected two judges answering alike; {names[0]!r} and {names[1]!r} answer "
                f"{' and '.join(sorted(kinds))} on {crit!r}"
            )
        human = bench.scale_for(crit)
        scales = tuple(judge_scale(j) or human for j in judges)
        rep = diff_judgments(
            task.items,
            ja,
            jb,
            criterion=crit,
            names=(names[0], names[1]),
            task="pairwise" if bench.pairwise else "score",
            scales=scales,  # type: ignore[arg-type]
            scale_map=o.scale_map,
            n_boot=o.n_boot,
            n_perm=o.n_perm,
            seed=o.seed,
            margins=margins,
        )
        strays = _not_in_benchmark(judges, names, {it.id for it in bench.items}, crit, bench.name)
        rep = rep.model_copy(update={"notes": rep.notes + tuple(strays)})
        if probed is not None:
            from mitigate.diff import probe_slices

            rep = rep.model_copy(update={"slices": rep.slices + tuple(probe_slices(crit, probed))})
        reports.append(rep)
    if not reports:
        raise ConfigError(
            f"expected a criterion to compare; benchmark {bench.name!r} declares none (pass -c)"
        )
    report = DiffReport.merged(reports)
    report = report.model_copy(
        update={
            "gate": gate(report, fail_on, o.correction),
            "extra": {"benchmark": bench.name, "compared": key},
        }
    )
    _emit(o, report)


async def _probe_both(
    o: DiffOptions,
    chosen: list[Any],
    task: "LoadedWorkload",
    judges: list[Any],
    names: list[str],
    originals: tuple[list[Any], list[Any]],
) -> tuple[Any, Any]:
    from mitigate.cli._build import RewriterOptions, build_backend
    from mitigate.probes import run_probes

    rewriter = None if o.rewriter is None else build_backend(RewriterOptions(o))
    try:
        out = []
        for judge, name, original in zip(judges, names, originals, strict=True):
            out.append(
                await run_probes(
                    judge,
                    task.items,
                    chosen,
                    criterion=task.criterion,
                    rewriter=rewriter,
                    original=original,
                    concurrency=o.concurrency,
                    progress=o.progress,
                    tolerance=o.probe_tolerance,
                    n_boot=o.n_boot,
                    seed=o.seed,
                    label=name,
                )
            )
        return out[0], out[1]
    finally:
        if rewriter is not None:
            await rewriter.aclose()


def _emit(o: DiffOptions, report: "DiffReport") -> None:
    import json

    from mitigate.diff import as_json, junit_xml, render_diff
    from mitigate.paths import write_output

    text = json.dumps(as_json(report), indent=1, allow_nan=False)
    if o.out is not None:
        write_output(o.out / "diff.json", text, "diff.json")
    if o.junit is not None:
        write_output(o.junit, junit_xml(report), "--junit")
    typer.echo(text if o.json else render_diff(report, show=o.show))
    assert report.gate is not None
    for note in report.notes:
        if "does not hold" in note:
            typer.echo(f"warning: {note}", err=True)
    if report.gate.outcome == "fail":
        typer.echo(f"regression: {report.gate.reason}", err=True)
        raise typer.Exit(code=EXIT_FAILED)
    if report.gate.outcome == "inconclusive":
        typer.echo(f"inconclusive: {report.gate.reason}", err=True)
        raise typer.Exit(code=EXIT_INCONCLUSIVE)
