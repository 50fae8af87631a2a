"""Each command-line option declared once, in groups the commands compose; what a command line accepts
unchanged.

- Every option is one ``option(...)`` call in mitigate/cli (read from the source, so a module no
  test imports counts too); no other ``typer.Option`` or ``typer.Argument`` is written there.
- Every command's options (flags, types, defaults, repeatable or not, required or not) equal
  tests/fixtures/cli_options.json, captured from the commands before the options were grouped. A change
  meant to add or alter an option rewrites it (``python tests/cli/test_cli_options_declared.py``); review its
  diff.
- The component names the command line acts on come from the registry (tags, backend facts),
  never from a list of names in mitigate/cli.
"""

from __future__ import annotations

import ast
import dataclasses
import importlib
import inspect
import json
from pathlib import Path
from typing import Annotated, get_args

import click
import pytest
import typer
from typer.testing import CliRunner

from mitigate import registry
from mitigate.cli import app
from mitigate.cli._build import scoring_for
from mitigate.cli._commands import COMMANDS
from mitigate.cli.options import _backend as backend_options
from mitigate.cli.options import _prompt as prompt_options
from mitigate.cli.options._backend import ServerOptions, check_backend, check_batch
from mitigate.cli.options._declare import DECLARED, CommandOptions, Override, option, parameters
from mitigate.cli.options._task import TaskOptions
from mitigate.errors import ConfigError
from mitigate.lm import declare
from mitigate.lm._registry import Backend
from mitigate.prompt import JudgePrompt
from mitigate.strategies import parse_pipeline
from mitigate.testing import example_judge, example_train, registered_examples
from mitigate.testing._examples import example_pairwise_judge, example_pairwise_train, fitting_lm

ROOT = Path(__file__).resolve().parents[2]
CLI = ROOT / "mitigate" / "cli"
FIXTURE = ROOT / "tests" / "fixtures" / "cli_options.json"


def _modules() -> list[tuple[Path, ast.Module]]:
    return [(path, ast.parse(path.read_text(encoding="utf-8"))) for path in sorted(CLI.rglob("*.py"))]


def _call_name(node: ast.Call) -> str:
    return (
        node.func.id
        if isinstance(node.func, ast.Name)
        else (node.func.attr if isinstance(node.func, ast.Attribute) else "")
    )


def _declared_flag(node: ast.Call) -> str | None:
    """The long flag an ``option("name", "--flag", "-f", help=...)`` call declares; None for another call."""
    if _call_name(node) != "option" or not node.args or not isinstance(node.args[0], ast.Constant):
        return None
    flags = [a.value for a in node.args[1:] if isinstance(a, ast.Constant) and str(a.value).startswith("--")]
    return flags[0] if flags else "--" + str(node.args[0].value).replace("_", "-")


# --------------------------------------------------------------------------- declared once


TWO_MEANINGS = {"--engine"}
"""Flags two commands use for different things: ``search --engine`` (the search engine: random, greedy,
dspy) and ``judge --engine`` (where judgments run: process or ray). A command has at most one of them (typer
refuses a command declaring a flag twice)."""


def test_every_option_is_declared_once_in_the_source():
    seen: dict[str, list[str]] = {}
    for path, tree in _modules():
        for node in ast.walk(tree):
            if isinstance(node, ast.Call) and (flag := _declared_flag(node)) is not None:
                seen.setdefault(flag, []).append(f"{path.relative_to(ROOT)}:{node.lineno}")
    twice = {flag: where for flag, where in seen.items() if len(where) > 1 and flag not in TWO_MEANINGS}
    assert twice == {}, f"declared more than once: {twice}"
    for flag in TWO_MEANINGS:  # each meaning declared once, and no command takes both
        assert len(seen.get(flag, [])) == 2, (flag, seen.get(flag))
    taken = {
        flag
        for rows in _surface().values()
        for row in rows.values()
        for flag in row[1].split()
        if flag.startswith("--")
    } - {"--help"}
    assert set(seen) == taken | {"--debug"}  # every option of every command (and the group's --debug), once


