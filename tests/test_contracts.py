"""The shared contract battery (:mod:`mitigate.testing._checks`), run over every registered component of every
kind.

The same checks ship publicly, so users run them on their own mitigations, selectors and
engines with ``parametrize_with_checks`` (scikit-learn style).
"""

from __future__ import annotations

from typing import ClassVar

import pytest

from mitigate.constraints import Interval
from mitigate.errors import ConfigError
from mitigate.judge import Judge
from mitigate.prompt import JudgePrompt
from mitigate.registry import Component, Preset, register, registered
from mitigate.strategies import Mitigation, PromptMitigation, from_spec
from mitigate.testing import Check, check_component, checks_for, parametrize_with_checks, registered_examples

EXAMPLES = registered_examples()


def test_the_battery_covers_every_kind_and_every_registered_component() -> None:
    kinds = {type(c).registry_kind for c in EXAMPLES}
    assert {"mitigation", "selector", "engine", "probe"} <= kinds
    names = {type(c).registry_name for c in EXAMPLES}
    assert {"random", "stratified", "knn", "highest-rs", "fixed"} <= names  # selectors
    assert {"demos", "sampling", "selective"} <= names  # mitigations
    presets = {
        name
        for name, obj in registered("mitigation").items()
        if isinstance(obj, type) and issubclass(obj, Preset)
    }
    assert presets == {"fixed-demos", "per-item-demos", "perturbed-demos", "random-demos", "highest-rs-demos"}
    built = [ex for name in presets for ex in registered("mitigation")[name].examples()]
    assert built and all(type(ex).registry_name == "demos" for ex in built)  # presets build Demos values
    assert {"random", "greedy", "dspy-labeled", "dspy-bootstrap-rs", "dspy-mipro"} <= names  # engines
    assert {
        "authority",
        "bandwagon",
        "distraction",
        "verbosity",
        "beauty",
        "refinement",
        "identity",
        "nested-instruction",
        "sentiment",
        "assertiveness",
        "fallacy",
        "factual-error",
    } <= names  # probes


@parametrize_with_checks(EXAMPLES)
def test_registered_component_meets_the_contract(component: Component, check: Check) -> None:
    check(component)


# --------------------------------------------------------------------------- the battery catches breakage


@register("mitigation", "test-contract-mutating")
class MutatingMitigation(PromptMitigation):
    """Breaks the contract on purpose: ``wrap`` returns the judge it was given."""

    k: int = 1
    parameter_constraints: ClassVar = {"k": [Interval(int, 1)]}

    def wrap(self, judge: Judge) -> Judge:
        return judge


@register("mitigation", "test-contract-unchecked")
class UncheckedMitigation(PromptMitigation):
    """Breaks the contract on purpose: declares a constraint for a parameter it does not have."""

    parameter_constraints: ClassVar = {"missing": [Interval(int, 1)]}

    def apply(self, prompt: JudgePrompt) -> JudgePrompt:
        return prompt


def test_the_battery_fails_a_mitigation_that_returns_its_input() -> None:
    names = {c.name for c in checks_for(MutatingMitigation())}
    assert "wrap_leaves_the_judge_alone" in names
    with pytest.raises(AssertionError, match="returned the judge it was given"):
        check_component(MutatingMitigation())


def test_the_battery_fails_a_constraint_on_no_field() -> None:
    with pytest.raises(AssertionError, match="declares constraints for 'missing', which is not a field"):
        check_component(UncheckedMitigation())


def test_the_battery_fails_an_unregistered_component() -> None:
    class Unregistered(Mitigation):
        def wrap(self, judge: Judge) -> Judge:
            return judge.map_prompts(lambda p: p)

    with pytest.raises(AssertionError, match="Unregistered is not registered"):
        check_component(Unregistered())


PRESETS = sorted(
    name
    for name, obj in registered("mitigation").items()
    if isinstance(obj, type) and issubclass(obj, Preset)
)


@pytest.mark.parametrize("name", PRESETS)
def test_a_preset_refuses_bad_parameters_and_builds_what_its_built_spec_rebuilds(name: str) -> None:
    cls = registered("mitigation")[name]
    with pytest.raises(ConfigError, match=f"{cls.owner()} has no parameter 'nope'"):
        from_spec({"name": name, "params": {"nope": 1}})
    for field, _ in cls.parameter_constraints.items():
        with pytest.raises(ConfigError, match=f"The '{field}' parameter of {cls.owner()} must be"):
            from_spec({"name": name, "params": {field: object()}})
    for built in cls.examples():
        assert type(built).registry_name == "demos" and from_spec(built.spec()) == built
