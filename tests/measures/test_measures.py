"""Tests for the measures of mitigate.measures, against hand computations, scipy and the krippendorff
package."""

from __future__ import annotations

import importlib
import importlib.util
import itertools
import math
import os
import subprocess
import sys
from pathlib import Path

import krippendorff
import numpy as np
import pydantic
import pytest
from scipy import stats as sps

import mitigate.measures as M
from mitigate.data import Item
from mitigate.errors import ConfigError, DataError
from mitigate.registry import build, lookup
from mitigate.scale import Scale

NAN = float("nan")


# --------------------------------------------------------------------------- result type


def test_measure_is_frozen_and_allows_nan():
    m = M.Measure(name="x", value=NAN, n=0, reason="too little")
    assert not m.ok
    with pytest.raises(pydantic.ValidationError):
        m.value = 1.0  # type: ignore[misc]
    with pytest.raises(pydantic.ValidationError):
        M.Measure(name="x", value=1.0, n=1, unknown=2)  # type: ignore[call-arg]


def test_item_column_helpers_read_scores_systems_documents_and_lengths():
    items = [
        Item(id="a", output="one two three", system="S1", doc_id="d1", human={"coherence": 4.0}),
        Item(id="b", output="one", system="S2", doc_id="d1"),
    ]
    h = M.human_scores(items, "coherence")
    assert h[0] == 4.0 and math.isnan(h[1])
    assert M.item_systems(items) == ["S1", "S2"]
    assert M.item_doc_ids(items) == ["d1", "d1"]
    assert M.output_lengths(items).tolist() == [3.0, 1.0]


# --------------------------------------------------------------------------- agreement


@pytest.mark.parametrize(
    ("method", "ref"), [("kendall", sps.kendalltau), ("spearman", sps.spearmanr), ("pearson", sps.pearsonr)]
)
def test_item_correlation_matches_scipy_and_counts_failures(method, ref):
    judge = [1, 2, None, 4, 5, 3, 2]
    human = [1.5, 2.0, 3.0, 3.5, 5.0, NAN, 1.0]
    m = M.item_correlation(judge, human, method)
    assert m.value == pytest.approx(ref([1, 2, 4, 5, 2], [1.5, 2.0, 3.5, 5.0, 1.0]).statistic)
    assert (m.n, m.n_failed) == (5, 2)
    assert m.name == f"{method}-item"


def test_item_correlation_is_nan_with_reason_for_too_little_or_constant_data():
    short = M.item_correlation([1, 2, None], [1, 2, 3])
    assert math.isnan(short.value) and "at least 3" in short.reason
    constant = M.item_correlation([3, 3, 3, 3], [1, 2, 3, 4])
    assert math.isnan(constant.value) and "constant" in constant.reason


def test_item_correlation_ci_brackets_value():
    rng = np.random.default_rng(0)
    human = rng.integers(1, 6, 200).astype(float)
    judge = np.clip(human + rng.integers(-1, 2, 200), 1, 5)
    m = M.item_correlation(judge, human, "spearman", ci=True, n_boot=300)
    assert m.ci_low < m.value < m.ci_high


def test_unknown_correlation_method_is_a_config_error():
    with pytest.raises(ConfigError, match="correlation method"):
        M.item_correlation([1, 2, 3], [1, 2, 3], "tau")


def test_document_correlation_averages_per_document_correlations_and_skips_undefined():
    # d1 agrees perfectly (tau 1), d2 swaps two outputs (tau 1/3), d3 is constant for the judge
    judge = [1, 2, 3, 1, 3, 2, 2, 2, 2]
    human = [1, 2, 3, 1, 2, 3, 1, 2, 3]
    docs = ["d1"] * 3 + ["d2"] * 3 + ["d3"] * 3
    m = M.document_correlation(judge, human, docs, "kendall")
    assert m.value == pytest.approx((1 + 1 / 3) / 2)
    assert m.extra == {"n_documents": 2, "n_documents_undefined": 1}
    assert m.n == 6
    pooled = M.item_correlation(judge, human, "kendall")
    assert pooled.value != pytest.approx(m.value)


def test_shen_et_al_are_cited_for_the_pooled_level_not_the_per_document_one():
    # Shen et al. 2023 pool the 1,200 SummEval summaries into one correlation (their 4.2.2)
    assert "4.2.2" in M.item_correlation.__doc__ and "Shen" in M.item_correlation.__doc__
    doc = " ".join(M.document_correlation.__doc__.split())
    assert "Shen et al. 2023 do not" in doc and "pool the 1,200 summaries" in doc


def test_document_correlation_ci_resamples_documents():
    rng = np.random.default_rng(1)
    docs = [f"d{d}" for d in range(40) for _ in range(5)]
    human = rng.normal(size=200)
    judge = human + rng.normal(0, 0.5, 200)
    m = M.document_correlation(judge, human, docs, "pearson", ci=True, n_boot=300)
    assert m.ci_low < m.value < m.ci_high


