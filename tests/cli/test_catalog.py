"""``mitigate list`` and ``mitigate mitigations``: every registered component, with its parameters,
their types, defaults and accepted values, and its paper, read from the registry; ``--json``."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from mitigate.cli import app
from mitigate.errors import ConfigError
from mitigate.registry import KIND_PACKAGES, registered
from mitigate.strategies import parse_pipeline


@pytest.mark.parametrize(
    ("command", "kind"),
    [
        ("mitigations", "mitigation"),
        ("selectors", "selector"),
        ("measures", "measure"),
        ("engines", "engine"),
        ("backends", "backend"),
        ("benchmarks", "benchmark"),
    ],
)
def test_each_kind_command_lists_every_registered_component(command: str, kind: str) -> None:
    result = CliRunner().invoke(app, [command, "--json"])
    assert result.exit_code == 0, result.output
    rows = json.loads(result.stdout)
    assert [r["name"] for r in rows] == list(registered(kind))
    assert all(r["kind"] == kind for r in rows)
    same = CliRunner().invoke(app, ["list", kind, "--json"])
    assert json.loads(same.stdout) == rows


def test_a_mitigation_in_detail_shows_its_parameters_accepted_values_and_paper() -> None:
    result = CliRunner().invoke(app, ["mitigations", "granularity", "--json"])
    assert result.exit_code == 0, result.output
    row = json.loads(result.stdout)
    assert row["paper"] == "Stureborg et al. 2024"
    assert row["cls"] == "mitigate.strategies.Granularity"
    assert row["parameters"] == [
        {
            "name": "scale",
            "type": '"1-5" | "1-10" | "1-100" | "modifiers"',
            "default": "1-10",
            "accepts": "one of '1-5', '1-10', '1-100', 'modifiers'",
        }
    ]
    text = CliRunner().invoke(app, ["list", "mitigations", "granularity"]).stdout
    assert "paper: Stureborg et al. 2024" in text
    assert 'scale: "1-5" | "1-10" | "1-100" | "modifiers" (default "1-10"); accepts one of' in text


@pytest.mark.parametrize("kind", ["mitigation", "selector", "measure", "engine", "probe"])
def test_no_listing_shows_a_validator_a_function_address_or_a_private_module(kind: str) -> None:
    for name in registered(kind):
        text = CliRunner().invoke(app, ["list", kind, name]).stdout
        for python_speak in ("Annotated", "<function", " at 0x", "PydanticUndefined", "._"):
            assert python_speak not in text, f"{kind} {name}: {python_speak!r} in\n{text}"


def test_the_list_of_mitigations_names_each_paper_and_purpose() -> None:
    lines = CliRunner().invoke(app, ["mitigations"]).stdout.splitlines()
    by_name = {ln.split()[0]: ln for ln in lines[:-1]}
    assert set(by_name) == set(registered("mitigation"))
    assert (
        "[Ohi et al. 2024]" in by_name["highest-rs-demos"]
        and "[Shen et al. 2023]" in by_name["agreement-gate"]
    )


def test_a_required_parameter_and_fitted_state_are_told_apart() -> None:
    row = json.loads(CliRunner().invoke(app, ["selectors", "fixed", "--json"]).stdout)
    ids = next(p for p in row["parameters"] if p["name"] == "ids")
    assert ids["required"] is True and "default" not in ids
    assert [p["name"] for p in row["parameters"]] == [
        n for n in registered("selector")["fixed"].model_fields if not n.endswith("_")
    ]
    assert "pool_" in registered("selector")["fixed"].model_fields  # fitted state exists, and is not listed


def test_list_without_a_kind_counts_each_kind() -> None:
    result = CliRunner().invoke(app, ["list", "--json"])
    assert json.loads(result.stdout) == {k: len(registered(k)) for k in KIND_PACKAGES}


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (["list", "widgets"], "expected a kind of component"),
        (["mitigations", "no-such-thing"], "unknown mitigation 'no-such-thing'; expected one of"),
    ],
)
def test_an_unknown_kind_or_name_is_one_line_listing_what_exists(args: list[str], expected: str) -> None:
    result = CliRunner().invoke(app, args)
    assert (
        result.exit_code == 2 and expected in result.stderr and len(result.stderr.strip().splitlines()) == 1
    )


@pytest.mark.parametrize(
    ("text", "hint"),
    [
        ("granularity(scale=100)", " (did you mean '1-100'?)"),
        ("granularity(scale=10)", " (did you mean '1-10'?)"),
        ("granularity(scale=1)", ""),  # 1 is part of every option: ambiguous, no hint
    ],
)
def test_a_refused_option_names_the_accepted_values_and_the_one_it_plainly_meant(
    text: str, hint: str
) -> None:
    with pytest.raises(ConfigError) as exc:
        parse_pipeline(text)
    value = text.split("=")[1].rstrip(")")
    assert str(exc.value) == (
        f"The 'scale' parameter of mitigation 'granularity' must be one of '1-5', '1-10', '1-100', "
        f"'modifiers'. Got {value} instead{hint}."
    )


def test_the_unquoted_range_is_the_accepted_form() -> None:
    assert parse_pipeline("granularity(scale=1-100)").steps[0].scale == "1-100"


def test_each_parameter_carries_the_sentence_its_class_docstring_gives_it() -> None:
    row = json.loads(CliRunner().invoke(app, ["mitigations", "self-consistency", "--json"]).stdout)
    described = {p["name"]: p.get("description") for p in row["parameters"]}
    assert described["n"] == "samples per item (>= 1)."
    assert described["max_tokens"].startswith("when set, the answer length limit for every leaf")