def test_no_option_is_written_outside_its_declaration():
    raw = [
        f"{path.relative_to(ROOT)}:{node.lineno}"
        for path, tree in _modules()
        for node in ast.walk(tree)
        if isinstance(node, ast.Call)
        and _call_name(node) in ("Option", "Argument")
        and path.name != "_declare.py"
    ]
    assert raw == [], f"typer.Option/typer.Argument written outside mitigate/cli/options/_declare.py: {raw}"


def test_every_parameter_of_every_command_comes_from_one_declaration():
    for name in COMMANDS:
        importlib.import_module(COMMANDS[name].module)
    assert {
        flag: [o.where for o in opts]
        for flag, opts in DECLARED.items()
        if len(opts) > 1 and flag not in TWO_MEANINGS
    } == {}
    group = typer.main.get_command(app)
    root = click.Context(group, info_name="mitigate")
    declared = set(DECLARED)
    for name in COMMANDS:
        command = group.get_command(root, name)  # type: ignore[attr-defined]
        subcommands = getattr(command, "commands", {}) or {name: command}
        for sub in subcommands.values():
            for param in sub.params:
                if param.param_type_name == "option" and param.name != "help":
                    long = next(o for o in param.opts if o.startswith("--"))
                    assert long in declared, (name, long)


def test_the_lm_server_options_are_one_group_every_lm_command_composes():
    from mitigate.cli._compare import CompareOptions
    from mitigate.cli._diff import DiffOptions
    from mitigate.cli._estimate import EstimateOptions
    from mitigate.cli._judge import JudgeOptions
    from mitigate.cli._probe import ProbeOptions
    from mitigate.cli._search import SearchOptions

    server = [f.name for f in dataclasses.fields(ServerOptions)]
    assert {"timeout", "deadline", "max_response_bytes", "max_prompt_chars", "patience", "transport"} <= set(
        server
    )
    for cls in (JudgeOptions, CompareOptions, SearchOptions, ProbeOptions, DiffOptions, EstimateOptions):
        assert issubclass(cls, ServerOptions), cls
        own = set(vars(cls).get("__annotations__", {}))
        assert own.isdisjoint(
            {
                "timeout",
                "deadline",
                "max_response_bytes",
                "max_prompt_chars",
                "max_samples",
                "patience",
                "transport",
                "guided",
            }
        ), (cls, own)
    for cls in (JudgeOptions, CompareOptions, SearchOptions, ProbeOptions, EstimateOptions):
        assert issubclass(cls, TaskOptions)


def test_no_options_class_repeats_a_field_it_inherits_unchanged():
    classes = {c for c in _all_options_classes() for c in c.__mro__ if dataclasses.is_dataclass(c)}
    for cls in classes:
        own = vars(cls).get("__annotations__", {})
        for base in cls.__mro__[1:]:
            if not dataclasses.is_dataclass(base):
                continue
            inherited = {f.name: f for f in dataclasses.fields(base)}
            for name in own:
                if name in inherited:
                    mine = next(f for f in dataclasses.fields(cls) if f.name == name)
                    same_type = str(mine.type) == str(inherited[name].type)
                    assert not (same_type and mine.default == inherited[name].default), (
                        f"{cls.__name__}.{name} repeats {base.__name__}.{name} unchanged"
                    )


def _all_options_classes() -> list[type]:
    out = []
    for entry in COMMANDS.values():
        module = importlib.import_module(entry.module)
        out += [
            v
            for v in vars(module).values()
            if isinstance(v, type) and issubclass(v, CommandOptions) and v.__module__ == module.__name__
        ]
    return out


