"""The cheapest cascade that keeps a guarantee (issue 50): on data built so that the cheapest valid cascade
is known, the fit finds it; the multiplicity correction, pricing from the price table, refusals, and the
guarantee over fresh draws."""

from __future__ import annotations

import functools
import math

import numpy as np
import pytest

from mitigate.data import Item, read_llmbar
from mitigate.data._released_pairwise import release_copy
from mitigate.errors import ConfigError, DataError
from mitigate.judge import Judgment
from mitigate.lm import Price, Usage, register_price
from mitigate.replay._released_pairwise import parse_release, recorded_runs
from mitigate.strategies import CascadeJudge, CascadeStage, CheapestCascade, fit_cascade, fit_cheapest_cascade

N = 1000


def items(n: int) -> list[Item]:
    """``n`` pairs whose gold preference is the first output."""
    return [Item(id=f"i{i}", output="a", output_b="b", preference={"overall": "A"}) for i in range(n)]


ITEMS = items(N)


def pair(i: int, right: bool, conf: float) -> Judgment:
    """A pairwise judgment of item ``i``: the gold verdict or not, at confidence ``conf``."""
    return Judgment(item_id=f"i{i}", verdict="first" if right else "second", meta={"confidence": conf})


@functools.cache
def constructed() -> tuple[dict[str, list[Judgment]], list[CascadeStage]]:
    """Three judges whose cheapest valid cascade at target 0.8 is known (costs per 1,000 items):

    - cheap ($0.001): sure on the even items (right but for every 50th), wrong on the rest;
    - mid ($0.01): sure on the even items and on i % 10 in {1, 3, 5} (right but for every 50th), wrong
      elsewhere; trusted wholesale it would be right on exactly 80% minus its errors, short of 0.8;
    - strong ($0.10): sure everywhere, wrong on i % 20 == 0 only (95% right).

    cheap -> mid -> strong: 1 + 500 x 0.01 + 200 x 0.10 = 26; mid -> strong: 10 + 20 = 30; cheap -> strong:
    1 + 50 = 51; strong alone 100; anything leaving items to a $1 human costs >= 200.
    """
    cheap = [pair(i, i % 2 == 0 and i % 50 != 0, 1.0 if i % 2 == 0 else 0.0) for i in range(N)]
    sure_mid = [i % 2 == 0 or i % 10 in (1, 3, 5) for i in range(N)]
    mid = [pair(i, sure_mid[i] and i % 50 != 0, float(sure_mid[i])) for i in range(N)]
    strong = [pair(i, i % 20 != 0, 1.0) for i in range(N)]
    stages = [
        CascadeStage(name="strong", confidence="meta", cost=0.10),
        CascadeStage(name="cheap", confidence="meta", cost=0.001),
        CascadeStage(name="mid", confidence="meta", cost=0.01),
    ]
    return {"cheap": cheap, "mid": mid, "strong": strong}, stages


def test_the_fit_finds_the_cheapest_valid_cascade_known_by_construction() -> None:
    judgments, stages = constructed()
    best = fit_cheapest_cascade(judgments, ITEMS, stages, human_cost=1.0, target=0.8, delta=0.1, max_stages=3)
    assert [s.name for s in best.stages] == ["cheap", "mid", "strong"]
    assert best.calibration.settled == pytest.approx((0.5, 0.3, 0.2))
    assert best.calibration.escalated == 0.0
    assert best.calibration.cost_per_1000 == pytest.approx(26.0)
    # 3 + 6 + 6 distinct stage prefixes, each tested at delta / 15
    assert (best.candidates, best.tests) == (3 + 6 + 6 + 1, 15)
    assert all(f.delta == pytest.approx(0.1 / 15) and f.guarantee_.delta == f.delta for f in best.fitted)
    assert best.alone_per_1000 == pytest.approx({"strong": 100.0, "cheap": 1.0, "mid": 10.0})
    assert best.calibration.agreement >= 0.8 and best.certified >= 0.8
    # with two stages at most, mid -> strong is the cheapest
    two = fit_cheapest_cascade(judgments, ITEMS, stages, human_cost=1.0, target=0.8, max_stages=2)
    assert [s.name for s in two.stages] == ["mid", "strong"]
    assert two.calibration.cost_per_1000 == pytest.approx(30.0)
    # the fitted cascade does on the same items what the fit measured
    assert best.outcome(judgments, ITEMS) == best.calibration
    assert "cascade: cheap (meta) -> mid (meta) -> strong (meta) -> human" in best.summary()
    assert CheapestCascade.model_validate_json(best.model_dump_json()) == best  # a value: JSON and back
    # chosen on one half and calibrated on the other: the same cascade, its 3 stages at delta / 3
    split = fit_cheapest_cascade(
        judgments,
        ITEMS,
        stages,
        human_cost=1.0,
        target=0.8,
        max_stages=3,
        selection="split",
        select_share=0.5,
    )
    assert [s.name for s in split.stages] == ["cheap", "mid", "strong"] and split.tests == 3
    assert all(f.guarantee_.delta == pytest.approx(0.1 / 3) for f in split.fitted)
    assert split.fitted[0].guarantee_.n_calibration == N // 2
    assert split.calibration.cost_per_1000 == pytest.approx(26.0)


