"""One demos mitigation (mitigate.strategies._demos): the generic ``demos``, its presets, and Pipeline.fit."""

from __future__ import annotations

import asyncio
import json
from collections import Counter
from pathlib import Path
from typing import Any, ClassVar

import pytest
from pydantic import ValidationError

from mitigate import Benchmark, Criterion, Demo, Item, JudgePrompt, PromptJudge
from mitigate.errors import ConfigError, MitigateError, TemplateError
from mitigate.judge import FitContext, Judge
from mitigate.lm import FakeLM
from mitigate.registry import Tags, register
from mitigate.scale import Scale
from mitigate.selectors import KNN, Random, Stratified
from mitigate.strategies import (
    ConsistencyHint,
    Demos,
    FixedDemosPreset,
    PerItemDemosJudge,
    PerItemDemosPreset,
    PerturbedDemosPreset,
    PerturbedGuidelines,
    Pipeline,
    PromptMitigation,
    RandomDemosPreset,
    SingleAttribute,
    from_spec,
    load_pipeline,
    parse_pipeline,
)
from tests.prompt.test_template_corpus import REAL, _corpus, _demo
from tests.prompt.test_template_corpus import _item as _corpus_item
from tests.strategies.test_strategies_base import Append

TEMPLATE = """Rate the summary.

Score 1 means bad.
Score 2 means poor.
Score 3 means fair.
Score 4 means good.
Score 5 means great.

Summary: {{summary}}

Reply with "Score: N"."""


WORDS = (
    "apple",
    "bridge",
    "castle",
    "dragon",
    "engine",
    "forest",
    "garden",
    "harbor",
    "island",
    "jungle",
    "kettle",
    "lantern",
    "meadow",
    "needle",
    "orchard",
)


def train(n: int = 15) -> Benchmark:
    items = tuple(
        Item(
            id=f"t{i}",
            output=f"A text about the {WORDS[i]}.",
            human={"coherence": float(1 + i % 5), "fluency": float(5 - i % 5)},
        )
        for i in range(n)
    )
    return Benchmark(name="train", items=items, criteria=("coherence", "fluency"), scale=Scale(min=1, max=5))


def judge(criteria: tuple[str, ...] = ("coherence",), lm: FakeLM | None = None) -> PromptJudge:
    prompt = JudgePrompt.from_template(TEMPLATE).with_criteria([Criterion(name=c) for c in criteria])
    return PromptJudge(prompt, lm if lm is not None else FakeLM(["Score: 3"] * 50))


def ids(demos: Any) -> list[str]:
    return [d.item.id for d in demos]


# --------------------------------------------------------------------------- the generic demos


def test_demos_with_a_selector_name_fits_and_shows_what_the_selector_picks() -> None:
    m = Demos(selector="stratified", k=5, criterion="coherence")
    assert not m.is_fitted
    fitted = m.fit(train(), judge())
    expected = Stratified().fit(train(), criterion="coherence").select(5)
    assert fitted.demos_ == tuple(expected)
    assert sorted(d.score for d in fitted.demos_) == [1.0, 2.0, 3.0, 4.0, 5.0]  # one per label
    assert fitted.selector_.n_pool_ == len(train().items)
    assert fitted.selector_.pool_ is None  # it keeps its choice, not the training set
    assert m.demos_ is None and fitted.is_fitted
    prompt = fitted.apply(judge().prompt)
    assert ids(prompt.demos) == ids(expected)
    assert from_spec(json.loads(json.dumps(fitted.spec()))) == fitted


def test_the_presets_fit_the_same_demos_as_the_generic_demos() -> None:
    rnd = RandomDemosPreset(k=3, seed=4, criterion="fluency").build().fit(train())
    generic = Demos(selector=Random(seed=4), k=3, criterion="fluency").fit(train())
    assert rnd.demos_ == generic.demos_ and rnd.criterion == generic.criterion == "fluency"
    given = (Demo(item=Item(id="a", output="A."), score=1.0), Demo(item=Item(id="b", output="B."), score=5.0))
    prompt = judge().prompt
    preset = PerturbedDemosPreset(demos=given, n=2, seed=1).build().apply(prompt)
    same = Demos(demos=given, k=2, display="perturbed", n=2, seed=1, placement="append").apply(prompt)
    assert preset == same and len(preset.demos) == 4  # each demo under two perturbed guidelines
    control = PerturbedDemosPreset(demos=given, perturbed=False).build().apply(prompt)
    assert control == Demos(demos=given, k=2, display="guideline", placement="append").apply(prompt)
    assert FixedDemosPreset(demos=given).build().apply(prompt) == Demos(demos=given, k=2).apply(prompt)


