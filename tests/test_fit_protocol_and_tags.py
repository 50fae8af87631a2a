"""The one fit protocol (``afit`` async, ``fit`` written once on top of it) and the declared ``Tags``."""

from __future__ import annotations

import asyncio
from typing import ClassVar, Self

import pytest

from mitigate.data import Benchmark
from mitigate.errors import ConfigError
from mitigate.judge import FitContext, Judge
from mitigate.lm import FakeLM
from mitigate.prompt import Demo
from mitigate.registry import Tags, register
from mitigate.selectors import KNN, HighestRS, Random, Stratified, example_pool
from mitigate.strategies import (
    Demos,
    FixedDemosPreset,
    PerItemDemosPreset,
    PerturbedDemosPreset,
    Pipeline,
    PromptMitigation,
    from_spec,
    parse_pipeline,
)
from mitigate.testing import check_component, example_judge, example_train
from mitigate.testing._checks import (
    check_fit_needs_the_judge_its_tags_say,
    check_fit_returns_a_fitted_copy,
    check_fitted_value_does_not_carry_the_training_set,
)
from mitigate.testing._examples import example_pairwise_train, fitting_lm


def test_tags_are_frozen_and_a_pipeline_declares_what_any_step_does() -> None:
    tags = Tags(needs_fitting=True)
    with pytest.raises(ValueError, match="frozen"):
        tags.needs_fitting = False  # type: ignore[misc]
    pipe = parse_pipeline("consistency-hint | highest-rs-demos(k=2) | selective")
    assert pipe.tags.needs_fitting and pipe.tags.calls_judge_while_fitting and not pipe.tags.query_dependent
    assert parse_pipeline("consistency-hint").tags == Tags()
    # a pipeline fits each step against the judge the steps before it make
    assert parse_pipeline("random-demos(k=2)").tags == Tags(needs_fitting=True, needs_judge=True)
    assert parse_pipeline("random-demos(k=2)").steps[0].tags == Tags(needs_fitting=True)
    assert (
        KNN().tags.query_dependent
        and HighestRS().tags.calls_judge_while_fitting
        and not Random().tags.query_dependent
    )


def test_fit_without_judge_calls_runs_inside_a_running_loop_and_equals_afit() -> None:
    train, judge = example_train(), example_judge()
    pipe = parse_pipeline("consistency-hint | random-demos(k=2, seed=3)")

    async def inside() -> tuple[Pipeline, Pipeline]:
        return pipe.fit(train, judge), await pipe.afit(train, judge)

    synced, awaited = asyncio.run(inside())
    assert synced == awaited and synced.is_fitted and not pipe.is_fitted
    assert len(synced.steps[1].demos_ or ()) == 2


def test_a_mitigation_that_needs_no_fitting_returns_itself() -> None:
    hint = parse_pipeline("consistency-hint").steps[0]
    assert hint.fit(example_train(), example_judge()) is hint


def test_a_selector_takes_its_criterion_explicitly_or_from_the_judges_prompt() -> None:
    pool = [
        it.model_copy(update={"human": {"coherence": it.human["score"], "fluency": 3.0}})
        for it in example_pool()
    ]
    by_judge = Random(seed=1).fit(pool, example_judge(("coherence",)))
    assert by_judge.criterion_ == "coherence"
    assert Random(seed=1).fit(pool, criterion="fluency").criterion_ == "fluency"
    with pytest.raises(ConfigError, match=r"Random.fit needs criterion=\.\.\. for a list of items"):
        Random().fit(pool)
    with pytest.raises(ConfigError, match="the judge's prompts score"):
        Random().fit(pool, example_judge(("coherence", "fluency")))


def test_stratified_by_range_takes_the_judges_scale_at_fit() -> None:
    bench = Benchmark(name="b", items=tuple(example_pool()), criteria=("score",))
    fitted = Stratified(by="range").fit(bench, example_judge(("score",)))
    assert fitted.judge_scale_ is not None and fitted.judge_scale_.max == 5
    assert Stratified(by="label").fit(bench, example_judge(("score",))).judge_scale_ is None


