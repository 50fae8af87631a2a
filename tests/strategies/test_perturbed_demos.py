"""Perturbed-guideline demos, the perturbed-guidelines measurement and the prompting baselines (Ghazarian
et al. 2024)."""

from __future__ import annotations

import re
from typing import Any

import pytest
from pydantic import ValidationError

from mitigate import Benchmark, Demo, Item, JudgePrompt, PromptJudge
from mitigate.errors import ConfigError, LMCallError, TemplateError
from mitigate.judge import Judgment
from mitigate.lm import FakeLM, LMRequest
from mitigate.measures import accuracy_under_perturbation, perturbation_consistency
from mitigate.selectors import stratified_pick
from mitigate.strategies import (
    ConsistencyHint,
    Mitigation,
    PerturbedDemosPreset,
    PerturbedGuidelines,
    PerturbedGuidelinesJudge,
    SelfConsistency,
    from_spec,
    registered,
)
from mitigate.strategies._edits import DEFAULT_COT, DEFAULT_HINT

TEMPLATE = """Rate the summary.

Scoring guideline:
Score 1 means bad.
Score 2 means okay.
Score 3 means good.

Summary:
{{summary}}

Answer with "Score: N"."""

GUIDELINE = "Score 1 means bad.\nScore 2 means okay.\nScore 3 means good."
DEMOS = (
    Demo(item=Item(id="d1", output="Demo A."), score=1.0),
    Demo(item=Item(id="d2", output="Demo B."), score=3.0),
)
ITEM = Item(id="x", output="The test summary.")


def _prompt() -> JudgePrompt:
    return JudgePrompt.from_template(TEMPLATE, criterion="coherence")


def _judge(lm: FakeLM) -> PromptJudge:
    return PromptJudge(_prompt(), lm)


def _first_listed(request: LMRequest) -> str:
    """Answer with the score of the option listed first in the test item's guideline (an order-biased
    judge)."""
    text = request.messages[-1].content
    head = text[: text.index("Examples:")] if "Examples:" in text else text[: text.index("Summary:\n")]
    first = re.search(r"Score (\d) means", head)
    assert first is not None
    return f"Score: {first.group(1)}"


# --------------------------------------------------------------------------- perturbed demos


async def test_prompt_shows_each_demo_under_each_perturbed_guideline_then_the_gold_score() -> None:
    lm = FakeLM(["Score: 2"])
    judge = PerturbedDemosPreset(demos=DEMOS, n=2, seed=1).build().wrap(_judge(lm))
    judgment = await judge.judge(ITEM)
    assert judgment.scores == {"coherence": 2.0}
    # seed 1 samples the reorderings (1,0,2) and (0,2,1) of the three options
    expected = (
        "Rate the summary.\n\n"
        "Scoring guideline:\n" + GUIDELINE + "\n\n"
        "Examples:\n\n"
        "Summary:\nDemo A.\nScoring guideline:\n"
        "Score 2 means okay.\nScore 1 means bad.\nScore 3 means good.\nScore: 1\n\n"
        "Summary:\nDemo A.\nScoring guideline:\n"
        "Score 1 means bad.\nScore 3 means good.\nScore 2 means okay.\nScore: 1\n\n"
        "Summary:\nDemo B.\nScoring guideline:\n"
        "Score 2 means okay.\nScore 1 means bad.\nScore 3 means good.\nScore: 3\n\n"
        "Summary:\nDemo B.\nScoring guideline:\n"
        "Score 1 means bad.\nScore 3 means good.\nScore 2 means okay.\nScore: 3\n\n"
        "End of examples. Now evaluate the following.\n\n"
        "Summary:\nThe test summary.\n\n"
        'Answer with "Score: N".'
    )
    assert len(lm.requests) == 1 and len(lm.requests[0].messages) == 1
    assert lm.requests[0].messages[0].content == expected


def test_default_n_shows_every_ordering_of_three_options() -> None:
    prompt = PerturbedDemosPreset(demos=DEMOS).build().apply(_prompt())
    assert len(prompt.demos) == 2 * 6
    orders = {tuple(o.label for o in d.guideline.options) for d in prompt.demos if d.guideline}
    assert len(orders) == 6
    assert [d.score for d in prompt.demos] == [1.0] * 6 + [3.0] * 6
    assert prompt.guideline == _prompt().guideline  # the test item's guideline is not perturbed


