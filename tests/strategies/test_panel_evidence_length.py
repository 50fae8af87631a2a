"""Panels (Verga et al. 2024), multiple evidence with balanced positions (Wang et al. 2023) and length control
(Dubois et al. 2024)."""

from __future__ import annotations

import asyncio
import math
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

from mitigate import measures as M
from mitigate.data import Benchmark, Item
from mitigate.errors import ConfigError
from mitigate.judge import Judge, Judgment, PromptJudge
from mitigate.lm import FakeLM, LMRequest
from mitigate.prompt import JudgePrompt
from mitigate.strategies import LengthControl, MultipleEvidence, Panel, PanelJudge, Pipeline, parse_pipeline
from mitigate.strategies._multiple_evidence import balanced_verdict, entropy_threshold, verdict_entropy
from mitigate.strategies._panel import reduce_panel

TEMPLATE = (
    'Rate the summary from 1 to 5.\n\nArticle: {{source}}\nSummary: {{summary}}\n\nReply with "Score: N".'
)
PAIR = "Which summary is better?\n\nSummary 1: {{output}}\nSummary 2: {{output_b}}\n\nAnswer 1 or 2."


class Fixed(Judge):
    """A judge returning a scripted judgment (or raising) per item."""

    def __init__(self, fn: Callable[[Item], Judgment]) -> None:
        self.fn = fn

    async def judge(self, item: Item) -> Judgment:
        return self.fn(item)

    def map_leaves(self, fn: Any) -> Judge:
        return self

    def describe(self) -> dict[str, Any]:
        return {"kind": "fixed"}


def member(score: float | None) -> Fixed:
    return Fixed(lambda it: Judgment(item_id=it.id, scores={"c": score}))


ITEM = Item(id="x", output="o")


def test_reducers_are_order_free_and_a_strict_majority_counts_failed_members() -> None:
    assert reduce_panel([2.0, 4.0, 4.0, 5.0], "median") == 4.0 == reduce_panel([5.0, 4.0, 2.0, 4.0], "median")
    assert reduce_panel([4.0, 4.0, None], "majority") == 4.0  # 2 of 3 members
    assert reduce_panel([4.0, 4.0, None, None], "majority") is None  # 2 of 4 is no strict majority
    assert reduce_panel([3.0, 4.0], "majority") is None and reduce_panel([4.0, 3.0], "majority") is None
    assert reduce_panel([3.0, None, 5.0], "mean") is None  # default quorum: every member
    assert reduce_panel([3.0, None, 5.0], "mean", quorum=2) == 4.0


def test_a_failed_member_is_reported_never_dropped() -> None:
    def boom(item: Item) -> Judgment:
        raise RuntimeError("backend down")

    panel = PanelJudge(
        {"a": member(4.0), "b": member(4.0), "c": Fixed(boom), "d": member(None)}, reducer="majority"
    )
    j = asyncio.run(panel.judge(ITEM))
    assert j.scores["c"] is None  # 2 of 4 members is not a strict majority
    assert j.meta["panel"]["failed"] == ["c", "d"] and "backend down" in j.meta["panel"]["errors"]["c"]
    assert {"panel_member_failed", "no_majority"} <= set(j.flags)
    assert j.samples["c"] == (4.0, 4.0, None, None) and j.error is None
    three = PanelJudge({"a": member(4.0), "b": member(4.0), "c": Fixed(boom)}, reducer="majority")
    assert asyncio.run(three.judge(ITEM)).scores["c"] == 4.0


def test_a_panel_of_verdicts_votes_without_list_order_breaking_ties() -> None:
    def v(verdict: str) -> Fixed:
        return Fixed(lambda it: Judgment(item_id=it.id, verdict=verdict))  # type: ignore[arg-type]

    for order in (("first", "second"), ("second", "first")):
        j = asyncio.run(PanelJudge({"a": v(order[0]), "b": v(order[1])}, reducer="mean").judge(ITEM))
        assert j.verdict == "tie"
    j = asyncio.run(
        PanelJudge({"a": v("first"), "b": v("first"), "c": v("second")}, reducer="majority").judge(ITEM)
    )
    assert j.verdict == "first"


