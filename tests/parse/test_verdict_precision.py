"""Parse precision on hand-labelled reasoning-then-verdict pairwise answers.

The answers (``tests/verdict_answers.py``) are our own writing in the styles released judges
use; each carries its expected reading, "failure" included. Precision must be 100%: no answer
is ever read as a verdict it does not give. Recall is printed (benchmarks/RESULTS.md reports it).
"""

from __future__ import annotations

from collections import Counter

import pytest

from mitigate.errors import ParseError
from tests.verdict_answers import TEMPLATES, cases, prompts


def _read_all() -> list[tuple[str, str, str, str]]:
    read = prompts()
    out = []
    for case in cases():
        prompt = read[case.fmt]
        try:
            got = str(prompt.format.read(case.text, prompt.scale))
        except ParseError:
            got = "failure"
        out.append((case.fmt, case.style, case.expected, got))
    return out


def test_the_corpus_has_200_labelled_answers_in_three_formats_and_every_style() -> None:
    all_cases = cases()
    assert len(all_cases) >= 200
    assert set(Counter(c.fmt for c in all_cases)) == set(TEMPLATES) and len(TEMPLATES) >= 3
    styles = {c.style for c in all_cases}
    for style in (
        "verdict sentence with trailing explanation",
        "verdict then reasons",
        "hedge",
        "refusal",
        "cut-off answer",
        "both named in reasoning, verdict last",
    ):
        assert style in styles
    assert {c.expected for c in all_cases} == {"first", "second", "tie", "failure"}


def test_the_template_reader_recovers_each_published_answer_line() -> None:
    read = prompts()
    assert read["llmbar"].format.line == "Therefore, Output ({value}) is better."
    assert read["llmbar"].format.tie is None
    assert (read["mtbench"].format.line, read["mtbench"].format.tie) == ("[[{value}]]", "C")
    assert read["summary"].format.line == "Summary {value}"
    assert all(p.format.reasoning == "before" for p in read.values())


def test_parse_precision_on_reasoning_then_verdict_answers_is_100_percent() -> None:
    results = _read_all()
    wrong = [r for r in results if r[3] != "failure" and r[3] != r[2]]
    parsed = [r for r in results if r[3] != "failure"]
    verdicts = [r for r in results if r[2] != "failure"]
    correct = len(parsed) - len(wrong)
    print(
        f"\nreasoning-then-verdict answers: {len(results)}; parsed {len(parsed)}, correct {correct}, "
        f"precision {correct / len(parsed):.3f}, recall {correct / len(verdicts):.3f}"
    )
    assert not wrong, "\n".join(f"{f} / {s}: expected {e}, read {g}" for f, s, e, g in wrong)
    assert correct / len(verdicts) >= 0.9  # recall is reported; a collapse of it is a regression too


@pytest.mark.parametrize(
    ("text", "want"),
    [
        ("Output (b) adds detail not in Output (a). Therefore, Output (b) is better.", "second"),
        ("Output (a) is vague. Therefore, Output (b) is better as it names the steps.", "second"),
        ("Output (a) is better. Output (a) is more concise.", "first"),
        ("Both are fine.\n\nTherefore, Output (a) is better because it is shorter.", "first"),
    ],
)
def test_the_issue_examples_read_the_final_verdict_sentence(text: str, want: str) -> None:
    prompt = prompts()["llmbar"]
    assert prompt.format.read(text, prompt.scale) == want


@pytest.mark.parametrize(
    "text",
    [
        "Output (a) explains more than Output (b).",  # a mention in the reasoning is not a verdict
        "Output (a) is more detailed, but Output (b) is correct. Therefore, Output (b) is",  # cut off
        "Both outputs are equally good.",  # the template offers no tie
        "It is unclear whether Output (a) is better.",
        "Output (b) is better in tone, but it ignores the instruction.",
        "Output (a) is better?",
    ],
)
def test_ambiguous_pairwise_answers_are_recorded_failures_with_the_raw_text(text: str) -> None:
    prompt = prompts()["llmbar"]
    with pytest.raises(ParseError) as info:
        prompt.format.read(text, prompt.scale)
    assert info.value.raw == text