def test_ablation_shows_each_demo_once_under_one_random_perturbation() -> None:
    mit = PerturbedDemosPreset(demos=DEMOS, ablation=True, seed=4).build()
    prompt = mit.apply(_prompt())
    assert [d.item.id for d in prompt.demos] == ["d1", "d2"]
    assert [d.score for d in prompt.demos] == [1.0, 3.0]
    for d in prompt.demos:
        assert d.guideline is not None and d.guideline.render() != GUIDELINE  # a real perturbation
    assert mit.apply(_prompt()) == prompt  # seeded: repeatable
    text = prompt.render(ITEM)[0].content
    assert text.count("Summary:\nDemo A.") == 1 and text.count("Summary:\nDemo B.") == 1


def test_unperturbed_control_shows_the_same_demos_under_the_original_guideline() -> None:
    prompt = PerturbedDemosPreset(demos=DEMOS, perturbed=False).build().apply(_prompt())
    assert [d.item.id for d in prompt.demos] == ["d1", "d2"]
    assert all(d.guideline is not None and d.guideline.render() == GUIDELINE for d in prompt.demos)


def test_length_demos_show_the_lengthened_option() -> None:
    long = "okay: understandable, though several sentences are only loosely connected."
    prompt = PerturbedDemosPreset(demos=DEMOS, kind="length", lengthened={"2": long}).build().apply(_prompt())
    assert len(prompt.demos) == 2
    assert all(d.guideline is not None and d.guideline.options[1].description == long for d in prompt.demos)


def test_apply_and_wrap_never_mutate_their_input() -> None:
    prompt = _prompt()
    before = prompt.model_dump()
    judge = _judge(FakeLM([]))
    mit = PerturbedDemosPreset(demos=DEMOS).build()
    wrapped = mit.wrap(judge)
    assert prompt.model_dump() == before and judge.prompt.demos == ()
    assert isinstance(wrapped, PromptJudge) and len(wrapped.prompt.demos) == 12
    assert mit.demos_ is None


def test_parameters_are_validated_with_readable_messages() -> None:
    with pytest.raises(
        ConfigError, match="The 'm' parameter of mitigation 'perturbed-demos' must be an int >= 1. Got 0"
    ):
        PerturbedDemosPreset(m=0).build()
    with pytest.raises(ConfigError, match="must hold exactly m=2 demos. Got 1"):
        PerturbedDemosPreset(demos=DEMOS[:1]).build()
    with pytest.raises(ConfigError, match="'lengthened' parameter"):
        PerturbedDemosPreset(demos=DEMOS, kind="length").build()
    with pytest.raises(ConfigError, match="needs perturbed=True"):
        PerturbedDemosPreset(demos=DEMOS, ablation=True, perturbed=False).build()
    with pytest.raises(ConfigError, match="'n' parameter of mitigation 'perturbed-guidelines'"):
        PerturbedGuidelines(n=0)


def test_unfitted_use_says_to_pass_demos_or_call_fit() -> None:
    with pytest.raises(
        ConfigError, match=r"is not fitted; expected `m = m.fit\(train, judge\)`.*or pass demos="
    ):
        PerturbedDemosPreset().build().apply(_prompt())


def test_a_prompt_without_a_guideline_is_refused() -> None:
    bare = JudgePrompt.from_template("Rate from 1 to 3.\n\n{{summary}}")
    with pytest.raises(TemplateError, match="score options written one per line"):
        PerturbedDemosPreset(demos=DEMOS).build().apply(bare)
    with pytest.raises(TemplateError, match="score options written one per line"):
        PerturbedGuidelines().wrap(PromptJudge(bare, FakeLM([])))


def _train() -> Benchmark:
    items = [
        Item(id=f"t{i}", output=f"train {i}", human={"coherence": s})
        for i, s in enumerate([1, 1.5, 2, 2, 3, 3, 2.5, 1])
    ]
    items.append(Item(id="no-label", output="x", human={"fluency": 3}))
    return Benchmark(name="train", items=tuple(items), criteria=("coherence",))


