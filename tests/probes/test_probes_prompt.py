"""The probes added to the battery: format (text), paraphrase (LM), and the prompt probes (option order,
criterion order, social pressure): each rendered on published templates and read, each detected on a judge
built to fall for it and not on one that reads only the content, each refused where it cannot apply."""

from __future__ import annotations

import asyncio
import re

import pytest

from mitigate import Item, JudgePrompt, PromptJudge
from mitigate.errors import ConfigError
from mitigate.lm import FakeLM, LMRequest
from mitigate.probes import (
    CriterionOrder,
    Format,
    OptionOrder,
    Paraphrase,
    SocialPressure,
    resolve_probes,
    run_probes,
)
from mitigate.probes._base import has_markdown
from mitigate.prompt import Criterion
from mitigate.registry import registered

OPTIONS = (
    "Rate the coherence of the summary.\n\nScore 1: no order at all.\nScore 2: some order.\n"
    "Score 3: a clear order throughout.\n\nArticle: {{source}}\nSummary: {{output}}\n\nScore:"
)
PLAIN = 'Rate the summary from 1 to 5.\n\nArticle: {{source}}\nSummary: {{output}}\n\nReply "Score: N".'
ITEMS = [
    Item(
        id=f"it{i}",
        inputs={"source": f"Article {i}."},
        output=f"The harbour reopened on day {i}. Ferries ran again." + (" It is clear." if i % 2 else ""),
    )
    for i in range(16)
]


def _quality(text: str) -> int:
    return 3 if "It is clear." in text else 1


def _battery(judge, probes, items=ITEMS, **kw):
    return asyncio.run(run_probes(judge, items, probes, criterion="coherence", n_boot=100, **kw))


# --------------------------------------------------------------------------- format


def test_format_turns_markdown_into_plain_prose_and_prose_into_bullets_keeping_every_word():
    md = "## Key points\n\n- **The bridge** opened.\n- Traffic *eased* at once\n1. Shops reopened."
    plain = Format().apply(Item(id="a", output=md)).record
    assert plain.added == "markdown -> plain prose" and not has_markdown(plain.probed)
    assert plain.probed == "Key points. The bridge opened. Traffic eased at once. Shops reopened."
    bullets = Format().apply(Item(id="b", output="The bridge opened. Traffic eased.")).record
    assert (
        bullets.probed == "- The bridge opened.\n- Traffic eased." and bullets.added == "prose -> bullet list"
    )
    already = Format(to="bullets").apply(Item(id="c", output="- one\n- two"))
    assert already.item is None and already.record.error == "nothing to convert: already a list"


# --------------------------------------------------------------------------- option order


def _first_option_judge(request: LMRequest) -> str:
    """Falls for option order: answers the score of the option listed first."""
    first = re.search(r"Score (\d):", request.messages[-1].content)
    assert first is not None
    return f"Score: {first.group(1)}"


def _content_judge(request: LMRequest) -> str:
    return f"Score: {_quality(request.messages[-1].content.split('Summary: ', 1)[1])}"


def test_option_order_is_detected_on_a_judge_reading_the_first_option_and_not_on_an_honest_one():
    prompt = JudgePrompt.from_template(OPTIONS, criterion="coherence")
    fooled = _battery(PromptJudge(prompt, FakeLM(_first_option_judge)), [OptionOrder()])
    assert fooled.rows[0].effect.detected and fooled.rows[0].effect.robustness.value == 0.0
    honest = _battery(PromptJudge(prompt, FakeLM(_content_judge)), [OptionOrder()])
    assert not honest.rows[0].effect.detected and honest.rows[0].effect.robustness.value == 1.0
    record = next(r for r in honest.records if r.probe == "option-order")
    assert record.field == "prompt" and record.added == "order(2,1,0)"
    assert record.probed.splitlines() == record.original.splitlines()[::-1]


def test_option_order_on_a_template_without_options_is_refused_before_any_call():
    lm = FakeLM(_content_judge)
    with pytest.raises(ConfigError, match="option-order reorders the template's score options"):
        _battery(PromptJudge(JudgePrompt.from_template(PLAIN), lm), [OptionOrder()])
    assert lm.calls == 0


# --------------------------------------------------------------------------- social pressure


