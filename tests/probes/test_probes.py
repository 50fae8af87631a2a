"""The bias battery: probes rewrite the judged text, the measures match hand computations and CALM's
definition, and a scripted judge built to fall for a probe is detected while one that is not is not."""

from __future__ import annotations

import asyncio
import random

import pytest

from mitigate import Item, JudgePrompt, PromptJudge
from mitigate.errors import ConfigError
from mitigate.judge import JudgeConfig
from mitigate.lm import FakeLM, LMRequest
from mitigate.measures import (
    directional_share,
    flip_test,
    mcnemar_one_sided,
    noise_floor,
    preference_for,
    probe_effect,
    robustness_rate,
    score_shift,
)
from mitigate.probes import Probe, probe_names, render_probe_table, resolve_probes, run_probes
from mitigate.probes._battery import ProbeReport, rerun_judge

TEMPLATE = (
    "Rate the summary of the article.\n\nArticle: {{source}}\n\nSummary: {{output}}\n\nReply with "
    '"Score: N" (1-5).'
)
PAIR_TEMPLATE = (
    "Which summary of the article is better?\n\nArticle:\n{{source}}\n\n"
    "Summary 1:\n{{output}}\n\nSummary 2:\n{{output_b}}\n\nAnswer 'Summary 1' or 'Summary 2'."
)
RULE_PROBES = probe_names(rule_only=True)
ITEMS = [
    Item(
        id=f"it{i}",
        inputs={"source": f"Article {i} about the harbour."},
        output=(
            f"The harbour reopened on day {i}. Ferries ran again. "
            + ("The report is strong and clear." if i % 2 else "Some details are missing.")
        ),
    )
    for i in range(16)
]


# --------------------------------------------------------------------------- hand computations

ORIGINAL = [3, 3, 4, 2, 5, None]
PROBED = [4, 3, 4, 3, 5, 2]
RERUN = [3, 2, 4, 2, 5, 2]


def test_robustness_rate_is_the_share_unchanged_as_calm_defines_it() -> None:
    # CALM: RR = (1/|D|) * sum_i 1[y_i == y^_i]; item 5 has no original value and is left out.
    rr = robustness_rate(ORIGINAL, PROBED)
    assert rr.value == pytest.approx(3 / 5) and rr.n == 5 and rr.n_failed == 1 and rr.count == 3
    assert rr.of_all == pytest.approx(3 / 6)  # the failed item counted as changed
    calm = sum(1 for y, p in zip(ORIGINAL, PROBED, strict=True) if y is not None and y == p) / 5
    assert rr.value == pytest.approx(calm)
    assert robustness_rate([1.0, 2.0], [1.2, 2.0], tolerance=0.25).value == 1.0
    assert robustness_rate([1.0, 2.0], [1.2, 2.0]).value == 0.5


def test_shift_floor_direction_and_flip_test_match_hand_computations() -> None:
    assert score_shift(ORIGINAL, PROBED).value == pytest.approx(0.4)
    assert directional_share(ORIGINAL, PROBED, "up").value == 1.0
    assert directional_share(ORIGINAL, PROBED, "down").value == 0.0
    assert not directional_share(ORIGINAL, PROBED, "any").ok
    assert noise_floor(ORIGINAL, RERUN).value == pytest.approx(1 / 5)
    t = flip_test(ORIGINAL, PROBED, RERUN)
    # probe flips items 0 and 3, the rerun flips item 1: b = 2, c = 1, p = P(X >= 2 | n = 3) = 4/8.
    assert (t.extra["b"], t.extra["c"]) == (2, 1)
    assert t.extra["p_value"] == pytest.approx(0.5)
    assert t.value == pytest.approx(2 / 5 - 1 / 5)


def test_exact_mcnemar_one_sided_values() -> None:
    assert mcnemar_one_sided(5, 0) == pytest.approx(1 / 32)  # at a floor of 0 the test is a sign test, 2^-b
    assert mcnemar_one_sided(3, 1) == pytest.approx(5 / 16)
    assert mcnemar_one_sided(0, 0) == 1.0
    with pytest.raises(ConfigError, match="b, c >= 0"):
        mcnemar_one_sided(-1, 2)


def test_a_pairwise_verdict_is_read_as_the_preference_for_the_probed_side() -> None:
    assert preference_for("first", "a") == 1.0 and preference_for("first", "b") == -1.0
    assert preference_for("second", "b") == 1.0 and preference_for("tie", "a") == 0.0
    assert preference_for(None, "a") is None