def test_a_field_without_a_declaration_or_renaming_its_option_is_refused_when_its_command_is_read():
    flag = option("test_declared_once_only", help="a test option")
    try:

        def options_class(name: str, field: str, annotation: object) -> type:
            return dataclasses.make_dataclass(
                name, [(field, annotation, 0)], bases=(CommandOptions,), frozen=True
            )

        Bare = options_class("Bare", "plain", int)
        Misnamed = options_class("Misnamed", "other", Annotated[int, flag])
        Renamed = options_class(
            "Renamed", "test_declared_once_only", Annotated[int, flag, Override(flags=("--another",))]
        )
        for cls, expected in (
            (Bare, "must name one declared option"),
            (Misnamed, "uses the declaration of"),
            (Renamed, "not rename it"),
        ):
            with pytest.raises(TypeError, match=expected):
                parameters(cls)
    finally:
        DECLARED.pop("--test-declared-once-only")


def test_an_override_changes_what_one_command_shows_and_nothing_else():
    limit = next(p for p in parameters(TaskOptions) if p.name == "limit")
    from mitigate.cli._probe import ProbeOptions

    probe_limit = next(p for p in parameters(ProbeOptions) if p.name == "limit")
    assert probe_limit.opt is limit.opt  # the one declaration
    assert (limit.default, probe_limit.default) == (0, 20)
    assert probe_limit.override is not None and "probe the first N" in str(probe_limit.override.help)
    assert probe_limit.accepts == limit.accepts
    with pytest.raises(ConfigError, match="The '--limit' parameter of mitigate probe must be an int >= 0"):
        ProbeOptions(limit=-1)


@pytest.mark.parametrize(
    ("field", "other"),
    [("judge", "mitigate.cli._data:DataConvertOptions"), ("plot", "mitigate.cli._search:SearchOptions")],
)
def test_estimate_shows_the_one_declaration_another_command_has_in_its_own_words(field, other):
    from mitigate.cli._estimate import EstimateOptions

    module, name = other.split(":")
    theirs = next(p for p in parameters(getattr(importlib.import_module(module), name)) if p.name == field)
    mine = next(p for p in parameters(EstimateOptions) if p.name == field)
    assert mine.opt is theirs.opt and len(DECLARED[mine.opt.flag]) == 1
    assert mine.override is not None and mine.override.help != theirs.opt.help


# --------------------------------------------------------------------------- the same command line as before


def _surface() -> dict[str, dict[str, list]]:
    """Every command's parameters: kind, flags, type, default, repeatable, flag, required (help texts left
    out)."""
    group = typer.main.get_command(app)
    root = click.Context(group, info_name="mitigate")
    out: dict[str, dict[str, list]] = {}

    def walk(grp: click.Command, ctx: click.Context, prefix: str) -> None:
        for name in grp.list_commands(ctx):  # type: ignore[attr-defined]
            cmd = grp.get_command(ctx, name)  # type: ignore[attr-defined]
            sub = click.Context(cmd, info_name=name, parent=ctx)
            path = f"{prefix} {name}".strip()
            if hasattr(cmd, "list_commands"):
                walk(cmd, sub, path)
                continue
            rows = {}
            for p in cmd.get_params(sub):
                default = p.default
                if isinstance(default, (list, tuple)):
                    default = [str(d) for d in default]
                elif default is not None and not isinstance(default, (bool, int, float, str)):
                    default = str(default)
                kind = str(getattr(getattr(p, "type_descriptor", None), "annotation", None))
                kind = (
                    kind.replace("typing.", "")
                    .replace("<class '", "")
                    .replace("'>", "")
                    .replace("pathlib.", "")
                )
                rows[p.name] = [
                    p.param_type_name,
                    " ".join([*p.opts, *(f"/{s}" for s in p.secondary_opts)]),
                    kind,
                    default,
                    bool(getattr(p, "multiple", False)),
                    bool(getattr(p, "is_flag", False)),
                    p.required,
                ]
            out[path] = rows

    walk(group, root, "")
    return out


def test_every_command_takes_the_same_options_with_the_same_types_and_defaults_as_before():
    before = json.loads(FIXTURE.read_text(encoding="utf-8"))
    now = _surface()
    assert sorted(now) == sorted(before)
    for command in before:
        assert now[command] == before[command], command


