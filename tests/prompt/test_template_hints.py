"""The overrides of what is read from a template are one frozen value, and the old module paths still work.

``TemplateHints`` replaces the keyword list that ``from_template``, ``read_prompt``,
``describe_template``, the template reader and the CLI each repeated. Keywords still work (the
README's ``from_template(text, scale=(1, 10))``) and mean the same as the value; a misspelt one is
refused naming the fields; a value of the wrong type is refused naming the field. The answer format
and the readers moved (``mitigate.prompt.answer``, one reader module per kind under ``mitigate.parse``);
the old paths still give every name, with a warning naming the new home.
"""

from __future__ import annotations

import pytest

from mitigate.errors import ConfigError, ScaleError
from mitigate.prompt import AnswerFormat, JudgePrompt, TemplateHints, describe_template, read_prompt
from mitigate.scale import Scale

PAIR = (
    "Which answer is better?\n\n[Answer A]\n{{output_1}}\n\n[Answer B]\n{{output_2}}\n\n"
    'Explain, then answer "[[A]]" or "[[B]]".'
)
SCORED = "Rate the summary's coherence.\n\nArticle: {{document}}\n\nSummary: {{summary}}\n\nScore:"


def test_hints_given_as_one_value_read_the_same_prompt_as_the_same_keywords() -> None:
    keywords = {
        "scale": (1, 10),
        "criterion": "coherence",
        "output_slot": "summary",
        "slot_fields": {"document": "source"},
        "constants": {"unused": "x"},
    }
    by_keywords = JudgePrompt.from_template(SCORED, **keywords)
    by_value = JudgePrompt.from_template(SCORED, TemplateHints(**keywords))
    assert by_value == by_keywords
    assert by_value.scale == Scale(min=1, max=10) and by_value.criteria[0].name == "coherence"
    assert read_prompt(SCORED, TemplateHints(**keywords)) == read_prompt(SCORED, **keywords)
    assert describe_template(SCORED, TemplateHints(**keywords)) == describe_template(SCORED, **keywords)


def test_keywords_given_beside_a_hints_value_override_its_fields() -> None:
    base = TemplateHints(answer="pairwise", labels=("A", "B"))
    merged = TemplateHints.of(base, tie="C")
    assert (merged.answer, merged.labels, merged.tie) == ("pairwise", ("A", "B"), "C")
    assert base.tie is None  # a value: the merge made a new one
    prompt = JudgePrompt.from_template(PAIR, base, tie="C")
    assert prompt.format.tie == "C" and prompt.format.labels == ("A", "B")


def test_a_hints_value_is_frozen_and_its_spec_round_trips() -> None:
    hints = TemplateHints(
        scale=(1, 5),
        criteria=["coherence", "fluency"],
        letters={"A": 1, "B": 2},
        answer_format=AnswerFormat(line="Rating: [[{value}]]"),
    )
    with pytest.raises(ValueError):
        hints.tie = "C"  # type: ignore[misc]
    assert TemplateHints.model_validate(hints.model_dump()) == hints
    assert [c.name for c in hints.criteria or ()] == ["coherence", "fluency"]


def test_a_misspelt_hint_is_refused_naming_the_fields() -> None:
    with pytest.raises(TypeError, match=r"expected template hints among scale, criterion.*got scle"):
        JudgePrompt.from_template(SCORED, scle=(1, 10))
    with pytest.raises(TypeError, match="TemplateHints; got dict"):
        JudgePrompt.from_template(SCORED, {"scale": (1, 10)})  # type: ignore[arg-type]


def test_a_hint_of_the_wrong_kind_is_refused_naming_the_field() -> None:
    with pytest.raises(ConfigError, match=r"template hint answer .*got 'rating'"):
        JudgePrompt.from_template(SCORED, answer="rating")
    with pytest.raises(ScaleError):
        JudgePrompt.from_template(SCORED, scale=(3, 3))