def test_system_correlation_correlates_per_system_means_with_pairwise_deletion():
    systems = ["A", "A", "B", "B", "C", "C", "D", "D"]
    judge = [1, 3, 2, 2, 5, None, 4, 4]
    human = [1, 1, 3, 2, 4, 1, 5, 4]
    m = M.system_correlation(judge, human, systems, "pearson")
    # C keeps only its first item because its second judge score is missing
    assert m.extra["systems"]["C"] == {"judge": 5.0, "human": 4.0}
    assert m.value == pytest.approx(sps.pearsonr([2, 2, 5, 4], [1, 2.5, 4, 4.5]).statistic)
    assert (m.n, m.n_failed) == (7, 1)


def test_system_correlation_ci_with_documents():
    rng = np.random.default_rng(2)
    quality = np.linspace(1, 5, 6)
    systems = [f"S{s}" for _ in range(30) for s in range(6)]
    docs = [f"d{d}" for d in range(30) for _ in range(6)]
    human = np.tile(quality, 30) + rng.normal(0, 1, 180)
    judge = human + rng.normal(0, 1, 180)
    m = M.system_correlation(judge, human, systems, "pearson", doc_ids=docs, ci=True, n_boot=200)
    assert m.value > 0.8
    assert m.ci_low <= m.value <= m.ci_high


def test_system_level_rejects_duplicate_document_system_and_missing_system():
    with pytest.raises(DataError, match="one item per"):
        M.system_correlation([1, 2, 3], [1, 2, 3], ["A", "A", "B"], doc_ids=["d", "d", "d"])
    with pytest.raises(DataError, match="system for every item"):
        M.system_correlation([1, 2, 3], [1, 2, 3], ["A", None, "B"])


def test_per_system_and_meta_correlation_by_hand():
    systems = ["A"] * 4 + ["B"] * 4 + ["C"] * 4
    human = [1, 2, 3, 4, 2, 3, 4, 5, 3, 4, 5, 5]
    judge = [1, 2, 3, 4, 3, 2, 5, 4, 5, 4, 3, 2]
    per = M.per_system_correlation(judge, human, systems, "kendall")
    expected_p = [sps.kendalltau(judge[i : i + 4], human[i : i + 4]).statistic for i in (0, 4, 8)]
    assert [per[s].value for s in "ABC"] == pytest.approx(expected_p)
    quality = [2.5, 3.5, 4.25]
    meta = M.meta_correlation(judge, human, systems, "kendall", meta_method="pearson")
    assert meta.value == pytest.approx(sps.pearsonr(quality, expected_p).statistic)
    assert meta.value < 0  # agrees less on better systems
    assert meta.extra["systems"]["C"]["quality"] == pytest.approx(4.25)


def test_meta_correlation_ci_without_documents_resamples_within_systems():
    rng = np.random.default_rng(6)
    systems = [f"S{s}" for _ in range(40) for s in range(6)]
    human = np.round(np.tile(np.linspace(1, 4, 6), 40) + rng.normal(0, 1, 240))
    judge = np.round(human + rng.normal(0, 1, 240))
    m = M.meta_correlation(judge, human, systems, ci=True, n_boot=200)
    p = M.per_system_correlation(judge, human, systems)
    quality = [m.extra["systems"][s]["quality"] for s in p]
    assert m.value == pytest.approx(sps.kendalltau(quality, [x.value for x in p.values()]).statistic)
    assert m.ci_low <= m.value <= m.ci_high


def test_meta_correlation_is_nan_with_fewer_than_three_defined_systems():
    systems = ["A"] * 3 + ["B"] * 3 + ["C"] * 3
    human = [1, 2, 3, 1, 2, 3, 2, 2, 2]  # C is constant for humans: P_C undefined
    judge = [1, 2, 3, 3, 2, 1, 1, 2, 3]
    m = M.meta_correlation(judge, human, systems)
    assert math.isnan(m.value) and "at least 3" in m.reason


def test_accuracy_counts_matches_and_excludes_missing_predictions():
    m = M.accuracy(["a", "b", None, "a"], ["a", "a", "b", "a"])
    assert m.value == pytest.approx(2 / 3)
    assert (m.n, m.n_failed) == (3, 1)
    assert M.accuracy([3.0, 2], [3, 2.0]).value == 1.0
    assert math.isnan(M.accuracy([None], ["a"]).value)


def test_accuracy_reports_of_scored_and_of_all_with_a_parse_failure_counted_wrong():
    m = M.accuracy(["a", "b", None, "a", "a"], ["a", "a", "b", "a", None])
    assert (m.count, m.n, m.n_failed) == (2, 3, 2)
    assert m.value == pytest.approx(2 / 3)
    assert m.of_all == pytest.approx(2 / 4)  # the item without a gold label counts in neither


# --------------------------------------------------------------------------- correct preferences


def test_correct_preferences_by_hand():
    systems = ["A", "B", "C"] * 2
    docs = ["d1"] * 3 + ["d2"] * 3
    human = [5, 3, 1, 2, 4, 3]
    judge = [4, 4, 1, 1, 5, 3]
    m = M.correct_preferences(judge, human, systems, docs)
    # A-B: humans tie 1-1, judge prefers B 0.5-1.5 -> wrong; A-C: both tie -> right; B-C: both B -> right
    assert m.value == 2.0
    assert m.extra["n_pairs"] == 3
    table = {(p["a"], p["b"]): p for p in m.extra["pairs"]}
    assert table[("A", "B")]["judge_a"] == 0.5 and table[("A", "B")]["judge_b"] == 1.5
    assert table[("A", "B")]["correct"] is False
    assert table[("A", "C")]["correct"] is True


