"""Pairwise scoring that keeps the distribution: verdict probabilities from logprobs or samples, pooled over
both orders."""

from __future__ import annotations

import math
import warnings

import pytest

from mitigate.data import Item
from mitigate.errors import ConfigError, ParseError
from mitigate.judge import PromptJudge
from mitigate.lm import Choice, FakeLM, LMRequest, LMResponse, TokenLogprob
from mitigate.parse import verdict_probabilities
from mitigate.prompt import JudgePrompt
from mitigate.registry import run_coroutine
from mitigate.strategies import DistributionJudge, PairwiseDistribution, Sampling
from mitigate.strategies._pairwise_distribution import pool_orders
from mitigate.testing._examples import PAIRWISE


def _tokens(*parts: str | tuple[str, dict[str, float]]) -> tuple[TokenLogprob, ...]:
    """Generated tokens; a (token, {alternative: probability}) part lists the top alternatives at that
    position."""
    out = []
    for p in parts:
        if isinstance(p, tuple):
            tok, alts = p
            top = tuple((t, math.log(q)) for t, q in alts.items())
            out.append(TokenLogprob(token=tok, logprob=math.log(alts[tok]), top=top))
        else:
            out.append(TokenLogprob(token=p, logprob=0.0, top=((p, 0.0),)))
    return tuple(out)


def test_the_verdict_is_read_at_the_label_after_the_answer_lines_lead() -> None:
    toks = _tokens("Verdict", ":", " [[", ("A", {"A": 0.6, "B": 0.3, " I": 0.1}), "]]")
    got = verdict_probabilities(toks, ("A", "B"), lead="Verdict: [[")
    assert got.probabilities == pytest.approx({"first": 2 / 3, "second": 1 / 3})
    assert got.generated == "first" and got.mass == pytest.approx(0.9)


def test_labels_sharing_a_beginning_are_told_apart_where_they_differ() -> None:
    toks = _tokens("Output", " (", ("b", {"b": 0.55, "a": 0.45}), ")")
    got = verdict_probabilities(toks, ("a", "b"), lead="Output (")
    assert got.probabilities == pytest.approx({"first": 0.45, "second": 0.55})
    long = _tokens("Assistant", ("ĠB", {"ĠB": 0.8, "ĠA": 0.2}))
    assert verdict_probabilities(long, ("Assistant A", "Assistant B")).probabilities[
        "second"
    ] == pytest.approx(0.8)


def test_a_word_that_merely_starts_like_a_label_is_not_a_verdict() -> None:
    toks = _tokens(("As", {"As": 0.9, "A": 0.1}), " an", " AI", "\n", ("A", {"A": 0.7, "B": 0.3}))
    got = verdict_probabilities(toks, ("A", "B"))  # a bare label: read at the start of a line
    assert got.position == 4 and got.probabilities["first"] == pytest.approx(0.7)
    ten = _tokens("[[", ("10", {"10": 0.9, "2": 0.1}), "]]")
    with pytest.raises(ParseError, match="naming one of"):
        verdict_probabilities(ten, ("1", "2"), lead="[[")


def test_after_reasoning_the_last_verdict_position_is_read_and_with_the_answer_first_the_first() -> None:
    toks = _tokens(
        "Maybe",
        " [[",
        ("B", {"B": 0.9, "A": 0.1}),
        "]]",
        " but",
        " no",
        ".",
        " [[",
        ("A", {"A": 0.8, "B": 0.2}),
        "]]",
    )
    assert verdict_probabilities(toks, ("A", "B"), lead="[[").generated == "first"
    assert verdict_probabilities(toks, ("A", "B"), lead="[[", answer_first=True).generated == "second"


def test_the_swap_is_undone_before_the_two_orders_are_averaged() -> None:
    pooled, verdict = pool_orders({"first": 0.8, "second": 0.2}, {"first": 0.6, "second": 0.4})
    assert pooled == pytest.approx({"A": 0.6, "B": 0.4, "tie": 0.0}) and verdict == "first"
    _, tie = pool_orders({"first": 0.55, "second": 0.45}, {"first": 0.55, "second": 0.45}, tie_margin=0.05)
    assert tie == "tie"


def _item() -> Item:
    return Item(id="x", output="summary one", output_b="summary two", inputs={"source": "the article"})


