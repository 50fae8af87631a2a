"""The ``mitigate`` command line."""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path
from typing import Annotated, Any

import typer

from mitigate.errors import MitigateError
from mitigate.registry import lookup
from mitigate.search import ENGINES, Objective, search
from mitigate.selectors import registered_selectors
from mitigate.strategies import PerturbedGuidelineDemos, parse_pipeline

app = typer.Typer(
    add_completion=False,
    no_args_is_help=True,
    help="Make LLM-as-a-judge evaluators less biased and more consistent, and measure it.",
)


def _fail(exc: MitigateError) -> None:
    typer.secho(f"error: {exc}", fg=typer.colors.RED, err=True)
    raise typer.Exit(code=2)


def _parse_scale(text: str | None) -> tuple[float, float] | None:
    if text is None:
        return None
    parts = text.replace(":", ",").replace("-", ",").split(",")
    try:
        lo, hi = (float(p) for p in parts)
    except ValueError:
        raise typer.BadParameter(f"expected MIN,MAX such as 1,5; got {text!r}") from None
    return lo, hi


def _first_line(text: str, width: int = 100) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= width else flat[: width - 1] + "…"


def _benchmark_and_criterion(name: str, criterion: str | None) -> tuple[Any, str]:
    """Load a benchmark and check the criterion (default: its first)."""
    from mitigate.data.registry import load
    from mitigate.errors import ConfigError

    bench = load(name)
    crit = criterion or (bench.criteria[0] if bench.criteria else None)
    if crit is None:
        raise ConfigError(f"benchmark {bench.name!r} declares no criteria; pass --criterion")
    if bench.criteria and crit not in bench.criteria:
        raise ConfigError(f"expected a criterion of {bench.name} {list(bench.criteria)}; got {crit!r}")
    return bench, crit


def _template_text(prompt: Path | None, benchmark: str, criterion: str) -> str:
    """The judge template: the user's file, or the built-in prompt for the benchmark's criterion."""
    from mitigate.builtin_prompts import default_prompt_for, prompt_text
    from mitigate.errors import ConfigError

    if prompt is None:
        return prompt_text(default_prompt_for(benchmark, criterion))
    if not prompt.is_file():
        raise ConfigError(f"expected --prompt to name a template file; {prompt} does not exist")
    return prompt.read_text(encoding="utf-8")


def _backend(spec: str, base_url: str | None, *, cache: bool) -> Any:
    """The LM for ``spec`` with retries, and the on-disk cache when ``cache``."""
    from mitigate.lm.registry import get, wrap

    kwargs: dict[str, Any] = {"base_url": base_url} if base_url else {}
    return wrap(get(spec, **kwargs), cache=cache)


