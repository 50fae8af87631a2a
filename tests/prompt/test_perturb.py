"""Guideline perturbations: reorderings, lengthened descriptions, and the LM rewrite step."""

from __future__ import annotations

import itertools

import pytest

from mitigate import JudgePrompt
from mitigate.errors import ConfigError, ParseError, TemplateError
from mitigate.lm import FakeLM
from mitigate.prompt import (
    Guideline,
    OrderPerturbation,
    apply_to_prompt,
    order_perturbations,
    original_order,
    perturbation_set,
)
from mitigate.prompt._perturb import Combined, LengthenPerturbation, lengthen_guideline, rewrite_lengthen

THREE = """Rate the summary.

Scoring guideline:
Score 1 means bad.
Score 2 means okay.
Score 3 means good.

Summary:
{{summary}}

Answer with "Score: N"."""

FIVE = """Rate the summary.

Scoring guideline:
1: awful.
2: poor.
3: fair.
4: good.
5: great.

Summary:
{{summary}}"""


def _three() -> JudgePrompt:
    return JudgePrompt.from_template(THREE, criterion="coherence")


def _five() -> JudgePrompt:
    return JudgePrompt.from_template(FIVE, criterion="coherence")


def _labels(gl: Guideline) -> list[str]:
    return [o.label for o in gl.options]


def test_order_perturbations_enumerate_all_six_permutations_for_three_options() -> None:
    perts = order_perturbations(_three())
    assert [p.order for p in perts] == list(itertools.permutations(range(3)))
    assert perts[0].order == (0, 1, 2)
    gl = _three().guideline
    assert gl is not None
    assert _labels(perts[3].apply(gl)) == ["2", "3", "1"]  # order (1, 2, 0)
    assert perts[3].name == "order(1,2,0)"
    assert len({p.name for p in perts}) == 6


def test_order_sample_for_five_options_is_seeded_repeatable_identity_free_and_distinct() -> None:
    first = order_perturbations(_five(), seed=7)
    again = order_perturbations(_five(), seed=7)
    other = order_perturbations(_five(), seed=8)
    assert [p.order for p in first] == [p.order for p in again]
    assert [p.order for p in first] != [p.order for p in other]
    assert len(first) == 6  # the default sample size for 4+ options
    assert (0, 1, 2, 3, 4) not in [p.order for p in first]
    assert len({p.order for p in first}) == len(first)
    many = order_perturbations(_five(), max_n=119, seed=1)
    assert len({p.order for p in many}) == 119 and (0, 1, 2, 3, 4) not in {p.order for p in many}


def test_max_n_below_the_full_set_samples_without_the_identity() -> None:
    perts = order_perturbations(_three(), max_n=2, seed=0)
    assert len(perts) == 2 and all(p.order != (0, 1, 2) for p in perts)
    assert len(order_perturbations(_three(), max_n=6)) == 6
    with pytest.raises(ConfigError, match="'max_n' parameter of order_perturbations must be an int >= 1"):
        order_perturbations(_three(), max_n=0)


def test_reordering_uses_original_positions_and_keeps_separators() -> None:
    gl = _five().guideline
    assert gl is not None
    shuffled = OrderPerturbation(order=(4, 3, 2, 1, 0)).apply(gl)
    assert _labels(shuffled) == ["5", "4", "3", "2", "1"]
    assert shuffled.separators == gl.separators
    # applying to an already reordered guideline gives the same result (positions, not indices)
    again = OrderPerturbation(order=(1, 0, 2, 3, 4)).apply(shuffled)
    assert _labels(again) == ["2", "1", "3", "4", "5"]
    assert original_order(shuffled) == gl
    assert _labels(gl) == ["1", "2", "3", "4", "5"]  # input untouched


def test_order_perturbation_refuses_a_non_permutation_or_wrong_length() -> None:
    with pytest.raises(ConfigError, match="permutation of 0..n-1"):
        OrderPerturbation(order=(0, 0, 1))
    gl = _three().guideline
    assert gl is not None
    with pytest.raises(TemplateError, match="reorders 2 options; the guideline has 3"):
        OrderPerturbation(order=(1, 0)).apply(gl)


def test_lengthen_replaces_one_description_keeping_head_and_position() -> None:
    gl = _three().guideline
    assert gl is not None
    long = "okay: the summary is understandable but has several awkward transitions between its sentences."
    out = LengthenPerturbation(option=1, text=long).apply(gl)
    assert out.render() == f"Score 1 means bad.\nScore 2 means {long}\nScore 3 means good."
    assert gl.render() == "Score 1 means bad.\nScore 2 means okay.\nScore 3 means good."
    assert LengthenPerturbation(option=1, text=long).name == "lengthen(1)"