def test_demos_with_a_query_dependent_selector_choose_per_item() -> None:
    fitted = Demos(selector="knn", k=1, criterion="coherence").fit(train(), judge())
    assert isinstance(fitted.selector_, KNN) and fitted.selector_.is_fitted and fitted.demos_ is None
    assert fitted.tags.query_dependent and fitted.chooses_per_item
    lm = FakeLM(["Score: 2"])
    wrapped = fitted.wrap(judge(lm=lm))
    assert isinstance(wrapped, PerItemDemosJudge)
    judgment = asyncio.run(wrapped.judge(Item(id="q", output="Who planted the orchard?")))
    assert judgment.meta["demo_ids"] == ["t14"]  # the training text about the orchard
    assert from_spec(fitted.spec()) == fitted
    per_item = PerItemDemosPreset(selector=fitted.selector_, k=1).build()
    assert per_item.is_fitted and per_item.fit(train(), judge()).selector_ == fitted.selector_


def test_fitting_for_several_criteria_gives_each_prompt_its_own_score() -> None:
    split = SingleAttribute().wrap(judge(("coherence", "fluency")))
    fitted = RandomDemosPreset(k=2, seed=0).build().fit(train(), split)
    assert all(
        isinstance(d.score, dict) and set(d.score) == {"coherence", "fluency"} for d in fitted.demos_ or ()
    )
    shown = {
        leaf.prompt.criteria[0].name: [d.score for d in leaf.prompt.demos]
        for leaf in fitted.wrap(split).leaves()
    }
    by_id = {it.id: it for it in train().items}
    for criterion, scores in shown.items():
        assert scores == [by_id[i].human[criterion] for i in ids(fitted.demos_)]


def test_demos_parameters_are_refused_in_one_sentence() -> None:
    given = (Demo(item=Item(id="a", output="A."), score=1.0),)
    with pytest.raises(ConfigError, match="either a selector .* or the demos to show .*; got neither"):
        Demos()
    with pytest.raises(ConfigError, match="got both"):
        Demos(selector="random", demos=given, k=1)
    with pytest.raises(ConfigError, match=r"must hold exactly k=2 demos\. Got 1 instead \(pass k=1\)"):
        Demos(demos=given)
    with pytest.raises(
        ConfigError,
        match="The 'display' parameter of mitigation 'demos' must be one of 'plain', 'guideline', "
        "'perturbed'. Got 'fancy' instead.",
    ):
        Demos(selector="random", display="fancy")
    with pytest.raises(
        ConfigError, match="'ablation' parameter of mitigation 'demos' needs display=perturbed"
    ):
        Demos(selector="random", ablation=True)
    with pytest.raises(ConfigError, match="expected display=plain for per-item demos"):
        Demos(selector=KNN(), display="perturbed")
    with pytest.raises(ConfigError, match="unknown selector 'nope'"):
        Demos(selector="nope")
    with pytest.raises(
        ConfigError,
        match=r"The 'k' parameter of Demos asks for 20 demos, but benchmark 'train' has "
        r"only 15 items with a human 'coherence' score\.",
    ):
        Demos(selector="random", k=20, criterion="coherence").fit(train())


def test_unfitted_demos_say_how_to_fit() -> None:
    for m in (Demos(selector="random"), RandomDemosPreset().build(), PerturbedDemosPreset().build()):
        with pytest.raises(
            ConfigError, match=rf"^{type(m).__name__} is not fitted; expected `m = m.fit\(train, judge\)`"
        ):
            m.wrap(judge())


# --------------------------------------------------------------------------- Pipeline.fit


@register("mitigation", "test-demos-learns-prompt")
class LearnsPrompt(PromptMitigation):
    """Test-only: learns the last template of the judge it is fitted against."""

    learned_: str | None = None
    parameter_constraints: ClassVar = {}
    declared_tags: ClassVar[Tags] = Tags(needs_fitting=True, needs_judge=True)

    @property
    def is_fitted(self) -> bool:
        return self.learned_ is not None

    async def learn(self, train: Benchmark, judge: Judge, ctx: FitContext) -> LearnsPrompt:
        return self.model_copy(update={"learned_": judge.leaves()[0].prompt.messages[-1].template})

    def apply(self, prompt: JudgePrompt) -> JudgePrompt:
        if self.learned_ is None:
            raise ConfigError("LearnsPrompt is not fitted; expected `m = m.fit(train, judge)` before apply()")
        return prompt


def test_pipeline_fit_fits_each_step_against_the_judge_the_steps_before_it_make() -> None:
    base = judge()
    pipe = Append(text="[a]") | LearnsPrompt() | Append(text="[b]") | LearnsPrompt()
    assert not pipe.is_fitted
    fitted = pipe.fit(train(), base)
    assert isinstance(fitted, Pipeline) and fitted.is_fitted and not pipe.is_fitted
    first, second = fitted.steps[1], fitted.steps[3]
    assert first.learned_.endswith('N".[a]') and second.learned_.endswith("[a][b]")
    assert fitted.steps[0] is pipe.steps[0]  # nothing to learn: kept as it is
    assert base.prompt.messages[-1].template.endswith('"Score: N".')  # the judge is not changed
    assert asyncio.run(pipe.afit(train(), base)) == fitted


