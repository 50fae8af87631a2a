"""The contract every registered component meets, as named checks you can run on your own components.

Like scikit-learn's ``parametrize_with_checks``: write a mitigation, selector or search engine,
register it, and run the same battery mitigate runs on its own components::

    from mitigate.testing import parametrize_with_checks

    @parametrize_with_checks(MyMitigation.examples())
    def test_my_mitigation(component, check):
        check(component)

:func:`checks_for` yields the :class:`Check` objects that apply to one component (the common ones, then its
kind's: mitigation, selector, engine, probe; each check's docstring says what it checks);
:func:`check_component` runs them all outside pytest; :func:`registered_examples` gives the ``examples()`` of
every registered component (a preset's are the components it builds), which ``tests/test_contracts.py`` runs
the battery over; ``mitigate check-plugin my_package.judges`` runs it on every component a plugin module
registers. Fitting is checked against a judge on a fake LM (:func:`fitting_lm`).
"""

from __future__ import annotations

import asyncio
import json
import math
from collections.abc import Callable, Iterable, Iterator
from functools import partial
from typing import Any, NamedTuple

from pydantic import BaseModel

from mitigate.data import Item
from mitigate.errors import ConfigError, MitigateError
from mitigate.judge import Judge
from mitigate.lm import FakeLM
from mitigate.probes import Probe
from mitigate.registry import KIND_PACKAGES, Component, Tags, build, registered
from mitigate.search import Engine, asearch
from mitigate.selectors import Selector
from mitigate.strategies import Mitigation, from_spec
from mitigate.testing._examples import (
    PROBE_ITEM,
    example_judge,
    example_pairwise_train,
    example_train,
    fit_context,
    fitting_lm,
    fitting_setup,
    prompt_probe_judges,
    scripted_answer,
    scripted_split,
)


class Check(NamedTuple):
    """One named contract check; call it with the component."""

    name: str
    run: Callable[[Any], None]

    def __call__(self, component: Any) -> None:
        self.run(component)


def _refusal(call: Callable[[], Any], accepted: str) -> ConfigError:
    """The ConfigError ``call()`` raises; AssertionError with the message ``accepted`` when it raises none."""
    try:
        call()
    except ConfigError as exc:
        return exc
    raise AssertionError(accepted)


def _kind(component: Any) -> str:
    return str(getattr(type(component), "registry_kind", "") or "")


def _rebuild(component: Component, spec: Any) -> Any:
    if isinstance(component, Mitigation):
        return from_spec(spec)
    return build(_kind(component), spec)


# --------------------------------------------------------------------------- every component


def check_is_frozen_value(component: Any) -> None:
    """A pydantic value whose fields cannot be reassigned."""
    assert isinstance(component, BaseModel), f"{type(component).__name__} is not a pydantic model"
    assert component.model_config.get("frozen") is True, f"{type(component).__name__} is not frozen"
    for name in type(component).model_fields:
        try:
            setattr(component, name, getattr(component, name))
        except (ValueError, TypeError, AttributeError):
            continue
        raise AssertionError(f"{type(component).__name__}.{name} could be reassigned")


def check_is_registered(component: Any) -> None:
    """Registered under its name, so the registry finds its class."""
    cls = type(component)
    assert cls.registry_name, (
        f"{cls.__name__} is not registered (decorate it with @register(<kind>, '<name>'))"
    )
    assert registered(_kind(component)).get(cls.registry_name) is cls, (
        f"the registry maps {cls.registry_name!r} to "
        f"{registered(_kind(component)).get(cls.registry_name)!r}, not {cls.__name__}"
    )


def check_spec_round_trips(component: Any) -> None:
    """``spec()`` survives JSON and rebuilds an equal component with the same spec."""
    spec = component.spec()
    again = _rebuild(component, json.loads(json.dumps(spec)))
    assert type(again) is type(component), f"the spec rebuilt a {type(again).__name__}"
    assert again == component, f"the spec of {type(component).__name__} did not rebuild an equal value"
    assert again.spec() == spec, f"the rebuilt {type(component).__name__} has another spec"