def _reference_cp(judge, human, systems, docs):
    by = {(d, s): (j, h) for j, h, s, d in zip(judge, human, systems, docs, strict=True)}
    names = list(dict.fromkeys(systems))
    correct = 0
    for a, b in itertools.combinations(names, 2):
        ja = jb = ha = hb = 0.0
        for d in dict.fromkeys(docs):
            (j1, h1), (j2, h2) = by[(d, a)], by[(d, b)]
            ja, jb = (ja + 1, jb) if j1 > j2 else (ja, jb + 1) if j1 < j2 else (ja + 0.5, jb + 0.5)
            ha, hb = (ha + 1, hb) if h1 > h2 else (ha, hb + 1) if h1 < h2 else (ha + 0.5, hb + 0.5)
        correct += (ja > jb and ha > hb) or (ja < jb and ha < hb) or (ja == jb and ha == hb)
    return correct


def test_correct_preferences_matches_a_direct_loop_on_twelve_systems():
    rng = np.random.default_rng(3)
    systems = [f"M{s}" for _ in range(20) for s in range(12)]
    docs = [f"d{d}" for d in range(20) for _ in range(12)]
    quality = np.tile(np.linspace(1, 4, 12), 20)
    human = np.round(quality + rng.normal(0, 1, 240))
    judge = np.round(quality + rng.normal(0, 1.5, 240))
    m = M.correct_preferences(judge, human, systems, docs, ci=True, n_boot=100)
    assert m.extra["n_pairs"] == 66
    assert m.value == _reference_cp(judge, human, systems, docs)
    assert m.ci_low <= m.value <= m.ci_high
    perfect = M.correct_preferences(human, human, systems, docs)
    assert perfect.value == 66


def test_correct_preferences_skips_documents_with_missing_scores():
    systems = ["A", "B"] * 3
    docs = ["d1", "d1", "d2", "d2", "d3", "d3"]
    human = [5, 1, 1, 5, 5, 1]
    judge = [5, 1, None, 5, 5, 1]  # without d2 both sides prefer A
    m = M.correct_preferences(judge, human, systems, docs)
    assert m.value == 1.0
    assert m.extra["pairs"][0]["n_documents"] == 2
    assert m.n_failed == 1


# --------------------------------------------------------------------------- perturbation consistency


def test_perturbation_consistency_by_hand():
    outputs = {
        "original": {"a": 1, "b": 2, "c": 3},
        "reordered": {"a": 1.0, "b": 3, "c": 3},
        "lengthened": {"a": 1, "b": 2},
    }
    m = M.perturbation_consistency(outputs)
    assert m.value == 0.5 and m.extra["percent"] == 50.0
    assert (m.n, m.n_failed) == (2, 1)


def test_consistency_chance_and_kappa_tell_a_collapsed_judge_from_a_stable_one():
    # complete rows a, b (c is missing under "lengthened"): columns (1, 2), (1.0, 3), (1, 2)
    m = M.perturbation_consistency(
        {
            "original": {"a": 1, "b": 2, "c": 3},
            "reordered": {"a": 1.0, "b": 3, "c": 3},
            "lengthened": {"a": 1, "b": 2},
        }
    )
    # answer 1: 1/2 * 1/2 * 1/2; answer 2: 1/2 * 0 * 1/2  -> chance 1/8
    assert m.extra["chance"] == pytest.approx(0.125)
    assert m.extra["kappa"] == pytest.approx((0.5 - 0.125) / (1 - 0.125))
    # a judge answering 5 to nearly everything is "consistent" by chance: kappa near 0
    collapsed = M.perturbation_consistency(
        {"p0": {str(i): 5 for i in range(10)}, "p1": {str(i): (3 if i == 0 else 5) for i in range(10)}}
    )
    assert collapsed.value == pytest.approx(0.9)
    assert collapsed.extra["chance"] == pytest.approx(0.9)
    assert collapsed.extra["kappa"] == pytest.approx(0.0)
    stable = M.perturbation_consistency({"p0": {"a": "A", "b": "B"}, "p1": {"a": "A", "b": "B"}})
    assert stable.extra["kappa"] == pytest.approx(1.0)
    constant = M.perturbation_consistency({"p0": {"a": 4, "b": 4}, "p1": {"a": 4, "b": 4}})
    assert constant.value == 1.0 and math.isnan(constant.extra["kappa"])