@app.command()
def judge(
    benchmark: Annotated[str, typer.Option("--benchmark", "-b", help="summeval, summeval-bartscore, summeval-h2h, uss-sgd, "
                                           "uss-multiwoz, webnlg, tmu-gfm, or jsonl:<path>")] = "summeval",
    criterion: Annotated[str | None, typer.Option("--criterion", "-c", help="criterion to score "
                                                  "(default: the benchmark's first)")] = None,
    limit: Annotated[int, typer.Option("--limit", "-n", help="judge only the first N items (0 = all)")] = 5,
    backend: Annotated[str, typer.Option("--backend", help="openai:<model>, anthropic:<model>, dspy:<model>, "
                                         "local, local:<path.gguf>, replay:<path>, fake")] = "local",
    base_url: Annotated[str | None, typer.Option(help="server URL for the openai, anthropic or dspy backend")] = None,
    prompt: Annotated[Path | None, typer.Option(help="judge prompt template file with {{slots}}")] = None,
    system: Annotated[Path | None, typer.Option(help="optional system message template file")] = None,
    scale: Annotated[str | None, typer.Option(help="answer scale MIN,MAX (default: from the prompt)")] = None,
    temperature: Annotated[float, typer.Option(help="sampling temperature")] = 0.0,
    samples: Annotated[int, typer.Option(help="samples per item (reduced by --reducer)")] = 1,
    reducer: Annotated[str, typer.Option(help="mean, median or majority")] = "mean",
    scoring: Annotated[str, typer.Option(help="parse (read the score) or expected (logprob-weighted)")] = "parse",
    max_tokens: Annotated[int, typer.Option(help="max tokens per answer")] = 128,
    concurrency: Annotated[int, typer.Option(help="judgments in flight at once")] = 4,
    run_dir: Annotated[Path | None, typer.Option(help="folder for the journal and results (resumable)")] = None,
    restart: Annotated[bool, typer.Option(help="discard an existing journal in --run-dir")] = False,
    cache: Annotated[bool, typer.Option(help="cache LM calls on disk (identical re-runs make no calls)")] = True,
    progress: Annotated[bool, typer.Option(help="show a progress bar")] = True,
    pipeline: Annotated[str | None, typer.Option(
        "--pipeline", help="mitigations wrapping the judge: pipeline text such as \"name(k=v) | name2\", or "
        "@file.json (a spec file such as 'mitigate search --out' writes)")] = None,
    out: Annotated[Path | None, typer.Option(
        "--out", "-o", help="also write one row per item (scores, verdicts, failures with raw text, flags, "
        "usage) to this file: JSON lines, or CSV when it ends in .csv")] = None,
) -> None:
    """Judge the first items of a benchmark and print each judgment beside the human score."""
    try:
        asyncio.run(_judge(**locals()))
    except MitigateError as exc:
        _fail(exc)


async def _judge(**opts: Any) -> None:
    from mitigate.judge import JudgeConfig, PromptJudge
    from mitigate.prompt import JudgePrompt
    from mitigate.runner import run

    bench, crit = _benchmark_and_criterion(opts["benchmark"], opts["criterion"])
    text = _template_text(opts["prompt"], opts["benchmark"], crit)
    system = opts["system"].read_text(encoding="utf-8") if opts["system"] is not None else None
    jp = JudgePrompt.from_template(text, system=system, scale=_parse_scale(opts["scale"]), criterion=crit)
    lm = _backend(opts["backend"], opts["base_url"], cache=opts["cache"])
    config = JudgeConfig(
        temperature=opts["temperature"], n=opts["samples"], reducer=opts["reducer"],
        scoring=opts["scoring"], max_tokens=opts["max_tokens"],
    )
    pj = PromptJudge(jp, lm, config)
    judge_obj = _with_pipeline(pj, opts.get("pipeline"))
    items = bench.items[: opts["limit"]] if opts["limit"] else bench.items
    typer.echo(f"{bench.summary()}\njudging {len(items)} items on {crit!r} with {lm.spec}", err=True)
    journal = opts["run_dir"] / "journal.jsonl" if opts["run_dir"] else None
    result = await run(judge_obj, items, concurrency=opts["concurrency"], journal=journal,
                       restart=opts["restart"], progress=opts["progress"])
    await lm.aclose()
    by_id = {it.id: it for it in items}
    for j in result.judgments:
        human = by_id[j.item_id].human.get(crit)
        score = j.scores.get(crit)
        shown = "FAILED" if score is None else f"{score:g}"
        human_s = "-" if human is None else f"{human:.2f}"
        detail = j.error or (j.failures[0].reason if j.failures and score is None else _first_line(j.raw[0] if j.raw else ""))
        typer.echo(f"{j.item_id}\tjudge={shown}\thuman={human_s}\t{_first_line(detail)}")
    typer.echo(result.summary.line(), err=True)
    if opts.get("out") is not None:
        from mitigate.harness.judgments_file import write_judgments

        written = write_judgments(result, opts["out"], items=items, criterion=crit)
        typer.echo(f"wrote {written} ({len(result.judgments)} rows)", err=True)
    if opts["run_dir"]:
        out = opts["run_dir"] / "results.json"
        out.write_text(json.dumps({
            "benchmark": bench.name, "criterion": crit, "backend": lm.spec,
            "summary": result.summary.model_dump(mode="json"),
            "judgments": [j.model_dump(mode="json") for j in result.judgments],
        }, indent=1))
        typer.echo(f"wrote {out}", err=True)


