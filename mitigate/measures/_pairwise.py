"""Measures of a pairwise judge: accuracy against gold preferences, position bias, length bias.

A pairwise item holds two texts, A (``output``) and B (``output_b``), and a gold preference ``"A"``,
``"B"`` or ``"tie"``. A verdict is about the texts (``"A"``, ``"B"``, ``"tie"``) or about the positions
as presented (``"first"``, ``"second"``, ``"tie"``); a judge run in both orders has one presented
verdict per order. Position bias follows Shi et al. 2024 ("Judging the judges"): position
consistency, preference fairness (primacy- against recency-preferred inconsistent pairs, in [-1, 1])
and repetition stability. Conventions: :mod:`mitigate.measures._base`.

Size: over 600 lines because it holds one function per published pairwise measure with its reported
measure; each is short.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Hashable, Sequence
from typing import Any, Literal

import numpy as np

from mitigate.errors import DataError
from mitigate.judge import Judgment
from mitigate.measures._base import (
    EntryData,
    Measure,
    confusion_counts,
    finish,
    mean_interval,
    reported_measure,
    share,
    undefined,
    word_count,
)
from mitigate.measures._stats import batched, bootstrap_ci, permutation_test_mean_diff

POSITION_VERDICTS = ("first", "second", "tie")
"""The verdicts a pairwise judge may give, by the position of the preferred text."""

PREFERENCES = ("A", "B", "tie")
"""Preferences by text: A is the item's ``output``, B its ``output_b``."""

Category = Literal["consistent", "primacy", "recency"]


def _verdict(v: str | None, where: str) -> str | None:
    if v is None:
        return None
    key = str(v).strip().lower()
    if key not in POSITION_VERDICTS:
        raise DataError(f"expected a verdict in {list(POSITION_VERDICTS)} or None in {where}; got {v!r}")
    return key


def _preference(v: Any, where: str) -> str | None:
    if v is None:
        return None
    key = {"a": "A", "b": "B", "tie": "tie"}.get(str(v).strip().lower())
    if key is None:
        raise DataError(f"expected a preference in {list(PREFERENCES)} or None in {where}; got {v!r}")
    return key


_SWAP = {"first": "second", "second": "first", "tie": "tie"}


def presented_to_text(verdict: str | None, order: Literal["original", "swapped"]) -> str | None:
    """A verdict by position as presented -> the text it prefers (``"A"``, ``"B"``, ``"tie"``).

    In the original order A was shown first; in the swapped order B was.
    """
    v = _verdict(verdict, f"the {order} order")
    if v is None:
        return None
    if v == "tie":
        return "tie"
    first_is_a = order == "original"
    return "A" if (v == "first") == first_is_a else "B"


def verdicts_as_text(judgments: Sequence[Judgment]) -> list[str | None]:
    """Each judgment's verdict as the text it prefers: a Judgment's verdict is relative to the item's own
    order."""
    return [presented_to_text(j.verdict, "original") for j in judgments]


def abstained(judgment: Judgment) -> bool:
    """Whether the judge abstained on the item (a majority panel without a majority): a counted outcome, no
    verdict."""
    return judgment.verdict is None and judgment.error is None and ABSTAIN_FLAG in judgment.flags


def pair_category(original: str, swapped: str) -> Category:
    """How the two presented verdicts on one pair relate (Shi et al. 2024).

    ``consistent``: the same text preferred in both orders (first/second, second/first, tie/tie);
    ``primacy``: first/first, first/tie, tie/first; ``recency``: second/second, second/tie, tie/second.
    """
    o, s = _verdict(original, "original"), _verdict(swapped, "swapped")
    if o == _SWAP[str(s)]:
        return "consistent"
    return "primacy" if "first" in (o, s) else "recency"