def test_fit_picks_m_demos_spread_over_the_gold_scores() -> None:
    judge = _judge(FakeLM([]))
    fitted = PerturbedDemosPreset(seed=0).build().fit(_train(), judge)
    assert fitted.demos_ is not None and len(fitted.demos_) == 2
    scores = sorted(float(d.score) for d in fitted.demos_)  # type: ignore[arg-type]
    assert scores[0] <= 2 < scores[1] or scores[0] < 2 <= scores[1]  # one from each half
    assert all(s in (1.0, 2.0, 3.0) for s in scores)  # on-scale gold scores preferred
    assert fitted.demos_ == PerturbedDemosPreset(seed=0).build().fit(_train(), judge).demos_  # seeded
    assert len(fitted.apply(_prompt()).demos) == 12
    assert from_spec(fitted.spec()) == fitted


def test_fit_keeps_explicit_demos_and_refuses_too_small_train_sets() -> None:
    judge = _judge(FakeLM([]))
    given = PerturbedDemosPreset(demos=DEMOS).build()
    assert (
        not given.tags.needs_fitting and given.fit(_train(), judge) is given and given.chosen_demos() == DEMOS
    )
    tiny = Benchmark(name="tiny", items=(Item(id="a", output="a", human={"coherence": 2}),))
    with pytest.raises(
        ConfigError,
        match="The 'k' parameter of Demos asks for 2 demos, but benchmark "
        "'tiny' has only 1 item with a human 'coherence' score",
    ):
        PerturbedDemosPreset().build().fit(tiny, judge)


