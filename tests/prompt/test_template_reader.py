"""Reading templates as published: placeholders, Jinja, chat markup, scales, criteria, options, pairwise,
demos.

Each test pins one reproduction from the "bring your own judge" issue.
"""

from __future__ import annotations

import warnings

import pytest

from mitigate import Demo, Item
from mitigate.errors import TemplateError, TemplateReadWarning
from mitigate.prompt import JudgePrompt, read_prompt, scale_mentions


def _item(**kw: object) -> Item:
    base: dict[str, object] = {
        "id": "i",
        "output": "OUT",
        "output_b": "OUT-B",
        "inputs": {"question": "Q?", "document": "DOC", "source": "DOC"},
    }
    base.update(kw)
    return Item.model_validate(base)


# --------------------------------------------------------------------------- placeholders


def test_single_brace_placeholders_are_slots_and_written_back_as_they_were() -> None:
    text = "Question: {question}\nAnswer: {answer}\nRate the answer from 1 to 10.\nRating:"
    prompt = JudgePrompt.from_template(text)
    assert prompt.output_slot == "answer" and prompt.slots() == {"question", "answer"}
    assert prompt.template_source() == text
    assert prompt.render(_item())[0].content == (
        "Question: Q?\nAnswer: OUT\nRate the answer from 1 to 10.\nRating:"
    )


def test_a_format_string_keeps_its_escaped_braces_literal() -> None:
    text = 'Return {{"score": N}} for the answer {answer}.'
    prompt = JudgePrompt.from_template(text, scale=(1, 5))
    assert prompt.render(_item())[0].content == 'Return {"score": N} for the answer OUT.'
    assert prompt.template_source() == text


def test_json_braces_around_single_brace_slots_stay_literal() -> None:
    text = '{\n    "instruction": """{instruction}""",\n    "output": """{output}"""\n}\nScore 1 to 5:'
    prompt = JudgePrompt.from_template(text)
    shown = prompt.render(_item(inputs={"instruction": "I"}))[0].content
    assert shown.startswith('{\n    "instruction": """I"""')
    assert prompt.template_source() == text


def test_a_template_without_a_judged_text_slot_names_what_was_seen() -> None:
    with pytest.raises(TemplateError, match=r"found slots \['question'\]"):
        JudgePrompt.from_template("Rate the reply to {question} from 1 to 5.")
    with pytest.raises(TemplateError, match=r"placeholder-like text seen: <response>"):
        JudgePrompt.from_template("Rate <response> from 1 to 5.")


def test_jinja_is_rendered_with_constants_and_slots_stay_slots() -> None:
    text = (
        "Give an integer between {{ score_range[0] }} and {{ score_range[1] }}.{% if rubric %}\nRubric: "
        "{{ rubric }}{% endif %}\nText: {{ actual_output }}"
    )
    prompt = JudgePrompt.from_template(text, constants={"score_range": [0, 10], "rubric": ""})
    assert prompt.template_text() == ["Give an integer between 0 and 10.\nText: {{actual_output}}"]
    assert (prompt.scale.min, prompt.scale.max) == (0, 10)


def test_jinja_that_needs_a_missing_value_is_refused_naming_the_construct() -> None:
    with pytest.raises(
        TemplateError, match=r"construct \{\{ rubric \}\} needs a value.*constants=\{'rubric'"
    ):
        JudgePrompt.from_template(
            "{% if rubric %}Graded.{% endif %}\nRubric: {{ rubric }}\nText: {{ output }}"
        )
    with pytest.raises(TemplateError, match=r"score_range"):
        JudgePrompt.from_template("Score from {{ score_range[0] }}.\nText: {{ output }}")
    with pytest.raises(TemplateError, match=r"\{% for step in steps %\}.*constants=\{'steps'"):
        JudgePrompt.from_template("{% for step in steps %}- {{ step }}\n{% endfor %}Text: {{ output }}")


@pytest.mark.parametrize("name", ["_additional_context", "rubric"])
def test_a_jinja_test_of_a_name_nobody_gave_reads_false_and_leaves_out_what_it_guards(name: str) -> None:
    text = (
        f"Rate the text from 1 to 5.\n{{% if {name} %}}\n\nAdditional Context:\n{{{{ {name} }}}}\n{{% "
        "endif %}\nText: {{ output }}\nScore:"
    )
    with pytest.warns(
        TemplateReadWarning, match=rf"tests '{name}', which no constant gives: read as .* \(false\)"
    ):
        prompt = JudgePrompt.from_template(text)
    assert prompt.template_text() == ["Rate the text from 1 to 5.\n\nText: {{output}}\nScore:"]
    given = JudgePrompt.from_template(text, constants={name: "the style guide"})
    assert "Additional Context:\nthe style guide\n" in given.template_text()[0]