def test_chance_and_kappa_count_true_as_1_as_the_share_does():
    rows = [[True, 1], [False, 0], [True, 1.0], [False, 0]]
    # one notion of equality: True == 1, so each prompt answers "1" half the time and chance is 0.5
    assert M.chance_consistency(rows) == pytest.approx(0.5)
    assert M.consistency_kappa(rows) == pytest.approx((1.0, 0.5, 1.0))
    m = M.perturbation_consistency({"a": {"x": True, "y": False}, "b": {"x": 1, "y": 0}})
    assert m.value == 1.0 and m.extra["chance"] == pytest.approx(0.5)
    assert M.labels_equal(np.True_, 1) and M.label_key(True) == M.label_key(1.0)
    assert not M.labels_equal("1", 1) and not M.labels_equal(True, 2)


def test_perturbation_consistency_reports_of_scored_and_of_all_like_llmbar():
    # 419 items: 323 answered alike under both prompts, 77 not, 19 without an answer under one prompt
    a = {i: 3 for i in range(419)}
    b = {i: 3 if i < 323 else (4 if i < 400 else None) for i in range(419)}
    m = M.perturbation_consistency({"a": a, "b": b})
    assert (m.count, m.n, m.n_failed, m.n_all) == (323, 400, 19, 419)
    assert m.value == pytest.approx(323 / 400)
    assert m.of_all == pytest.approx(323 / 419)


def test_perturbation_consistency_needs_two_prompts():
    with pytest.raises(ConfigError, match="at least 2"):
        M.perturbation_consistency({"only": {"a": 1}})


def test_accuracy_under_perturbation_averages_per_perturbation_accuracy():
    outputs = {"p1": {"a": "A", "b": "B", "c": "C"}, "p2": {"a": "A", "b": "A", "c": None}}
    gold = {"a": "A", "b": "B", "c": "B"}
    m = M.accuracy_under_perturbation(outputs, gold)
    assert m.extra["per_perturbation"]["p1"] == {"accuracy": pytest.approx(2 / 3), "n": 3}
    assert m.extra["per_perturbation"]["p2"] == {"accuracy": 0.5, "n": 2}
    assert m.value == pytest.approx((2 / 3 + 0.5) / 2)
    assert (m.n, m.n_failed) == (5, 1)


# --------------------------------------------------------------------------- likelihood bias


def test_unfairness_scores_map_judge_onto_human_mean_and_range():
    # judge on 1-10, human on 1-5: judge mapped to the human mean 2 and range 2
    us = M.unfairness_scores([2, 10, 6, None], [1, 2, 3, 4])
    assert us[:3] == pytest.approx([0.0, 1.0, -1.0])
    assert math.isnan(us[3])
    assert np.all(np.isnan(M.unfairness_scores([3, 3, 3], [1, 2, 3])))


def test_centre_unit_range_has_mean_zero_and_extreme_at_one():
    x = M.centre_unit_range([0, 1, 5, None])
    assert x[:3] == pytest.approx([-2 / 3, -1 / 3, 1.0])
    assert np.nanmean(x) == pytest.approx(0.0)
    assert np.all(np.isnan(M.centre_unit_range([2, 2])))


def test_rs_scores_by_hand():
    ls = [-10.0, -20.0, -30.0, None]
    us = [1.0, 0.0, -1.0, 0.5]
    # LS* = [1, 0, -1], US* = [1, 0, -1] over the three complete items
    rs = M.rs_scores(ls, us)
    assert rs[:3] == pytest.approx([2.0, 0.0, 2.0])
    assert math.isnan(rs[3])


def _released_rescale(x: np.ndarray) -> np.ndarray:
    centred = x - x.mean()
    return centred / np.abs(centred).max()


def test_unfairness_scores_offer_the_released_codes_max_deviation_scaling_and_default_to_the_papers():
    rng = np.random.default_rng(0)
    human = rng.uniform(1, 5, 40).round(1)
    judge = np.minimum(100, rng.exponential(15, 40) + 50).round()  # skewed, as judges' scores are
    ls = rng.normal(-60, 15, 40)
    paper = M.unfairness_scores(judge, human)
    released = M.unfairness_scores(judge, human, scaling="max-deviation")
    assert paper == pytest.approx(
        (judge - judge.mean()) / np.ptp(judge) * np.ptp(human) + human.mean() - human
    )
    assert released == pytest.approx(_released_rescale(judge) - _released_rescale(human))

    def top8(us: np.ndarray) -> set[int]:
        return set(np.argsort(-M.rs_scores(ls, us), kind="stable")[:8].tolist())

    assert len(top8(paper) ^ top8(released)) == 2  # on skewed data the two top-8 lists differ by one item
    # the released code's whole ranking: |rescale(LS) + rescale(US)|, US from max-deviation scaling
    expected = np.abs(_released_rescale(ls) + _released_rescale(released))
    assert M.rs_scores(ls, released) == pytest.approx(expected)
    with pytest.raises(ConfigError, match="'scaling' parameter of unfairness_scores must be one of"):
        M.unfairness_scores(judge, human, scaling="minmax")


def test_bias_score_is_spearman_of_likelihood_and_unfairness():
    ls = [-5.0, -3.0, -8.0, -1.0, -4.0]
    us = [0.2, 0.1, -0.5, 0.9, 0.0]
    m = M.bias_score(ls, us)
    assert m.name == "bias-score"
    assert m.value == pytest.approx(sps.spearmanr(ls, us).statistic)


