"""The judge stage: every entry over the planned items, then LS and the bias probes (:func:`judge` ->
:class:`Judged`).

Every LM call of a comparison after fitting happens here. First each entry's prompts are
rendered for every item (:func:`mitigate.run._runner.preflight`, once per entry, before the
first entry's first call), so an item that cannot fit a prompt stops the comparison before
any judging; each run then skips its own check. Each entry runs with its own resumable journal
(``<out_dir>/journals/<name>.jsonl``), one after the other, or all at once through one batch
session (their requests then share batches). Then LS per item when likelihood is on (cached in
``<out_dir>/likelihood.jsonl``), then the bias probes over every pipeline entry (their rewrites
in ``<out_dir>/probes/<name>.jsonl``), each entry's judgments reused as the originals.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from mitigate.harness._fit import FittedPlan
from mitigate.harness._likelihood import generation_task, likelihood_scores
from mitigate.judge import Judge, LikelihoodScorer
from mitigate.probes import probe_entry
from mitigate.report import with_first_prompt
from mitigate.run import BatchConfig, BatchSession, RunResult, preflight, run, session_for

LIKELIHOOD_FILE = "likelihood.jsonl"
"""The per-item LS cache, beside the reports."""


class Judged(BaseModel):
    """What the judge stage produced: one run per entry (in the fitted plan's order), LS, the probe reports.

    ``ls`` is LS per planned item (None without likelihood) and ``ls_info`` how it was computed;
    ``probes`` maps a pipeline entry's name to its probe report (empty without probes).
    """

    model_config = ConfigDict(frozen=True, extra="forbid", arbitrary_types_allowed=True)
    fitted: FittedPlan
    runs: tuple[RunResult, ...]
    ls: tuple[float, ...] | None = None
    ls_info: dict[str, Any] | None = None
    probes: dict[str, dict[str, Any]] = Field(default_factory=dict)


async def judge(fitted: FittedPlan) -> Judged:
    """Run every entry of ``fitted`` over the planned items, then LS and the probes (see the module
    docstring)."""
    plan = fitted.plan
    config = plan.config
    out = plan.out
    items = plan.items
    judges = [with_first_prompt(e.ready_judge) for e in fitted.entries]
    for j in judges:  # every entry's prompts take every item, checked before the first call
        preflight(j, items)
    journals = [out / "journals" / f"{plan.journals[e.name]}.jsonl" for e in fitted.entries]
    if config.batch:
        runs = await _run_batched(
            judges,
            [e.name for e in fitted.entries],
            items,
            journals,
            config.batch,
            out,
            restart=config.restart,
            progress=config.progress,
        )
    else:
        runs = []
        for e, j, journal in zip(fitted.entries, judges, journals, strict=True):
            runs.append(
                await run(
                    j,
                    items,
                    concurrency=config.concurrency,
                    journal=journal,
                    restart=config.restart,
                    progress=config.progress,
                    desc=e.name,
                    check=False,
                )
            )
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
    if config.probes:
        for e, result in zip(fitted.entries, runs, strict=True):
            if e.kind != "pipeline":
                continue
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


async def _run_batched(
    judges: Sequence[Judge],
    names: Sequence[str],
    items: Sequence[Any],
    journals: Sequence[Path],
    batch: BatchConfig | BatchSession | bool,
    out: Path,
    *,
    restart: bool,
    progress: bool,
) -> list[RunResult]:
    """Every entry at once through one batch session, so their requests share batches."""
    session, owned = session_for(batch, out / "batches", progress=progress)
    try:
        return list(
            await asyncio.gather(
                *(
                    run(
                        j,
                        items,
                        journal=journal,
                        restart=restart,
                        progress=progress,
                        desc=name,
                        batch=session,
                        check=False,
                    )
                    for j, name, journal in zip(judges, names, journals, strict=True)
                )
            )
        )
    finally:
        if owned:
            await session.aclose()
