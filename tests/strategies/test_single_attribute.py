"""SingleAttribute (one call per criterion) and its MultiAttribute control (Stureborg et al. 2024)."""

from __future__ import annotations

import asyncio
import importlib.util

import pytest

from mitigate import Criterion, Item, JudgePrompt, PromptJudge
from mitigate.errors import ConfigError, ScriptExhaustedError
from mitigate.judge import JudgeConfig
from mitigate.lm import LM, Choice, FakeLM, LMRequest, LMResponse
from mitigate.measures import correlation_by_position
from mitigate.strategies import MultiAttribute, Sampling, SingleAttribute, from_spec
from mitigate.strategies._edits import COT_LEAD, addenda, is_multi_criterion_template, multi_criterion_prompt
from mitigate.strategies._single_attribute import MultiAttributeJudge, SingleAttributeJudge

CRITS = [
    Criterion(name="coherence", definition="how well the summary is organised"),
    Criterion(name="fluency", definition="how well its sentences are written"),
]
ITEM = Item(id="d1/s1", output="The cat sat on the mat.", inputs={"document": "A long article about a cat."})


def base_prompt() -> JudgePrompt:
    return JudgePrompt.from_template("Rate the summary.\n\nArticle:\n{{document}}\n\nSummary:\n{{summary}}\n")


def multi_prompt(order: list[str] | None = None) -> JudgePrompt:
    return multi_criterion_prompt(base_prompt(), CRITS, order)


def by_criterion(answers: dict[str, str]):
    """A FakeLM script answering by which criterion the prompt lists."""

    def answer(request: LMRequest) -> str:
        text = request.messages[-1].content
        named = [name for name in answers if f"- {name.capitalize()}" in text]
        assert len(named) == 1, f"expected a prompt naming one criterion; got {named}"
        return answers[named[0]]

    return answer


EXPECTED_COHERENCE_CALL = (
    "Evaluate the summary below on one criterion:\n\n"
    "- Coherence: how well the summary is organised\n\n"
    "Score it on a scale from 1 to 5, where 1 is the worst and 5 the best.\n\n"
    "Document:\nA long article about a cat.\n\n"
    "Summary:\nThe cat sat on the mat.\n\n"
    'End your answer with a final line "Score: N", with N a score from 1 to 5.'
)


# --------------------------------------------------------------------------- single attribute


async def test_split_sends_one_call_per_criterion_naming_only_that_criterion() -> None:
    lm = FakeLM(by_criterion({"coherence": "Score: 4", "fluency": "Score: 2"}))
    judge = SingleAttribute().wrap(PromptJudge(multi_prompt(), lm))
    assert isinstance(judge, SingleAttributeJudge)
    j = await judge.judge(ITEM)
    assert j.scores == {"coherence": 4.0, "fluency": 2.0}
    assert j.calls == 2 and j.ok and j.meta["criteria"] == ["coherence", "fluency"]
    contents = [r.messages[-1].content for r in lm.requests]
    assert contents[0] == EXPECTED_COHERENCE_CALL
    assert "Fluency" not in contents[0] and "Coherence" not in contents[1]
    assert "- Fluency: how well its sentences are written" in contents[1]
    assert [leaf.prompt.criteria for leaf in judge.leaves()] == [(CRITS[0],), (CRITS[1],)]


async def test_free_form_multi_criterion_template_gets_a_rate_only_paragraph() -> None:
    text = (
        "Rate the summary for coherence and fluency.\n\nSummary:\n{{summary}}\n\n"
        "Answer with 'Coherence: N' and 'Fluency: N'."
    )
    prompt = JudgePrompt.from_template(text, criteria=CRITS)
    assert not is_multi_criterion_template(prompt)
    lm = FakeLM(["Score: 5", "Score: 3"])
    j = await SingleAttribute().wrap(PromptJudge(prompt, lm)).judge(ITEM)
    assert j.scores == {"coherence": 5.0, "fluency": 3.0}
    filled = text.replace("{{summary}}", ITEM.output)
    assert lm.requests[0].messages[-1].content == (
        filled + "\n\nFor this request, rate only coherence (how well the summary is organised); ignore the "
        'other criteria mentioned above. Answer with only "Coherence: N", with N a score from 1 to 5.'
    )  # the template's own answer line, renamed for the child's criterion
    assert (
        lm.requests[1]
        .messages[-1]
        .content.endswith('Answer with only "Fluency: N", with N a score from 1 to 5.')
    )
    assert (
        lm.requests[1].messages[-1].content.startswith(filled + "\n\nFor this request, rate only fluency (")
    )