# --------------------------------------------------------------------------- familiarity


def test_familiarity_groups_perplexity_by_rounded_rating():
    ppl = [10.0, 20.0, 30.0, 40.0, 50.0]
    judge = [5, 4, 4, 2, None]
    human = [3.5, 2.5, 3.4, 1.2, 3.0]
    m = M.familiarity(ppl, judge, human, (1, 5))
    # halves round up: 3.5 -> 4, 2.5 -> 3, 3.4 -> 3, 1.2 -> 1
    assert m.extra["human"] == {
        1.0: {"mean_perplexity": 40.0, "count": 1},
        3.0: {"mean_perplexity": 25.0, "count": 2},
        4.0: {"mean_perplexity": 10.0, "count": 1},
    }
    assert m.extra["judge"][4.0] == {"mean_perplexity": 25.0, "count": 2}
    expected = sps.spearmanr(ppl[:4], judge[:4]).statistic - sps.spearmanr(ppl[:4], human[:4]).statistic
    assert m.value == pytest.approx(expected)
    assert (m.n, m.n_failed) == (4, 1)


# --------------------------------------------------------------------------- score distribution


def test_histogram_and_scale_coverage_by_hand():
    scores = [1, 1, 3, 5, None, 7]
    assert M.score_histogram(scores, (1, 5)) == {1.0: 2, 2.0: 0, 3.0: 1, 4.0: 0, 5.0: 1}
    m = M.scale_coverage(scores, Scale(min=1, max=5))
    assert m.value == pytest.approx(3 / 5)
    assert (m.n, m.n_failed) == (4, 2)
    assert m.extra["n_out_of_scale"] == 1


def test_round_number_excess_against_uniform_share():
    scores = [10, 20, 15, 37, 50]
    tens = M.round_number_excess(scores, (1, 100), multiple=10)
    assert tens.extra["observed"] == pytest.approx(0.6)
    assert tens.extra["expected"] == pytest.approx(0.1)
    assert tens.value == pytest.approx(0.5)
    fives = M.round_number_excess(scores, (1, 100), multiple=5)
    assert fives.value == pytest.approx(0.8 - 0.2)
    uniform = M.round_number_excess(list(range(1, 101)), (1, 100), multiple=5)
    assert uniform.value == pytest.approx(0.0)


def test_score_entropy_in_bits():
    assert M.score_entropy([1, 1, 2, 2], (1, 5)).value == pytest.approx(1.0)
    assert M.score_entropy([3, 3, 3], (1, 5)).value == 0.0
    spread = M.score_entropy([1, 2, 3, 4], (1, 4))
    assert spread.value == pytest.approx(2.0) and spread.extra["normalised"] == pytest.approx(1.0)
    assert math.isnan(M.score_entropy([None], (1, 5)).value)


def test_distribution_measures_take_a_bootstrap_interval():
    rng = np.random.default_rng(4)
    m = M.score_entropy(rng.integers(1, 6, 300), (1, 5), ci=True, n_boot=200)
    assert m.ci_low <= m.value <= m.ci_high


# --------------------------------------------------------------------------- anchoring


def test_inter_criterion_correlation_is_the_mean_of_pairwise_correlations():
    scores = {"coh": [1, 2, 3, 4, 5], "flu": [2, 1, 4, 3, 5], "rel": [5, 3, 4, 1, None]}
    m = M.inter_criterion_correlation(scores, "spearman")
    cols = {k: v[:4] for k, v in scores.items()}
    pairs = [sps.spearmanr(cols[a], cols[b]).statistic for a, b in itertools.combinations(cols, 2)]
    assert m.value == pytest.approx(np.mean(pairs))
    assert m.extra["pairs"]["coh|flu"] == pytest.approx(pairs[0])
    assert (m.n, m.n_failed) == (4, 1)


def test_anchoring_compares_judge_and_human_inter_criterion_correlation():
    judge = {"coh": [1, 2, 3, 4, 5], "flu": [1, 2, 3, 4, 5]}
    human = {"coh": [1, 2, 3, 4, 5], "flu": [3, 1, 2, 5, 4]}
    m = M.anchoring(judge, human, "kendall", ci=True, n_boot=100)
    assert m.extra["judge_mean"] == pytest.approx(1.0)
    assert m.extra["human_mean"] == pytest.approx(sps.kendalltau([1, 2, 3, 4, 5], [3, 1, 2, 5, 4]).statistic)
    assert m.value == pytest.approx(1.0 - m.extra["human_mean"])


def test_anchoring_rejects_mismatched_criteria():
    with pytest.raises(DataError, match="same criteria"):
        M.anchoring({"a": [1], "b": [2]}, {"a": [1], "c": [2]})


def test_correlation_by_position_with_fixed_order():
    human = {"coh": [1, 2, 3, 4, 5], "flu": [1, 2, 3, 4, 5]}
    judge = {"coh": [1, 2, 3, 4, 5], "flu": [2, 1, 4, 5, 3]}
    m = M.correlation_by_position(judge, human, ["coh", "flu"], "kendall")
    flu_tau = sps.kendalltau(judge["flu"], human["flu"]).statistic
    assert m.extra["by_position"] == {0: pytest.approx(1.0), 1: pytest.approx(flu_tau)}
    assert m.value == pytest.approx(1.0 - flu_tau)


