"""``mitigate search``: the demo set that maximises agreement (+ consistency - bias) on dev, on test."""

from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any, ClassVar, Literal

import typer

from mitigate.cli._app import command
from mitigate.cli._build import build_judge, dry_run_text, load_workload
from mitigate.cli._files import writable_file, writing_after_run
from mitigate.cli.options._backend import DEFAULT_BACKEND, Backend, BackendOptions
from mitigate.cli.options._declare import Override, check, option, registered_names
from mitigate.cli.options._prompt import AnswerOptions, Prompt, PromptOptions
from mitigate.cli.options._results import LIKELIHOOD, OUT, PLOT, Seed, StatsOptions
from mitigate.cli.options._run import PIPELINE, DryRun, RunOptions
from mitigate.cli.options._task import Criterion, Limit, TaskOptions
from mitigate.constraints import Interval, Options
from mitigate.errors import ConfigError
from mitigate.registry import lookup, names, registered, run_coroutine
from mitigate.search import Objective, asearch
from mitigate.strategies import PerturbedDemosPreset, parse_pipeline

Agreement = Literal["spearman", "kendall", "pearson", "accuracy"]
"""``--agreement``: :attr:`mitigate.search.Objective.agreement`."""
Consistency = Literal["kappa", "raw"]
"""``--consistency``: :attr:`mitigate.search.Objective.consistency`."""

DEFAULT_ENGINE = "random"
"""The search engine unless ``--engine`` says (random search over the selectors' draws)."""

ENGINE = option("engine", help=f"search engine: {registered_names('engine')}")
BUDGET = option(
    "budget",
    help="distinct LM requests the search may make (cache hits count too, so a rerun retraces "
    "the same search)",
    accepts=(Interval(int, 1, None),),
)
K = option("k", "--k", help="demos per set; repeat for several sizes", accepts=(Interval(int, 1, None),))
SELECTOR = option(
    "selector",
    "--selector",
    help=f"candidate generator: {registered_names('selector')} (fixed needs "
    "ids: use the Python API); repeat for several (default: random and stratified)",
)
PERTURBED = option(
    "perturbed", help="also search demos shown under reordered guidelines (Ghazarian et al. 2024)"
)
AGREEMENT = option("agreement", help="spearman, kendall, pearson or accuracy (exact match)")
CONSISTENCY_WEIGHT = option(
    "consistency_weight",
    help="lambda: weight of consistency under guideline perturbation",
    accepts=(Interval(float, 0.0, None),),
)
CONSISTENCY = option(
    "consistency",
    help="kappa (chance-corrected; a judge giving one answer to everything cannot "
    "win) or raw (the paper's share)",
)
BIAS_WEIGHT = option(
    "bias_weight",
    help="mu: weight of |BiasScore| (needs --likelihood)",
    accepts=(Interval(float, 0.0, None),),
)
SPLITS = option("splits", help="train,dev,test fractions")


@dataclass(frozen=True)
class SearchOptions(TaskOptions, BackendOptions, PromptOptions, AnswerOptions, RunOptions, StatsOptions):
    """``mitigate search``: the demo set that maximises agreement (+ consistency - bias) on dev."""

    COMMAND: ClassVar[str] = "search"
    HELP_FIRST: ClassVar[dict[str, tuple[str, ...]]] = {
        "What to search": ("benchmark", "criterion", "limit", "engine", "selector", "k", "budget"),
        "The judge": ("backend", "base_url", "prompt", "pipeline"),
        "Results": ("out", "dry_run", "config_file"),
    }

    engine: Annotated[str, ENGINE] = DEFAULT_ENGINE
    budget: Annotated[int, BUDGET] = 200
    k: Annotated[list[int] | None, K] = None
    selector: Annotated[list[str] | None, SELECTOR] = None
    perturbed: Annotated[bool, PERTURBED] = False
    agreement: Annotated[Agreement, AGREEMENT] = "spearman"
    consistency_weight: Annotated[float, CONSISTENCY_WEIGHT] = 0.0
    consistency: Annotated[Consistency, CONSISTENCY] = "kappa"
    bias_weight: Annotated[float, BIAS_WEIGHT] = 0.0
    likelihood: Annotated[str, LIKELIHOOD, Override(help="backend computing LS for BiasScore")] = (
        DEFAULT_BACKEND
    )
    splits: Annotated[str, SPLITS] = "0.5,0.25,0.25"
    out: Annotated[
        Path,
        OUT,
        Override(
            help="where to write the winning pipeline spec (load it with 'mitigate judge --pipeline @<file>')"
        ),
    ] = Path("search_pipeline.json")
    plot: Annotated[bool, PLOT] = True
    pipeline: Annotated[
        str,
        PIPELINE,
        Override(
            help="mitigations wrapping the judge before demos are searched: pipeline text or @file.json; "
            "the saved spec holds them followed by the winner"
        ),
    ] = "baseline"
    dry_run: DryRun = False

    criterion: Annotated[
        Criterion, Override(help="criterion to optimise (default: the benchmark's first)")
    ] = None
    limit: Annotated[
        Limit,
        Override(
            help="use only the first N labelled items, document by document, so each "
            "document keeps every system's output (0 = all)"
        ),
    ] = 0
    backend: Annotated[
        Backend, Override(help="openai:<model>, anthropic:<model>, dspy:<model>, local, local:<path.gguf>")
    ] = DEFAULT_BACKEND
    prompt: Annotated[Prompt, Override(help="judge prompt template file with {{slots}}")] = None
    seed: Annotated[Seed, Override(help="seed of the split, the draws and the bootstrap")] = 0

    def check(self) -> None:
        """A registered ``--engine`` (plugins' engines too) and three ``--splits`` fractions."""
        check(self.COMMAND, "--engine", self.engine, Options(*names("engine")))
        self.split_fractions  # noqa: B018 - bad --splits are refused here

    @property
    def lm_cache(self) -> bool:
        """The judge LM has no disk cache of its own: the search adds its cache (``--cache``)."""
        return False

    @property
    def split_fractions(self) -> tuple[float, float, float]:
        """``--splits`` as (train, dev, test) fractions."""
        try:  # a value that is not a number, or not three of them
            train, dev, test = (float(x) for x in self.splits.split(","))
        except ValueError:
            raise ConfigError(
                f"expected --splits as three fractions such as 0.5,0.25,0.25; got {self.splits!r}"
            ) from None
        return train, dev, test


