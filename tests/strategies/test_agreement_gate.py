"""RTS/MCQ prompt forms and Shen et al.'s agreement gate."""

from __future__ import annotations

import json
import math
import re

import pytest
from scipy.stats import spearmanr

from mitigate.data import Item
from mitigate.errors import ConfigError, DataError, TemplateError
from mitigate.judge import Judgment, PromptJudge
from mitigate.lm import FakeLM, LMRequest
from mitigate.paths import data_dir
from mitigate.prompt import JudgePrompt, PromptMessage
from mitigate.strategies import AgreementGate, AgreementJudge, from_spec, gate_released, mcq_form, rts_form

TEMPLATE = """Rate how coherent the summary is.

Coherence (1-5) - how well the summary hangs together.

Score 1 means incoherent.
Score 2 means mostly incoherent.
Score 3 means mixed.
Score 4 means mostly coherent.
Score 5 means fully coherent.

Article: {{document}}
Summary: {{summary}}

Reply with "Score: N" and nothing else."""

OPTION_LINES = (
    "A: incoherent. Score: 1\n"
    "B: mostly incoherent. Score: 2\n"
    "C: mixed. Score: 3\n"
    "D: mostly coherent. Score: 4\n"
    "E: fully coherent. Score: 5"
)
RTS_ASK = (
    "First give a brief reason for your rating in one or two sentences. "
    'Then write a final line "Score: " followed by 1, 2, 3, 4 or 5.'
)
MCQ_ASK = (
    'Choose the option whose description fits best. Reply with a single line "Answer: " '
    "followed by the option's letter (A, B, C, D or E)."
)
MCQ_CUE = 'a single line "Answer: " followed by'
"""A phrase only the MCQ form's answer instruction contains."""

ITEM = Item(id="i1", output="The cat sat.", inputs={"source": "A story about a cat."}, system="S1")


def prompt() -> JudgePrompt:
    return JudgePrompt.from_template(TEMPLATE)


def two_form_lm(rts: str = "Clear enough. Score: 4", mcq: str = "Answer: B") -> FakeLM:
    def answer(request: LMRequest) -> str:
        return mcq if MCQ_CUE in request.messages[-1].content else rts

    return FakeLM(answer)


# ------------------------------------------------------------------ forms


def test_rts_form_replaces_the_answer_instruction_with_reason_then_score() -> None:
    p = rts_form(prompt())
    text = p.render(ITEM)[-1].content
    assert text.endswith("Article: A story about a cat.\nSummary: The cat sat.\n\n" + RTS_ASK)
    assert "nothing else" not in text and p.answer == "score" and p.scale.letters is None
    assert "Score 3 means mixed.\n" in text  # the guideline is kept as written


def test_forms_append_the_instruction_when_the_prompt_has_none() -> None:
    p = JudgePrompt.from_template(
        "Score 1 means bad.\nScore 2 means ok.\nScore 3 means good.\n\nText: {{output}}"
    )
    assert (
        rts_form(p)
        .render(ITEM)[-1]
        .content.endswith("Text: The cat sat.\n\n" + RTS_ASK.replace("1, 2, 3, 4 or 5", "1, 2 or 3"))
    )
    assert (
        mcq_form(p)
        .render(ITEM)[-1]
        .content.endswith("Text: The cat sat.\n\n" + MCQ_ASK.replace("A, B, C, D or E", "A, B or C"))
    )


def test_mcq_form_builds_lettered_options_from_the_guideline() -> None:
    p = mcq_form(prompt())
    assert p.answer == "mcq"
    assert p.scale.letters == {"A": 1.0, "B": 2.0, "C": 3.0, "D": 4.0, "E": 5.0}
    text = p.render(ITEM)[-1].content
    assert OPTION_LINES in text
    assert "Score 1 means" not in text and text.endswith(MCQ_ASK)
    assert [o.position for o in p.guideline.options] == [0, 1, 2, 3, 4]