def _pairs(
    original: Sequence[str | None], swapped: Sequence[str | None], gold: Sequence[str | None] | None = None
) -> tuple[list[str | None], list[str | None], list[str | None]]:
    """The presented verdicts of both orders checked, and the gold preferences (empty without ``gold``)."""
    o = [_verdict(v, "original") for v in original]
    s = [_verdict(v, "swapped") for v in swapped]
    if len(o) != len(s):
        raise DataError(f"expected one swapped verdict per original verdict; got {len(o)} and {len(s)}")
    g = [_preference(x, "gold") for x in gold or ()]
    if gold is not None and len(g) != len(o):
        raise DataError(f"expected one gold preference per pair; got {len(o)} pairs and {len(g)} gold")
    return o, s, g


def position_bias(
    original: Sequence[str | None],
    swapped: Sequence[str | None],
    *,
    ci: bool = False,
    n_boot: int = 1000,
    alpha: float = 0.05,
    seed: int = 0,
) -> Measure:
    """Position bias of a pairwise judge, from verdicts on each pair in original and swapped order.

    Verdicts are ``"first"``, ``"second"`` or ``"tie"`` (None for a parse failure). ``value`` is
    the share of items whose two verdicts disagree once the swapped one is mapped back (flips);
    ``extra`` holds the shares of all verdicts preferring the first position, the second, or a
    tie. ``of_all`` counts a failed verdict as a flip, so ``extra["consistency_of_all"]`` = 1 -
    ``of_all`` is order consistency as LLMBar reports it (e.g. 323/419).
    """
    o, s, _ = _pairs(original, swapped)
    pairs = [(a, b) for a, b in zip(o, s, strict=True) if a is not None and b is not None]
    failed = len(o) - len(pairs)
    name = "position_flip_rate"
    if not pairs:
        return undefined(name, 0, failed, "no item has verdicts in both orders")
    flips = np.array([float(a != _SWAP[b]) for a, b in pairs])
    all_verdicts = [v for pair in pairs for v in pair]
    extra = {
        "n_flipped": int(flips.sum()),
        **{f"{v}_share": all_verdicts.count(v) / len(all_verdicts) for v in POSITION_VERDICTS},
        "consistency_of_all": (len(flips) - int(flips.sum())) / len(o),
    }
    interval = mean_interval(flips, ci, n_boot, alpha, seed)
    return share(name, flips, failed, failure_counts_as_hit=True, interval=interval, extra=extra)


def _categories(
    original: Sequence[str | None], swapped: Sequence[str | None], groups: Sequence[Hashable | None] | None
) -> tuple[list[Category], int, dict[str, list[int]]]:
    """The category of each pair judged in both orders, the pairs without, and the pairs of each group."""
    o, s, _ = _pairs(original, swapped)
    if groups is not None and len(groups) != len(o):
        raise DataError(f"expected one group label per pair ({len(o)}); got {len(groups)}")
    used = [pair_category(a, b) for a, b in zip(o, s, strict=True) if a is not None and b is not None]
    members: dict[str, list[int]] = {}
    for i, g in enumerate(groups or ()):
        if g is not None:
            members.setdefault(str(g), []).append(i)
    return used, len(o) - len(used), members


def _by_group(
    fn: Any, original: Sequence[Any], swapped: Sequence[Any], members: dict[str, list[int]], **kw: Any
) -> dict[str, dict[str, Any]]:
    """``fn`` on the pairs of each group (e.g. each system pair), as small JSON-able rows."""
    out: dict[str, dict[str, Any]] = {}
    for g, sel in members.items():
        m: Measure = fn([original[i] for i in sel], [swapped[i] for i in sel], **kw)
        out[g] = {
            **m.model_dump(include={"value", "n", "n_failed", "ci_low", "ci_high"}),
            **{k: m.extra[k] for k in ("primacy", "recency") if k in m.extra},
        }
    return out


