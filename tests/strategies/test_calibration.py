"""Contextual and batch calibration of logprob scores and pairwise verdicts (Zhao et al. 2021; Zhou et al.
2024)."""

from __future__ import annotations

import asyncio
import math

import pytest

from mitigate.data import Benchmark, Item
from mitigate.errors import ConfigError, RunStoppedError
from mitigate.judge import JudgeConfig, PromptJudge
from mitigate.lm import Choice, FakeLM, LMRequest, LMResponse, TokenLogprob
from mitigate.prompt import JudgePrompt
from mitigate.strategies import BatchCalibration, ContextualCalibration, ExpectedScore, Pipeline, Sampling
from mitigate.strategies._calibration import calibrate, verdict_distribution

TEMPLATE = (
    'Rate the summary from 1 to 5.\n\nArticle: {{source}}\nSummary: {{summary}}\n\nReply with "Score: N".'
)
PAIR = "Which summary is better?\n\nSummary 1: {{output}}\nSummary 2: {{output_b}}\n\nAnswer 1 or 2."


def answer(probs: dict[str, float], generated: str) -> LMResponse:
    """A response generating ``generated`` at the score position with ``probs`` as its top alternatives."""
    top = tuple((f" {k}", math.log(v)) for k, v in probs.items())
    positions = (
        TokenLogprob(token="Score", logprob=0.0),
        TokenLogprob(token=":", logprob=0.0),
        TokenLogprob(token=f" {generated}", logprob=math.log(probs[generated]), top=top),
    )
    return LMResponse(choices=(Choice(text=f"Score: {generated}", logprobs=positions),), model="fake")


def skewed(request: LMRequest) -> LMResponse:
    """A judge biased towards 5: content-free inputs get mostly 5; real ones shift by the summary's first
    digit."""
    text = request.messages[-1].content
    if "Summary: N/A" in text or "Summary: \n" in text or "[MASK]" in text:
        return answer({"5": 0.6, "4": 0.3, "3": 0.1}, "5")
    good = "good" in text
    return answer({"5": 0.7, "4": 0.2, "3": 0.1} if good else {"5": 0.5, "4": 0.2, "3": 0.2, "2": 0.1}, "5")


def bench() -> Benchmark:
    items = tuple(
        Item(
            id=f"i{k}",
            output=("good " if k % 2 else "bad ") + f"summary {k}",
            inputs={"source": "Art."},
            human={"coherence": 5.0 if k % 2 else 2.0},
        )
        for k in range(6)
    )
    return Benchmark(name="b", items=items, criteria=("coherence",))


def judge(lm: FakeLM) -> PromptJudge:
    return PromptJudge(JudgePrompt.from_template(TEMPLATE, criterion="coherence"), lm, JudgeConfig())


def test_contextual_calibration_divides_by_the_content_free_distribution() -> None:
    lm = FakeLM(skewed, logprobs=True)
    base = ExpectedScore().wrap(judge(lm))
    fitted = ContextualCalibration().fit(bench(), base, progress=False)
    prior = fitted.priors_[0]
    assert prior == pytest.approx((0.0, 0.0, 0.1, 0.3, 0.6))
    j = asyncio.run(fitted.wrap(base).judge(bench().items[1]))
    p = {"1": 0.0, "2": 0.0, "3": 0.1, "4": 0.2, "5": 0.7}
    q = calibrate(p, prior, ("1", "2", "3", "4", "5"))
    assert j.scores["coherence"] == pytest.approx(sum(int(k) * v for k, v in q.items()))
    assert j.meta["calibration"]["uncalibrated"][0] == pytest.approx(3 * 0.1 + 4 * 0.2 + 5 * 0.7)
    # the prior's pull to 5 is removed
    assert j.scores["coherence"] < j.meta["calibration"]["uncalibrated"][0]


