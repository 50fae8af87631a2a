"""Diff two judges on the same items: did judge B get worse than judge A, where, and should CI fail?

:func:`diff_judgments` compares judge A's and judge B's judgments of the same items on one criterion
(:class:`~mitigate.diff.DiffReport`): each measure of both (scores: item-level and per-document Spearman with
the humans, length bias, failure rate, mean score; verdicts: accuracy, position consistency, the lean towards
the longer text, failure rate), their difference B - A with a paired percentile bootstrap interval and a
two-sided p (the bootstrap p of the same resamples for the correlations, the paired sign-flip permutation test
for shares and means); every item that changed; and the same comparison within each system, document and
length bucket (slices). When several items share a document the resampling is by document.

A failure (parse failure, abstention, LM error) is never dropped silently: the failure rate counts it,
accuracy counts it as wrong, position consistency as inconsistent, and the correlations and the mean score say
how many items were left out.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Literal

import numpy as np

from mitigate.data import Item
from mitigate.diff._report import Better, Change, DiffMeasure, DiffReport, ItemChange
from mitigate.diff._slices import finite, slices_pairwise, slices_scores
from mitigate.errors import ConfigError
from mitigate.judge import Judgment
from mitigate.measures import (
    Task,
    paired_mean_difference,
    paired_statistic_difference,
    spearman,
    verdict_orders,
    verdicts_as_text,
    word_count,
)
from mitigate.report import score_of
from mitigate.scale import Scale


def clusters_of(items: Sequence[Item]) -> tuple[list[str], str]:
    """The resampling unit of each item and its name: the document when items share documents, else the
    item."""
    docs = [it.doc_id for it in items]
    if docs and all(d is not None for d in docs) and len(set(docs)) < len(docs):
        return [str(d) for d in docs], "documents"
    return [it.id for it in items], "items"


@dataclass(frozen=True)
class _Pairing:
    """What every measure of one diff shares: the criterion, the resampling clusters and their name, the
    resamples and the seed."""

    criterion: str
    clusters: Sequence[str]
    unit: str
    n_boot: int
    n_perm: int
    seed: int
    margins: Mapping[str, float] = field(default_factory=dict)

    def threshold(self, name: str, better: Better) -> float | None:
        """B − A at the measure's margin (``-M`` for higher-is-better, ``+M`` for lower), if it has one."""
        margin = self.margins.get(name)
        return None if margin is None or better == "none" else (-margin if better == "higher" else margin)

    def share(
        self, name: str, a: np.ndarray, b: np.ndarray, *, better: Better, how: str, reason: str | None = None
    ) -> DiffMeasure:
        """A share or mean of per-item values for A and B, its paired difference, interval and sign-flip p."""
        keep = np.isfinite(a) & np.isfinite(b)
        counts: dict[str, Any] = {"n": int(keep.sum()), "dropped": int((~keep).sum()), "better": better}
        if reason is not None or not keep.any():
            return self.undefined(name, how, reason or "no item has a value for both judges", **counts)
        d = paired_mean_difference(b, a, **self._resampled(name, better))
        return self._measure(name, d, delta=finite(d.observed), how=how, **counts)

    def stat(
        self,
        name: str,
        a: np.ndarray,
        b: np.ndarray,
        ref: np.ndarray,
        stat: Callable[[np.ndarray, np.ndarray], float],
        *,
        better: Better,
        how: str,
    ) -> DiffMeasure:
        """``stat(judge, ref)`` for A and B on the items both scored, and a paired cluster bootstrap of the
        difference: p is the two-sided bootstrap p of the same resamples, so p < 0.05 exactly when 0 lies
        outside the 95% interval (a permutation test would assume the judges' scores exchangeable; on
        shifted scales they are not)."""
        keep = np.isfinite(a) & np.isfinite(b) & np.isfinite(ref)
        d = paired_statistic_difference(b, a, ref, stat, test="bootstrap", **self._resampled(name, better))
        return self._measure(
            name,
            d,
            delta=finite(d.observed) if d.ok else None,
            n=d.n,
            dropped=int((~keep).sum()),
            better=better,
            how=how,
            reason=d.reason,
            missing=_undefined(d.a, d.b) if not d.ok and d.n >= 3 else None,
        )

    def undefined(self, name: str, how: str, reason: str, **fields: Any) -> DiffMeasure:
        """The measure ``name`` without a value, and why (``fields``: its counts, another ``unit``)."""
        fields = {"unit": self.unit, **fields}
        return DiffMeasure(
            name=name, criterion=self.criterion, a=None, b=None, delta=None, how=how, reason=reason, **fields
        )

    def _resampled(self, name: str, better: Better) -> dict[str, Any]:
        """How a paired difference on the measure ``name`` resamples, and its margin's threshold."""
        return {
            "clusters": self.clusters,
            "n_boot": self.n_boot,
            "n_perm": self.n_perm,
            "seed": self.seed,
            "threshold": self.threshold(name, better),
        }

    def _measure(self, name: str, d: Any, **fields: Any) -> DiffMeasure:
        """The measure ``name`` from its paired difference ``d`` (what ``paired_*_difference`` returns) and
        the ``fields`` the caller knows."""
        return DiffMeasure(
            name=name,
            criterion=self.criterion,
            a=d.a,
            b=d.b,
            low=d.low,
            high=d.high,
            p=d.p_value,
            unit=self.unit,
            test=d.test,
            margin=self.margins.get(name),
            p_margin=d.p_threshold,
            **fields,
        )