def position_consistency(
    original: Sequence[str | None],
    swapped: Sequence[str | None],
    *,
    groups: Sequence[Hashable | None] | None = None,
    ci: bool = False,
    n_boot: int = 1000,
    alpha: float = 0.05,
    seed: int = 0,
) -> Measure:
    """Position consistency (Shi et al. 2024): the share of pairs whose two verdicts prefer the same text.

    ``original`` and ``swapped`` are the presented verdicts of each pair in the two orders.
    ``of_all`` counts a pair with a failed verdict as inconsistent. ``extra["primacy"]`` /
    ``extra["recency"]`` count the inconsistent pairs by the position they favour
    (:func:`pair_category`); ``groups`` (e.g. each item's system pair) adds ``extra["per_group"]``.
    """
    used, failed, members = _categories(original, swapped, groups)
    name = "position-consistency"
    if not used:
        return undefined(name, 0, failed, "no pair has verdicts in both orders")
    hits = np.array([float(c == "consistent") for c in used])
    extra: dict[str, Any] = {"primacy": used.count("primacy"), "recency": used.count("recency")}
    if groups is not None:
        kw = {"ci": ci, "n_boot": n_boot, "alpha": alpha, "seed": seed}
        extra["per_group"] = _by_group(position_consistency, original, swapped, members, **kw)
    return share(name, hits, failed, interval=mean_interval(hits, ci, n_boot, alpha, seed), extra=extra)


@batched
def _fairness_rows(primacy: np.ndarray, recency: np.ndarray) -> np.ndarray:
    p = primacy.sum(axis=-1).astype(float)
    r = recency.sum(axis=-1).astype(float)
    n = primacy.shape[-1]
    with np.errstate(all="ignore"):
        raw = np.where(p + r > 0, (r * r - p * p) / np.where(p + r > 0, p + r, 1.0), 0.0)
    return raw / n


def preference_fairness(
    original: Sequence[str | None],
    swapped: Sequence[str | None],
    *,
    groups: Sequence[Hashable | None] | None = None,
    ci: bool = False,
    n_boot: int = 1000,
    alpha: float = 0.05,
    seed: int = 0,
) -> Measure:
    """Preference fairness PF (Shi et al. 2024) in [-1, 1]: 0 fair, > 0 favours the later position, < 0 the
    first.

    With P primacy-preferred (first/first, first/tie, tie/first) and R recency-preferred inconsistent
    pairs among the n judged in both orders, PF = (R * R/(P+R) - P * P/(P+R)) / n. Shi et al.'s code
    divides by every pair, failed ones included: ``extra["pf_all_pairs"]``. ``groups`` adds
    ``extra["per_group"]``.
    """
    used, failed, members = _categories(original, swapped, groups)
    name = "preference-fairness"
    if not used:
        return undefined(name, 0, failed, "no pair has verdicts in both orders")
    primacy = np.array([float(c == "primacy") for c in used])
    recency = np.array([float(c == "recency") for c in used])
    value = float(_fairness_rows(primacy[None, :], recency[None, :])[0])
    extra: dict[str, Any] = {
        "primacy": int(primacy.sum()),
        "recency": int(recency.sum()),
        "pf_all_pairs": value * len(used) / (len(used) + failed),
    }
    if groups is not None:
        kw = {"ci": ci, "n_boot": n_boot, "alpha": alpha, "seed": seed}
        extra["per_group"] = _by_group(preference_fairness, original, swapped, members, **kw)
    interval = (
        bootstrap_ci(_fairness_rows, primacy, recency, n_boot=n_boot, alpha=alpha, seed=seed) if ci else None
    )
    return finish(name, value, len(used), failed, interval=interval, extra=extra)


def repetition_stability(
    trials: Sequence[Sequence[str | None]],
    *,
    ci: bool = False,
    n_boot: int = 1000,
    alpha: float = 0.05,
    seed: int = 0,
) -> Measure:
    """Repetition stability (Shi et al. 2024): per instance, the share of trials giving its most frequent
    verdict, averaged.

    ``trials`` holds, per instance (one pair in one order), the verdicts of its repeated
    judgments (None for a failed parse, dropped). Instances judged once are not used; repeated
    ones with fewer than 2 parsed trials are counted in ``n_failed``.
    """
    repeated = [list(row) for row in trials if len(row) >= 2]
    got = [[v for v in row if v is not None] for row in repeated]
    per = [max(Counter(g).values()) / len(g) for g in got if len(g) >= 2]
    failed = len(got) - len(per)
    name = "repetition-stability"
    if not per:
        why = (
            "no repeated instance has 2 or more parsed verdicts"
            if repeated
            else "no instance was judged more than once"
        )
        return undefined(name, 0, failed, why)
    values = np.array(per)
    interval = mean_interval(values, ci, n_boot, alpha, seed)
    extra = {"trials_per_instance": float(np.mean([len(r) for r in repeated]))}
    return finish(name, float(values.mean()), len(per), failed, interval=interval, extra=extra)


