"""What the commands assemble the same way: the task (benchmark, criterion, items) and the judge.

:func:`load_workload` takes the items in the one order every command uses, document by document, so
``--limit`` N picks the same N items everywhere; :func:`build_judge` builds the judge LM and the
:class:`PromptJudge` from a command's options. The renderer and the strategies are imported where used.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import typer

from mitigate.cli._files import read_text_file
from mitigate.cli.options._backend import LMRunOptions, base_urls_given, registered_backend
from mitigate.cli.options._prompt import parse_pairs
from mitigate.data import Benchmark, Item, load, select_items
from mitigate.data import labelled as is_labelled
from mitigate.errors import ConfigError, DataError, TemplateError
from mitigate.judge import Judge, JudgeConfig, PromptJudge, answer_mode
from mitigate.lm import LM, Limits, RetryPolicy, declare, get, wrap
from mitigate.prompt import AnswerFormat, JudgePrompt, TemplateHints, default_prompt_for, prompt_text
from mitigate.run import BatchConfig, BatchSession

if TYPE_CHECKING:
    from mitigate.data import ItemStream, StreamedBenchmark
    from mitigate.strategies import Mitigation


@dataclass(frozen=True)
class Workload:
    """What a command judges: the benchmark, the criterion, and the chosen items in document order (or, for a
    streamed task, :func:`stream_workload`, a StreamedBenchmark and its ItemStream)."""

    benchmark: Benchmark | StreamedBenchmark
    criterion: str
    items: tuple[Item, ...] | ItemStream


@dataclass(frozen=True)
class LoadedWorkload(Workload):
    """A workload loaded whole (:func:`load_workload`): the benchmark in memory, the chosen items a tuple."""

    benchmark: Benchmark
    items: tuple[Item, ...]


def _criterion(name: str, criteria: Sequence[str], criterion: str | None) -> str:
    """``criterion``, checked against a benchmark's ``criteria`` (default: its first)."""
    crit = criterion or (criteria[0] if criteria else None)
    if crit is None:
        raise ConfigError(f"benchmark {name!r} declares no criteria; pass --criterion")
    if criteria and crit not in criteria:
        raise ConfigError(f"expected a criterion of {name} {list(criteria)}; got {crit!r}")
    return crit


def load_benchmark(benchmark: str, criterion: str | None) -> tuple[Benchmark, str]:
    """Load ``benchmark`` and check ``criterion`` (default: its first)."""
    bench = load(benchmark)
    return bench, _criterion(bench.name, bench.criteria, criterion)


def named_probes(text: str, rewriter: object | None) -> list[Any]:
    """The probes ``--probes`` names; refused before any data is read or call made when one rewrites the
    judged text with an LM and no ``--rewriter`` was given."""
    from mitigate.probes import check_rewriter, resolve_probes  # only with --probes

    chosen = resolve_probes(text, rewriter=rewriter is not None)
    if rewriter is None:
        check_rewriter(chosen, None)
    return chosen


def load_workload(
    benchmark: str, criterion: str | None, limit: int, *, labelled: bool = False
) -> LoadedWorkload:
    """Load ``benchmark``, check ``criterion`` and choose the first ``limit`` items (0: all), document by
    document; ``labelled``: only items with a human score or gold preference for the criterion."""
    bench, crit = load_benchmark(benchmark, criterion)
    pool = [it for it in bench.items if is_labelled(it, crit)] if labelled else list(bench.items)
    return LoadedWorkload(bench, crit, tuple(select_items(pool, limit or None)))


def stream_workload(benchmark: str, criterion: str | None, limit: int) -> Workload:
    """:func:`load_workload` for a run that streams its items: a ``jsonl:`` benchmark's chosen items are read
    again as they are judged, never held whole (:func:`~mitigate.data.open_benchmark`)."""
    from mitigate.data import open_benchmark

    streamed = open_benchmark(benchmark, limit)
    return Workload(streamed, _criterion(streamed.name, streamed.criteria, criterion), streamed.items)


def template_text(prompt: Path | None, benchmark: str, criterion: str) -> str:
    """The judge template: the user's file, or the built-in prompt for the benchmark's criterion."""
    if prompt is None:
        return prompt_text(default_prompt_for(benchmark, criterion))
    return read_text_file(prompt, "--prompt")


def template_origin(prompt: Path | str | None, system: Path | None = None, option: str = "--prompt") -> str:
    """How an error names the template: ``--prompt FILE`` (with its ``--system`` file), or the built-in."""
    named = f"{option} {prompt}" if prompt is not None else "the built-in prompt"
    return named + (f" (with --system {system})" if system is not None else "")


@contextmanager
def naming_template(origin: str) -> Iterator[None]:
    """A TemplateError raised while a template is read names the template first (``template --prompt X``)."""
    try:
        yield
    except TemplateError as exc:
        raise type(exc)(f"template {origin}: {exc.message}", **exc.context) from None


