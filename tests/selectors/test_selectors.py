"""Selectors: which demonstrations go into a prompt (each on a tiny synthetic benchmark)."""

from __future__ import annotations

import asyncio
import math
import random
from collections import Counter

import pytest

from mitigate import Benchmark, Item, JudgePrompt, Judgment, PromptJudge
from mitigate.errors import ConfigError, ModelPathError
from mitigate.lm import FakeLM
from mitigate.scale import Scale
from mitigate.search import Objective
from mitigate.selectors import (
    KNN,
    Fixed,
    HighestRS,
    Random,
    Stratified,
    balanced_quotas,
    rank_by_rs,
    stratified_pick,
)
from mitigate.strategies import Demos, PerItemDemosPreset

PROMPT = "Rate the text from 1 to 5.\n\nText: {{output}}\n\nScore:"


def bench() -> Benchmark:
    """12 items: label 5 is common (6 items), labels 1 and 3 are rare (3 each)."""
    texts = {
        "a1": ("The cat sat on the mat.", 1.0),
        "a2": ("Dogs bark at night in the city.", 1.0),
        "a3": ("Rain falls on the green hills.", 1.0),
        "b1": ("Stock markets fell sharply on Monday.", 3.0),
        "b2": ("The central bank raised interest rates.", 3.0),
        "b3": ("A new phone was released today.", 3.0),
    }
    for i in range(6):
        texts[f"c{i}"] = (f"Football team number {i} won the league final.", 5.0)
    items = tuple(Item(id=k, output=t, human={"quality": s}) for k, (t, s) in texts.items())
    return Benchmark(name="tiny", items=items, criteria=("quality",), scale=Scale(min=1, max=5))


def ids(demos: list) -> list[str]:
    return [d.item.id for d in demos]


# --------------------------------------------------------------------------- the contract
# (frozen values, spec round-trips, deterministic select that never shows the query, k validated:
# the shared battery of mitigate.testing._checks runs over every selector in test_contracts.py)


def test_unfitted_selector_says_to_fit():
    with pytest.raises(ConfigError, match="not fitted"):
        Random().select(1)


def test_fit_keeps_only_labelled_items_and_needs_a_criterion_for_lists():
    items = [*bench().items, Item(id="nolabel", output="x")]
    fitted = Random().fit(items, criterion="quality")
    assert "nolabel" not in {it.id for it in fitted.pool_}
    with pytest.raises(ConfigError, match="needs criterion"):
        Random().fit(items)
    with pytest.raises(ConfigError, match="human 'missing' score"):
        Random().fit(bench(), criterion="missing")


# --------------------------------------------------------------------------- each selector


def test_random_is_seeded():
    b = bench()
    a = Random(seed=1).fit(b).select(4)
    assert ids(a) == ids(Random(seed=1).fit(b).select(4))
    assert ids(a) != ids(Random(seed=2).fit(b).select(4))


def test_stratified_balances_the_gold_labels_despite_an_imbalanced_pool():
    sel = Stratified(seed=0).fit(bench())
    for seed in range(5):
        demos = sel.model_copy(update={"seed": seed}).select(3)
        assert sorted(d.score for d in demos) == [1.0, 3.0, 5.0]
    six = Counter(d.score for d in sel.select(6))
    assert six == {1.0: 2, 3.0: 2, 5.0: 2}
    two = sorted(d.score for d in sel.select(2))
    assert two == [1.0, 5.0]  # fewer demos than labels: the extremes


def test_stratified_moves_a_short_labels_quota_to_labels_with_room():
    sel = Stratified(seed=0).fit(bench())
    nine = Counter(d.score for d in sel.select(9))
    assert nine == {1.0: 3, 3.0: 3, 5.0: 3}
    ten = Counter(d.score for d in sel.select(10))
    assert ten[1.0] == 3 and ten[3.0] == 3 and ten[5.0] == 4
    assert balanced_quotas([1, 5, 5], 6, random.Random(0)) == [1, 3, 2]  # label 1 has one item only


def test_stratified_snaps_crowd_means_to_the_scale():
    items = [Item(id=f"x{i}", output="t", human={"q": v}) for i, v in enumerate([3.67, 4.33, 4.0, 1.33, 1.0])]
    sel = Stratified(scale=Scale(min=1, max=5)).fit(items, criterion="q")
    assert sorted(sel.label_of(it) for it in items) == [1.0, 1.0, 4.0, 4.0, 4.0]
    assert sorted(round(d.score) for d in sel.select(2)) == [1, 4]