def _undefined(a: float | None, b: float | None) -> Literal["a", "b", "both"] | None:
    """Whose value is undefined (None), when one is."""
    if a is None and b is None:
        return "both"
    return "a" if a is None else "b" if b is None else None


def _lean(x: np.ndarray, _: np.ndarray) -> float:
    x = x[np.isfinite(x)]
    return abs(float(x.mean()) - 0.5) if len(x) else math.nan


def _score_of(j: Judgment, criterion: str) -> float:
    v = None if j.error is not None else score_of(j, criterion)
    return math.nan if v is None else float(v)


def _check_same_items(
    items: Sequence[Item], a: Sequence[Judgment], b: Sequence[Judgment], names: tuple[str, str]
) -> tuple[list[Judgment], list[Judgment]]:
    """Each judge's judgments in item order; ConfigError naming the judge and the items when they do not
    match."""
    ids = [it.id for it in items]
    out = []
    for name, js in zip(names, (a, b), strict=True):
        by_id = {j.item_id: j for j in js}
        missing = [i for i in ids if i not in by_id]
        extra = sorted(set(by_id) - set(ids))
        if missing or extra:
            parts = ([f"no judgment for {len(missing)} items, e.g. {missing[:3]}"] if missing else []) + (
                [f"{len(extra)} judgments of items not compared, e.g. {extra[:3]}"] if extra else []
            )
            raise ConfigError(
                f"expected judge {name!r} to have judged exactly the {len(ids)} items "
                "compared; got " + " and ".join(parts)
            )
        out.append([by_id[i] for i in ids])
    return out[0], out[1]


def _check_on_scale(name: str, values: np.ndarray, scale: Scale, items: Sequence[Item]) -> None:
    """ConfigError naming the judge, its scale and the first off-scale scores when any score lies off it."""
    off = [
        k for k, v in enumerate(values) if math.isfinite(v) and not scale.min - 1e-9 <= v <= scale.max + 1e-9
    ]
    if off:
        shown = ", ".join(f"{items[k].id}: {values[k]:g}" for k in off[:3])
        raise ConfigError(
            f"expected judge {name!r} to score on {scale.describe()} (its declared scale, or the benchmark's "
            f"when it declares none); got {len(off)} of {len(values)} scores off it ({shown}); declare its "
            "scale (and --scale-map linear), or check the file"
        )


def map_scores(values: np.ndarray, source: Scale, target: Scale) -> np.ndarray:
    """Scores moved linearly from ``source``'s range onto ``target``'s (no rounding; NaN stays NaN)."""
    if source.max == source.min:
        raise ConfigError(f"cannot map scores from the one-point scale {source.describe()}")
    return target.min + (values - source.min) * (target.max - target.min) / (source.max - source.min)