def test_each_demo_preset_builds_the_demos_its_equivalent_spec_builds() -> None:
    pool = example_pool()
    given = (Demo.from_item(pool[0], "score"), Demo.from_item(pool[2], "score"))
    knn = KNN().fit(pool, criterion="score")
    pairs = [
        (FixedDemosPreset(demos=given).build(), Demos(demos=given, k=2)),
        (
            PerItemDemosPreset(selector=knn, k=2).build(),
            Demos(selector=knn, k=2, per_item=True, placement="append"),
        ),
        (
            PerturbedDemosPreset(m=2, n=3, seed=4).build(),
            Demos(
                selector=Stratified(by="range", seed=4),
                k=2,
                display="perturbed",
                placement="append",
                n=3,
                seed=4,
            ),
        ),
        (
            PerturbedDemosPreset(demos=given, perturbed=False).build(),
            Demos(demos=given, k=2, display="guideline", placement="append"),
        ),
    ]
    for preset, generic in pairs:
        assert preset == generic and preset.spec() == generic.spec() and from_spec(preset.spec()) == generic


# --------------------------------------------------------------------------- the battery reads the tags


@register("mitigation", "test-tags-hide-judging")
class HidesJudging(PromptMitigation):
    """Breaks the contract on purpose: judges while fitting but its tags say it does not."""

    declared_tags: ClassVar[Tags] = Tags(needs_fitting=True)
    seen_: int | None = None

    async def learn(self, train: Benchmark, judge: Judge | None, ctx: FitContext) -> Self:
        assert judge is not None
        judgment = await judge.judge(train.items[0])
        return self.model_copy(update={"seen_": len(judgment.raw)})

    @property
    def is_fitted(self) -> bool:
        return self.seen_ is not None


def test_the_battery_fails_a_component_whose_tags_hide_that_it_calls_the_judge() -> None:
    with pytest.raises(
        AssertionError, match="tags say it calls no judge while fitting, but fit made 1 LM calls"
    ):
        check_fit_returns_a_fitted_copy(HidesJudging())


async def _really_waits() -> None:
    await asyncio.sleep(0)


@register("mitigation", "test-tags-hide-waiting")
class HidesWaiting(HidesJudging):
    """Breaks the contract on purpose: waits on real I/O while fitting but its tags say it calls no judge."""

    async def learn(self, train: Benchmark, judge: Judge | None, ctx: FitContext) -> Self:
        await _really_waits()
        return self.model_copy(update={"seen_": 0})


def test_sync_fit_refuses_a_component_whose_tags_hide_that_it_waits() -> None:
    with pytest.raises(
        ConfigError, match="HidesWaiting.afit waited on I/O, but its tags say it calls no judge"
    ):
        HidesWaiting().fit(example_train(), example_judge(lm=FakeLM([])))


def test_the_battery_fits_a_demo_step_that_judges_while_fitting() -> None:
    hrs = from_spec({"name": "highest-rs-demos", "params": {"k": 2, "criterion": "coherence"}})
    assert hrs.tags.calls_judge_while_fitting
    check_component(hrs)  # fitted against a fake LM (judge answers and log-likelihoods), not skipped


# -------------------------------------------------------------------------- one context, judge check, compile


def _fittables() -> list[object]:
    """Every registered mitigation and selector example, the unfitted selectors too, and a pipeline."""
    from mitigate.testing import registered_examples

    out: list[object] = []
    for example in registered_examples(("mitigation", "selector")):
        out.append(example.unfitted() if hasattr(example, "unfitted") else example)
    out.append(parse_pipeline("consistency-hint | random-demos(k=2)"))
    return out