def check_unknown_parameter_is_refused(component: Any) -> None:
    """A parameter the class does not have is one ConfigError naming the known ones."""
    cls = type(component)
    values = {**component.model_dump(), "no_such_parameter": 1}
    exc = _refusal(partial(cls.model_validate, values), f"{cls.__name__} accepted an unknown parameter")
    assert "no_such_parameter" in str(exc), f"the error does not name the unknown parameter: {exc}"


class _Unacceptable:
    """A value no declared constraint should accept."""

    def __repr__(self) -> str:
        return "<unacceptable value>"


def check_constraints_refuse_bad_values(component: Any) -> None:
    """Each declared constraint names a field, and a value none accepts is refused in scikit-learn's
    wording."""
    cls = type(component)
    for name in cls.parameter_constraints:
        assert name in cls.model_fields, (
            f"{cls.__name__} declares constraints for {name!r}, which is not a field"
        )
        bad = partial(component.with_params, **{name: _Unacceptable()})
        exc = _refusal(bad, f"{cls.__name__} accepted {_Unacceptable()!r} for {name!r}")
        expected = f"The {name!r} parameter of {cls.owner()} must be "
        assert str(exc).startswith(expected), f"expected {expected!r}...; got {exc}"


# --------------------------------------------------------------------------- mitigations


def check_tags_are_declared(component: Any) -> None:
    """``tags`` is a frozen :class:`~mitigate.registry.Tags` value."""
    tags = component.tags
    assert isinstance(tags, Tags), f"{type(component).__name__}.tags is a {type(tags).__name__}, not Tags"
    try:
        tags.needs_fitting = tags.needs_fitting
    except (ValueError, TypeError, AttributeError):
        return
    raise AssertionError(f"{type(component).__name__}.tags could be changed")


def check_wrap_leaves_the_judge_alone(mitigation: Mitigation) -> None:
    """``wrap`` returns a new judge and leaves the given one alone, or refuses with a typed error."""
    for criteria in (("coherence",), ("coherence", "fluency")):
        judge = example_judge(criteria)
        before = judge.describe()
        try:
            wrapped = mitigation.wrap(judge)
        except MitigateError:  # a mitigation may refuse a judge, but only with a typed error
            assert judge.describe() == before
            continue
        assert wrapped is not judge, f"{type(mitigation).__name__}.wrap returned the judge it was given"
        assert judge.describe() == before, f"{type(mitigation).__name__}.wrap changed the judge it was given"


def check_unfitted_use_is_refused(mitigation: Mitigation) -> None:
    """An unfitted mitigation refuses to wrap with "<Name> is not fitted; expected ..."."""
    if mitigation.is_fitted:
        return
    name = type(mitigation).__name__
    exc = _refusal(partial(mitigation.wrap, example_judge()), f"the unfitted {name} wrapped a judge")
    assert f"{name} is not fitted; expected" in str(exc), f"unclear error: {exc}"


def check_fit_returns_a_fitted_copy(mitigation: Mitigation) -> None:
    """``fit`` against a judge on a fake LM leaves the original and the training data alone and agrees with
    the tags: the mitigation itself when it learns nothing, else a fitted value of its class whose spec
    round-trips; the LM called exactly when it calls the judge while fitting."""
    train, judge, lm = fitting_setup(mitigation)
    train_before, before = train.model_dump(), mitigation.model_dump()
    tags = mitigation.tags
    fitted = mitigation.fit(train, judge, fit_context(lm))
    name = type(mitigation).__name__
    _calls_agree_with_tags(name, tags, lm)
    assert mitigation.model_dump() == before, f"{name}.fit changed the original"
    assert train.model_dump() == train_before, f"{name}.fit changed the training data"
    if not tags.needs_fitting:
        assert fitted is mitigation, (
            f"{name}'s tags say it learns nothing at fit, but fit returned a new value"
        )
    else:
        assert type(fitted) is type(mitigation), f"fit returned a {type(fitted).__name__}"
        assert fitted.is_fitted, f"{name}.fit returned an unfitted value"
        check_spec_round_trips(fitted)