@app.command("prompts")
def prompts_cmd(name: Annotated[str | None, typer.Argument(help="print this prompt's text")] = None) -> None:
    """List the built-in judge prompts, or print one."""
    from mitigate.builtin_prompts import list_prompts, prompt_text

    try:
        if name is None:
            typer.echo("\n".join(list_prompts()))
        else:
            typer.echo(prompt_text(name))
    except MitigateError as exc:
        _fail(exc)


@app.command("compare")
def compare_cmd(
    benchmark: Annotated[str, typer.Option("--benchmark", "-b", help="summeval, summeval-bartscore, summeval-h2h, uss-sgd, "
                                           "uss-multiwoz, webnlg, tmu-gfm, or jsonl:<path>")] = "summeval",
    criterion: Annotated[str | None, typer.Option("--criterion", "-c", help="criterion to score "
                                                  "(default: the benchmark's first)")] = None,
    pipeline: Annotated[list[str] | None, typer.Option(
        "--pipeline", "-p", help="a mitigation pipeline to compare, e.g. baseline, \"name(k=v) | name2\" or "
        "@file.json; repeat for several (the first entry is the reference)")] = None,
    recorded: Annotated[list[Path] | None, typer.Option(
        "--recorded", help="a recorded-judgments file (JSON lines or .csv, see docs/recorded_format.md): every "
        "judge in it that answered the criterion becomes an entry, replayed with no LM call; repeat for "
        "several; listed after the pipelines")] = None,
    released: Annotated[list[str] | None, typer.Option(
        "--released", help="a released judge to replay, e.g. chatgpt-rts, gpt4-rts (summeval), chatgpt-h2h "
        "(summeval-h2h); repeat for several; listed last")] = None,
    backend: Annotated[str, typer.Option("--backend", help="LM for the pipelines: openai:<model>, "
                                         "anthropic:<model>, dspy:<model>, local, local:<path.gguf>")] = "local",
    base_url: Annotated[str | None, typer.Option(help="server URL for the openai, anthropic or dspy backend")] = None,
    prompt: Annotated[Path | None, typer.Option(help="judge prompt template file with {{slots}} "
                                                "(default: the built-in prompt for the criterion)")] = None,
    limit: Annotated[int, typer.Option("--limit", "-n", help="judge only the first N items, document by "
                                       "document (0 = all)")] = 0,
    train: Annotated[str | None, typer.Option(
        "--train", help="fit on train, compare on test: a fraction such as 0.5 (the benchmark split by document "
        "with --seed) or a training benchmark sharing no document with -b; every pipeline that learns from data "
        "(random, stratified, highest-RS, perturbed demos) is fitted on it first")] = None,
    out: Annotated[Path, typer.Option("--out", "-o", help="folder for journals, results.json, report.md "
                                      "and plots (a rerun resumes)")] = Path("reports/compare"),
    likelihood: Annotated[bool, typer.Option(help="compute LS with the embedded model and report "
                                             "BiasScore")] = False,
    concurrency: Annotated[int, typer.Option(help="judgments in flight at once")] = 4,
    temperature: Annotated[float, typer.Option(help="sampling temperature of the base judge")] = 0.0,
    samples: Annotated[int, typer.Option(help="samples per item of the base judge")] = 1,
    max_tokens: Annotated[int, typer.Option(help="max tokens per answer")] = 128,
    n_boot: Annotated[int, typer.Option(help="bootstrap resamples per interval (0: none)")] = 1000,
    seed: Annotated[int, typer.Option(help="seed of the bootstrap and permutation tests")] = 0,
    restart: Annotated[bool, typer.Option(help="discard existing journals in --out")] = False,
    cache: Annotated[bool, typer.Option(help="cache LM calls on disk")] = True,
    progress: Annotated[bool, typer.Option(help="show progress bars")] = True,
) -> None:
    """Compare mitigation pipelines, recorded and released judges on a benchmark: accuracy and bias side by side."""
    from pydantic import ValidationError

    try:
        asyncio.run(_compare(**locals(), command=" ".join(["mitigate", *sys.argv[1:]])))
    except MitigateError as exc:
        _fail(exc)
    except ValidationError as exc:
        typer.secho(f"error: invalid parameters: {exc}", fg=typer.colors.RED, err=True)
        raise typer.Exit(code=2) from None


