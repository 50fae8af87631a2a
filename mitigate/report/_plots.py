"""The plots of a comparison (``histograms.png``, ``ls_vs_us.png``, ``per_system.png``, ``consistency.png``,
``per_pair.png``; :data:`PLOT_CAPTIONS`), of a search (:func:`plot_search`) and of an estimate
(:func:`plot_estimate`), drawn with matplotlib's Agg backend, and the per-system / per-pair tables the report
shares with them.
"""

from __future__ import annotations

import io
import itertools
import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from mitigate.errors import ConfigError
from mitigate.estimators import METHOD_TITLES, EstimateResult
from mitigate.measures import unfairness_scores
from mitigate.paths import write_output
from mitigate.report._results import CompareResult


def human_quality(result: CompareResult) -> dict[str, float]:
    sums: dict[str, list[float]] = {}
    for it in result.items:
        if it.system is not None and it.human is not None:
            sums.setdefault(it.system, []).append(it.human)
    return {k: float(np.mean(v)) for k, v in sums.items()}


PAIR_KEYS = ("position-consistency", "preference-fairness")


def pair_tables(result: CompareResult) -> dict[str, dict[str, dict[str, Any]]]:
    """Entry name -> measure -> system pair -> row, for the entries whose pairwise measures hold per-pair
    tables."""
    tables = {
        e.name: {k: e.measures[k].extra.get("per_group", {}) for k in PAIR_KEYS if k in e.measures}
        for e in result.entries
    }
    return {name: t for name, t in tables.items() if any(t.values())}


def has_consistency(result: CompareResult) -> bool:
    return any(
        e.measures.get("perturbation-consistency") is not None and e.measures["perturbation-consistency"].ok
        for e in result.entries
    )


def _plt() -> Any:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


PLOT_FORMATS = {".png": {"Software": None}, ".svg": {"Date": None}, ".pdf": {"CreationDate": None}}
"""The file types a plot is written as, by suffix, with the metadata left out so that the same plot is the
same bytes."""


def check_plot_path(path: Path, what: str = "a plot file") -> str:
    """The suffix of ``path`` when a plot can be written as it (PNG, SVG or PDF); ConfigError naming ``what``
    (an option, for the command line) otherwise."""
    suffix = path.suffix.lower()
    if suffix not in PLOT_FORMATS:
        raise ConfigError(f"expected {what} to end in .png, .svg or .pdf; got {path.name!r}")
    return suffix


def save_figure(fig: Any, path: Path) -> Path:
    """Write ``fig`` as PNG, SVG or PDF by ``path``'s suffix through :func:`~mitigate.paths.write_output`
    (atomic; a link or a device as outputs are), its folder made when needed; ConfigError for another
    suffix."""
    try:
        suffix = check_plot_path(path)
    except ConfigError:
        _plt().close(fig)
        raise
    path.parent.mkdir(parents=True, exist_ok=True)
    data = io.BytesIO()
    fig.savefig(data, format=suffix[1:], dpi=100, metadata=PLOT_FORMATS[suffix])
    _plt().close(fig)
    return write_output(path, data.getvalue(), "the plot")


def _short(name: str, width: int = 28) -> str:
    return name if len(name) <= width else name[: width - 1] + "…"


def _panels(n: int, width: float, height: float) -> tuple[Any, list[Any]]:
    """A figure of ``n`` panels, three a row (the cells left over switched off), and the panels."""
    cols = min(n, 3)
    fig, axes = _plt().subplots(
        math.ceil(n / cols), cols, figsize=(width * cols, height * math.ceil(n / cols)), squeeze=False
    )
    for ax in list(axes.flat)[n:]:
        ax.axis("off")
    return fig, list(axes.flat)[:n]


PLOT_CAPTIONS = {
    "histograms.png": "score histograms",
    "ls_vs_us.png": "LS vs US",
    "per_system.png": "per-system P_i",
    "consistency.png": "consistency",
    "per_pair.png": "position bias per system pair",
}
"""Plot file -> its caption in the reports."""


def planned_plots(result: CompareResult) -> list[str]:
    """The plot files :func:`render_plots` writes for ``result``, in order."""
    names = ["histograms.png"]
    if result.likelihood is not None:
        names.append("ls_vs_us.png")
    # nothing to draw when every P_i is n/a
    if any(m.ok for e in result.entries for m in e.per_system.values()):
        names.append("per_system.png")
    if has_consistency(result):
        names.append("consistency.png")
    if pair_tables(result):
        names.append("per_pair.png")
    return names


