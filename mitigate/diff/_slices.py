"""The slices of a diff: the same headline measure for A and B within each system, document, output-length
quartile and probe, a view for finding where a change hit (no p-value)."""

from __future__ import annotations

import math
from collections.abc import Hashable, Iterator, Sequence
from typing import Any

import numpy as np

from mitigate.data import Item
from mitigate.diff._report import SliceKind, SliceRow
from mitigate.judge import Judgment
from mitigate.measures import spearman, verdicts_as_text, word_count


def finite(v: float | None) -> float | None:
    """``v`` as a float, or None when it is missing or not finite."""
    return float(v) if v is not None and math.isfinite(v) else None


def _length_buckets(items: Sequence[Item]) -> list[str]:
    words = np.array([word_count(it.output) for it in items], dtype=float)
    if len(words) < 8:
        return ["all lengths"] * len(items)
    edges = np.unique(np.percentile(words, [25, 50, 75]))
    bins = np.digitize(words, edges, right=True)
    return [f"{words[bins == b].min():g}-{words[bins == b].max():g} words" for b in bins]


def _slice_order(kind: str, labels: Sequence[Hashable | None]) -> list[Hashable | None]:
    """The slice keys in the order a reader expects: length buckets shortest first, others as first met."""
    keys = list(dict.fromkeys(labels))
    if kind == "length":
        keys.sort(key=lambda k: float(str(k).split("-", 1)[0]) if str(k)[:1].isdigit() else -1.0)
    return keys


def _slice_groups(items: Sequence[Item], pairwise: bool) -> Iterator[tuple[SliceKind, str, list[int]]]:
    """(kind, key, item positions) of every slice by system (pair), document and length bucket, where every
    item has a key and there are two keys or more."""
    keys: dict[SliceKind, Sequence[Hashable | None]] = {
        "system": [f"{it.system} vs {it.system_b}" if it.system else None for it in items]
        if pairwise
        else [it.system for it in items],
        "document": [it.doc_id for it in items],
        "length": _length_buckets(items),
    }
    for kind, labels in keys.items():
        if any(v is None for v in labels) or len(set(labels)) < 2:
            continue
        for key in _slice_order(kind, labels):
            yield kind, str(key), [k for k, v in enumerate(labels) if v == key]


def slices_scores(items: Sequence[Item], sa: np.ndarray, sb: np.ndarray, criterion: str) -> list[SliceRow]:
    """Each slice's item-level Spearman with the humans for A and B, the items moved and the mean move."""
    human = np.array([it.human.get(criterion, math.nan) for it in items], dtype=float)
    rows: list[SliceRow] = []
    for kind, key, idx in _slice_groups(items, pairwise=False):
        x, y, h = sa[idx], sb[idx], human[idx]
        ra, rb = finite(spearman(x, h)), finite(spearman(y, h))
        both = np.isfinite(x) & np.isfinite(y)
        moved = int((both & (np.abs(y - x) > 1e-9)).sum() + (np.isfinite(x) != np.isfinite(y)).sum())
        rows.append(
            SliceRow(
                kind=kind,
                key=key,
                criterion=criterion,
                measure="spearman",
                n=len(idx),
                a=ra,
                b=rb,
                delta=None if ra is None or rb is None else rb - ra,
                changed=moved,
                mean_move=finite(float((y - x)[both].mean())) if both.any() else None,
            )
        )
    return rows


def slices_pairwise(
    items: Sequence[Item], ja: Sequence[Judgment], jb: Sequence[Judgment], criterion: str
) -> list[SliceRow]:
    """Each slice's accuracy against the gold preferences for A and B, and the verdicts that flipped."""
    va, vb = verdicts_as_text(ja), verdicts_as_text(jb)
    gold = [it.preference.get(criterion) for it in items]
    rows: list[SliceRow] = []
    for kind, key, group in _slice_groups(items, pairwise=True):
        idx = [k for k in group if gold[k] is not None]
        if not idx:
            continue
        acc_a = sum(va[k] == gold[k] for k in idx) / len(idx)
        acc_b = sum(vb[k] == gold[k] for k in idx) / len(idx)
        rows.append(
            SliceRow(
                kind=kind,
                key=key,
                criterion=criterion,
                measure="accuracy",
                n=len(idx),
                a=acc_a,
                b=acc_b,
                delta=acc_b - acc_a,
                changed=sum(va[k] != vb[k] for k in idx),
            )
        )
    return rows


def probe_slices(criterion: str, reports: tuple[Any, Any]) -> list[SliceRow]:
    """Probe slices from the two judges' bias-battery reports (:class:`~mitigate.probes.ProbeReport`):
    each probe's robustness rate for A and B (and the noise floor as the row ``rerun``)."""
    ra, rb = reports
    by_b = {row.probe: row for row in rb.rows}
    out = [
        SliceRow(
            kind="probe",
            key="rerun (noise floor)",
            criterion=criterion,
            measure="flip rate",
            n=ra.noise.n,
            a=finite(ra.noise.value),
            b=finite(rb.noise.value),
            delta=finite(rb.noise.value - ra.noise.value),
        )
    ]
    for row in ra.rows:
        other = by_b.get(row.probe)
        if other is None:
            continue
        x, y = row.effect.robustness, other.effect.robustness
        out.append(
            SliceRow(
                kind="probe",
                key=row.probe,
                criterion=criterion,
                measure="robustness rate",
                n=min(x.n, y.n),
                a=finite(x.value),
                b=finite(y.value),
                delta=finite(y.value - x.value),
                changed=int(round((1 - y.value) * y.n)) if y.ok else 0,
            )
        )
    return out
