"""Two inconsistencies of a judge that gives both scores and pairwise verdicts (Wang et al. 2025, TrustJudge):
pairs whose relation (">", "<", "=") differs from the one their scores imply (:func:`score_pair_conflict`),
and sets of responses to one question whose relations admit no ranking with ties
(:func:`transitivity_violations`, TrustJudge's non-transitivity ratio).
"""

from __future__ import annotations

import itertools
import math
from collections import defaultdict
from collections.abc import Hashable, Mapping, Sequence
from typing import Literal

import numpy as np

from mitigate.errors import DataError
from mitigate.measures._base import EntryData, Measure, reported_measure, share, undefined
from mitigate.measures._stats import bootstrap_ci

Relation = Literal[">", "=", "<"]
_FLIP: dict[str, Relation] = {">": "<", "<": ">", "=": "="}


def preference_verdict(p: Mapping[str, float], tie_margin: float = 0.0) -> Literal["A", "B", "tie"]:
    """The verdict of a pooled preference {"A", "B", "tie"} -> probability: "tie" when the tie is the most
    probable or ``|P(A) - P(B)| <= tie_margin``, else the more probable text."""
    a, b, t = p.get("A", 0.0), p.get("B", 0.0), p.get("tie", 0.0)
    if t > max(a, b) or abs(a - b) <= tie_margin:
        return "tie"
    return "A" if a > b else "B"


def verdict_relation(verdict: str | None) -> Relation | None:
    """A verdict by text ("A" = x preferred, "B", "tie") as the relation of the pair (x, y)."""
    if verdict is None:
        return None
    rel = {"A": ">", "B": "<", "tie": "="}.get(str(verdict))
    if rel is None:
        raise DataError(f"expected a verdict 'A', 'B', 'tie' or None; got {verdict!r}")
    return rel  # type: ignore[return-value]


def both_orders_relation(original: str | None, swapped: str | None) -> Relation | None:
    """TrustJudge's relation from a pair judged in both orders, each verdict by text: ">" only when both
    prefer x ("A"), "<" only when both prefer y, "=" otherwise; None when either is missing."""
    if original is None or swapped is None:
        return None
    if original == swapped == "A":
        return ">"
    if original == swapped == "B":
        return "<"
    return "="


def score_relation(x: float | None, y: float | None, tolerance: float = 0.0) -> Relation | None:
    """The relation two single scores imply: "=" within ``tolerance``, else ">" or "<"; None when either is
    missing."""
    if x is None or y is None or not (math.isfinite(x) and math.isfinite(y)):
        return None
    if abs(x - y) <= tolerance:
        return "="
    return ">" if x > y else "<"


def score_pair_conflict(
    score_x: Sequence[float | None],
    score_y: Sequence[float | None],
    relations: Sequence[Relation | None],
    *,
    tolerance: float = 0.0,
    ci: bool = False,
    n_boot: int = 1000,
    alpha: float = 0.05,
    seed: int = 0,
) -> Measure:
    """The share of pairs whose judged relation ``relations[i]`` of (x_i, y_i) differs from the one their
    scores imply; ``extra`` counts the conflicts by (scores, pairwise) relation."""
    if not len(score_x) == len(score_y) == len(relations):
        raise DataError(
            f"expected equal numbers of x scores, y scores and relations; got {len(score_x)}, "
            f"{len(score_y)}, {len(relations)}"
        )
    hits: list[float] = []
    kinds: defaultdict[str, int] = defaultdict(int)
    failed = 0
    for sx, sy, rel in zip(score_x, score_y, relations, strict=True):
        expected = score_relation(sx, sy, tolerance)
        if expected is None or rel is None:
            failed += 1
            continue
        if rel not in (">", "=", "<"):
            raise DataError(f"expected relations '>', '=', '<' or None; got {rel!r}")
        conflict = rel != expected
        hits.append(float(conflict))
        if conflict:
            kinds[f"scores {expected} / pairwise {rel}"] += 1
    if not hits:
        return undefined("score_pair_conflict", 0, failed, "no pair has both scores and a pairwise relation")
    arr = np.array(hits)
    interval = None
    if ci and len(arr) > 1:
        interval = bootstrap_ci(lambda x: float(np.mean(x)), arr, n_boot=n_boot, alpha=alpha, seed=seed)
    extra = {"tolerance": tolerance, "by_kind": dict(kinds)}
    return share("score_pair_conflict", arr, failed, interval=interval, extra=extra)


_WEAK_ORDERS = list(itertools.product(range(3), repeat=3))


def _rel(a: int, b: int) -> Relation:
    return ">" if a < b else "<" if a > b else "="  # rank 0 is the best