def preference_accuracy(
    verdicts: Sequence[str | None],
    gold: Sequence[str | None],
    *,
    ci: bool = False,
    n_boot: int = 1000,
    alpha: float = 0.05,
    seed: int = 0,
) -> Measure:
    """Accuracy of pairwise verdicts against gold preferences (``"A"``, ``"B"``, ``"tie"``; 3-way).

    A tie verdict is right only on a gold tie. Items without a verdict are dropped from ``value``
    and counted wrong in ``of_all``; items without gold are not used. ``extra`` holds the accuracy
    on items whose gold is not a tie and the ``confusion`` counts gold -> verdict.
    """
    v = [_preference(x, "verdicts") for x in verdicts]
    g = [_preference(x, "gold") for x in gold]
    if len(v) != len(g):
        raise DataError(f"expected one gold preference per verdict; got {len(v)} verdicts and {len(g)} gold")
    labelled = [(a, b) for a, b in zip(v, g, strict=True) if b is not None]
    used = [(a, b) for a, b in labelled if a is not None]
    failed = len(labelled) - len(used)
    name = "preference-accuracy"
    if not used:
        return undefined(name, 0, failed, "no item has both a verdict and a gold preference")
    hits = np.array([float(a == b) for a, b in used])
    decisive = [float(a == b) for a, b in used if b != "tie"]
    extra = {
        "accuracy_decisive": float(np.mean(decisive)) if decisive else None,
        "n_gold_ties": sum(1 for _, b in used if b == "tie"),
        "confusion": confusion_counts(*zip(*used, strict=True)),
    }
    return share(name, hits, failed, interval=mean_interval(hits, ci, n_boot, alpha, seed), extra=extra)


def longer_preference(
    verdicts: Sequence[str | None],
    length_a: Sequence[float],
    length_b: Sequence[float],
    *,
    ci: bool = False,
    n_boot: int = 1000,
    alpha: float = 0.05,
    seed: int = 0,
) -> Measure:
    """The lean towards the longer text: P(prefer the longer text) - 0.5, among decisive verdicts (Liu et al.
    2024 find LLM evaluators prefer longer outputs).

    Used are items with a verdict ``"A"`` or ``"B"`` on texts of different length (``length_a``,
    ``length_b``); ties, failed verdicts and equal lengths are not. ``extra["p_longer"]`` is the
    probability itself.
    """
    v = [_preference(x, "verdicts") for x in verdicts]
    if not len(v) == len(length_a) == len(length_b):
        raise DataError(
            f"expected one length per text of every item; got {len(v)} verdicts, {len(length_a)} "
            f"and {len(length_b)} lengths"
        )
    hits: list[float] = []
    skipped = {"no_verdict": 0, "tie": 0, "equal_length": 0}
    for verdict, la, lb in zip(v, length_a, length_b, strict=True):
        if verdict is None:
            skipped["no_verdict"] += 1
        elif verdict == "tie":
            skipped["tie"] += 1
        elif la == lb:
            skipped["equal_length"] += 1
        else:
            hits.append(float((verdict == "A") == (la > lb)))
    name = "longer-preference"
    # only a missing verdict is a failure; a tie or two texts of equal length are outside the measure
    failed = skipped["no_verdict"]
    if not hits:
        why = "no decisive verdict on two texts of different length"
        if skipped["equal_length"]:
            why = (
                f"n/a: the {skipped['equal_length']} decisive verdicts are all on two texts of equal "
                f"length (no longer text to prefer; not failures), {skipped['tie']} ties"
            )
        return undefined(name, 0, failed, why, **skipped)
    arr = np.array(hits)
    interval = mean_interval(arr, ci, n_boot, alpha, seed)
    if interval is not None:
        interval = (interval[0] - 0.5, interval[1] - 0.5)
    extra = {"p_longer": float(arr.mean()), "n_longer": int(arr.sum()), **skipped}
    return finish(name, float(arr.mean()) - 0.5, len(hits), failed, interval=interval, extra=extra)