def test_chatml_markup_becomes_messages_and_round_trips() -> None:
    text = (
        "<|im_start|>system\nBe fair.\n<|im_end|>\n<|im_start|>user\nRate {output} from 1 to 5.\n<|im_end|>"
    )
    prompt = JudgePrompt.from_template(text)
    assert [m.role for m in prompt.messages] == ["system", "user"]
    assert [m.content for m in prompt.render(_item())] == ["Be fair.\n", "Rate OUT from 1 to 5.\n"]
    assert prompt.template_source() == text


# --------------------------------------------------------------------------- scale, criterion, options


@pytest.mark.parametrize(
    ("text", "scale"),
    [
        ("Rate the response on a scale of 1 to 10.\n{{response}}", (1, 10)),
        ("Engagingness (1-3) Is the response dull or interesting?\n{{response}}", (1, 3)),
        ("Groundedness (0-1) Does the response use the fact?\n{{response}}", (0, 1)),
        ("Write a score that is an integer between 1 and 7.\n{{response}}", (1, 7)),
        ("Use a 1-10 scale.\n{{response}}", (1, 10)),
    ],
)
def test_scale_statements_are_read(text: str, scale: tuple[int, int]) -> None:
    prompt = JudgePrompt.from_template(text)
    assert (prompt.scale.min, prompt.scale.max) == scale


def test_the_criterion_line_names_the_criterion_without_a_dash() -> None:
    prompt = JudgePrompt.from_template(
        "Engagingness (1-3) Is the response dull or interesting?\n{{response}}"
    )
    assert prompt.criteria[0].name == "engagingness"
    assert prompt.criteria[0].definition == "Is the response dull or interesting?"


async def test_a_zero_to_one_answer_is_on_the_template_scale() -> None:
    from mitigate.judge import PromptJudge
    from mitigate.lm import FakeLM

    prompt = JudgePrompt.from_template(
        "Groundedness (0-1) Does the reply use the fact?\n{{response}}\n\n- Groundedness:"
    )
    judgment = await PromptJudge(prompt, FakeLM(["0"])).judge(_item())
    assert judgment.scores == {"groundedness": 0.0}


def test_numbered_rules_in_a_zero_to_nine_prompt_are_not_score_options() -> None:
    text = (
        "Rate the answer on a scale of 0 to 9.\n(1) Read the question.\n(2) Check each claim.\n"
        "(3) Ignore style.\n\nAnswer: {{answer}}\nRating:"
    )
    prompt = JudgePrompt.from_template(text)
    assert prompt.guideline is None and (prompt.scale.min, prompt.scale.max) == (0, 9)


@pytest.mark.parametrize(
    ("lines", "labels", "scores"),
    [
        (
            "- A score of 1 means bad.\n- A score of 2 means fine.\n- A score of 3 means good.",
            ["1", "2", "3"],
            [1, 2, 3],
        ),
        (
            "score1_description: Bad.\nscore2_description: Fine.\nscore3_description: Good.",
            ["1", "2", "3"],
            [1, 2, 3],
        ),
        (
            "(A) The answer is wrong.\n(B) The answer is partly right.\n(C) The answer is right.",
            ["A", "B", "C"],
            [None, None, None],
        ),
    ],
)
def test_option_formats_in_use_are_recognised(
    lines: str, labels: list[str], scores: list[float | None]
) -> None:
    prompt = JudgePrompt.from_template(f"Judge the answer.\n\n{lines}\n\nAnswer: {{{{answer}}}}")
    assert prompt.guideline is not None
    assert [o.label for o in prompt.guideline.options] == labels
    assert [o.score for o in prompt.guideline.options] == scores


def test_lettered_options_without_scores_take_scores_from_letters() -> None:
    text = "Judge.\n(A) Wrong.\n(B) Right.\n\nAnswer: {{answer}}"
    prompt = JudgePrompt.from_template(text, letters={"A": 0, "B": 1})
    assert prompt.answer == "mcq" and prompt.scale.letters == {"A": 0.0, "B": 1.0}


