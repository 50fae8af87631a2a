"""The plot of an estimate: each group's interval, ranked, beside the labels-alone and judge-alone ones
(matplotlib).

One row per group, highest estimate on top: the chosen method's interval (thick), the
labels-alone interval (thin, just below), the judge-alone mean (a hollow marker, only when
the judge answers on the labels' scale: otherwise it is not comparable and left out), and the
mean of every label when labels were hidden for an experiment (a cross). The simultaneous
rank interval is written at the right.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from mitigate.estimators import METHOD_TITLES, EstimateResult
from mitigate.report._plots import save_figure


def _plt() -> Any:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def plot_estimate(result: EstimateResult, path: str | Path) -> Path:
    """Write the plot of ``result`` to ``path`` (PNG, SVG or PDF by its suffix); returns the path."""
    plt = _plt()
    order = list(result.ranking.order) if result.ranking is not None else [g.group for g in result.groups]
    by_name = {g.group: g for g in result.groups}
    same_scale = result.judge_scale is None or (
        result.judge_scale.min == result.label_scale.min and result.judge_scale.max == result.label_scale.max
    )
    fig, ax = plt.subplots(figsize=(8, 1.2 + 0.45 * len(order)))
    for row, name in enumerate(reversed(order)):
        g = by_name[name]
        e = g.estimate
        ax.plot(
            [e.low, e.high],
            [row, row],
            color="tab:blue",
            linewidth=4,
            solid_capstyle="butt",
            label=result.method if row == 0 else None,
        )
        ax.plot([e.estimate], [row], "o", color="navy", markersize=5)
        if g.human is not None and result.method != "human":
            ax.plot(
                [g.human.low, g.human.high],
                [row - 0.22] * 2,
                color="tab:gray",
                linewidth=1.5,
                label="labels alone" if row == 0 else None,
            )
        if g.judge is not None and result.method != "judge" and same_scale:
            ax.plot(
                [g.judge.estimate],
                [row],
                "D",
                mfc="none",
                color="tab:red",
                markersize=6,
                label="judge alone (not corrected)" if row == 0 else None,
            )
        if g.truth is not None:
            ax.plot(
                [g.truth], [row], "x", color="black", markersize=7, label="all labels" if row == 0 else None
            )
        if result.ranking is not None:
            r = result.ranking.rank_of(name)
            ax.annotate(
                f"rank {r.rank} [{r.low}-{r.high}]",
                xy=(1.01, row),
                xycoords=("axes fraction", "data"),
                va="center",
                fontsize=8,
            )
    ax.set_yticks(range(len(order)), list(reversed(order)))
    ax.set_xlabel(f"mean {result.criterion} ({result.confidence:.0%} intervals)")
    ax.set_title(f"{result.benchmark}: {result.method} ({METHOD_TITLES[result.method]})", fontsize=10)
    ax.grid(axis="x", alpha=0.3)
    ax.legend(loc="lower right", fontsize=8)
    fig.tight_layout()
    out = Path(path)
    out.parent.mkdir(parents=True, exist_ok=True)
    return save_figure(fig, out)
