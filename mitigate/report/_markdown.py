"""Write a comparison to disk: ``results.json``, ``report.md``, ``report.html`` and PNG plots.

- ``results.json`` is the :class:`~mitigate.report._results.CompareResult`: every judgment
  of every entry and every measure with its interval, ``n`` and ``n_failed``. It is strict
  JSON: an undefined measure's value is ``null`` and its ``reason`` says why.
- ``report.md`` opens with a bottom line per entry and warnings
  (:mod:`mitigate.report._reading`), then puts accuracy and bias side by side in one table
  (a column's best value in bold where the column holds two or more values; the header says
  whether higher, lower or closer to 0 is better; every table escaped,
  :mod:`mitigate.report._tables`), followed by
  notes for values that could not be computed and on how to read the measures shown,
  per-measure details with ``n`` and parse failures (a share both of scored items and of
  all items, where items were dropped), per-system P_i and the comparison against the
  first entry. Columns, labels and directions come from the registered measures
  (:data:`mitigate.measures.MEASURES`) of the comparison's task (scores, or pairwise
  verdicts, for which a per-system-pair table of position consistency and preference
  fairness follows), the demos each entry shows, and only the plots that were written.
- ``report.html`` (:mod:`mitigate.report._html`): the same as one self-contained page,
  with a per-item view of every judgment.
- Plots (:mod:`mitigate.report._plots`; matplotlib, Agg backend): ``histograms.png`` (score histogram per
  entry and for the
  humans), ``ls_vs_us.png`` (LS against US with the fitted slope, when likelihood was
  computed), ``per_system.png`` (P_i per system, systems ordered by human quality),
  ``consistency.png`` (consistency under perturbation, when measured) and, for pairwise
  judges in both orders, ``per_pair.png`` (position consistency and preference fairness per
  system pair, with intervals).

:func:`render_report` rebuilds ``report.md`` and the plots (and ``report.html``) from ``results.json`` alone.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from mitigate.estimators import METHOD_TITLES, MeanEstimate
from mitigate.measures import MEASURES, Measure, MeasureInfo, measure_table
from mitigate.paths import write_output
from mitigate.probes import probe_section
from mitigate.report._files import COLUMNS_FILE, RESULTS_FILE, load_results, write_columns, write_results
from mitigate.report._html import HTML_FILE, render_html
from mitigate.report._panel import panel_members_section
from mitigate.report._plots import PLOT_CAPTIONS, human_quality, pair_tables, planned_plots, render_plots
from mitigate.report._reading import bottom_lines, chosen_demos, plain_reason, warnings
from mitigate.report._results import DELTA_ACCURACY_INFO, DELTA_INFO, CompareResult, EntryResult
from mitigate.report._tables import best_indices, md_cell, md_table

REPORT_FILE = "report.md"

_ARROWS = {"higher": "↑ higher", "lower": "↓ lower", "zero": "→ 0"}


def write_report(result: CompareResult, folder: str | Path, *, appendix: str = "") -> list[Path]:
    """The report stage: ``results.json``, ``results.sqlite`` (the judgments as columns), ``report.md``,
    ``report.html`` and the plots written into ``folder``, each once; the paths written. ``appendix``:
    markdown added at the end of report.md (``compare --threshold``'s section)."""
    out = Path(folder)
    out.mkdir(parents=True, exist_ok=True)
    path = out / RESULTS_FILE
    write_output(path, lambda fh: write_results(result, fh), "the results file")
    written = render_report(out, html=True, result=result, appendix=appendix)
    return [path, write_columns(result, out / COLUMNS_FILE), *written]


def render_report(
    folder: str | Path, *, html: bool = False, result: CompareResult | None = None, appendix: str = ""
) -> list[Path]:
    """Re-render ``report.md`` and the plots (and with ``html``, ``report.html``) in ``folder`` from
    ``results.json`` (or from ``result``, when the caller holds it: a results.json written through a device
    cannot be read back); the plots first, so the reports hold only the plots that were written."""
    out = Path(folder)
    result = load_results(out) if result is None else result
    plots = render_plots(result, out)
    md = out / REPORT_FILE
    text = render_markdown(result, plots=[p.name for p in plots])
    write_output(md, text + (f"\n{appendix}\n" if appendix else ""), "the report")
    written = [md, *plots]
    if html:
        page = out / HTML_FILE
        write_output(page, render_html(result, text, plots), "the HTML report")
        written.insert(1, page)
    return written


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
    if key == "correct-preferences":
        pairs = m.extra.get("n_pairs")
        return f"{m.value:g}/{pairs}" if pairs else f"{m.value:g}"
    return _fmt(m.value)


def _of_all_text(m: Measure) -> str:
    """ "0.771 of 419": the share over every item, dropped ones counted against the judge ("" if not a
    share)."""
    if m.of_all is None or not m.ok:
        return ""
    return f"{_fmt(m.of_all)} of {m.n_all}"


def _ci_text(m: Measure, key: str = "") -> str:
    if m.ci_low is None or m.ci_high is None:
        return ""
    if key == "correct-preferences":
        return f" [{m.ci_low:.3g}, {m.ci_high:.3g}]"
    return f" [{_fmt(m.ci_low)}, {_fmt(m.ci_high)}]"


def _best(values: Sequence[float], direction: str) -> set[int]:
    """The entries to bold in a column: see :func:`mitigate.report._tables.best_indices`."""
    return best_indices(values, direction)


def _header(info: MeasureInfo) -> str:
    return f"{info.label} ({_ARROWS[info.direction]})"


def _shown_columns(result: CompareResult) -> list[str]:
    """Headline measures of the result's task with a value for at least one entry."""
    return [
        k
        for k, cls in measure_table(result.task).items()
        if cls.info.headline
        and any(e.measures.get(k) is not None and e.measures[k].ok for e in result.entries)
    ]


def _delta_info(result: CompareResult) -> MeasureInfo:
    return DELTA_ACCURACY_INFO if result.task == "pairwise" else DELTA_INFO


def _delta_value(e: EntryResult) -> float:
    return math.nan if e.comparison is None else e.comparison.observed


def render_markdown(result: CompareResult, plots: Sequence[str] | None = None) -> str:
    """The report as markdown (deterministic: the same results give the same text).

    ``plots`` names the plot files written beside it (the ones :func:`render_plots` would
    write, when None); only those are linked.
    """
    lines = _summary_lines(result)
    lines += _details(result)
    lines += _per_system(result)
    lines += _per_pair(result)
    lines += panel_members_section(result)
    lines += _comparisons(result)
    lines += _demos_section(result)
    lines += ["", *probe_section([(e.name, e.probes) for e in result.entries if e.probes])]
    lines += _plots_section(result, plots)
    return "\n".join(lines) + "\n"


def render_summary(result: CompareResult) -> str:
    """The report's opening, up to its table of every measure: the bottom line, warnings, the
    accuracy-and-bias table and (on a partly labelled benchmark) the corrected estimates. What ``mitigate
    compare`` prints."""
    return "\n".join(_summary_lines(result)) + "\n"


def _labels_text(result: CompareResult) -> str:
    """What the report says of the labels when only some items (or none) carry one; "" when every item
    does."""
    n_labelled = result.settings.get("n_labelled")
    n_items = len(result.items)
    if n_labelled is None or n_labelled == n_items:
        return ""
    label = "a gold preference" if result.task == "pairwise" else "a human label"
    if n_labelled == 0:
        return (
            f" No judged item carries {label} on {result.criterion!r}: agreement with humans cannot be "
            "measured here."
        )
    which = (
        "accuracy against gold, in both orders and the swap gain"
        if result.task == "pairwise"
        else "the correlations with the human scores, #CP, P_i, the meta-correlation and BiasScore"
    )
    return (
        f" Only {n_labelled} of the {n_items} items carry {label} on {result.criterion!r}: agreement "
        f"with humans ({which}, and the difference against the first entry) is computed on those "
        f"{n_labelled} "
        "alone, and an unlabelled item is not counted as a failure; the other measures use every item."
    )


def _summary_lines(result: CompareResult) -> list[str]:
    s = result.settings
    lines: list[str] = [f"# Comparison: {result.benchmark} / {result.criterion}", ""]
    n_items = len(result.items)
    limit = s.get("limit")
    scope = (
        f"the first {n_items} items in document-major order (limit {limit})"
        if limit
        else f"all {n_items} items"
    )
    labels = (
        "gold preferences (A, B or tie)"
        if result.task == "pairwise"
        else f"human scores on {result.human_scale.describe()}"
    )
    lines.append(
        f"{len(result.entries)} entries judged {scope}; {labels}. "
        f"Intervals are 95% percentile bootstrap intervals ({s.get('n_boot', 0)} resamples, seed "
        f"{s.get('seed', 0)}); `n` counts items a measure used and `failed` those it dropped for a "
        "missing score."
    )
    if any(m.of_all is not None for e in result.entries for m in e.measures.values()):
        lines[-1] += (
            ' A share (such as consistency) is of the scored items; where items were dropped, "of '
            'all" gives it over every item, each dropped one counted against the judge, as papers '
            "that report shares of all items count (LLMBar's order consistency 323/419)."
        )
    lines[-1] += _labels_text(result)
    train = s.get("train")
    if train:
        fitted = [e.name for e in result.entries if e.fitted and e.fitted.get("fitted")]
        lines += [
            "",
            f"Fit on train, compare on test: {len(fitted)} entries ({', '.join(fitted) or 'none'}) "
            f"were fitted on {train.get('n_items')} labelled training items "
            f"({train.get('source')}; {train.get('n_documents')} documents, none of them among the "
            f"judged items; ids in `{train.get('file', 'results.json')}`); the others were "
            "used as given.",
        ]
    if s.get("not_fitted"):
        lines += ["", "Not compared, because fitting on the training items failed:", ""]
        lines += [f"- {name}: {why}" for name, why in s["not_fitted"].items()]
    if s.get("command"):
        lines += ["", f"Command: `{s['command']}`"]
    lines += ["", "## Bottom line", "", *(f"- {line}" for line in bottom_lines(result))]
    cautions = warnings(result)
    if cautions:
        lines += ["", "## Warnings", "", *(f"- {line}" for line in cautions)]
    if any(e.scoring for e in result.entries):
        lines += [
            "",
            "How each entry's answers were read: "
            + "; ".join(f"{e.name}: {e.scoring}" for e in result.entries if e.scoring)
            + ".",
        ]
    same = [e for e in result.entries if e.identical_to]
    if same:
        lines += [
            "",
            "Identical by construction (the same prompts, backend, settings and fan-out as an earlier "
            "entry, so the same requests read the same way; their difference is 0 by construction, "
            "not a measurement):",
            "",
        ]
        lines += [f"- {e.name} = {e.identical_to}" for e in same]
    lines += [
        "",
        "## Accuracy and bias",
        "",
        "Best value per column in **bold**. Direction: ↑ higher is better, ↓ lower is better, "
        "→ 0 closer to 0 is better.",
        "",
    ]
    cols = _shown_columns(result)
    delta_info = _delta_info(result)
    has_delta = any(e.comparison is not None for e in result.entries)
    # a swap gain without gold ties is <= 0 by construction: neither "higher is better" nor a best value
    unsigned = {
        k
        for k in cols
        if k == "swap-gain"
        and all(
            e.measures[k].extra.get("nonpositive_by_construction")
            for e in result.entries
            if e.measures.get(k) is not None and e.measures[k].ok
        )
    }
    head = [
        "entry",
        "n ok",
        "parse failures",
        "errors",
        *(
            f"{MEASURES[k].label} (≤ 0 by construction: no gold ties)"
            if k in unsigned
            else _header(MEASURES[k])
            for k in cols
        ),
    ]
    if has_delta:
        head.append(f"{delta_info.label} ({_ARROWS[delta_info.direction]})")
    lines.append("| " + " | ".join(head) + " |")
    lines.append("|" + "|".join(["---"] + ["---:"] * (len(head) - 1)) + "|")
    best = {
        k: set()
        if k in unsigned
        else _best([e.measures[k].value for e in result.entries], MEASURES[k].direction)
        for k in cols
    }
    best_delta = _best(
        [math.nan if e.identical_to else _delta_value(e) for e in result.entries], delta_info.direction
    )
    notes: list[str] = []
    for i, e in enumerate(result.entries):
        cells = [e.name, str(e.summary.ok), str(e.summary.parse_failures), str(e.summary.errors)]
        for k in cols:
            m = e.measures[k]
            text = _value_text(k, m)
            if i in best[k]:
                text = f"**{text}**"
            if not m.ok:
                notes.append(f"- {e.name} / {MEASURES[k].label}: {plain_reason(m.reason, k)}")
            of_all = f"; of all: {_of_all_text(m)}" if m.n_failed and _of_all_text(m) else ""
            abstained = (
                f"; abstained {m.extra['abstention_rate']:.3f} ({m.extra['abstained']}), counted wrong"
                if m.ok and m.extra.get("abstained")
                else ""
            )
            cells.append(text + _ci_text(m, k) + of_all + abstained)
        if has_delta:
            c = e.comparison
            if c is None:
                cells.append("reference")
            elif e.identical_to:
                cells.append(f"identical to {e.identical_to} by construction")
            else:
                text = _fmt(c.observed)
                if i in best_delta:
                    text = f"**{text}**"
                ci = f" [{_fmt(c.ci_low)}, {_fmt(c.ci_high)}]" if c.ci_low is not None else ""
                p = (
                    f", {'bootstrap ' if c.test_reason else ''}p={c.p_value:.3g}"
                    if c.p_value is not None and math.isfinite(c.p_value)
                    else ""
                )
                if not math.isfinite(c.observed):
                    notes.append(f"- {e.name} / {delta_info.label}: {plain_reason(c.reason)}")
                decided = (
                    f"; decided items only: {_fmt(c.decided_observed)} (n={c.decided_n})"
                    if c.decided_n is not None
                    else ""
                )
                cells.append(text + ci + p + decided)
        lines.append("| " + " | ".join(c.replace("|", "\\|") for c in cells) + " |")
    ref = [
        (
            "gold preferences (reference)"
            if result.task == "pairwise"
            else f"humans (reference, {result.human_scale.describe()})"
        ),
        "",
        "",
        "",
    ]
    any_ref = False
    for k in cols:
        reference = result.human.get(k)
        if reference is not None and reference.ok:
            ref.append(f"*{_value_text(k, reference)}*{_ci_text(reference)}")
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
        for k in missing:  # each entry's own reason; one sentence when they share it
            reasons = {
                e.name: plain_reason(e.measures[k].reason if k in e.measures else "not measured", k)
                for e in result.entries
            }
            if len(set(reasons.values())) == 1:
                lines.append(f"- {MEASURES[k].label}: {next(iter(reasons.values()))}")
            else:
                lines.append(
                    f"- {MEASURES[k].label}: " + "; ".join(f"{name}: {why}" for name, why in reasons.items())
                )
    if notes:
        lines += ["", "Values shown as n/a:", "", *notes]
    reading = [f"- {MEASURES[k].label}: {MEASURES[k].note}" for k in cols if MEASURES[k].note]
    if reading:
        lines += ["", "How to read:", "", *reading]
    lines += _estimates_section(result)
    return lines


def _interval_text(e: MeanEstimate | None) -> str:
    return "n/a" if e is None else f"{e.estimate:.3f} [{e.low:.3f}, {e.high:.3f}]"


def _estimates_section(result: CompareResult) -> list[str]:
    """Each entry's bias-corrected estimate per system beside the judge's raw mean and the labels alone."""
    method = result.settings.get("estimate")
    if not method:
        return []
    what = "win rate" if result.task == "pairwise" else "mean human score"
    out = [
        "",
        "## Corrected estimates per system",
        "",
        f"{result.settings.get('n_labelled')} of the {len(result.items)} items carry a label on "
        f"{result.criterion!r}. Each entry's estimate of each system's {what} is its judge's value on "
        f"every item corrected by the labelled items ({METHOD_TITLES.get(method, method)}, `{method}`; "
        "95% intervals of the mean over each system's items, as `mitigate estimate` computes them, "
        "docs/estimate.md). The judge's raw mean is not corrected (on the judge's own scale); the labels "
        "alone are the labelled items' mean.",
    ]
    for e in result.entries:
        est = e.estimate
        if est is None:
            out += ["", f"### {e.name}", "", f"No corrected estimate: {e.estimate_note or 'not computed'}."]
            continue
        rows = [
            [
                g.group,
                str(g.n),
                str(g.n_labelled),
                "n/a" if g.judge is None else f"{g.judge.estimate:.3f}",
                _interval_text(g.estimate),
                _interval_text(g.human),
            ]
            for g in est.groups
        ]
        out += [
            "",
            f"### {e.name}",
            "",
            *md_table(
                [
                    "system" if est.by != "none" else "group",
                    "items",
                    "labelled",
                    "raw mean (judge)",
                    f"{'not corrected' if est.method == 'judge' else 'corrected'}, {est.method} [95% CI]",
                    "labels alone [95% CI]",
                ],
                rows,
                ["left", "right", "right", "right", "right", "right"],
            ),
        ]
        notes = list(dict.fromkeys([*est.notes, *(n for g in est.groups for n in g.estimate.notes)]))
        if notes:
            out += ["", *(f"- {md_cell(n)}" for n in notes)]
    return out


def _details(result: CompareResult) -> list[str]:
    out = ["", "## Every measure", ""]
    for e in result.entries:
        sm = e.summary
        acc = e.measures.get("preference-accuracy")
        n_abs = int(acc.extra.get("abstained") or 0) if acc is not None else 0
        outcome = ""
        if n_abs:
            # every item is one outcome: a value, an abstention, no value after a parse failure, or an error
            outcome = (
                f" Items by outcome: {sm.ok} with a verdict, {n_abs} abstained, "
                f"{sm.items - sm.ok - n_abs - sm.errors} without one after parse failures, "
                f"{sm.errors} errors (= {sm.items})."
            )
        out += [
            f"### {e.name}",
            "",
            f"Kind: {e.kind}; {_answers_text(result, e)}; {sm.items} items, {sm.ok} ok, "
            f"{sm.parse_failures} parse failures{' (both orders)' if result.task == 'pairwise' else ''}, "
            f"{sm.errors} errors; {sm.calls} LM calls ({sm.cached_calls} from cache)."
            + outcome
            + _fitted_text(e),
            "",
            "| measure | direction | value | 95% CI | n | failed | of all | note |",
            "|---|---|---:|---|---:|---:|---:|---|",
        ]
        for k, m in e.measures.items():
            info = MEASURES.get(k)
            direction = _ARROWS[info.direction] if info else ""
            ci = _ci_text(m, k).strip()
            label = info.label if info else k
            note = plain_reason(m.reason, k) if m.reason else ""
            out.append(
                "| "
                + " | ".join(
                    md_cell(c)
                    for c in (label, direction, _value_text(k, m), ci, m.n, m.n_failed, _of_all_text(m), note)
                )
                + " |"
            )
        out.append("")
    return out


def _answers_text(result: CompareResult, e: EntryResult) -> str:
    """What the entry's answers are: a scale for a score judge; verdicts (and the order(s) counted) for
    pairwise."""
    if result.task != "pairwise":
        return f"scale {e.scale.describe()}"
    acc = e.measures.get("preference-accuracy")
    orders = acc.extra.get("orders") if acc is not None else None
    return "verdicts first / second / tie" + (f"; its verdict counts {orders}" if orders else "")


def _fitted_text(e: EntryResult) -> str:
    if not e.fitted:
        return ""
    if e.fitted.get("fitted"):
        return (
            f" Fitted on the {e.fitted.get('n_items')} items of {e.fitted.get('train')} (its spec holds "
            "what it learned)."
        )
    return f" Not fitted here: {e.fitted.get('why')}."


def _per_system(result: CompareResult) -> list[str]:
    entries = [e for e in result.entries if e.per_system]
    if not entries:
        return []
    quality = human_quality(result)
    systems = sorted(quality, key=lambda k: quality[k])
    rows = []
    for sys_name in systems:
        cells = [sys_name, _fmt(quality[sys_name])]
        for e in entries:
            m = e.per_system.get(sys_name)
            cells.append("n/a" if m is None or not m.ok else f"{_fmt(m.value)} (n={m.n})")
        rows.append(cells)
    out = [
        "## Per-system correlation P_i (Spearman with humans, per system)",
        "",
        "Systems ordered by human quality Q_i (mean human score); the meta-correlation M = corr(Q_i, P_i).",
        "",
        *md_table(
            ["system", "Q_i", *(e.name for e in entries)], rows, ["left", *["right"] * (len(entries) + 1)]
        ),
        "",
    ]
    return out


def _per_pair(result: CompareResult) -> list[str]:
    """Position consistency and preference fairness per system pair, for pairwise entries that have them."""
    tables = pair_tables(result)
    if not tables:
        return []
    out = [
        "## Per system pair",
        "",
        "Position consistency (↑) and preference fairness (→ 0; < 0 favours the first position, > 0 the "
        "second) within each pair of systems, with 95% bootstrap intervals (Shi et al. 2024).",
        "",
        "| entry | pair | n | position consistency | preference fairness | primacy / recency |",
        "|---|---|---:|---|---|---|",
    ]

    def cell(row: dict[str, Any] | None) -> str:
        if row is None or row.get("value") is None or not math.isfinite(row["value"]):
            return "n/a"
        ci = f" [{_fmt(row['ci_low'])}, {_fmt(row['ci_high'])}]" if row.get("ci_low") is not None else ""
        return _fmt(row["value"]) + ci

    for name, t in tables.items():
        pc, pf = t.get("position-consistency", {}), t.get("preference-fairness", {})
        for pair in dict.fromkeys([*pc, *pf]):
            a, b = pc.get(pair), pf.get(pair)
            n = (a or b or {}).get("n", 0)
            split = f"{(b or a or {}).get('primacy', '')} / {(b or a or {}).get('recency', '')}"
            out.append("| " + " | ".join(md_cell(c) for c in (name, pair, n, cell(a), cell(b), split)) + " |")
    out.append("")
    return out


def _test_names(result: CompareResult) -> str:
    """The tests that gave the comparisons' p-values, in words (older results.json: the test compare then
    ran)."""
    default = "paired sign-flip permutation" if result.task == "pairwise" else "paired permutation"
    names = list(
        dict.fromkeys(e.comparison.test or default for e in result.entries if e.comparison is not None)
    )
    return " or ".join(f"{n} test" for n in names)


def _comparisons(result: CompareResult) -> list[str]:
    rows = [e for e in result.entries if e.comparison is not None]
    if not rows:
        return []
    first = result.entries[0].name
    what, short = (
        ("Accuracy against the gold preferences", "Δ accuracy")
        if result.task == "pairwise"
        else ("Item-level Spearman", "Δ Spearman")
    )
    out = [
        f"## Against {first}",
        "",
        f"{what} of each entry minus that of the first entry, on items both scored; paired "
        f"bootstrap interval and two-sided p from the {_test_names(result)} (column 'test'). The "
        "permutation test swaps the two entries' values on each item, which is valid only when they "
        "answer in one currency; otherwise p comes from the interval's own paired resamples.",
        "",
        f"| entry | {short} | 95% CI | p | test | n | note |",
        "|---|---:|---|---:|---|---:|---|",
    ]
    for e in rows:
        c = e.comparison
        assert c is not None
        ci = f"[{_fmt(c.ci_low)}, {_fmt(c.ci_high)}]" if c.ci_low is not None else ""
        p = f"{c.p_value:.3g}" if c.p_value is not None and math.isfinite(c.p_value) else "n/a"
        if e.identical_to:
            out.append(
                "| "
                + " | ".join(
                    md_cell(x)
                    for x in (e.name, "—", "", "", "", c.n, f"identical to {e.identical_to} by construction")
                )
                + " |"
            )
            continue
        note = plain_reason(c.reason) if c.reason else ""
        if c.test_reason:
            note = "; ".join(filter(None, [note, f"bootstrap test: {c.test_reason}"]))
        if c.decided_n is not None:
            note = "; ".join(
                filter(
                    None,
                    [
                        note,
                        f"abstentions counted not correct; on the {c.decided_n} items both "
                        f"decided: {_fmt(c.decided_observed)}",
                    ],
                )
            )
        out.append(
            "| "
            + " | ".join(md_cell(x) for x in (e.name, _fmt(c.observed), ci, p, c.test or "", c.n, note))
            + " |"
        )
    out.append("")
    return out


def _plots_section(result: CompareResult, plots: Sequence[str] | None = None) -> list[str]:
    names = planned_plots(result) if plots is None else [n for n in plots if n in PLOT_CAPTIONS]
    if not names:
        return []
    out = ["## Plots", ""]
    for name in names:
        out += [f"![{PLOT_CAPTIONS[name]}]({name})", ""]
    return out


def _demos_section(result: CompareResult) -> list[str]:
    """The demonstrations each entry with a demo step shows (for a fitted entry: what fitting chose)."""
    blocks = [(e, chosen_demos(e)) for e in result.entries]
    blocks = [(e, lines) for e, lines in blocks if lines]
    if not blocks:
        return []
    out = [
        "## Demos",
        "",
        "The demonstrations each entry's prompts show (for a fitted entry, the ones fitting chose "
        "from the training items; the texts are cut at 70 characters).",
        "",
    ]
    for e, lines in blocks:
        out += [
            f"### {e.name}",
            "",
            *(f"- {line}" if not line.startswith("  ") else line for line in lines),
            "",
        ]
    return out
