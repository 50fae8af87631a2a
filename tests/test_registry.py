"""The one registry and declared parameter constraints (mitigate.registry), and run_coroutine."""

from __future__ import annotations

import asyncio
from typing import ClassVar

import pytest

from mitigate.constraints import Interval, IsInstance, Options, check_param, describe_constraints
from mitigate.errors import ConfigError
from mitigate.registry import Component, build, lookup, register, registered, run_coroutine


@register("selector", "test-registry-widget")
class Widget(Component):
    """A registered component used only by these tests."""

    k: int = 2
    by: str = "label"
    rate: float | None = None
    parameter_constraints: ClassVar = {
        "k": [Interval(int, 1)],
        "by": [Options("label", "range")],
        "rate": [Interval(float, 0, 1, closed="right"), None],
    }


def test_constraint_error_is_written_from_the_declaration():
    with pytest.raises(ConfigError) as err:
        Widget(k=0)
    assert (
        str(err.value)
        == "The 'k' parameter of selector 'test-registry-widget' must be an int >= 1. Got 0 instead."
    )
    with pytest.raises(
        ConfigError,
        match=r"'by' parameter of selector 'test-registry-widget' must be one of 'label', 'range'. Got 'x'",
    ):
        Widget(by="x")
    with pytest.raises(ConfigError, match=r"must be a float in \(0, 1\] or None. Got 0 instead"):
        Widget(rate=0)


def test_constraints_run_before_pydantic_so_wrong_types_are_one_line_errors():
    with pytest.raises(ConfigError, match=r"must be an int >= 1. Got 'three' instead"):
        Widget(k="three")
    with pytest.raises(ConfigError, match=r"must be an int >= 1. Got True instead"):
        Widget(k=True)


def test_unknown_parameter_names_the_known_ones():
    with pytest.raises(
        ConfigError,
        match=r"selector 'test-registry-widget' has no parameter 'kk'; expected some of "
        r"\['by', 'k', 'rate'\]",
    ):
        Widget(kk=3)


def test_spec_round_trips_through_build_and_lookup():
    w = Widget(k=3, rate=0.5)
    assert w.spec() == {"name": "test-registry-widget", "params": {"k": 3, "by": "label", "rate": 0.5}}
    assert build("selector", w.spec()) == w
    assert lookup("selector", "test-registry-widget") is Widget
    assert registered("selector")["test-registry-widget"] is Widget


def test_unknown_names_and_kinds_are_refused_with_what_is_known():
    with pytest.raises(ConfigError, match=r"unknown selector 'nope'; expected one of \["):
        lookup("selector", "nope")
    with pytest.raises(ConfigError, match=r"unknown component kind 'gizmo'"):
        registered("gizmo")
    with pytest.raises(ConfigError, match=r"extra keys \['steps'\]"):
        build("selector", {"name": "test-registry-widget", "steps": []})


def test_a_second_class_cannot_take_a_registered_name():
    with pytest.raises(ConfigError, match="already registered"):

        @register("selector", "test-registry-widget")
        class Other(Component):
            pass


def test_with_params_validates_like_a_new_object():
    w = Widget()
    assert w.with_params(k=5).k == 5
    with pytest.raises(ConfigError, match="Got -1 instead"):
        w.with_params(k=-1)


def test_interval_and_instance_wording():
    assert Interval(int, 1, 10).describe() == "an int in [1, 10]"
    assert Interval(float, 0, 1, closed="neither").describe() == "a float in (0, 1)"
    assert Interval(float, None, 0, closed="left").describe() == "a float < 0"
    assert describe_constraints([IsInstance(str), None]) == "a str or None"
    assert not Interval(float, 0, 1).accepts(float("nan"))
    assert Interval(float, 0, 1).accepts(1)
    assert check_param("X", "n", 4, [Interval(int, 1)]) == 4


def test_run_coroutine_runs_outside_a_loop_and_refuses_inside_one():
    async def answer() -> int:
        return 42

    assert run_coroutine(answer(), what="f()", instead="af()") == 42

    async def inside() -> None:
        coro = answer()
        with pytest.raises(
            ConfigError, match=r"f\(\) runs its own event loop .* expected `await af\(\)` there"
        ):
            run_coroutine(coro, what="f()", instead="af()")
        assert coro.cr_frame is None  # closed, not leaked (no "never awaited" warning)

    asyncio.run(inside())


def test_backends_benchmarks_prompts_and_released_judges_are_kinds_of_the_one_registry() -> None:
    import mitigate.lm
    from mitigate.data import load, released_recorded
    from mitigate.errors import BackendSpecError, DataError
    from mitigate.prompt import prompt_text
    from mitigate.registry import names, registered

    assert {"openai", "anthropic", "dspy", "local", "replay", "fake"} <= set(names("backend"))
    assert {"summeval", "uss-sgd", "webnlg", "tmu-gfm"} <= set(names("benchmark"))
    assert {"chatgpt-rts", "gpt4-rts", "chatgpt-h2h"} <= set(names("released-judge"))
    assert "summeval-coherence" in names("prompt")
    with pytest.raises(DataError) as bench:
        load("no-such-benchmark")
    assert all(name in str(bench.value) for name in names("benchmark"))
    with pytest.raises(BackendSpecError) as backend:
        mitigate.lm.get("no-such-backend:x")
    assert all(form in str(backend.value) for b in registered("backend").values() for form in b.forms)
    with pytest.raises(ConfigError) as prompt:
        prompt_text("no-such-prompt")
    assert all(name in str(prompt.value) for name in names("prompt"))
    with pytest.raises(DataError) as released:
        released_recorded("no-such-judge")
    assert all(name in str(released.value) for name in names("released-judge"))


def test_adding_a_second_value_under_a_taken_name_is_refused() -> None:
    from mitigate.registry import add, registered

    taken = registered("benchmark")["summeval"]
    add("benchmark", "summeval", taken)  # the same value again is allowed
    with pytest.raises(ConfigError, match="already registered"):
        add("benchmark", "summeval", lambda **kw: None)
    with pytest.raises(ConfigError, match="unknown component kind"):
        add("no-such-kind", "x", object())