def test_pipeline_fit_fits_demo_steps_and_unfitted_pipelines_refuse_to_wrap() -> None:
    pipe = parse_pipeline("consistency-hint | random-demos(k=2, seed=1) | perturbed-guidelines(n=2)")
    with pytest.raises(ConfigError, match="Demos is not fitted"):
        pipe.wrap(judge())
    fitted = pipe.fit(train(), judge())
    assert fitted.steps[0] == ConsistencyHint() and fitted.steps[2] == PerturbedGuidelines(n=2)
    demos = fitted.steps[1]
    assert isinstance(demos, Demos) and len(demos.demos_ or ()) == 2 and demos.criterion == "coherence"
    assert from_spec(json.loads(json.dumps(fitted.spec()))) == fitted
    wrapped = fitted.wrap(judge())
    assert all(len(leaf.prompt.demos) == 2 for leaf in wrapped.leaves())
    with pytest.raises(
        ConfigError, match="^Pipeline.fit needs the judge it fits against; expected a Judge, got NoneType$"
    ):
        pipe.fit(train())


async def test_a_demo_step_that_judges_while_fitting_refuses_fit_inside_a_loop() -> None:
    pipe = Pipeline([Demos(selector="highest-rs", k=1)])
    assert pipe.tags.calls_judge_while_fitting and pipe.steps[0].tags.calls_judge_while_fitting
    with pytest.raises(
        ConfigError, match=r"Pipeline.fit\(\) runs its own event loop .* expected `await x.afit"
    ):
        pipe.fit(train(), judge())


# --------------------------------------------------------------------------- pipeline text and files


def test_parse_pipeline_loads_a_spec_file_with_at(tmp_path: Path) -> None:
    pipe = Pipeline(
        [ConsistencyHint(), RandomDemosPreset(k=2, seed=1, criterion="coherence").build().fit(train())]
    )
    path = tmp_path / "spec.json"
    path.write_text(json.dumps({"pipeline": pipe.spec(), "search": {}}))
    assert parse_pipeline(f"@{path}") == pipe == load_pipeline(path)
    bare = tmp_path / "bare.json"
    bare.write_text(json.dumps(RandomDemosPreset(k=1).build().spec()))
    assert parse_pipeline(f" @{bare} ") == Pipeline([RandomDemosPreset(k=1).build()])
    with pytest.raises(ConfigError, match="does not exist"):
        parse_pipeline(f"@{tmp_path / 'missing.json'}")
    with pytest.raises(ConfigError, match=r"write @spec.json to load a spec file"):
        parse_pipeline("spec.json")


def test_stratified_demos_are_balanced_for_the_judge_criterion() -> None:
    fitted = Demos(selector=Stratified(seed=2), k=10).fit(train(), judge(("fluency",)))
    assert fitted.criterion == "fluency"
    assert Counter(d.score for d in fitted.demos_ or ()) == {1.0: 2, 2.0: 2, 3.0: 2, 4.0: 2, 5.0: 2}


# --------------------------------------------------------------------------- pairwise demos

MT_BENCH_PAIR_LIKE = (  # MT-Bench pairwise's format ("[[A]]"/"[[B]]"), with the two answers placed B first
    'Compare the two assistants. Output your final verdict strictly as "[[A]]" if assistant A is '
    'better or "[[B]]" '
    "if assistant B is better.\n\n[Question]\n{question}\n\n[The Start of Assistant B's Answer]\n{answer_b}\n"
    "[The End of Assistant B's Answer]\n\n[The Start of Assistant A's Answer]\n{answer_a}\n"
    "[The End of Assistant A's Answer]"
)
PAIR_DEMO = Demo(
    item=Item(id="demo", output="DEMO A", output_b="DEMO B", inputs={"question": "Q?"}),
    verdict="first",
    reason="A is right.",
)


def test_a_pairwise_demo_shows_the_outputs_under_the_template_headings_and_its_verdict_its_way() -> None:
    prompt = JudgePrompt.from_template(MT_BENCH_PAIR_LIKE).with_demos([PAIR_DEMO])
    (message,) = prompt.render(Item(id="x", output="X A", output_b="X B", inputs={"question": "Real?"}))
    # one line parts the last demo from the judged pair
    end = "\n\nEnd of examples. Now evaluate the following.\n\n[Question]\nReal?"
    demo = message.content.split("Examples:\n\n", 1)[1].split(end, 1)[0]
    # the template asks for the verdict alone: the demo's reason is not shown as reasoning it forbids
    assert demo == (
        "[Question]\nQ?\n\n[The Start of Assistant B's Answer]\nDEMO B\n[The End of Assistant "
        "B's Answer]\n\n[The Start of Assistant A's Answer]\nDEMO A\n[The End of Assistant A's "
        "Answer]\n\n[[A]]"
    )