def test_stratified_pick_draws_one_item_per_stratum() -> None:
    items = [Item(id=f"i{k}", output="o", human={"c": float(k)}) for k in range(9)]
    picks = stratified_pick(items, ["c"], 3, seed=5)
    assert sorted(int(p.human["c"]) // 3 for p in picks) == [0, 1, 2]


# --------------------------------------------------------------------------- the probe


async def test_probe_records_per_perturbation_scores_and_keeps_the_original_score() -> None:
    lm = FakeLM(_first_listed)
    probe = PerturbedGuidelines(n=2, seed=1).wrap(_judge(lm))
    assert isinstance(probe, PerturbedGuidelinesJudge)
    j = await probe.judge(ITEM)
    # original lists option 1 first; (1,0,2) lists option 2 first; (0,2,1) lists option 1 first
    assert j.meta["perturbations"] == {"original": 1.0, "order(1,0,2)": 2.0, "order(0,2,1)": 1.0}
    assert j.scores == {"coherence": 1.0} and j.calls == 3 and len(j.raw) == 3 and lm.calls == 3
    sent = [r.messages[0].content.split("Scoring guideline:\n")[1].split("\n\n")[0] for r in lm.requests]
    assert sorted(sent) == sorted(
        [
            GUIDELINE,
            "Score 2 means okay.\nScore 1 means bad.\nScore 3 means good.",
            "Score 1 means bad.\nScore 3 means good.\nScore 2 means okay.",
        ]
    )


async def test_consistency_measure_reads_the_probe_records() -> None:
    def by_item(request: LMRequest) -> str:
        text = request.messages[-1].content
        return "Score: 3" if "steady" in text else _first_listed(request)

    probe = PerturbedGuidelines().wrap(_judge(FakeLM(by_item)))  # all 5 non-identity orderings
    items = [Item(id="a", output="steady text"), Item(id="b", output="wobbly text")]
    judgments = [await probe.judge(it) for it in items]
    outputs: dict[str, dict[str, Any]] = {}
    for j in judgments:
        for name, score in j.meta["perturbations"].items():
            outputs.setdefault(name, {})[j.item_id] = score
    assert len(outputs) == 6
    m = perturbation_consistency(outputs)
    assert m.value == 0.5 and m.n == 2 and m.extra["percent"] == 50.0
    acc = accuracy_under_perturbation(outputs, {"a": 3.0, "b": 1.0})
    # item a is right everywhere; item b (gold 1) is right under the orderings listing option 1 first: 2 of 6
    assert acc.value == pytest.approx((6 + 2) / 12)


async def test_probe_parse_failures_stay_failures() -> None:
    def answer(request: LMRequest) -> str:
        guideline = request.messages[-1].content.split("Scoring guideline:\n")[1]
        return "I cannot decide." if guideline.startswith("Score 2") else "Score: 2"

    j = await PerturbedGuidelines(n=2, seed=1).wrap(_judge(FakeLM(answer))).judge(ITEM)
    assert j.meta["perturbations"] == {"original": 2.0, "order(1,0,2)": None, "order(0,2,1)": 2.0}
    assert j.scores == {"coherence": 2.0}
    assert len(j.failures) == 1 and j.failures[0].raw == "I cannot decide."

    def original_fails(request: LMRequest) -> str:
        guideline = request.messages[-1].content.split("Scoring guideline:\n")[1]
        return "no idea" if guideline.startswith("Score 1 means bad.\nScore 2") else "Score: 3"

    j2 = await PerturbedGuidelines(n=2, seed=1).wrap(_judge(FakeLM(original_fails))).judge(ITEM)
    assert j2.scores == {"coherence": None} and not j2.ok
    assert j2.meta["perturbations"]["original"] is None
    m = perturbation_consistency({k: {"x": v} for k, v in j2.meta["perturbations"].items()})
    assert m.n == 0 and m.n_failed == 1 and m.reason is not None  # NaN with a reason, not a score


async def test_probe_records_a_failed_perturbed_call_and_fails_on_a_failed_original() -> None:
    def flaky(request: LMRequest) -> str:
        guideline = request.messages[-1].content.split("Scoring guideline:\n")[1]
        if guideline.startswith("Score 2"):
            raise LMCallError("server said no")
        return "Score: 3"

    j = await PerturbedGuidelines(n=2, seed=1).wrap(_judge(FakeLM(flaky))).judge(ITEM)
    assert j.scores == {"coherence": 3.0} and j.error is None
    assert j.meta["perturbations"]["order(1,0,2)"] is None
    assert "server said no" in j.meta["perturbation_errors"]["order(1,0,2)"]

    def broken(request: LMRequest) -> str:
        raise LMCallError("down")

    with pytest.raises(LMCallError):
        await PerturbedGuidelines(n=2).wrap(_judge(FakeLM(broken))).judge(ITEM)


async def test_demos_then_probe_keep_demos_identical_and_perturb_only_the_test_guideline() -> None:
    lm = FakeLM(lambda r: "Score: 2")
    judge = (PerturbedDemosPreset(demos=DEMOS, n=2, seed=1).build() | PerturbedGuidelines(n=2, seed=0)).wrap(
        _judge(lm)
    )
    await judge.judge(ITEM)
    assert len(lm.requests) == 3
    blocks = [
        r.messages[0].content.split("Examples:\n\n")[1].split("Summary:\nThe test")[0] for r in lm.requests
    ]
    assert blocks[0] == blocks[1] == blocks[2]
    heads = {r.messages[0].content.split("Examples:")[0] for r in lm.requests}
    assert len(heads) == 3  # original + two reorderings of the test item's guideline


def test_probe_drops_the_identity_ordering() -> None:
    perts = PerturbedGuidelines().perturbations_for(_judge(FakeLM([])))
    assert len(perts) == 5 and "order(0,1,2)" not in [p.name for p in perts]


def test_probe_length_needs_lengthened_text() -> None:
    with pytest.raises(ConfigError, match="'lengthened' parameter of mitigation 'perturbed-guidelines'"):
        PerturbedGuidelines(kind="length")
    probe = PerturbedGuidelines(kind="length", lengthened={"1": "bad: the sentences do not connect at all."})
    assert [p.name for p in probe.perturbations_for(_judge(FakeLM([])))] == ["lengthen(0)"]


# --------------------------------------------------------------------------- baselines


async def test_consistency_hint_is_placed_right_after_the_guideline() -> None:
    lm = FakeLM(["Score: 3"])
    await ConsistencyHint().wrap(_judge(lm)).judge(ITEM)
    text = lm.requests[0].messages[0].content
    assert GUIDELINE + "\n\n" + DEFAULT_HINT + "\n\nSummary:\n" in text
    bare = JudgePrompt.from_template("Rate from 1 to 3.\n\n{{summary}}")
    assert (
        ConsistencyHint(text="Order does not matter.")
        .apply(bare)
        .messages[-1]
        .template.endswith("{{summary}}\n\nOrder does not matter.")
    )
    with pytest.raises(ConfigError, match="must not contain template slots"):
        ConsistencyHint(text="see {{output}}")


async def test_self_consistency_samples_cot_answers_and_takes_the_majority() -> None:
    lm = FakeLM(["I think... Score: 2", "Score: 3", "reasoning. Score: 2", "garbled", "Score: 3"])
    judge = SelfConsistency(n=5, temperature=0.7).wrap(_judge(lm))
    j = await judge.judge(ITEM)
    req = lm.requests[0]
    assert req.n == 5 and req.temperature == 0.7
    assert req.messages[0].content.endswith(
        f"{DEFAULT_COT} Compare the text with each option of the guideline. End your answer with a final "
        'line "Score: N", with N a score from 1 to 3.'
    )
    assert j.samples["coherence"] == (2.0, 3.0, 2.0, None, 3.0)
    assert j.scores == {"coherence": 2.0}  # 2-2 tie between 2 and 3 goes to the lower score
    assert len(j.failures) == 1 and j.failures[0].raw == "garbled"
    assert isinstance(judge, PromptJudge) and judge.config.reducer == "majority"
    plain = SelfConsistency(n=3, cot=False, max_tokens=512).wrap(_judge(FakeLM([])))
    assert isinstance(plain, PromptJudge) and plain.prompt == _prompt() and plain.config.max_tokens == 512
    with pytest.raises(
        ConfigError, match="The 'n' parameter of mitigation 'self-consistency' must be an int >= 1. Got 0"
    ):
        SelfConsistency(n=0)


async def test_self_consistency_reaches_every_leaf_behind_a_probe() -> None:
    lm = FakeLM(lambda r: "Score: 1")
    judge = (PerturbedGuidelines(n=2) | SelfConsistency(n=3)).wrap(_judge(lm))
    assert all(leaf.config.n == 3 and leaf.config.reducer == "majority" for leaf in judge.leaves())
    j = await judge.judge(ITEM)
    assert j.calls == 3 and all(r.n == 3 for r in lm.requests)


# --------------------------------------------------------------------------- contract


OWNED = ("perturbed-guidelines", "perturbed-demos", "consistency-hint", "self-consistency")


@pytest.mark.parametrize("name", OWNED)
def test_spec_round_trips_frozen_and_wrap_does_not_mutate(name: str) -> None:
    cls = registered()[name]
    for mit in cls.examples():
        assert isinstance(mit, Mitigation)
        spec = mit.spec()
        assert spec["name"] == ("demos" if name == "perturbed-demos" else name)  # a preset builds Demos
        again = from_spec(spec)
        assert again == mit and again.spec() == spec
        field = next(iter(type(mit).model_fields))
        with pytest.raises(ValidationError, match="frozen"):
            setattr(mit, field, getattr(mit, field))
        if not mit.is_fitted:  # the unfitted stratified choice is checked in test_fit_* above
            continue
        judge = _judge(FakeLM([]))
        before = judge.prompt.model_dump(), judge.config.model_dump()
        wrapped = mit.wrap(judge)
        assert wrapped is not judge
        assert (judge.prompt.model_dump(), judge.config.model_dump()) == before


def test_probe_spec_with_lengthened_round_trips() -> None:
    probe = PerturbedGuidelines(
        kind="both", n=3, lengthened={"2": "okay: a longer description here."}, seed=2
    )
    assert from_spec(probe.spec()) == probe
    demos = PerturbedDemosPreset(demos=DEMOS, kind="length", lengthened={"2": "okay: a longer one."}).build()
    assert from_spec(demos.spec()) == demos


def test_probe_judgment_is_json_serialisable() -> None:
    j = Judgment(item_id="x", meta={"perturbations": {"original": 1.0, "order(1,0,2)": None}})
    assert Judgment.model_validate_json(j.model_dump_json()) == j


def test_perturbed_demos_refuse_a_pairwise_prompt_clearly() -> None:
    pairwise = JudgePrompt.from_template(
        "Which output is better?\n\nScoring guideline:\nScore 1 means Output 1 is better.\nScore 2 means "
        "Output 2 is "
        'better.\n\nOutput 1: {{output_1}}\nOutput 2: {{output_2}}\n\nAnswer "1" or "2".'
    )
    assert pairwise.answer == "pairwise" and pairwise.guideline is not None
    pair = Item(id="p", output="First.", output_b="Second.")
    for mitigation in (
        PerturbedDemosPreset(
            demos=(Demo(item=pair, verdict="first"), Demo(item=pair, verdict="second"))
        ).build(),
        PerturbedDemosPreset(
            demos=(Demo(item=pair, verdict="first"), Demo(item=pair, verdict="tie")), perturbed=False
        ).build(),
    ):
        with pytest.raises(
            ConfigError, match="expected a prompt that scores one output, got a pairwise prompt"
        ):
            mitigation.apply(pairwise)
    with pytest.raises(TemplateError, match="carries a guideline of its own"):
        pairwise.with_demos([Demo(item=pair, verdict="first", guideline=pairwise.guideline)])
