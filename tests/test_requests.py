"""``judge.requests(item)``: the exact requests a judge sends, listed without calling the LM.

The pin: for every registered mitigation's examples (fitted where they learn), the requests
``requests(item)`` lists are exactly the requests ``judge(item)`` then sends (a conditional
request, a cascade's later stage, may be left unsent; a reference-first judge's judge request is listed
with a placeholder where its first call's answer will stand), and listing them makes no call.
"""

from __future__ import annotations

import asyncio
import json
import re
from typing import Any

import pytest

from mitigate.data import Item
from mitigate.errors import CapabilityError, ConfigError, MitigateError
from mitigate.judge import Judge, Judgment, PromptJudge
from mitigate.lm import FakeLM, LMRequest
from mitigate.prompt import JudgePrompt
from mitigate.strategies import CascadeJudge, Mitigation, SelectiveEvaluation, parse_pipeline
from mitigate.strategies._own_reference import PLACEHOLDER
from mitigate.testing import example_judge, example_train, registered_examples
from mitigate.testing._examples import example_pairwise_judge, example_pairwise_train, fitting_lm

MITIGATIONS = [m for m in registered_examples(["mitigation"]) if isinstance(m, Mitigation)]


def _key(r: LMRequest) -> str:
    return json.dumps(r.model_dump(mode="json"), sort_keys=True)


def _listed(sent: str, conditional: list[str]) -> bool:
    """``sent`` is one of the conditional requests, where a placeholder for an earlier answer (a
    reference-first judge's own answer, not known when listing) stands for any text."""
    return any(
        sent == c
        or (
            PLACEHOLDER in c
            and re.fullmatch(".+?".join(re.escape(part) for part in c.split(PLACEHOLDER)), sent, re.S)
        )
        for c in conditional
    )


def _build(mitigation: Mitigation, lm: FakeLM) -> tuple[Judge, Item] | None:
    pairwise = mitigation.tags.pairwise_only or type(mitigation).registry_name == "position-swap"
    train = example_pairwise_train() if pairwise else example_train()
    fit_lm = fitting_lm()
    fit_judge = example_pairwise_judge(fit_lm) if pairwise else example_judge(lm=fit_lm)
    try:
        fitted = mitigation.fit(train, fit_judge, progress=False, lm=fit_lm)
        judge = example_pairwise_judge(lm) if pairwise else example_judge(lm=lm)
        if pairwise:  # the example pairwise judge is already swapped; the mitigation wraps its leaf
            judge = judge.leaves()[0]
        wrapped = fitted.wrap(judge)
        if type(mitigation).registry_name == "panel":  # members on other backends: every member on the fake
            wrapped = wrapped.map_leaves(lambda leaf: PromptJudge(leaf.prompt, lm, leaf.config))
    except MitigateError:  # refused with a typed error: nothing to list
        return None
    return wrapped, train.items[0]


@pytest.mark.parametrize("mitigation", MITIGATIONS, ids=lambda m: f"{type(m).registry_name}")
def test_requests_lists_exactly_what_judge_sends(mitigation: Mitigation) -> None:
    lm = fitting_lm()
    built = _build(mitigation, lm)
    if built is None:
        pytest.skip(f"{type(mitigation).__name__} refuses the example judge")
    judge, item = built
    try:
        planned = judge.requests(item)
    except MitigateError as exc:  # refused when listing: judging refuses too, with the same error
        with pytest.raises(type(exc)):
            asyncio.run(judge.judge(item))
        return
    assert lm.calls == 0, "listing the requests called the LM"
    assert planned, "a judge on an LM lists at least one request"
    try:
        asyncio.run(judge.judge(item))
    except MitigateError as exc:
        pytest.skip(f"{type(mitigation).__name__} refuses the example item: {exc}")
    sent = sorted(_key(r) for r in lm.requests)
    always = sorted(_key(p.request) for p in planned if p.condition is None)
    conditional = [_key(p.request) for p in planned if p.condition is not None]
    rest = list(sent)
    for k in always:
        assert k in rest, f"planned request not sent: {k[:300]}"
        rest.remove(k)
    for k in rest:
        assert _listed(k, conditional), f"sent request that requests() did not list: {k[:300]}"


def test_position_swap_lists_the_swapped_order_with_the_outputs_exchanged() -> None:
    lm = fitting_lm()
    judge = example_pairwise_judge(lm)
    item = example_pairwise_train().items[0]
    planned = judge.requests(item)
    assert [p.path for p in planned] == [("original",), ("swapped",)]
    assert [p.swapped for p in planned] == [False, True]
    first, second = (p.request.messages[-1].content for p in planned)
    assert first.index(item.output) < first.index(item.output_b)
    assert second.index(item.output_b) < second.index(item.output)
    assert lm.calls == 0