def test_correlation_by_position_with_per_item_positions():
    human = {"a": [1, 2, 3, 4, 1, 2, 3, 4], "b": [1, 2, 3, 4, 1, 2, 3, 4]}
    judge = {"a": [1, 2, 3, 4, 4, 3, 2, 1], "b": [4, 3, 2, 1, 1, 2, 3, 4]}
    positions = {"a": [0, 0, 0, 0, 1, 1, 1, 1], "b": [1, 1, 1, 1, 0, 0, 0, 0]}
    m = M.correlation_by_position(judge, human, positions, "kendall")
    # whichever criterion comes first agrees perfectly, whichever comes second is reversed
    assert m.extra["by_position"] == {0: pytest.approx(1.0), 1: pytest.approx(-1.0)}
    assert m.value == pytest.approx(2.0)


# --------------------------------------------------------------------------- inter-sample agreement


KRIPPENDORFF_EXAMPLE = [
    [1, 2, 3, 3, 2, 1, 4, 1, 2, None, None, None],
    [1, 2, 3, 3, 2, 2, 4, 1, 2, 5, None, 3],
    [None, 3, 3, 3, 2, 3, 4, 2, 2, 5, 1, None],
    [1, 2, 3, 3, 2, 4, 4, 1, 2, 5, 1, None],
]


def test_krippendorff_alpha_matches_package_and_published_example():
    m = M.krippendorff_alpha(KRIPPENDORFF_EXAMPLE)
    data = np.array([[NAN if v is None else v for v in row] for row in KRIPPENDORFF_EXAMPLE])
    assert m.value == pytest.approx(
        krippendorff.alpha(reliability_data=data, level_of_measurement="interval")
    )
    assert m.value == pytest.approx(0.849, abs=5e-4)  # Krippendorff (2011), interval
    assert M.krippendorff_alpha(KRIPPENDORFF_EXAMPLE, "nominal").value == pytest.approx(0.743, abs=5e-4)
    assert (m.n, m.n_failed) == (11, 7)


def test_krippendorff_alpha_is_nan_for_constant_or_unpairable_data():
    constant = M.krippendorff_alpha([[2, 2, 2], [2, 2, 2]])
    assert math.isnan(constant.value) and "same" in constant.reason
    lonely = M.alpha_across_samples([[1, 2, None], [None, None, 3]])
    assert math.isnan(lonely.value) and lonely.n == 0


def test_alpha_across_samples_and_settings_with_ci():
    rng = np.random.default_rng(5)
    truth = rng.integers(1, 6, 100).astype(float)
    samples = [np.clip(truth + rng.integers(-1, 2, 100), 1, 5) for _ in range(3)]
    m = M.alpha_across_samples(samples, ci=True, n_boot=100)
    assert m.name == "alpha-across-samples" and m.ci_low <= m.value <= m.ci_high
    s = M.alpha_across_settings({"t0": samples[0], "t1": samples[1]})
    assert s.extra["settings"] == ["t0", "t1"]
    assert s.value == pytest.approx(
        krippendorff.alpha(reliability_data=np.vstack(samples[:2]), level_of_measurement="interval")
    )


def test_alpha_across_settings_bins_settings_on_different_scales_to_the_coarsest():
    rng = np.random.default_rng(2)
    five = rng.integers(1, 6, 80).astype(float)
    # the same judgments on 1-100: 1 -> 1-20, 2 -> 21-40 ...
    hundred = (five - 1) * 20 + rng.integers(1, 21, 80)
    with pytest.raises(
        DataError, match=r"look to be on different scales \(1-5: up to 5 \(looks 1-5\), 1-100: up to"
    ):
        # unconverted it was -0.46: refused, never shown
        M.alpha_across_settings({"1-5": five, "1-100": hundred})
    m = M.alpha_across_settings({"1-5": five, "1-100": hundred}, scales={"1-5": (1, 5), "1-100": (1, 100)})
    assert m.value == pytest.approx(1.0)
    assert m.extra["binned_to"] == Scale.of((1, 5)).describe()
    assert m.extra["scales"] == {"1-5": Scale.of((1, 5)).describe(), "1-100": Scale.of((1, 100)).describe()}
    same = M.alpha_across_settings({"a": five, "b": five}, scales={"a": (1, 5), "b": (1, 5)})
    assert same.value == pytest.approx(1.0) and same.extra["binned_to"] is None
    with pytest.raises(DataError, match="missing"):
        M.alpha_across_settings({"a": five, "b": hundred}, scales={"a": (1, 5)})


