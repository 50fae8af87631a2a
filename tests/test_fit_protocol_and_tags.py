"""The one fit protocol (``afit`` async, ``fit`` written once on top of it) and the declared ``Tags``."""

from __future__ import annotations

import asyncio
from typing import ClassVar, Self

import pytest

from mitigate.data.schema import Benchmark
from mitigate.errors import ConfigError
from mitigate.judge import Judge
from mitigate.lm.fake import FakeLM
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
from mitigate.testing.checks import check_fit_returns_a_fitted_copy


def test_tags_are_frozen_and_a_pipeline_declares_what_any_step_does() -> None:
    tags = Tags(needs_fitting=True)
    with pytest.raises(ValueError, match="frozen"):
        tags.needs_fitting = False  # type: ignore[misc]
    pipe = parse_pipeline("consistency-hint | highest-rs-demos(k=2) | selective")
    assert pipe.tags.needs_fitting and pipe.tags.calls_judge_while_fitting and not pipe.tags.query_dependent
    assert parse_pipeline("consistency-hint").tags == Tags()
    assert parse_pipeline("random-demos(k=2)").tags == Tags(needs_fitting=True)
    assert KNN().tags.query_dependent and HighestRS().tags.calls_judge_while_fitting and not Random().tags.query_dependent


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
    pool = [it.model_copy(update={"human": {"coherence": it.human["score"], "fluency": 3.0}}) for it in example_pool()]
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
        (PerItemDemosPreset(selector=knn, k=2).build(), Demos(selector=knn, k=2, per_item=True, placement="append")),
        (PerturbedDemosPreset(m=2, n=3, seed=4).build(),
         Demos(selector=Stratified(by="range", seed=4), k=2, display="perturbed", placement="append", n=3, seed=4)),
        (PerturbedDemosPreset(demos=given, perturbed=False).build(),
         Demos(demos=given, k=2, display="guideline", placement="append")),
    ]
    for preset, generic in pairs:
        assert preset == generic and preset.spec() == generic.spec() and from_spec(preset.spec()) == generic


# --------------------------------------------------------------------------- the battery reads the tags


@register("mitigation", "test-tags-hide-judging")
class HidesJudging(PromptMitigation):
    """Breaks the contract on purpose: judges while fitting but its tags say it does not."""

    declared_tags: ClassVar[Tags] = Tags(needs_fitting=True)
    seen_: int | None = None

    async def afit(self, train: Benchmark, judge: Judge | None = None, *, progress: bool = True,
                   concurrency: int = 8) -> Self:
        assert judge is not None
        judgment = await judge.judge(train.items[0])
        return self.model_copy(update={"seen_": len(judgment.raw)})

    @property
    def is_fitted(self) -> bool:
        return self.seen_ is not None


def test_the_battery_fails_a_component_whose_tags_hide_that_it_calls_the_judge() -> None:
    with pytest.raises(AssertionError, match="tags say it calls no judge while fitting, but fit made 1 LM calls"):
        check_fit_returns_a_fitted_copy(HidesJudging())


async def _really_waits() -> None:
    await asyncio.sleep(0)


@register("mitigation", "test-tags-hide-waiting")
class HidesWaiting(HidesJudging):
    """Breaks the contract on purpose: waits on real I/O while fitting but its tags say it calls no judge."""

    async def afit(self, train: Benchmark, judge: Judge | None = None, *, progress: bool = True,
                   concurrency: int = 8) -> Self:
        await _really_waits()
        return self.model_copy(update={"seen_": 0})


def test_sync_fit_refuses_a_component_whose_tags_hide_that_it_waits() -> None:
    with pytest.raises(ConfigError, match="HidesWaiting.afit waited on I/O, but its tags say it calls no judge"):
        HidesWaiting().fit(example_train(), example_judge(lm=FakeLM([])))


def test_the_battery_fits_a_demo_step_that_judges_while_fitting() -> None:
    hrs = from_spec({"name": "highest-rs-demos", "params": {"k": 2, "criterion": "coherence"}})
    assert hrs.tags.calls_judge_while_fitting
    check_component(hrs)  # fitted against a fake LM (judge answers and log-likelihoods), not skipped