def test_a_config_file_reads_and_writes_every_option_under_its_name(tmp_path):
    from mitigate.cli._config import option_fields
    from mitigate.cli._judge import JudgeOptions

    before = json.loads(FIXTURE.read_text(encoding="utf-8"))["judge"]
    keys = set(option_fields(JudgeOptions))
    assert keys == set(before) - {"help", "help_all", "plugin", "config_file", "save_config"}
    # a choice is read as text, then checked as on the line
    assert option_fields(JudgeOptions)["scoring"] is str
    saved = tmp_path / "run.toml"
    result = CliRunner().invoke(
        app,
        [
            "judge",
            "--scoring",
            "parse",
            "--transport",
            "direct",
            "--backend",
            "openai:m",
            "-n",
            "3",
            "--save-config",
            str(saved),
        ],
    )
    assert result.exit_code == 0, result.output
    assert saved.read_text().splitlines()[2:] == [
        "limit = 3",
        'backend = "openai:m"',
        'transport = "direct"',
        'scoring = "parse"',
    ]


# --------------------------------------------------------------------------- choices typed as Literal


def test_the_choices_are_the_librarys_own():
    from mitigate.cli import _estimate as estimate
    from mitigate.cli._search import Agreement, Consistency
    from mitigate.estimators import Method
    from mitigate.estimators._calibration import Calibration
    from mitigate.estimators._columns import By
    from mitigate.estimators._mean import Target
    from mitigate.judge import JudgeConfig, Reducer
    from mitigate.lm._openai import GuidedServer, Transport
    from mitigate.search import Objective

    assert get_args(backend_options.Transport) == get_args(Transport)
    assert get_args(backend_options.Guided) == get_args(GuidedServer)
    assert get_args(prompt_options.Reducer) == get_args(Reducer)
    assert get_args(prompt_options.Constrain) == get_args(JudgeConfig.model_fields["constrain"].annotation)
    assert get_args(prompt_options.Scoring) == (
        "auto",
        *get_args(JudgeConfig.model_fields["scoring"].annotation),
    )
    assert get_args(Agreement) == get_args(Objective.model_fields["agreement"].annotation)
    assert get_args(Consistency) == get_args(Objective.model_fields["consistency"].annotation)
    assert [get_args(t) for t in (estimate.Method, estimate.Target, estimate.Calibration, estimate.By)] == [
        get_args(t) for t in (Method, Target, Calibration, By)
    ]


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (
            ["search", "--agreement", "spearmen"],
            "The '--agreement' parameter of mitigate search must be one of",
        ),
        (["prompts", "--guided", "vllm2"], "The '--guided' parameter of mitigate prompts must be one of"),
        (["judge", "--scoring", "Expected"], "(did you mean 'expected'?)"),
        (
            ["estimate", "--released", "chatgpt-rts", "--method", "PPI"],
            "The '--method' parameter of mitigate estimate must be one of",
        ),
    ],
)
def test_a_choice_out_of_its_literal_is_refused_before_any_work_naming_the_option(args, expected):
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 2 and expected in result.stderr, result.output


# --------------------------------------------------------------------------- the registry's facts, not names


@pytest.fixture
def plugin_backends():
    """Two backends a plugin registers: a network one with a batch API that takes --transport, and a local
    one."""

    def build(spec, rest, has_colon, kwargs):  # pragma: no cover - never built here
        raise AssertionError("not built")

    registry.add(
        "backend",
        "cloudy",
        Backend(
            ("cloudy:<model>",),
            build,
            network=True,
            options=("transport",),
            batch=True,
            about="a test provider",
        ),
    )
    registry.add("backend", "nearby", Backend(("nearby",), build))
    try:
        yield
    finally:
        for name in ("cloudy", "nearby"):
            registry._REGISTRY["backend"].pop(name)