def test_stratified_by_range_uses_the_shared_stratified_pick():
    b = bench()
    sel = Stratified(by="range", seed=4).fit(b)
    assert ids(sel.select(3)) == [it.id for it in stratified_pick(list(b.items), ["quality"], 3, None, 4)]


def test_knn_returns_the_nearest_items_by_tfidf():
    sel = KNN().fit(bench())
    query = Item(id="q", output="The cat sat on the mat at night.")
    assert ids(sel.select(1, query=query)) == ["a1"]
    near = sel.neighbours(query)
    assert near[0][0].id == "a1" and near[0][1] < near[-1][1]
    finance = Item(id="q2", output="The central bank cut interest rates on Monday.")
    assert set(ids(sel.select(2, query=finance))) == {"b2", "b1"}
    assert (
        ids(KNN(nearest_last=True).fit(bench()).select(2, query=finance))
        == ids(sel.select(2, query=finance))[::-1]
    )


def test_knn_without_a_query_is_a_config_error():
    with pytest.raises(ConfigError, match="expected query=<Item>"):
        KNN().fit(bench()).select(2)


def test_knn_refuses_a_missing_local_embedding_model(tmp_path):
    sel = KNN(embedding=f"sentence-transformers:{tmp_path / 'nothing'}").fit(bench())
    with pytest.raises(ModelPathError, match="local model folder"):
        sel.select(1, query=bench().items[0])
    with pytest.raises(ConfigError, match="'embedding' parameter of selector 'knn'"):
        KNN(embedding="openai")


def test_highest_rs_ranks_with_the_shared_rank_by_rs():
    b = bench()
    ls = {it.id: -float(len(it.output)) for it in b.items}
    judge_scores = {it.id: 5.0 if it.id.startswith("a") else 3.0 for it in b.items}
    sel = HighestRS().fit(b, ls=ls, judge_scores=judge_scores)
    from mitigate import measures

    us = measures.unfairness_scores(
        [judge_scores[it.id] for it in b.items], measures.human_scores(b.items, "quality")
    )
    expected = [it.id for it, _ in rank_by_rs(b.items, [ls[it.id] for it in b.items], list(us))]
    assert ids(sel.select(4)) == expected[:4]
    assert list(sel.rs_) == expected


def test_highest_rs_without_scores_or_a_judge_says_what_it_needs():
    with pytest.raises(
        ConfigError,
        match=r"^HighestRS.fit needs the judge it fits against; expected a "
        r"Judge \(or its scores: ls= and judge_scores=\), got NoneType$",
    ):
        HighestRS().fit(bench())


def test_fixed_keeps_the_given_order_and_names_unknown_ids():
    sel = Fixed(ids=("c2", "a1", "b3")).fit(bench())
    assert ids(sel.select(2)) == ["c2", "a1"]
    assert ids(sel.select(2, query=bench().items[0])) == ["c2", "b3"]  # a1 is the query: skipped
    with pytest.raises(ConfigError, match=r"not in the pool: \['zz', 'yy'\]") as err:
        Fixed(ids=("a1", "zz", "yy")).fit(bench())
    assert err.value.unknown == ["zz", "yy"]
    items = [*bench().items, Item(id="nolabel", output="x")]
    with pytest.raises(ConfigError, match=r"without a human 'quality' score: \['nolabel'\]"):
        Fixed(ids=("nolabel",)).fit(items, criterion="quality")
    with pytest.raises(ConfigError, match="unique ids"):
        Fixed(ids=("a1", "a1"))
    with pytest.raises(ConfigError, match="The 'k' parameter of Fixed asks for 4"):
        sel.select(4)


def test_demo_scores_map_onto_the_prompt_scale():
    items = [Item(id=f"w{i}", output=f"text {i}", human={"q": v}) for i, v in enumerate([0.0, 50.0, 100.0])]
    b = Benchmark(name="w", items=tuple(items), criteria=("q",), scale=Scale(min=0, max=100))
    demos = Fixed(ids=("w0", "w1", "w2")).fit(b).select(3, prompt_scale=Scale(min=1, max=5))
    assert [d.score for d in demos] == [1.0, 3.0, 5.0]


# --------------------------------------------------------------------------- the mitigations