def recorded_reader(o: LMRunOptions, criterion: str, bench: Benchmark) -> Any:
    """Reads recorded rows that hold only ``raw`` with ``--prompt``'s answer format, the template and the
    item's texts as what the judge was shown (a value the answer quotes back is not read); None without."""
    if o.prompt is None:
        return None
    template = template_text(o.prompt, o.benchmark, criterion)
    with naming_template(template_origin(o.prompt)):
        jp = JudgePrompt.from_template(
            template, criterion=criterion, answer="pairwise" if bench.pairwise else None
        )
    texts = {item.id: item.texts() for item in bench.items}
    return lambda raw, crit, item_id: jp.format.read(
        raw, jp.scale, quoted=(template,), judged=texts.get(item_id, ())
    )


def replayed_run(recorded: Path | None, judge: str | None, released: str | None, read: Any = None) -> Any:
    """The run ``--recorded`` (``--judge``: which judge of the file) or ``--released`` names; None for
    neither. ``read`` reads rows that hold only the raw answer (:func:`recorded_reader`)."""
    from mitigate.data import load_recorded_runs, released_recorded

    if recorded is None:
        return None if released is None else released_recorded(released)
    runs = load_recorded_runs(recorded, read)
    if judge is None and len(runs) > 1:
        raise DataError(f"{recorded} holds judgments of several judges {list(runs)}; name one with --judge")
    if judge is not None and judge not in runs:
        raise DataError(f"expected --judge to name a judge of {recorded}, one of {list(runs)}; got {judge!r}")
    return runs[judge or next(iter(runs))]


def build_backend(o: LMRunOptions, *, declared: bool = False) -> LM:
    """The judge LM of the options, with retries (a Retry-After longer than ``--patience`` stops them) and the
    on-disk cache when ``o.lm_cache``; a network backend gets the ``--deadline`` and ``--max-*``
    :class:`~mitigate.lm.Limits`. ``declared``: the backend's declared facts only, for a command that makes no
    LM call (``--dry-run``: no SDK, key or model file needed).
    """
    urls = base_urls_given(o.base_url)
    kwargs: dict[str, Any] = {"base_url": base_urls(urls)} if urls else {}
    given = {"timeout": o.timeout, "transport": o.transport, "guided": o.guided}
    kwargs |= {k: v for k, v in given.items() if v is not None}
    found = registered_backend(o.backend)
    if found is not None and found.network:  # the deadline and the caps of a server's answers
        kwargs["limits"] = Limits(
            deadline=o.deadline,
            max_response_bytes=o.max_response_bytes,
            max_prompt_chars=o.max_prompt_chars,
            max_samples=o.max_samples,
        )
    if declared:
        return declare(o.backend, **kwargs)
    policy = RetryPolicy(base_delay=min(0.5, o.patience), max_delay=o.patience)
    return wrap(get(o.backend, **kwargs), cache=o.lm_cache, retry=policy)


def base_urls(values: list[str]) -> str | list[tuple[str, float]]:
    """``--base-url`` values: one URL as it is, else the replicas they name (URLs and ``@FILE`` lists of ``URL
    [WEIGHT]`` lines), which the backend spreads its requests over."""
    if len(values) == 1 and not values[0].startswith("@"):
        return values[0]
    from mitigate.lm import read_endpoints

    found = read_endpoints(values, read_text_file)
    return found[0][0] if len(found) == 1 else found


def constants_of(values: list[str] | None) -> dict[str, str]:
    """``--const NAME=VALUE`` / ``NAME=@file`` values as the template's constants."""
    out = parse_pairs("--const", values, "NAME=VALUE or NAME=@file")
    return {k: read_text_file(Path(v[1:]), "--const") if v.startswith("@") else v for k, v in out.items()}


def prompt_from_template(
    text: str,
    o: Any,
    *,
    system: str | None,
    scale: tuple[float, float] | None = None,
    criterion: str | None = None,
    answer: str | None = None,
    origin: str = "the template",
) -> JudgePrompt:
    """The template read into a prompt, with the command's overrides (``--const``, ``--output-slot``,
    ``--slot-field``, ``--answer-format``, ``--reasoning``); an error names the template by ``origin``."""
    slots = parse_pairs("--slot-field", getattr(o, "slot_field", None), "SLOT=FIELD (e.g. response=output)")
    consts = constants_of(getattr(o, "const", None))
    output_slot = getattr(o, "output_slot", None)
    with naming_template(origin):
        hints = TemplateHints.of(
            scale=scale,
            criterion=criterion,
            answer=answer or None,
            output_slot=output_slot.strip() if output_slot else None,
            slot_fields=slots or None,
            constants=consts or None,
        )
        jp = JudgePrompt.from_template(text, hints, system=system)
    return with_format_overrides(jp, getattr(o, "answer_format", None), getattr(o, "reasoning", None))