def test_every_fittable_that_needs_the_judge_refuses_without_one_in_the_same_sentence() -> None:
    sentences = set()
    refused = []
    for component in _fittables():
        tags = component.tags
        if not (tags.needs_judge or tags.calls_judge_while_fitting):
            continue
        train = example_pairwise_train() if tags.pairwise_only else example_train()
        if hasattr(component, "select"):
            train = list(example_pool())
        with pytest.raises(ConfigError) as info:
            component.fit(train, None, FitContext(progress=False, criterion="score"))
        name = type(component).__name__
        text = str(info.value)
        assert "\n" not in text and text.startswith(f"{name}.fit ")
        sentences.add(text.replace(name, "<Name>", 1).replace(" (or its scores: ls= and judge_scores=)", ""))
        refused.append(name)
    assert {
        "Pipeline",
        "Demos",
        "LengthControl",
        "StyleControl",
        "SelectiveEvaluation",
        "ContextualCalibration",
        "BatchCalibration",
        "MultipleEvidence",
        "HighestRS",
    } <= set(refused)
    assert sentences == {"<Name>.fit needs the judge it fits against; expected a Judge, got NoneType"}


def test_the_judge_check_is_written_once() -> None:
    from pathlib import Path

    import mitigate

    root = Path(mitigate.__file__).parent
    found = [
        p.relative_to(root).as_posix() for p in root.rglob("*.py") if "needs the judge it" in p.read_text()
    ]
    assert sorted(found) == [
        "judge/_fitting.py",
        "testing/_checks.py",
    ]  # the check; the battery's expected sentence
    assert not [p for p in root.rglob("*.py") if "def afit" in p.read_text() and p.name != "_fitting.py"]


def test_a_judge_that_is_not_a_judge_is_refused_even_where_none_would_do() -> None:
    with pytest.raises(
        ConfigError,
        match=r"^Random.fit needs the judge it fits against; expected a Judge, "
        r"got str$",
    ):
        Random().fit(example_pool(), "my judge", criterion="score")


def test_keyword_options_are_shorthand_for_the_fit_context_and_merge_over_it() -> None:
    pool = [
        it.model_copy(update={"human": {"coherence": it.human["score"], "fluency": 3.0}})
        for it in example_pool()
    ]
    by_keyword = Random(seed=1).fit(pool, None, criterion="fluency")
    by_context = Random(seed=1).fit(pool, None, FitContext(criterion="fluency"))
    ctx = FitContext(criterion="coherence", progress=False)
    merged = Random(seed=1).fit(pool, None, ctx, criterion="fluency")
    assert by_keyword == by_context == merged and merged.criterion_ == "fluency"
    ctx = FitContext(progress=False)
    assert ctx.merged(concurrency=2) == FitContext(progress=False, concurrency=2) and ctx.concurrency == 8
    with pytest.raises(ValueError, match="frozen"):
        ctx.progress = True  # type: ignore[misc]


def test_the_fit_context_refuses_unknown_options_and_bad_values_in_one_line() -> None:
    fields = r"\['concurrency', 'criterion', 'judge_scores', 'lm', 'ls', 'progress'\]"
    with pytest.raises(
        ConfigError, match=r"^Random.fit has no option 'citerion'; expected some of " + fields
    ):
        Random().fit(example_pool(), citerion="score")
    with pytest.raises(
        ConfigError,
        match=r"^The 'concurrency' parameter of FitContext must be an int >= 1\. "
        r"Got 0",
    ):
        FitContext(concurrency=0)
    with pytest.raises(ConfigError, match=r"^FitContext has no field 'k'"):
        FitContext(k=2)
    with pytest.raises(
        ConfigError,
        match=r"^Random.fit expected a FitContext as its third argument; "
        r"got dict",
    ):
        Random().fit(example_pool(), None, {"criterion": "score"})


def test_compile_is_fit_then_wrap_in_one_call() -> None:
    train = example_train()
    pipe = parse_pipeline("consistency-hint | random-demos(k=2, seed=3) | selective(target=0.5)")
    lm_a, lm_b = fitting_lm(), fitting_lm()
    compiled = pipe.compile(example_judge(lm=lm_a), train, progress=False)
    expected = pipe.fit(train, example_judge(lm=lm_b), progress=False).wrap(example_judge(lm=lm_b))
    assert compiled.describe() == expected.describe() and lm_a.calls == lm_b.calls > 0
    hint = parse_pipeline("consistency-hint")
    # nothing to learn: compile without train is wrap
    assert hint.compile(example_judge()).describe() == hint.wrap(example_judge()).describe()
    with pytest.raises(ConfigError, match="Demos is not fitted"):
        parse_pipeline("random-demos(k=2)").compile(example_judge())  # no train: wrap() says what is missing