def diff_judgments(
    items: Sequence[Item],
    a: Sequence[Judgment],
    b: Sequence[Judgment],
    *,
    criterion: str,
    names: tuple[str, str] = ("A", "B"),
    task: Task | None = None,
    scales: tuple[Scale, Scale] | None = None,
    scale_map: Literal["none", "linear"] = "none",
    n_boot: int = 1000,
    n_perm: int = 2000,
    seed: int = 0,
    margins: Mapping[str, float] | None = None,
) -> DiffReport:
    """Compare judge B with judge A on ``items`` (each judged once by both) on ``criterion``.

    ``task`` is ``score`` or ``pairwise`` (default: pairwise when every item has a second text). ``scales``
    are the judges' answer scales: on different ranges the diff is refused unless ``scale_map="linear"`` maps
    B's scores linearly onto A's range, and a score off its judge's scale is refused. ``n_boot`` bootstrap
    resamples (0: no intervals), ``n_perm`` permutations. ``margins``: measure -> non-inferiority margin (the
    measure then carries the bootstrap p of a difference at the margin, for :func:`gate`).
    """
    items = list(items)
    if not items:
        raise ConfigError("expected at least one item to compare the two judges on; got none")
    ja, jb = _check_same_items(items, a, b, names)
    task = task or ("pairwise" if all(it.pairwise for it in items) else "score")
    clusters, unit = clusters_of(items)
    pairing = _Pairing(criterion, clusters, unit, n_boot, n_perm, seed, dict(margins or {}))
    notes: list[str] = []
    if unit == "documents":
        notes.append(
            f"intervals and bootstrap p resample the {len(set(clusters))} documents, and the "
            "sign-flip tests flip whole documents (several items share a document)"
        )
    if task == "pairwise":
        measures, changes = _pairwise(items, ja, jb, pairing)
        slices = slices_pairwise(items, ja, jb, criterion)
    else:
        sa = np.array([_score_of(j, criterion) for j in ja])
        sb = np.array([_score_of(j, criterion) for j in jb])
        for name, values, scale in zip(names, (sa, sb), scales or (), strict=False):
            _check_on_scale(name, values, scale, items)
        if scales is not None and (scales[0].min, scales[0].max) != (scales[1].min, scales[1].max):
            if scale_map != "linear":
                raise ConfigError(
                    f"judge {names[0]!r} answers on {scales[0].describe()} and {names[1]!r} on "
                    f"{scales[1].describe()}; "
                    "expected the same scale, or a mapping (--scale-map linear maps B's scores "
                    "onto A's range)"
                )
            sb = map_scores(sb, scales[1], scales[0])
            notes.append(
                f"{names[1]}'s scores were mapped linearly from {scales[1].describe()} onto "
                f"{scales[0].describe()}"
            )
        ends = scales[0] if scales is not None else None
        measures, changes = _scores(items, sa, sb, pairing, ends)
        slices = slices_scores(items, sa, sb, criterion)
    return DiffReport(
        a=names[0],
        b=names[1],
        criteria=(criterion,),
        task=task,
        n_items=len(items),
        unit=unit,
        n_units=len(set(clusters)),
        measures=tuple(measures),
        changes=tuple(changes),
        slices=tuple(slices),
        notes=tuple(notes),
    )


def worst_case(values: np.ndarray, human: np.ndarray, ends: tuple[float, float]) -> np.ndarray:
    """``values`` with each failed (NaN) item, where humans labelled it, given the scale end farthest from its
    human score: the lowest score for a human score at or above the humans' median, the highest below it. A
    judge's correlation with the humans then counts each failure against it (abstaining cannot raise it)."""
    out = values.copy()
    labelled = np.isfinite(human)
    if not labelled.any():
        return out
    median = float(np.median(human[labelled]))
    fill = np.where(human >= median, ends[0], ends[1])
    gap = ~np.isfinite(values) & labelled
    out[gap] = fill[gap]
    return out


