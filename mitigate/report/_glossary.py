"""The report's glossary: one plain line for every measure and term a report shows.

Each built-in reported measure (``mitigate list measures``) has its line here, keyed by its ``results.json``
name (tests/harness/test_reports_read.py fails for one without); a plugin's measure is explained by the first
paragraph of its docstring, so a report never shows a column a reader must guess.
"""

from __future__ import annotations

import inspect

from mitigate.measures import measure_table
from mitigate.report._results import CompareResult

MEASURE_LINES: dict[str, str] = {
    "spearman-item": "rank correlation of the judge's scores with the human scores, over every item "
    "(1: the same order; 0: unrelated).",
    "kendall-item": "as Spearman item, with Kendall's tau-b (the balance of item pairs ordered alike "
    "and ordered apart).",
    "pearson-item": "linear correlation of the judge's scores with the human scores, over every item.",
    "spearman-document": "Spearman computed among the outputs of each document (source text), averaged "
    "over documents: does the judge rank the summaries of one article as the humans do?",
    "kendall-document": "as Spearman per-doc, with Kendall's tau-b.",
    "pearson-document": "as Spearman per-doc, with Pearson's linear correlation.",
    "spearman-system": "Spearman between each system's mean judge score and its mean human score: does the "
    "judge rank the systems as the humans do?",
    "kendall-system": "as Spearman system, with Kendall's tau-b.",
    "pearson-system": "as Spearman system, with Pearson's linear correlation.",
    "correct-preferences": "of all pairs of systems, how many the judge orders "
    "as the humans do, by mean score (Shen et al. 2023).",
    "meta-spearman": "Spearman between each system's human quality Q_i and the judge's agreement "
    "on that system P_i; far from 0, the judge is more reliable on good (M > 0) or bad (M < 0) systems "
    "(Shen et al. 2023).",
    "bradley-terry": "Kendall's tau between the system ranking fitted from the judge's "
    "verdicts and the one fitted from the gold preferences (Bradley-Terry abilities).",
    "perturbation-consistency": "share of items given the same score under every rewording of "
    "the guideline; a judge that does not depend on wording scores 1.",
    "scale-coverage": "share of the scale's points the judge used at least once (Stureborg et al. 2024).",
    "score-entropy": "how evenly the judge spreads its scores over the scale, in bits (0: "
    "one score for everything).",
    "round-number-excess-5": "how much more often the judge answers a multiple of 5 "
    "than an even spread would (on scales of 10 points or more).",
    "bias-score": "Spearman between the likelihood the model gives an output (LS) and how far "
    "the judge's score is above the human one (US); above 0, the judge over-rates text it finds likely "
    "(Ohi et al. 2024).",
    "preference-accuracy": "share of pairs where the judge prefers the output the gold label prefers.",
    "accuracy-both-orders": "judge's verdict accuracy over both presentation orders, each counted once.",
    "swap-gain": "accuracy of the position-swapped verdict minus that of the original order.",
    "longer-preference": "how often the judge prefers the longer output, minus one "
    "half (0: length plays no part).",
    "preference-fairness": "how much the judge favours the first or the second position "
    "over both orders (0: neither; Shi et al. 2024).",
    "position-consistency": "share of pairs given the same verdict in both orders (Shi et al. 2024).",
    "repetition-stability": "share of repeated verdicts on one pair that agree (Shi et al. 2024).",
    "preference-cycle-rate": "share of a question's triples of responses whose "
    "verdicts go round in a circle (A over B over C over A), so no ranking fits them.",
    "panel-effective-votes": "how many independent judges a panel's votes are worth, given "
    "how their errors coincide (Kish's effective number).",
    "panel-effective-votes-score": "how many independent judges a panel of scores is worth, "
    "given how its members' errors against the human scores coincide.",
    "member-confusion": "the lowest balanced accuracy among a panel's "
    "members, each estimated without gold (Dawid and Skene 1979).",
    "alpha-across-samples": "Krippendorff's alpha across repeated samples of the judge on each "
    "item (1: every sample the same; 0: no better than chance).",
    "length-spearman": "Spearman between the judge's score and the output's length in words "
    "(0: length plays no part).",
}
"""One line per reported measure, by its ``results.json`` name."""

TERMS: dict[str, str] = {
    "entry": "one judge compared: the plain judge, a pipeline of mitigations on it, or released judgments.",
    "n ok": "items the entry scored: a score was read from its answer and no LM call failed.",
    "parse failures": "answers no score could be read from (each kept with its raw text in the per-item "
    "view).",
    "errors": "items whose LM call failed for good, after its retries.",
    "95% CI": "the middle 95% of the values over bootstrap resamples of the items.",
    "n": "the items a measure or a difference used.",
    "failed": "the items a measure dropped for a missing score.",
    "of all": "the value with the dropped items counted as failures.",
    "Δ": "Δ ... (vs first): an entry's value minus the first entry's, on the items both scored, with a "
    "paired interval.",
    "p": "the chance of a difference at least this large if the two judges were alike (two-sided).",
    "test": "how p was computed: a permutation test, or the interval's own paired resamples.",
    "system": "the model or method that wrote the judged outputs.",
    "P_i": "the judge's Spearman with the humans on system i alone.",
    "Q_i": "the mean human score of system i.",
    "measure, direction, value, note": "in Every measure: a measure, its better direction (↑ higher, ↓ "
    "lower, → 0 closer to 0), its value, and why it is missing or how to read it.",
}
"""The report's other terms and column names, one line each (by the name the report shows)."""


def _line(name: str, cls: type) -> str:
    """A measure's line: its own here, else (a plugin's) the first paragraph of its docstring."""
    if name in MEASURE_LINES:
        return MEASURE_LINES[name]
    return " ".join(inspect.cleandoc(cls.__doc__ or "").partition("\n\n")[0].split()) or "(undocumented)"


def glossary_section(result: CompareResult) -> list[str]:
    """``## Glossary``: a line for each measure the report shows, then the terms of its tables."""
    shown = {k for e in result.entries for k in e.measures}
    table = measure_table(result.task)
    lines = [f"- **{cls.info.label}**: {_line(k, cls)}" for k, cls in table.items() if k in shown]
    return ["", "## Glossary", "", *lines, *(f"- **{term}**: {line}" for term, line in TERMS.items())]