def test_probe_effect_at_a_zero_floor_detects_five_flips_up_but_not_two() -> None:
    base = [2.0] * 10
    up5 = [3.0] * 5 + [2.0] * 5
    up2 = [3.0] * 2 + [2.0] * 8
    effect = probe_effect(base, up5, base, probe="x", direction="up", n_boot=0)
    assert effect.detected and effect.test.extra["p_value"] == pytest.approx(1 / 32)
    assert effect.reading == "moved by the bias"
    weak = probe_effect(base, up2, base, probe="x", direction="up", n_boot=0)
    assert not weak.detected and weak.test.extra["p_value"] == pytest.approx(1 / 4)
    wrong_way = probe_effect(base, [1.0] * 5 + [2.0] * 5, base, probe="x", direction="up", n_boot=0)
    assert not wrong_way.detected and "not mostly in the predicted direction" in wrong_way.reading


# --------------------------------------------------------------------------- probes


def test_every_rule_probe_rewrites_only_the_judged_text_and_keeps_the_original_words() -> None:
    item = ITEMS[1]
    for name in RULE_PROBES:
        probed = resolve_probes(name)[0].apply(item)
        assert probed.item is not None and probed.item.inputs == item.inputs and probed.item.id == item.id
        assert probed.record.original == item.output != probed.record.probed
        for word in ("harbour", "Ferries", "strong"):
            assert word in probed.record.probed, f"{name} lost the word {word!r}"


def test_the_seed_changes_the_wording_drawn_and_the_same_seed_repeats_it() -> None:
    probe = resolve_probes("authority")[0]
    texts = {probe.with_params(seed=s).apply(ITEMS[0]).record.probed for s in range(8)}
    assert len(texts) > 1
    assert probe.apply(ITEMS[0]) == probe.apply(ITEMS[0])


def test_resolve_probes_names_all_and_refuses_unknown_names() -> None:
    assert [p.registry_name for p in resolve_probes("all")] == RULE_PROBES
    assert "sentiment" in [p.registry_name for p in resolve_probes("all", rewriter=True)]
    with pytest.raises(ConfigError, match="unknown probe 'flattery'; expected 'all' or some of"):
        resolve_probes("authority,flattery")
    with pytest.raises(ConfigError, match="each probe once"):
        resolve_probes("authority,authority")


def test_a_side_b_probe_on_single_items_is_refused_in_one_line() -> None:
    probe = resolve_probes("bandwagon")[0].with_params(side="b")
    with pytest.raises(ConfigError, match="side='b' rewrites the second text of a pairwise item"):
        probe.apply(ITEMS[0])


# --------------------------------------------------------------------------- scripted judges


def _summary(request: LMRequest) -> str:
    return request.messages[-1].content.split("Summary: ", 1)[1].rsplit("\n\nReply", 1)[0]


def _honest(text: str) -> int:
    return 4 if "strong" in text else 2


def _markers(probe: Probe) -> list[str]:
    if probe.registry_name == "beauty":
        return ["**"]
    if probe.registry_name == "format":  # prose becomes a bullet list
        return ["\n- "]
    return sorted({probe.apply(it).record.added for it in ITEMS})


def falls_for(probe: Probe):
    """A judge that reads the text honestly but moves one point the probe's way when it sees the probe."""
    markers = _markers(probe)
    step = -1 if probe.direction() == "down" else 1 if probe.direction() == "up" else -1

    def answer(request: LMRequest) -> str:
        text = _summary(request)
        score = _honest(text) + (step if any(m in text for m in markers) else 0)
        return f"Score: {score}"

    return answer


def honest(request: LMRequest) -> str:
    return f"Score: {_honest(_summary(request))}"


def _judge(lm: FakeLM, temperature: float = 0.0) -> PromptJudge:
    return PromptJudge(
        JudgePrompt.from_template(TEMPLATE, criterion="coherence"), lm, JudgeConfig(temperature=temperature)
    )


def _battery(judge: PromptJudge, probes: list[Probe], items: list[Item] = ITEMS, **kw: object) -> ProbeReport:
    return asyncio.run(run_probes(judge, items, probes, criterion="coherence", n_boot=200, **kw))


@pytest.mark.parametrize("name", RULE_PROBES)
def test_each_rule_probe_is_detected_on_a_judge_built_to_fall_for_it(name: str) -> None:
    probe = resolve_probes(name)[0]
    report = _battery(_judge(FakeLM(falls_for(probe))), [probe])
    effect = report.rows[0].effect
    assert effect.detected, effect
    assert effect.robustness.value == 0.0 and report.noise.value == 0.0
    assert "the floor is 0, as it must be on a deterministic backend" in report.floor_note