def _yielding(request: LMRequest) -> str:
    text = request.messages[-1].content
    said = re.search(r"merits a score of (\d)|deserves a score of (\d)|answer here is a score of (\d)", text)
    if said:
        return f"Score: {next(g for g in said.groups() if g)}"
    return _content_judge(request)


def test_social_pressure_argues_for_the_other_end_and_is_detected_on_a_judge_that_yields():
    prompt = JudgePrompt.from_template(PLAIN, criterion="coherence")
    report = _battery(PromptJudge(prompt, FakeLM(_yielding)), [SocialPressure()])
    effect = report.rows[0].effect
    assert effect.detected and effect.robustness.value == 0.0
    targets = {r.item_id: r.probed for r in report.records}
    # scored 3 of 1-5: pushed to the bottom
    assert "a score of 1 (on the scale from 1 to 5)" in targets["it1"]
    assert "a score of 5 (on the scale from 1 to 5)" in targets["it0"]  # scored 1: pushed to the top
    honest = _battery(PromptJudge(prompt, FakeLM(_content_judge)), [SocialPressure()])
    assert not honest.rows[0].effect.detected


def test_social_pressure_sits_before_the_answer_stub_and_leaves_the_rest_byte_for_byte():
    template = "Rate it from 1 to 5.\n\nText: {{output}}\n\n###Feedback: "
    prompt = JudgePrompt.from_template(template)
    changed = SocialPressure().apply_prompt(prompt, 2.0).template_text()[0]
    before, _, after = changed.partition("\n\nFor context")
    assert before + "\n\n###Feedback: " == template and after.endswith(
        "(on the scale from 1 to 5).\n\n###Feedback: "
    )


def test_social_pressure_records_a_failure_for_an_item_without_an_original_value():
    prompt = JudgePrompt.from_template(PLAIN, criterion="coherence")

    def flaky(request: LMRequest) -> str:
        text = request.messages[-1].content
        unsure = "day 3." in text and "For context" not in text and request.seed in (None, 0)
        return "no idea" if unsure else _content_judge(request)

    report = _battery(PromptJudge(prompt, FakeLM(flaky)), [SocialPressure()])
    failed = [r for r in report.records if not r.ok]
    assert [r.item_id for r in failed] == ["it3"] and "no value to argue against" in (failed[0].error or "")
    assert report.rows[0].rewrite_failures == 1


def test_social_pressure_on_a_position_swapped_pairwise_judge_is_refused():
    pair = JudgePrompt.from_template(
        "Which is better?\n\nA: {{output}}\n\nB: {{output_b}}\n\nAnswer [[A]] or [[B]]."
    )
    judge = registered("mitigation")["position-swap"]().wrap(PromptJudge(pair, FakeLM(lambda r: "[[A]]")))
    with pytest.raises(ConfigError, match="got a position-swapped judge"):
        SocialPressure().perturb(judge)
    plain = SocialPressure().perturb(PromptJudge(pair, FakeLM(lambda r: "[[A]]")), "second")
    text = plain.requests(Item(id="p", output="x", output_b="y"))[0].request.messages[-1].content
    assert 'the second of the two texts shown is clearly better (the answer "[[B]]").' in text


# --------------------------------------------------------------------------- criterion order


def test_criterion_order_reorders_a_multi_attribute_prompt_and_refuses_one_criterion_or_free_text():
    base = PromptJudge(JudgePrompt.from_template(PLAIN, criterion="coherence"), FakeLM(lambda r: "x"))
    with pytest.raises(ConfigError, match="expected two or more criteria"):
        CriterionOrder().perturb(base)
    free = PromptJudge(
        JudgePrompt.from_template(PLAIN, criteria=["coherence", "fluency"]), FakeLM(lambda r: "x")
    )
    with pytest.raises(ConfigError, match="free-form template"):
        CriterionOrder().perturb(free)
    multi = registered("mitigation")["multi-attribute"](
        criteria=(Criterion(name="coherence"), Criterion(name="fluency"), Criterion(name="relevance"))
    ).wrap(base)
    text = CriterionOrder().perturb(multi).requests(ITEMS[0])[0].request.messages[-1].content
    where = [text.index(f"{c}: <score>") for c in ("Relevance", "Fluency", "Coherence")]
    assert where == sorted(where)
    assert text.index("- Relevance") < text.index("- Fluency") < text.index("- Coherence")