def test_humans_only_wins_when_no_judge_keeps_the_target_or_humans_are_cheaper() -> None:
    judgments, stages = constructed()
    strict = fit_cheapest_cascade(judgments, ITEMS, stages, human_cost=1.0, target=0.999)
    assert strict.stages == () and strict.calibration.escalated == 1.0
    assert strict.calibration.cost_per_1000 == pytest.approx(1000.0) and strict.certified is None
    with pytest.raises(ConfigError, match="humans only"):
        strict.judge({})
    free_humans = fit_cheapest_cascade(judgments, ITEMS, stages, human_cost=0.0, target=0.8)
    assert free_humans.stages == ()


def test_the_chosen_cascade_is_a_judge_of_its_stages_in_order() -> None:
    judgments, stages = constructed()
    best = fit_cheapest_cascade(judgments, ITEMS, stages, human_cost=1.0, max_stages=2)
    judge = best.judge(dict.fromkeys(["cheap", "mid", "strong"], object()))  # type: ignore[arg-type]
    assert isinstance(judge, CascadeJudge) and list(judge.children) == ["mid", "strong"]
    with pytest.raises(ConfigError, match=r"\['strong'\] have none"):
        best.judge({"mid": object()})  # type: ignore[dict-item]


def test_stages_are_priced_from_the_price_table_or_from_what_the_backend_charged() -> None:
    register_price("judge-test-model", Price(input=2.0, output=10.0))
    stage = CascadeStage.priced(
        "two orders", "judge-test-model", Usage(prompt_tokens=1000, completion_tokens=100), calls=2
    )
    assert stage.cost == pytest.approx(2 * (1000 * 2.0 + 100 * 10.0) / 1e6)
    with pytest.raises(ConfigError, match="expected a list price for 'no-such-model'"):
        CascadeStage.priced("x", "no-such-model", Usage(prompt_tokens=1))
    charged = [Judgment(item_id="a", cost_usd=0.002), Judgment(item_id="b", cost_usd=0.004)]
    assert CascadeStage.measured("s", charged).cost == pytest.approx(0.003)
    with pytest.raises(ConfigError, match="1 of 2 have none"):
        CascadeStage.measured("s", [charged[0], Judgment(item_id="b", cost_usd=None)])


def test_bad_input_is_one_clear_line() -> None:
    judgments, stages = constructed()
    with pytest.raises(DataError, match="expected one judgment per calibration item for every stage; mid"):
        fit_cheapest_cascade({**judgments, "mid": judgments["mid"][:5]}, ITEMS, stages, human_cost=1.0)
    with pytest.raises(DataError, match="in the order of the items"):
        fit_cheapest_cascade({**judgments, "mid": judgments["mid"][::-1]}, ITEMS, stages, human_cost=1.0)
    with pytest.raises(ConfigError, match="expected candidates naming distinct stages"):
        fit_cheapest_cascade(judgments, ITEMS, stages, human_cost=1.0, candidates=[("mid", "mid")])
    with pytest.raises(ConfigError, match="expected human_cost >= 0"):
        fit_cheapest_cascade(judgments, ITEMS, stages, human_cost=math.nan)
    unlabelled = [Item(id=f"i{i}", output="a", output_b="b") for i in range(N)]
    with pytest.raises(ConfigError, match="no calibration item with a human label"):
        fit_cheapest_cascade(judgments, unlabelled, stages, human_cost=1.0)