def _calls_agree_with_tags(name: str, tags: Tags, lm: FakeLM) -> None:
    """The fit called the LM exactly when the tags say it calls the judge while fitting."""
    calls = lm.calls + len(lm.likelihood_requests)
    if tags.calls_judge_while_fitting:
        assert calls > 0, f"{name}'s tags say it calls the judge while fitting, but fit made no LM call"
    else:
        assert calls == 0, f"{name}'s tags say it calls no judge while fitting, but fit made {calls} LM calls"


def _named_ids(value: Any, ids: set[str]) -> set[str]:
    """The ids of ``ids`` that ``value`` (a JSON-able spec) holds as a string or a key, anywhere."""
    if isinstance(value, str):
        return {value} & ids
    if isinstance(value, dict):
        return (set(value) & ids).union(*(_named_ids(v, ids) for v in value.values()))
    if isinstance(value, list | tuple):
        return set().union(*(_named_ids(v, ids) for v in value))
    return set()


def check_fitted_value_does_not_carry_the_training_set(mitigation: Mitigation) -> None:
    """Fitted on four times the training items, the spec names no more of them and grows by less than a tenth
    of what was added: a fitted value keeps what it learned, not its training data (one choosing per judged
    item, tag ``query_dependent``, keeps its pool by design)."""
    if not mitigation.tags.needs_fitting or mitigation.tags.query_dependent:
        return
    ids, sizes = [], []
    for n in (12, 48):
        train, judge, lm = fitting_setup(mitigation, n)
        spec = json.loads(json.dumps(mitigation.fit(train, judge, fit_context(lm)).spec()))
        ids.append(_named_ids(spec, {it.id for it in train.items}))
        sizes.append((len(json.dumps(spec)), len(json.dumps(train.model_dump(mode="json")))))
    name = type(mitigation).__name__
    assert len(ids[1]) <= len(ids[0]), (
        f"{name} fitted on 12 items names {len(ids[0])} of them in its spec, fitted on 48 it names "
        f"{len(ids[1])}: it carries its training set"
    )
    (small, train_small), (large, train_large) = sizes
    assert large - small <= (train_large - train_small) / 10, (
        f"{name}'s fitted spec grew by {large - small} bytes when fitted on {train_large - train_small} more "
        "bytes of training data: it carries its training set"
    )


def check_compile_is_fit_then_wrap(mitigation: Mitigation) -> None:
    """``compile(judge, train)`` gives the judge ``fit(train, judge).wrap(judge)`` gives (same description),
    and refuses what they refuse."""
    name = type(mitigation).__name__
    made: list[Any] = []
    for way in ("fit, wrap", "compile"):
        train, judge, lm = fitting_setup(mitigation)
        try:
            made.append(
                mitigation.fit(train, judge, fit_context(lm)).wrap(judge)
                if way == "fit, wrap"
                else mitigation.compile(judge, train, fit_context(lm))
            )
        except MitigateError:  # a mitigation may refuse this judge, with a typed error
            made.append(None)
    expected, compiled = made
    if expected is None or compiled is None:
        assert expected is None and compiled is None, f"{name}: only one of compile and fit-then-wrap refused"
        return
    assert isinstance(compiled, Judge), f"{name}.compile returned a {type(compiled).__name__}"
    assert compiled.describe() == expected.describe(), (
        f"{name}.compile(judge, train) differs from fit(train, judge).wrap(judge)"
    )


