"""The shared contract battery, run over every registered mitigation (scikit-learn style).

Each registered class is built from its ``examples()``; every example must be a frozen
value whose spec round-trips, and whose ``wrap`` returns a new judge without touching the
judge it was given.
"""

from __future__ import annotations

import importlib
import pkgutil

import pytest
from pydantic import BaseModel

import mitigate.selectors as selectors_pkg
import mitigate.strategies as strategies_pkg
from mitigate import Criterion, JudgePrompt, PromptJudge
from mitigate.errors import ConfigError
from mitigate.lm.fake import FakeLM
from mitigate.strategies.base import Mitigation, from_spec, registered

for _pkg in (strategies_pkg, selectors_pkg):
    for _mod in pkgutil.iter_modules(_pkg.__path__):
        importlib.import_module(f"{_pkg.__name__}.{_mod.name}")

GUIDED = """Rate the summary.

Coherence (1-5) - how well the summary hangs together.

Score 1 means it is incoherent.
Score 2 means it is mostly incoherent.
Score 3 means it is partly coherent.
Score 4 means it is mostly coherent.
Score 5 means it is fully coherent.

Article: {{source}}
Summary: {{summary}}

Score:"""

EXAMPLES = [
    pytest.param(example, id=f"{name}-{i}")
    for name, cls in sorted(registered().items())
    if not name.startswith("test-")
    for i, example in enumerate(cls.examples())
]


def _judge() -> PromptJudge:
    prompt = JudgePrompt.from_template(GUIDED).with_criteria(
        [Criterion(name="coherence"), Criterion(name="fluency")]
    )
    return PromptJudge(prompt, FakeLM([]))


def test_every_strategy_module_registers_something() -> None:
    assert len(EXAMPLES) >= 1


@pytest.mark.parametrize("mitigation", EXAMPLES)
def test_is_a_frozen_pydantic_value(mitigation: Mitigation) -> None:
    assert isinstance(mitigation, BaseModel)
    assert mitigation.model_config.get("frozen") is True
    field = next(iter(type(mitigation).model_fields), None)
    if field is not None:
        with pytest.raises(ValueError):
            setattr(mitigation, field, getattr(mitigation, field))


@pytest.mark.parametrize("mitigation", EXAMPLES)
def test_spec_round_trips(mitigation: Mitigation) -> None:
    spec = mitigation.spec()
    again = from_spec(spec)
    assert type(again) is type(mitigation)
    assert again == mitigation
    assert again.spec() == spec


@pytest.mark.parametrize("mitigation", EXAMPLES)
def test_wrap_returns_a_new_judge_and_leaves_the_input_alone(mitigation: Mitigation) -> None:
    judge = _judge()
    before = judge.describe()
    try:
        wrapped = mitigation.wrap(judge)
    except Exception as exc:  # a mitigation may refuse this judge, but only with a typed error
        from mitigate.errors import MitigateError

        assert isinstance(exc, MitigateError), f"{type(mitigation).__name__}.wrap raised {type(exc).__name__}"
        return
    assert wrapped is not judge
    assert judge.describe() == before


# ---------------------------------------------------------------------------- selectors
from mitigate.selectors.base import Selector, registered_selectors, selector_from_spec  # noqa: E402

SELECTOR_EXAMPLES = [
    pytest.param(example, id=f"{name}-{i}")
    for name, cls in sorted(registered_selectors().items())
    for i, example in enumerate(cls.examples())
]


def test_every_selector_kind_is_registered() -> None:
    assert {"random", "stratified", "knn", "highest-rs", "fixed"} <= set(registered_selectors())


@pytest.mark.parametrize("selector", SELECTOR_EXAMPLES)
def test_selector_is_frozen_and_its_spec_round_trips(selector: Selector) -> None:
    assert selector.model_config.get("frozen") is True
    with pytest.raises(ValueError):
        selector.criterion_ = "x"  # type: ignore[misc]
    again = selector_from_spec(selector.spec())
    assert again == selector and again.spec() == selector.spec()


@pytest.mark.parametrize("selector", SELECTOR_EXAMPLES)
def test_selector_select_is_seeded_and_fit_returns_a_copy(selector: Selector) -> None:
    pool = selector.pool_
    assert pool is not None
    query = pool[0] if type(selector).query_dependent else None
    first = selector.select(2, query=query)
    assert [d.item.id for d in first] == [d.item.id for d in selector.select(2, query=query)]
    assert len(first) == 2
    unfitted = type(selector).model_validate({k: v for k, v in selector.model_dump().items() if not k.endswith("_")})
    try:
        fitted = unfitted.fit(pool, selector.criterion_)
    except ConfigError as exc:  # a selector that needs more than the pool must say what
        assert "needs" in str(exc) or "expected" in str(exc)
        return
    assert fitted is not unfitted and fitted.is_fitted and not unfitted.is_fitted
