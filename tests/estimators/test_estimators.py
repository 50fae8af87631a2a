"""The estimators of a group's mean label: coverage with known truth, widths, the planner, selection and
refusals.

The coverage checks simulate with numpy: a finite group of items with known labels (the truth
is their mean) and a judge of a given quality, many random label draws at once, the
vectorised cores the estimator itself runs (``ppi_srs``, ``human_srs``); the calibrated
method, which loops over folds, is run through :func:`estimate_mean` on fewer draws. Every
tolerance is a binomial one: four standard errors of the empirical coverage around the
nominal level.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from pydantic import ValidationError

from mitigate.errors import ConfigError, DataError
from mitigate.estimators import MeanEstimate, estimate_mean, kendall_tau, labels_needed, rank_estimates
from mitigate.estimators._calibration import fit_calibration, pool_adjacent_violators
from mitigate.estimators._mean import pilot_spread
from mitigate.estimators._regression import human_srs, ppi_srs, shared_slope, t_quantile
from mitigate.estimators._selection import (
    allocate,
    half_width_at,
    inclusion_probabilities,
    systematic_draw,
    uncertainty,
)

NOMINAL = 0.95
N_ITEMS = 500
JUDGES = ("good", "noisy", "biased", "uncorrelated", "adversarial")
LABEL_COUNTS = (5, 10, 20, 100)


def tolerance(draws: int, level: float = NOMINAL) -> float:
    """Four binomial standard errors of an empirical coverage over ``draws``."""
    return 4 * math.sqrt(level * (1 - level) / draws)


def population(judge: str, seed: int = 0, size: int = N_ITEMS) -> tuple[np.ndarray, np.ndarray]:
    """Labels (means of three 1-5 ratings: thirds) and a judge of the named quality, rounded to 1-5."""
    rng = np.random.default_rng(seed)
    y = np.clip(np.round((3.3 + 0.8 * rng.normal(size=size)) * 3) / 3, 1, 5)
    e = rng.normal(size=size)
    f = {
        "good": y + 0.4 * e,  # close to the labels
        "noisy": y + 1.5 * e,  # weakly related
        "biased": 1.0 + 0.4 * y + 0.2 * e,  # offset and compressed slope: its mean is far off
        "uncorrelated": 3.0 + e,  # unrelated to the labels
        "adversarial": 6.0 - y + 0.5 * e,  # runs against them
    }[judge]
    return y, np.clip(np.round(f), 1, 5)


def draws(size: int, n: int, count: int, seed: int) -> np.ndarray:
    """``count`` random draws of ``n`` labelled positions out of ``size`` (one per row)."""
    return np.argsort(np.random.default_rng(seed).random((count, size)), axis=1)[:, :n]


def coverage(fit, truth: float, confidence: float = NOMINAL) -> tuple[float, float, float]:
    """Empirical coverage, mean half-width and the share of draws the estimator refuses (no spread)."""
    half = t_quantile(confidence, fit.df) * np.sqrt(fit.variance)
    usable = np.isfinite(half) & (fit.variance > 0)
    hit = np.abs(fit.estimate - truth) <= half
    return float(hit[usable].mean()), float(half[usable].mean()), float(1 - usable.mean())


# ---------------------------------------------------------------------------------------------
# coverage with known truth


@pytest.mark.parametrize("judge", JUDGES)
@pytest.mark.parametrize("n", LABEL_COUNTS)
def test_ppi_and_human_intervals_cover_the_group_mean_at_the_nominal_rate(judge, n):
    y, f = population(judge, seed=1)
    count = 2000
    idx = draws(N_ITEMS, n, count, seed=n)
    truth = y.mean()
    for name, fit in (
        ("ppi", ppi_srs(y[idx], f[idx], f.mean(), N_ITEMS)),
        ("human", human_srs(y[idx], N_ITEMS)),
    ):
        got, _, refused = coverage(fit, truth)
        assert refused < 0.01, (name, refused)
        assert abs(got - NOMINAL) <= tolerance(count), (name, judge, n, got)


@pytest.mark.parametrize("judge", JUDGES)
@pytest.mark.parametrize("n", LABEL_COUNTS)
def test_calibrated_intervals_cover_the_group_mean_at_the_nominal_rate(judge, n):
    y, f = population(judge, seed=2, size=200)
    count = 300
    idx = draws(200, n, count, seed=10 + n)
    hits = []
    for row in idx:
        labels = np.full(200, np.nan)
        labels[row] = y[row]
        try:
            e = estimate_mean(labels, f, method="calibrated", seed=int(row[0]))
        except DataError as exc:  # out-of-fold residuals all zero: refused, as the command would
            assert "exactly" in exc.message
            continue
        hits.append(e.low <= y.mean() <= e.high)
    assert len(hits) >= 0.95 * count
    assert abs(np.mean(hits) - NOMINAL) <= tolerance(len(hits)), (judge, n, np.mean(hits))


@pytest.mark.parametrize("judge", ("good", "biased", "uncorrelated"))
def test_ppi_covers_the_population_mean_when_the_items_are_themselves_a_draw(judge):
    # the population target: every draw makes new items (labels and judge values) from the same distribution
    count, size, n = 2000, 200, 20
    rng = np.random.default_rng(3)
    y = np.clip(np.round((3.3 + 0.8 * rng.normal(size=(count, size))) * 3) / 3, 1, 5)
    e = rng.normal(size=(count, size))
    f = {"good": y + 0.4 * e, "biased": 1.0 + 0.4 * y + 0.2 * e, "uncorrelated": 3.0 + e}[judge]
    f = np.clip(np.round(f), 1, 5)
    truth = np.clip(np.round((3.3 + 0.8 * rng.normal(size=2_000_000)) * 3) / 3, 1, 5).mean()
    fit = ppi_srs(y[:, :n], f[:, :n], f.mean(1), size, population=True)
    got, _, _ = coverage(fit, truth)
    assert abs(got - NOMINAL) <= tolerance(count), got
    items_only = ppi_srs(y[:, :n], f[:, :n], f.mean(1), size)
    # the items target is narrower: it leaves out the items' spread
    assert coverage(items_only, truth)[0] < got


# ---------------------------------------------------------------------------------------------
# widths: never wider than the labels alone beyond the price of fitting the judge


@pytest.mark.parametrize("judge", JUDGES)
@pytest.mark.parametrize("n", (20, 100))
def test_ppi_is_not_wider_than_the_labels_alone_whatever_the_judge(judge, n):
    y, f = population(judge, seed=4)
    idx = draws(N_ITEMS, n, 2000, seed=n + 5)
    _, ppi_width, _ = coverage(ppi_srs(y[idx], f[idx], f.mean(), N_ITEMS), y.mean())
    _, human_width, _ = coverage(human_srs(y[idx], N_ITEMS), y.mean())
    assert ppi_width <= 1.05 * human_width, (judge, n, ppi_width / human_width)


@pytest.mark.parametrize("judge", ("good", "biased", "adversarial"))
@pytest.mark.parametrize("n", LABEL_COUNTS)
def test_ppi_is_much_narrower_than_the_labels_alone_with_an_informative_judge(judge, n):
    y, f = population(judge, seed=4)
    idx = draws(N_ITEMS, n, 2000, seed=n + 6)
    _, ppi_width, _ = coverage(ppi_srs(y[idx], f[idx], f.mean(), N_ITEMS), y.mean())
    _, human_width, _ = coverage(human_srs(y[idx], N_ITEMS), y.mean())
    # with 5 labels, fitting the judge's slope costs a degree of freedom of 4
    bound = 0.95 if n == 5 else 0.85
    assert ppi_width < bound * human_width, (judge, n, ppi_width / human_width)


def test_power_tuning_never_leaves_more_residual_spread_than_the_labels_alone():
    rng = np.random.default_rng(7)
    y = rng.normal(size=(3000, 12))
    f = rng.normal(size=(3000, 12)) + rng.uniform(-1, 1, size=(3000, 1)) * y
    ppi = ppi_srs(y, f, f.mean(1), 50)
    human = human_srs(y, 50)
    assert np.all(ppi.s2 * (12 - 2) <= human.s2 * (12 - 1) + 1e-9)  # residual sums of squares: OLS minimises


def test_a_judge_constant_on_the_labelled_items_gets_lambda_zero_and_the_labels_alone_estimate():
    labels = [3, 4, 5, 2, None, None, None, None]
    judge = [4, 4, 4, 4, 1, 5, 2, 3]
    ppi = estimate_mean(labels, judge, method="ppi")
    human = estimate_mean(labels, judge, method="human")
    assert ppi.lam == 0.0 and ppi.estimate == pytest.approx(human.estimate)
    assert any("do not vary" in n for n in ppi.notes)


def test_ppi_lambda_is_the_papers_power_tuned_weight():
    # PPI++: lam = Cov(Y, f) / ((1 + n / N_u) Var(f)) on the labelled items, N_u the unlabelled count
    rng = np.random.default_rng(8)
    y_all = rng.normal(size=40)
    f_all = 0.7 * y_all + rng.normal(size=40)
    labels = np.where(np.arange(40) < 15, y_all, np.nan)
    e = estimate_mean(labels, f_all, method="ppi", target="population")
    yl, fl = y_all[:15], f_all[:15]
    lam = np.cov(yl, fl)[0, 1] / ((1 + 15 / 25) * fl.var(ddof=1))
    assert e.lam == pytest.approx(lam)
    assert e.estimate == pytest.approx(yl.mean() + lam * (f_all[15:].mean() - fl.mean()))


# ---------------------------------------------------------------------------------------------
# items without a judge value


def test_items_the_judge_failed_on_stay_in_the_group_and_the_estimate_still_covers():
    # the judge fails on a third of the low-quality items: dropping them would move the mean up
    y, f = population("good", seed=9, size=300)
    rng = np.random.default_rng(9)
    f = np.where((y < 3) & (rng.random(300) < 0.35), np.nan, f)
    count, hits, judge_only = 400, [], []
    for row in draws(300, 30, count, seed=9):
        labels = np.full(300, np.nan)
        labels[row] = y[row]
        e = estimate_mean(labels, f, method="ppi")
        assert e.n == 300 and e.n_judged == int(np.isfinite(f).sum())
        hits.append(e.low <= y.mean() <= e.high)
    judge_only = estimate_mean(np.full(300, np.nan), f, method="judge")
    assert abs(np.mean(hits) - NOMINAL) <= tolerance(count), np.mean(hits)
    assert judge_only.n_judged < 300 and not judge_only.bias_corrected
    assert any("no judge value" in n for n in judge_only.notes)


# ---------------------------------------------------------------------------------------------
# refusals


@pytest.mark.parametrize(
    ("labels", "method", "expected"),
    [
        ([None, None, None, None], "ppi", "has no labelled item"),
        ([3, None, None, None], "human", "has a single label"),
        ([3, 4, None, None], "ppi", "has 2 labels; 'ppi' needs at least 3"),
        ([4, 4, 4, None, None], "ppi", "its 3 labels are all 4"),
        ([4, 4, 4, None, None], "human", "its 3 labels are all 4"),
    ],
)
def test_what_cannot_be_estimated_is_refused_in_one_line_naming_the_group(labels, method, expected):
    with pytest.raises(DataError) as err:
        estimate_mean(labels, [1, 2, 3, 4, 5][: len(labels)], method=method, group="M8")
    assert expected in err.value.message and "'M8'" in err.value.message and "\n" not in err.value.message


def test_a_judge_that_fits_the_labels_exactly_is_refused_rather_than_given_a_zero_width_interval():
    with pytest.raises(DataError, match="predict each of its labels exactly"):
        estimate_mean([1, 2, 3, None, None], [2, 3, 4, 1, 5], method="ppi")


@pytest.mark.parametrize(
    ("weights", "expected"),
    [
        ([0.5, None, None, None, None, None], "expected selection weights >= 1"),
        ([None, None, None, None, 2.0, None], "carry a selection weight but no label"),
    ],
)
def test_bad_selection_weights_are_refused(weights, expected):
    with pytest.raises(DataError, match=expected):
        estimate_mean([3, 4, 2, 5, None, None], [3, 4, 2, 5, 1, 1], method="human", weights=weights)


@pytest.mark.parametrize(
    ("kw", "expected"),
    [
        ({"method": "best"}, "'method' parameter"),
        ({"confidence": 1.5}, "'confidence' parameter"),
        ({"target": "world"}, "'target' parameter"),
        ({"folds": 1}, "'folds' parameter"),
        ({"calibration": "spline"}, "'calibration' parameter"),
    ],
)
def test_bad_settings_are_config_errors(kw, expected):
    with pytest.raises(ConfigError, match=expected):
        estimate_mean([3, 4, 2, None], [3, 4, 2, 1], **kw)


def test_every_item_labelled_gives_the_exact_mean_for_the_items_target():
    e = estimate_mean([3, 4, 2, 5], [3, 4, 2, 5], method="human")
    assert e.estimate == 3.5 and e.low == e.high == 3.5


def test_an_estimate_is_a_frozen_value_that_round_trips():
    e = estimate_mean([3, 4, 2, 5, None, None], [3, 4, 2, 4, 1, 5])
    assert MeanEstimate.model_validate(e.model_dump()) == e
    with pytest.raises(ValidationError, match="frozen"):
        e.estimate = 0.0  # type: ignore[misc]


# ---------------------------------------------------------------------------------------------
# calibration maps


def test_pool_adjacent_violators_gives_the_closest_non_decreasing_sequence():
    rng = np.random.default_rng(10)
    for _ in range(200):
        v = rng.integers(0, 5, size=6).astype(float)
        w = rng.integers(1, 3, size=6).astype(float)
        fit = pool_adjacent_violators(v, w)
        assert np.all(np.diff(fit) >= -1e-12)
        # no non-decreasing sequence on the grid of the values does better
        # spot check two free levels
        grid = np.array(np.meshgrid(*[np.arange(0, 5, 0.5)] * 2)).reshape(2, -1).T
        best = ((fit - v) ** 2 * w).sum()
        for a, b in grid:
            cand = np.where(np.arange(6) < 3, a, b)
            if a <= b:
                assert ((cand - v) ** 2 * w).sum() >= best - 1e-9


def test_isotonic_calibration_equals_scikit_learns_isotonic_regression():
    # the hand-written pool-adjacent-violators fit is kept because it is many times faster per fit than
    # IsotonicRegression (cross-fitting fits one map per fold and group); it must give the same map
    from sklearn.isotonic import IsotonicRegression

    rng = np.random.default_rng(12)
    for trial in range(200):
        n = int(rng.integers(2, 200))
        x = rng.integers(1, 8, n).astype(float) if trial % 2 else rng.random(n) * 10
        y = x / 2 + rng.normal(size=n)
        q = np.concatenate([x, rng.random(20) * 14 - 2])
        expected = IsotonicRegression(out_of_bounds="clip").fit(x, y).predict(q)
        assert np.allclose(fit_calibration(x, y)(q), expected, rtol=0, atol=1e-12)


def test_isotonic_calibration_is_monotone_and_flat_for_a_judge_running_against_the_labels():
    up = fit_calibration(np.array([1, 2, 3, 4.0]), np.array([1, 3, 2, 5.0]))
    assert list(up(np.array([1, 2, 2.5, 3, 4, 9.0]))) == [1, 2.5, 2.5, 2.5, 5, 5]
    down = fit_calibration(np.array([1, 2, 3, 4.0]), np.array([5, 4, 3, 2.0]))
    assert np.allclose(down(np.array([1, 4.0])), 3.5)


# ---------------------------------------------------------------------------------------------
# rankings


def test_rank_intervals_hold_jointly_at_the_confidence_level():
    rng = np.random.default_rng(11)
    means = np.array([2.0, 2.3, 2.6, 3.0, 3.1, 3.6])
    size, n, count = 100, 20, 300
    pops = [np.clip(m + 0.8 * rng.normal(size=size), 1, 5) for m in means]
    true_rank = {f"s{k}": r for r, k in enumerate(np.argsort(-np.array([p.mean() for p in pops])), start=1)}
    hits = 0
    for _ in range(count):
        estimates = {}
        for k, p in enumerate(pops):
            labels = np.full(size, np.nan)
            pick = rng.choice(size, n, replace=False)
            labels[pick] = p[pick]
            estimates[f"s{k}"] = estimate_mean(labels, np.zeros(size), method="human")
        ranking = rank_estimates(estimates, NOMINAL)
        hits += all(r.low <= true_rank[r.group] <= r.high for r in ranking.ranks)
    assert hits / count >= NOMINAL - tolerance(count)


def test_separable_pairs_are_those_whose_simultaneous_intervals_do_not_overlap():
    def est(x: float, se: float) -> MeanEstimate:
        return MeanEstimate(
            method="human",
            estimate=x,
            low=x - 2 * se,
            high=x + 2 * se,
            se=se,
            df=50,
            confidence=0.95,
            target="items",
            n=100,
            n_labelled=50,
            n_judged=100,
            bias_corrected=True,
        )

    ranking = rank_estimates(
        {"a": est(4.0, 0.05), "b": est(3.9, 0.05), "c": est(2.0, 0.05)},
        0.95,
        {"judge": {"a": 1.0, "b": 3.0, "c": 2.0}},
    )
    assert ranking.order == ("a", "b", "c")
    assert set(ranking.separable) == {("a", "c"), ("b", "c")}
    assert [(r.low, r.high) for r in ranking.ranks] == [(1, 2), (1, 2), (3, 3)]
    assert ranking.kendall["judge"] == pytest.approx(-1 / 3)


def test_kendall_tau_is_undefined_for_a_single_group_or_a_constant_ordering():
    assert kendall_tau({"a": 1.0}, {"a": 2.0}) is None
    assert kendall_tau({"a": 1.0, "b": 2.0}, {"a": 3.0, "b": 3.0}) is None
    assert kendall_tau({"a": 1.0, "b": 2.0, "c": 3.0}, {"a": 1.0, "b": 2.0, "c": 3.0}) == pytest.approx(1.0)


# ---------------------------------------------------------------------------------------------
# the label planner


@pytest.mark.parametrize("method", ("human", "ppi"))
def test_the_planners_predicted_half_width_matches_the_realised_one(method):
    y, f = population("biased", seed=12, size=2000)
    pilot_draw = draws(2000, 20, 1, seed=12)[0]
    labels = np.full(2000, np.nan)
    labels[pilot_draw] = y[pilot_draw]
    spread = pilot_spread(labels, f, method)
    target = 0.06
    plan = labels_needed(target, spread.s2, spread.p, 2000, 20, NOMINAL, method=method)
    assert plan.needed is not None and plan.needed > 20
    idx = draws(2000, plan.needed, 1000, seed=13)
    fit = ppi_srs(y[idx], f[idx], f.mean(), 2000) if method == "ppi" else human_srs(y[idx], 2000)
    _, realised, _ = coverage(fit, y.mean())
    assert abs(realised - target) <= 0.15 * target, (plan.needed, realised)
    one_less = half_width_at(plan.needed - 1, spread.s2, spread.p, 2000, NOMINAL)
    assert one_less > target


def test_the_planner_says_when_a_half_width_is_out_of_reach_for_the_population_target():
    plan = labels_needed(0.01, 1.0, 2, 100, 10, NOMINAL, s2_labels=1.0, population=True)
    assert plan.needed is None and "not reachable" in (plan.note or "")
    items = labels_needed(0.01, 1.0, 2, 100, 10, NOMINAL)
    assert items.needed is not None and items.needed <= 100  # all labelled: the items' mean is known exactly


# ---------------------------------------------------------------------------------------------
# active selection


def test_inclusion_probabilities_sum_to_the_budget_respect_the_floor_and_stay_at_most_one():
    proxy = np.array([0.0, 0.0, 10.0, 1.0, 1.0, 50.0, 1.0, 1.0])
    pi = inclusion_probabilities(proxy, 4, floor=0.2)
    assert pi.sum() == pytest.approx(4) and pi.max() <= 1 + 1e-12
    assert pi.min() >= 0.2 * 4 / 8 - 1e-12
    assert pi[5] == pytest.approx(1.0)


def test_the_systematic_draw_holds_exactly_m_items_each_with_its_probability():
    rng = np.random.default_rng(14)
    pi = inclusion_probabilities(rng.choice([0.2, 0.5, 1.0], size=40), 8, 0.2)
    counts = np.zeros(40)
    for _ in range(20000):
        chosen = systematic_draw(pi, rng)
        assert len(chosen) == 8 and len(set(chosen)) == 8
        counts[chosen] += 1
    assert np.abs(counts / 20000 - pi).max() < 4 * math.sqrt(0.25 / 20000) + 1e-3


def test_allocation_gives_a_group_no_label_or_at_least_two_and_favours_the_widest():
    variance = {"wide": lambda k: 4.0 / k, "narrow": lambda k: 0.1 / k, "mid": lambda k: 1.0 / k}
    given = allocate(
        variance, {"wide": 10, "narrow": 10, "mid": 10}, {"wide": 90, "narrow": 90, "mid": 90}, 9
    )
    assert sum(given.values()) == 9 and all(v == 0 or v >= 2 for v in given.values())
    assert given["wide"] > given["mid"] >= given["narrow"]


def _selection_population() -> tuple[np.ndarray, np.ndarray]:
    """A judge whose reliability depends on its own answer: sure at 1 and 5, unsure in the middle."""
    rng = np.random.default_rng(15)
    f = rng.choice([1, 2, 3, 4, 5], size=1000, p=[0.3, 0.1, 0.2, 0.1, 0.3]).astype(float)
    spread = np.array([0, 0.05, 0.6, 1.2, 0.6, 0.05])[f.astype(int)]
    return np.clip(f + spread * rng.normal(size=1000), 1, 5), f


@pytest.mark.parametrize("method", ("ppi", "human", "calibrated"))
def test_selection_weights_keep_the_estimate_unbiased_and_the_interval_covering(method):
    y, f = _selection_population()
    rng = np.random.default_rng(16)
    estimates, hits = [], []
    count = 300
    for _ in range(count):
        labels = np.full(1000, np.nan)
        pilot = rng.choice(1000, 30, replace=False)
        labels[pilot] = y[pilot]
        spread = pilot_spread(labels, f, method)
        pool = np.nonzero(np.isnan(labels))[0]
        pi = inclusion_probabilities(uncertainty(f[pool], f[np.isfinite(labels)], spread.residuals), 60)
        chosen = pool[systematic_draw(pi, rng)]
        weights = np.full(1000, np.nan)
        weights[chosen] = 1 / pi[np.searchsorted(pool, chosen)]
        labels[chosen] = y[chosen]
        e = estimate_mean(labels, f, method=method, weights=weights)
        estimates.append(e.estimate)
        hits.append(e.low <= y.mean() <= e.high)
    estimates_arr = np.array(estimates)
    assert abs(estimates_arr.mean() - y.mean()) <= 4 * estimates_arr.std() / math.sqrt(count)
    assert abs(np.mean(hits) - NOMINAL) <= tolerance(count), np.mean(hits)


def test_active_selection_beats_labels_drawn_at_random_when_the_judge_says_where_it_is_unsure():
    y, f = _selection_population()
    rng = np.random.default_rng(17)
    active, uniform = [], []
    for _ in range(300):
        labels = np.full(1000, np.nan)
        pilot = rng.choice(1000, 30, replace=False)
        labels[pilot] = y[pilot]
        spread = pilot_spread(labels, f, "ppi")
        pool = np.nonzero(np.isnan(labels))[0]
        pi = inclusion_probabilities(uncertainty(f[pool], f[np.isfinite(labels)], spread.residuals), 60)
        chosen = pool[systematic_draw(pi, rng)]
        weights = np.full(1000, np.nan)
        weights[chosen] = 1 / pi[np.searchsorted(pool, chosen)]
        with_round = labels.copy()
        with_round[chosen] = y[chosen]
        active.append(estimate_mean(with_round, f, method="ppi", weights=weights).estimate)
        more = rng.choice(pool, 60, replace=False)
        plain = labels.copy()
        plain[more] = y[more]
        uniform.append(estimate_mean(plain, f, method="ppi").estimate)
    assert np.std(active) < 0.9 * np.std(uniform), (np.std(active), np.std(uniform))


def test_a_selection_round_of_one_label_is_refused():
    labels = [3, 4, 2, 5, 1, None, 4, None]
    weights = [None, None, None, None, None, None, 3.0, None]
    with pytest.raises(DataError, match="a selection round of 1 item"):
        estimate_mean(labels, [3, 4, 2, 5, 1, 2, 4, 3], method="human", weights=weights)


# ---------------------------------------------------------------------------------------------
# one judge slope over several groups (ppi's default "overall" tuning)


@pytest.mark.parametrize("slopes", ("shared", "different"))
@pytest.mark.parametrize("n", (5, 10, 20))
def test_one_slope_over_the_groups_covers_every_group_and_narrows_even_with_five_labels(n, slopes):
    rng = np.random.default_rng(20 + n)
    groups, size, count = 12, 100, 150
    ys, fs = [], []
    for g in range(groups):  # each system its own level and judge offset; the judge's slope shared or not
        y = np.clip(np.round((2.5 + 0.15 * g + 0.7 * rng.normal(size=size)) * 3) / 3, 1, 5)
        b = 0.8 if slopes == "shared" else rng.uniform(-0.3, 1.5)
        ys.append(y)
        fs.append(np.clip(np.round(rng.uniform(-1, 1) + b * y + 0.6 * rng.normal(size=size)), 1, 5))
    hits, ppi_width, human_width = [], [], []
    for _ in range(count):
        labels = []
        for y in ys:
            lab = np.full(size, np.nan)
            pick = rng.choice(size, n, replace=False)
            lab[pick] = y[pick]
            labels.append(lab)
        slope = shared_slope(list(zip(labels, fs, strict=True)))
        for lab, f, y in zip(labels, fs, ys, strict=True):
            try:
                e = estimate_mean(lab, f, method="ppi", slope=slope)
                h = estimate_mean(lab, f, method="human")
            except DataError:  # labels without spread: refused as the command refuses them
                continue
            hits.append(e.low <= y.mean() <= e.high)
            ppi_width.append(e.half_width)
            human_width.append(h.half_width)
    assert len(hits) >= 0.97 * groups * count
    assert abs(np.mean(hits) - NOMINAL) <= tolerance(len(hits)), np.mean(hits)
    bound = 0.9 if slopes == "shared" else 1.02
    assert np.mean(ppi_width) <= bound * np.mean(human_width), np.mean(ppi_width) / np.mean(human_width)


def test_a_shared_slope_needs_judge_values_that_vary_within_some_group():
    flat = [
        (np.array([3.0, 4.0, np.nan]), np.array([2.0, 2.0, 5.0])),
        (np.array([1.0, 2.0]), np.array([4.0, 4.0])),
    ]
    assert shared_slope(flat) is None
    varied = [
        (np.array([1.0, 2.0, 3.0, np.nan]), np.array([1.0, 2.0, 4.0, 5.0])),
        (np.array([2.0, 4.0, 5.0]), np.array([1.0, 3.0, 3.0])),
    ]
    slope = shared_slope(varied)
    assert slope is not None and slope.value > 0 and slope.variance > 0


def test_the_t_quantile_is_scipys_t_ppf_normal_at_infinite_df_and_nan_without_degrees_of_freedom():
    from scipy import stats

    df = np.array([0.5, 1, 2, 5, 30, 1e6, np.inf, 0, -1])
    for confidence in (0.8, 0.9, 0.95, 0.99):
        q = (1 + confidence) / 2
        expected = [stats.t.ppf(q, d) if 0 < d < np.inf else stats.norm.ppf(q) for d in df[:7]]
        got = t_quantile(confidence, df)
        assert np.allclose(got[:7], expected, rtol=0, atol=1e-15) and np.isnan(got[7:]).all()