def test_the_panel_mitigation_sends_the_same_prompt_to_every_backend() -> None:
    lm = FakeLM(["Score: 2"])
    base = PromptJudge(JudgePrompt.from_template(TEMPLATE, criterion="coherence"), lm)
    panel = Panel(backends=("local",), reducer="median").wrap(base)
    assert isinstance(panel, PanelJudge) and list(panel.children) == ["base", "local"]
    leaves = panel.leaves()
    assert leaves[0].prompt == leaves[1].prompt and leaves[1].lm.spec.startswith("local")
    assert parse_pipeline('panel(backends=["local"], reducer=majority)').steps[0].reducer == "majority"
    with pytest.raises(ConfigError, match="mitigation 'panel' needs the 'backends' parameter"):
        Panel()


def test_balanced_verdicts_and_entropy() -> None:
    assert balanced_verdict(["first"], ["second"]) == ("first", 1.0)  # swapped "second" is the same text
    assert balanced_verdict(["first"], ["first"])[0] == "tie"  # a flip
    assert verdict_entropy(["first", "first"], ["second", "second"]) == 0.0
    assert verdict_entropy(["first"], ["first"]) == pytest.approx(math.log(2))
    assert verdict_entropy(["first", None], ["second", "second"]) > 0  # a failed sample counts
    assert entropy_threshold([0.0, 0.1, 0.5, 0.9, 1.0], 0.4) == 0.9  # the top 2 of 5
    assert entropy_threshold([0.0, 0.1], 0.1) > 0.1  # rounds to no item: nothing flagged


def position_biased(request: LMRequest) -> str:
    """Prefers the first position unless the texts differ in quality a lot ('great' beats everything)."""
    text = request.messages[-1].content
    first = text.split("Summary 1:")[1].split("Summary 2:")[0]
    second = text.split("Summary 2:")[1]
    if "great" in first:
        return "Reasoning ... Summary 1 is better."
    if "great" in second:
        return "Reasoning ... Summary 2 is better."
    return "Reasoning ... Summary 1 is better."


def test_multiple_evidence_balances_orders_and_sends_uncertain_items_to_a_human() -> None:
    base = PromptJudge(JudgePrompt.from_template(PAIR, answer="pairwise"), FakeLM(position_biased))
    items = tuple(
        Item(id=f"p{i}", output="great text" if i % 2 else "plain a", output_b="plain b") for i in range(10)
    )
    fitted = MultipleEvidence(k=2, human_share=0.5).fit(
        Benchmark(name="p", items=items), base, progress=False
    )
    judge = fitted.wrap(base)
    sure, unsure = (asyncio.run(judge.judge(items[k])) for k in (1, 0))
    assert (
        sure.verdict == "first"
        and sure.meta["evidence"]["entropy"] == 0.0
        and "needs_human" not in sure.flags
    )
    # position bias only: both orders say "1"
    assert unsure.verdict == "tie" and "needs_human" in unsure.flags
    assert sure.meta["confidence"] == 1.0 > unsure.meta["confidence"]
    requests = base.lm.requests  # type: ignore[attr-defined]
    assert {r.seed for r in requests} == {0, 1} and all(r.temperature == 0.7 for r in requests)
    assert "reasoning" in requests[0].messages[-1].content.lower()
    with pytest.raises(ConfigError, match="MultipleEvidence is not fitted"):
        MultipleEvidence().wrap(base)


def test_multiple_evidence_asks_for_reasoning_before_the_templates_own_verdict_line() -> None:
    text = PAIR.replace("Answer 1 or 2.", 'Give your verdict strictly as "[[1]]" or "[[2]]".\n\nVerdict:')
    base = PromptJudge(JudgePrompt.from_template(text, answer="pairwise"), FakeLM([]))
    leaves = MultipleEvidence(k=1, human_share=0.0).wrap(base).leaves()
    assert len(leaves) == 2
    for leaf in leaves:
        assert leaf.prompt.format.reasoning == "before"  # a constrained backend lets the reasoning through
        assert leaf.prompt.messages[-1].template.endswith(
            "End your answer with a final line \"[[X]]\", with X being '1' or '2'.\n\nVerdict:"
        )