async def test_a_judge_refuses_lettered_options_without_scores() -> None:
    from mitigate.errors import ConfigError
    from mitigate.judge import PromptJudge
    from mitigate.lm import FakeLM

    prompt = JudgePrompt.from_template("Judge.\n(A) Wrong.\n(B) Right.\n\nAnswer: {{answer}}")
    with pytest.raises(ConfigError, match="letters="):
        await PromptJudge(prompt, FakeLM(["A"])).judge(_item())


# --------------------------------------------------------------------------- pairwise


PAIR = """Compare the two responses to the question. After a short explanation, output your final verdict \
strictly as "[[A]]" if assistant A is better or "[[B]]" if assistant B is better.

[Question]
{question}

[The Start of Assistant A's Answer]
{answer_a}
[The End of Assistant A's Answer]

[The Start of Assistant B's Answer]
{answer_b}
[The End of Assistant B's Answer]"""


def test_pairwise_is_inferred_from_two_judged_slots_with_their_labels() -> None:
    prompt, evidence = read_prompt(PAIR)
    assert prompt.answer == "pairwise" and prompt.output_slot == "answer_a"
    assert prompt.slot_fields == {"answer_b": "output_b"}
    assert prompt.format.labels == ("A", "B") and prompt.format.line == "[[{value}]]"
    assert any("outputs named 'A' and 'B'" in line for line in evidence)
    body = prompt.render(_item())[0].content
    assert "OUT\n[The End of Assistant A" in body and "OUT-B\n[The End of Assistant B" in body


@pytest.mark.parametrize(
    ("answer", "verdict"),
    [
        ("A is more complete.\n\n[[A]]", "first"),
        ("Assistant A is wordy; assistant B answers.\n[[B]]", "second"),
    ],
)
async def test_a_pairwise_judge_reads_the_templates_own_labels(answer: str, verdict: str) -> None:
    from mitigate.judge import PromptJudge
    from mitigate.lm import FakeLM

    judgment = await PromptJudge(JudgePrompt.from_template(PAIR), FakeLM([answer])).judge(_item())
    assert judgment.verdict == verdict and not judgment.failures


async def test_arena_hard_relations_and_output_a_labels_are_read() -> None:
    from mitigate.judge import PromptJudge
    from mitigate.lm import FakeLM

    arena = (
        "Compare the two answers, then give a verdict: [[A>>B]], [[A>B]], [[A=B]], [[B>A]] or "
        "[[B>>A]].\n\n<|The Start of Assistant A's Answer|>\n{answer_1}\n<|The End of Assistant A's "
        "Answer|>\n\n<|The Start of Assistant B's Answer|>\n{answer_2}\n<|The End of Assistant "
        "B's Answer|>"
    )
    prompt = JudgePrompt.from_template(arena)
    got = [
        (await PromptJudge(prompt, FakeLM([a])).judge(_item())).verdict
        for a in ("My final verdict: [[B>>A]]", "[[A>B]]", "tie: [[A=B]]")
    ]
    assert got == ["second", "first", "tie"]
    llmbar = (
        "Which output is better? Reply with Output (a) or Output (b).\n# Output (a):\n{output_1}\n"
        "# Output (b):\n{output_2}"
    )
    prompt = JudgePrompt.from_template(llmbar)
    cot = (
        "Output (a) covers the question. Output (b) is shorter and misses a step. Therefore, Output "
        "(a) is better."
    )
    assert (await PromptJudge(prompt, FakeLM([cot])).judge(_item())).verdict == "first"
    assert (await PromptJudge(prompt, FakeLM(["Output (b)"])).judge(_item())).verdict == "second"


# --------------------------------------------------------------------------- demos


def test_demos_go_before_the_first_slot_paragraph_in_a_crlf_template() -> None:
    text = "Rate the summary.\r\n\r\nSummary: {{summary}}\r\nScore 1 means bad\r\nScore 2 means good"
    prompt = JudgePrompt.from_template(text).with_demos([Demo(item=Item(id="d", output="A demo."), score=2)])
    body = prompt.render(Item(id="i", output="X"))[0].content
    assert body.startswith("Rate the summary.\r\n\r\nExamples:")
    assert body.endswith("Summary: X\r\nScore 1 means bad\r\nScore 2 means good")


