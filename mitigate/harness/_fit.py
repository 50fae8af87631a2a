"""The fit stage: every entry that learns from data fitted on the training items (:func:`fit` ->
:class:`FittedPlan`).

Each such entry's pipeline is fitted through the fit protocol (``Pipeline.afit(train,
judge, FitContext)``, :mod:`mitigate.judge._fitting`) against the base judge it will wrap, and the
entry keeps the fitted pipeline, its spec and the judge it makes together
(:meth:`~mitigate.harness._entry.Entry.fitted`). Entries already fitted (a searched
spec, a pipeline with nothing to learn) are used as given. An entry whose fit fails is left
out with its error, so the others are still compared. The training items are written to
``<out_dir>/train.jsonl`` (generic format) for a later ``mitigate search -b jsonl:...``.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict

from mitigate.data import save_jsonl
from mitigate.errors import ConfigError, MitigateError
from mitigate.harness._entry import Entry
from mitigate.harness._planning import NEEDS_TRAIN, ComparePlan
from mitigate.judge import FitContext

TRAIN_FILE = "train.jsonl"
"""The training items of a train split, written beside the reports."""


class FittedPlan(BaseModel):
    """A plan whose entries can all judge: ``entries`` (those that failed to fit left out), and what fitting
    did.

    ``fit_info`` maps an entry's name to what the report says of its fit (fitted on which
    items, used as given, or the error that left it out); ``train_info`` is the plan's, with
    the file the training items were written to.
    """

    model_config = ConfigDict(frozen=True, extra="forbid", arbitrary_types_allowed=True)
    plan: ComparePlan
    entries: tuple[Entry, ...]
    fit_info: dict[str, dict[str, Any]]
    train_info: dict[str, Any] | None = None


async def fit(plan: ComparePlan) -> FittedPlan:
    """Fit every entry of ``plan`` that learns from data on its training items (see the module docstring).

    Without a train split, the entries are used as they are (the plan refused any that must be
    fitted). ConfigError when every entry fails to fit.
    """
    train = plan.train
    if train is None:
        return FittedPlan(plan=plan, entries=plan.entries, fit_info={}, train_info=plan.train_info)
    save_jsonl(train, plan.out / TRAIN_FILE)
    config = plan.config
    ctx = FitContext(progress=config.progress, concurrency=config.concurrency)
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
            info[e.name] = {
                "fitted": False,
                "train": train.name,
                "n_items": len(train),
                "error": f"{type(exc).__name__}: {exc}",
            }
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
