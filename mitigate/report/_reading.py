"""What a reader of a comparison is told in words, the same in both reports: per entry whether it differs from
the first (:func:`bottom_lines`), what limits the reading (:func:`warnings`), why a value is n/a
(:func:`plain_reason`), the demonstrations each entry shows (:func:`chosen_demos`)."""

from __future__ import annotations

import math
import re
from typing import Any

from mitigate.measures import MEASURES, MIN_DOCUMENTS, MIN_ITEMS
from mitigate.report._results import CompareResult, Comparison, EntryResult

_FIRST_SECOND: dict[str, tuple[str, str]] = {
    "bias-score": (
        "the likelihood LS is the same for every item",
        "the judge-minus-human gap US is the same for every item",
    ),
    "length-spearman": ("the judge gave every item the same score", "every output has the same length"),
    "meta-spearman": ("every system has the same human quality", "every system has the same P_i"),
}
"""Measure key -> what a constant first / second input of its correlation means."""

_DEFAULT_FIRST_SECOND = (
    "the judge gave every item the same score",
    "the human labels are all equal on these items",
)


_PLAIN = {
    "no judgment carries scores under 2 or more perturbations in meta['perturbations']": "no item was scored "
    "under 2 or more perturbed guidelines (only a pipeline with perturbed-demos or perturbed-guidelines "
    "scores them)",
    "no judgment holds verdicts in both orders (meta['orders'])": "no pair was judged in both orders (add "
    "position-swap, or record both orders)",
}
"""Internal reasons -> what a reader is told."""


def plain_reason(reason: str | None, key: str = "") -> str:
    """Why a value of measure ``key`` is n/a, with internal names (``meta['x']``, "first input") replaced."""
    if not reason:
        return "undefined"
    first, second = _FIRST_SECOND.get(key, _DEFAULT_FIRST_SECOND)
    for which, what in (("first", first), ("second", second)):
        reason = reason.replace(
            f"the {which} input is constant, so its correlation is undefined",
            f"{what}, so no correlation can be computed",
        )
    for old, new in _PLAIN.items():
        reason = reason.replace(old, new)
    return re.sub(r"\s*\(?meta\[['\"](\w+)['\"]\]\)?", "", reason)


def _fmt(v: float | None) -> str:
    return "n/a" if v is None or not math.isfinite(v) else f"{v:+.3f}"


def p_text(c: Comparison) -> str:
    """ ", p=0.012" (", bootstrap p=..." when the bootstrap gave it); "" without a p-value."""
    if c.p_value is None or not math.isfinite(c.p_value):
        return ""
    return f", {'bootstrap ' if c.test_reason else ''}p={c.p_value:.3g}"


def bottom_lines(result: CompareResult) -> list[str]:
    """One sentence per entry after the first: does it differ from the first at this ``n``?

    It differs when the 95% interval of the difference excludes 0 and the paired test's p is below 0.05
    (either alone when the other is missing); when the two disagree, or below ``MIN_ITEMS`` items or
    ``MIN_DOCUMENTS`` documents (which the warnings discount), no difference is claimed.
    """
    if len(result.entries) < 2:
        return (
            [f"Only one entry ({result.entries[0].name}): nothing to compare it with."]
            if result.entries
            else []
        )
    ref = result.entries[0].name
    what = (
        "accuracy against the gold preferences"
        if result.task == "pairwise"
        else "item-level Spearman with humans"
    )
    docs = len({it.doc_id for it in result.items if it.doc_id is not None})
    out = []
    for e in result.entries[1:]:
        c = e.comparison
        if c is None or not math.isfinite(c.observed):
            why = plain_reason(c.reason if c is not None else "not compared")
            out.append(f"{e.name}: cannot be compared with {ref} ({why}).")
            continue
        has_ci = c.ci_low is not None and c.ci_high is not None
        ci = f" [{_fmt(c.ci_low)}, {_fmt(c.ci_high)}]" if has_ci else ""
        diff = f"Δ {what} {_fmt(c.observed)}{ci}{p_text(c)}, n={c.n}"
        has_p = c.p_value is not None and math.isfinite(c.p_value)
        ci_side = 0
        if c.ci_low is not None and c.ci_high is not None:
            ci_side = 1 if c.ci_low > 0 else -1 if c.ci_high < 0 else 0
        p_side = (1 if c.observed > 0 else -1) if has_p and c.p_value is not None and c.p_value < 0.05 else 0
        # a difference is claimed only when every test at hand says so: the interval excludes 0 and p < 0.05
        verdict = ci_side if has_ci and (not has_p or p_side == ci_side) else (p_side if not has_ci else 0)
        better, worse = (
            ("is more accurate than", "is less accurate than")
            if result.task == "pairwise"
            else ("agrees with humans better than", "agrees with humans worse than")
        )
        few = [
            f"{c.n} items" if c.n < MIN_ITEMS else "",
            f"{docs} document{'s' if docs != 1 else ''}" if 0 < docs < MIN_DOCUMENTS else "",
        ]
        if any(few):
            out.append(
                f"{e.name}: no claim against {ref} at this n ({diff}; "
                f"{' from '.join(f for f in few if f)} are too few: a difference is claimed from "
                f"{MIN_ITEMS} items and {MIN_DOCUMENTS} documents "
                "on)."
            )
            continue
        if verdict:
            out.append(f"{e.name} {better if verdict > 0 else worse} {ref} at this n ({diff}).")
            continue
        if has_ci and ci_side != 0:
            basis = (
                f"the interval excludes 0 but the {'bootstrap' if c.test_reason else 'permutation'} "
                "test does not reject it: not established"
            )
        elif has_ci and p_side != 0:
            basis = "p < 0.05 but the interval includes 0: not established"
        else:
            basis = (
                "the interval includes 0"
                if has_ci
                else "p >= 0.05"
                if has_p
                else "no interval or test was computed"
            )
        out.append(f"{e.name} does not differ measurably from {ref} at this n ({diff}; {basis}).")
    return out