def render_plots(result: CompareResult, folder: str | Path) -> list[Path]:
    """Write the PNG plots for ``result`` (those :func:`planned_plots` names) into ``folder``; returns their
    paths."""
    out = Path(folder)
    draw = {
        "histograms.png": _histograms,
        "ls_vs_us.png": _ls_vs_us,
        "per_system.png": _per_system_plot,
        "consistency.png": _consistency_plot,
        "per_pair.png": _per_pair_plot,
    }
    return [draw[name](result, out / name) for name in planned_plots(result)]


def _histograms(result: CompareResult, path: Path) -> Path:
    panels = [
        (e.name, f"n={e.summary.ok}, {e.summary.parse_failures} parse failures", e.histogram)
        for e in result.entries
    ]
    pairwise = result.task == "pairwise"
    panels.append(
        (
            "humans (gold)" if pairwise else "humans (mean, rounded)",
            f"n={sum(result.human_histogram.values())}",
            result.human_histogram,
        )
    )
    fig, axes = _panels(len(panels), 4.2, 3.2)
    for ax, (name, subtitle, hist) in zip(axes, panels, strict=True):
        xs = list(range(len(hist))) if pairwise else [float(k) for k in hist]
        ys = list(hist.values())
        width = 0.8 * (min(np.diff(sorted(xs))) if len(xs) > 1 else 1.0)
        ax.bar(xs, ys, width=width, color="#777777" if name.startswith("humans") else "#3b6ea8")
        ax.set_title(f"{_short(name)}\n{subtitle}", fontsize=10)
        ax.set_xlabel("preferred text" if pairwise else "score")
        ax.set_ylabel("items")
        if pairwise:
            ax.set_xticks(xs, labels=list(hist))
        else:
            ax.set_xticks(xs if len(xs) <= 12 else xs[:: max(1, len(xs) // 10)])
    kind = "Verdict distribution" if pairwise else "Score distribution"
    fig.suptitle(f"{kind}: {result.benchmark} / {result.criterion}")
    fig.tight_layout()
    return save_figure(fig, path)


def _ls_vs_us(result: CompareResult, path: Path) -> Path:
    ls = np.array([it.ls for it in result.items], dtype=float)  # None: NaN
    human = np.array([it.human for it in result.items], dtype=float)
    fig, axes = _panels(len(result.entries), 4.2, 3.6)
    for ax, e in zip(axes, result.entries, strict=True):
        scores = np.array(e.scores(result.criterion), dtype=float)  # None: NaN
        us = unfairness_scores(scores, human)
        ok = np.isfinite(ls) & np.isfinite(us)
        ax.scatter(ls[ok], us[ok], s=12, alpha=0.6, color="#3b6ea8")
        if not ok.any():
            none = "no item has both LS and a judge score"
            ax.text(
                0.5, 0.5, none, transform=ax.transAxes, ha="center", va="center", fontsize=9, color="#c0392b"
            )
            ax.set_xticks([])
            ax.set_yticks([])
        bias = e.measures.get("bias-score")
        title = _short(e.name)
        if ok.sum() >= 2 and np.ptp(ls[ok]) > 0:
            slope, intercept = np.polyfit(ls[ok], us[ok], 1)
            grid = np.linspace(ls[ok].min(), ls[ok].max(), 50)
            ax.plot(grid, slope * grid + intercept, color="#c0392b", label=f"slope {slope:.3g}")
            ax.legend(loc="best", fontsize=8)
        if bias is not None and bias.ok:
            title += f"\nBiasScore {bias.value:.3f}"
        ax.axhline(0, color="#999999", linewidth=0.8)
        ax.set_title(title, fontsize=10)
        ax.set_xlabel("LS = log P(output | input, task)")
        ax.set_ylabel("US = judge - human (normalised)")
    fig.suptitle("Likelihood bias (Ohi et al. 2024)")
    fig.tight_layout()
    return save_figure(fig, path)


def _per_system_plot(result: CompareResult, path: Path) -> Path:
    plt = _plt()
    quality = human_quality(result)
    systems = sorted(quality, key=lambda k: quality[k])
    entries = [e for e in result.entries if e.per_system]
    width = 0.8 / max(len(entries), 1)
    fig, ax = plt.subplots(figsize=(max(6.0, 0.7 * len(systems) * max(1, len(entries)) / 2 + 3), 4.2))
    x = np.arange(len(systems))
    for k, e in enumerate(entries):
        vals = [e.per_system[s].value if s in e.per_system else math.nan for s in systems]
        meta = e.measures.get("meta-spearman")
        label = _short(e.name) + (f" (M={meta.value:.2f})" if meta is not None and meta.ok else "")
        at = x + (k - (len(entries) - 1) / 2) * width
        ax.bar(at, np.nan_to_num(vals, nan=0.0), width=width, label=label)
        for xa, v in zip(at, vals, strict=True):
            if not math.isfinite(v):
                ax.text(xa, 0, "n/a", ha="center", va="bottom", fontsize=6, rotation=90)
    ax.set_xticks(x)
    ax.set_xticklabels([f"{s}\nQ={quality[s]:.2f}" for s in systems], fontsize=8)
    ax.axhline(0, color="#999999", linewidth=0.8)
    ax.set_ylabel("P_i = Spearman(judge, human) within system")
    ax.set_title(f"Per-system agreement, systems by human quality: {result.benchmark} / {result.criterion}")
    ax.legend(fontsize=8)
    fig.tight_layout()
    return save_figure(fig, path)


def _per_pair_plot(result: CompareResult, path: Path) -> Path:
    """Position consistency and preference fairness per system pair, with their intervals, one bar per
    entry."""
    plt = _plt()
    tables = pair_tables(result)
    pairs = list(dict.fromkeys(p for t in tables.values() for rows in t.values() for p in rows))
    fig, axes = plt.subplots(
        1, 2, figsize=(max(8.0, 0.55 * len(pairs) * max(1, len(tables)) + 4), 4.2), squeeze=False
    )
    width = 0.8 / max(len(tables), 1)
    x = np.arange(len(pairs))
    for ax, key, label in zip(
        axes.flat, PAIR_KEYS, ("position consistency (↑)", "preference fairness (→ 0)"), strict=True
    ):
        for k, (name, t) in enumerate(tables.items()):
            rows = t.get(key, {})
            vals, low, high = (
                np.array(
                    [math.nan if rows.get(p, {}).get(f) is None else rows[p][f] for p in pairs], dtype=float
                )
                for f in ("value", "ci_low", "ci_high")
            )
            err = np.nan_to_num(np.vstack([vals - low, high - vals]), nan=0.0)
            ax.bar(
                x + (k - (len(tables) - 1) / 2) * width,
                np.nan_to_num(vals, nan=0.0),
                width=width,
                yerr=err,
                capsize=2,
                label=_short(name),
            )
        ax.set_xticks(x)
        ax.set_xticklabels(pairs, rotation=45, ha="right", fontsize=8)
        ax.axhline(0, color="#999999", linewidth=0.8)
        ax.set_title(label, fontsize=10)
    axes.flat[1].set_ylim(-1, 1)
    axes.flat[0].set_ylim(0, 1)
    axes.flat[0].legend(fontsize=8)
    fig.suptitle(f"Position bias per system pair (Shi et al. 2024): {result.benchmark} / {result.criterion}")
    fig.tight_layout()
    return save_figure(fig, path)


def _consistency_plot(result: CompareResult, path: Path) -> Path:
    plt = _plt()
    names, vals, lows, highs = [], [], [], []
    for e in result.entries:
        m = e.measures.get("perturbation-consistency")
        if m is None or not m.ok:
            continue
        names.append(_short(e.name, 20))
        vals.append(m.value)
        lows.append(m.value - (m.ci_low if m.ci_low is not None else m.value))
        highs.append((m.ci_high if m.ci_high is not None else m.value) - m.value)
    fig, ax = plt.subplots(figsize=(max(6.0, 1.2 * len(names) + 2), 4.0))
    ax.bar(range(len(names)), vals, yerr=[lows, highs], capsize=4, color="#3b6ea8", width=0.6)
    ax.set_xticks(range(len(names)))
    ax.set_xticklabels(names, rotation=20, ha="right", fontsize=8)
    ax.set_ylim(0, 1.05)
    ax.set_ylabel("share of items with one score\nunder every perturbation")
    ax.set_title(
        f"Consistency under guideline perturbation\n{result.benchmark} / {result.criterion}", fontsize=11
    )
    fig.tight_layout()
    return save_figure(fig, path)


def search_trial_points(values: Sequence[float]) -> tuple[list[tuple[int, float]], list[int], list[float]]:
    """(trials with a defined objective as (index, value), indices of undefined ones, best so far per
    trial)."""
    ok = [(i, v) for i, v in enumerate(values) if math.isfinite(v)]
    bad = [i for i, v in enumerate(values) if not math.isfinite(v)]
    running = itertools.accumulate((v if math.isfinite(v) else -math.inf for v in values), max)
    return ok, bad, [r if math.isfinite(r) else math.nan for r in running]


def plot_search(result: Any, path: str | Path) -> Path:
    """A PNG of a demo search (a SearchResult): left, the dev objective of every trial in the order tried, the
    best so far and the baseline (an undefined objective an "x" on the lower edge); right, winner and baseline
    on dev and on the held-out test split, with their intervals."""
    plt = _plt()
    fig, (ax, bx) = plt.subplots(1, 2, figsize=(11, 4), gridspec_kw={"width_ratios": [3, 2]})
    values = [t.dev.value for t in result.trials]
    ok, bad, best = search_trial_points(values)
    finite = [v for _, v in ok]
    low = min(finite) if finite else 0.0
    high = max(finite) if finite else 1.0
    floor = low - 0.1 * (high - low or 1.0)
    xs = list(range(len(values)))
    if ok:
        ax.plot([x for x, _ in ok], finite, "o", color="tab:blue", label="trial (dev)")
        ax.step(xs, best, where="post", color="tab:green", label="best so far")
    if bad:
        ax.plot(bad, [floor] * len(bad), "x", color="tab:red", label="undefined objective")
    base = result.baseline_dev.value
    if math.isfinite(base):
        ax.axhline(base, color="grey", linestyle="--", label="baseline (dev)")
    ax.plot(
        [result.best_index],
        [values[result.best_index]] if math.isfinite(values[result.best_index]) else [floor],
        "*",
        markersize=14,
        color="tab:orange",
        label="winner",
    )
    from matplotlib.ticker import MaxNLocator

    ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    ax.set_xlabel("trial (in the order tried)")
    ax.set_ylabel("objective on dev")
    ax.set_title(_short(f"{result.engine}: {result.objective.describe()}", 60), fontsize=10)
    ax.legend(fontsize=8, loc="best")

    bars = [
        ("winner\ndev", result.dev),
        ("baseline\ndev", result.baseline_dev),
        ("winner\ntest", result.test),
        ("baseline\ntest", result.baseline_test),
    ]
    for i, (label, v) in enumerate(bars):
        color = "tab:orange" if label.startswith("winner") else "grey"
        if not math.isfinite(v.value):
            bx.text(i, 0, "undefined", ha="center", va="bottom", fontsize=8, color="tab:red", rotation=90)
            continue
        bx.bar(i, v.value, color=color, alpha=0.8 if label.endswith("test") else 0.45)
        if v.ci_low is not None and v.ci_high is not None:
            bx.errorbar(
                i, v.value, yerr=[[v.value - v.ci_low], [v.ci_high - v.value]], color="black", capsize=4
            )
    bx.axhline(0, color="black", linewidth=0.5)
    bx.set_xticks(range(len(bars)), [b[0] for b in bars], fontsize=8)
    g = result.test_gain
    gain = "undefined" if not math.isfinite(g.value) else f"{g.value:+.3f}"
    if g.ci_low is not None and g.ci_high is not None:
        gain += f" [{g.ci_low:+.3f}, {g.ci_high:+.3f}]"
    bx.set_title(f"held-out test gain {gain}", fontsize=10)
    fig.tight_layout()
    return save_figure(fig, Path(path))


def plot_estimate(result: EstimateResult, path: str | Path) -> Path:
    """Write the plot of an estimate to ``path`` (PNG, SVG or PDF by its suffix); returns the path.

    One row per group, highest estimate on top: the chosen method's interval (thick), the labels-alone
    interval (thin, below), the judge-alone mean (a hollow marker, when on the labels' scale), the mean of
    every label when labels were hidden (a cross), and the rank interval at the right.
    """
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
    return save_figure(fig, Path(path))