async def test_compile_inside_a_running_loop_points_to_acompile_when_fitting_calls_the_judge() -> None:
    pipe = parse_pipeline("selective(target=0.5)")
    with pytest.raises(
        ConfigError,
        match=r"Pipeline.compile\(\) runs its own event loop .* "
        r"`await x.acompile",
    ):
        pipe.compile(example_judge(lm=fitting_lm()), example_train())
    judge = await pipe.acompile(example_judge(lm=fitting_lm()), example_train(), progress=False)
    assert judge.describe()["kind"] == "selective"
    # fitting that calls no judge runs here too
    demos = parse_pipeline("random-demos(k=2)").compile(example_judge(), example_train())
    assert len(demos.leaves()[0].prompt.demos) == 2


@register("mitigation", "test-keeps-its-training-items")
class KeepsTrainingItems(PromptMitigation):
    """Breaks the contract on purpose: keeps the ids of every training item."""

    declared_tags: ClassVar[Tags] = Tags(needs_fitting=True)
    seen_: tuple[str, ...] | None = None

    async def learn(self, train: Benchmark, judge: Judge | None, ctx: FitContext) -> Self:
        return self.model_copy(update={"seen_": tuple(it.id for it in train.items)})

    @property
    def is_fitted(self) -> bool:
        return self.seen_ is not None


@register("mitigation", "test-hides-that-it-needs-the-judge")
class HidesNeedingTheJudge(PromptMitigation):
    """Breaks the contract on purpose: reads the judge while fitting but its tags say it needs none."""

    declared_tags: ClassVar[Tags] = Tags(needs_fitting=True)
    prompts_: int | None = None

    async def learn(self, train: Benchmark, judge: Judge | None, ctx: FitContext) -> Self:
        return self.model_copy(update={"prompts_": len(judge.leaves())})  # type: ignore[union-attr]

    @property
    def is_fitted(self) -> bool:
        return self.prompts_ is not None


def test_the_battery_fails_a_fitted_value_that_carries_its_training_set_or_hides_needing_the_judge() -> None:
    with pytest.raises(AssertionError, match="carries its training set"):
        check_fitted_value_does_not_carry_the_training_set(KeepsTrainingItems())
    with pytest.raises(AttributeError):
        check_fit_needs_the_judge_its_tags_say(HidesNeedingTheJudge())
    check_fitted_value_does_not_carry_the_training_set(parse_pipeline("random-demos(k=2)").steps[0])


def test_a_selector_kept_for_its_choice_answers_only_that_choice() -> None:
    full = Stratified(seed=2).fit(example_pool(), criterion="score")
    kept = full.with_choice(2)
    assert kept.pool_ is None and [it.id for it in kept.chosen_] == [d.item.id for d in full.select(2)]
    assert kept.select(2) == full.select(2) and kept.with_choice(2) is kept and kept.n_pool_ == 4
    with pytest.raises(
        ConfigError,
        match=r"^Stratified keeps only the 2 demos it chose "
        r"\(with_choice\(2\)\), not its pool; expected select\(2\) "
        r"without a query, got select\(3\)",
    ):
        kept.select(3)
    with pytest.raises(ConfigError, match=r"got select\(2, query=\.\.\.\)"):
        kept.select(2, query=example_pool()[0])
    knn = KNN().fit(example_pool(), criterion="score")
    assert knn.with_choice(2) is knn  # chooses per judged item: keeps its pool


def test_search_refuses_a_selector_that_kept_only_its_choice() -> None:
    from mitigate.data import Split
    from mitigate.search._session import fit_selectors

    kept = Random(seed=1).fit(example_pool(), criterion="score").with_choice(2)
    split = Split(train=tuple(example_pool()), dev=(), test=())
    with pytest.raises(
        ConfigError,
        match=r"^search draws many demo sets from each selector; expected "
        r"random\(seed=1\) unfitted or fitted on its pool, got one "
        r"keeping only the 2 demos it chose$",
    ):
        fit_selectors([kept], split, "score")