def reconcile(
    original: str | None, swapped: str | None, on_flip: Literal["tie", "abstain"] = "tie"
) -> str | None:
    """The verdict position swap keeps (as a text preference) from two presented verdicts: the same text in
    both orders, else a tie (``on_flip="abstain"``: None)."""
    a = presented_to_text(original, "original")
    b = presented_to_text(swapped, "swapped")
    if a is None or b is None:
        return None
    if a == b:
        return a
    return "tie" if on_flip == "tie" else None


def swap_gain(
    original: Sequence[str | None],
    swapped: Sequence[str | None],
    gold: Sequence[str | None],
    *,
    on_flip: Literal["tie", "abstain"] = "tie",
    n_perm: int = 5000,
    ci: bool = False,
    n_boot: int = 1000,
    alpha: float = 0.05,
    seed: int = 0,
) -> Measure:
    """Accuracy gained by judging both orders and reconciling (position swap) over the original order alone.

    Per item with both presented verdicts and a gold preference: correct(reconciled) -
    correct(original order); ``value`` is the mean, with a paired bootstrap interval and a paired
    sign-flip permutation p-value (``extra["p_value"]``). With ``on_flip="abstain"`` a flip has no
    verdict and counts as wrong.
    """
    o, s, g = _pairs(original, swapped, gold)
    used = [(a, b, want) for a, b, want in zip(o, s, g, strict=True) if None not in (a, b, want)]
    failed = len(o) - len(used)
    name = "swap-gain"
    if not used:
        return undefined(name, 0, failed, "no pair has verdicts in both orders and a gold preference")
    y = np.array([float(presented_to_text(a, "original") == want) for a, _, want in used])
    x = np.array([float(reconcile(a, b, on_flip) == want) for a, b, want in used])
    diff = x - y
    interval = mean_interval(diff, ci, n_boot, alpha, seed)
    test = permutation_test_mean_diff(x, y, n_perm=n_perm, seed=seed, paired=True)
    gold_ties = sum(want == "tie" for _, _, want in used)
    extra = {
        "accuracy_swap": float(x.mean()),
        "accuracy_one_order": float(y.mean()),
        "p_value": test.p_value,
        "n_perm": n_perm,
        "n_gold_ties": gold_ties,
        # a flip becomes a tie (or no verdict), right only on a gold tie: without one the
        # swap can only lose accuracy, so the value is <= 0 whatever the judge
        "nonpositive_by_construction": gold_ties == 0,
    }
    return finish(name, float(diff.mean()), len(used), failed, interval=interval, extra=extra)


def accuracy_both_orders(
    original: Sequence[str | None],
    swapped: Sequence[str | None],
    gold: Sequence[str | None],
    *,
    ci: bool = False,
    n_boot: int = 1000,
    alpha: float = 0.05,
    seed: int = 0,
) -> Measure:
    """Accuracy over the verdicts of both orders, each order's verdict counted once (LLMBar's headline).

    Every item with a gold preference contributes two presented verdicts; a missing one is a
    failure of its order. ``extra`` gives each order's own accuracy.
    """
    o, s, g = _pairs(original, swapped, gold)
    hits: list[float] = []
    per_order: dict[str, list[float]] = {"original": [], "swapped": []}
    failed = 0
    for a, b, want in zip(o, s, g, strict=True):
        if want is None:
            continue
        for verdict, order in ((a, "original"), (b, "swapped")):
            if verdict is None:
                failed += 1
                continue
            hit = float(presented_to_text(verdict, order) == want)  # type: ignore[arg-type]
            hits.append(hit)
            per_order[order].append(hit)
    name = "accuracy-both-orders"
    if not hits:
        return undefined(name, 0, failed, "no verdict in either order on an item with a gold preference")
    arr = np.array(hits)
    interval = mean_interval(arr, ci, n_boot, alpha, seed)
    extra = {f"accuracy_{k}": (float(np.mean(v)) if v else None) for k, v in per_order.items()}
    return share(name, arr, failed, interval=interval, extra=extra)