def test_mcq_letters_follow_the_guideline_order_and_map_back_to_scores() -> None:
    base = prompt()
    reversed_prompt = base.with_guideline(base.guideline.reordered([4, 3, 2, 1, 0]))
    p = mcq_form(reversed_prompt)
    assert p.scale.letters == {"A": 5.0, "B": 4.0, "C": 3.0, "D": 2.0, "E": 1.0}
    assert "A: fully coherent. Score: 5\nB: mostly coherent. Score: 4" in p.render(ITEM)[-1].content


def test_mcq_form_without_a_guideline_is_a_template_error() -> None:
    with pytest.raises(TemplateError, match="the MCQ form needs guideline options"):
        mcq_form(JudgePrompt.from_template("Rate {{output}} from 1 to 5."))
    with pytest.raises(TemplateError, match="the MCQ form needs guideline options"):
        AgreementGate().wrap(PromptJudge(JudgePrompt.from_template("Rate {{output}}"), FakeLM([])))


def test_forms_refuse_multi_criterion_prompts() -> None:
    p = JudgePrompt.from_template("Rate {{output}}", criteria=["coherence", "fluency"])
    with pytest.raises(TemplateError, match="apply SingleAttribute before"):
        rts_form(p)


# ------------------------------------------------------------------ the fan-out judge


async def test_judge_sends_an_rts_and_an_mcq_prompt_and_keeps_both_scores() -> None:
    lm = two_form_lm()
    base = PromptJudge(prompt(), lm)
    judge = AgreementGate().wrap(base)
    assert isinstance(judge, AgreementJudge) and set(judge.children) == {"rts", "mcq"}
    j = await judge.judge(ITEM)
    texts = sorted((r.messages[-1].content for r in lm.requests), key=lambda t: MCQ_CUE in t)
    assert len(texts) == 2
    assert texts[0].endswith(RTS_ASK) and "Score 4 means mostly coherent." in texts[0]
    assert OPTION_LINES in texts[1] and texts[1].endswith(MCQ_ASK)
    assert j.scores == {"coherence": 4.0}
    assert j.meta["rts"] == {"coherence": 4.0} and j.meta["mcq"] == {"coherence": 2.0}
    assert j.calls == 2 and j.flags == () and j.failures == ()
    assert base.prompt == prompt()  # the wrapped judge is unchanged


async def test_map_prompts_after_the_gate_reaches_both_forms() -> None:
    lm = two_form_lm()
    judge = AgreementGate().wrap(PromptJudge(prompt(), lm))

    def mark(p: JudgePrompt) -> JudgePrompt:
        return p.map_templates(lambda m: PromptMessage(role=m.role, template="[MARK] " + m.template))

    await judge.map_prompts(mark).judge(ITEM)
    assert len(lm.requests) == 2 and all(r.messages[-1].content.startswith("[MARK] ") for r in lm.requests)
    lm.requests.clear()
    await judge.judge(ITEM)
    assert not any("[MARK]" in r.messages[-1].content for r in lm.requests)


async def test_an_mcq_parse_failure_stays_a_failure() -> None:
    judge = AgreementGate().wrap(PromptJudge(prompt(), two_form_lm(mcq="Hard to say.")))
    j = await judge.judge(ITEM)
    assert j.scores == {"coherence": 4.0} and j.meta["mcq"] == {"coherence": None}
    (failure,) = j.failures
    assert failure.reason.startswith("mcq: ") and failure.raw == "Hard to say."


async def test_mcq_letters_map_back_to_each_options_score() -> None:
    for letter, score in zip("ABCDE", (1.0, 2.0, 3.0, 4.0, 5.0), strict=True):
        judge = AgreementGate().wrap(PromptJudge(prompt(), two_form_lm(mcq=f"Answer: {letter}")))
        assert (await judge.judge(ITEM)).meta["mcq"] == {"coherence": score}


# ------------------------------------------------------------------ the per-system gate


def gate_judgments(
    pairs: dict[str, list[tuple[float | None, float | None]]],
) -> tuple[list[Judgment], list[Item]]:
    judgments, items = [], []
    for system, scores in pairs.items():
        for n, (r, m) in enumerate(scores):
            iid = f"{system}/{n}"
            items.append(Item(id=iid, output="o", system=system))
            judgments.append(
                Judgment(
                    item_id=iid,
                    scores={"coherence": r},
                    meta={"rts": {"coherence": r}, "mcq": {"coherence": m}},
                )
            )
    return judgments, items