def test_length_perturbations_need_user_text_or_the_rewrite_step() -> None:
    with pytest.raises(ConfigError, match="lengthen_guideline"):
        perturbation_set(_three(), kind="length")
    perts = perturbation_set(
        _three(), kind="length", lengthened={"3": "good, with a clear and logical flow of ideas."}
    )
    assert [p.name for p in perts] == ["lengthen(2)"]
    assert apply_to_prompt(perts[0], _three()).template_text()[0].count("good, with a clear") == 1


def test_unknown_lengthened_labels_name_the_labels_available() -> None:
    with pytest.raises(ConfigError, match=r"\['9'\].*labels available are \['1', '2', '3'\]"):
        perturbation_set(_three(), kind="length", lengthened={"9": "a longer text"})


def test_a_prompt_without_a_parsed_guideline_is_refused() -> None:
    bare = JudgePrompt.from_template("Rate this summary from 1 to 5.\n\n{{summary}}")
    with pytest.raises(TemplateError, match="need the prompt.s score options written one per line"):
        perturbation_set(bare)
    with pytest.raises(TemplateError, match="score options written one per line"):
        order_perturbations(bare)


def test_both_combines_every_reordering_with_every_lengthened_option() -> None:
    lengthened = {
        "1": "bad: the sentences do not connect at all.",
        "2": "okay: some sentences connect, others not.",
    }
    perts = perturbation_set(_three(), kind="both", lengthened=lengthened)
    assert len(perts) == 12 and all(isinstance(p, Combined) for p in perts)
    assert perts[1].name == "order(0,1,2)+lengthen(1)"
    gl = _three().guideline
    assert gl is not None
    shown = perts[-1].apply(gl)  # order (2, 1, 0) + lengthen option 1
    assert shown.render() == (
        "Score 3 means good.\nScore 2 means okay: some sentences connect, others not.\nScore 1 means bad."
    )
    sample = perturbation_set(_three(), kind="both", lengthened=lengthened, n=4, seed=2)
    assert len(sample) == 4 and [p.name for p in sample] == [
        p.name for p in perturbation_set(_three(), kind="both", lengthened=lengthened, n=4, seed=2)
    ]


def test_perturbation_set_refuses_bad_kind_and_n() -> None:
    with pytest.raises(ConfigError, match="'kind' parameter"):
        perturbation_set(_three(), kind="shuffle")  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match="'n' parameter of perturbation_set must be an int >= 1"):
        perturbation_set(_three(), n=0)


def test_lengthened_text_must_be_one_line() -> None:
    with pytest.raises(ConfigError, match="one line"):
        LengthenPerturbation(option=0, text="two\nlines")


async def test_rewrite_step_records_and_uses_what_the_lm_wrote() -> None:
    written = "okay: the summary can be followed, although a few of its sentences are loosely linked."
    lm = FakeLM([f"Rewritten description: {written}"], model="writer")
    gl = _three().guideline
    assert gl is not None
    rec = await rewrite_lengthen(gl.options[1], lm, criterion="coherence")
    sent = lm.requests[0].messages[0].content
    assert "Option 2: okay." in sent and "coherence" in sent and "single line" in sent
    assert rec.text == written and rec.original == "okay." and rec.label == "2" and rec.position == 1
    assert rec.model == "writer" and rec.raw.startswith("Rewritten description:")
    perts = perturbation_set(_three(), kind="length", lengthened={rec.label: rec.text})
    assert perts[0].apply(gl).options[1].description == written


async def test_lengthen_guideline_returns_texts_to_store_and_records() -> None:
    lm = FakeLM(lambda req: "A much longer description that keeps the very same meaning as before.")
    lengthened, records = await lengthen_guideline(_three(), lm, labels=["1", "3"])
    assert sorted(lengthened) == ["1", "3"] and len(records) == 2 and lm.calls == 2
    assert all(r.text == lengthened[r.label] for r in records)
    with pytest.raises(ConfigError, match="labels available are"):
        await lengthen_guideline(_three(), lm, labels=["7"])


async def test_rewrite_step_never_invents_text_when_the_lm_fails_to_lengthen() -> None:
    gl = _three().guideline
    assert gl is not None
    with pytest.raises(ParseError, match="empty answer"):
        await rewrite_lengthen(gl.options[0], FakeLM(["   "]))
    with pytest.raises(ParseError, match="longer than the original"):
        await rewrite_lengthen(gl.options[2], FakeLM(["ok"]))