async def _compare(**opts: Any) -> None:
    from mitigate.errors import ConfigError
    from mitigate.harness.compare import Entry, compare
    from mitigate.harness.report import write_report

    pipelines = list(opts["pipeline"] or [])
    recorded = list(opts.get("recorded") or [])
    released = list(opts["released"] or [])
    if not pipelines and not released and not recorded:
        raise ConfigError("expected at least one --pipeline (e.g. --pipeline baseline), --recorded file or "
                          "--released judge; got none")
    if opts["limit"] < 0:
        raise ConfigError(f"expected --limit >= 0 (0 = all items); got {opts['limit']}")
    parsed = [(text, parse_pipeline(text)) for text in pipelines]  # bad pipeline text fails before data or calls
    bench, crit = _benchmark_and_criterion(opts["benchmark"], opts["criterion"])
    entries: list[Entry] = []
    lm = None
    if pipelines:
        from mitigate.judge import JudgeConfig, PromptJudge
        from mitigate.prompt import JudgePrompt

        if bench.pairwise and opts["prompt"] is None:
            raise ConfigError(f"benchmark {bench.name!r} is pairwise; expected --prompt with a pairwise template that "
                              "shows {{output}} and {{output_b}} and asks which is better; got none")
        answer: dict[str, Any] = {"answer": "pairwise"} if bench.pairwise else {}
        jp = JudgePrompt.from_template(_template_text(opts["prompt"], opts["benchmark"], crit), criterion=crit,
                                       **answer)
        lm = _backend(opts["backend"], opts["base_url"], cache=opts["cache"])
        config = JudgeConfig(temperature=opts["temperature"], n=opts["samples"], max_tokens=opts["max_tokens"])
        base = PromptJudge(jp, lm, config)
        entries += [Entry.from_pipeline(text.strip() or "baseline", base, pipe) for text, pipe in parsed]
    for path in recorded:
        entries += Entry.all_recorded(path, crit)
    entries += [Entry.from_released(name, crit) for name in released]
    typer.echo(f"{bench.summary()}\ncomparing {len(entries)} entries on {crit!r}: "
               f"{', '.join(e.name for e in entries)}", err=True)
    try:
        result = await compare(
            bench, crit, entries, out_dir=opts["out"], concurrency=opts["concurrency"],
            limit=opts["limit"] or None, likelihood=opts["likelihood"], progress=opts["progress"],
            n_boot=opts["n_boot"], seed=opts["seed"], restart=opts["restart"], command=opts["command"],
            train=_train_option(opts.get("train")),
        )
    finally:
        if lm is not None:
            await lm.aclose()
    for e in result.entries:
        typer.echo(f"{e.name}: {e.summary.line()}", err=True)
    paths = write_report(result, opts["out"])
    typer.echo((opts["out"] / "report.md").read_text(encoding="utf-8").split("\n## Every measure")[0])
    typer.echo("wrote " + ", ".join(str(p) for p in paths), err=True)


def _train_option(text: str | None) -> float | str | None:
    """``--train``: a fraction (a number) or a benchmark name / ``jsonl:<path>``."""
    if text is None:
        return None
    try:
        return float(text)
    except ValueError:
        return text


@app.command("report")
def report_cmd(folder: Annotated[Path, typer.Argument(help="a folder written by 'mitigate compare'")]) -> None:
    """Re-render report.md and the plots of a comparison from its results.json."""
    from mitigate.harness.report import render_report

    try:
        paths = render_report(folder)
    except MitigateError as exc:
        _fail(exc)
    typer.echo("wrote " + ", ".join(str(p) for p in paths), err=True)


