"""Selective evaluation with a guarantee (Jung et al. 2024): fixed-sequence testing, confidences, escalation,
cascades."""

from __future__ import annotations

import asyncio
import math

import numpy as np
import pytest

from mitigate.data import Benchmark, Item
from mitigate.errors import ConfigError, DataError
from mitigate.judge import Judge, JudgeConfig, Judgment, PromptJudge
from mitigate.lm import FakeLM, LMRequest
from mitigate.prompt import JudgePrompt
from mitigate.strategies import (
    CascadeJudge,
    Pipeline,
    Sampling,
    SelectiveEvaluation,
    fit_cascade,
    parse_pipeline,
)
from mitigate.strategies._selective import (
    agrees,
    binomial_upper_bound,
    confidence,
    fixed_sequence_threshold,
    gold_verdict,
)

TEMPLATE = (
    'Rate the summary from 1 to 5.\n\nArticle: {{source}}\nSummary: {{summary}}\n\nReply with "Score: N".'
)


def test_the_binomial_bound_is_the_clopper_pearson_upper_limit() -> None:
    from scipy.stats import binom

    u = binomial_upper_bound(3, 40, 0.1)
    # the largest rate still giving P(X <= 3) >= delta
    assert binom.cdf(3, 40, u) == pytest.approx(0.1, abs=1e-6)
    assert binomial_upper_bound(5, 5, 0.1) == 1.0


def test_fixed_sequence_stops_at_the_first_threshold_that_fails() -> None:
    # 100 items at confidence 0.9 (95 agree), 100 at 0.5 (50 agree): 0.9 passes 0.8, adding 0.5 does not
    conf = np.r_[np.full(100, 0.9), np.full(100, 0.5)]
    agreed = np.r_[np.arange(100) < 95, np.arange(100) < 50]
    g = fixed_sequence_threshold(conf, agreed, target=0.8, delta=0.1)
    # every grid point in (0.5, 0.9] accepts the same 100 items; the lowest of them is the last rejected null
    assert g.threshold == pytest.approx(0.501)
    assert (g.n_accepted, g.n_agreed) == (100, 95)
    assert g.upper_risk <= 0.2
    assert g.coverage == 0.5


def test_nothing_is_trusted_when_even_the_most_confident_items_miss_the_target() -> None:
    conf = np.linspace(0, 1, 200)
    agreed = np.arange(200) % 2 == 0  # 50% agreement everywhere
    g = fixed_sequence_threshold(conf, agreed, target=0.8, delta=0.1)
    assert g.threshold is None and g.n_accepted == 0


@pytest.mark.slow
def test_the_guarantee_holds_on_fresh_data_at_least_one_minus_delta_of_the_time() -> None:
    rng = np.random.default_rng(0)
    target, delta, fails, runs = 0.8, 0.1, 0, 200

    def draw(n: int) -> tuple[np.ndarray, np.ndarray]:
        c = rng.random(n)
        return c, rng.random(n) < 0.5 + 0.5 * c  # agreement probability rises with confidence

    for _ in range(runs):
        g = fixed_sequence_threshold(*draw(400), target=target, delta=delta)
        if g.threshold is None:
            continue
        c, a = draw(20000)  # the population risk, nearly exactly
        fails += a[c >= g.threshold].mean() < target
    assert fails / runs <= delta


def test_confidences_come_from_samples_both_orders_rts_mcq_and_meta() -> None:
    j = Judgment(item_id="x", scores={"c": 4.0}, samples={"c": (4.0, 4.0, 3.0, None)})
    assert confidence(j, "samples") == 0.5  # the failed sample stays in the count
    assert (
        confidence(Judgment(item_id="x", verdict="first", meta={"position_consistent": False}), "both-orders")
        == 0
    )
    rm = Judgment(item_id="x", scores={"c": 4.0}, meta={"rts": {"c": 4.0}, "mcq": {"c": 2.0}})
    assert confidence(rm, "rts-mcq") == pytest.approx(1 / 3)
    assert confidence(Judgment(item_id="x", meta={"confidence": 0.25}), "meta") == 0.25
    assert math.isnan(confidence(Judgment(item_id="x", error="boom"), "samples"))
    with pytest.raises(DataError, match="position-swap"):
        confidence(Judgment(item_id="x", verdict="first"), "both-orders")


