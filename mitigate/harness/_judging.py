"""The fit stage (:func:`fit` -> :class:`FittedPlan`) and the judge stage (:func:`judge` -> :class:`Judged`):
every LM call of a comparison. Each entry's prompts are rendered for every item before the first call; each
entry runs with its own resumable journal (``journals/<name>.jsonl``), one after the other or all at once
through one batch session, its judgments written to ``results.sqlite`` as they come and read back from
it; LS is cached per item (``likelihood.jsonl``); the probes reuse each entry's judgments as the
originals.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field
from tqdm.auto import tqdm

from mitigate.data import Item, save_jsonl
from mitigate.errors import ConfigError, DataError, MitigateError
from mitigate.harness._entry import Entry
from mitigate.harness._planning import NEEDS_TRAIN, ComparePlan
from mitigate.judge import FitContext, Judge, LikelihoodScorer
from mitigate.paths import loads_json, open_regular, read_lines
from mitigate.probes import probe_entry
from mitigate.report import with_first_prompt
from mitigate.run import (
    COLUMNS_FILE,
    Columns,
    ColumnWriter,
    RunResult,
    RunSummary,
    preflight,
    run_stream,
    session_for,
)

TRAIN_FILE = "train.jsonl"
"""The training items of a train split, written beside the reports (for ``mitigate search -b jsonl:...``)."""

LIKELIHOOD_FILE = "likelihood.jsonl"
"""The per-item LS cache, beside the reports."""

GENERATION_TASKS: dict[str, str] = {
    "summeval": "Write a short summary of the news article.",
    "uss": "Continue the dialogue with the system's next turn.",
    "webnlg": "Verbalise the RDF triples as fluent English text.",
    "tmu": "Correct the grammatical errors in the sentence.",
}
"""The task in the likelihood context, by benchmark family: the one the outputs were *generated* for (Ohi et
al. score log P(output | input, task))."""

DEFAULT_GENERATION_TASK = "Produce the output for the input."


class FittedPlan(BaseModel):
    """A plan whose entries can all judge (those that failed to fit left out); ``fit_info`` says per entry
    what fitting did, ``train_info`` is the plan's with the file the training items were written to."""

    model_config = ConfigDict(frozen=True, extra="forbid", arbitrary_types_allowed=True)
    plan: ComparePlan
    entries: tuple[Entry, ...]
    fit_info: dict[str, dict[str, Any]]
    train_info: dict[str, Any] | None = None


class Judged(BaseModel):
    """What the judge stage produced: one run per entry (in the fitted plan's order), LS per item (None
    without likelihood) and how it was computed, each pipeline entry's probe report."""

    model_config = ConfigDict(frozen=True, extra="forbid", arbitrary_types_allowed=True)
    fitted: FittedPlan
    runs: tuple[RunResult, ...]
    ls: tuple[float, ...] | None = None
    ls_info: dict[str, Any] | None = None
    probes: dict[str, dict[str, Any]] = Field(default_factory=dict)


async def fit(plan: ComparePlan) -> FittedPlan:
    """Fit every entry of ``plan`` that learns from data on its training items (``Pipeline.afit``); an entry
    whose fit fails is left out with its error (ConfigError when every entry fails)."""
    train = plan.train
    if train is None:
        return FittedPlan(plan=plan, entries=plan.entries, fit_info={}, train_info=plan.train_info)
    save_jsonl(train, plan.out / TRAIN_FILE)
    ctx = FitContext(progress=plan.config.progress, concurrency=plan.config.concurrency)
    out: list[Entry] = []
    info: dict[str, dict[str, Any]] = {}
    for e in plan.entries:
        if not e.needs_fit:
            info[e.name] = {"fitted": False, "why": "nothing to learn or already fitted; used as given"}
            out.append(e)
            continue
        if e.pipeline is None or e.base is None:  # an Entry without a judge has both (its validator)
            raise ConfigError(f"entry {e.name!r} {NEEDS_TRAIN}")
        try:
            fitted = await e.pipeline.afit(train, e.base, ctx)
        except MitigateError as exc:  # one entry that cannot learn from this data does not stop the others
            info[e.name] = {"fitted": False, "train": train.name, "n_items": len(train), "error": str(exc)}
            continue
        out.append(e.fitted(fitted))
        info[e.name] = {
            "fitted": True,
            "train": train.name,
            "n_items": len(train),
            "judged_while_fitting": e.pipeline.tags.calls_judge_while_fitting,
        }
    if not out:
        raise ConfigError(
            "no entry is left to compare: every one failed to fit; "
            + "; ".join(f"{k}: {v.get('error')}" for k, v in info.items())
        )
    return FittedPlan(
        plan=plan,
        entries=tuple(out),
        fit_info=info,
        train_info={**(plan.train_info or {}), "file": TRAIN_FILE},
    )