def _answers(e: EntryResult, result: CompareResult) -> tuple[Any, ...]:
    return tuple(e.verdicts()) if result.task == "pairwise" else tuple(e.scores(result.criterion))


def _zero_width(low: float | None, high: float | None) -> bool:
    return low is not None and math.isfinite(low) and low == high


def warnings(result: CompareResult) -> list[str]:
    """What limits the reading of this comparison, one sentence each (empty when nothing does)."""
    out: list[str] = []
    n = len(result.items)
    if n < MIN_ITEMS:
        out.append(
            f"Only {n} items were judged: with fewer than {MIN_ITEMS} items the intervals are wide "
            "and unstable; read differences as anecdotes, not findings."
        )
    docs = {it.doc_id for it in result.items if it.doc_id is not None}
    if docs and len(docs) < MIN_DOCUMENTS:
        out.append(
            f"The items come from {len(docs)} document{'s' if len(docs) != 1 else ''}: per-document "
            f"and system-level correlations and #CP rest on fewer than {MIN_DOCUMENTS} documents, and "
            "their intervals say little (judge more documents with a larger --limit)."
        )
    zero = {  # entry -> its measures whose interval has zero width
        e.name: keys
        for e in result.entries
        if (keys := [k for k, m in e.measures.items() if m.ok and _zero_width(m.ci_low, m.ci_high)])
    }
    if zero:
        labels = list(
            dict.fromkeys(MEASURES[k].label if k in MEASURES else k for keys in zero.values() for k in keys)
        )
        counts = ", ".join(f"{name} {len(keys)}" for name, keys in zero.items())
        out.append(
            f"Intervals of zero width ({counts}: "
            f"{', '.join(labels[:8])}{', ...' if len(labels) > 8 else ''}): "
            "every resample gave the same value because there is too little to resample, not because "
            "the value is certain."
        )
    if result.task == "score":
        hs = result.human_scale
        for e in result.entries:
            if (e.scale.min, e.scale.max) != (hs.min, hs.max):
                out.append(
                    f"{e.name} answers on {e.scale.describe()} but the human labels are on "
                    f"{hs.describe()}: "
                    "correlations are unaffected, but score distributions, shares of the scale and "
                    "score differences are not on the same footing."
                )
    seen: dict[tuple[Any, ...], str] = {}
    for e in result.entries:
        answers = _answers(e, result)
        if not any(a is not None for a in answers):
            continue
        if answers in seen:
            out.append(
                f"{e.name} gave exactly the same answer as {seen[answers]} on every item: the two "
                "entries may be the same judge, and their difference is 0 by construction."
            )
        else:
            seen[answers] = e.name
    return out


def _demo_text(demo: dict[str, Any], width: int = 70) -> str:
    item = demo.get("item") or {}
    label = demo.get("verdict") if demo.get("verdict") is not None else demo.get("score")
    if isinstance(label, dict):
        label = ", ".join(
            f"{k} {v:g}" if isinstance(v, int | float) else f"{k} {v}" for k, v in label.items()
        )
    elif isinstance(label, int | float):
        label = f"{label:g}"
    text = " ".join(str(item.get("output") or "").split())
    if len(text) > width:
        text = text[: width - 1] + "…"
    shown = " under a perturbed guideline" if demo.get("guideline") else ""
    return f"{item.get('id', '?')} (shown as {label}{shown}): {text}"


def _walk_demos(spec: Any) -> list[tuple[str, Any]]:
    """(step name, chosen demos or None when chosen per item) for every demo step in a pipeline spec."""
    found: list[tuple[str, Any]] = []
    if isinstance(spec, dict):
        params = spec.get("params")
        if isinstance(params, dict) and "demos_" in params:
            per_item = (
                params.get("demos_") is None
                and params.get("selector") is not None
                and not params.get("demos")
            )
            demos = None if per_item else (params.get("demos_") or params.get("demos") or [])
            found.append((str(spec.get("name", "demos")), demos))
        for v in spec.values():
            found += _walk_demos(v)
    elif isinstance(spec, list):
        for v in spec:
            found += _walk_demos(v)
    return found


def chosen_demos(e: EntryResult) -> list[str]:
    """Lines saying which demonstrations the entry's demo steps show (fitted entries: what fitting chose)."""
    out = []
    for name, demos in _walk_demos(e.spec):
        if demos is None:
            out.append(f"{name}: chosen for each item when it is judged (no fixed set)")
            continue
        out.append(f"{name}: {len(demos)} demo{'s' if len(demos) != 1 else ''}")
        out += [f"  - {_demo_text(d)}" for d in demos if isinstance(d, dict)]
    return out
