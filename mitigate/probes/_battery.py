"""The bias battery: run a judge over original, rerun and probed items, and measure each probe.

:func:`run_probes` judges the items three ways: as they are, again as they are (the rerun, for the noise
floor; its request seed shifted by :data:`RERUN_SEED_OFFSET` so no cache returns the first answer), and once
per probe on the probed copies (a prompt probe judges the items under a perturbed judge, one per target). It
returns a :class:`ProbeReport` with one effect per probe and every rewrite for review;
:func:`render_probe_table` prints it (``mitigate probe``; ``mitigate compare --probes`` adds one per entry to
the report). The battery costs ``(2 + number of probes) × items`` judgments, plus one rewrite call per item
for each LM-assisted probe; a probe rewrites the judged text in place, so a prefix cache reuses the prompt up
to it.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from mitigate.constraints import Interval, check_param
from mitigate.data import Item
from mitigate.errors import ConfigError
from mitigate.judge import Judge, Judgment, PromptJudge
from mitigate.lm import LM
from mitigate.measures import Measure, ProbeEffect, noise_floor, preference_for, probe_effect
from mitigate.paths import write_output
from mitigate.probes._base import NO_TARGET, Probe, ProbedItem, ProbeRecord, PromptProbe, check_rewriter
from mitigate.run import run

RERUN_SEED_OFFSET = 7919
"""Added to each prompt judge's request seed for the rerun (so no cache returns the first answer)."""


class ProbeRow(BaseModel):
    """One probe's effect, its spec and how many of its rewrites failed (LM-assisted probes)."""

    model_config = ConfigDict(frozen=True, extra="forbid")
    probe: str
    spec: dict[str, Any]
    family: str = ""
    effect: ProbeEffect
    rewrite_failures: int = 0
    calls: int = 0


