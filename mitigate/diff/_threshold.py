"""Threshold gates: what "passes" means when a judge's reruns straddle the pass mark (docs/diff.md).

With a pass threshold ``t`` (``score >= t`` passes) and several samples per item, an item's **pass rate** is
the share of its samples at or above ``t``, and an item whose samples fall on both sides **straddles** it. The
overall pass rate is the mean over items (an item without a scored sample counts as not passing); its interval
is Wilson's when every item has one sample, a bootstrap over items otherwise; against a required rate the
decision is **pass** (the interval's lower end reaches it), **fail** (its upper end is below) or
**undecided**.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Literal

import numpy as np
from pydantic import BaseModel, ConfigDict

from mitigate.errors import ConfigError
from mitigate.judge import Judgment
from mitigate.measures import batched_nanmean, bootstrap_ci
from mitigate.report import score_of


def wilson_interval(successes: int, n: int, alpha: float = 0.05) -> tuple[float, float]:
    """Wilson's score interval for a binomial share ``successes / n`` at level ``1 - alpha``."""
    from scipy.stats import binomtest  # lazy: scipy is slow to import

    ci = binomtest(successes, n).proportion_ci(1 - alpha, method="wilson")
    return (float(ci.low), float(ci.high))


class ItemPass(BaseModel):
    """One item: its scored samples, how many pass, its pass rate, and whether the samples straddle the
    threshold."""

    model_config = ConfigDict(frozen=True, extra="forbid")
    item_id: str
    samples: tuple[float, ...]
    passes: int
    pass_rate: float
    straddles: bool
    failed: bool = False


class ThresholdReport(BaseModel):
    """The threshold gate over one judge's judgments (see the module docstring)."""

    model_config = ConfigDict(frozen=True, extra="forbid")
    criterion: str
    threshold: float
    n_items: int
    n_failed: int
    samples_per_item: int
    pass_rate: float
    low: float | None
    high: float | None
    interval: Literal["wilson", "bootstrap", "none"]
    require: float | None = None
    decision: Literal["pass", "fail", "undecided"] | None = None
    items: tuple[ItemPass, ...] = ()

    @property
    def straddling(self) -> list[ItemPass]:
        """The items whose samples fall on both sides of the threshold."""
        return [it for it in self.items if it.straddles]


def _samples(j: Judgment, criterion: str) -> tuple[float, ...]:
    if j.error is not None:
        return ()
    found = j.samples.get(criterion)
    if found is None and len(j.samples) == 1:
        found = next(iter(j.samples.values()))
    if found:
        return tuple(float(s) for s in found if s is not None)
    score = score_of(j, criterion)
    return () if score is None else (float(score),)


def threshold_report(
    judgments: Sequence[Judgment],
    criterion: str,
    threshold: float,
    *,
    require: float | None = None,
    alpha: float = 0.05,
    n_boot: int = 2000,
    seed: int = 0,
) -> ThresholdReport:
    """Pass rates at ``score >= threshold`` per item and overall, straddling items, and the decision against
    ``require``."""
    if not judgments:
        raise ConfigError("expected judgments to apply a pass threshold to; got none")
    if require is not None and not 0 < require <= 1:
        raise ConfigError(f"expected a required pass rate in (0, 1]; got {require}")
    items = []
    for j in judgments:
        s = _samples(j, criterion)
        passes = sum(v >= threshold for v in s)
        items.append(
            ItemPass(
                item_id=j.item_id,
                samples=s,
                passes=passes,
                pass_rate=passes / len(s) if s else 0.0,
                straddles=0 < passes < len(s),
                failed=not s,
            )
        )
    rates = np.array([it.pass_rate for it in items])
    most = max(len(it.samples) for it in items)
    interval: Literal["wilson", "bootstrap", "none"] = "none"
    low = high = math.nan
    if most <= 1:
        interval = "wilson"
        low, high = wilson_interval(int(rates.sum()), len(rates), alpha)
    elif n_boot > 0:
        interval = "bootstrap"
        low, high = bootstrap_ci(batched_nanmean, rates, n_boot=n_boot, alpha=alpha, seed=seed)
    decision: Literal["pass", "fail", "undecided"] | None = (
        None if require is None else "pass" if low >= require else "fail" if high < require else "undecided"
    )  # an undefined (NaN) end decides nothing
    return ThresholdReport(
        criterion=criterion,
        threshold=threshold,
        n_items=len(items),
        n_failed=sum(it.failed for it in items),
        samples_per_item=most,
        pass_rate=float(rates.mean()),
        low=low if math.isfinite(low) else None,
        high=high if math.isfinite(high) else None,
        interval=interval,
        require=require,
        decision=decision,
        items=tuple(items),
    )


def threshold_text(report: ThresholdReport, *, show: int = 10) -> str:
    """The gate in words: the overall pass rate with its interval, the decision, and the straddling items."""
    r = report
    ci = (
        f" [{r.low:.3f}, {r.high:.3f}] ({r.interval}, 95%)"
        if r.low is not None and r.high is not None
        else ""
    )
    lines = [
        f"Pass threshold: {r.criterion} >= {r.threshold:g}. Pass rate {r.pass_rate:.3f}{ci} over "
        f"{r.n_items} items, {r.samples_per_item} sample(s) per item"
        + (f"; {r.n_failed} items without a score count as not passing" if r.n_failed else "")
        + "."
    ]
    if r.require is not None:
        verdict = {
            "pass": "PASS: the interval's lower end is at or above",
            "fail": "FAIL: the interval's upper end is below",
            "undecided": "UNDECIDED (fails the gate): the interval holds",
        }[r.decision or "undecided"]
        lines.append(f"{verdict} the required pass rate {r.require:g}.")
    straddle = r.straddling
    if r.samples_per_item > 1:
        lines.append(
            f"{len(straddle)} of {r.n_items} items straddle the threshold (their samples fall "
            "on both sides)"
            + (
                ": "
                + ", ".join(f"{it.item_id} ({it.passes}/{len(it.samples)})" for it in straddle[:show])
                + (" ..." if len(straddle) > show else "")
                if straddle
                else ""
            )
            + "."
        )
    return "\n".join(lines)


def threshold_section(result: object, threshold: float, require: float | None = None) -> str:
    """A "Pass threshold" markdown section of a compare report: one line per score entry (pairwise entries
    skipped)."""
    entries = getattr(result, "entries", ())
    criterion = str(getattr(result, "criterion", ""))
    lines = [
        "## Pass threshold",
        "",
        f"A score of {threshold:g} or more passes. Pass rate = mean over items of the share of each "
        "item's samples that pass; an item without a score counts as not passing.",
        "",
    ]
    for e in entries:
        if not e.judgments or all(j.verdict is not None for j in e.judgments):
            continue
        rep = threshold_report(e.judgments, criterion, threshold, require=require)
        lines += [f"### {e.name}", "", threshold_text(rep), ""]
    return "\n".join(lines).rstrip()