@pytest.mark.slow
@pytest.mark.parametrize("selection", ["bonferroni", "split"])
def test_the_chosen_cascade_keeps_its_guarantee_on_fresh_draws_at_least_one_minus_delta_of_the_time(
    selection: str,
) -> None:
    rng = np.random.default_rng(5)
    target, delta, runs, fails = 0.8, 0.1, 40, 0
    accuracy = {"cheap": 0.55, "mid": 0.65, "strong": 0.75}  # at confidence 0; rising to 1.0 at confidence 1
    stages = [
        CascadeStage(name=k, confidence="meta", cost=c)
        for k, c in zip(accuracy, (0.001, 0.01, 0.1), strict=True)
    ]

    def draw(n: int) -> tuple[list[Item], dict[str, list[Judgment]]]:
        its = items(n)
        out = {}
        for k, base in accuracy.items():
            conf = np.round(rng.random(n), 1)
            right = rng.random(n) < base + (1 - base) * conf
            out[k] = [pair(i, bool(right[i]), float(conf[i])) for i in range(n)]
        return its, out

    for _ in range(runs):
        cal_items, js = draw(300)
        best = fit_cheapest_cascade(
            js, cal_items, stages, human_cost=0.5, target=target, delta=delta, grid=10
        )
        if not best.stages:
            continue
        fresh_items, fresh = draw(2000)
        fails += best.outcome(fresh, fresh_items).agreement < target
    assert fails / runs <= delta


def test_the_ordered_cascade_fit_is_the_one_candidate_case() -> None:
    judgments, stages = constructed()
    order = ["cheap", "mid", "strong"]
    ordered = fit_cascade(
        [judgments[k] for k in order],
        ITEMS,
        fit_cheapest_cascade(judgments, ITEMS, stages, human_cost=1.0, candidates=[order])
        .fitted[0]
        .model_copy(update={"delta": 0.1, "guarantee_": None}),
    )
    one = fit_cheapest_cascade(judgments, ITEMS, stages, human_cost=1.0, candidates=[order])
    # one candidate of three stages: three tests at delta / 3, as fit_cascade's union bound
    assert one.tests == 3
    assert [s.guarantee_ for s in ordered] == [s.guarantee_ for s in one.fitted]


LLMBAR = release_copy("llmbar")


@functools.cache
def llmbar_gpt4() -> tuple[list[Item], dict[str, list[Judgment]]]:
    """GPT-4's released Vanilla verdicts on LLMBar proper: the first order alone, and both orders."""
    parse = parse_release(read_llmbar(LLMBAR, judges="GPT-4/Vanilla"))  # type: ignore[arg-type]
    run = recorded_runs(parse)["GPT-4/Vanilla"]
    position = {"A": "first", "B": "second", "tie": "tie", None: None}
    items = list(parse.release.benchmark.items)
    one, both = [], []
    for it in items:
        rows = {r.order: r.verdict for r in run.get(it.id, "overall").rows}  # type: ignore[union-attr]
        first, second = rows.get("original"), rows.get("swapped")
        verdict = position[first]
        one.append(
            Judgment(item_id=it.id, verdict=verdict, meta={"confidence": 1.0 if verdict else math.nan})
        )
        agree = None if first is None or second is None else first == second
        both.append(Judgment(item_id=it.id, verdict=verdict, meta={"position_consistent": agree}))
    return items, {"one order": one, "both orders": both}


@pytest.mark.skipif(LLMBAR is None, reason="no copy of princeton-nlp/LLMBar (set MITIGATE_LLMBAR_DIR)")
def test_on_llmbar_gpt4_asked_once_is_enough_where_it_keeps_the_target_and_humans_where_none_does() -> None:
    items, judgments = llmbar_gpt4()
    stages = [
        CascadeStage(name="one order", confidence="meta", cost=0.02),
        CascadeStage(name="both orders", confidence="both-orders", cost=0.04),
    ]
    # GPT-4 agrees with LLMBar's gold on about 83% of the 419 pairs: trusted wholesale, asked once, at 0.7
    low = fit_cheapest_cascade(judgments, items, stages, human_cost=1.0, target=0.7, max_stages=1)
    assert [s.name for s in low.stages] == ["one order"] and low.calibration.escalated == 0.0
    assert low.calibration.cost_per_1000 == pytest.approx(20.0)
    # even the pairs it judges the same in both orders agree on under 90%: nothing keeps 0.95
    high = fit_cheapest_cascade(judgments, items, stages, human_cost=1.0, target=0.95)
    assert high.stages == () and high.calibration.cost_per_1000 == pytest.approx(1000.0)