def with_format_overrides(jp: JudgePrompt, line: str | None, reasoning: str | None) -> JudgePrompt:
    """``jp`` with its answer line (``--answer-format``: a line with {value}, or json:KEY) and reasoning."""
    if line is None and reasoning is None:
        return jp
    update: dict[str, Any] = {"inferred": False}
    if line is not None:
        if line.startswith("json:"):
            update.update(json_key=line[len("json:") :].strip())
        else:
            update.update(line=line, json_key=None)
    if reasoning is not None:
        update["reasoning"] = reasoning
    stub = jp.format.stub
    fmt = AnswerFormat(**(jp.format.model_dump() | update | {"stub": ""}))
    # a template ending with an answer stub ("- Fluency (1-3):") is still completed by a line naming its label
    return jp.with_answer_format(fmt.with_stub(stub) if stub and fmt.names_stub(stub) else fmt)


def scoring_for(o: LMRunOptions, lm: LM, prompt: JudgePrompt, pipeline: Mitigation | None) -> dict[str, str]:
    """``answer_mode`` of the options; ``--scoring auto`` parses the text when the template or the pipeline
    asks for reasoning before the answer (a logprob read takes the first token the judge writes)."""
    scoring = o.scoring
    reasons = prompt.format.reasoning == "before" or (pipeline is not None and pipeline.tags.adds_reasoning)
    if scoring == "auto" and reasons:
        scoring = "parse"
    return answer_mode(lm, scoring, o.constrain)


def build_judge(
    o: LMRunOptions, task: Workload, pipeline: Mitigation | None = None, *, declared: bool = False
) -> PromptJudge:
    """The prompt judge of the options: the template, its LM and its config (the caller closes ``judge.lm``).

    A pairwise benchmark needs a pairwise ``--prompt`` (there is no built-in one). ``pipeline``: the
    mitigations that will wrap it; ``declared``: its LM is the backend's declared facts (``--dry-run``).
    """
    bench, crit = task.benchmark, task.criterion
    system = read_text_file(o.system_file, "--system") if o.system_file is not None else None
    if bench.pairwise and o.prompt is None:
        raise ConfigError(
            f"benchmark {bench.name!r} is pairwise; expected --prompt with a pairwise template "
            "that shows {{output}} and {{output_b}} and asks which is better; got none"
        )
    jp = prompt_from_template(
        template_text(o.prompt, o.benchmark, crit),
        o,
        system=system,
        scale=o.scale_range,
        criterion=crit,
        answer="pairwise" if bench.pairwise else None,
        origin=template_origin(o.prompt, o.system_file),
    )
    lm = build_backend(o, declared=declared)
    # the options' strings (checked when the options were built) validated as the config's literals
    config = JudgeConfig.model_validate(
        {
            "temperature": o.temperature,
            "n": o.samples_per_item,
            "reducer": o.reducer_name,
            "max_tokens": o.max_tokens,
            **scoring_for(o, lm, jp, pipeline),
        }
    )
    return PromptJudge(jp, lm, config)


def with_pipeline(judge: Judge, text: str | None) -> Judge:
    """``judge`` wrapped by the pipeline ``text`` names (``"name(k=v) | name2"`` or ``@file.json``)."""
    if text is None:
        return judge
    from mitigate.strategies import parse_pipeline

    pipe = parse_pipeline(text)
    typer.echo(f"pipeline {text}: {json.dumps(pipe.spec())[:200]}", err=True)
    return pipe.wrap(judge)


def dry_run_text(entries: Sequence[tuple[str, Judge]], base: PromptJudge, items: Iterable[Item]) -> str:
    """``--dry-run``: every request of each entry for the first item, diffed against ``base``'s prompt."""
    first = iter(items)
    item = next(first, None)
    if hasattr(first, "close"):  # a file read as a stream: closed, not left to the collector
        first.close()
    if item is None:
        raise ConfigError("--dry-run renders the first item; expected at least one item; got none")
    from mitigate.run import render_judge

    parts = [
        f"### entry {name!r}: the requests for item {item.id!r} (dry run: no LM call)\n"
        + render_judge(judge, item, baseline=base)
        for name, judge in entries
    ]
    return "\n\n".join(parts)


def batch_session(enabled: bool, folder: Path | None, retries: int, progress: bool) -> BatchSession | None:
    """A batch session recording in ``folder``/batches when ``--batch`` is on (None otherwise)."""
    if not enabled or folder is None:
        return None
    return BatchSession(BatchConfig(retry_failed=retries, progress=progress), folder / "batches")


class Replaced:
    """The options ``o`` with some replaced (``Replaced(o, backend=...)``), the others read from ``o``."""

    def __init__(self, o: Any, **replaced: Any) -> None:
        self._o = o
        self.__dict__.update(replaced)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._o, name)


def RewriterOptions(o: Any) -> Replaced:
    """The judge's backend options with the rewriter's spec: the rewriter gets the same deadline, caps and
    cache."""
    return Replaced(o, backend=o.rewriter or o.backend, base_url=None, transport=None, guided=None)