def triple_violation(xy: Relation, yz: Relation, xz: Relation) -> Literal["circular", "equivalence"] | None:
    """How the relations of (x, y), (y, z) and (x, z) contradict every ranking with ties; None when some
    ranking fits.

    "equivalence": two ties and one strict relation (x = y = z, x > z); "circular": otherwise.
    """
    for rx, ry, rz in _WEAK_ORDERS:
        if _rel(rx, ry) == xy and _rel(ry, rz) == yz and _rel(rx, rz) == xz:
            return None
    return "equivalence" if [xy, yz, xz].count("=") == 2 else "circular"


def transitivity_violations(
    relations: Mapping[tuple[Hashable, Hashable, Hashable], Relation | None],
    *,
    k: int = 3,
    ci: bool = False,
    n_boot: int = 1000,
    alpha: float = 0.05,
    seed: int = 0,
) -> Measure:
    """TrustJudge's non-transitivity ratio: the share of ``k``-sets of one question's responses holding a
    contradiction.

    ``relations`` maps (question, x, y) to the judged relation of (x, y) (both orientations given
    must agree, else a DataError). A set counts when every pair in it was judged; ``n_failed``
    counts the sets left out. ``extra`` holds the contradicting triples by kind ("circular",
    "equivalence"). ``ci``: bootstrap over questions.
    """
    if k < 3:
        raise DataError(f"expected k >= 3 responses per set (a contradiction needs three); got {k}")
    table: dict[Hashable, dict[tuple[Hashable, Hashable], Relation]] = defaultdict(dict)
    for (q, x, y), rel in relations.items():
        if rel is None or x == y:
            continue
        if rel not in (">", "=", "<"):
            raise DataError(f"expected relations '>', '=', '<' or None; got {rel!r} for {(q, x, y)!r}")
        old = table[q].get((y, x))
        if old is not None and _FLIP[old] != rel:
            raise DataError(
                f"question {q!r}: the pair ({x!r}, {y!r}) is judged {rel!r} one way and {old!r} "
                "the other; expected one relation per pair (reconcile the two orders first)"
            )
        table[q][(x, y)], table[q][(y, x)] = rel, _FLIP[rel]

    per_question: list[tuple[int, int]] = []
    kinds = {"circular": 0, "equivalence": 0}
    skipped = 0
    for pairs in table.values():
        items = sorted({s for pair in pairs for s in pair}, key=str)
        bad = total = 0
        for group in itertools.combinations(items, k):
            rels = {(x, y): pairs.get((x, y)) for x, y in itertools.combinations(group, 2)}
            if any(r is None for r in rels.values()):
                skipped += 1
                continue
            total += 1
            found = [
                triple_violation(rels[(x, y)], rels[(y, z)], rels[(x, z)])  # type: ignore[arg-type]
                for x, y, z in itertools.combinations(group, 3)
            ]
            if any(found):
                bad += 1
                for f in found:
                    if f:
                        kinds[f] += 1
        if total:
            per_question.append((bad, total))
    name = "transitivity_violations"
    if not per_question:
        return undefined(name, 0, skipped, f"no question has {k} responses with every pair among them judged")
    bad_arr = np.array([b for b, _ in per_question], dtype=float)
    tot_arr = np.array([t for _, t in per_question], dtype=float)
    interval = None
    if ci and len(per_question) > 1:
        interval = bootstrap_ci(
            lambda b, t: float(np.sum(b) / np.sum(t)), bad_arr, tot_arr, n_boot=n_boot, alpha=alpha, seed=seed
        )
    hits = np.concatenate([np.r_[np.ones(b), np.zeros(t - b)] for b, t in per_question])
    extra = {"k": k, "contradicting_triples": kinds, "questions": len(per_question)}
    return share(name, hits, skipped, interval=interval, extra=extra)


@reported_measure(
    "preference-cycle-rate",
    "preference cycles (NTR3)",
    "lower",
    "consistency",
    paper="Wang et al. 2025 (TrustJudge)",
    task="pairwise",
    on_humans=True,
)
def _preference_cycle_rate(entry: EntryData) -> Measure:
    """Share of a question's response triples whose verdicts admit no ranking (TrustJudge's NTR, k=3).

    share of triples of one question's responses (doc_id; system, system_b), every pair judged, whose
    verdicts contradict every ranking with ties; needs round-robin items.
    """
    items = entry.items
    if not items or any(i.doc_id is None or i.system is None or i.system_b is None for i in items):
        why = "the items do not all name their question (doc_id) and both responses (system, system_b)"
        return undefined("transitivity_violations", 0, len(items), why)
    rels: dict[tuple[Hashable, Hashable, Hashable], Relation | None] = {
        (i.doc_id, i.system, i.system_b): verdict_relation(v)
        for i, v in zip(items, entry.verdicts, strict=True)
    }
    m = transitivity_violations(rels, **entry.ci)
    return m.model_copy(update={"name": "preference-cycle-rate"})