def test_which_backend_takes_which_option_is_read_from_the_registry(plugin_backends):
    from mitigate.cli._judge import JudgeOptions

    ok = JudgeOptions(
        backend="cloudy:m",
        base_url=["http://x"],
        timeout=3.0,
        transport="direct",
        batch=True,
        run_dir=Path("run"),
    )
    assert ok.backend == "cloudy:m"
    with pytest.raises(
        ConfigError,
        match=r"--base-url applies to the openai, anthropic, dspy, cloudy backends; "
        r"got --backend 'nearby'",
    ):
        JudgeOptions(backend="nearby", base_url=["http://x"])
    with pytest.raises(
        ConfigError,
        match=r"--transport applies to openai:<model>, cloudy:<model> backends \(the "
        r"OpenAI API and OpenAI-compatible servers such as vLLM; a "
        r"test provider\)",
    ):
        JudgeOptions(backend="nearby", transport="direct")
    with pytest.raises(
        ConfigError,
        match="batch mode needs an 'openai:<model>' or 'anthropic:<model>' or 'cloudy:<model>' backend",
    ):
        check_batch("nearby", True, 0, folder=Path("run"))


def test_the_shipped_backends_take_what_they_took_before():
    class Given:
        base_url, timeout, transport, guided = ["http://x"], 3.0, "direct", "vllm"

    for spec in ("openai:m",):
        check_backend(Given(), spec)  # type: ignore[arg-type]
    for spec, refused in (
        (
            "anthropic:m",
            "--transport applies to openai:<model> backends (the OpenAI API and "
            "OpenAI-compatible servers such as vLLM); got --backend "
            "'anthropic:m'",
        ),
        ("local", "--base-url applies to the openai, anthropic, dspy backends; got --backend 'local'"),
        ("replay:x", "--base-url applies"),
        ("fake", "--base-url applies"),
    ):
        with pytest.raises(ConfigError) as exc:
            check_backend(Given(), spec)  # type: ignore[arg-type]
        assert refused in str(exc.value)


def test_judge_sends_its_limits_to_every_network_backend_the_registry_names():
    from mitigate.cli._build import build_backend
    from mitigate.cli._judge import JudgeOptions

    lm = build_backend(
        JudgeOptions(backend="openai:m", base_url=["http://127.0.0.1:9/v1"], deadline=7.0), declared=True
    )
    assert lm.limits is not None and lm.limits.deadline == 7.0  # type: ignore[attr-defined]
    assert build_backend(JudgeOptions(backend="local"), declared=True).limits is None  # type: ignore[attr-defined]


HELP_KEYWORDS = ("help",)


def _help_or_doc_nodes(tree: ast.Module) -> set[int]:
    """Nodes that are help texts (``help=``, ``*_HELP = ...``), docstrings, ``Literal[...]`` choices or a
    ``DEFAULT_*`` constant: places where a component's name is text or a declared default, not logic."""
    skip: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.keyword) and node.arg in HELP_KEYWORDS:
            skip.update(id(n) for n in ast.walk(node.value))
        elif isinstance(node, (ast.Assign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            if (
                any(
                    isinstance(t, ast.Name) and (t.id.endswith("_HELP") or t.id.startswith("DEFAULT_"))
                    for t in targets
                )
                and node.value is not None
            ):
                skip.update(id(n) for n in ast.walk(node.value))
        elif (
            isinstance(node, ast.Subscript)
            and isinstance(node.value, ast.Name)
            and node.value.id == "Literal"
        ):
            skip.update(id(n) for n in ast.walk(node.slice))
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)) and node.body:
            first = node.body[0]
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant):
                skip.add(id(first.value))
        if (
            isinstance(node, ast.Expr)
            and isinstance(node.value, ast.Constant)
            and isinstance(node.value.value, str)
        ):
            skip.add(id(node.value))  # an attribute docstring
    return skip


def test_the_command_line_names_no_component_outside_help_texts_and_declared_defaults():
    from mitigate.data import PATH_LOADERS

    names = {
        name: kind
        for kind in (
            "mitigation",
            "selector",
            "measure",
            "engine",
            "backend",
            "benchmark",
            "released-judge",
            "probe",
        )
        for name in registry.registered(kind)
    }
    names.update({prefix: "path form" for prefix in PATH_LOADERS})
    found = []
    for path, tree in _modules():
        skip = _help_or_doc_nodes(tree)
        for node in ast.walk(tree):
            if (
                isinstance(node, ast.Constant)
                and isinstance(node.value, str)
                and node.value in names
                and id(node) not in skip
            ):
                found.append(f"{path.relative_to(ROOT)}:{node.lineno}: {node.value!r} ({names[node.value]})")
    assert found == [], "component names written into the command line's logic:\n" + "\n".join(found)