def test_free_form_template_is_refused_when_asked_to() -> None:
    prompt = JudgePrompt.from_template("Rate coherence and fluency of {{summary}}", criteria=CRITS)
    with pytest.raises(ConfigError, match="free-form template scoring \\['coherence', 'fluency'\\]"):
        SingleAttribute(on_free_form="error").wrap(PromptJudge(prompt, FakeLM([])))
    # a prompt built by multi_criterion_prompt is fine
    SingleAttribute(on_free_form="error").wrap(PromptJudge(multi_prompt(), FakeLM([])))


async def test_parse_failure_of_one_criterion_stays_a_failure() -> None:
    lm = FakeLM(["Score: 4", "I cannot tell."])
    j = await SingleAttribute().wrap(PromptJudge(multi_prompt(), lm)).judge(ITEM)
    assert j.scores == {"coherence": 4.0, "fluency": None}
    assert j.samples == {"coherence": (4.0,), "fluency": (None,)}
    assert [f.criterion for f in j.failures] == ["fluency"] and j.failures[0].raw == "I cannot tell."
    assert not j.ok and j.raw == ("Score: 4", "I cannot tell.")


async def test_an_lm_error_in_one_child_is_raised_not_scored() -> None:
    lm = FakeLM(["Score: 4"])
    with pytest.raises(ScriptExhaustedError):
        await SingleAttribute().wrap(PromptJudge(multi_prompt(), lm)).judge(ITEM)
    assert lm.calls == 2  # the other child still ran


class SlowLM(LM):
    """Answers after a short sleep and records how many calls were in flight at once."""

    provider = "slow"

    def __init__(self) -> None:
        self.active = 0
        self.peak = 0

    async def complete(self, request: LMRequest) -> LMResponse:
        self.active += 1
        self.peak = max(self.peak, self.active)
        await asyncio.sleep(0.02)
        self.active -= 1
        return LMResponse(choices=(Choice(text="Score: 3"),))


@pytest.mark.parametrize(("concurrent", "peak"), [(True, 2), (False, 1)])
async def test_per_criterion_calls_run_concurrently_unless_told_not_to(concurrent: bool, peak: int) -> None:
    lm = SlowLM()
    j = await SingleAttribute(concurrent=concurrent).wrap(PromptJudge(multi_prompt(), lm)).judge(ITEM)
    assert j.scores == {"coherence": 3.0, "fluency": 3.0}
    assert lm.peak == peak


def test_single_criterion_and_pairwise_leaves_are_left_as_they_are_with_a_warning() -> None:
    single = PromptJudge(base_prompt(), FakeLM([]))
    with pytest.warns(UserWarning, match=r"changes nothing here.*scores only \['score'\]"):
        out = SingleAttribute().wrap(single)
    assert isinstance(out, PromptJudge) and out is not single and out.prompt == single.prompt
    pairwise = JudgePrompt.from_template("A: {{output}}\nB: {{output_b}}", answer="pairwise", criteria=CRITS)
    with pytest.warns(UserWarning, match="changes nothing here.*gives a pairwise verdict"):
        assert isinstance(SingleAttribute().wrap(PromptJudge(pairwise, FakeLM([]))), PromptJudge)


def test_wrap_never_mutates_its_input() -> None:
    judge = PromptJudge(multi_prompt(), FakeLM([]), JudgeConfig(temperature=0.3))
    before = judge.describe()
    wrapped = (SingleAttribute() | Sampling(temperature=1.0, n=2, cot=True)).wrap(judge)
    assert judge.describe() == before
    assert wrapped is not judge and all(leaf.config.n == 2 for leaf in wrapped.leaves())


async def test_sampling_after_the_split_reaches_every_per_criterion_call() -> None:
    lm = FakeLM(["Score: 1", "Score: 4", "Score: 4", "Score: 2", "Score: 2", "Score: 5"])
    judge = (SingleAttribute() | Sampling(temperature=0.8, n=3, cot=True, reducer="median")).wrap(
        PromptJudge(multi_prompt(), lm)
    )
    j = await judge.judge(ITEM)
    assert j.scores == {"coherence": 4.0, "fluency": 2.0}
    assert j.samples == {"coherence": (1.0, 4.0, 4.0), "fluency": (2.0, 2.0, 5.0)}
    assert [(r.n, r.temperature) for r in lm.requests] == [(3, 0.8), (3, 0.8)]
    for r in lm.requests:
        assert r.messages[-1].content.endswith(
            f'\n\n{COT_LEAD} End your answer with a final line "Score: N", with N a score from 1 to 5.'
        )


def test_cot_added_before_the_split_is_reworded_for_each_single_criterion() -> None:
    judge = (Sampling(temperature=0.5, n=2, cot=True) | SingleAttribute()).wrap(
        PromptJudge(multi_prompt(), FakeLM([]))
    )
    for leaf in judge.leaves():
        assert addenda(leaf.prompt)[COT_LEAD].endswith('a final line "Score: N", with N a score from 1 to 5.')
        assert is_multi_criterion_template(leaf.prompt)
        assert leaf.config.n == 2