def test_no_rule_probe_is_detected_on_a_judge_that_reads_only_the_content() -> None:
    lm = FakeLM(honest)
    report = _battery(_judge(lm), resolve_probes("all"))
    assert [r.effect.detected for r in report.rows] == [False] * len(RULE_PROBES)
    assert all(r.effect.robustness.value == 1.0 for r in report.rows)
    assert lm.calls == (2 + len(RULE_PROBES)) * len(ITEMS)  # original, rerun, one judgment per probe


def test_a_judge_falling_for_one_probe_is_not_flagged_for_the_others() -> None:
    target = resolve_probes("authority")[0]
    report = _battery(_judge(FakeLM(falls_for(target))), resolve_probes("authority,bandwagon,beauty"))
    assert [r.effect.detected for r in report.rows] == [True, False, False]


def test_a_noisy_judge_has_a_floor_and_flips_no_more_under_a_probe_than_on_its_rerun() -> None:
    rng = random.Random(3)

    def noisy(request: LMRequest) -> str:
        return f"Score: {_honest(_summary(request)) + rng.choice((-1, 0, 0, 1))}"

    items = ITEMS * 1
    report = _battery(
        _judge(FakeLM(noisy), temperature=0.8), resolve_probes("refinement,verbosity"), items=items
    )
    assert report.noise.value > 0.2 and report.floor_note == ""
    assert not any(r.effect.detected for r in report.rows)
    # flips happen, but only at the noise level
    assert all(r.effect.robustness.value < 0.9 for r in report.rows)


def test_a_greedy_judge_whose_rerun_flips_is_reported_as_not_deterministic() -> None:
    calls = {"n": 0}

    def drifting(request: LMRequest) -> str:
        calls["n"] += 1
        # only the rerun of it0 moves
        bump = 1 if request.seed is not None and "day 0." in _summary(request) else 0
        return f"Score: {_honest(_summary(request)) + bump}"

    report = _battery(_judge(FakeLM(drifting)), resolve_probes("refinement"))
    assert report.noise.value == pytest.approx(1 / len(ITEMS))
    assert "yet the rerun changed 1 of 16 verdicts: this backend is not deterministic" in report.floor_note


def test_the_rerun_changes_only_the_request_seed_so_no_cache_returns_the_first_answer() -> None:
    judge = _judge(FakeLM(honest), temperature=0.7)
    again = rerun_judge(judge)
    a, b = judge.request(ITEMS[0]), again.leaves()[0].request(ITEMS[0])
    assert a.messages == b.messages and a.temperature == b.temperature and a.seed != b.seed


def test_the_probed_text_sits_in_the_output_slot_so_the_prompt_prefix_is_unchanged() -> None:
    lm = FakeLM(honest)
    _battery(_judge(lm), resolve_probes("bandwagon"), items=ITEMS[:1])
    original, probed = lm.requests[0].messages[-1].content, lm.requests[-1].messages[-1].content
    prefix = original.split("Summary: ")[0] + "Summary: "
    assert probed.startswith(prefix) and probed != original


def test_pairwise_probe_on_side_b_is_detected_when_the_judge_follows_the_claim() -> None:
    items = [
        Item(id=f"p{i}", inputs={"source": "A."}, output=f"First text {i}.", output_b=f"Second text {i}.")
        for i in range(10)
    ]
    probe = resolve_probes("bandwagon")[0].with_params(side="b")
    markers = _markers_pairwise(probe, items)

    def answer(request: LMRequest) -> str:
        body = request.messages[-1].content
        second = body.split("Summary 2:\n", 1)[1]
        return "Summary 2" if any(m in second for m in markers) else "Summary 1"

    judge = PromptJudge(JudgePrompt.from_template(PAIR_TEMPLATE, answer="pairwise"), FakeLM(answer))
    report = _battery(judge, [probe], items=items)
    effect = report.rows[0].effect
    assert report.task == "pairwise" and effect.detected
    assert effect.shift.value == pytest.approx(2.0)  # every verdict moved from -1 (other text) to +1 (probed)
    assert "bandwagon[b]" in render_probe_table(report)


def _markers_pairwise(probe: Probe, items: list[Item]) -> list[str]:
    return sorted({probe.apply(it).record.added for it in items})


# --------------------------------------------------------------------------- LM-assisted probes


def test_lm_probes_are_refused_without_a_rewriter_before_any_judge_call() -> None:
    lm = FakeLM(honest)
    with pytest.raises(ConfigError, match=r"probes \['sentiment'\] rewrite the judged text with an LM"):
        _battery(_judge(lm), resolve_probes("sentiment"))
    assert lm.calls == 0