def _with_pipeline(judge: Any, text: str | None) -> Any:
    """``judge`` wrapped by the pipeline ``text`` names (``"name(k=v) | name2"`` or ``@file.json``; None: unchanged)."""
    if text is None:
        return judge
    pipe = parse_pipeline(text)
    typer.echo(f"pipeline {text}: {json.dumps(pipe.spec())[:200]}", err=True)
    return pipe.wrap(judge)


@app.command("search")
def search_cmd(
    benchmark: Annotated[str, typer.Option("--benchmark", "-b", help="summeval, summeval-bartscore, summeval-h2h, uss-sgd, "
                                           "uss-multiwoz, webnlg, tmu-gfm, or jsonl:<path>")] = "summeval",
    criterion: Annotated[str | None, typer.Option("--criterion", "-c", help="criterion to optimise "
                                                  "(default: the benchmark's first)")] = None,
    limit: Annotated[int, typer.Option("--limit", "-n", help="use only the first N labelled items, document "
                                       "by document, so each document keeps every system's output (0 = all)")] = 0,
    engine: Annotated[str, typer.Option(help=f"search engine: {', '.join(ENGINES)}")] = "random",
    budget: Annotated[int, typer.Option(help="distinct LM requests the search may make (cache hits count "
                                        "too, so a rerun retraces the same search)")] = 200,
    k: Annotated[list[int] | None, typer.Option("--k", help="demos per set; repeat for several sizes")] = None,
    selector: Annotated[list[str] | None, typer.Option(
        "--selector", help=f"candidate generator: {', '.join(registered_selectors())} (fixed needs ids: use "
        "the Python API); repeat for several (default: random and stratified)")] = None,
    perturbed: Annotated[bool, typer.Option(help="also search demos shown under reordered guidelines "
                                            "(Ghazarian et al. 2024)")] = False,
    agreement: Annotated[str, typer.Option(help="spearman, kendall, pearson or accuracy (exact match)")] = "spearman",
    consistency_weight: Annotated[float, typer.Option(help="lambda: weight of consistency under "
                                                      "guideline perturbation")] = 0.0,
    consistency: Annotated[str, typer.Option(help="kappa (chance-corrected; a judge giving one answer to "
                                             "everything cannot win) or raw (the paper's share)")] = "kappa",
    bias_weight: Annotated[float, typer.Option(help="mu: weight of |BiasScore| (needs --likelihood)")] = 0.0,
    likelihood: Annotated[str, typer.Option(help="backend computing LS for BiasScore")] = "local",
    splits: Annotated[str, typer.Option(help="train,dev,test fractions")] = "0.5,0.25,0.25",
    backend: Annotated[str, typer.Option("--backend", help="openai:<model>, anthropic:<model>, dspy:<model>, "
                                         "local, local:<path.gguf>")] = "local",
    base_url: Annotated[str | None, typer.Option(help="server URL for the openai, anthropic or dspy backend")] = None,
    prompt: Annotated[Path | None, typer.Option(help="judge prompt template file with {{slots}}")] = None,
    temperature: Annotated[float, typer.Option(help="sampling temperature")] = 0.0,
    max_tokens: Annotated[int, typer.Option(help="max tokens per answer")] = 128,
    concurrency: Annotated[int, typer.Option(help="judgments in flight at once")] = 4,
    n_boot: Annotated[int, typer.Option(help="bootstrap resamples per interval (0: none)")] = 1000,
    seed: Annotated[int, typer.Option(help="seed of the split, the draws and the bootstrap")] = 0,
    out: Annotated[Path, typer.Option("--out", "-o", help="where to write the winning pipeline spec "
                                      "(load it with 'mitigate judge --pipeline @<file>')")] = Path("search_pipeline.json"),
    cache: Annotated[bool, typer.Option(help="cache LM calls on disk")] = True,
    progress: Annotated[bool, typer.Option(help="show progress bars")] = True,
    plot: Annotated[bool, typer.Option(help="also write a PNG of the search beside --out")] = True,
    pipeline: Annotated[str, typer.Option(
        "--pipeline", help="mitigations wrapping the judge before demos are searched: pipeline text or @file.json; "
        "the saved spec holds them followed by the winner")] = "baseline",
) -> None:
    """Search the demo set that maximises agreement (+ consistency - bias) on dev; report it on held-out test."""
    from pydantic import ValidationError

    try:
        _search(**locals())
    except MitigateError as exc:
        _fail(exc)
    except ValidationError as exc:
        typer.secho(f"error: invalid parameters: {exc}", fg=typer.colors.RED, err=True)
        raise typer.Exit(code=2) from None