def test_demos_go_before_the_heading_line_of_a_slot_in_the_first_paragraph_and_repeat_it() -> None:
    prompt = JudgePrompt.from_template("Rate this summary:\n{{summary}}\nScore: ").with_demos(
        [Demo(item=Item(id="d", output="A demo."), score=2)]
    )
    body = prompt.render(Item(id="i", output="X"))[0].content
    assert body == (
        "Examples:\n\nRate this summary:\nA demo.\nScore: 2\n\n"
        "End of examples. Now evaluate the following.\n\nRate this summary:\nX\nScore: "
    )


def test_demos_answer_in_the_templates_own_format() -> None:
    text = (
        "Write feedback, then a score that is an integer between 1 and 5: "
        '"(feedback) [RESULT] (an integer number between 1 and 5)"\n\n###Response to '
        "evaluate:\n{response}\n\n###Feedback: "
    )
    prompt = JudgePrompt.from_template(text).with_demos([Demo(item=Item(id="d", output="A demo."), score=4)])
    body = prompt.render(_item())[0].content
    assert "###Response to evaluate:\nA demo.\n[RESULT] 4" in body and "score: 4" not in body


def test_the_answer_stub_is_where_the_judges_answer_starts() -> None:
    geval = (
        "Coherence (1-5) - how well it flows.\n\nSummary:\n{{summary}}\n\n\nEvaluation Form (scores "
        "ONLY):\n\n- Coherence:"
    )
    assert JudgePrompt.from_template(geval).answer_stub() == (
        "\nEvaluation Form (scores ONLY):\n\n- Coherence:"
    )
    prometheus = 'Give feedback, then "[RESULT] N".\n\n###Response to evaluate:\n{response}\n\n###Feedback: '
    assert JudgePrompt.from_template(prometheus).answer_stub() == "\n###Feedback: "
    closing = 'Response: {{response}}\n\nReply with one sentence, then a final line "Score: N".'
    assert JudgePrompt.from_template(closing).answer_stub() == ""
    fmt = JudgePrompt.from_template(prometheus).format
    assert fmt.with_reasoning("none").reasoning == "none" and fmt.reasoning == "before"


def test_scale_mentions_finds_every_statement_of_the_scales_ends() -> None:
    text = (
        "Rate it on a scale of 1 to 5, where 5 is the highest and 1 being the worst. The lowest score is "
        "1; 10 = best on the other scale. Item 5 of the list is long."
    )
    found = [(text[m.span[0] : m.span[1]], m.end, m.value) for m in scale_mentions(text)]
    assert found == [
        ("1", "lo", 1.0),
        ("5", "hi", 5.0),
        ("5", "hi", 5.0),
        ("1", "lo", 1.0),
        ("1", "lo", 1.0),
        ("10", "hi", 10.0),
    ]  # "Item 5" is not a statement of the scale


def test_a_single_brace_field_beside_double_brace_slots_is_warned_about_json_and_quoted_fields_are_not() -> (
    None
):
    text = (
        "Rate the summary.\n\nDocument:\n{Document}\n\nSummary:\n{{Summary}}\n\n"
        'Reply in JSON such as {"score": 4}, or as "Score: {score}".'
    )
    with pytest.warns(TemplateReadWarning) as caught:
        prompt = JudgePrompt.from_template(text)
    (message,) = [str(w.message) for w in caught]
    assert "{Document}" in message and "{{Document}}" in message and "score" not in message.lower()
    assert "\n" not in message and "{Document}" in prompt.render(Item(id="i", output="S"))[0].content
    with warnings.catch_warnings():
        warnings.simplefilter("error", TemplateReadWarning)
        JudgePrompt.from_template(text.replace("{Document}", "{{Document}}"))
        JudgePrompt.from_template("Document: {Document}\nSummary: {Summary}\nScore:")  # single braces only


def test_no_published_template_is_warned_about_single_brace_fields() -> None:
    from tests.prompt.test_template_corpus import REAL, _corpus

    read = 0
    with warnings.catch_warnings():
        warnings.filterwarnings("error", ".*in single braces", TemplateReadWarning)
        for name in REAL:
            try:
                _corpus(name)
            except pytest.skip.Exception:  # its package is not installed
                continue
            read += 1
    if not read:
        pytest.skip("no package shipping published templates is installed (the dev extra)")