def check_fit_needs_the_judge_its_tags_say(component: Mitigation | Selector) -> None:
    """Fitted without a judge: refused with the fit protocol's one sentence when the tags say fitting needs
    the judge (``needs_judge``, or ``calls_judge_while_fitting``), fitted otherwise."""
    tags, name = component.tags, type(component).__name__
    lm = fitting_lm()

    def fit() -> Any:
        if isinstance(component, Selector):
            pool = list(component.pool_ or ())
            return component.unfitted().fit(pool, None, fit_context(lm, criterion=component.criterion_))
        train = example_pairwise_train() if tags.pairwise_only else example_train()
        return component.fit(train, None, fit_context(lm))

    if isinstance(component, Selector):
        tags = component.unfitted().tags
    sentence = f"{name}.fit needs the judge it fits against; expected a Judge"
    if tags.needs_judge or tags.calls_judge_while_fitting:
        try:
            fit()
        except ConfigError as exc:
            text = str(exc)
            assert text.startswith(sentence) and text.endswith(", got NoneType") and "\n" not in text, (
                f"expected the fit protocol's sentence {sentence!r}...; got {text!r}"
            )
            assert lm.calls == 0, f"{name} called the LM {lm.calls} times before refusing"
            return
        raise AssertionError(f"{name}'s tags say fitting needs the judge, but it fitted without one")
    fitted = fit()
    assert fitted.is_fitted or not tags.needs_fitting, f"{name} fitted without a judge is not fitted"


# --------------------------------------------------------------------------- selectors


def _query(selector: Selector) -> Item:
    assert selector.pool_ is not None, f"{type(selector).__name__}.examples() should return fitted selectors"
    return selector.pool_[0]


def check_select_is_deterministic_and_hides_the_query(selector: Selector) -> None:
    """The same fitted selector, ``k`` and query give the same demos, never the query itself, with human
    scores."""
    query = _query(selector)
    first = selector.select(2, query=query)
    ids = [d.item.id for d in first]
    assert len(first) == 2, f"asked for 2 demos, got {len(first)}"
    assert ids == [d.item.id for d in selector.select(2, query=query)], "select is not deterministic"
    assert ids == [d.item.id for d in _rebuild(selector, selector.spec()).select(2, query=query)], (
        "the rebuilt selector chooses other demos"
    )
    assert query.id not in ids, "the judged item was shown as its own demo"
    crit = selector.criterion_
    assert all(
        isinstance(d.score, float | int) and math.isclose(d.score, d.item.human[str(crit)]) for d in first
    ), "demos must show the human score"


def check_k_is_validated(selector: Selector) -> None:
    """``select(0)`` is refused in scikit-learn's wording."""
    name = type(selector).__name__
    exc = _refusal(partial(selector.select, 0, query=_query(selector)), f"{name}.select(0) was accepted")
    assert str(exc).startswith(f"The 'k' parameter of {name} must be an int >= 1"), str(exc)


def check_selector_fit_returns_a_copy(selector: Selector) -> None:
    """``fit`` on the parameters alone returns a new fitted value (or says what more it needs); unfitted
    select is refused."""
    unfitted = selector.unfitted()
    select = partial(unfitted.select, 1, query=_query(selector))
    exc = _refusal(select, f"the unfitted {type(selector).__name__} selected demos")
    assert "not fitted" in str(exc), str(exc)
    lm = fitting_lm()
    ctx = fit_context(lm, criterion=selector.criterion_)
    fitted = unfitted.fit(list(selector.pool_ or ()), example_judge(lm=lm), ctx)
    assert fitted is not unfitted and fitted.is_fitted and not unfitted.is_fitted
    _calls_agree_with_tags(type(selector).__name__, unfitted.tags, lm)


def check_choice_keeps_only_the_chosen(selector: Selector) -> None:
    """``with_choice(k)`` keeps the ``k`` demos ``select(k)`` chose, not the pool, and round-trips through its
    spec; it answers only ``select(k)``. A query-dependent selector is kept as it is (it chooses per item)."""
    name = type(selector).__name__
    kept = selector.with_choice(2)
    if selector.tags.query_dependent:
        assert kept is selector, f"{name} chooses per judged item; with_choice must keep its pool"
        return
    assert kept.pool_ is None and kept.chosen_ is not None and len(kept.chosen_) == 2, (
        f"{name}.with_choice(2) kept {len(kept.pool_ or ())} pool items and {len(kept.chosen_ or ())} "
        "chosen ones"
    )
    chosen = [(d.item.id, d.score) for d in selector.select(2)]
    shown = [(d.item.id, d.score) for d in kept.select(2)]
    assert shown == chosen, f"{name}.with_choice(2) shows other demos"
    check_spec_round_trips(kept)
    assert [(d.item.id, d.score) for d in _rebuild(kept, kept.spec()).select(2)] == chosen
    _refusal(
        partial(kept.select, 1),
        f"{name} kept 2 chosen demos but answered select(1), which only its pool can answer",
    )