def _search(**opts: Any) -> None:
    from mitigate.errors import ConfigError
    from mitigate.harness.report import plot_search
    from mitigate.judge import JudgeConfig, PromptJudge
    from mitigate.prompt import JudgePrompt

    if opts["limit"] < 0:
        raise ConfigError(f"expected --limit >= 0 (0 = all labelled items); got {opts['limit']}")
    before = parse_pipeline(opts["pipeline"])  # bad pipeline text fails before data or calls
    bench, crit = _benchmark_and_criterion(opts["benchmark"], opts["criterion"])
    labelled = [it for it in bench.items if crit in it.human]
    if opts["limit"]:
        from mitigate.harness.compare import select_items

        labelled = select_items(labelled, opts["limit"])  # whole documents first, as compare does
    data = bench.model_copy(update={"items": tuple(labelled)})
    jp = JudgePrompt.from_template(_template_text(opts["prompt"], opts["benchmark"], crit), criterion=crit)
    lm = _backend(opts["backend"], opts["base_url"], cache=False)  # retries; the search adds its own cache
    judge = before.wrap(PromptJudge(jp, lm, JudgeConfig(temperature=opts["temperature"],
                                                        max_tokens=opts["max_tokens"])))
    try:
        fractions = tuple(float(x) for x in opts["splits"].split(","))
    except ValueError:
        raise ConfigError(f"expected --splits as three fractions such as 0.5,0.25,0.25; got {opts['splits']!r}") from None
    if len(fractions) != 3:
        raise ConfigError(f"expected --splits as three fractions such as 0.5,0.25,0.25; got {opts['splits']!r}")
    classes = [lookup("selector", n) for n in opts["selector"] or ["random", "stratified"]]
    selectors = [cls(seed=opts["seed"]) if "seed" in cls.model_fields else cls() for cls in classes]
    objective = Objective(agreement=opts["agreement"], consistency_weight=opts["consistency_weight"],
                          consistency=opts["consistency"], bias_weight=opts["bias_weight"])
    templates: list[Any] = [None]
    if opts["perturbed"]:
        templates.append(PerturbedGuidelineDemos(kind="order", seed=opts["seed"]))
    common: dict[str, Any] = {
        "criterion": crit, "objective": objective, "k": opts["k"] or [2], "budget": opts["budget"],
        "splits": fractions, "cache": opts["cache"], "concurrency": opts["concurrency"],
        "progress": opts["progress"], "n_boot": opts["n_boot"], "seed": opts["seed"],
    }
    if objective.needs_likelihood:
        common["likelihood"] = opts["likelihood"]
    if lookup("engine", opts["engine"]).uses_selectors or opts["selector"] or opts["perturbed"]:
        common.update(selectors=selectors, perturbations=templates)  # an engine that takes none refuses them
    typer.echo(f"{bench.summary()}\nsearching demos for {crit!r} on {len(labelled)} labelled items with "
               f"{lm.spec}, engine {opts['engine']}, budget {opts['budget']} LM calls", err=True)
    result = search(judge, data, engine=opts["engine"], **common)
    typer.echo(result.summary())
    path = result.save_pipeline(opts["out"], before=before)
    typer.echo(f"wrote {path} (use it with: mitigate judge --pipeline @{path})", err=True)
    if opts["plot"]:
        typer.echo(f"wrote {plot_search(result, path.with_suffix('.png'))} (trials on dev; winner vs baseline on "
                   "test)", err=True)


def main() -> None:  # pragma: no cover - console entry
    """Entry point for ``python -m mitigate``."""
    app(prog_name="mitigate")


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
