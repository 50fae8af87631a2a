"""The answer format as one value: reading real answers, strictness, demos, instructions and constraints."""

from __future__ import annotations

import re

import pytest

from mitigate.errors import ParseError, TemplateError
from mitigate.parse import parse_pairwise, parse_score
from mitigate.prompt import AnswerFormat, infer_answer_format, reasoning_ban
from mitigate.prompt.answer._infer import stated_reasoning
from mitigate.scale import Scale

S5 = Scale(min=1, max=5)
S3 = Scale(min=1, max=3)
S10 = Scale(min=1, max=10)
RESULT = AnswerFormat(line="[RESULT] {value}", reasoning="before")
MTBENCH = AnswerFormat(line="Rating: [[{value}]]", reasoning="before")
COHERENCE = AnswerFormat(line="Coherence: {value}")


# --------------------------------------------------------------------------- the answers


@pytest.mark.parametrize(
    ("fmt", "text", "scale", "want"),
    [
        (RESULT, "The response covers the question but misses one step. [RESULT] 4", S5, 4),
        (MTBENCH, "Helpful and accurate.\nRating: [[8]]", S10, 8),
        (MTBENCH, "Helpful and accurate. [[8]]", S10, 8),
        (COHERENCE, "Coherence: 3", S5, 3),
        (COHERENCE, "3", S5, 3),
        (AnswerFormat(), "2. The response is mostly off topic.", S5, 2),
        (
            AnswerFormat(line="Rating: {value}"),
            "Rating: 2\n\nThe story starts in Paris. The rating reflects the events in 1916.",
            S5,
            2,
        ),
        (
            AnswerFormat(line="Rating: {value}"),
            "Rating: 2\nThe reply is informative but not engaging enough to score a 3.",
            S3,
            2,
        ),
        (
            AnswerFormat(json_key="score", reason_key="reason", line="{value}"),
            'Here you go:\n```json\n{"reason": "Clear.", "score": 4}\n```',
            S5,
            4,
        ),
        (
            AnswerFormat(line="<score>{value}</score>", reasoning="before"),
            "<feedback>Uses every input.</feedback>\n<score>\n3\n</score>",
            S3,
            3,
        ),
    ],
)
def test_real_answer_shapes_are_read(fmt: AnswerFormat, text: str, scale: Scale, want: float) -> None:
    assert fmt.read(text, scale) == want


def test_an_echoed_rubric_line_is_not_the_score() -> None:
    rubric = (
        "The model's responses are irrelevant or unhelpful to the user's needs or queries.",
        "The model consistently offers highly relevant and useful responses.",
    )
    echo = "Score 1: The model's responses are irrelevant or unhelpful to the user's needs or queries."
    with pytest.raises(ParseError):
        RESULT.read(echo, S5, echoes=rubric)
    assert RESULT.read(echo + "\nThe answer helps a lot. [RESULT] 5", S5, echoes=rubric) == 5
    assert parse_score(echo, S5) == 1  # without the rubric, a lone "Score 1: ..." line is an answer


def test_the_final_verdict_of_a_reasoned_comparison_wins() -> None:
    text = (
        "Output (a) is detailed but repeats itself. Output (b) is shorter and skips the second step. "
        "Therefore, Output (a) is better."
    )
    assert parse_pairwise(text, ("a", "b")) == "first"
    with pytest.raises(ParseError, match="conflicting verdicts"):
        parse_pairwise("Output (a) is better. Output (b) is more accurate.", ("a", "b"))


def test_labels_that_differ_only_by_case_are_read_case_sensitively() -> None:
    fmt = AnswerFormat(
        kind="pairwise", line="{value}", labels=("m", "M"), case_sensitive=True, reasoning="before"
    )
    assert fmt.read("m", S5) == "first" and fmt.read("M", S5) == "second"
    assert fmt.read("The second output follows the instruction.\nM", S5) == "second"


def test_ambiguity_stays_a_recorded_failure() -> None:
    with pytest.raises(ParseError):
        RESULT.read("I hesitate between [RESULT] 3-4", S5)
    with pytest.raises(ParseError, match="two uncued numbers"):
        AnswerFormat().read("2. The summary is fine, 4", S5)
    with pytest.raises(ParseError):
        AnswerFormat(kind="pairwise", line="[[{value}]]", labels=("A", "B"), relations=True).read(
            "[[A?B]]", S5
        )