def test_a_pairwise_demo_shows_its_reason_as_the_reasoning_a_template_asks_for() -> None:
    text = MT_BENCH_PAIR_LIKE.replace("Compare the two assistants.", "First explain your comparison briefly.")
    prompt = JudgePrompt.from_template(text).with_demos([PAIR_DEMO])
    assert prompt.format.reasoning == "before"
    assert prompt.render_demos().endswith("[The End of Assistant A's Answer]\n\nA is right.\n[[A]]")


def test_fixed_demos_on_a_pairwise_prompt_answer_with_the_verdict() -> None:
    prompt = (
        FixedDemosPreset(demos=(PAIR_DEMO.model_copy(update={"verdict": "second"}),))
        .build()
        .apply(JudgePrompt.from_template(MT_BENCH_PAIR_LIKE))
    )
    assert prompt.render_demos().endswith("\n[[B]]")


def test_a_demo_that_cannot_answer_like_the_prompt_is_refused() -> None:
    scored = Demo(item=Item(id="s", output="A text."), score=4.0)
    with pytest.raises(
        TemplateError, match="pairwise prompt's demos show a gold verdict; demo 's' shows a score"
    ):
        JudgePrompt.from_template(MT_BENCH_PAIR_LIKE).with_demos([scored])
    with pytest.raises(
        TemplateError, match="shows demos with a gold score; demo 'demo' shows the verdict 'first'"
    ):
        JudgePrompt.from_template("Rate {{summary}} from 1 to 5.").with_demos([PAIR_DEMO])
    with pytest.raises((TemplateError, ValidationError), match="either a gold score or .* got both"):
        Demo(item=PAIR_DEMO.item, score=1.0, verdict="first")
    with pytest.raises((TemplateError, ValidationError), match="expected item 's' to have output_b"):
        Demo(item=scored.item, verdict="first")


def test_one_line_parts_the_last_demo_from_the_judged_item_in_every_message_layout() -> None:
    """Own wording: a system + user chat, and a pairwise template; the line closes the shared demo prefix."""
    end = "End of examples. Now evaluate the following."
    user = 'Article:\n{{article}}\n\nSummary:\n{{summary}}\n\nAnswer with "Score: N".'
    demos = [
        Demo(item=Item(id=f"d{i}", output=f"DEMO SUM {i}", inputs={"article": f"DEMO ART {i}"}), score=i)
        for i in (2, 5)
    ]
    chat = JudgePrompt.from_template(user, system="You rate summaries from 1 to 5.").with_demos(demos)
    system, message = chat.render(Item(id="i", output="ITEM SUM", inputs={"article": "ITEM ART"}))
    assert end not in system.content and message.content.count(end) == 1
    assert f"Score: 5\n\n{end}\n\nArticle:\nITEM ART\n\nSummary:\nITEM SUM" in message.content
    other = chat.render(Item(id="j", output="OTHER SUM", inputs={"article": "OTHER ART"}))[1].content
    prefix = message.content[: message.content.index(end) + len(end)]
    assert other.startswith(prefix)  # demos and the line stay a prefix every item shares
    pair = JudgePrompt.from_template(
        "Which is better?\n\n### Question\n{{question}}\n\n### Response A\n{{output}}\n\n### Response B\n"
        '{{output_b}}\n\nAnswer "A" or "B".',
        answer="pairwise",
    ).with_demos(
        [Demo(item=Item(id="d", output="DA", output_b="DB", inputs={"question": "DQ"}), verdict="second")]
    )
    (text,) = pair.render(Item(id="i", output="IA", output_b="IB", inputs={"question": "IQ"}))
    assert text.content.index("DB") < text.content.index(end) < text.content.index("### Question\nIQ")


@pytest.mark.parametrize("name", sorted(REAL))
def test_a_published_template_with_demos_parts_the_last_demo_from_the_judged_item(name: str) -> None:
    prompt = _corpus(name)
    if prompt.answer == "mcq" or prompt.format.two_scores:
        pytest.skip("no demo answers this template's format")
    try:
        shown = FixedDemosPreset(demos=(_demo(prompt),)).build().apply(prompt)
    except MitigateError as exc:  # a template with no heading to put demos before refuses them
        assert "\n" not in str(exc)
        return
    item = _corpus_item(prompt)
    text = "\n".join(m.content for m in shown.render(item))
    end = "End of examples. Now evaluate the following."
    assert text.count(end) == 1 and text.index("DEMO FIRST") < text.index(end) < text.index(item.output)
