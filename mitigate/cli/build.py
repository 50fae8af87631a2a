"""What judge, compare and search assemble the same way: the task (benchmark, criterion, items) and the judge.

:func:`load_task` loads the benchmark, checks the criterion and takes the items in the one
order every command uses: document by document (every system's output for the first
document, then the second ...), so ``-n``/``--limit`` N picks the same N items in judge,
compare and search. :func:`build_judge` builds the judge LM and the :class:`PromptJudge`
from a command's typed options.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import typer

from mitigate.cli.files import read_text_file
from mitigate.cli.options import NETWORK_BACKENDS, LMRunOptions, backend_kind
from mitigate.data.registry import load
from mitigate.data.schema import Benchmark, Item
from mitigate.data.split import select_items
from mitigate.errors import ConfigError
from mitigate.judge import Judge, JudgeConfig, PromptJudge, answer_mode
from mitigate.lm.base import LM
from mitigate.lm.http import Limits
from mitigate.lm.registry import get, wrap
from mitigate.lm.retry import RetryPolicy
from mitigate.prompt import JudgePrompt
from mitigate.prompt.builtin import default_prompt_for, prompt_text
from mitigate.run.batch_session import BatchOptions, BatchSession


@dataclass(frozen=True)
class Task:
    """What a command judges: the benchmark, the criterion, and the chosen items in document order."""

    benchmark: Benchmark
    criterion: str
    items: tuple[Item, ...]


def choose_items(items: Sequence[Item], limit: int) -> list[Item]:
    """The first ``limit`` items (0: all), document by document: the one item order of every command."""
    return select_items(items, limit or None)


def load_task(benchmark: str, criterion: str | None, limit: int, *, labelled: bool = False) -> Task:
    """Load ``benchmark``, check ``criterion`` (default: its first) and choose the items.

    ``labelled``: only items with a human score for the criterion (what a search can learn
    from), chosen in the same order.
    """
    bench = load(benchmark)
    crit = criterion or (bench.criteria[0] if bench.criteria else None)
    if crit is None:
        raise ConfigError(f"benchmark {bench.name!r} declares no criteria; pass --criterion")
    if bench.criteria and crit not in bench.criteria:
        raise ConfigError(f"expected a criterion of {bench.name} {list(bench.criteria)}; got {crit!r}")
    pool = [it for it in bench.items if crit in it.human] if labelled else list(bench.items)
    return Task(bench, crit, tuple(choose_items(pool, limit)))


def template_text(prompt: Path | None, benchmark: str, criterion: str) -> str:
    """The judge template: the user's file, or the built-in prompt for the benchmark's criterion."""
    if prompt is None:
        return prompt_text(default_prompt_for(benchmark, criterion))
    return read_text_file(prompt, "--prompt")


def build_backend(o: LMRunOptions) -> LM:
    """The judge LM of the options, with retries (a Retry-After longer than ``--patience`` stops them).

    The on-disk cache wraps it when ``o.lm_cache``; ``--timeout`` is the per-request timeout of
    network backends, ``--deadline`` and ``--max-*`` their :class:`~mitigate.lm.http.Limits`, ``--transport`` the HTTP client and ``--guided`` the guided-decoding
    fields of an openai: backend.
    """
    kwargs: dict[str, Any] = {"base_url": o.base_url} if o.base_url else {}
    if o.timeout is not None:
        kwargs["timeout"] = o.timeout
    if o.transport is not None:
        kwargs["transport"] = o.transport
    if o.guided is not None:
        kwargs["guided"] = o.guided
    if backend_kind(o.backend) in NETWORK_BACKENDS:  # the deadline and the caps of a server's answers
        kwargs["limits"] = Limits(deadline=o.deadline, max_response_bytes=o.max_response_bytes,
                                  max_prompt_chars=o.max_prompt_chars, max_samples=o.max_samples)
    policy = RetryPolicy(base_delay=min(0.5, o.patience), max_delay=o.patience)
    return wrap(get(o.backend, **kwargs), cache=o.lm_cache, retry=policy)


def build_judge(o: LMRunOptions, task: Task) -> PromptJudge:
    """The prompt judge of judge, compare and search: the template, its LM and its config, from the options.

    A pairwise benchmark needs a pairwise ``--prompt`` (there is no built-in one); the judge
    then answers with a verdict. The caller closes ``judge.lm`` when done.
    """
    bench, crit = task.benchmark, task.criterion
    system = read_text_file(o.system_file, "--system") if o.system_file is not None else None
    if bench.pairwise and o.prompt is None:
        raise ConfigError(f"benchmark {bench.name!r} is pairwise; expected --prompt with a pairwise template that "
                          "shows {{output}} and {{output_b}} and asks which is better; got none")
    answer: dict[str, Any] = {"answer": "pairwise"} if bench.pairwise else {}
    jp = JudgePrompt.from_template(template_text(o.prompt, o.benchmark, crit), system=system, scale=o.scale_range,
                                   criterion=crit, **answer)
    lm = build_backend(o)
    config = JudgeConfig(temperature=o.temperature, n=o.samples_per_item, reducer=o.reducer_name,
                         max_tokens=o.max_tokens, **answer_mode(lm, o.scoring, o.constrain))
    return PromptJudge(jp, lm, config)


def with_pipeline(judge: Judge, text: str | None) -> Judge:
    """``judge`` wrapped by the pipeline ``text`` names (``"name(k=v) | name2"`` or ``@file.json``; None: unchanged)."""
    if text is None:
        return judge
    from mitigate.strategies import (
        parse_pipeline,  # lazy: a judge without a pipeline never loads the strategies
    )

    pipe = parse_pipeline(text)
    typer.echo(f"pipeline {text}: {json.dumps(pipe.spec())[:200]}", err=True)
    return pipe.wrap(judge)


def batch_session(enabled: bool, folder: Path | None, retries: int, progress: bool) -> BatchSession | None:
    """A batch session recording in ``folder``/batches when ``--batch`` is on (None otherwise).

    The options were checked when built (``--batch`` has a folder and a backend with a batch
    API, ``--batch-retries`` >= 0).
    """
    if not enabled or folder is None:
        return None
    return BatchSession(BatchOptions(retry_failed=retries, progress=progress), folder / "batches")