def test_agreement_is_a_score_within_tolerance_or_the_gold_verdict() -> None:
    item = Item(id="a", output="o", human={"c": 3.0})
    assert agrees(Judgment(item_id="a", scores={"c": 4.0}), item, tolerance=1.0)
    assert not agrees(Judgment(item_id="a", scores={"c": 4.5}), item, tolerance=1.0)
    assert not agrees(Judgment(item_id="a", scores={"c": None}), item, tolerance=1.0)
    pair = Item(id="p", output="a", output_b="b", preference={"c": "B"})
    assert agrees(Judgment(item_id="p", verdict="second"), pair, tolerance=0)
    assert not agrees(Judgment(item_id="p", verdict="tie"), pair, tolerance=0)


def scripted(request: LMRequest) -> str:
    """A judge that is reliable (always "4") on texts marked 'easy' and erratic on the rest."""
    text = request.messages[-1].content
    if "easy" in text:
        return "Score: 4"
    return f"Score: {1 + (request.seed or 0) % 5 if request.seed is not None else 1 + len(text) % 5}"


def bench(n: int, start: int = 0) -> Benchmark:
    items = []
    for i in range(start, start + n):
        easy = i % 2 == 0
        items.append(
            Item(
                id=f"i{i}",
                output=("easy" if easy else "hard") + f" text {i}",
                inputs={"source": "A."},
                human={"coherence": 4.0 if easy else float(1 + i % 5)},
            )
        )
    return Benchmark(name="b", items=tuple(items), criteria=("coherence",))


def test_fitting_on_a_calibration_split_accepts_the_reliable_items_and_escalates_the_rest() -> None:
    answers = iter(range(10**6))

    def lm_fn(request: LMRequest) -> str:
        text = request.messages[-1].content
        return "Score: 4" if "easy" in text else f"Score: {1 + next(answers) % 5}"

    base = PromptJudge(JudgePrompt.from_template(TEMPLATE, criterion="coherence"), FakeLM(lm_fn))
    pipe = parse_pipeline("sampling(temperature=0.7, n=5) | selective(target=0.9, delta=0.1, tolerance=0.5)")
    fitted = pipe.fit(bench(200), base, progress=False)
    g = fitted.steps[-1].guarantee_
    # the erratic items' five samples are 1..5 (confidence 0.2); the reliable ones agree (confidence 1)
    assert g is not None and g.threshold is not None and 0.2 < g.threshold <= 1.0
    assert (g.n_accepted, g.n_agreed) == (100, 100)
    wrapped = fitted.wrap(base)
    easy, hard = (asyncio.run(wrapped.judge(bench(2, 500).items[k])) for k in (0, 1))
    assert easy.meta["selective"]["decision"] == "accept" and "needs_human" not in easy.flags
    assert hard.meta["selective"]["decision"] == "escalate" and "needs_human" in hard.flags
    assert hard.scores["coherence"] is not None  # "flag" keeps the answer


def test_abstain_removes_the_escalated_answer_and_unfitted_use_is_refused() -> None:
    j = Judgment(item_id="x", scores={"c": 3.0}, samples={"c": (3.0, 1.0)})
    sel = SelectiveEvaluation(on_escalate="abstain").calibrate(
        [Judgment(item_id=f"k{i}", scores={"c": 3.0}, samples={"c": (3.0, 3.0)}) for i in range(40)]
        + [Judgment(item_id=f"h{i}", scores={"c": 1.0}, samples={"c": (3.0, 1.0)}) for i in range(40)],
        [Item(id=f"k{i}", output="o", human={"c": 3.0}) for i in range(40)]
        + [Item(id=f"h{i}", output="o", human={"c": 5.0}) for i in range(40)],
    )
    assert 0.5 < sel.guarantee_.threshold <= 1.0  # above the disagreeing judgments' confidence 0.5

    class Fixed(Judge):
        async def judge(self, item: Item) -> Judgment:
            return j

        def map_leaves(self, fn):  # type: ignore[no-untyped-def]
            return self

        def describe(self) -> dict:  # type: ignore[type-arg]
            return {"kind": "fixed"}

    out = asyncio.run(sel.wrap(Fixed()).judge(Item(id="x", output="o")))
    assert out.scores == {"c": None} and "needs_human" in out.flags
    with pytest.raises(ConfigError, match="SelectiveEvaluation is not fitted; expected"):
        SelectiveEvaluation().wrap(Fixed())