class ProbeReport(BaseModel):
    """The bias battery's result for one judge on one set of items.

    ``task`` is ``score`` (values are scores on the judge's scale) or ``pairwise`` (the preference for the
    probed text, +1 / 0 / -1). ``noise`` is the rerun's flip rate; ``floor_note``, ``tolerance_note`` and
    ``constant_note`` say what limits the reading; ``records`` keeps every rewrite.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")
    judge: str
    criterion: str
    task: Literal["score", "pairwise"]
    n_items: int
    temperatures: tuple[float, ...] = ()
    floor_note: str = ""
    tolerance: float = 0.0
    alpha: float = 0.05
    tolerance_note: str = ""
    constant_note: str = ""
    noise: Measure
    rows: tuple[ProbeRow, ...]
    records: tuple[ProbeRecord, ...] = ()
    calls: dict[str, int] = Field(default_factory=dict)


def rerun_judge(judge: Judge) -> Judge:
    """``judge`` with every prompt judge's request seed shifted by :data:`RERUN_SEED_OFFSET` (settings
    unchanged)."""

    def reseed(leaf: PromptJudge) -> Judge:
        return leaf.with_config(seed=(leaf.config.seed or 0) + RERUN_SEED_OFFSET)

    return judge.map_leaves(reseed)


def _value(j: Judgment | None, criterion: str, task: str, side: Literal["a", "b"]) -> float | None:
    if j is None:
        return None
    if task == "pairwise":
        return preference_for(j.verdict, side)
    if criterion in j.scores:
        return j.scores[criterion]
    return j.scores.get("score") if len(j.scores) == 1 else None


async def run_probes(
    judge: Judge,
    items: Sequence[Item],
    probes: Sequence[Probe],
    *,
    criterion: str,
    rewriter: LM | None = None,
    original: Sequence[Judgment] | None = None,
    concurrency: int = 4,
    progress: bool = False,
    alpha: float = 0.05,
    tolerance: float = 0.0,
    n_boot: int = 1000,
    seed: int = 0,
    label: str = "judge",
) -> ProbeReport:
    """Judge ``items`` as they are, again (the rerun), and once per probe; measure every probe.

    ``original``: judgments of ``items`` already made by this judge (judged here when None); ``rewriter``: the
    LM that writes LM-assisted probes' rewrites; ``tolerance``: score changes up to this size count as
    unchanged (0: CALM's definition); ``alpha`` the level of the probe-vs-noise test; ``n_boot`` bootstrap
    resamples (0: none). Pairwise items are judged pairwise (values: the preference for the probed side).
    """
    items = list(items)
    if not items:
        raise ConfigError("expected at least one item to probe; got none")
    if not probes:
        raise ConfigError("expected at least one probe; got none")
    # before any call, not at the measures
    check_param("run_probes", "tolerance", tolerance, [Interval(float, 0.0)])
    kinds = {it.pairwise for it in items}
    if len(kinds) > 1:
        raise ConfigError("expected items that are all pairwise or all single texts; got a mix")
    task: Literal["score", "pairwise"] = "pairwise" if kinds == {True} else "score"

    def values(judgments: Sequence[Judgment], side: Literal["a", "b"]) -> list[float | None]:
        by_id = {j.item_id: j for j in judgments}
        return [_value(by_id.get(it.id), criterion, task, side) for it in items]

    check_rewriter(probes, rewriter)
    for p in probes:  # a side-b probe on single items, or a prompt probe the prompt cannot take, fails here
        p.field_for(items[0])
        if isinstance(p, PromptProbe):
            p.perturb(judge)
    if original is None:
        original = (
            await run(judge, items, concurrency=concurrency, progress=progress, desc=f"{label}: original")
        ).judgments
    elif len(original) != len(items):
        raise ConfigError(f"expected one original judgment per item ({len(items)}); got {len(original)}")
    again = await run(
        rerun_judge(judge),
        items,
        concurrency=concurrency,
        progress=progress,
        check=False,
        desc=f"{label}: rerun",
    )
    temps = tuple(sorted({leaf.config.temperature for leaf in judge.leaves()}))
    rows: list[ProbeRow] = []
    records: list[ProbeRecord] = []
    calls = {"original": sum(j.calls for j in original), "rerun": sum(j.calls for j in again.judgments)}
    for p in probes:
        if isinstance(p, PromptProbe):
            judged, kept = await _judge_prompt_probe(
                p,
                judge,
                items,
                values(original, "a"),
                task,
                concurrency=concurrency,
                progress=progress,
                desc=f"{label}: {p.name}",
            )
            records.extend(kept)
            failed = sum(1 for r in kept if not r.ok)
        else:
            probed: list[ProbedItem] = [await p.aprobe(it, rewriter) for it in items]
            records.extend(pi.record for pi in probed)
            todo = [pi.item for pi in probed if pi.item is not None]
            judged = []
            if todo:
                done = await run(
                    judge, todo, concurrency=concurrency, progress=progress, desc=f"{label}: {p.name}"
                )
                judged = list(done.judgments)
            failed = len(items) - len(todo)
        effect = probe_effect(
            values(original, p.side),
            values(judged, p.side),
            values(again.judgments, p.side),
            probe=p.name,
            direction=p.direction(),
            ideal=p.ideal,
            tolerance=tolerance,
            alpha=alpha,
            n_boot=n_boot,
            seed=seed,
        )
        calls[p.name] = sum(j.calls for j in judged)
        rows.append(
            ProbeRow(
                probe=p.name,
                spec=p.spec(),
                family=p.family,
                effect=effect,
                rewrite_failures=failed,
                calls=calls[p.name],
            )
        )
    first = values(original, probes[0].side)
    floor = noise_floor(
        first,
        values(again.judgments, probes[0].side),
        tolerance=tolerance,
        ci=n_boot > 0,
        n_boot=max(n_boot, 1),
        seed=seed,
    )
    return ProbeReport(
        judge=label,
        criterion=criterion,
        task=task,
        n_items=len(items),
        temperatures=temps,
        floor_note=floor_note(temps, floor),
        tolerance=tolerance,
        alpha=alpha,
        tolerance_note=tolerance_note(first, tolerance),
        constant_note=constant_note(first, task),
        noise=floor,
        rows=tuple(rows),
        records=tuple(records),
        calls=calls,
    )


async def _judge_prompt_probe(
    p: PromptProbe,
    judge: Judge,
    items: Sequence[Item],
    values: Sequence[float | None],
    task: Literal["score", "pairwise"],
    *,
    concurrency: int,
    progress: bool,
    desc: str,
) -> tuple[list[Judgment], list[ProbeRecord]]:
    """Judge ``items`` under ``p``'s perturbed prompt: one perturbed judge per target (what the change argues
    for, from each item's original value), and one record per item (a recorded failure where there is no
    target)."""
    prompt = judge.leaves()[0].prompt
    groups: dict[Any, list[int]] = {}
    records: dict[int, ProbeRecord] = {}
    for k, value in enumerate(values):
        target = p.target(value, prompt, task)
        if target == NO_TARGET:
            records[k] = p.record(
                items[k], prompt, error="the original judgment gave no value to argue against"
            )
        else:
            groups.setdefault(target, []).append(k)
    judged: list[Judgment] = []
    for target, index in groups.items():
        group = [items[k] for k in index]
        result = await run(
            p.perturb(judge, target), group, concurrency=concurrency, progress=progress, check=True, desc=desc
        )
        judged.extend(result.judgments)
        records.update({k: p.record(items[k], prompt, target) for k in index})
    return judged, [records[k] for k in sorted(records)]


def constant_note(values: Sequence[float | None], task: str) -> str:
    """A warning when every original item got the same value: a judge that does not tell items apart
    may not read the text at all, and then a high robustness rate says nothing about bias."""
    seen = [v for v in values if v is not None and math.isfinite(v)]
    if len(seen) < 2 or len(set(seen)) > 1:
        return ""
    what = "the same verdict" if task == "pairwise" else f"the same score ({seen[0]:g})"
    return (
        f"the judge gave all {len(seen)} original items {what}, so it did not tell them apart; a high "
        "robustness rate here may only mean it does not read the text"
    )


def tolerance_note(values: Sequence[float | None], tolerance: float) -> str:
    """A warning when scores take values off the integers and every change, however small, counts as a
    flip."""
    if tolerance > 0:
        return ""
    off = sum(1 for v in values if v is not None and math.isfinite(v) and abs(v - round(v)) > 1e-9)
    if not off:
        return ""
    return (
        f"{off} of the original scores are not whole numbers (continuous scores, e.g. "
        "probability-weighted) and the tolerance is 0, so a change in the second decimal counts as a "
        "flip; set a tolerance (--tolerance, or --probe-tolerance on compare) to count only changes a "
        "reader would notice"
    )


def floor_note(temperatures: Sequence[float], floor: Measure) -> str:
    """What the noise floor means for these sampling settings (empty above temperature 0)."""
    if not temperatures or max(temperatures) > 0 or not floor.ok:
        return ""
    if floor.value == 0:
        return (
            "Every judge call is greedy (temperature 0) and the rerun repeated every verdict: the floor "
            "is 0, as it must be on a deterministic backend, so any probe flip counts against it"
        )
    return (
        f"Every judge call is greedy (temperature 0), yet the rerun changed {floor.count} of {floor.n} "
        "verdicts: this backend is not deterministic (numerics of batching or prefix reuse can do this), "
        "so the floor is not 0 and probe flips count only above it"
    )


async def probe_entry(
    judge: Judge,
    items: Sequence[Item],
    probes: Sequence[Probe],
    *,
    criterion: str,
    original: Sequence[Judgment],
    out: Path,
    rewriter: LM | None = None,
    **kw: Any,
) -> dict[str, Any]:
    """:func:`run_probes` for one ``compare`` entry: the report as JSON without its rewrites, which go to
    ``out``."""
    report = await run_probes(
        judge, items, probes, criterion=criterion, rewriter=rewriter, original=original, **kw
    )
    write_output(out, "".join(r.model_dump_json() + "\n" for r in report.records), "the probe records")
    return {**report.model_dump(mode="json", exclude={"records"}), "records_file": f"probes/{out.name}"}


def _f(v: float | None, digits: int = 2) -> str:
    return "-" if v is None or not math.isfinite(v) else f"{v:.{digits}f}"


def _ci(m: Measure, digits: int = 2) -> str:
    if m.ci_low is None or m.ci_high is None:
        return _f(m.value, digits)
    return f"{_f(m.value, digits)} [{_f(m.ci_low, digits)}, {_f(m.ci_high, digits)}]"


def _p(v: Any) -> str:
    if v is None or not isinstance(v, int | float) or not math.isfinite(v):
        return "-"
    return f"{v:.3f}" if v >= 0.001 else "<0.001"


def render_probe_table(report: ProbeReport | dict[str, Any]) -> str:
    """The battery as a markdown table: one row per probe, with the noise floor above it."""
    rep = (
        report
        if isinstance(report, ProbeReport)
        else ProbeReport.model_validate({k: v for k, v in report.items() if k != "records_file"})
    )
    unit = "preference for the probed text, -1..1" if rep.task == "pairwise" else "score"
    lines = [
        f"Noise floor (flip rate of an unperturbed rerun, same sampling settings): {_ci(rep.noise)} "
        f"over {rep.noise.n} items"
        + (f" ({rep.noise.n_failed} without a value)" if rep.noise.n_failed else "")
        + (f". {rep.floor_note}." if rep.floor_note else "."),
        *(["", f"Score changes up to {rep.tolerance:g} count as unchanged."] if rep.tolerance > 0 else []),
        *(["", f"Warning: {rep.tolerance_note}."] if rep.tolerance_note else []),
        *(["", f"Warning: {rep.constant_note}."] if rep.constant_note else []),
        "",
        f"| probe | predicts | n | robustness rate | flip rate | shift ({unit}) [95% CI] | in predicted "
        "direction | p (probe vs rerun) | reading |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for row in rep.rows:
        e = row.effect
        n = f"{e.robustness.n}" + (f" (+{e.robustness.n_failed} failed)" if e.robustness.n_failed else "")
        flip = e.test.extra.get("flip_probe")
        directional = (  # of the items the probe changed, how many moved the predicted way
            "-" if not e.directional.ok else f"{e.directional.count} of {e.directional.n} changed"
        )
        lines.append(
            f"| {row.probe} | {e.direction} | {n} | {_ci(e.robustness)} | {_f(flip)} | {_ci(e.shift)} | "
            f"{directional} | {_p(e.test.extra.get('p_value'))} | {e.reading} |"
        )
    return "\n".join(lines)


def probe_section(reports: Sequence[tuple[str, dict[str, Any] | ProbeReport]]) -> list[str]:
    """Markdown lines of a "Bias probes" report section: one table per (entry name, probe report)."""
    if not reports:
        return []
    out = [
        "## Bias probes",
        "",
        "Each probe rewrites the judged text in a way a fair judge should ignore (see `mitigate.probes`); "
        "robustness rate = share of verdicts unchanged (CALM); p tests whether the probe changes verdicts "
        "more often than rerunning the same items does (exact one-sided McNemar).",
        "",
    ]
    for name, rep in reports:
        out += [f"### {name}", "", render_probe_table(rep), ""]
    return out