def test_bin_to_scale_uses_equal_width_bins_of_the_source_points():
    edges = [1, 20, 21, 40, 41, 60, 61, 80, 81, 100, None]
    assert M.bin_to_scale(edges, (1, 100), (1, 5))[:10].tolist() == [1, 1, 2, 2, 3, 3, 4, 4, 5, 5]
    assert math.isnan(M.bin_to_scale(edges, (1, 100), (1, 5))[10])
    assert M.bin_to_scale(list(range(1, 11)), (1, 10), (1, 5)).tolist() == [1, 1, 2, 2, 3, 3, 4, 4, 5, 5]
    assert M.bin_to_scale([2.5, 7.5], (1, 10), (1, 5)).tolist() == [1, 4]
    with pytest.raises(ConfigError, match="no finer than the source"):
        M.bin_to_scale([3], (1, 5), (1, 10))
    with pytest.raises(DataError, match="expected scores on"):
        M.bin_to_scale([101], (1, 100), (1, 5))


# --------------------------------------------------------------------------- self-preference and length


def test_self_preference_matrix_is_row_min_max_normalised():
    evaluators = ["X"] * 3 + ["Y"] * 3
    generators = ["X", "Y", "Z"] * 2
    scores = [5, 3, 1, 4, 2, 3]
    m = M.self_preference(scores, evaluators, generators)
    assert m.extra["normalised"] == [[1.0, 0.5, 0.0], [1.0, 0.0, 0.5]]
    # X: 1 - mean(0.5, 0) = 0.75; Y: 0 - mean(1, 0.5) = -0.75
    assert m.extra["self_bias"] == {"X": pytest.approx(0.75), "Y": pytest.approx(-0.75)}
    assert m.value == pytest.approx(0.0)


def test_self_preference_is_nan_when_no_evaluator_generated():
    m = M.self_preference([1, 2], ["E", "E"], ["G1", "G2"])
    assert math.isnan(m.value) and m.reason


def _self_preference_data() -> tuple[list[float], list[str], list[str], list[str]]:
    """Two evaluators judge the same texts of three generators; text quality is shared by both judgments."""
    rng = np.random.default_rng(3)
    rows = []
    for g, n_texts, spread in (("A", 20, 0.3), ("B", 20, 0.3), ("C", 6, 4.0)):
        for t in range(n_texts):
            quality = rng.normal(0, spread)
            for e in ("A", "B"):
                rows.append((quality + (1.0 if e == g else 0.0) + rng.normal(0, 0.05), e, g, f"{g}-{t}"))
    scores, evaluators, generators, texts = (list(c) for c in zip(*rows, strict=True))
    return scores, evaluators, generators, texts


def _bootstrap_by_hand(groups: list[list[int]], data: tuple, n_boot: int) -> np.ndarray:
    scores, evaluators, generators, _ = data
    rng = np.random.default_rng(99)
    values = []
    for _ in range(n_boot):
        idx = [i for d in rng.integers(0, len(groups), len(groups)) for i in groups[d]]
        values.append(
            M.self_preference(
                [scores[i] for i in idx], [evaluators[i] for i in idx], [generators[i] for i in idx]
            ).value
        )
    return np.nanpercentile(values, [2.5, 97.5])


def test_self_preference_bootstrap_resamples_texts_keeping_every_evaluators_judgment_of_a_text():
    data = _self_preference_data()
    scores, evaluators, generators, texts = data
    m = M.self_preference(scores, evaluators, generators, texts=texts, ci=True, n_boot=1000, seed=1)
    ids = list(dict.fromkeys(texts))
    by_text = _bootstrap_by_hand([[i for i, t in enumerate(texts) if t == x] for x in ids], data, 1000)
    by_judgment = _bootstrap_by_hand([[i] for i in range(len(scores))], data, 1000)
    assert m.extra["n_texts"] == len(ids) == 46
    assert (m.ci_low, m.ci_high) == (pytest.approx(by_text[0], abs=0.03), pytest.approx(by_text[1], abs=0.03))
    assert abs(m.ci_high - by_judgment[1]) > 0.05  # resampling single judgments gives another interval
    with pytest.raises(ConfigError, match="texts="):
        M.self_preference(scores, evaluators, generators, ci=True, n_boot=10)


def test_length_correlation_counts_words_of_texts():
    texts = ["a b c", "a", "a b c d e", "a b"]
    scores = [3, 1, 4, 2.5]
    m = M.length_correlation(scores, texts)
    assert m.name == "length-spearman"
    assert m.value == pytest.approx(sps.spearmanr(scores, [3, 1, 5, 2]).statistic)


# --------------------------------------------------------------------------- source sensitivity


def test_source_sensitivity_by_hand():
    with_src = [3, 4, 5, 2, 4, 1]
    without = [3, 2, 5, 1, 1, None]
    human = [3, 4, 5, 2, 3, 1]
    m = M.source_sensitivity(with_src, without, human, "kendall")
    assert m.value == pytest.approx((0 + 2 + 0 + 1 + 3) / 5)
    assert m.extra["share_changed"] == pytest.approx(3 / 5)
    assert m.extra["wilcoxon_p"] == pytest.approx(sps.wilcoxon([3, 4, 5, 2, 4], [3, 2, 5, 1, 1]).pvalue)
    assert m.extra["kendall_with_source"] == pytest.approx(sps.kendalltau(with_src, human).statistic)
    assert (m.n, m.n_failed) == (5, 1)


