"""``mitigate prompts``: list the built-in judge prompts, print one, show what mitigate reads from a template,
or render the exact requests a pipeline sends for one item."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

import typer

from mitigate.cli.app import command
from mitigate.cli.files import read_text_file
from mitigate.cli.options import PromptsOptions, parse_scale
from mitigate.errors import ConfigError

if TYPE_CHECKING:
    from mitigate.data.schema import Benchmark, Item
    from mitigate.lm.base import LM

# The rest is imported inside the functions that use it: `import mitigate.cli` (what `mitigate --help` and
# every command load first) registers this command without the prompts, judges or strategies (issue 29).


@command("prompts", PromptsOptions)
def prompts_cmd(options: PromptsOptions) -> None:
    """List the built-in judge prompts, print one, 'inspect FILE' (what mitigate reads from a template), or
    'render FILE|NAME' (the exact requests a pipeline sends for one item; no LM call)."""
    from mitigate.prompt.builtin import list_prompts, prompt_text

    if options.name is None:
        typer.echo("\n".join(list_prompts()))
    elif options.name == "inspect":
        typer.echo(inspect_template(options.file, options.system, options.const or []))
    elif options.name == "render":
        typer.echo(render_template(options))
    else:
        typer.echo(prompt_text(options.name))


def inspect_template(file: Path | None, system: Path | None, consts: list[str]) -> str:
    """What ``JudgePrompt.from_template`` recovers from ``file`` (see ``mitigate.prompt.describe_template``)."""
    from mitigate.cli.build import constants_of, naming_template, template_origin
    from mitigate.prompt import TemplateHints, describe_template

    if file is None or not (file.exists() or file.is_symlink()):
        raise ConfigError(f"expected 'mitigate prompts inspect FILE' with an existing template file; got {file}")
    text = read_text_file(file, "FILE")  # a folder, FIFO or device is refused by what it is, never opened
    constants = constants_of(consts)
    sys_text = read_text_file(system, "--system") if system is not None else None
    with naming_template(template_origin(file, system, option="FILE")):
        return describe_template(text, TemplateHints.of(constants=constants or None), system=sys_text)


def _template(source: Path | None) -> str:
    """The text of a template file, or of a built-in prompt named by ``source``."""
    from mitigate.prompt.builtin import list_prompts, prompt_text

    if source is None:
        raise ConfigError("expected 'mitigate prompts render FILE' (a template file) or a built-in prompt name "
                          f"({', '.join(list_prompts()[:4])} ...); got none")
    if source.is_file():
        return read_text_file(source, "FILE")
    if str(source) in list_prompts():
        return prompt_text(str(source))
    raise ConfigError(f"expected a template file or a built-in prompt name ({', '.join(list_prompts()[:4])} ...); "
                      f"got {str(source)!r}, which is neither")


def _train_bench(bench: Benchmark, train: str, criterion: str) -> tuple[Benchmark, Benchmark]:
    """(train, test): a fraction of ``bench`` split by document (seed 0), or another benchmark and ``bench``."""
    from mitigate.data.registry import load
    from mitigate.data.split import train_test_split

    try:
        fraction = float(train)
    except ValueError:
        return load(train), bench
    if not 0.0 < fraction < 1.0:
        raise ConfigError(f"expected --train as a fraction strictly between 0 and 1 or a benchmark; got {train!r}")
    return train_test_split(bench, fraction, seed=0, criterion=criterion)


def _pick(items: tuple[Item, ...], item_id: str | None, bench: Benchmark) -> Item:
    if item_id is None:
        if not items:
            raise ConfigError(f"benchmark {bench.name!r} has no item to render")
        return items[0]
    for it in bench.items:
        if it.id == item_id:
            return it
    raise ConfigError(f"expected --item as an item id of {bench.name!r} (e.g. {bench.items[0].id!r}); got {item_id!r}")


def render_template(o: PromptsOptions) -> str:
    """Every request the pipeline sends for one item, with its diff against the unmitigated prompt (no LM call)."""
    from mitigate.cli.build import read_template, scoring_for, template_origin
    from mitigate.data.registry import load
    from mitigate.judge import JudgeConfig, PromptJudge
    from mitigate.run.render import placeholder_item, render_judge
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
    origin = template_origin(o.file, o.system, option="FILE") if o.file is not None and o.file.is_file() else \
        f"{o.file} (built-in)"
    jp = read_template(text, o, system=system, scale=parse_scale(o.scale), criterion=crit, answer=answer,
                       origin=origin)
    fitting_calls = pipe.tags.needs_fitting and not pipe.is_fitted and pipe.tags.calls_judge_while_fitting
    lm = _backend(o, declared=not fitting_calls or o.backend is None)  # no --backend: refused below
    config = JudgeConfig(temperature=o.temperature, max_tokens=o.max_tokens, **scoring_for(o, lm, jp, pipe))  # type: ignore[arg-type]
    base = PromptJudge(jp, lm, config)
    notes: list[str] = []
    test_items: tuple[Item, ...] = bench.items if bench is not None else ()
    train: Benchmark | None = None
    if pipe.tags.needs_fitting and not pipe.is_fitted:
        if o.train is None or bench is None or crit is None:
            raise ConfigError(f"pipeline {o.pipeline!r} learns from data and must be fitted first; expected -b with "
                              "--train FRACTION (or --train BENCHMARK); got none")
        if pipe.tags.calls_judge_while_fitting and o.backend is None:
            raise ConfigError(f"pipeline {o.pipeline!r} calls the judge while fitting; expected --backend to fit it "
                              "with; got none")
        train, test = _train_bench(bench, o.train, crit)
        test_items = test.items
        notes.append(f"fitted on {len(train)} items of {train.name}")
    judge = pipe.compile(base, train, progress=False)
    item = _pick(test_items, o.item, bench) if bench is not None else placeholder_item(judge)
    head = [f"template: {o.file}   pipeline: {o.pipeline or 'baseline'}   item: {item.id!r}", *notes, ""]
    return "\n".join(head) + render_judge(judge, item, baseline=base)


def _backend(o: PromptsOptions, *, declared: bool = True) -> LM:
    """The backend named by --backend (the embedded model's spec by default): its declared facts for rendering
    (:func:`~mitigate.lm.registry.declare`: no SDK, key or model file needed), or the backend itself when a
    pipeline must call it while fitting (no cache, no retries)."""
    from mitigate.lm.registry import declare, get

    kwargs: dict[str, Any] = {}
    if o.base_url:
        kwargs["base_url"] = o.base_url
    if o.guided:
        kwargs["guided"] = o.guided
    spec = o.backend or "local"
    return declare(spec, **kwargs) if declared else get(spec, **kwargs)


__all__ = ["inspect_template", "prompts_cmd", "render_template"]
