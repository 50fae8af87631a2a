"""``mitigate prompts``: list the built-in judge prompts, print one, show what mitigate reads from a template,
or render the exact requests a pipeline sends for one item."""

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, ClassVar

import typer

from mitigate.cli._app import command
from mitigate.cli._files import read_text_file
from mitigate.cli.options._backend import BACKEND, DEFAULT_BACKEND, GUIDED, BaseUrl, Guided, base_urls_given
from mitigate.cli.options._declare import Override, argument, option
from mitigate.cli.options._prompt import AnswerOptions, Const, Scale, System, TemplateOverrides, parse_scale
from mitigate.cli.options._run import PIPELINE
from mitigate.cli.options._task import BENCHMARK, TRAIN, Criterion
from mitigate.errors import ConfigError
from mitigate.prompt import list_prompts, prompt_text

if TYPE_CHECKING:
    from mitigate.data import Benchmark, Item
    from mitigate.lm import LM

ITEM = option(
    "item", "--item", help="with 'render' and -b: the id of the item to render (default: the first)"
)

RENDER_ONLY = {
    "pipeline": "--pipeline",
    "benchmark": "-b",
    "item": "--item",
    "train": "--train",
    "backend": "--backend",
}
"""The options that apply to 'mitigate prompts render' alone, as a refusal names them."""


@dataclass(frozen=True)
class PromptsOptions(TemplateOverrides, AnswerOptions):
    """``mitigate prompts``: list the built-in prompts, print one, or inspect a template file."""

    COMMAND: ClassVar[str] = "prompts"

    name: Annotated[
        str | None, argument("name", help="print this built-in prompt's text, 'inspect' or 'render'")
    ] = None
    file: Annotated[
        Path | None,
        argument(
            "file",
            help="with 'inspect': the template file to read; with 'render': a "
            "template file or a built-in prompt name",
        ),
    ] = None
    pipeline: Annotated[
        str | None,
        PIPELINE,
        Override(help="with 'render': the mitigations wrapping the judge (pipeline text or @file.json)"),
    ] = None
    benchmark: Annotated[
        str | None,
        BENCHMARK,
        Override(
            help="with 'render': take the item from this benchmark (default: an item whose slots show "
            "their names)"
        ),
    ] = None
    criterion: Annotated[
        Criterion, Override(help="with 'render': the criterion (default: the benchmark's first)")
    ] = None
    item: Annotated[str | None, ITEM] = None
    train: Annotated[
        str | None,
        TRAIN,
        Override(
            help="with 'render' and -b: fit the pipeline first, on this fraction of the benchmark (split "
            "by document, seed 0) or on this training benchmark; pipelines that call the judge while "
            "fitting need --backend"
        ),
    ] = None
    backend: Annotated[
        str | None,
        BACKEND,
        Override(
            help="with 'render': the judge backend whose requests are shown (its constraint fields, "
            "logprob scoring ...); default: the embedded model's requests, without loading it"
        ),
    ] = None
    guided: Annotated[Guided | None, GUIDED] = None
    base_url: BaseUrl = None
    scale: Annotated[
        Scale, Override(help="with 'render': answer scale MIN,MAX (default: from the prompt)")
    ] = None

    system: Annotated[System, Override(help="with 'inspect' or 'render': a system message template file")] = (
        None
    )
    const: Annotated[
        Const,
        Override(
            help="with 'inspect' or 'render': NAME=VALUE (or NAME=@file) filled into the template once, "
            "e.g. a rubric or a Jinja variable; repeat for several"
        ),
    ] = None

    def check(self) -> None:
        """A ``--scale`` of MIN,MAX; the render options only with 'render'; --item and --train need -b."""
        parse_scale(self.scale)
        if self.name != "render":
            given = [flag for field, flag in RENDER_ONLY.items() if getattr(self, field) is not None]
            if given:
                raise ConfigError(
                    f"{', '.join(given)} apply to 'mitigate prompts render'; got them with "
                    f"{self.name or 'no subcommand'!r}"
                )
        if (self.item is not None or self.train is not None) and self.benchmark is None:
            raise ConfigError(
                "--item and --train take their items from a benchmark; expected -b with them; got none"
            )


@command("prompts", PromptsOptions)
def prompts_cmd(options: PromptsOptions) -> None:
    """List the built-in judge prompts, print one, 'inspect FILE' (what mitigate reads from a template), or
    'render FILE|NAME' (the exact requests a pipeline sends for one item; no LM call)."""
    if options.name is None:
        typer.echo("\n".join(list_prompts()))
    elif options.name == "inspect":
        typer.echo(inspect_template(options.file, options.system, options.const or []))
    elif options.name == "render":
        typer.echo(render_template(options))
    else:
        typer.echo(prompt_text(options.name))


def inspect_template(file: Path | None, system: Path | None, consts: list[str]) -> str:
    """What ``JudgePrompt.from_template`` recovers from ``file`` (``mitigate.prompt.describe_template``)."""
    from mitigate.cli._build import constants_of, naming_template, template_origin
    from mitigate.prompt import TemplateHints, describe_template

    if file is None or not (file.exists() or file.is_symlink()):
        raise ConfigError(
            f"expected 'mitigate prompts inspect FILE' with an existing template file; got {file}"
        )
    text = read_text_file(file, "FILE")  # a folder, FIFO or device is refused by what it is, never opened
    constants = constants_of(consts)
    sys_text = read_text_file(system, "--system") if system is not None else None
    with naming_template(template_origin(file, system, option="FILE")):
        return describe_template(text, TemplateHints.of(constants=constants or None), system=sys_text)