def _scores(
    items: Sequence[Item], sa: np.ndarray, sb: np.ndarray, p: _Pairing, scale: Scale | None = None
) -> tuple[list[DiffMeasure], list[ItemChange]]:
    criterion = p.criterion
    human = np.array([it.human.get(criterion, math.nan) for it in items], dtype=float)
    words = np.array([word_count(it.output) for it in items], dtype=float)
    seen = np.concatenate([sa[np.isfinite(sa)], sb[np.isfinite(sb)]])
    ends = (
        (scale.min, scale.max)
        if scale is not None
        else (float(seen.min()), float(seen.max()))
        if len(seen)
        else (0.0, 1.0)
    )
    out = [
        p.stat(
            "spearman",
            worst_case(sa, human, ends),
            worst_case(sb, human, ends),
            human,
            spearman,
            better="higher",
            how="item-level Spearman with the human scores on every item humans labelled, each judge's "
            f"failed items counted against it (given the scale end, {ends[0]:g} or {ends[1]:g}, farthest "
            "from the human score)",
        ),
        p.stat(
            "spearman-common",
            sa,
            sb,
            human,
            spearman,
            better="higher",
            how="item-level Spearman with the human scores on the items both judges scored (failures left "
            "out of both: a judge that skips hard items can gain here)",
        ),
        _document_measure(items, sa, sb, human, p),
        p.stat(
            "length-bias",
            sa,
            sb,
            words,
            lambda x, w: abs(spearman(x, w)),
            better="lower",
            how="|Spearman(score, output length in words)| on the items both judges scored",
        ),
        p.share(
            "failure-rate",
            (~np.isfinite(sa)).astype(float),
            (~np.isfinite(sb)).astype(float),
            better="lower",
            how="share of items without a score (parse failure, abstention or LM error), of all items",
        ),
    ]
    mean = p.share(
        "mean-score",
        sa,
        sb,
        better="none",
        how="mean score on the items both judges scored (a shift, neither better nor worse; never gated)",
    )
    if mean.delta is None:
        mean = mean.model_copy(update={"how": "", "reason": "no item was scored by both judges"})
    out.append(mean)
    changes: list[ItemChange] = []
    for it, x, y, h in zip(items, sa, sb, human, strict=True):
        fx, fy = math.isfinite(x), math.isfinite(y)
        if (fx and fy and abs(y - x) <= 1e-9) or not (fx or fy):
            continue
        change: Change = (
            ("failed in B" if fx else "recovered in B") if fx != fy else ("up" if y > x else "down")
        )
        changes.append(
            ItemChange(
                item_id=it.id,
                criterion=criterion,
                system=it.system,
                doc_id=it.doc_id,
                a=finite(x),
                b=finite(y),
                move=finite(y - x) if fx and fy else None,
                human=finite(h),
                change=change,
            )
        )
    changes.sort(key=lambda c: (c.move is not None, -abs(c.move or 0.0)))
    return out, changes


def _document_measure(
    items: Sequence[Item], sa: np.ndarray, sb: np.ndarray, human: np.ndarray, p: _Pairing
) -> DiffMeasure:
    """Mean over documents of the Spearman across each document's items, for A and B, paired by document."""
    how = (
        "mean over documents of the Spearman across the document's items (SummEval's summary level), on "
        "the items both judges scored; documents where either is undefined are left out"
    )
    docs = [it.doc_id for it in items]
    if any(d is None for d in docs) or len(set(docs)) == len(docs):
        reason = "needs items grouped by document (several items per doc_id)"
        return p.undefined("spearman-document", how, reason, unit="documents")
    both = np.isfinite(sa) & np.isfinite(sb) & np.isfinite(human)
    kept = [str(d) for d, k in zip(docs, both, strict=True) if k]
    keys = list(dict.fromkeys(kept))

    def per_document(values: np.ndarray) -> np.ndarray:  # NaN where fewer than 3 items or constant
        rows = {d: [k for k, x in enumerate(kept) if x == d] for d in keys}
        v, h = values[both], human[both]
        return np.array([spearman(v[i], h[i]) if len(i) >= 3 else math.nan for i in rows.values()])

    x, y = per_document(sa), per_document(sb)
    m = replace(p, clusters=keys, unit="documents").share("spearman-document", x, y, better="higher", how=how)
    fa, fb = bool(np.isfinite(x).any()), bool(np.isfinite(y).any())
    missing = (
        None
        if m.ok or (fa and fb) or not keys
        else _undefined(None if not fa else 0.0, None if not fb else 0.0)
    )
    if missing is not None:  # one judge's scores are constant in every document: its side of the measure
        m = m.model_copy(
            update={
                "a": finite(float(np.nanmean(x))) if fa else None,
                "b": finite(float(np.nanmean(y))) if fb else None,
                "missing": missing,
                "reason": f"{'both judges' if missing == 'both' else 'judge ' + missing.upper()}: scores "
                "constant within every document",
            }
        )
    return m.model_copy(update={"dropped": int((~(np.isfinite(x) & np.isfinite(y))).sum())})