def test_source_sensitivity_without_any_change_has_nan_wilcoxon():
    m = M.source_sensitivity([1, 2, 3], [1, 2, 3])
    assert m.value == 0.0 and m.extra["share_changed"] == 0.0
    assert math.isnan(m.extra["wilcoxon_p"])


# --------------------------------------------------------------------------- position bias


def test_position_bias_counts_flips_after_mapping_back_and_first_share():
    original = ["first", "second", "tie", "first", None]
    swapped = ["second", "second", "tie", "first", "first"]
    m = M.position_bias(original, swapped)
    assert m.value == 0.5
    assert m.extra["n_flipped"] == 2
    assert m.extra["first_share"] == pytest.approx(3 / 8)
    assert m.extra["tie_share"] == pytest.approx(2 / 8)
    assert (m.n, m.n_failed) == (4, 1)


def test_position_bias_reports_order_consistency_of_all_as_llmbar_does():
    # 419 pairs: 323 consistent, 80 flipped, 16 with a failed verdict
    original = ["first"] * 419
    swapped = ["second"] * 323 + ["first"] * 80 + [None] * 16
    m = M.position_bias(original, swapped)
    assert m.value == pytest.approx(80 / 403) and (m.count, m.n, m.n_failed) == (80, 403, 16)
    assert m.of_all == pytest.approx(96 / 419)  # a failed verdict counts as not position-consistent
    assert m.extra["consistency_of_all"] == pytest.approx(323 / 419)


def test_position_bias_rejects_unknown_verdicts():
    with pytest.raises(DataError, match="verdict"):
        M.position_bias(["A"], ["first"])


def test_ci_is_none_when_value_is_nan():
    m = M.item_correlation([1, 1, 1], [1, 2, 3], ci=True)
    assert math.isnan(m.value) and m.ci_low is None and m.ci_high is None


# --------------------------------------------------------------------------- package


def test_importing_the_measures_does_not_import_scipy_sklearn_or_matplotlib():
    root = Path(__file__).resolve().parents[2]
    code = (
        "import sys, mitigate.measures; "
        "print(sorted({m.split('.')[0] for m in sys.modules} & {'scipy', 'sklearn', 'matplotlib'}))"
    )
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(root), os.environ.get("PYTHONPATH", "")])}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, check=True)
    assert out.stdout.strip() == "[]"


def test_every_reported_measure_is_registered_with_display_info_and_a_spec_that_round_trips():
    table = M.measure_table()
    assert list(table)[:2] == ["spearman-item", "kendall-item"] and "perturbation-consistency" in table
    assert [M.MEASURES[k].group for k in table] == sorted(
        (M.MEASURES[k].group for k in table), key=["accuracy", "bias", "consistency"].index
    )
    for key, cls in table.items():
        assert isinstance(cls.info, M.MeasureInfo) and cls.info.label
        measure = cls()
        assert build("measure", measure.spec()) == measure and lookup("measure", key) is cls
        with pytest.raises(pydantic.ValidationError):
            measure.x = 1  # type: ignore[attr-defined]


def test_a_reported_measure_is_one_decorated_function_registered_with_what_the_report_shows():
    @M.reported_measure("test-top-half", "top half", "higher", "bias", task="pairwise", on_humans=True)
    def _top_half(entry: M.EntryData) -> M.Measure:
        """Share of items in the upper half of the scale.

        a test measure: its docstring's second
        paragraph is the note under the table
        """
        return M.Measure(name="test-top-half", value=0.5, n=len(entry.items))

    cls = lookup("measure", "test-top-half")
    assert (cls.__name__, cls.__qualname__, cls.__module__) == ("TopHalf", "TopHalf", __name__)
    assert cls.__doc__ == _top_half.__doc__ and issubclass(cls, M.ReportedMeasure)
    note = "a test measure: its docstring's second paragraph is the note under the table"
    assert cls.info == M.MeasureInfo(label="top half", direction="higher", group="bias", note=note)
    assert cls.task == "pairwise" and cls.on_humans and not cls.reads_labels()
    assert "test-top-half" in M.measure_table("pairwise") and "test-top-half" not in M.measure_table("score")
    entry = M.EntryData(
        scores=np.array([1.0]), items=[Item(id="a", output="x")], criterion="q", scale=Scale()
    )
    assert cls().compute(entry) == _top_half(entry) == M.Measure(name="test-top-half", value=0.5, n=1)
    # the classes mitigate's own measures register keep their names (``mitigate list measures NAME``)
    assert lookup("measure", "bradley-terry").__qualname__ == "BradleyTerryRanking"
    assert lookup("measure", "round-number-excess-5").__qualname__ == "RoundNumberExcess5"


def test_measures_are_one_package_of_family_modules_without_a_metrics_module():
    assert importlib.util.find_spec("mitigate.measures.metrics") is None
    for family in (
        "agreement",
        "consistency",
        "likelihood_bias",
        "distribution",
        "reliability",
        "self_bias",
        "pairwise",
    ):
        module = importlib.import_module(f"mitigate.measures._{family}")
        public = [
            name for name in M.__all__ if getattr(getattr(M, name), "__module__", None) == module.__name__
        ]
        assert public, f"measures exports nothing of its {family} module"
