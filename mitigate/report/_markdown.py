"""``report.md``: a comparison as markdown (docs/report.md).

It opens with a bottom line per entry and warnings (:mod:`mitigate.report._reading`), then accuracy and bias
side by side in one table (a column's best value in bold; the header says which direction is better; every
cell escaped), notes for values that could not be computed, per-measure details, per-system and per-pair
tables, the comparison against the first entry, the demos and the plots that were written. Columns, labels
and directions come from the registered measures of the comparison's task.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from mitigate.measures import MEASURES, Measure, MeasureInfo, measure_table
from mitigate.probes import probe_section
from mitigate.report._glossary import glossary_section
from mitigate.report._plots import PLOT_CAPTIONS, planned_plots
from mitigate.report._reading import bottom_lines, p_text, plain_reason, warnings
from mitigate.report._results import DELTA_ACCURACY_INFO, DELTA_INFO, CompareResult, EntryResult
from mitigate.report._sections import (
    demos_section,
    estimates_section,
    panel_members_section,
    per_pair_section,
    per_system_section,
)
from mitigate.report._tables import best_indices, fmt, md_escape, md_table

_ARROWS = {"higher": "↑ higher", "lower": "↓ lower", "zero": "→ 0"}


def _value_text(key: str, m: Measure) -> str:
    if not m.ok:
        return "n/a"
    if key == "correct-preferences":
        pairs = m.extra.get("n_pairs")
        return f"{m.value:g}/{pairs}" if pairs else f"{m.value:g}"
    return fmt(m.value)


def _of_all_text(m: Measure) -> str:
    """ "0.771 of 419": the share over every item, dropped ones counted against the judge ("" if not a
    share)."""
    return "" if m.of_all is None or not m.ok else f"{fmt(m.of_all)} of {m.n_all}"


def _ci_text(m: Measure, key: str = "") -> str:
    if m.ci_low is None or m.ci_high is None:
        return ""
    if key == "correct-preferences":
        return f" [{m.ci_low:.3g}, {m.ci_high:.3g}]"
    return f" [{fmt(m.ci_low)}, {fmt(m.ci_high)}]"


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


def render_markdown(result: CompareResult, plots: Sequence[str] | None = None) -> str:
    """The report as markdown (the same results give the same text); ``plots`` names the plot files written
    beside it (None: the ones :func:`render_plots` would write), and only those are linked."""
    lines = _summary_lines(result)
    lines += _details(result)
    lines += per_system_section(result)
    lines += per_pair_section(result)
    lines += panel_members_section(result)
    lines += _comparisons(result)
    lines += demos_section(result)
    lines += ["", *probe_section([(e.name, e.probes) for e in result.entries if e.probes])]
    lines += _plots_section(result, plots)
    lines += glossary_section(result)
    return md_escape("\n".join(lines) + "\n")  # names and texts from the user never become markup


def render_summary(result: CompareResult) -> str:
    """The report's opening, up to its table of every measure (what ``mitigate compare`` prints)."""
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
    delta_info = DELTA_ACCURACY_INFO if result.task == "pairwise" else DELTA_INFO
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
    best = {
        k: set()
        if k in unsigned
        else best_indices([e.measures[k].value for e in result.entries], MEASURES[k].direction)
        for k in cols
    }
    best_delta = best_indices(
        [
            math.nan if e.identical_to or e.comparison is None else e.comparison.observed
            for e in result.entries
        ],
        delta_info.direction,
    )
    notes: list[str] = []
    rows: list[list[str]] = []
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
                text = fmt(c.observed)
                if i in best_delta:
                    text = f"**{text}**"
                ci = f" [{fmt(c.ci_low)}, {fmt(c.ci_high)}]" if c.ci_low is not None else ""
                if not math.isfinite(c.observed):
                    notes.append(f"- {e.name} / {delta_info.label}: {plain_reason(c.reason)}")
                decided = (
                    f"; decided items only: {fmt(c.decided_observed)} (n={c.decided_n})"
                    if c.decided_n is not None
                    else ""
                )
                cells.append(text + ci + p_text(c) + decided)
        rows.append(cells)
    refs = {k: r for k in cols if (r := result.human.get(k)) is not None and r.ok}
    if refs:
        name = (
            "gold preferences (reference)"
            if result.task == "pairwise"
            else f"humans (reference, {result.human_scale.describe()})"
        )
        cells = [f"*{_value_text(k, refs[k])}*{_ci_text(refs[k])}" if k in refs else "" for k in cols]
        rows.append([name, "", "", "", *cells, *([""] if has_delta else [])])
    lines += md_table(head, rows, ["left"] + ["right"] * (len(head) - 1))
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
    lines += estimates_section(result)
    return lines


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
        ]
        rows = [
            [
                *((info.label, _ARROWS[info.direction]) if (info := MEASURES.get(k)) else (k, "")),
                _value_text(k, m),
                _ci_text(m, k).strip(),
                m.n,
                m.n_failed,
                _of_all_text(m),
                plain_reason(m.reason, k) if m.reason else "",
            ]
            for k, m in e.measures.items()
        ]
        header = ["measure", "direction", "value", "95% CI", "n", "failed", "of all", "note"]
        out += [
            *md_table(header, rows, ["left", "left", "right", "left", "right", "right", "right", "left"]),
            "",
        ]
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
    ]
    cells: list[list[Any]] = []
    for e in rows:
        c = e.comparison
        assert c is not None
        if e.identical_to:
            cells.append([e.name, "—", "", "", "", c.n, f"identical to {e.identical_to} by construction"])
            continue
        ci = f"[{fmt(c.ci_low)}, {fmt(c.ci_high)}]" if c.ci_low is not None else ""
        p = f"{c.p_value:.3g}" if c.p_value is not None and math.isfinite(c.p_value) else "n/a"
        notes = [
            plain_reason(c.reason) if c.reason else "",
            f"bootstrap test: {c.test_reason}" if c.test_reason else "",
            f"abstentions counted not correct; on the {c.decided_n} items both "
            f"decided: {fmt(c.decided_observed)}"
            if c.decided_n is not None
            else "",
        ]
        cells.append([e.name, fmt(c.observed), ci, p, c.test or "", c.n, "; ".join(filter(None, notes))])
    header = ["entry", short, "95% CI", "p", "test", "n", "note"]
    return [*out, *md_table(header, cells, ["left", "right", "left", "right", "left", "right", "left"]), ""]


def _plots_section(result: CompareResult, plots: Sequence[str] | None = None) -> list[str]:
    names = planned_plots(result) if plots is None else [n for n in plots if n in PLOT_CAPTIONS]
    if not names:
        return []
    out = ["## Plots", ""]
    for name in names:
        out += [f"![{PLOT_CAPTIONS[name]}]({name})", ""]
    return out