def _pairwise(
    items: Sequence[Item], ja: Sequence[Judgment], jb: Sequence[Judgment], p: _Pairing
) -> tuple[list[DiffMeasure], list[ItemChange]]:
    va, vb = verdicts_as_text(ja), verdicts_as_text(jb)
    for j, v in ((ja, va), (jb, vb)):  # an LM error is a failure, whatever verdict field it left
        for k, judgment in enumerate(j):
            if judgment.error is not None:
                v[k] = None
    gold = [it.preference.get(p.criterion) for it in items]

    def correct(vs: Sequence[str | None]) -> np.ndarray:
        return np.array(
            [
                math.nan if g is None else float(v is not None and v == g)
                for v, g in zip(vs, gold, strict=True)
            ]
        )

    def lean(vs: Sequence[str | None]) -> np.ndarray:
        return np.array(
            [
                math.nan if v not in ("A", "B") or side is None else float(v == side)
                for v, side in zip(vs, longer, strict=True)
            ]
        )

    longer = []
    for it in items:
        la, lb = word_count(it.output), word_count(it.output_b or "")
        longer.append(None if la == lb else ("A" if la > lb else "B"))
    out = [
        p.share(
            "accuracy",
            correct(va),
            correct(vb),
            better="higher",
            how="share of verdicts equal to gold over the items with a gold preference; a "
            "failed verdict counts as wrong",
            reason=None
            if any(g is not None for g in gold)
            else "no item has a gold preference on this criterion",
        ),
        _consistency(ja, jb, p),
        p.stat(
            "length-lean",
            lean(va),
            lean(vb),
            np.zeros(len(items)),
            _lean,
            better="lower",
            how="|P(prefer the longer text) - 0.5| over the pairs of "
            "unequal length where both judges preferred one text (ties and "
            "failures left out)",
        ),
        p.share(
            "failure-rate",
            np.array([float(v is None) for v in va]),
            np.array([float(v is None) for v in vb]),
            better="lower",
            how="share of items without a verdict (parse failure, abstention or LM error), of all items",
        ),
    ]
    changes = [
        ItemChange(
            item_id=it.id,
            criterion=p.criterion,
            system=it.system,
            doc_id=it.doc_id,
            a=x,
            b=y,
            human=g,
            change="flipped"
            if x is not None and y is not None
            else "failed in B"
            if y is None
            else "recovered in B",
        )
        for it, x, y, g in zip(items, va, vb, gold, strict=True)
        if x != y
    ]
    return out, changes


def _consistency(ja: Sequence[Judgment], jb: Sequence[Judgment], p: _Pairing) -> DiffMeasure:
    how = (
        "share of pairs whose two presentation orders prefer the same text, over the pairs both judges "
        "saw in both orders; a failed order counts as inconsistent"
    )
    oa, ob = verdict_orders(ja), verdict_orders(jb)
    if oa is None or ob is None:
        who = [n for n, o in (("A", oa), ("B", ob)) if o is None]
        reason = (
            f"judge {' and '.join(who)} did not judge the pairs in both orders (position swap, or recorded "
            "rows with order 'swapped')"
        )
        return p.undefined("position-consistency", how, reason)
    swap = {"first": "second", "second": "first", "tie": "tie"}

    def consistent(orders: tuple[list[str | None], list[str | None]], js: Sequence[Judgment]) -> np.ndarray:
        return np.array(
            [
                float(o is not None and s is not None and swap.get(str(o)) == s)
                if isinstance(j.meta.get("orders"), dict)
                else math.nan
                for j, o, s in zip(js, *orders, strict=True)
            ]
        )

    return p.share("position-consistency", consistent(oa, ja), consistent(ob, jb), better="higher", how=how)