# reported in the comparison table of pairwise runs


def verdict_orders(judgments: Sequence[Judgment]) -> tuple[list[str | None], list[str | None]] | None:
    """The presented verdicts in both orders from ``meta["orders"]`` (as position swap and recorded judges
    write it); None when no judgment carries both orders."""
    rows = [j.meta.get("orders") for j in judgments]
    if not any(isinstance(r, dict) and "original" in r and "swapped" in r for r in rows):
        return None
    original = [r.get("original") if isinstance(r, dict) else None for r in rows]
    swapped = [r.get("swapped") if isinstance(r, dict) else None for r in rows]
    return original, swapped


def verdict_samples(judgments: Sequence[Judgment]) -> list[list[str | None]]:
    """The repeated verdicts per instance (one item in one order) from ``meta["verdict_samples"]``."""
    out: list[list[str | None]] = []
    for j in judgments:
        per_order = j.meta.get("verdict_samples")
        if isinstance(per_order, dict):
            out += [list(v) for v in per_order.values() if isinstance(v, list | tuple)]
    return out


def verdict_order_text(judgments: Sequence[Judgment]) -> str:
    """Which order(s) the judgments' own verdicts count: "both orders, reconciled", "original order only",
    ..."""
    if any("position_consistent" in j.meta for j in judgments):
        return "both orders, reconciled"
    recorded = {
        j.meta["recorded"].get("order")
        for j in judgments
        if isinstance(j.meta.get("recorded"), dict) and j.meta["recorded"].get("order")
    }
    if recorded:
        return f"{'/'.join(sorted(recorded))} order only"
    return "one order, as presented"


ABSTAIN_FLAG = "no_majority"
"""The flag of a judgment whose judge abstained (a majority panel without a majority)."""


def _from_both_orders(
    entry: EntryData, name: str, measure: Callable[[list[str | None], list[str | None]], Measure]
) -> Measure:
    """``measure`` of the entry's verdicts in both orders; NaN with the reason when no judgment holds both."""
    orders = verdict_orders(entry.judgments)
    if orders is None:
        return undefined(name, 0, 0, "no judgment holds verdicts in both orders (meta['orders'])")
    return measure(*orders)


def _pair_groups(entry: EntryData) -> list[str | None] | None:
    names = [f"{i.system} vs {i.system_b}" if i.system and i.system_b else None for i in entry.items]
    return names if any(n is not None for n in names) else None


@reported_measure(
    "preference-accuracy", "accuracy (judge's verdict)", "higher", "accuracy", headline=True, task="pairwise"
)
def _preference_accuracy(entry: EntryData) -> Measure:
    """Accuracy of the entry's verdicts against the gold preferences (:func:`preference_accuracy`).

    3-way: a tie verdict is right only where the gold preference is a tie. The judge's own verdict per
    item: the order judged for a one-order or recorded judge (the original), the reconciled verdict of a
    position-swap judge; the details say which.
    """
    abstentions = [abstained(j) for j in entry.judgments]
    orders = verdict_order_text(entry.judgments)
    if len(abstentions) != len(entry.verdicts) or not any(abstentions):
        m = preference_accuracy(entry.verdicts, entry.gold, **entry.ci)
        return m.model_copy(update={"extra": {**m.extra, "orders": orders}})
    verdicts = [None if a else v for v, a in zip(entry.verdicts, abstentions, strict=True)]
    m = preference_accuracy(verdicts, entry.gold, **entry.ci)
    hits: list[float] = []
    n_abs = 0
    for v, g, a in zip(verdicts, entry.gold, abstentions, strict=True):
        want = _preference(g, "gold")
        if want is not None and (a or _preference(v, "verdicts") is not None):
            hits.append(0.0 if a else float(_preference(v, "verdicts") == want))
            n_abs += a
    if not hits:
        return m
    arr = np.array(hits)
    extra = {
        **m.extra,
        "orders": orders,
        "abstained": n_abs,
        "abstention_rate": n_abs / len(arr),
        "accuracy_when_decided": m.value if m.ok else None,
    }
    # the abstentions are in ``arr`` (counted wrong), so only the parse failures are dropped items
    return share(
        "preference-accuracy",
        arr,
        m.n_failed - n_abs,
        interval=mean_interval(arr, alpha=0.05, **entry.ci),
        extra=extra,
    )


