"""Write a comparison to disk: ``results.json``, ``report.md`` and PNG plots.

- ``results.json`` is the :class:`~mitigate.harness.compare.CompareResult`: every judgment
  of every entry and every measure with its interval, ``n`` and ``n_failed``. It is strict
  JSON: an undefined measure's value is ``null`` and its ``reason`` says why.
- ``report.md`` puts accuracy and bias side by side in one table (each column's best value
  in bold; the header says whether higher, lower or closer to 0 is better), followed by
  notes for values that could not be computed and on how to read the measures shown,
  per-measure details with ``n`` and parse failures (a share both of scored items and of
  all items, where items were dropped), per-system P_i and the comparison against the
  first entry. Columns, labels and directions come from the registered measures
  (:data:`mitigate.measures.MEASURES`) of the comparison's task (scores, or pairwise
  verdicts, for which a per-system-pair table of position consistency and preference
  fairness follows).
- Plots (matplotlib, Agg backend): ``histograms.png`` (score histogram per entry and for the
  humans), ``ls_vs_us.png`` (LS against US with the fitted slope, when likelihood was
  computed), ``per_system.png`` (P_i per system, systems ordered by human quality),
  ``consistency.png`` (consistency under perturbation, when measured) and, for pairwise
  judges in both orders, ``per_pair.png`` (position consistency and preference fairness per
  system pair, with intervals).

:func:`render_report` rebuilds ``report.md`` and the plots from ``results.json`` alone.
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from mitigate.errors import DataError
from mitigate.harness.compare import DELTA_ACCURACY_INFO, DELTA_INFO, CompareResult, EntryResult
from mitigate.harness.probe import probe_section
from mitigate.measures import MEASURES, Measure, MeasureInfo, measure_table, unfairness_scores

__all__ = ["dump_results", "load_results", "render_markdown", "render_plots", "render_report", "write_report"]

RESULTS_FILE = "results.json"
REPORT_FILE = "report.md"

_ARROWS = {"higher": "↑ higher", "lower": "↓ lower", "zero": "→ 0"}


# ---------------------------------------------------------------------------------------
# results.json


def _strict(value: Any) -> Any:
    """NaN/inf -> None, recursively, so the file is strict JSON."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {k: _strict(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_strict(v) for v in value]
    return value


def dump_results(result: CompareResult) -> str:
    """``result`` as strict JSON text (undefined values as null)."""
    return json.dumps(_strict(result.model_dump(mode="json")), indent=1, allow_nan=False, ensure_ascii=False) + "\n"