def test_fixed_demos_put_exactly_those_demos_in_the_prompt():
    b = bench()
    mit = Demos(demos=tuple(Fixed(ids=("b1", "c0")).fit(b).select(2)), k=2)
    fake = FakeLM(["Score: 3"])
    judged = mit.wrap(PromptJudge(JudgePrompt.from_template(PROMPT), fake))
    asyncio.run(judged.judge(Item(id="q", output="Judged text.")))
    text = fake.requests[0].messages[-1].content
    where = [text.index(t) for t in ("Stock markets fell", "Football team number 0", "Judged text.")]
    assert where == sorted(where)
    assert "Score: 3\n" in text and "Score: 5\n" in text


def test_per_item_demos_choose_neighbours_for_each_judged_item():
    sel = KNN().fit(bench())
    fake = FakeLM(lambda request: "Score: 4")
    judged = (
        PerItemDemosPreset(selector=sel, k=1)
        .build()
        .wrap(PromptJudge(JudgePrompt.from_template(PROMPT), fake))
    )

    async def both() -> list[Judgment]:
        return [
            await judged.judge(Item(id="q1", output="The cat sat on the mat.")),
            await judged.judge(Item(id="q2", output="The central bank raised rates.")),
        ]

    first, second = asyncio.run(both())
    assert first.meta["demo_ids"] == ["a1"] and second.meta["demo_ids"] == ["b2"]
    assert "Examples:" in fake.requests[0].messages[-1].content
    assert "The cat sat on the mat.\nScore: 1" in fake.requests[0].messages[-1].content
    assert "central bank raised interest rates.\nScore: 3" in fake.requests[1].messages[-1].content
    assert first.scores == {"score": 4.0}


def test_per_item_demos_needs_a_fitted_selector():
    with pytest.raises(ConfigError, match="must be a fitted selector"):
        PerItemDemosPreset(selector=KNN()).build()


# --------------------------------------------------------------------------- the objective


def _judgments(scores: list[float | None], prefix: str = "x") -> list[Judgment]:
    return [Judgment(item_id=f"{prefix}{i}", scores={"q": s}) for i, s in enumerate(scores)]


def _human_items(values: list[float], prefix: str = "x") -> list[Item]:
    return [Item(id=f"{prefix}{i}", output="t", human={"q": v}) for i, v in enumerate(values)]


def test_objective_is_agreement_plus_consistency_minus_bias():
    items = _human_items([1, 2, 3, 4, 5])
    js = [
        j.model_copy(update={"meta": {"perturbations": {"original": s, "p1": s if i else 9}}})
        for i, (j, s) in enumerate(zip(_judgments([1, 2, 3, 4, 5]), [1, 2, 3, 4, 5], strict=True))
    ]
    ls = {f"x{i}": v for i, v in enumerate([-5.0, -1.0, -3.0, -2.0, -4.0])}
    obj = Objective(consistency_weight=0.5, consistency="raw", bias_weight=2.0)
    value = obj.evaluate(js, items, "q", ls=ls)
    assert value.agreement.value == pytest.approx(1.0)
    assert value.consistency.value == pytest.approx(0.8)
    assert math.isnan(value.bias.value)  # judge == human: US is constant 0, so BiasScore is undefined
    assert math.isnan(value.value) and "BiasScore" in value.reason
    raw = Objective(consistency_weight=0.5, consistency="raw")
    assert raw.evaluate(js, items, "q").value == pytest.approx(1.0 + 0.5 * 0.8)
    # kappa: chance = 4 shared answers x 0.2 x 0.2 = 0.16, so (0.8 - 0.16) / 0.84
    kappa = Objective(consistency_weight=0.5).evaluate(js, items, "q")
    assert kappa.consistency.value == pytest.approx(0.64 / 0.84)
    assert kappa.consistency.extra["raw"] == pytest.approx(0.8)
    assert kappa.value == pytest.approx(1.0 + 0.5 * 0.64 / 0.84)


def _probed(scores: list[float], variant: list[float]) -> list[Judgment]:
    return [
        Judgment(item_id=f"x{i}", scores={"q": s}, meta={"perturbations": {"original": s, "p1": v}})
        for i, (s, v) in enumerate(zip(scores, variant, strict=True))
    ]