async def judge(fitted: FittedPlan) -> Judged:
    """Run every entry of ``fitted`` over the planned items, then LS and the probes."""
    plan = fitted.plan
    config, out, items = plan.config, plan.out, plan.items
    judges = [with_first_prompt(e.ready_judge) for e in fitted.entries]
    for j in judges:  # every entry's prompts take every item, checked before the first call
        preflight(j, items)
    names = [e.name for e in fitted.entries]
    kw: dict[str, Any] = {"restart": config.restart, "progress": config.progress, "check": False}

    async def one(j: Judge, name: str, **options: Any) -> RunSummary:
        journal = out / "journals" / f"{plan.journals[name]}.jsonl"
        async with run_stream(j, items, journal=journal, desc=name, **options, **kw) as stream:
            async for item, judgment in stream:
                columns.append(item, judgment, entry=name)
        return stream.summary

    about = {"benchmark": plan.judged.name, "criterion": plan.criterion, "task": plan.task, "entries": names}
    # every judgment goes to the columns as it comes; the entries read them back from there
    with ColumnWriter(out / COLUMNS_FILE, about, criterion=plan.criterion) as columns:
        if config.batch:  # every entry at once through one session, so their requests share batches
            session, owned = session_for(config.batch, out / "batches", progress=config.progress)
            try:
                summaries = await asyncio.gather(
                    *(one(j, n, batch=session) for j, n in zip(judges, names, strict=True))
                )
            finally:
                if owned:
                    await session.aclose()
        else:
            summaries = [
                await one(j, n, concurrency=config.concurrency) for j, n in zip(judges, names, strict=True)
            ]
    stored = Columns(out / COLUMNS_FILE)
    runs = [
        RunResult(judgments=stored.judgments(n), summary=s) for n, s in zip(names, summaries, strict=True)
    ]
    ls: list[float] | None = None
    ls_info: dict[str, Any] | None = None
    if config.likelihood is not False:
        scorer = LikelihoodScorer() if config.likelihood is True else config.likelihood
        task = config.likelihood_task or generation_task(plan.judged.name)
        ls = await likelihood_scores(items, scorer, task, out / LIKELIHOOD_FILE, progress=config.progress)
        ls_info = {
            "lm": scorer.lm,
            "template": scorer.template,
            "reduce": scorer.reduce,
            "task": task,
            "cache": LIKELIHOOD_FILE,
        }
    probes: dict[str, dict[str, Any]] = {}
    for e, result in zip(fitted.entries, runs, strict=True):
        if config.probes and e.kind == "pipeline":
            probes[e.name] = await probe_entry(
                e.ready_judge,
                items,
                config.probes,
                criterion=config.criterion,
                original=result.judgments,
                out=out / "probes" / f"{plan.journals[e.name]}.jsonl",
                rewriter=config.rewriter,
                concurrency=config.concurrency,
                progress=config.progress,
                n_boot=config.n_boot,
                seed=config.seed,
                label=e.name,
                tolerance=config.probe_tolerance,
            )
    return Judged(
        fitted=fitted, runs=tuple(runs), ls=None if ls is None else tuple(ls), ls_info=ls_info, probes=probes
    )


def generation_task(benchmark: str) -> str:
    """The generation task of a benchmark's family (:data:`GENERATION_TASKS`), or the generic one."""
    family = benchmark.split("-")[0].split(":")[0].lower()
    return GENERATION_TASKS.get(family, DEFAULT_GENERATION_TASK)


async def likelihood_scores(
    items: Sequence[Item], scorer: Any, task: str, cache: Path | None, progress: bool = True
) -> list[float]:
    """LS = log P(output | input, task) per item, reading and extending the JSONL cache ``cache`` (one line
    per item and scorer setting), so a rerun computes nothing twice."""
    setting = {
        "lm": scorer.lm,
        "template": scorer.template,
        "reduce": scorer.reduce,
        "input_fields": list(scorer.input_fields),
        "task": task,
    }
    key = hashlib.sha256(json.dumps(setting, sort_keys=True).encode()).hexdigest()[:16]
    known: dict[str, float] = {}
    if cache is not None and (cache.exists() or cache.is_symlink()):
        with open_regular(cache, "rb", "the likelihood cache") as fh:  # a FIFO or a device is refused unread
            lines = [
                raw.decode("utf-8") for raw in read_lines(fh, f"the likelihood cache {cache}", path=cache)
            ]
        for n, line in enumerate(lines, start=1):
            if not line.strip():
                continue
            try:
                row = loads_json(line)
            except json.JSONDecodeError:
                if n == len(lines):
                    continue  # a half-written last line from a killed run
                raise DataError(
                    f"{cache}:{n}: expected a likelihood cache line; got invalid JSON",
                    path=str(cache),
                    line=n,
                ) from None
            if row.get("key") == key:
                known[row["id"]] = math.nan if row.get("ls") is None else float(row["ls"])
    todo = [it for it in items if it.id not in known]
    if todo and cache is not None:
        cache.parent.mkdir(parents=True, exist_ok=True)
    with tqdm(
        total=len(items),
        initial=len(items) - len(todo),
        desc="likelihood",
        unit="item",
        disable=not progress or not todo,
        leave=False,
    ) as bar:
        for it in todo:
            value = float(await scorer.score(it, task))
            known[it.id] = value
            if cache is not None:
                with open_regular(cache, "a", "the likelihood cache") as fh:
                    row = {"key": key, "id": it.id, "ls": value if math.isfinite(value) else None}
                    fh.write(json.dumps(row) + "\n")
            bar.update(1)
    return [known[it.id] for it in items]