def test_batch_calibration_uses_the_training_batch_mean_and_keeps_the_ranking() -> None:
    lm = FakeLM(skewed, logprobs=True)
    base = judge(lm)
    pipe = Pipeline([ExpectedScore(), BatchCalibration()]).fit(bench(), base, progress=False)
    prior = pipe.steps[1].priors_[0]
    assert prior[4] == pytest.approx((0.7 + 0.5) / 2)
    wrapped = pipe.wrap(base)
    good, bad = (asyncio.run(wrapped.judge(bench().items[k])).scores["coherence"] for k in (1, 0))
    assert good > bad


def test_an_unfitted_calibration_refuses_to_wrap_and_reasoning_prompts_are_refused() -> None:
    with pytest.raises(ConfigError, match="BatchCalibration is not fitted; expected"):
        BatchCalibration().wrap(judge(FakeLM([])))
    cot = Sampling(cot=True).wrap(judge(FakeLM([])))
    with pytest.raises(ConfigError, match="needs a direct answer"):
        ContextualCalibration(priors_=((0.2,) * 5,)).wrap(cot)


def test_fit_without_logprobs_says_what_it_expected() -> None:
    lm = FakeLM(lambda r: LMResponse(choices=(Choice(text="Score: 4"),), model="fake"), logprobs=True)
    # the runner's circuit breaker stops the fit at the repeating capability error, naming it
    with pytest.raises(
        RunStoppedError, match="asked for token logprobs .* expected scripted choices with logprobs"
    ):
        BatchCalibration().fit(bench(), judge(lm), progress=False)


def test_pairwise_verdict_probabilities_are_calibrated() -> None:
    def pair(request: LMRequest) -> LMResponse:
        text = request.messages[-1].content
        probs = (
            {"1": 0.8, "2": 0.2}
            if "N/A" in text or "[MASK]" in text or "Summary 1: \n" in text
            else ({"1": 0.6, "2": 0.4})
        )
        top = tuple((k, math.log(v)) for k, v in probs.items())
        pos = (TokenLogprob(token="1", logprob=math.log(probs["1"]), top=top),)
        return LMResponse(choices=(Choice(text="1", logprobs=pos),), model="fake")

    prompt = JudgePrompt.from_template(PAIR, answer="pairwise")
    base = PromptJudge(prompt, FakeLM(pair, logprobs=True))
    items = (Item(id="p", output="a", output_b="b"),)
    fitted = ContextualCalibration().fit(Benchmark(name="p", items=items), base, progress=False)
    assert fitted.priors_[0] == pytest.approx((0.8, 0.2))
    j = asyncio.run(fitted.wrap(base).judge(items[0]))
    # 0.6/0.8 = 0.75 vs 0.4/0.2 = 2: the position prior flips the verdict to the second output
    assert j.verdict == "second"
    assert j.meta["calibration"]["q"]["second"] == pytest.approx(2 / 2.75)


def test_verdict_distribution_reads_the_first_label_position() -> None:
    pos = (
        TokenLogprob(token="Answer", logprob=0.0),
        TokenLogprob(token=" B", logprob=math.log(0.7), top=((" B", math.log(0.7)), (" A", math.log(0.2)))),
    )
    assert verdict_distribution(pos, ("A", "B")) == pytest.approx({"first": 0.2 / 0.9, "second": 0.7 / 0.9})


def test_calibration_composes_with_selective_evaluation_on_its_answer_probability() -> None:
    lm = FakeLM(skewed, logprobs=True)
    base = judge(lm)
    items = tuple(
        Item(
            id=f"i{k}",
            output=("good " if k % 2 else "bad ") + f"summary {k}",
            inputs={"source": "Art."},
            human={"coherence": 5.0 if k % 2 else 2.0},
        )
        for k in range(80)
    )
    train = Benchmark(name="b", items=items, criteria=("coherence",))
    from mitigate.strategies import parse_pipeline

    pipe = parse_pipeline(
        "expected-score | batch-calibration | selective(confidence=probability, target=0.8, tolerance=1.0)"
    ).fit(train, base, progress=False)
    g = pipe.steps[-1].guarantee_
    assert g is not None and g.n_calibration == 80
    j = asyncio.run(pipe.wrap(base).judge(items[1]))
    assert j.meta["selective"]["confidence"] == pytest.approx(max(j.meta["calibration"]["q"].values()))