def test_two_scores_on_the_first_line_give_the_verdict() -> None:
    fmt = AnswerFormat(kind="pairwise", line="{value}", labels=("1", "2"), two_scores=True, reasoning="after")
    assert fmt.read("8 6\nAssistant 1 is more detailed.", S10) == "first"
    assert fmt.read("7 7\nBoth are fine.", S10) == "tie"
    with pytest.raises(ParseError, match="two scores"):
        fmt.read("Assistant 1 wins.", S10)


# --------------------------------------------------------------------------- one source of truth


def test_render_instruction_and_constraint_agree_on_the_format() -> None:
    line = RESULT.render(4, S5)
    assert line == "[RESULT] 4" and RESULT.read(f"Fine. {line}", S5) == 4
    assert '"[RESULT] N"' in RESULT.instruction(S5) and "1 to 5" in RESULT.instruction(S5)
    constraint = RESULT.constraint(S5)
    assert re.fullmatch(constraint.regex, "Good answer, clear and complete. [RESULT] 4")
    assert not re.fullmatch(constraint.regex, "Good answer, clear and complete. [RESULT] 6")
    assert '"[RESULT] "' in constraint.gbnf and constraint.json_schema["properties"]["score"]["enum"] == [
        1,
        2,
        3,
        4,
        5,
    ]
    # reasoning first, then the value
    assert list(constraint.json_schema["properties"]) == ["reasoning", "score"]


def test_with_reasoning_only_the_final_line_is_constrained() -> None:
    constraint = AnswerFormat(line="Score: {value}", reasoning="before").constraint(S5)
    assert re.fullmatch(constraint.regex, "Free text, anything at all: 7 and [x].\nScore: 3")
    assert not re.fullmatch(constraint.regex, "Free text, long enough to be reasoning.\nScore: 3 because")
    assert not re.fullmatch(constraint.regex, "Score 3.\nScore: 3")  # the reasoning asked for is written
    direct = AnswerFormat(line="Score: {value}").constraint(S5)
    assert re.fullmatch(direct.regex, "Score: 3") and not re.fullmatch(direct.regex, "Hm.\nScore: 3")


def test_a_json_answer_is_read_strictly() -> None:
    fmt = AnswerFormat()
    assert fmt.read_json('{"reasoning": "ok", "score": 4}', S5) == 4
    with pytest.raises(ParseError, match="invalid JSON"):
        fmt.read_json('{"score": 4', S5)
    with pytest.raises(ParseError, match="outside the scale"):
        fmt.read_json('{"score": 9}', S5)


def test_a_format_needs_a_value_placeholder_and_two_labels() -> None:
    with pytest.raises(TemplateError, match="placeholder"):
        AnswerFormat(line="Score:")
    with pytest.raises(TemplateError, match="two output labels"):
        AnswerFormat(kind="pairwise", line="{value}", labels=("A",))


def test_inference_reads_the_formats_in_use() -> None:
    def infer(text: str, **kw: object) -> AnswerFormat:
        return infer_answer_format([text], kind=kw.pop("kind", "score"), **kw)  # type: ignore[arg-type]

    assert infer('write "(feedback) [RESULT] (an integer number between 1 and 5)"').line == "[RESULT] {value}"
    assert (
        infer('strictly following this format: "[[rating]]", for example: "Rating: [[5]]"').line
        == "Rating: [[{value}]]"
    )
    assert infer('Return a JSON object with "reason" and "score" fields.').json_key == "score"
    stub = infer("Evaluation Form (scores ONLY):\n\n- Coherence:", criterion="coherence")
    assert (stub.line, stub.stub) == ("- Coherence: {value}", "- Coherence:")
    assert infer("Do NOT provide any explanation. Answer with the score only.").reasoning == "none"
    pair = infer(
        'output "[[A]]" if A is better, "[[B]]" if B is better, and "[[C]]" for a tie.',
        kind="pairwise",
        labels=("A", "B"),
    )
    assert (pair.line, pair.tie) == ("[[{value}]]", "C")
    assert not infer("Rate the text.").inferred