def test_sampling_shows_temperature_n_and_the_expected_score_shows_logprobs() -> None:
    judge = parse_pipeline("sampling(temperature=0.7, n=5) | expected-score").wrap(
        example_judge(lm=FakeLM([], logprobs=True))
    )
    (p,) = judge.requests(example_train().items[0])
    assert (p.request.temperature, p.request.n, p.request.logprobs) == (0.7, 5, True)
    assert p.request.top_logprobs > 0
    assert "expected score" in p.reads


def test_the_constraint_is_shown_in_the_fields_the_backend_sends() -> None:
    lm = FakeLM([], constraint_modes=["format"])
    judge = PromptJudge(JudgePrompt.from_template("Rate it 1-5.\n{{output}}\nScore:"), lm)
    (p,) = judge.requests(example_train().items[0])
    assert p.request.constraint is not None
    assert set(p.backend_fields) == {"grammar", "regex"}
    assert p.backend_fields["grammar"] == p.request.constraint.gbnf
    assert p.refused is None


def test_a_request_the_backend_cannot_take_is_listed_with_its_refusal() -> None:
    lm = FakeLM([])  # no logprobs
    judge = parse_pipeline("expected-score").wrap(example_judge(lm=lm))
    (p,) = judge.requests(example_train().items[0])
    assert p.refused is not None and "logprobs" in p.refused


def test_a_cascade_marks_its_later_stage_as_conditional() -> None:
    cheap, strong = fitting_lm(), fitting_lm()
    train = example_train()
    stage = SelectiveEvaluation(confidence="samples", target=0.5)
    stages = [stage.model_copy(update={"guarantee_": None}) for _ in range(2)]
    judges = {"cheap": example_judge(lm=cheap), "strong": example_judge(lm=strong)}
    try:
        fitted = [
            s.calibrate(
                [
                    Judgment(item_id=i.id, scores={"coherence": 3.0}, samples={"coherence": (3.0,)})
                    for i in train.items
                ],
                list(train.items),
            )
            for s in stages
        ]
    except MitigateError as exc:  # the calibration API changed: the stage guarantee is set by hand below
        pytest.fail(f"could not fit a stage: {exc}")
    cascade = CascadeJudge(judges, stages=fitted)
    planned = cascade.requests(train.items[0])
    assert [p.path[0] for p in planned] == ["cheap", "strong"]
    assert planned[0].condition is None
    assert planned[1].condition is not None and "cheap" in planned[1].condition


def test_a_judge_that_cannot_list_its_requests_says_so() -> None:
    class Opaque(Judge):
        async def judge(self, item: Item) -> Judgment:
            return Judgment(item_id=item.id)

        def map_leaves(self, fn: Any) -> Judge:
            return self

        def describe(self) -> dict[str, Any]:
            return {}

    with pytest.raises(CapabilityError, match="Opaque cannot list the requests"):
        Opaque().requests(example_train().items[0])


def test_an_mcq_prompt_without_letter_scores_is_refused_when_listing_too() -> None:
    prompt = JudgePrompt.from_template("Pick A or B.\n{{output}}\nAnswer:", answer="mcq")
    with pytest.raises(ConfigError, match="letter cannot become a score"):
        PromptJudge(prompt, FakeLM([])).requests(example_train().items[0])


def test_every_judge_type_in_the_package_says_which_requests_it_sends() -> None:
    import importlib
    import pkgutil

    import mitigate
    from mitigate.judge import CompositeJudge

    for mod in pkgutil.walk_packages(mitigate.__path__, "mitigate."):
        if mod.name.startswith(("mitigate.cli", "mitigate.adapters")) or mod.name.endswith("__main__"):
            continue
        try:
            importlib.import_module(mod.name)
        except ImportError:  # an optional extra that is not installed
            continue

    def subclasses(cls: type) -> list[type]:
        return [c for s in cls.__subclasses__() for c in (s, *subclasses(s))]

    found = [c for c in subclasses(Judge) if c.__module__.startswith("mitigate.")]
    assert len(found) >= 12
    for cls in found:
        if issubclass(cls, CompositeJudge):
            assert "requests" in vars(cls) or cls.requests_are_children, cls.__name__
        else:
            assert any("requests" in vars(k) for k in cls.__mro__ if k is not Judge), cls.__name__