def _template(source: Path | None) -> str:
    """The text of a template file, or of a built-in prompt named by ``source``."""
    if source is None:
        raise ConfigError(
            "expected 'mitigate prompts render FILE' (a template file) or a built-in prompt "
            f"name ({', '.join(list_prompts()[:4])} ...); got none"
        )
    if source.is_file():
        return read_text_file(source, "FILE")
    if str(source) in list_prompts():
        return prompt_text(str(source))
    raise ConfigError(
        f"expected a template file or a built-in prompt name ({', '.join(list_prompts()[:4])} "
        f"...); got {str(source)!r}, which is neither"
    )


def _train_bench(bench: "Benchmark", train: str, criterion: str) -> tuple["Benchmark", "Benchmark"]:
    """(train, test): a fraction of ``bench`` split by document (seed 0), or another benchmark and it."""
    from mitigate.data import load, train_test_split

    try:
        fraction = float(train)
    except ValueError:
        return load(train), bench
    if not 0.0 < fraction < 1.0:
        raise ConfigError(
            f"expected --train as a fraction strictly between 0 and 1 or a benchmark; got {train!r}"
        )
    return train_test_split(bench, fraction, seed=0, criterion=criterion)


def _pick(items: tuple["Item", ...], item_id: str | None, bench: "Benchmark") -> "Item":
    if item_id is None:
        if not items:
            raise ConfigError(f"benchmark {bench.name!r} has no item to render")
        return items[0]
    for it in bench.items:
        if it.id == item_id:
            return it
    raise ConfigError(
        f"expected --item as an item id of {bench.name!r} (e.g. {bench.items[0].id!r}); got {item_id!r}"
    )


def render_template(o: PromptsOptions) -> str:
    """Every request the pipeline sends for one item, diffed against the unmitigated prompt (no LM call)."""
    from mitigate.cli._build import prompt_from_template, scoring_for, template_origin
    from mitigate.data import load
    from mitigate.judge import JudgeConfig, PromptJudge
    from mitigate.run import placeholder_item, render_judge
    from mitigate.strategies import parse_pipeline

    pipe = parse_pipeline(o.pipeline or "baseline")  # bad pipeline text fails before anything is read
    text = _template(o.file)
    system = read_text_file(o.system, "--system") if o.system is not None else None
    bench: Benchmark | None = None
    crit = o.criterion
    if o.benchmark is not None:
        bench = load(o.benchmark)
        crit = crit or (bench.criteria[0] if bench.criteria else None)
    answer = "pairwise" if bench is not None and bench.pairwise else None
    origin = (
        template_origin(o.file, o.system, option="FILE")
        if o.file is not None and o.file.is_file()
        else f"{o.file} (built-in)"
    )
    jp = prompt_from_template(
        text, o, system=system, scale=parse_scale(o.scale), criterion=crit, answer=answer, origin=origin
    )
    fitting_calls = pipe.tags.needs_fitting and not pipe.is_fitted and pipe.tags.calls_judge_while_fitting
    lm = _backend(o, declared=not fitting_calls or o.backend is None)  # no --backend: refused below
    config = JudgeConfig(temperature=o.temperature, max_tokens=o.max_tokens, **scoring_for(o, lm, jp, pipe))  # type: ignore[arg-type]
    base = PromptJudge(jp, lm, config)
    notes: list[str] = []
    test_items: tuple[Item, ...] = bench.items if bench is not None else ()
    train: Benchmark | None = None
    if pipe.tags.needs_fitting and not pipe.is_fitted:
        if o.train is None or bench is None or crit is None:
            raise ConfigError(
                f"pipeline {o.pipeline!r} learns from data and must be fitted first; expected "
                "-b with --train FRACTION (or --train BENCHMARK); got none"
            )
        if pipe.tags.calls_judge_while_fitting and o.backend is None:
            raise ConfigError(
                f"pipeline {o.pipeline!r} calls the judge while fitting; expected --backend to "
                "fit it with; got none"
            )
        train, test = _train_bench(bench, o.train, crit)
        test_items = test.items
        notes.append(f"fitted on {len(train)} items of {train.name}")
    judge = pipe.compile(base, train, progress=False)
    item = _pick(test_items, o.item, bench) if bench is not None else placeholder_item(judge)
    head = [f"template: {o.file}   pipeline: {o.pipeline or 'baseline'}   item: {item.id!r}", *notes, ""]
    return "\n".join(head) + render_judge(judge, item, baseline=base)


def _backend(o: PromptsOptions, *, declared: bool = True) -> "LM":
    """--backend (default: the embedded model): its declared facts for rendering (no SDK, key or model file
    needed), or the backend itself (no cache, no retries) when a pipeline calls it while fitting."""
    from mitigate.lm import declare, get

    kwargs: dict[str, Any] = {}
    urls = base_urls_given(o.base_url)
    if urls:
        from mitigate.cli._build import base_urls

        kwargs["base_url"] = base_urls(urls)
    if o.guided:
        kwargs["guided"] = o.guided
    spec = o.backend or DEFAULT_BACKEND
    return declare(spec, **kwargs) if declared else get(spec, **kwargs)