AGREE = [(1, 1), (2, 2), (3, 3), (4, 5), (5, 4), (3, 2)]
DISAGREE = [(1, 5), (2, 4), (3, 3), (4, 2), (5, 1), (3, 3)]
WEAK = [(1, 2), (2, 1), (3, 4), (4, 3), (5, 1), (2, 5)]


def test_gate_flags_exactly_the_systems_whose_r_is_below_tolerance() -> None:
    judgments, items = gate_judgments({"X": DISAGREE, "Y": AGREE, "Z": WEAK})
    report = AgreementGate(tolerance=0.5).gate(judgments, items)
    expected = {
        s: spearmanr([a for a, _ in v], [b for _, b in v]).statistic
        for s, v in {"X": DISAGREE, "Y": AGREE, "Z": WEAK}.items()
    }
    assert expected["Y"] >= 0.5 > expected["Z"] and expected["X"] < 0
    for d in report.decisions:
        assert d.r == pytest.approx(expected[d.system]) and d.n == 6
    assert [(d.system, d.decision) for d in report.decisions] == [
        ("X", "needs_human"),
        ("Y", "accept"),
        ("Z", "needs_human"),
    ]
    assert report.flagged_systems() == ["X", "Z"]
    for j in report.judgments:
        assert ("needs_human" in j.flags) == (not j.item_id.startswith("Y/"))
        assert j.meta["agreement_gate"]["system"] == j.item_id.split("/")[0]
        assert j.meta["rts"] == {"coherence": j.scores["coherence"]}
    assert all(j.flags == () and "agreement_gate" not in j.meta for j in judgments)  # inputs untouched
    looser = AgreementGate(tolerance=-1.0).gate(judgments, items)
    assert looser.flagged_systems() == []


def test_too_few_items_give_nan_r_with_a_reason_and_are_sent_to_humans() -> None:
    few = [(1, 1), (2, 2), (3, 3), (4, 4)]
    with_failures = [(1, 1), (2, None), (3, 3), (None, 4), (5, 5), (4, 4)]
    constant = [(3, 1), (3, 2), (3, 3), (3, 4), (3, 5)]
    judgments, items = gate_judgments({"FEW": few, "FAIL": with_failures, "CONST": constant, "OK": AGREE})
    report = AgreementGate(min_items=5).gate(judgments, items)
    few_d, fail_d, const_d, ok_d = report.decisions
    assert math.isnan(few_d.r) and few_d.decision == "insufficient data" and few_d.needs_human
    assert "only 4 of system 'FEW'" in few_d.reason and "min_items=5" in few_d.reason
    assert math.isnan(fail_d.r) and fail_d.n == 4 and fail_d.n_failed == 2
    assert math.isnan(const_d.r) and "constant" in const_d.reason
    assert ok_d.decision == "accept"
    assert report.flagged_systems() == ["FEW", "FAIL", "CONST"]
    assert report.judgments[0].meta["agreement_gate"]["r"] is None


def test_gate_needs_gate_judgments_and_systems() -> None:
    judgments, items = gate_judgments({"X": AGREE})
    with pytest.raises(DataError, match="expected item 'n0' to name its system"):
        AgreementGate().gate(
            [Judgment(item_id="n0", meta={"rts": {"c": 1}, "mcq": {"c": 1}})], [Item(id="n0", output="o")]
        )
    with pytest.raises(DataError, match=r"meta\['rts'\] and meta\['mcq'\]"):
        AgreementGate().gate([Judgment(item_id="X/0", scores={"coherence": 1.0})], items)
    with pytest.raises(DataError, match="has none among the 6 items"):
        AgreementGate().gate([Judgment(item_id="ghost", meta={"rts": {}, "mcq": {}})], items, "coherence")