def _logprob_lm(p_first: dict[str, float]) -> FakeLM:
    """Answers each order with its most probable label, the probabilities given by which summary is shown
    first."""

    def answer(request: LMRequest) -> LMResponse:
        text = request.messages[-1].content
        order = "original" if "Summary A: summary one" in text else "swapped"
        p = p_first[order]
        label = "A" if p >= 0.5 else "B"
        toks = _tokens("[[", (label, {"A": p, "B": 1 - p}), "]]")
        return LMResponse(choices=(Choice(text=f"[[{label}]]", logprobs=toks),))

    return FakeLM(answer, logprobs=True)


def test_a_position_biased_judge_is_pooled_to_its_preference_between_the_texts() -> None:
    # original: 0.9 for the first (summary one); swapped: 0.6 for the first (summary two): prefers position,
    # but less strongly once summary one is second -> pooled P(one) = (0.9 + 0.4) / 2 = 0.65
    lm = _logprob_lm({"original": 0.9, "swapped": 0.6})
    judge = PairwiseDistribution().wrap(PromptJudge(JudgePrompt.from_template(PAIRWISE), lm))
    j = run_coroutine(judge.judge(_item()), what="test", instead="await")
    assert j.verdict == "first" and j.meta["preference"]["A"] == pytest.approx(0.65)
    assert j.meta["orders"] == {"original": "first", "swapped": "first"}  # the hard votes flip with the order
    assert j.meta["position_consistent"] is False and j.meta["source"] == "logprobs"
    assert j.calls == 2 and all(r.top_logprobs == 10 for r in lm.requests)


def test_a_generated_label_that_is_not_the_texts_verdict_is_a_recorded_failure() -> None:
    def answer(request: LMRequest) -> LMResponse:
        return LMResponse(
            choices=(Choice(text="[[A]]", logprobs=_tokens("[[", ("B", {"B": 0.9, "A": 0.1}), "]]")),)
        )

    judge = PairwiseDistribution(source="logprobs").wrap(
        PromptJudge(JudgePrompt.from_template(PAIRWISE), FakeLM(answer, logprobs=True))
    )
    j = run_coroutine(judge.judge(_item()), what="test", instead="await")
    assert j.verdict is None and len(j.failures) == 2 and "not the verdict" in j.failures[0].reason


def test_without_logprobs_the_verdict_shares_of_samples_are_pooled() -> None:
    answers = iter(["[[A]]", "[[A]]", "[[A]]", "[[B]]", "[[B]]", "[[B]]", "[[A]]", "not a verdict"])
    lm = FakeLM(lambda r: next(answers))
    judge = PairwiseDistribution(samples=4).wrap(PromptJudge(JudgePrompt.from_template(PAIRWISE), lm))
    j = run_coroutine(judge.judge(_item()), what="test", instead="await")
    # original: A A A B -> first 3/4; swapped: B B A (one failure) -> second 2/3 = A (summary one) again
    assert j.meta["source"] == "samples" and lm.requests[0].n == 4 and lm.requests[0].temperature == 0.7
    assert j.meta["preference"]["A"] == pytest.approx((0.75 + 2 / 3) / 2) and j.verdict == "first"
    assert len(j.failures) == 1
    with pytest.raises(ConfigError, match="several samples"):
        (PairwiseDistribution(samples=4) | Sampling()).wrap(
            PromptJudge(JudgePrompt.from_template(PAIRWISE), FakeLM(["x"]))
        ).requests(_item())


def test_logprobs_cannot_be_read_from_relation_verdicts_and_a_score_prompt_is_refused() -> None:
    from tests.test_composition_battery import _template

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        arena = _template("arenahard")
    with pytest.raises(ConfigError, match="relations"):
        PairwiseDistribution(source="logprobs").wrap(PromptJudge(arena, FakeLM(["x"], logprobs=True)))
    assert isinstance(PairwiseDistribution().wrap(PromptJudge(arena, FakeLM(["x"]))), DistributionJudge)
    from mitigate.testing._examples import GUIDED

    with pytest.raises(ConfigError, match="pairwise judge"):
        PairwiseDistribution().wrap(PromptJudge(JudgePrompt.from_template(GUIDED), FakeLM(["x"])))


def test_the_requests_list_both_orders_with_logprobs() -> None:
    judge = PairwiseDistribution(top_logprobs=5).wrap(
        PromptJudge(JudgePrompt.from_template(PAIRWISE), FakeLM(["x"], logprobs=True))
    )
    first, second = judge.requests(_item())
    assert first.path == ("original",) and second.path == ("swapped",) and second.swapped
    assert first.request.top_logprobs == 5 and "Summary A: summary two" in second.request.messages[-1].content