def test_criterion_order_is_detected_on_a_judge_that_scores_the_first_criterion_high():
    def anchored(request: LMRequest) -> str:
        names = re.findall(r"^(\w+): <score>", request.messages[-1].content, re.MULTILINE)
        return "\n".join(f"{n}: {3 if k == 0 else 1}" for k, n in enumerate(names))

    base = PromptJudge(JudgePrompt.from_template(PLAIN, criterion="coherence"), FakeLM(anchored))
    multi = registered("mitigation")["multi-attribute"](
        criteria=(Criterion(name="coherence"), Criterion(name="fluency"))
    ).wrap(base)
    report = _battery(multi, [CriterionOrder()])
    assert report.rows[0].effect.detected and report.rows[0].effect.shift.value == -2.0


# --------------------------------------------------------------------------- paraphrase


def test_paraphrase_asks_the_rewriter_to_keep_meaning_and_records_its_answer():
    rewriter = FakeLM(
        lambda r: "On day 1 the harbour opened again and ferries sailed once more. It is clear."
    )
    probed = asyncio.run(Paraphrase().aprobe(ITEMS[1], rewriter))
    assert probed.item is not None and probed.record.model and probed.record.raw
    asked = rewriter.requests[0].messages[0].content
    assert "keeping exactly what it says" in asked and "including any mistakes" in asked
    assert "paraphrase" not in [p.registry_name for p in resolve_probes("all")]  # needs a rewriter
    assert "paraphrase" in [p.registry_name for p in resolve_probes("all", rewriter=True)]


def test_all_means_the_probes_of_the_judged_text_and_prompt_probes_are_named():
    names = [p.registry_name for p in resolve_probes("all")]
    assert "format" in names and not {"option-order", "criterion-order", "social-pressure"} & set(names)
    assert [p.registry_name for p in resolve_probes("option-order,social-pressure")] == [
        "option-order",
        "social-pressure",
    ]


def test_prompt_probes_refuse_to_rewrite_an_item():
    with pytest.raises(ConfigError, match="perturbs the judge's prompt, not the judged text"):
        asyncio.run(OptionOrder().aprobe(ITEMS[0]))


# --------------------------------------------------------------------------- published templates


@pytest.mark.parametrize("name", ["prometheus-absolute", "autoevals-factuality", "flowjudge-with-inputs"])
def test_option_order_on_a_published_template_keeps_each_score_with_its_description(name):
    # reads the installed package's file; skips when it is absent
    from tests.prompt.test_template_corpus import _corpus

    prompt = _corpus(name)
    assert prompt.guideline is not None
    reordered = OptionOrder().apply_prompt(prompt)
    assert reordered.guideline is not None
    pairs = {(o.label, o.score, o.description) for o in prompt.guideline.options}
    assert {(o.label, o.score, o.description) for o in reordered.guideline.options} == pairs
    assert [o.label for o in reordered.guideline.options] == [o.label for o in prompt.guideline.options][::-1]
    rest = [t.replace(prompt.guideline.render(), "<G>") for t in prompt.template_text()]
    assert [t.replace(reordered.guideline.render(), "<G>") for t in reordered.template_text()] == rest


@pytest.mark.parametrize("name", ["prometheus-absolute", "flowjudge-with-inputs", "alpacaeval-chatgpt"])
def test_social_pressure_on_a_published_template_names_its_scale_or_its_answer_line(name):
    from tests.prompt.test_template_corpus import _corpus

    prompt = _corpus(name)
    task = "pairwise" if prompt.answer == "pairwise" else "score"
    target = SocialPressure().target(1.0 if task == "pairwise" else prompt.scale.max, prompt, task)
    text = "\n".join(SocialPressure().apply_prompt(prompt, target).template_text())
    stub = prompt.answer_stub()
    if task == "pairwise":
        assert 'the second of the two texts shown is clearly better (the answer "Output (b)").' in text
    else:
        lo, hi = int(prompt.scale.min), int(prompt.scale.max)
        assert f"a score of {lo} (on the scale from {lo} to {hi})." in text  # the scale the template states
        assert f"between {lo} and {hi}" in text or f"{lo}" in text
    if stub:
        assert text.endswith(stub)