def test_kappa_consistency_does_not_reward_a_collapsed_judge():
    items = _human_items([3, 4, 4, 3, 4, 3, 4, 3])
    collapsed = _probed([5] * 8, [5] * 8)  # one answer to everything, under every prompt
    mostly = _probed([5, 5, 5, 5, 5, 5, 5, 4], [5, 5, 5, 5, 5, 5, 4, 5])
    stable = _probed([3, 4, 4, 3, 4, 3, 5, 3], [3, 4, 4, 3, 4, 3, 5, 4])
    raw = Objective(agreement="accuracy", consistency_weight=1.0, consistency="raw")
    kappa = Objective(agreement="accuracy", consistency_weight=1.0)
    assert raw.evaluate(collapsed, items, "q").value == pytest.approx(0.0 + 1.0)  # raw: perfect consistency
    assert raw.evaluate(collapsed, items, "q").value > raw.evaluate(mostly, items, "q").value
    c = kappa.evaluate(collapsed, items, "q")
    assert math.isnan(c.value) and "collapsed" in c.reason  # undefined, so it can never win a search
    m = kappa.evaluate(mostly, items, "q")
    assert m.consistency.extra["raw"] == pytest.approx(0.75)
    assert m.consistency.value < 0  # 6 of 8 identical is worse than chance for these answer shares
    s = kappa.evaluate(stable, items, "q", ci=True, n_boot=300)
    assert s.value > m.value
    assert s.ci_low <= s.value <= s.ci_high
    # the bootstrap of a gain resamples the kappa term too (not the raw indicators)
    gain = kappa.gain(stable, mostly, items, "q", n_boot=300)
    assert gain.value == pytest.approx(s.value - m.value)
    assert kappa.describe() == "accuracy + 1·κ(consistency)" and raw.describe() == "accuracy + 1·consistency"
    assert Objective.model_validate(raw.model_dump(mode="json")) == raw  # the saved spec keeps the mode


def test_objective_nan_rules_are_explicit():
    items = _human_items([1, 2, 3, 4, 5])
    low_coverage = Objective(min_coverage=0.8).evaluate(_judgments([1, 2, 3, None, None]), items, "q")
    assert math.isnan(low_coverage.value) and "coverage 60%" in low_coverage.reason
    assert low_coverage.n == 3 and low_coverage.n_failed == 2
    enough = Objective(min_coverage=0.5).evaluate(_judgments([1, 2, 3, None, None]), items, "q")
    assert enough.value == pytest.approx(1.0)
    constant = Objective().evaluate(_judgments([3, 3, 3, 3, 3]), items, "q")
    assert math.isnan(constant.value) and "constant" in constant.reason
    no_probe = Objective(consistency_weight=1.0).evaluate(_judgments([1, 2, 3, 4, 5]), items, "q")
    assert math.isnan(no_probe.value) and "PerturbedGuidelines" in no_probe.reason
    with pytest.raises(ConfigError, match="'bias_weight' parameter of Objective"):
        Objective(bias_weight=-1)


def test_accuracy_agreement_is_the_exact_match_share_and_defined_for_a_constant_judge():
    items = _human_items([3, 3, 4, 3, 5])
    constant = Objective(agreement="accuracy").evaluate(
        _judgments([3, 3, 3, 3, None]), items, "q", ci=True, n_boot=200
    )
    assert constant.value == pytest.approx(0.75)  # 3 of the 4 scored items; the parse failure is not a miss
    assert constant.agreement.name == "accuracy" and constant.n == 4 and constant.n_failed == 1
    assert constant.ci_low <= constant.value <= constant.ci_high
    # spearman is not
    assert math.isnan(Objective().evaluate(_judgments([3, 3, 3, 3, None]), items, "q").value)
    assert Objective(agreement="accuracy").describe() == "accuracy"
    with pytest.raises(
        ConfigError, match="'agreement' parameter of Objective must be one of .*'accuracy'. Got 'f1'"
    ):
        Objective(agreement="f1")


def test_objective_interval_and_paired_gain():
    items = _human_items([1, 2, 3, 4, 5, 1, 2, 3, 4, 5])
    good = _judgments([1, 2, 3, 4, 5, 1, 2, 3, 5, 4])
    bad = _judgments([5, 4, 3, 2, 1, 5, 4, 3, 2, 1])
    obj = Objective()
    value = obj.evaluate(good, items, "q", ci=True, n_boot=200)
    assert value.ci_low <= value.value <= value.ci_high
    gain = obj.gain(good, bad, items, "q", n_boot=200)
    assert gain.value > 1.5 and gain.ci_low > 0
    assert obj.item_metric(None, 3.0, Scale(min=1, max=5)) == 0.0
    assert obj.item_metric(4.0, 3.0, Scale(min=1, max=5)) == pytest.approx(0.75)