def test_an_lm_probe_stores_every_rewrite_and_leaves_out_a_failed_one() -> None:
    def rewrite(request: LMRequest) -> str:
        text = request.messages[-1].content
        body = text.split("Text:\n", 1)[1]
        return (
            ""
            if "day 3." in body
            else "Edited text: " + body.replace("Ferries ran again.", "Ferries surely ran.")
        )

    rewriter = FakeLM(rewrite, model="rewriter-1")
    judge_lm = FakeLM(honest)
    report = _battery(_judge(judge_lm), resolve_probes("assertiveness"), rewriter=rewriter)
    row = report.rows[0]
    assert rewriter.calls == len(ITEMS) and row.rewrite_failures == 1
    assert row.effect.robustness.n == len(ITEMS) - 1 and row.effect.robustness.n_failed == 1
    failed = [r for r in report.records if not r.ok]
    assert (
        len(failed) == 1
        and failed[0].error == "the rewriter's answer was empty"
        and failed[0].item_id == "it3"
    )
    good = [r for r in report.records if r.ok]
    assert all(
        r.model == "rewriter-1" and r.raw and "surely" in r.probed and not r.probed.startswith("Edited")
        for r in good
    )


def test_a_probe_parameter_can_set_the_direction_its_hypothesis_predicts() -> None:
    identity, sentiment = resolve_probes("identity,sentiment")
    assert identity.direction() == "up" and identity.with_params(hypothesis="down").direction() == "down"
    assert sentiment.direction() == "up" and sentiment.with_params(tone="gloomy").direction() == "down"
    with pytest.raises(
        ConfigError, match="The 'author' parameter of probe 'identity' must be a non-empty one-line str"
    ):
        identity.with_params(author="  ")


def test_a_judge_noticing_an_inserted_error_reads_as_noticed_and_one_that_does_not_as_overlooked() -> None:
    def rewrite(request: LMRequest) -> str:
        return request.messages[-1].content.split("Text:\n", 1)[1].replace("day", "night")

    def careful(request: LMRequest) -> str:
        text = _summary(request)
        return f"Score: {_honest(text) - (1 if 'night' in text else 0)}"

    probe = resolve_probes("factual-error")
    noticed = _battery(_judge(FakeLM(careful)), probe, rewriter=FakeLM(rewrite)).rows[0].effect
    overlooked = _battery(_judge(FakeLM(honest)), probe, rewriter=FakeLM(rewrite)).rows[0].effect
    assert noticed.detected and noticed.reading == "noticed the error" and noticed.direction == "down"
    assert not overlooked.detected and overlooked.reading == "overlooked the error"


def test_tolerance_note_warns_only_for_continuous_scores_compared_with_tolerance_zero() -> None:
    from mitigate.probes._battery import tolerance_note

    assert tolerance_note([3.0, 4.0, None, 2.0], 0.0) == ""
    note = tolerance_note([3.25, 4.0, None, 2.5], 0.0)
    assert note.startswith("2 of the original scores are not whole numbers")
    assert tolerance_note([3.25, 4.0], 0.1) == ""


def test_constant_note_warns_when_every_original_item_got_the_same_value() -> None:
    from mitigate.probes._battery import constant_note

    assert constant_note([4.0, 4.0, None, 4.0], "score").startswith(
        "the judge gave all 3 original items the same score (4)"
    )
    assert "the same verdict" in constant_note([-1.0, -1.0], "pairwise")
    assert constant_note([4.0, 3.0, 4.0], "score") == ""
    assert constant_note([4.0, None], "score") == ""  # one value tells nothing


def test_a_constant_judge_is_called_robust_only_with_a_warning_that_it_does_not_tell_items_apart() -> None:
    report = _battery(_judge(FakeLM(lambda request: "Score: 3")), resolve_probes("authority"))
    assert report.rows[0].effect.robustness.value == 1.0
    assert report.constant_note.startswith(
        f"the judge gave all {len(ITEMS)} original items the same score (3)"
    )
    assert f"Warning: {report.constant_note}." in render_probe_table(report)
    honest_report = _battery(_judge(FakeLM(honest)), resolve_probes("authority"))
    assert honest_report.constant_note == "" and "Warning" not in render_probe_table(honest_report)


def test_a_negative_tolerance_is_refused_before_any_judge_call() -> None:
    lm = FakeLM(honest)
    with pytest.raises(
        ConfigError, match=r"The 'tolerance' parameter of run_probes must be .* Got -1 instead"
    ):
        _battery(_judge(lm), resolve_probes("authority"), tolerance=-1)
    assert lm.calls == 0