def test_a_template_that_spells_its_answer_line_in_quotes_is_asked_for_that_line() -> None:
    """Templates written in the style of pairwise and MT-Bench prompts, worded here for the test."""
    from mitigate.prompt import JudgePrompt

    named = JudgePrompt.from_template(
        "Which summary reads better?\n\nSummary 1: {{summary_1}}\n\n"
        "Summary 2: {{summary_2}}\n\nAnswer 'Summary 1' or 'Summary 2'."
    )
    assert (named.format.line, named.format.labels) == ("Summary {value}", ("1", "2"))
    assert named.format.read("On balance, Summary 2", named.scale) == "second"
    lettered = JudgePrompt.from_template(
        "Pick one.\n\nOutput (a): {{output_1}}\n\nOutput (b): "
        '{{output_2}}\n\nReply "Output (a)" or "Output (b)".'
    )
    assert lettered.format.line == "Output ({value})" and '"Output (X)"' in lettered.format.request(
        lettered.scale
    )
    rated = JudgePrompt.from_template(
        'Rate the reply from 1 to 10.\n\nReply: {{output}}\n\nEnd with "Rating: [[N]]".'
    )
    assert rated.format.line == "Rating: [[{value}]]"
    assert rated.format.read("Clear and correct.\nRating: [[7]]", rated.scale) == 7.0


def test_answers_a_real_small_judge_gave_are_read_right() -> None:
    """Shapes seen in Qwen2.5-Coder 0.5B's free answers to published templates
    (benchmarks/parse_formats.py)."""
    pair = AnswerFormat(kind="pairwise", line="[[{value}]]", labels=("A", "B"), tie="C", reasoning="before")
    assert pair.read("Assistant A's answer is better. The article says the teams drew 0-0.", S5) == "first"
    with pytest.raises(ParseError):  # an echoed article is not a verdict, whatever words it holds
        parse_pairwise("Merson said the game was a draw and the sides are tied on points.", ("A", "B"))
    arena = AnswerFormat(
        kind="pairwise", line="[[{value}]]", labels=("A", "B"), relations=True, reasoning="before"
    )
    echo = (
        "1. Assistant A is much better: [[A>>B]] 2. Assistant A is slightly better: [[A>B]] 3. About the "
        "same: [[A=B]] 4. Assistant B is slightly better: [[B>A]] 5. Assistant B is much "
        "better: [[B>>A]]"
    )
    with pytest.raises(ParseError, match="echoed list"):
        arena.read(echo, S5)
    assert MTBENCH.read("[6]", S10) == 6
    assert (
        RESULT.read("(Write a feedback for criteria) [RESULT] (an integer number between 1 and 5) [5]", S5)
        == 5
    )


# --------------------------------------------------------------------------- what mitigations ask for


def test_the_instruction_a_mitigation_adds_asks_for_the_formats_own_line() -> None:
    assert RESULT.instruction(S5) == (
        'End your answer with a final line "[RESULT] N", with N a score from 1 to 5.'
    )
    assert COHERENCE.instruction(S5) == 'Answer with only "Coherence: N", with N a score from 1 to 5.'
    pair = AnswerFormat(kind="pairwise", line="[[{value}]]", labels=("A", "B"), tie="C", reasoning="before")
    assert pair.instruction(S5) == (
        "End your answer with a final line \"[[X]]\", with X being 'A' or 'B' (or 'C' for a tie)."
    )
    bare = AnswerFormat(kind="pairwise", line="{value}", labels=("1", "2"))
    assert bare.instruction(S5) == "Answer with only your verdict, '1' or '2'."  # not a literal "X"
    js = AnswerFormat(line="{value}", json_key="score", reason_key="reasoning")
    assert js.instruction(S5) == (
        'Answer with a JSON object whose "reasoning" field holds your reasoning '
        'and whose "score" field holds your answer, with N a score from 1 to 5.'
    )


def test_an_added_request_for_a_default_format_allows_reasoning_before_it() -> None:
    assert AnswerFormat.default().request(S5) == (
        'End your answer with a final line "Score: N", with N a score from 1 to 5.'
    )
    assert (
        COHERENCE.model_copy(update={"inferred": True})
        .request(S5)
        .startswith('Answer with only "Coherence: N"')
    )