def test_spec_round_trips() -> None:
    for m in (SingleAttribute(), SingleAttribute(concurrent=False, on_free_form="error")):
        assert from_spec(m.spec()) == m
    assert SingleAttribute().spec() == {
        "name": "single-attribute",
        "params": {"concurrent": True, "on_free_form": "append"},
    }
    with pytest.raises(ConfigError, match="'on_free_form' parameter of mitigation 'single-attribute'"):
        SingleAttribute(on_free_form="drop")  # type: ignore[arg-type]


# --------------------------------------------------------------------------- multi attribute


async def test_multi_attribute_asks_all_criteria_in_the_given_order_and_records_positions() -> None:
    prompt = JudgePrompt.from_template("Rate {{summary}} given {{document}}", criteria=CRITS)
    lm = FakeLM(["Fluency: 2\nCoherence: 5"])
    judge = MultiAttribute(order=("fluency", "coherence")).wrap(PromptJudge(prompt, lm))
    assert isinstance(judge, MultiAttributeJudge)
    j = await judge.judge(ITEM)
    assert j.scores == {"fluency": 2.0, "coherence": 5.0} and j.calls == 1
    assert j.meta["positions"] == {"fluency": 0, "coherence": 1}
    assert j.meta["order"] == ["fluency", "coherence"]
    text = lm.requests[0].messages[-1].content
    assert text.index("- Fluency: how well") < text.index("- Coherence: how well")
    assert text.endswith(
        "replacing each <score> with your score from 1 to 5:\nFluency: <score>\nCoherence: <score>"
    )
    assert text.index("Document:\nA long article") < text.index("Summary:\nThe cat sat")


def test_multi_attribute_refuses_a_token_limit_its_answer_lines_cannot_fit_in() -> None:
    prompt = JudgePrompt.from_template("Rate {{summary}} given {{document}}", criteria=CRITS)
    small = PromptJudge(prompt, FakeLM(["x"]), JudgeConfig(max_tokens=5))
    with pytest.raises(
        ConfigError,
        match=r"multi-attribute asks for 2 answer lines .* at least 6 tokens; "
        r"the judge's max_tokens is 5",
    ):
        MultiAttribute().wrap(small)
    assert isinstance(MultiAttribute().wrap(small.with_config(max_tokens=6)), MultiAttributeJudge)


async def test_multi_attribute_uses_given_criteria_and_keeps_failures() -> None:
    lm = FakeLM(["Coherence: 4\nFluency: excellent"])
    judge = MultiAttribute(criteria=tuple(CRITS)).wrap(PromptJudge(base_prompt(), lm))
    j = await judge.judge(ITEM)
    assert j.scores == {"coherence": 4.0, "fluency": None}
    assert [f.criterion for f in j.failures] == ["fluency"]
    assert j.meta["positions"] == {"coherence": 0, "fluency": 1}


async def test_positions_feed_correlation_by_position() -> None:
    human = {"coherence": [1.0, 2.0, 3.0, 4.0], "fluency": [4.0, 3.0, 1.0, 2.0]}
    answers = [
        "Coherence: 1\nFluency: 4",
        "Coherence: 2\nFluency: 3",
        "Coherence: 3\nFluency: 1",
        "Coherence: 4\nFluency: 1",
    ]
    judge = MultiAttribute(criteria=tuple(CRITS)).wrap(PromptJudge(base_prompt(), FakeLM(answers)))
    js = [await judge.judge(ITEM.model_copy(update={"id": f"i{k}"})) for k in range(4)]
    positions = {c: [j.meta["positions"][c] for j in js] for c in ("coherence", "fluency")}
    scores = {c: [j.scores[c] for j in js] for c in ("coherence", "fluency")}
    m = correlation_by_position(scores, human, positions, method="pearson")
    assert m.extra["by_position"][0] == pytest.approx(1.0)
    assert m.extra["by_position"][1] < 1.0


def test_multi_attribute_order_must_match_the_criteria() -> None:
    with pytest.raises(ConfigError, match="must list exactly the criteria \\['coherence', 'fluency'\\]"):
        MultiAttribute(criteria=tuple(CRITS), order=("coherence", "relevance"))
    with pytest.raises(ConfigError, match="distinct names"):
        MultiAttribute(order=("a", "a"))
    prompt = JudgePrompt.from_template("Rate {{summary}}", criteria=CRITS)
    with pytest.raises(
        ConfigError, match="judge's criteria \\['coherence', 'fluency'\\]. Got \\['x', 'y'\\]"
    ):
        MultiAttribute(order=("x", "y")).wrap(PromptJudge(prompt, FakeLM([])))