@reported_measure(
    "accuracy-both-orders", "accuracy (both orders)", "higher", "accuracy", headline=True, task="pairwise"
)
def _accuracy_both_orders(entry: EntryData) -> Measure:
    """Accuracy over both orders' verdicts, each counted once (:func:`accuracy_both_orders`).

    every verdict of both orders against gold, each order counted once (LLMBar's headline); needs verdicts
    in both orders.
    """
    return _from_both_orders(
        entry, "accuracy-both-orders", lambda o, s: accuracy_both_orders(o, s, entry.gold, **entry.ci)
    )


@reported_measure("swap-gain", "swap gain", "higher", "accuracy", headline=True, task="pairwise")
def _swap_gain(entry: EntryData) -> Measure:
    """Accuracy of the position-swapped verdict minus that of the original order alone
    (:func:`swap_gain`).

    accuracy after judging both orders (a flip becomes a tie) minus accuracy of the original order alone;
    needs verdicts in both orders.
    """
    return _from_both_orders(entry, "swap-gain", lambda o, s: swap_gain(o, s, entry.gold, **entry.ci))


@reported_measure(
    "longer-preference", "longer pref. (P-½)", "zero", "bias", headline=True, task="pairwise", on_humans=True
)
def _longer_preference(entry: EntryData) -> Measure:
    """P(prefer the longer text) - 0.5 among decisive verdicts (:func:`longer_preference`).

    P(the preferred text is the longer one) minus 0.5, over decisive verdicts on texts of different length
    in words; the humans row gives the gold preferences' own lean.
    """
    return longer_preference(
        entry.verdicts,
        [word_count(i.output) for i in entry.items],
        [word_count(i.output_b or "") for i in entry.items],
        **entry.ci,
    )


@reported_measure(
    "preference-fairness",
    "pref. fairness",
    "zero",
    "bias",
    headline=True,
    paper="Shi et al. 2024",
    task="pairwise",
)
def _preference_fairness(entry: EntryData) -> Measure:
    """Shi et al.'s preference fairness over both orders (:func:`preference_fairness`), per system pair
    too.

    Shi et al. 2024: 0 is fair, < 0 favours the first position, > 0 the second; from the pairs judged in
    both orders.
    """
    return _from_both_orders(
        entry,
        "preference-fairness",
        lambda o, s: preference_fairness(o, s, groups=_pair_groups(entry), **entry.ci),
    )


@reported_measure(
    "position-consistency",
    "position consistency",
    "higher",
    "consistency",
    headline=True,
    paper="Shi et al. 2024",
    task="pairwise",
)
def _position_consistency(entry: EntryData) -> Measure:
    """Shi et al.'s position consistency (:func:`position_consistency`), per system pair too.

    share of pairs whose verdicts in both orders prefer the same text (Shi et al. 2024).
    """
    return _from_both_orders(
        entry,
        "position-consistency",
        lambda o, s: position_consistency(o, s, groups=_pair_groups(entry), **entry.ci),
    )


@reported_measure(
    "repetition-stability",
    "repetition stability",
    "higher",
    "consistency",
    headline=True,
    paper="Shi et al. 2024",
    task="pairwise",
)
def _repetition_stability(entry: EntryData) -> Measure:
    """Shi et al.'s repetition stability (:func:`repetition_stability`) over repeated verdicts.

    share of repeated judgments of one pair in one order that give its most frequent verdict (Shi et al.
    2024).
    """
    trials = verdict_samples(entry.judgments)
    if not trials:
        return undefined(
            "repetition-stability", 0, 0, "no judgment holds repeated verdicts (meta['verdict_samples'])"
        )
    return repetition_stability(trials, **entry.ci)