def test_a_criterion_named_answer_line_is_renamed_for_another_criterion() -> None:
    assert COHERENCE.for_criterion("fluency", ["coherence", "fluency"]).line == "Fluency: {value}"
    assert RESULT.for_criterion("fluency", ["coherence", "fluency"]) == RESULT  # names no criterion
    assert AnswerFormat.default().for_criterion("fluency", ["score"]).line == "Score: {value}"


def test_two_scores_after_a_chain_of_thought_are_read_from_the_last_line() -> None:
    two = AnswerFormat(kind="pairwise", line="{value}", labels=("1", "2"), two_scores=True, reasoning="after")
    assert two.read("3 8\nThe second one is more detailed.", S10) == "second"
    assert two.with_reasoning("before").read("Output 1 scores 9 on style.\n3 8", S10) == "second"
    with pytest.raises(ParseError, match="a last line with two scores"):
        two.with_reasoning("before").read("3 8\nThe second one is more detailed.", S10)


@pytest.mark.parametrize(
    ("text", "words"),
    [
        ("Rate it from 1 to 5. Do NOT provide any explanation.", "Do NOT provide any explanation"),
        ("Reply with the score and nothing else.", "nothing else"),
        ("Output the rating only, no other text.", "no other text"),
        # an answer confined to one line leaves no room for reasoning before it
        ('Answer with one line "Rating: [[N]]".', "with one line"),
        ('Reply in a single line: "Score: N".', "in a single line"),
        ('Give a one-line answer in the form "Score: N".', "a one-line answer"),
        # a final line after reasoning, a new line, one line per criterion: no ban
        ('Explain your reasoning, then give the score on a new line as "Score: N".', None),
        ('Write a short analysis, then a final line "Score: N".', None),
        ("Answer with one line per criterion, in this order.", None),
        ('Give the score on a new line as "Score: N".', None),
        # reasoning is asked for
        ("Explain your reasoning first, then give only the score on the last line.", None),
        ("Rate it from 1 to 5.", None),
    ],
)
def test_reasoning_ban_finds_the_words_that_ask_for_the_answer_alone(text: str, words: str | None) -> None:
    found = reasoning_ban([text])
    assert (found is None) == (words is None)
    if words is not None:
        assert found is not None and words.lower() in text.lower() and found.lower() in text.lower()


@pytest.mark.parametrize(
    "text",
    ["Justify your score before giving it as 'Score: N'.", "Explain your reasoning before you answer."],
)
def test_a_request_to_justify_before_answering_reads_as_reasoning_first(text: str) -> None:
    assert stated_reasoning([text]) == "before"
    assert infer_answer_format([text], kind="score").reasoning == "before"


def test_a_pairwise_template_that_offers_a_tie_gets_a_constraint_that_allows_it():
    """'Answer with 1, 2 or tie' offers a tie: the format (and so its grammar) must accept it; '1 or 2' offers
    none."""
    from mitigate.prompt import JudgePrompt

    body = "Question: {{question}}\n\nAnswer 1: {{output}}\n\nAnswer 2: {{output_b}}\n\n"
    with_tie = JudgePrompt.from_template(
        body + "Which answer is better? Answer with 1, 2 or tie.", answer="pairwise"
    )
    assert with_tie.format.tie == "tie"
    assert with_tie.format.read("tie", with_tie.scale) is not None
    without = JudgePrompt.from_template(
        body + "Which answer is better? Answer with 1 or 2.", answer="pairwise"
    )
    assert without.format.tie is None


@pytest.mark.parametrize(
    ("text", "order"),
    [
        # the "analyze, then rate" form: the answer opens with a labelled analysis, the rating follows
        (
            'Evaluation Form (Respond by beginning with "Reasoning:" to reason about the example against the '
            'criteria briefly, and afterwards put the numerical score on the following line after "Score:"):',
            "before",
        ),
        (
            'Reply by starting with "Critique:" and a few words on the text; then write the rating on a new '
            "line "
            'as "Rating:".',
            "before",
        ),
        ("Open your answer with a short comparison of the two texts, followed by your verdict.", "before"),
        ("First, write your analysis of the summary. Then output the score.", "before"),
        ("Give your rating first, then explain your reasoning.", "after"),
        ("Start with the score on its own line, followed by a brief justification.", "after"),
    ],
)
def test_an_instruction_that_orders_the_answers_parts_gives_its_reasoning_order(
    text: str, order: str
) -> None:
    assert stated_reasoning([text]) == order
    # the template asks for reasoning: a chain of thought does not contradict it
    assert reasoning_ban([text]) is None