def test_the_search_draws_from_the_selectors_tagged_random_draws_by_default():
    from mitigate.cli._search import default_selectors

    assert set(default_selectors()) == {"random", "stratified"}  # what the search drew from before the tag
    assert set(default_selectors()) == {
        n for n, c in registry.registered("selector").items() if c.declared_tags.random_draws
    }


# --------------------------------------------------------------------------- adds reasoning: a tag


@pytest.mark.parametrize(
    ("pipeline", "scoring"),
    [
        ("baseline", "expected"),  # the embedded model's own answer is read from its first token
        ("sampling(temperature=0.7, n=3, cot=true)", "parse"),
        ("self-consistency", "parse"),
        ("self-consistency(cot=false)", "expected"),
        ("agreement-gate", "parse"),
        ("multiple-evidence", "parse"),  # it asks for reasons before the verdict (it has no cot parameter)
        ("single-attribute | sampling(temperature=0.5, n=2, cot=true)", "parse"),
    ],
)
def test_scoring_auto_reads_the_text_when_a_step_is_tagged_adds_reasoning(pipeline, scoring):
    class Auto:
        scoring = constrain = "auto"

    prompt = JudgePrompt.from_template("Rate the summary from 1 to 5.\n\nSummary: {{summary}}\n\nScore:")
    mode = scoring_for(Auto(), declare("local"), prompt, parse_pipeline(pipeline))  # type: ignore[arg-type]
    assert mode["scoring"] == scoring


def test_the_adds_reasoning_tag_says_whether_the_wrapped_judge_is_asked_to_reason():
    checked: set[str] = set()
    for mitigation in registered_examples(["mitigation"]):
        lm = fitting_lm()
        pairwise = mitigation.tags.pairwise_only
        judge = example_pairwise_judge(lm) if pairwise else example_judge(lm=lm)
        assert all(leaf.prompt.format.reasoning == "none" for leaf in judge.leaves())
        options = {"lm": lm} if "lm" in inspect.signature(mitigation.afit).parameters else {}
        try:
            fitted = (
                mitigation
                if mitigation.is_fitted
                else mitigation.fit(
                    example_pairwise_train() if pairwise else example_train(),
                    judge,
                    progress=False,
                    **options,
                )
            )
            wrapped = fitted.wrap(judge)
        except (ConfigError, OSError):  # an example built for another judge (demos on 'score', a model file)
            continue
        reasons = any(leaf.prompt.format.reasoning == "before" for leaf in wrapped.leaves())
        assert mitigation.tags.adds_reasoning == reasons, type(mitigation).__name__
        checked.add(type(mitigation).__name__)
    assert {"Sampling", "SelfConsistency", "AgreementGate", "MultipleEvidence", "SingleAttribute"} <= checked
    assert len(checked) >= 15


def test_declared_once_holds_for_the_options_commands_add_themselves():
    assert len(DECLARED["--plugin"]) == len(DECLARED["--config"]) == len(DECLARED["--help-all"]) == 1


def write_fixture(path: Path = FIXTURE) -> None:
    """Rewrite the fixture from the commands as they are now, one option a line (for a change meant to alter
    them)."""
    surface = _surface()
    lines = ["{"]
    for i, command in enumerate(sorted(surface)):
        rows = surface[command]
        lines.append(f" {json.dumps(command)}: {{")
        lines += [
            f"  {json.dumps(name)}: {json.dumps(rows[name])}{',' if j < len(rows) - 1 else ''}"
            for j, name in enumerate(sorted(rows))
        ]
        lines.append(" }" + ("," if i < len(surface) - 1 else ""))
    path.write_text("\n".join([*lines, "}"]) + "\n", encoding="utf-8")


if __name__ == "__main__":
    write_fixture()