def test_a_cascade_answers_with_the_first_trusted_stage_and_calibrates_later_stages_on_escalations() -> None:
    items = [Item(id=f"i{i}", output="o", human={"c": 3.0}) for i in range(120)]
    # stage 1 is sure and right on the first 60 items, unsure and wrong on the rest; stage 2 is sure and right
    s1 = [
        Judgment(
            item_id=f"i{i}",
            scores={"c": 3.0 if i < 60 else 1.0},
            samples={"c": (3.0, 3.0) if i < 60 else (1.0, 2.0)},
        )
        for i in range(120)
    ]
    s2 = [Judgment(item_id=f"i{i}", scores={"c": 3.0}, samples={"c": (3.0, 3.0)}) for i in range(120)]
    stage = SelectiveEvaluation(target=0.9, delta=0.1, tolerance=0.5)
    fitted = fit_cascade([s1, s2], items, stage)
    assert fitted[0].guarantee_.n_calibration == 120 and fitted[1].guarantee_.n_calibration == 60

    class Replay(Judge):
        def __init__(self, js: list[Judgment]) -> None:
            self.js = {j.item_id: j for j in js}

        async def judge(self, item: Item) -> Judgment:
            return self.js[item.id]

        def map_leaves(self, fn):  # type: ignore[no-untyped-def]
            return self

        def describe(self) -> dict:  # type: ignore[type-arg]
            return {"kind": "replay"}

    cascade = CascadeJudge({"cheap": Replay(s1), "strong": Replay(s2)}, stages=fitted)
    first, second = (asyncio.run(cascade.judge(items[k])) for k in (0, 100))
    assert first.meta["cascade"] == {"stage": "cheap", "stages_called": 1}
    assert second.meta["cascade"] == {"stage": "strong", "stages_called": 2}
    assert second.scores["c"] == 3.0 and "needs_human" not in second.flags


def test_a_cascade_splits_delta_over_its_stages_so_the_whole_cascade_holds_at_one_minus_delta() -> None:
    rng = np.random.default_rng(3)
    items = [Item(id=f"i{i}", output="o", human={"c": 3.0}) for i in range(400)]

    def stage_judgments() -> list[Judgment]:  # confident answers right 90% of the time, unsure ones 50%
        out = []
        for i in range(400):
            sure = rng.random() < 0.5
            right = rng.random() < (0.9 if sure else 0.5)
            s = 3.0 if right else 1.0
            out.append(
                Judgment(item_id=f"i{i}", scores={"c": s}, samples={"c": (s, s) if sure else (s, 2.0)})
            )
        return out

    js = [stage_judgments(), stage_judgments()]
    stage = SelectiveEvaluation(target=0.8, delta=0.1, tolerance=0.5)
    split = fit_cascade(js, items, stage)
    alone = fit_cascade(js, items, stage, union_bound=False)
    assert [s.delta for s in split] == [0.05, 0.05] and [s.guarantee_.delta for s in split] == [0.05, 0.05]
    assert [s.delta for s in alone] == [0.1, 0.1]
    # fixed-sequence testing from the top stops no later at a smaller δ: never a looser threshold
    assert alone[0].guarantee_.threshold is not None and split[0].guarantee_.threshold is not None
    assert split[0].guarantee_.threshold >= alone[0].guarantee_.threshold
    assert split[0].guarantee_.n_accepted <= alone[0].guarantee_.n_accepted
    per_stage = fit_cascade(js, items, [stage, stage.model_copy(update={"target": 0.7})])
    assert [s.target for s in per_stage] == [0.8, 0.7]
    with pytest.raises(ConfigError, match=r"expected one SelectiveEvaluation per cascade stage \(2\); got 3"):
        fit_cascade(js, items, [stage] * 3)


def test_selective_composes_with_other_mitigations_and_round_trips() -> None:
    pipe = Pipeline([Sampling(temperature=0.7, n=3), SelectiveEvaluation(target=0.85, confidence="samples")])
    again = parse_pipeline("sampling(temperature=0.7, n=3) | selective(target=0.85)")
    assert again == pipe
    with pytest.raises(
        ConfigError, match="The 'target' parameter of mitigation 'selective' must be a float in"
    ):
        SelectiveEvaluation(target=1.0)
    base = PromptJudge(JudgePrompt.from_template(TEMPLATE, criterion="coherence"), FakeLM([]), JudgeConfig())
    with pytest.raises(ConfigError, match="is not fitted"):
        pipe.wrap(base)


def test_gold_verdict_reads_the_items_gold_preference_per_criterion() -> None:
    pair = Item(id="p", output="a", output_b="b", preference={"coherence": "A", "fluency": "tie"})
    assert gold_verdict(pair, "coherence") == "first" and gold_verdict(pair, "fluency") == "tie"
    assert gold_verdict(pair, "relevance") is None
    assert gold_verdict(Item(id="s", output="a", human={"c": 3.0})) is None
    with pytest.raises(DataError, match="gold preferences for"):
        gold_verdict(pair)