def test_an_analyze_then_rate_form_reads_reasoning_first_with_its_rating_line() -> None:
    from mitigate.prompt import JudgePrompt

    prompt = JudgePrompt.from_template(
        "Evaluate the summary of the article.\n\nArticle: {{article}}\nSummary: "
        "{{summary}}\n\nEvaluation Form "
        '(Respond by beginning with "Reasoning:" to reason about the example against the criteria briefly, '
        'and afterwards put the numerical score on the following line after "Score:"):',
        scale=(1, 5),
    )
    assert (prompt.format.line, prompt.format.reasoning) == ("Score: {value}", "before")
    assert prompt.format.read("Reasoning: clear and faithful.\nScore: 4", prompt.scale) == 4.0


@pytest.mark.parametrize(
    ("text", "want"),
    [
        (
            "Therefore, because Output (b) names every prime and Output (a) does not, Output (b) is better.",
            "second",
        ),
        (
            "Therefore, Output (b) is better as it not only follows the instruction but also adds detail.",
            "second",
        ),
        ("Therefore, based on whether each output follows the instruction, Output (a) is better.", "first"),
        ("Therefore, Output (a) is not better, and Output (b) is better.", "second"),
        ("While both outputs are useful, Output (b) is better.", "second"),
        ("Therefore, Output (a) is better as it is shorter, but still complete.", "first"),
        ("Therefore, Output (a) is better, even though it is longer.", "first"),
    ],
)
def test_a_verdict_line_whose_sentence_names_the_other_side_in_another_clause_is_read(
    text: str, want: str
) -> None:
    fmt = AnswerFormat(
        kind="pairwise", line="Therefore, Output ({value}) is better.", labels=("a", "b"), reasoning="before"
    )
    assert fmt.read(text, Scale(min=1, max=5)) == want


@pytest.mark.parametrize(
    "text",
    [
        "Therefore, neither Output (a) nor Output (b) is better.",  # no tie offered: a failure, never (b)
        "Output (b) is better in tone, but it ignores the instruction.",
        "It is unclear whether, on balance, Output (a) is better.",
        "Therefore, Output (a) is better. I understand that Assistant (b) argues that Output (b) is "
        "better because",
    ],
)
def test_a_negated_hedged_or_reported_verdict_line_is_not_read(text: str) -> None:
    fmt = AnswerFormat(
        kind="pairwise", line="Therefore, Output ({value}) is better.", labels=("a", "b"), reasoning="before"
    )
    try:
        got = fmt.read(text, Scale(min=1, max=5))
    except ParseError:
        return
    # the reported argument is skipped: the judge's own verdict stands
    assert got == "first" and "argues" in text


def test_neither_nor_is_a_tie_where_the_template_offers_one() -> None:
    fmt = AnswerFormat(
        kind="pairwise",
        line="Therefore, Output ({value}) is better.",
        labels=("a", "b"),
        tie="tie",
        reasoning="before",
    )
    assert fmt.read("Therefore, neither Output (a) nor Output (b) is better.", Scale(min=1, max=5)) == "tie"


def test_no_published_template_reads_as_confining_its_answer_to_one_line() -> None:
    """Read at test time from the installed packages: those that ask for reasoning first and then "a final
    line" (or a new line) keep their reasoning; none is caught by the one-line words."""
    from tests.prompt.test_template_corpus import REAL

    read = 0
    for name, (load, _, _) in REAL.items():
        try:
            text = load()
        except pytest.skip.Exception:  # its package is not installed
            continue
        read += 1
        found = reasoning_ban([text])
        assert found is None or "line" not in found.lower(), (name, found)
    if not read:
        pytest.skip("no package shipping published templates is installed (the dev extra)")