def load_results(path: str | Path) -> CompareResult:
    """Read a ``results.json`` (or the folder holding one) back into a :class:`CompareResult`."""
    p = Path(path)
    if p.is_dir():
        p = p / RESULTS_FILE
    if not p.is_file():
        raise DataError(f"expected a {RESULTS_FILE} written by 'mitigate compare' at {p}; found none", path=str(p))
    try:
        data = json.loads(p.read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise DataError(f"{p}: expected JSON written by 'mitigate compare'; got invalid JSON ({exc})",
                        path=str(p)) from None
    try:
        return CompareResult.model_validate(data)
    except ValueError as exc:
        raise DataError(f"{p}: expected the results of 'mitigate compare'; the file does not match ({exc})",
                        path=str(p)) from None


def write_report(result: CompareResult, folder: str | Path) -> list[Path]:
    """Write ``results.json``, ``report.md`` and the plots into ``folder``; returns the paths written."""
    out = Path(folder)
    out.mkdir(parents=True, exist_ok=True)
    path = out / RESULTS_FILE
    path.write_text(dump_results(result), encoding="utf-8")
    return [path, *render_report(out)]


def render_report(folder: str | Path) -> list[Path]:
    """Re-render ``report.md`` and the plots in ``folder`` from its ``results.json`` alone."""
    out = Path(folder)
    result = load_results(out)
    md = out / REPORT_FILE
    md.write_text(render_markdown(result), encoding="utf-8")
    return [md, *render_plots(result, out)]


# ---------------------------------------------------------------------------------------
# markdown


def _fmt(v: float | None, digits: int = 3) -> str:
    if v is None or not math.isfinite(v):
        return "n/a"
    if abs(v) >= 100 or float(v).is_integer() and abs(v) >= 10:
        return f"{v:.0f}"
    return f"{v:.{digits}f}"


def _value_text(key: str, m: Measure) -> str:
    if not m.ok:
        return "n/a"
    if key == "correct_preferences":
        pairs = m.extra.get("n_pairs")
        return f"{m.value:g}/{pairs}" if pairs else f"{m.value:g}"
    return _fmt(m.value)


def _of_all_text(m: Measure) -> str:
    """"0.771 of 419": the share over every item, dropped ones counted against the judge ("" if not a share)."""
    if m.of_all is None or not m.ok:
        return ""
    return f"{_fmt(m.of_all)} of {m.n_all}"


def _ci_text(m: Measure, key: str = "") -> str:
    if m.ci_low is None or m.ci_high is None:
        return ""
    if key == "correct_preferences":
        return f" [{m.ci_low:.3g}, {m.ci_high:.3g}]"
    return f" [{_fmt(m.ci_low)}, {_fmt(m.ci_high)}]"


def _best(values: Sequence[float], direction: str) -> set[int]:
    finite = [(i, v) for i, v in enumerate(values) if math.isfinite(v)]
    if not finite:
        return set()
    key = {"higher": lambda v: -v, "lower": lambda v: v, "zero": abs}[direction]
    target = min(key(v) for _, v in finite)
    return {i for i, v in finite if abs(key(v) - target) <= 1e-12}


def _header(info: MeasureInfo) -> str:
    return f"{info.label} ({_ARROWS[info.direction]})"


def _shown_columns(result: CompareResult) -> list[str]:
    """Headline measures of the result's task with a value for at least one entry."""
    return [k for k, cls in measure_table(result.task).items()
            if cls.info.headline and any(e.measures.get(k) is not None and e.measures[k].ok for e in result.entries)]


def _delta_info(result: CompareResult) -> MeasureInfo:
    return DELTA_ACCURACY_INFO if result.task == "pairwise" else DELTA_INFO


def _delta_value(e: EntryResult) -> float:
    return math.nan if e.comparison is None else e.comparison.observed


def render_markdown(result: CompareResult) -> str:
    """The report as markdown (deterministic: the same results give the same text)."""
    s = result.settings
    lines: list[str] = [f"# Comparison: {result.benchmark} / {result.criterion}", ""]
    n_items = len(result.items)
    limit = s.get("limit")
    scope = f"the first {n_items} items in document-major order (limit {limit})" if limit else f"all {n_items} items"
    labels = ("gold preferences (A, B or tie)" if result.task == "pairwise"
              else f"human scores on {result.human_scale.describe()}")
    lines.append(
        f"{len(result.entries)} entries judged {scope}; {labels}. "
        f"Intervals are 95% percentile bootstrap intervals ({s.get('n_boot', 0)} resamples, seed {s.get('seed', 0)}); "
        f"`n` counts items a measure used and `failed` those it dropped for a missing score."
    )
    if any(m.of_all is not None for e in result.entries for m in e.measures.values()):
        lines[-1] += (" A share (such as consistency) is of the scored items; where items were dropped, \"of all\" "
                      "gives it over every item, each dropped one counted against the judge, as papers that report "
                      "shares of all items count (LLMBar's order consistency 323/419).")
    train = s.get("train")
    if train:
        fitted = [e.name for e in result.entries if e.fitted and e.fitted.get("fitted")]
        lines += ["", f"Fit on train, compare on test: {len(fitted)} entries ({', '.join(fitted) or 'none'}) were "
                      f"fitted on {train.get('n_items')} labelled training items ({train.get('source')}; "
                      f"{train.get('n_documents')} documents, none of them among the judged items; ids in "
                      f"`{train.get('file', 'results.json')}`); the others were used as given."]
    if s.get("not_fitted"):
        lines += ["", "Not compared, because fitting on the training items failed:", ""]
        lines += [f"- {name}: {why}" for name, why in s["not_fitted"].items()]
    if s.get("command"):
        lines += ["", f"Command: `{s['command']}`"]
    lines += ["", "## Accuracy and bias", "",
              "Best value per column in **bold**. Direction: ↑ higher is better, ↓ lower is better, "
              "→ 0 closer to 0 is better.", ""]
    cols = _shown_columns(result)
    delta_info = _delta_info(result)
    has_delta = any(e.comparison is not None for e in result.entries)
    head = ["entry", "n ok", "parse failures", "errors", *(_header(MEASURES[k]) for k in cols)]
    if has_delta:
        head.append(f"{delta_info.label} ({_ARROWS[delta_info.direction]})")
    lines.append("| " + " | ".join(head) + " |")
    lines.append("|" + "|".join(["---"] + ["---:"] * (len(head) - 1)) + "|")
    best = {k: _best([e.measures[k].value for e in result.entries], MEASURES[k].direction) for k in cols}
    best_delta = _best([_delta_value(e) for e in result.entries], delta_info.direction)
    notes: list[str] = []
    for i, e in enumerate(result.entries):
        cells = [e.name, str(e.summary.ok), str(e.summary.parse_failures), str(e.summary.errors)]
        for k in cols:
            m = e.measures[k]
            text = _value_text(k, m)
            if i in best[k]:
                text = f"**{text}**"
            if not m.ok:
                notes.append(f"- {e.name} / {MEASURES[k].label}: {m.reason or 'undefined'}")
            of_all = f"; of all: {_of_all_text(m)}" if m.n_failed and _of_all_text(m) else ""
            cells.append(text + _ci_text(m, k) + of_all)
        if has_delta:
            c = e.comparison
            if c is None:
                cells.append("reference")
            else:
                text = _fmt(c.observed)
                if i in best_delta:
                    text = f"**{text}**"
                ci = f" [{_fmt(c.ci_low)}, {_fmt(c.ci_high)}]" if c.ci_low is not None else ""
                p = f", p={c.p_value:.3g}" if c.p_value is not None and math.isfinite(c.p_value) else ""
                if not math.isfinite(c.observed):
                    notes.append(f"- {e.name} / {delta_info.label}: {c.reason or 'undefined'}")
                cells.append(text + ci + p)
        lines.append("| " + " | ".join(c.replace("|", "\\|") for c in cells) + " |")
    ref = [("gold preferences (reference)" if result.task == "pairwise"
            else f"humans (reference, {result.human_scale.describe()})"), "", "", ""]
    any_ref = False
    for k in cols:
        m = result.human.get(k)
        if m is not None and m.ok:
            ref.append(f"*{_value_text(k, m)}*{_ci_text(m)}")
            any_ref = True
        else:
            ref.append("")
    if has_delta:
        ref.append("")
    if any_ref:
        lines.append("| " + " | ".join(ref) + " |")
    missing = [k for k, cls in measure_table(result.task).items() if cls.info.headline and k not in cols]
    if missing:
        lines += ["", "Not computed for any entry:", ""]
        for k in missing:
            reason = result.entries[0].measures[k].reason if k in result.entries[0].measures else "not measured"
            lines.append(f"- {MEASURES[k].label}: {reason}")
    if notes:
        lines += ["", "Values shown as n/a:", "", *notes]
    reading = [f"- {MEASURES[k].label}: {MEASURES[k].note}" for k in cols if MEASURES[k].note]
    if reading:
        lines += ["", "How to read:", "", *reading]
    lines += _details(result)
    lines += _per_system(result)
    lines += _per_pair(result)
    lines += _comparisons(result)
    lines += ["", *probe_section([(e.name, e.probes) for e in result.entries if e.probes])]
    lines += _plots_section(result)
    return "\n".join(lines) + "\n"


def _details(result: CompareResult) -> list[str]:
    out = ["", "## Every measure", ""]
    for e in result.entries:
        sm = e.summary
        out += [f"### {e.name}", "",
                f"Kind: {e.kind}; scale {e.scale.describe()}; {sm.items} items, {sm.ok} ok, {sm.parse_failures} "
                f"parse failures, {sm.errors} errors; {sm.calls} LM calls ({sm.cached_calls} from cache)."
                + _fitted_text(e), "",
                "| measure | direction | value | 95% CI | n | failed | of all | note |",
                "|---|---|---:|---|---:|---:|---:|---|"]
        for k, m in e.measures.items():
            info = MEASURES.get(k)
            direction = _ARROWS[info.direction] if info else ""
            ci = _ci_text(m, k).strip()
            label = info.label if info else k
            out.append(f"| {label} | {direction} | {_value_text(k, m)} | {ci} | {m.n} | {m.n_failed} | "
                       f"{_of_all_text(m)} | {(m.reason or '').replace('|', '/')} |")
        out.append("")
    return out


def _fitted_text(e: EntryResult) -> str:
    if not e.fitted:
        return ""
    if e.fitted.get("fitted"):
        return f" Fitted on the {e.fitted.get('n_items')} items of {e.fitted.get('train')} (its spec holds what it learned)."
    return f" Not fitted here: {e.fitted.get('why')}."


def _human_quality(result: CompareResult) -> dict[str, float]:
    sums: dict[str, list[float]] = {}
    for it in result.items:
        if it.system is not None and it.human is not None:
            sums.setdefault(it.system, []).append(it.human)
    return {k: float(np.mean(v)) for k, v in sums.items()}


def _per_system(result: CompareResult) -> list[str]:
    entries = [e for e in result.entries if e.per_system]
    if not entries:
        return []
    quality = _human_quality(result)
    systems = sorted(quality, key=lambda k: quality[k])
    out = ["## Per-system correlation P_i (Spearman with humans, per system)", "",
           "Systems ordered by human quality Q_i (mean human score); the meta-correlation M = corr(Q_i, P_i).", "",
           "| system | Q_i | " + " | ".join(e.name for e in entries) + " |",
           "|---|---:|" + "---:|" * len(entries)]
    for sys_name in systems:
        cells = [sys_name, _fmt(quality[sys_name])]
        for e in entries:
            m = e.per_system.get(sys_name)
            cells.append("n/a" if m is None or not m.ok else f"{_fmt(m.value)} (n={m.n})")
        out.append("| " + " | ".join(cells) + " |")
    out.append("")
    return out


_PAIR_KEYS = ("position_consistency", "preference_fairness")


def _pair_tables(result: CompareResult) -> dict[str, dict[str, dict[str, Any]]]:
    """Entry name -> measure -> system pair -> row, for the entries whose pairwise measures hold per-pair tables."""
    tables = {e.name: {k: e.measures[k].extra.get("per_group", {}) for k in _PAIR_KEYS if k in e.measures}
              for e in result.entries}
    return {name: t for name, t in tables.items() if any(t.values())}


def _per_pair(result: CompareResult) -> list[str]:
    """Position consistency and preference fairness per system pair, for pairwise entries that have them."""
    tables = _pair_tables(result)
    if not tables:
        return []
    out = ["## Per system pair", "",
           "Position consistency (↑) and preference fairness (→ 0; < 0 favours the first position, > 0 the "
           "second) within each pair of systems, with 95% bootstrap intervals (Shi et al. 2024).", "",
           "| entry | pair | n | position consistency | preference fairness | primacy / recency |",
           "|---|---|---:|---|---|---|"]

    def cell(row: dict[str, Any] | None) -> str:
        if row is None or row.get("value") is None or not math.isfinite(row["value"]):
            return "n/a"
        ci = f" [{_fmt(row['ci_low'])}, {_fmt(row['ci_high'])}]" if row.get("ci_low") is not None else ""
        return _fmt(row["value"]) + ci

    for name, t in tables.items():
        pc, pf = t.get("position_consistency", {}), t.get("preference_fairness", {})
        for pair in dict.fromkeys([*pc, *pf]):
            a, b = pc.get(pair), pf.get(pair)
            n = (a or b or {}).get("n", 0)
            split = f"{(b or a or {}).get('primacy', '')} / {(b or a or {}).get('recency', '')}"
            out.append(f"| {name} | {pair} | {n} | {cell(a)} | {cell(b)} | {split} |")
    out.append("")
    return out


def _comparisons(result: CompareResult) -> list[str]:
    rows = [e for e in result.entries if e.comparison is not None]
    if not rows:
        return []
    first = result.entries[0].name
    what, short = (("Accuracy against the gold preferences", "Δ accuracy") if result.task == "pairwise"
                   else ("Item-level Spearman", "Δ Spearman"))
    test = "paired sign-flip permutation test" if result.task == "pairwise" else "paired permutation test"
    out = [f"## Against {first}", "",
           f"{what} of each entry minus that of the first entry, on items both scored; paired "
           f"bootstrap interval and {test} (two-sided).", "",
           f"| entry | {short} | 95% CI | p | n | note |", "|---|---:|---|---:|---:|---|"]
    for e in rows:
        c = e.comparison
        assert c is not None
        ci = f"[{_fmt(c.ci_low)}, {_fmt(c.ci_high)}]" if c.ci_low is not None else ""
        p = f"{c.p_value:.3g}" if c.p_value is not None and math.isfinite(c.p_value) else "n/a"
        out.append(f"| {e.name} | {_fmt(c.observed)} | {ci} | {p} | {c.n} | {c.reason or ''} |")
    out.append("")
    return out


def _plots_section(result: CompareResult) -> list[str]:
    out = ["## Plots", "", "![score histograms](histograms.png)", ""]
    if result.likelihood is not None:
        out += ["![LS vs US](ls_vs_us.png)", ""]
    if any(e.per_system for e in result.entries):
        out += ["![per-system P_i](per_system.png)", ""]
    if _has_consistency(result):
        out += ["![consistency](consistency.png)", ""]
    if _pair_tables(result):
        out += ["![position bias per system pair](per_pair.png)", ""]
    return out


def _has_consistency(result: CompareResult) -> bool:
    return any(e.measures.get("perturbation_consistency") is not None and e.measures["perturbation_consistency"].ok
               for e in result.entries)


# ---------------------------------------------------------------------------------------
# plots


def _plt() -> Any:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def _save(fig: Any, path: Path) -> Path:
    fig.savefig(path, dpi=100, metadata={"Software": None})
    _plt().close(fig)
    return path


def _short(name: str, width: int = 28) -> str:
    return name if len(name) <= width else name[: width - 1] + "…"


def _grid(n: int) -> tuple[int, int]:
    cols = min(n, 3)
    return math.ceil(n / cols), cols


def render_plots(result: CompareResult, folder: str | Path) -> list[Path]:
    """Write the PNG plots for ``result`` into ``folder``; returns the paths written."""
    out = Path(folder)
    out.mkdir(parents=True, exist_ok=True)
    paths = [_histograms(result, out / "histograms.png")]
    if result.likelihood is not None:
        paths.append(_ls_vs_us(result, out / "ls_vs_us.png"))
    if any(m.ok for e in result.entries for m in e.per_system.values()):  # nothing to draw when every P_i is n/a
        paths.append(_per_system_plot(result, out / "per_system.png"))
    if _has_consistency(result):
        paths.append(_consistency_plot(result, out / "consistency.png"))
    if _pair_tables(result):
        paths.append(_per_pair_plot(result, out / "per_pair.png"))
    return paths


def _histograms(result: CompareResult, path: Path) -> Path:
    plt = _plt()
    panels = [(e.name, f"n={e.summary.ok}, {e.summary.parse_failures} parse failures", e.histogram)
              for e in result.entries]
    pairwise = result.task == "pairwise"
    panels.append(("humans (gold)" if pairwise else "humans (mean, rounded)",
                   f"n={sum(result.human_histogram.values())}", result.human_histogram))
    rows, cols = _grid(len(panels))
    fig, axes = plt.subplots(rows, cols, figsize=(4.2 * cols, 3.2 * rows), squeeze=False)
    for ax, (name, subtitle, hist) in zip(axes.flat, panels, strict=False):
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
    for ax in list(axes.flat)[len(panels):]:
        ax.axis("off")
    kind = "Verdict distribution" if pairwise else "Score distribution"
    fig.suptitle(f"{kind}: {result.benchmark} / {result.criterion}")
    fig.tight_layout()
    return _save(fig, path)


def _ls_vs_us(result: CompareResult, path: Path) -> Path:
    plt = _plt()
    ls = np.array([math.nan if it.ls is None else it.ls for it in result.items], dtype=float)
    human = np.array([math.nan if it.human is None else it.human for it in result.items], dtype=float)
    rows, cols = _grid(len(result.entries))
    fig, axes = plt.subplots(rows, cols, figsize=(4.2 * cols, 3.6 * rows), squeeze=False)
    for ax, e in zip(axes.flat, result.entries, strict=False):
        scores = np.array([math.nan if v is None else v for v in e.scores(result.criterion)], dtype=float)
        us = unfairness_scores(scores, human)
        ok = np.isfinite(ls) & np.isfinite(us)
        ax.scatter(ls[ok], us[ok], s=12, alpha=0.6, color="#3b6ea8")
        if not ok.any():
            ax.text(0.5, 0.5, "no item has both LS and a judge score", transform=ax.transAxes, ha="center",
                    va="center", fontsize=9, color="#c0392b")
            ax.set_xticks([])
            ax.set_yticks([])
        bias = e.measures.get("bias_score")
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
    for ax in list(axes.flat)[len(result.entries):]:
        ax.axis("off")
    fig.suptitle("Likelihood bias (Ohi et al. 2024)")
    fig.tight_layout()
    return _save(fig, path)


def _per_system_plot(result: CompareResult, path: Path) -> Path:
    plt = _plt()
    quality = _human_quality(result)
    systems = sorted(quality, key=lambda k: quality[k])
    entries = [e for e in result.entries if e.per_system]
    width = 0.8 / max(len(entries), 1)
    fig, ax = plt.subplots(figsize=(max(6.0, 0.7 * len(systems) * max(1, len(entries)) / 2 + 3), 4.2))
    x = np.arange(len(systems))
    for k, e in enumerate(entries):
        vals = [e.per_system[s].value if s in e.per_system else math.nan for s in systems]
        meta = e.measures.get("meta_spearman")
        label = _short(e.name) + (f" (M={meta.value:.2f})" if meta is not None and meta.ok else "")
        ax.bar(x + (k - (len(entries) - 1) / 2) * width, np.nan_to_num(vals, nan=0.0), width=width, label=label)
        for xi, v in zip(x, vals, strict=True):
            if not math.isfinite(v):
                ax.text(xi + (k - (len(entries) - 1) / 2) * width, 0, "n/a", ha="center", va="bottom", fontsize=6,
                        rotation=90)
    ax.set_xticks(x)
    ax.set_xticklabels([f"{s}\nQ={quality[s]:.2f}" for s in systems], fontsize=8)
    ax.axhline(0, color="#999999", linewidth=0.8)
    ax.set_ylabel("P_i = Spearman(judge, human) within system")
    ax.set_title(f"Per-system agreement, systems by human quality: {result.benchmark} / {result.criterion}")
    ax.legend(fontsize=8)
    fig.tight_layout()
    return _save(fig, path)


def _per_pair_plot(result: CompareResult, path: Path) -> Path:
    """Position consistency and preference fairness per system pair, with their intervals, one bar per entry."""
    plt = _plt()
    tables = _pair_tables(result)
    pairs = list(dict.fromkeys(p for t in tables.values() for rows in t.values() for p in rows))
    fig, axes = plt.subplots(1, 2, figsize=(max(8.0, 0.55 * len(pairs) * max(1, len(tables)) + 4), 4.2),
                             squeeze=False)
    width = 0.8 / max(len(tables), 1)
    x = np.arange(len(pairs))
    for ax, key, label in zip(axes.flat, _PAIR_KEYS, ("position consistency (↑)", "preference fairness (→ 0)"),
                              strict=True):
        for k, (name, t) in enumerate(tables.items()):
            rows = t.get(key, {})
            vals = np.array([rows[p]["value"] if p in rows and rows[p]["value"] is not None else math.nan
                             for p in pairs], dtype=float)
            low = np.array([rows[p]["ci_low"] if p in rows and rows[p].get("ci_low") is not None else math.nan
                            for p in pairs], dtype=float)
            high = np.array([rows[p]["ci_high"] if p in rows and rows[p].get("ci_high") is not None else math.nan
                             for p in pairs], dtype=float)
            err = np.nan_to_num(np.vstack([vals - low, high - vals]), nan=0.0)
            ax.bar(x + (k - (len(tables) - 1) / 2) * width, np.nan_to_num(vals, nan=0.0), width=width,
                   yerr=err, capsize=2, label=_short(name))
        ax.set_xticks(x)
        ax.set_xticklabels(pairs, rotation=45, ha="right", fontsize=8)
        ax.axhline(0, color="#999999", linewidth=0.8)
        ax.set_title(label, fontsize=10)
    axes.flat[1].set_ylim(-1, 1)
    axes.flat[0].set_ylim(0, 1)
    axes.flat[0].legend(fontsize=8)
    fig.suptitle(f"Position bias per system pair (Shi et al. 2024): {result.benchmark} / {result.criterion}")
    fig.tight_layout()
    return _save(fig, path)


def _consistency_plot(result: CompareResult, path: Path) -> Path:
    plt = _plt()
    names, vals, lows, highs = [], [], [], []
    for e in result.entries:
        m = e.measures.get("perturbation_consistency")
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
    ax.set_title(f"Consistency under guideline perturbation\n{result.benchmark} / {result.criterion}", fontsize=11)
    fig.tight_layout()
    return _save(fig, path)


def search_trial_points(values: Sequence[float]) -> tuple[list[tuple[int, float]], list[int], list[float]]:
    """(trials with a defined objective as (index, value), indices of undefined ones, best so far per trial)."""
    ok = [(i, v) for i, v in enumerate(values) if math.isfinite(v)]
    bad = [i for i, v in enumerate(values) if not math.isfinite(v)]
    best: list[float] = []
    running = -math.inf
    for v in values:
        running = max(running, v) if math.isfinite(v) else running
        best.append(running if math.isfinite(running) else math.nan)
    return ok, bad, best


def plot_search(result: Any, path: str | Path) -> Path:
    """A PNG of a demo search (a :class:`mitigate.selectors.search.SearchResult`): what it tried and what held.

    Left: the dev objective of every trial in the order tried, the best so far as a step
    line and the baseline as a dashed line; a trial whose objective is undefined (a
    collapsed judge, too few scores) is drawn as an "x" on the lower edge, so it is seen
    rather than dropped. Right: winner and baseline on dev and on the held-out test split,
    with their bootstrap intervals, so a gain that does not carry over to test is visible.
    """
    plt = _plt()
    out = Path(path)
    out.parent.mkdir(parents=True, exist_ok=True)
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
    ax.plot([result.best_index], [values[result.best_index]] if math.isfinite(values[result.best_index]) else [floor],
            "*", markersize=14, color="tab:orange", label="winner")
    from matplotlib.ticker import MaxNLocator

    ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    ax.set_xlabel("trial (in the order tried)")
    ax.set_ylabel("objective on dev")
    ax.set_title(_short(f"{result.engine}: {result.objective.describe()}", 60), fontsize=10)
    ax.legend(fontsize=8, loc="best")

    bars = [("winner\ndev", result.dev), ("baseline\ndev", result.baseline_dev),
            ("winner\ntest", result.test), ("baseline\ntest", result.baseline_test)]
    for i, (label, v) in enumerate(bars):
        color = "tab:orange" if label.startswith("winner") else "grey"
        if not math.isfinite(v.value):
            bx.text(i, 0, "undefined", ha="center", va="bottom", fontsize=8, color="tab:red", rotation=90)
            continue
        bx.bar(i, v.value, color=color, alpha=0.8 if label.endswith("test") else 0.45)
        if v.ci_low is not None and v.ci_high is not None:
            bx.errorbar(i, v.value, yerr=[[v.value - v.ci_low], [v.ci_high - v.value]], color="black", capsize=4)
    bx.axhline(0, color="black", linewidth=0.5)
    bx.set_xticks(range(len(bars)), [b[0] for b in bars], fontsize=8)
    g = result.test_gain
    gain = "undefined" if not math.isfinite(g.value) else f"{g.value:+.3f}"
    if g.ci_low is not None and g.ci_high is not None:
        gain += f" [{g.ci_low:+.3f}, {g.ci_high:+.3f}]"
    bx.set_title(f"held-out test gain {gain}", fontsize=10)
    fig.tight_layout()
    return _save(fig, out)

