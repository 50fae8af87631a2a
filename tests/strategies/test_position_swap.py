"""PositionSwap: judge a pair in both orders and reconcile the verdicts."""

from __future__ import annotations

import pytest

from mitigate import Item, JudgePrompt, PromptJudge
from mitigate.errors import ConfigError, DataError
from mitigate.lm import FakeLM, LMRequest
from mitigate.measures import position_bias
from mitigate.strategies import PositionSwap, PositionSwapJudge, Sampling, from_spec
from mitigate.strategies._multiple_evidence import swap_item

TEMPLATE = (
    "Which summary of the article is better?\n\nArticle:\n{{document}}\n\n"
    "Summary 1:\n{{output}}\n\nSummary 2:\n{{output_b}}\n\nAnswer 'Summary 1' or 'Summary 2'."
)
ITEM = Item(
    id="pair-1", output="Short and right.", output_b="Long and wrong.", inputs={"document": "An article."}
)


def judge_with(lm: FakeLM) -> PromptJudge:
    return PromptJudge(JudgePrompt.from_template(TEMPLATE, answer="pairwise"), lm)


def prefers(text: str):
    """A judge that always picks the summary containing ``text`` (no position bias)."""

    def answer(request: LMRequest) -> str:
        body = request.messages[-1].content
        first = body.split("Summary 1:\n", 1)[1].split("\n\nSummary 2:", 1)[0]
        return "Summary 1 is better." if text in first else "Summary 2 is better."

    return answer


async def test_second_call_gets_the_outputs_swapped_and_a_consistent_verdict_is_kept() -> None:
    lm = FakeLM(prefers("right"))
    j = await PositionSwap().wrap(judge_with(lm)).judge(ITEM)
    first, second = (r.messages[-1].content for r in lm.requests)
    assert "Summary 1:\nShort and right.\n\nSummary 2:\nLong and wrong." in first
    assert "Summary 1:\nLong and wrong.\n\nSummary 2:\nShort and right." in second
    assert j.verdict == "first" and j.flags == ()
    assert j.meta == {"orders": {"original": "first", "swapped": "second"}, "position_consistent": True}
    assert j.calls == 2 and j.raw == ("Summary 1 is better.", "Summary 2 is better.")


@pytest.mark.parametrize(("on_flip", "verdict"), [("tie", "tie"), ("abstain", None)])
async def test_a_flip_becomes_a_tie_or_an_abstention(on_flip: str, verdict: str | None) -> None:
    lm = FakeLM(["Summary 1 is better.", "Summary 1 is better."])  # always the first position
    j = await PositionSwap(on_flip=on_flip).wrap(judge_with(lm)).judge(ITEM)  # type: ignore[arg-type]
    assert j.verdict == verdict
    assert j.flags == ("position_inconsistent",)
    assert j.meta["orders"] == {"original": "first", "swapped": "first"}
    assert j.meta["position_consistent"] is False


async def test_ties_in_both_orders_are_consistent() -> None:
    lm = FakeLM(["Both are equally good.", "It is a tie."])
    prompt = JudgePrompt.from_template(
        TEMPLATE.replace("or 'Summary 2'", ", 'Summary 2' or 'tie'"), answer="pairwise", tie="tie"
    )
    j = await PositionSwap(on_flip="abstain").wrap(PromptJudge(prompt, lm)).judge(ITEM)
    assert j.verdict == "tie" and j.meta["position_consistent"] is True and j.flags == ()


async def test_a_tie_is_no_verdict_where_the_template_offers_none() -> None:
    lm = FakeLM(["Both are equally good.", "It is a tie."])
    j = await PositionSwap(on_flip="abstain").wrap(judge_with(lm)).judge(ITEM)
    assert j.verdict is None and len(j.failures) == 2
    assert all("does not offer" in f.reason for f in j.failures)


async def test_a_parse_failure_in_either_order_leaves_no_verdict_and_is_recorded() -> None:
    lm = FakeLM(["Summary 2 is better.", "Hard to say, both have merits and flaws."])
    j = await PositionSwap().wrap(judge_with(lm)).judge(ITEM)
    assert j.verdict is None and not j.ok
    assert len(j.failures) == 1 and j.failures[0].raw.startswith("Hard to say")
    assert j.meta == {"orders": {"original": "second", "swapped": None}, "position_consistent": None}


async def test_orders_in_meta_feed_the_position_bias_measure() -> None:
    lm = FakeLM(
        ["Summary 1 is better.", "Summary 1 is better.", "Summary 1 is better.", "Summary 2 is better."]
    )
    judge = PositionSwap().wrap(judge_with(lm))
    js = [await judge.judge(ITEM.model_copy(update={"id": f"p{k}"})) for k in range(2)]
    m = position_bias([j.meta["orders"]["original"] for j in js], [j.meta["orders"]["swapped"] for j in js])
    assert m.value == pytest.approx(0.5)  # the first pair flipped, the second did not
    assert [j.verdict for j in js] == ["tie", "first"]


def test_swap_item_exchanges_the_outputs_and_needs_output_b() -> None:
    swapped = swap_item(ITEM)
    assert (swapped.output, swapped.output_b) == (ITEM.output_b, ITEM.output)
    assert swapped.id == ITEM.id and ITEM.output == "Short and right."
    with pytest.raises(DataError, match="item 'x' has no output_b"):
        swap_item(Item(id="x", output="only one"))


async def test_a_non_pairwise_judge_is_refused_when_judging() -> None:
    judge = PositionSwap().wrap(PromptJudge(JudgePrompt.from_template("Rate {{output}}"), FakeLM([])))
    with pytest.raises(
        ConfigError, match="needs pairwise prompt judges .* got prompts answering \\['score'\\]"
    ):
        await judge.judge(ITEM)


async def test_sampling_after_the_swap_reaches_both_orders() -> None:
    lm = FakeLM(
        ["Summary 1 is better.", "Summary 1 is better.", "Summary 2 is better.", "Summary 2 is better."]
    )
    judge = (PositionSwap() | Sampling(temperature=0.9, n=2)).wrap(judge_with(lm))
    assert isinstance(judge, PositionSwapJudge)
    assert [leaf.config.n for leaf in judge.leaves()] == [2, 2]
    j = await judge.judge(ITEM)
    assert [(r.n, r.temperature) for r in lm.requests] == [(2, 0.9), (2, 0.9)]
    assert j.verdict == "first" and j.meta["orders"] == {"original": "first", "swapped": "second"}


def test_wrap_never_mutates_and_spec_round_trips() -> None:
    base = judge_with(FakeLM([]))
    before = base.describe()
    wrapped = PositionSwap(on_flip="abstain").wrap(base)
    assert base.describe() == before and wrapped is not base
    assert wrapped.describe()["params"] == {"on_flip": "abstain"}
    for m in PositionSwap.examples():
        assert from_spec(m.spec()) == m
    with pytest.raises(ConfigError, match="'on_flip' parameter of mitigation 'position-swap' must be one of"):
        PositionSwap(on_flip="coin")  # type: ignore[arg-type]
