"""Estimates that never go quiet: a group whose labels are all equal, notes naming their group, the
random-draw assumption, paired contrasts between groups and the rank intervals they give.

Every dataset here is made up in the test (a few systems with known labels and a judge of chosen quality).
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from mitigate.data import Benchmark, Item
from mitigate.errors import ConfigError
from mitigate.estimators import MeanEstimate, estimate, estimate_mean, rank_by_contrasts, rank_estimates
from mitigate.estimators._regression import constant_interval


def _bench(
    labels: dict[str, list[float | None]], judge_offset: float = 0.5
) -> tuple[Benchmark, dict[str, float]]:
    """Systems with the given labels (None: unlabelled) and a judge that scores each item its label plus a
    per-item wobble and ``judge_offset`` (unlabelled items get a judge value near 3)."""
    rng = np.random.default_rng(0)
    items, judge = [], {}
    for s, values in labels.items():
        for k, v in enumerate(values):
            iid = f"{s}/{k}"
            items.append(Item(id=iid, system=s, output=f"text {iid}", human={} if v is None else {"q": v}))
            base = 3.0 if v is None else v
            judge[iid] = float(np.clip(round(base + judge_offset + rng.normal(0, 0.6)), 1, 5))
    return Benchmark(name="toy", items=tuple(items), criteria=("q",)), judge


def _spread(n: int, seed: int, centre: float) -> list[float | None]:
    rng = np.random.default_rng(seed)
    labelled = [float(np.clip(round(centre + rng.normal(0, 1)), 1, 5)) for _ in range(8)]
    return labelled + [None] * (n - 8)


def test_a_system_whose_labels_are_all_equal_gets_its_own_valid_interval_and_the_others_their_numbers():
    labels = {"A": _spread(40, 1, 3.0), "B": _spread(40, 2, 4.0), "FLAT": [5.0] * 5 + [None] * 35}
    bench, judge = _bench(labels)
    result = estimate(bench, "q", judge)
    flat = result.group("FLAT").estimate
    assert flat.constant_labels == (5.0, 1.0, 5.0) and flat.estimate == 5.0 and flat.high == 5.0
    assert flat.low == pytest.approx(constant_interval(5.0, 5, 40, (1.0, 5.0), 0.95, "items")[0])
    assert 1.0 < flat.low < 5.0
    for name in ("A", "B"):  # the others are estimated as usual
        e = result.group(name).estimate
        assert e.constant_labels is None and math.isfinite(e.se) and e.low < e.estimate < e.high
    text = result.table()
    assert "group FLAT: the 5 labels are all 5, so no spread to correct the judge with" in text


def test_the_all_equal_interval_is_the_exact_bound_on_the_items_labelled_otherwise():
    N, n, alpha = 40, 5, 0.05
    low, _ = constant_interval(5.0, n, N, (1.0, 5.0), 1 - alpha, "items")
    k = round((5.0 - low) / 4.0 * N)  # items the bound allows to be labelled otherwise

    def all_five(others: int) -> float:  # P(n labels drawn at random avoid every one of them)
        return math.prod((N - others - i) / (N - i) for i in range(n))

    assert all_five(k) > alpha / 2 >= all_five(k + 1)
    pop_low, _ = constant_interval(5.0, n, N, (1.0, 5.0), 1 - alpha, "population")
    assert pop_low == pytest.approx(5.0 - 4.0 * (1 - (alpha / 2) ** (1 / n)))


def test_the_all_equal_interval_covers_the_truth_over_random_draws():
    rng = np.random.default_rng(3)
    y = np.where(rng.random(60) < 0.8, 5.0, 4.0)  # mostly 5s: five labels are often all 5
    f = y + rng.normal(0, 0.5, 60)
    hits, equal = [], 0
    for _ in range(600):
        part = np.full(60, np.nan)
        keep = rng.choice(60, 5, replace=False)
        part[keep] = y[keep]
        e = estimate_mean(part, f, method="human", bounds=(1.0, 5.0))
        equal += e.constant_labels is not None
        hits.append(e.low <= y.mean() <= e.high)
    assert equal > 100  # the case is common here
    assert np.mean(hits) >= 0.95 - 4 * math.sqrt(0.05 * 0.95 / 600)


def test_every_per_group_note_names_its_group():
    labels = {"A": _spread(30, 1, 3.0), "B": _spread(30, 2, 4.0)}
    bench, judge = _bench(labels)
    judge.pop("A/20")  # one item of A without a judge value
    result = estimate(bench, "q", judge)
    notes = result.group("A").estimate.notes
    assert notes and all(n.startswith("group 'A': ") for n in notes)
    assert "group A: 1 of 30 items have no judge value" in result.table()


def test_the_random_draw_assumption_is_stated_in_text_and_json_and_judge_ranks_are_not_the_humans():
    bench, judge = _bench({"A": _spread(30, 1, 3.0), "B": _spread(30, 2, 4.0)})
    result = estimate(bench, "q", judge)
    assert "assumption: assumes each group's labelled items are a random draw" in result.table()
    assert "random draw" in result.to_json()["assumption"]
    judged = estimate(bench, "q", judge, method="judge")
    assert "ranks of the judge's own means, not the humans'" in judged.table()
    assert "not bias-corrected" in judged.to_json()["assumption"]


def test_contrasts_give_each_difference_with_intervals_holding_jointly_in_text_json_and_pandas():
    labels = {"A": _spread(40, 1, 2.0), "B": _spread(40, 2, 4.0), "C": _spread(40, 3, 4.0)}
    bench, judge = _bench(labels)
    result = estimate(bench, "q", judge, contrasts="all")
    assert [(c.a, c.b) for c in result.contrasts] == [("A", "B"), ("A", "C"), ("B", "C")]
    ea, eb = result.group("A").estimate, result.group("B").estimate
    ab = result.contrasts[0]
    assert ab.estimate == pytest.approx(ea.estimate - eb.estimate) and ab.family == 3
    # the shared slope's error is common to both groups: it enters with the product of their gaps
    slope_var = ((ea.se**2 + eb.se**2) - ab.se**2) / (2 * ea.slope_gap * eb.slope_gap)
    assert slope_var > 0
    rows = result.to_json()["contrasts"]
    assert rows[0]["a"] == "A" and rows[0]["family"] == 3 and rows[0]["joint_confidence"] == 0.95
    assert "contrasts (a - b; 95% intervals holding jointly, Bonferroni over 3" in result.table()
    pd = pytest.importorskip("pandas")
    frame = result.to_pandas("contrasts")
    assert isinstance(frame, pd.DataFrame) and list(frame["b"]) == ["B", "C", "C"]
    named = estimate(bench, "q", judge, contrasts="B:A")
    assert [(c.a, c.b) for c in named.contrasts] == [("B", "A")] and named.contrasts[0].family == 1
    assert (
        named.contrasts[0].high - named.contrasts[0].low < ab.high - ab.low
    )  # one contrast: less adjustment
    with pytest.raises(ConfigError, match="among"):
        estimate(bench, "q", judge, contrasts="A:Z")


def _estimates(points: dict[str, float], se: float) -> dict[str, MeanEstimate]:
    return {
        g: MeanEstimate(
            method="human",
            estimate=v,
            low=v - 1.96 * se,
            high=v + 1.96 * se,
            se=se,
            df=math.inf,
            confidence=0.95,
            target="items",
            n=100,
            n_labelled=20,
            n_judged=100,
            bias_corrected=True,
        )
        for g, v in points.items()
    }


def test_rank_intervals_from_contrasts_hold_jointly_and_are_narrower_than_per_group_bonferroni():
    truth = {f"S{k}": 0.3 * k for k in range(8)}
    true_rank = {g: 8 - k for k, g in enumerate(truth)}
    rng = np.random.default_rng(0)
    held, widths_c, widths_g = 0, [], []
    runs = 400
    for _ in range(runs):
        points = {g: v + rng.normal(0, 0.1) for g, v in truth.items()}
        est = _estimates(points, 0.1)
        by_c, by_g = rank_by_contrasts(est, 0.95), rank_estimates(est, 0.95)
        held += all(r.low <= true_rank[r.group] <= r.high for r in by_c.ranks)
        widths_c.append(np.mean([r.high - r.low for r in by_c.ranks]))
        widths_g.append(np.mean([r.high - r.low for r in by_g.ranks]))
    assert held / runs >= 0.95 - 4 * math.sqrt(0.05 * 0.95 / runs)
    assert np.mean(widths_c) < 0.8 * np.mean(widths_g)