def test_parameters_validate_and_spec_round_trips() -> None:
    gate = AgreementGate(tolerance=0.3, method="kendall", min_items=8)
    spec = json.loads(json.dumps(gate.spec()))
    assert spec == {
        "name": "agreement-gate",
        "params": {"tolerance": 0.3, "method": "kendall", "min_items": 8},
    }
    assert from_spec(spec) == gate
    with pytest.raises(
        ConfigError, match=r"The 'min_items' parameter of mitigation 'agreement-gate' must be an int >= 3"
    ):
        AgreementGate(min_items=2)
    with pytest.raises(
        ConfigError, match="The 'method' parameter of mitigation 'agreement-gate' must be one of"
    ):
        AgreementGate(method="cosine")
    with pytest.raises(ConfigError, match=re.escape("must be a float in [-1, 1]. Got 2 instead.")):
        AgreementGate(tolerance=2)


def test_released_chatgpt_coherence_gives_twelve_r_values() -> None:
    root = data_dir()
    folder = (
        None
        if root is None
        else root / "summeval_llm_summeval" / "eval_model_generations" / "gpt-3.5-turbo-0301"
    )
    if folder is None or not (folder / "eval_M8_generations" / "coherence_mcq.txt").exists():
        pytest.skip("shared SummEval released judge outputs absent (set MITIGATE_DATA_DIR)")
    report = gate_released("coherence")["coherence"]
    assert len(report.gate.decisions) == 12
    assert all(math.isfinite(d.r) and d.n + d.n_failed == 100 for d in report.gate.decisions)
    assert set(report.p) == {d.system for d in report.gate.decisions}
    assert report.r_predicts_p.n == 12 and -1 <= report.r_predicts_p.value <= 1
    assert len(report.gate.judgments) == 1200


# --------------------------------------------------------------------------- forms of a published-format
# template

# Prometheus' format: a rubric, feedback then "[RESULT] N", ending with the stub "###Feedback: "
PROMETHEUS_LIKE = (
    "###Task Description:\nWrite a detailed feedback, then a score that is an integer between 1 and "
    "5. The output "
    'format should look as follows: "Feedback: (write a feedback) [RESULT] (an integer number between '
    '1 and 5)"\n\n'
    "###Response to evaluate:\n{response}\n\n###Score Rubrics:\nScore 1: Poor.\nScore 2: Weak.\nScore 3: "
    "Fair.\nScore 4: Good.\nScore 5: Excellent.\n\n###Feedback: "
)


def test_the_rts_form_asks_for_the_templates_own_line_before_its_stub() -> None:
    form = rts_form(JudgePrompt.from_template(PROMETHEUS_LIKE))
    template = form.messages[-1].template
    assert template.endswith("\n\n###Feedback: ")
    assert form.format.line == "[RESULT] {value}" and form.format.reasoning == "before"
    assert (
        'Then end your answer with a final line "[RESULT] N", with N a score from 1 to '
        "5.\n\n###Feedback: " in template
    )


async def test_the_mcq_form_of_a_published_format_template_is_read_by_its_letter() -> None:
    form = mcq_form(JudgePrompt.from_template(PROMETHEUS_LIKE))
    # the template's stub ("###Feedback: ") gives way to the letter answer's own stub
    assert form.messages[-1].template.endswith("\n\nAnswer: ") and form.format.line == "Answer: {value}"
    assert mcq_form(form) == form  # a prompt that already answers with a letter is its own MCQ form
    j = await PromptJudge(form, FakeLM(["Fine.\nAnswer: D"])).judge(Item(id="x", output="text"))
    assert j.score() == 4.0


def test_the_forms_refuse_lettered_options_that_state_no_score() -> None:
    lettered = JudgePrompt.from_template(
        "Pick one.\n(A) The text is wrong.\n(B) The text is right.\n\n"
        "Text: {{output}}\n\nAnswer with the letter."
    )
    assert lettered.answer == "mcq" and lettered.scale.letters is None
    for form in (rts_form, mcq_form):
        with pytest.raises(TemplateError, match="states no score|needs a score for every option letter"):
            form(lettered)
