"""Tests for mitigate.measures._stats: correlations, bootstrap intervals, permutation tests."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats as sps

from mitigate.errors import ConfigError, DataError
from mitigate.measures import bootstrap_ci, complete_pairs, spearman
from mitigate.measures._stats import (
    PermutationResult,
    batched,
    kendall,
    kendall_columns,
    paired_permutation_test,
    pearson,
    permutation_test_mean_diff,
    rank_rows,
    ranks_from_codes,
)


@pytest.fixture
def tied_scores() -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(7)
    human = rng.integers(1, 6, 60).astype(float)
    judge = np.clip(human + rng.integers(-1, 2, 60), 1, 5).astype(float)
    return judge, human


def test_correlations_match_scipy_on_tied_data(tied_scores):
    judge, human = tied_scores
    assert pearson(judge, human) == pytest.approx(sps.pearsonr(judge, human).statistic, abs=1e-12)
    assert spearman(judge, human) == pytest.approx(sps.spearmanr(judge, human).statistic, abs=1e-12)
    assert kendall(judge, human) == pytest.approx(sps.kendalltau(judge, human).statistic, abs=1e-12)


def test_correlations_drop_missing_values_pairwise():
    x = [1, 2, None, 4, 5, float("nan")]
    y = [2, 1, 3, 4, 6, 1]
    assert spearman(x, y) == pytest.approx(sps.spearmanr([1, 2, 4, 5], [2, 1, 4, 6]).statistic)


def test_correlation_is_nan_not_zero_for_too_few_pairs_or_constant_input():
    assert math.isnan(pearson([1, 2], [2, 1]))
    assert math.isnan(spearman([3, 3, 3, 3], [1, 2, 3, 4]))
    assert math.isnan(kendall([1, 2, 3, None], [2, None, 1, 3]))


def test_complete_pairs_rejects_unequal_lengths():
    with pytest.raises(DataError, match="equal length"):
        complete_pairs([1, 2, 3], [1, 2])


def test_rank_rows_and_rank_from_codes_match_scipy_average_ranks():
    rng = np.random.default_rng(0)
    x = rng.integers(1, 5, (30, 17)).astype(float)
    expected = sps.rankdata(x, axis=1)
    assert np.array_equal(rank_rows(x), expected)
    values, codes = np.unique(x, return_inverse=True)
    assert np.array_equal(ranks_from_codes(codes.reshape(x.shape), len(values)), expected)


def test_kendall_columns_matches_scipy_per_column_with_missing_values():
    rng = np.random.default_rng(8)
    a = rng.integers(1, 6, (40, 5)).astype(float)
    b = rng.integers(1, 6, (40, 5)).astype(float)
    a[3, 1] = b[7, 1] = b[2, 4] = np.nan
    b[:, 3] = 2.0  # constant column: undefined
    expected = [kendall(a[:, k], b[:, k]) for k in range(5)]
    got = kendall_columns(a, b)
    assert np.allclose(got[[0, 1, 2, 4]], [expected[k] for k in (0, 1, 2, 4)])
    ok = np.isfinite(a[:, 1]) & np.isfinite(b[:, 1])
    assert got[1] == pytest.approx(sps.kendalltau(a[ok, 1], b[ok, 1]).statistic)
    assert math.isnan(got[3])


def test_named_spearman_bootstrap_equals_looped_scipy_with_same_seed(tied_scores):
    judge, human = tied_scores
    fast = bootstrap_ci("spearman", judge, human, n_boot=200, seed=3)
    slow = bootstrap_ci(lambda a, b: sps.spearmanr(a, b).statistic, judge, human, n_boot=200, seed=3)
    assert fast == pytest.approx(slow, abs=1e-12)
    assert fast[0] < spearman(judge, human) < fast[1]


def test_named_kendall_and_pearson_bootstraps_equal_looped_scipy(tied_scores):
    judge, human = tied_scores
    for name, ref in (("kendall", sps.kendalltau), ("pearson", sps.pearsonr)):
        fast = bootstrap_ci(name, judge, human, n_boot=100, seed=1)
        slow = bootstrap_ci(lambda a, b, ref=ref: ref(a, b).statistic, judge, human, n_boot=100, seed=1)
        assert fast == pytest.approx(slow, abs=1e-12)


def test_paired_bootstrap_resamples_the_same_items_for_every_array():
    a = np.arange(50, dtype=float)
    paired = bootstrap_ci(lambda x, y: float(np.mean(x - y)), a, a.copy(), n_boot=100)
    unpaired = bootstrap_ci(lambda x, y: float(np.mean(x - y)), a, a.copy(), n_boot=100, paired=False)
    assert paired == (0.0, 0.0)
    assert unpaired[0] < -1 and unpaired[1] > 1


def test_batched_statistic_gets_all_resamples_at_once():
    calls = []

    @batched
    def mean_rows(x: np.ndarray) -> np.ndarray:
        calls.append(x.shape)
        return x.mean(axis=1)

    low, high = bootstrap_ci(mean_rows, np.arange(20, dtype=float), n_boot=300)
    assert calls == [(300, 20)]
    assert low < 9.5 < high


def test_bootstrap_of_mean_matches_normal_theory_on_large_sample():
    x = np.random.default_rng(5).normal(10.0, 2.0, 2000)
    low, high = bootstrap_ci(lambda v: float(v.mean()), x, n_boot=1000)
    half = 1.96 * x.std(ddof=1) / math.sqrt(len(x))
    assert low == pytest.approx(x.mean() - half, abs=0.03)
    assert high == pytest.approx(x.mean() + half, abs=0.03)


def test_bootstrap_gives_nan_interval_when_most_resamples_are_undefined():
    assert all(math.isnan(v) for v in bootstrap_ci(lambda v: math.nan, np.arange(5.0), n_boot=20))
    assert all(math.isnan(v) for v in bootstrap_ci("spearman", [1, 1, 1, 1], [1, 2, 3, 4]))


def test_bootstrap_is_reproducible_by_seed_and_varies_across_seeds(tied_scores):
    judge, human = tied_scores
    assert bootstrap_ci("spearman", judge, human, seed=9) == bootstrap_ci("spearman", judge, human, seed=9)
    assert bootstrap_ci("spearman", judge, human, seed=9) != bootstrap_ci("spearman", judge, human, seed=10)


def test_bootstrap_rejects_bad_parameters():
    with pytest.raises(ConfigError, match="n_boot"):
        bootstrap_ci("spearman", [1, 2, 3], [1, 2, 3], n_boot=0)
    with pytest.raises(ConfigError, match="alpha"):
        bootstrap_ci("spearman", [1, 2, 3], [1, 2, 3], alpha=1.5)
    with pytest.raises(ConfigError, match="correlation method"):
        bootstrap_ci("tau", [1, 2, 3], [1, 2, 3])
    with pytest.raises(DataError, match="equal length"):
        bootstrap_ci(lambda a, b: 0.0, [1, 2, 3], [1, 2])


def test_batched_spearman_bootstrap_equals_the_per_resample_computation():
    # the named, batched path (how 1,000 resamples of 1,200 items stay fast) must give the
    # interval that computing scipy's Spearman on every resample one by one gives
    rng = np.random.default_rng(1)
    human = rng.integers(1, 6, 1200).astype(float)
    judge = np.clip(human + rng.normal(0, 1, 1200).round(), 1, 5)
    fast = bootstrap_ci("spearman", judge, human, n_boot=300, seed=3)
    slow = bootstrap_ci(lambda a, b: sps.spearmanr(a, b).statistic, judge, human, n_boot=300, seed=3)
    assert fast == pytest.approx(slow, abs=1e-12)


def test_paired_permutation_identical_judges_gives_zero_difference_and_p_one(tied_scores):
    judge, human = tied_scores
    result = paired_permutation_test(judge, judge.copy(), human, n_perm=200)
    assert isinstance(result, PermutationResult)
    assert result.observed == 0.0
    assert result.p_value == 1.0


def test_paired_permutation_detects_a_much_better_judge():
    rng = np.random.default_rng(2)
    human = rng.normal(size=200)
    good = human + rng.normal(0, 0.3, 200)
    bad = rng.normal(size=200)
    result = paired_permutation_test(good, bad, human, n_perm=2000)
    assert result.observed > 0.5
    assert result.p_value < 0.01
    assert result.observed_a == pytest.approx(sps.spearmanr(good, human).statistic)


def test_paired_permutation_matches_a_looped_reference_with_the_same_swaps():
    rng = np.random.default_rng(4)
    human = rng.integers(1, 6, 40).astype(float)
    a = np.clip(human + rng.integers(-1, 2, 40), 1, 5).astype(float)
    b = np.clip(human + rng.integers(-2, 3, 40), 1, 5).astype(float)
    n_perm = 300
    swap = np.random.default_rng(11).random((n_perm, 40)) < 0.5
    observed = sps.spearmanr(a, human).statistic - sps.spearmanr(b, human).statistic
    null = np.array(
        [
            sps.spearmanr(np.where(s, b, a), human).statistic
            - sps.spearmanr(np.where(s, a, b), human).statistic
            for s in swap
        ]
    )
    expected_p = (1 + np.sum(np.abs(null) >= abs(observed) - 1e-12)) / (1 + n_perm)
    for stat in ("spearman", lambda x, y: sps.spearmanr(x, y).statistic):
        result = paired_permutation_test(a, b, human, stat=stat, n_perm=n_perm, seed=11)
        assert result.observed == pytest.approx(observed)
        assert result.p_value == pytest.approx(expected_p)


def test_paired_permutation_drops_incomplete_items_and_reports_undefined_statistic():
    result = paired_permutation_test([1, 2, None, 4], [1, 3, 2, 4], [1, 2, 3, None], n_perm=10)
    assert result.n == 2
    assert math.isnan(result.observed) and result.reason


def test_mean_difference_permutation_unpaired_and_paired():
    rng = np.random.default_rng(3)
    x = rng.normal(1.0, 1.0, 80)
    y = rng.normal(0.0, 1.0, 80)
    shifted = permutation_test_mean_diff(x, y, n_perm=2000)
    assert shifted.observed == pytest.approx(x.mean() - y.mean())
    assert shifted.p_value < 0.01
    same = permutation_test_mean_diff(y[:40], y[40:], n_perm=2000)
    assert same.p_value > 0.05
    paired = permutation_test_mean_diff([2.0] * 10, [1.0] * 10, n_perm=5000, paired=True)
    # only the two all-same sign patterns of 1024 reach |mean| >= 1
    assert paired.p_value == pytest.approx(2 / 1024, abs=0.003)
    assert paired.n == 10