def test_multi_attribute_spec_round_trips_with_criteria() -> None:
    m = MultiAttribute(criteria=tuple(CRITS), order=("fluency", "coherence"))
    again = from_spec(m.spec())
    assert again == m and isinstance(again.criteria[0], Criterion)  # type: ignore[attr-defined]
    for example in MultiAttribute.examples():
        assert from_spec(example.spec()) == example


async def test_single_attribute_after_multi_attribute_splits_the_built_prompt() -> None:
    lm = FakeLM(["Score: 3", "Score: 5"])
    judge = (MultiAttribute(criteria=tuple(CRITS)) | SingleAttribute()).wrap(PromptJudge(base_prompt(), lm))
    j = await judge.judge(ITEM)
    assert j.scores == {"coherence": 3.0, "fluency": 5.0}
    assert "positions" not in j.meta  # no shared output any more
    assert lm.requests[0].messages[-1].content == EXPECTED_COHERENCE_CALL


def test_builder_checks_its_inputs() -> None:
    with pytest.raises(ConfigError, match="expected the order to list exactly"):
        multi_criterion_prompt(base_prompt(), CRITS, ["coherence"])
    with pytest.raises(ConfigError, match="distinct criterion names"):
        multi_criterion_prompt(base_prompt(), [CRITS[0], CRITS[0]])
    pairwise = JudgePrompt.from_template("{{output}} vs {{output_b}}", answer="pairwise")
    with pytest.raises(ConfigError, match="answer='pairwise'"):
        multi_criterion_prompt(pairwise, CRITS)
    built = multi_prompt(["fluency", "coherence"])
    assert [c.name for c in built.criteria] == ["fluency", "coherence"]
    assert is_multi_criterion_template(built) and built.guideline is None


def test_multi_criterion_prompt_refuses_demos_scored_on_one_criterion() -> None:
    from mitigate.prompt import Demo

    one = base_prompt().with_demos([Demo(item=ITEM, score=4.0)])
    with pytest.raises(ConfigError, match=r"needs demos scored on every one of them; demo 'd1/s1' has 4\.0"):
        multi_criterion_prompt(one, CRITS)
    with pytest.raises(ConfigError, match="after SingleAttribute"):
        MultiAttribute(criteria=tuple(CRITS)).wrap(PromptJudge(one, FakeLM([])))
    assert multi_criterion_prompt(one, CRITS[:1]).demos == one.demos  # one criterion: the demo still fits


def test_multi_criterion_demos_answer_one_line_per_criterion_in_the_asked_order() -> None:
    from mitigate.prompt import Demo

    both = base_prompt().with_demos([Demo(item=ITEM, score={"coherence": 4.0, "fluency": 2.0})])
    prompt = multi_criterion_prompt(both, CRITS, ["fluency", "coherence"])
    block = prompt.render_demos()
    assert block.endswith("Fluency: 2\nCoherence: 4")
    text = prompt.render(ITEM)[-1].content
    assert "Fluency: <score>\nCoherence: <score>" in text  # the demo answers the way the judge is asked to


def test_single_attribute_on_a_published_one_criterion_prompt_warns_that_it_changes_nothing() -> None:
    if importlib.util.find_spec("prometheus_eval") is None:
        pytest.skip("prometheus-eval is not installed (the dev extra)")
    from prometheus_eval.prompts import ABSOLUTE_PROMPT_WO_REF, SCORE_RUBRIC_TEMPLATE

    rubric = SCORE_RUBRIC_TEMPLATE.format(
        criteria="Is the answer helpful?",
        **{f"score{i}_description": f"Level {i} of helpfulness." for i in range(1, 6)},
    )
    prompt = JudgePrompt.from_template(ABSOLUTE_PROMPT_WO_REF, constants={"rubric": rubric})
    judge = PromptJudge(prompt, FakeLM(["Good. [RESULT] 4"]))
    with pytest.warns(UserWarning, match="single-attribute' changes nothing here"):
        wrapped = SingleAttribute().wrap(judge)
    assert wrapped.leaves()[0].prompt == prompt


def test_multi_attribute_after_single_attribute_is_refused_naming_both() -> None:
    from mitigate.strategies import parse_pipeline

    judge = PromptJudge(multi_prompt(), FakeLM([]))
    with pytest.raises(
        ConfigError, match=r"^multi-attribute after single-attribute would undo the split"
    ) as err:
        parse_pipeline("single-attribute | multi-attribute").wrap(judge)
    assert "\n" not in str(err.value)
    with pytest.raises(ConfigError, match="multi-attribute after single-attribute"):
        (SingleAttribute() | Sampling(temperature=0.5, n=2) | MultiAttribute(criteria=tuple(CRITS))).wrap(
            judge
        )
    # the other order is P2's: multi-attribute builds the template, single-attribute splits it
    assert isinstance((MultiAttribute() | SingleAttribute()).wrap(judge), MultiAttributeJudge)