def test_the_length_controlled_win_rate_removes_a_pure_length_preference() -> None:
    rng = np.random.default_rng(0)
    # no quality difference, a strong length effect, and A 20 words longer on average: the raw win rate is
    # inflated
    shift = rng.normal(0, 30, 2000) + 20
    p = 1 / (1 + np.exp(-2.0 * np.tanh(shift / shift.std())))
    pref_long = (rng.random(2000) < p).astype(float)
    m = M.length_controlled_win_rate(pref_long, 100 + shift, np.full(2000, 100.0))
    assert m.extra["raw_win_rate"] > 0.6 and abs(m.value - 0.5) < 0.05 and m.extra["phi"] > 1.5
    # too few pairs: NaN with a reason
    assert M.length_controlled_win_rate([1.0, None], [1, 2], [1, 2]).reason
    pref_s, a, b = M.pairs_against(
        [3.0, 4.0, 2.0, 2.0], ["A", "B", "A", "B"], ["d1", "d1", "d2", "d2"], [10, 20, 30, 40], "A", "B"
    )
    assert list(pref_s) == [0.0, 0.5] and list(a) == [10, 30] and list(b) == [20, 40]


def test_length_control_removes_the_judge_length_slope_fitted_on_train() -> None:
    def by_length(request: LMRequest) -> str:
        words = len(request.messages[-1].content.split("Summary:")[1].split("Reply")[0].split())
        return f"Score: {min(5, 1 + words // 10)}"

    base = PromptJudge(JudgePrompt.from_template(TEMPLATE, criterion="coherence"), FakeLM(by_length))
    items = tuple(
        Item(id=f"i{n}", output=" ".join(["w"] * n), inputs={"source": "A."}, human={"coherence": 3.0})
        for n in range(5, 45, 3)
    )
    train = Benchmark(name="t", items=items, criteria=("coherence",))
    fitted = Pipeline([LengthControl()]).fit(train, base, progress=False)
    slope = fitted.steps[0].slopes_["coherence"]
    assert slope > 1.0
    judge = fitted.wrap(base)
    raw, adj = [], []
    for it in items:
        j = asyncio.run(judge.judge(it))
        raw.append(j.meta["length_control"]["raw"]["coherence"])
        adj.append(j.scores["coherence"])
    lengths = [len(it.output.split()) for it in items]
    assert abs(M.length_correlation(adj, lengths).value) < abs(M.length_correlation(raw, lengths).value)
    assert np.std(adj) < np.std(raw)
    human = LengthControl(reference="human").fit(train, base, progress=False)
    assert human.slopes_["coherence"] == pytest.approx(slope)  # humans here have no length slope


def test_multiple_evidence_composes_with_selective_evaluation_on_its_entropy_confidence() -> None:
    base = PromptJudge(JudgePrompt.from_template(PAIR, answer="pairwise"), FakeLM(position_biased))
    # 'great' first: the judge is right and sure; otherwise it only follows the position and the gold is
    # "second"
    items = tuple(
        Item(
            id=f"p{i}",
            output="great text" if i % 2 else "plain a",
            output_b="plain b",
            preference={"overall": "A" if i % 2 else "B"},
        )
        for i in range(80)
    )
    pipe = parse_pipeline("multiple-evidence(k=2, human_share=0) | selective(confidence=meta, target=0.9)")
    fitted = pipe.fit(Benchmark(name="p", items=items), base, progress=False)
    g = fitted.steps[-1].guarantee_
    assert g is not None and (g.n_accepted, g.n_agreed) == (40, 40)
    judge = fitted.wrap(base)
    sure, unsure = (asyncio.run(judge.judge(items[k])) for k in (1, 0))
    assert sure.meta["selective"]["decision"] == "accept" and "needs_human" in unsure.flags