# --------------------------------------------------------------------------- engines


def check_engine_runs_within_its_budget(engine: Engine) -> None:
    """A tiny search with a scripted judge keeps to its budget, starts with the baseline and names the engine;
    or the engine refuses with a ConfigError before any LM call."""
    lm = FakeLM(scripted_answer)
    budget = 25
    try:
        result = asyncio.run(
            asearch(
                example_judge(lm=lm),
                scripted_split(),
                engine=engine,
                k=2,
                budget=budget,
                n_boot=0,
                cache=False,
                progress=False,
            )
        )
    except ConfigError:
        assert lm.calls == 0, f"the {engine.registry_name} engine refused after {lm.calls} LM calls"
        return
    assert result.engine == engine.registry_name
    assert result.calls_search <= budget, f"spent {result.calls_search} of a budget of {budget}"
    assert result.trials and result.trials[0].label.startswith("baseline")
    assert lm.calls == result.calls_search + result.calls_test


# --------------------------------------------------------------------------- probes


def check_prompt_probe_changes_the_prompt_only(probe: Probe) -> None:
    """A probe of the prompt changes the requests (never the item), records it, and refuses what it cannot
    apply to."""
    from mitigate.probes import PromptProbe  # the probes package is loaded: ``probe`` is one of its values

    assert isinstance(probe, PromptProbe)
    before = PROBE_ITEM.model_dump()
    applied = 0
    for judge in prompt_probe_judges():
        original = [r.request.model_dump() for r in judge.requests(PROBE_ITEM)]
        prompt = judge.leaves()[0].prompt
        target = probe.target(3.0, prompt, "score")
        try:
            perturbed = probe.perturb(judge, target)
        except ConfigError as exc:
            assert "\n" not in str(exc) and "expected" in str(exc), f"unclear refusal: {exc}"
            continue
        applied += 1
        changed = [r.request.model_dump() for r in perturbed.requests(PROBE_ITEM)]
        again = [
            r.request.model_dump()
            for r in _rebuild(probe, probe.spec()).perturb(judge, target).requests(PROBE_ITEM)
        ]
        assert changed != original, f"{type(probe).__name__} left the requests unchanged"
        assert again == changed, f"{type(probe).__name__} perturbs differently from the same spec"
        assert [r.request.model_dump() for r in judge.requests(PROBE_ITEM)] == original, (
            "the judge was changed"
        )
        record = probe.record(PROBE_ITEM, prompt, target)
        assert record.ok and record.field == "prompt" and record.probed and record.probed != record.original
    assert applied, (
        f"{type(probe).__name__} applied to no judge of the check (a prompt with options, two criteria)"
    )
    assert PROBE_ITEM.model_dump() == before, f"{type(probe).__name__} changed the item"
    assert probe.direction() in ("up", "down", "any"), f"{type(probe).__name__} declares no direction"