def default_selectors() -> list[str]:
    """The selectors a search draws from when no ``--selector`` is given: those tagged ``random_draws``."""
    return [name for name, cls in registered("selector").items() if cls.declared_tags.random_draws]


@command("search", SearchOptions)
def search_cmd(options: SearchOptions) -> None:
    """Search the demo set maximising agreement (+ consistency - bias) on dev; report it on held-out test."""
    writable_file(options.out, "--out")
    _search(options)


def _search(o: SearchOptions) -> None:
    before = parse_pipeline(o.pipeline)  # bad pipeline text fails before data or calls
    task = load_workload(o.benchmark, o.criterion, o.limit, labelled=True)
    data = task.benchmark.model_copy(update={"items": task.items})
    base = build_judge(o, task, before, declared=o.dry_run)  # a dry run needs no SDK, key or model file
    judge = before.wrap(base)
    if o.dry_run:
        try:
            typer.echo(
                dry_run_text([(o.pipeline, judge)], base, task.items)
                + "\n\n(the search adds each candidate demo set to these prompts; no LM call was made)"
            )
        finally:
            run_coroutine(base.lm.aclose(), what="mitigate search --dry-run", instead="lm.aclose()")
        return
    classes = [lookup("selector", n) for n in o.selector or default_selectors()]
    selectors = [cls(seed=o.seed) if "seed" in cls.model_fields else cls() for cls in classes]
    agreement = o.agreement
    if task.benchmark.pairwise and agreement != "accuracy":  # verdicts against gold preferences: exact match
        typer.echo(
            f"pairwise benchmark: agreement is accuracy against the gold preferences (not {agreement})",
            err=True,
        )
        agreement = "accuracy"
    objective = Objective(
        agreement=agreement,
        consistency_weight=o.consistency_weight,
        consistency=o.consistency,
        bias_weight=o.bias_weight,
    )
    templates: list[Any] = [None]
    if o.perturbed:
        templates.append(PerturbedDemosPreset(kind="order", seed=o.seed).build())
    common: dict[str, Any] = {
        "criterion": task.criterion,
        "objective": objective,
        "k": o.k or [2],
        "budget": o.budget,
        "splits": o.split_fractions,
        "cache": o.cache,
        "concurrency": o.concurrency,
        "progress": o.progress,
        "n_boot": o.n_boot,
        "seed": o.seed,
    }
    if objective.needs_likelihood:
        common["likelihood"] = o.likelihood
    if lookup("engine", o.engine).declared_tags.uses_selectors or o.selector or o.perturbed:
        common.update(selectors=selectors, perturbations=templates)  # an engine that takes none refuses them
    typer.echo(
        f"{task.benchmark.summary()}\nsearching demos for {task.criterion!r} on {len(task.items)} "
        f"labelled items with {base.lm.spec}, engine {o.engine}, budget {o.budget} LM calls",
        err=True,
    )
    result = _run(judge, data, o.engine, common)
    typer.echo(result.summary())
    with writing_after_run("the LM cache" if o.cache else None):
        path = result.save_pipeline(o.out, before=before)
        if result.beats_baseline:
            typer.echo(f"wrote {path} (use it with: mitigate judge --pipeline @{path})", err=True)
        else:
            typer.echo(
                f"wrote {path}: {result.verdict()}; it holds the dev winner for inspection, not a "
                "recommendation",
                err=True,
            )
        if o.plot:
            from mitigate.report import plot_search  # only with --plot (matplotlib)

            typer.echo(
                f"wrote {plot_search(result, path.with_suffix('.png'))} (trials on dev; winner vs "
                "baseline on test)",
                err=True,
            )


def _run(judge: Any, data: Any, engine: str, common: dict[str, Any]) -> Any:
    """The search, and the judge's backend closed in the same event loop (its HTTP session's)."""

    async def searched() -> Any:
        try:
            return await asearch(judge, data, engine=engine, **common)
        finally:
            for lm in {id(leaf.lm): leaf.lm for leaf in judge.leaves()}.values():
                await lm.aclose()

    return run_coroutine(searched(), what="mitigate search", instead="asearch(...)")