async def test_a_majority_panels_abstentions_count_in_its_headline_accuracy(tmp_path) -> None:
    """Accuracy over ALL items with the abstention rate beside it, outcome counts adding up."""
    from mitigate.harness import Entry, compare
    from mitigate.report import render_markdown

    def v(pick: Callable[[Item], str]) -> Fixed:
        return Fixed(lambda it: Judgment(item_id=it.id, verdict=pick(it)))  # type: ignore[arg-type]

    items = tuple(
        Item(id=f"p{k}", output=f"one {k}", output_b=f"two {k}", preference={"q": "A"}) for k in range(4)
    )
    bench = Benchmark(name="pw", items=items, criteria=("q",))
    # p0, p1: all three say first (right); p2: first/second/tie, no majority (abstains); p3: all say second
    # (wrong)
    table = {"p0": "fff", "p1": "fff", "p2": "fst", "p3": "sss"}
    word = {"f": "first", "s": "second", "t": "tie"}
    panel = PanelJudge(
        {m: v(lambda it, i=i: word[table[it.id][i]]) for i, m in enumerate("abc")}, reducer="majority"
    )
    result = await compare(
        benchmark=bench,
        criterion="q",
        entries=[Entry(name="panel", judge=panel)],
        out_dir=tmp_path,
        progress=False,
        n_boot=20,
    )
    m = result.entries[0].measures["preference-accuracy"]
    assert m.value == pytest.approx(2 / 4) and m.n == 4  # not 2/3 over the decided items
    assert m.extra["abstained"] == 1 and m.extra["abstention_rate"] == pytest.approx(0.25)
    assert m.extra["accuracy_when_decided"] == pytest.approx(2 / 3)
    report = render_markdown(result)
    assert "abstained 0.250 (1), counted wrong" in report
    assert (
        "Items by outcome: 3 with a verdict, 1 abstained, 0 without one after parse failures, 0 errors (= 4)."
    ) in report


async def test_a_majority_panels_of_all_share_counts_each_abstention_once(tmp_path) -> None:
    from mitigate.harness import Entry, compare
    from mitigate.report import render_markdown

    items = tuple(
        Item(id=f"p{k}", output=f"one {k}", output_b=f"two {k}", preference={"q": "A"}) for k in range(3)
    )
    table = {"p0": "fff", "p1": "fst", "p2": "sss"}  # right, abstains (no majority), wrong
    word = {"f": "first", "s": "second", "t": "tie"}
    panel = PanelJudge(
        {
            m: Fixed(lambda it, i=i: Judgment(item_id=it.id, verdict=word[table[it.id][i]]))
            for i, m in enumerate("abc")
        },
        reducer="majority",
    )
    result = await compare(
        benchmark=Benchmark(name="pw", items=items, criteria=("q",)),
        criterion="q",
        entries=[Entry(name="panel", judge=panel)],
        out_dir=tmp_path,
        progress=False,
        n_boot=20,
    )
    m = result.entries[0].measures["preference-accuracy"]
    assert (m.value, m.n, m.n_failed, m.n_all) == (pytest.approx(1 / 3), 3, 0, 3)
    assert m.of_all is None or m.of_all == pytest.approx(1 / 3)
    assert "of 4" not in render_markdown(result)


async def test_a_panels_difference_to_a_single_judge_counts_abstentions_with_the_decided_only_figure_beside(
    tmp_path,
) -> None:
    from mitigate.harness import Entry, compare
    from mitigate.report import render_markdown

    items = tuple(
        Item(id=f"p{k}", output=f"one {k}", output_b=f"two {k}", preference={"q": "A"}) for k in range(6)
    )
    table = {"p0": "fff", "p1": "fff", "p2": "fff", "p3": "fff", "p4": "fst", "p5": "sss"}
    word = {"f": "first", "s": "second", "t": "tie"}
    panel = PanelJudge(
        {
            m: Fixed(lambda it, i=i: Judgment(item_id=it.id, verdict=word[table[it.id][i]]))
            for i, m in enumerate("abc")
        },
        reducer="majority",
    )
    single = Fixed(lambda it: Judgment(item_id=it.id, verdict="first"))
    result = await compare(
        benchmark=Benchmark(name="pw", items=items, criteria=("q",)),
        criterion="q",
        entries=[Entry(name="single", judge=single), Entry(name="panel", judge=panel)],
        out_dir=tmp_path,
        progress=False,
        n_boot=50,
        n_perm=200,
    )
    c = result.entries[1].comparison
    assert c.n == 6 and c.observed == pytest.approx(4 / 6 - 1)  # all items, the abstention not correct
    assert c.decided_n == 5 and c.decided_observed == pytest.approx(4 / 5 - 1)
    md = render_markdown(result)
    assert "decided items only: -0.200 (n=5)" in md
    assert "on the 5 items both decided: -0.200" in md
    assert result.entries[1].measures["preference-accuracy"].value == pytest.approx(4 / 6)