def check_probe_rewrites_and_records(probe: Probe) -> None:
    """A probe changes the judged text only, records the rewrite, and rewrites the same way twice; an
    LM-assisted one refuses without a rewriter and records the model and its raw answer (a probe of the
    prompt: :func:`check_prompt_probe_changes_the_prompt_only`)."""
    if probe.level == "prompt":
        check_prompt_probe_changes_the_prompt_only(probe)
        return
    before = PROBE_ITEM.model_dump()
    rewriter = None
    if probe.needs_rewriter:
        unaided = f"{type(probe).__name__} probed without a rewriter"
        exc = _refusal(lambda: asyncio.run(probe.aprobe(PROBE_ITEM, None)), unaided)
        assert "rewriter" in str(exc), f"unclear error without a rewriter: {exc}"
        rewriter = FakeLM(lambda request: "The mayor opened the bridge, and shops reopened because of it.")
    first = asyncio.run(probe.aprobe(PROBE_ITEM, rewriter))
    again = asyncio.run(_rebuild(probe, probe.spec()).aprobe(PROBE_ITEM, rewriter))
    assert PROBE_ITEM.model_dump() == before, f"{type(probe).__name__} changed the item it was given"
    assert first.item is not None and first.record.ok, (
        f"{type(probe).__name__} did not rewrite: {first.record.error}"
    )
    field = first.record.field
    assert first.record.original == PROBE_ITEM.field(field), "the record does not hold the original text"
    assert first.item.field(field) == first.record.probed != first.record.original, (
        "the probed text is not recorded"
    )
    others = {k: v for k, v in first.item.model_dump().items() if k != field}
    assert others == {k: v for k, v in before.items() if k != field}, (
        "the probe changed more than the judged text"
    )
    assert again.record == first.record, f"{type(probe).__name__} rewrote differently from the same spec"
    if probe.needs_rewriter:
        assert first.record.model and first.record.raw, (
            "an LM rewrite must record the model and its raw answer"
        )
    assert probe.direction() in ("up", "down", "any"), f"{type(probe).__name__} declares no direction"


# --------------------------------------------------------------------------- the battery

COMMON = (
    check_is_frozen_value,
    check_is_registered,
    check_spec_round_trips,
    check_unknown_parameter_is_refused,
    check_constraints_refuse_bad_values,
    check_tags_are_declared,
)
MITIGATION = (
    check_wrap_leaves_the_judge_alone,
    check_unfitted_use_is_refused,
    check_fit_returns_a_fitted_copy,
    check_fitted_value_does_not_carry_the_training_set,
    check_compile_is_fit_then_wrap,
    check_fit_needs_the_judge_its_tags_say,
)
SELECTOR = (
    check_select_is_deterministic_and_hides_the_query,
    check_k_is_validated,
    check_selector_fit_returns_a_copy,
    check_fit_needs_the_judge_its_tags_say,
    check_choice_keeps_only_the_chosen,
)
ENGINE = (check_engine_runs_within_its_budget,)
PROBE = (check_probe_rewrites_and_records,)


def checks_for(component: Any) -> Iterator[Check]:
    """The checks that apply to ``component``: the common ones, then its kind's."""
    kinds = ((Mitigation, MITIGATION), (Selector, SELECTOR), (Engine, ENGINE), (Probe, PROBE))
    for fn in [*COMMON, *(fn for cls, checks in kinds if isinstance(component, cls) for fn in checks)]:
        yield Check(fn.__name__.removeprefix("check_"), fn)


def check_component(component: Any) -> None:
    """Run every check of :func:`checks_for` on ``component`` (AssertionError on the first that fails)."""
    for check in checks_for(component):
        check(component)


def registered_examples(kinds: Iterable[str] | None = None) -> list[Component]:
    """``examples()`` of every registered component class of ``kinds`` (default: every kind), in name order
    (a preset's are the components it builds; test components, named ``test-...``, are left out)."""
    out: list[Component] = []
    for kind in kinds if kinds is not None else KIND_PACKAGES:
        for name, obj in sorted(registered(kind).items()):
            if name.startswith("test-") or not (isinstance(obj, type) and issubclass(obj, Component)):
                continue
            out.extend(obj.examples())
    return out


def parametrize_with_checks(components: Iterable[Any]) -> Any:
    """A ``pytest.mark.parametrize`` of ``component`` and ``check`` over every pair, with readable ids."""
    import pytest  # a test-time dependency, needed only here

    params = []
    counts: dict[str, int] = {}
    for component in components:
        name = getattr(type(component), "registry_name", "") or type(component).__name__
        label = f"{_kind(component)}:{name}" if _kind(component) else name
        counts[label] = counts.get(label, -1) + 1
        for check in checks_for(component):
            params.append(pytest.param(component, check, id=f"{label}-{counts[label]}-{check.name}"))
    return pytest.mark.parametrize(("component", "check"), params)
