"""``mitigate check-plugin MODULE``: run the contract battery on every component a plugin module registers."""

from dataclasses import dataclass
from typing import Annotated, ClassVar

import typer

from mitigate.cli._app import command
from mitigate.cli._errors import EXIT_FAILED, flat_message
from mitigate.cli.options._declare import CommandOptions, argument
from mitigate.errors import ConfigError
from mitigate.registry import Component, load_plugin, registered
from mitigate.testing import checks_for


@dataclass(frozen=True)
class CheckPluginOptions(CommandOptions):
    """``mitigate check-plugin``: the contract battery on a plugin's components."""

    COMMAND: ClassVar[str] = "check-plugin"

    module: Annotated[str, argument("module", help="the plugin module path, e.g. my_package.judges")]


@command("check-plugin", CheckPluginOptions, config=False)
def check_plugin(options: CheckPluginOptions) -> None:
    """Import a plugin module and run mitigate's contract checks on what it registers; exit 1 on a failure."""
    found = load_plugin(options.module)
    if not found:
        raise ConfigError(
            f"plugin module {options.module!r} registered no component; expected "
            "@register(<kind>, '<name>') on a class in it (or in a module it imports)"
        )
    passed = failed = 0
    for kind, name in found:
        cls = registered(kind)[name]
        label = f"{kind}:{name}"
        if not (isinstance(cls, type) and issubclass(cls, Component)):
            typer.echo(
                f"SKIP {label}: a {type(cls).__name__}, not a Component class (the battery checks components)"
            )
            continue
        try:
            examples = cls.examples()
        except Exception as exc:  # a plugin's bug is a failed check, never a traceback
            typer.echo(f"FAIL {label} examples: {type(exc).__name__}: {flat_message(str(exc))}")
            failed += 1
            continue
        for i, example in enumerate(examples):
            for check in checks_for(example):
                try:
                    check(example)
                except Exception as exc:  # an AssertionError, or anything the component raised
                    typer.echo(
                        f"FAIL {label}[{i}] {check.name}: {type(exc).__name__}: {flat_message(str(exc))}"
                    )
                    failed += 1
                else:
                    typer.echo(f"PASS {label}[{i}] {check.name}")
                    passed += 1
    typer.echo(
        f"{options.module}: {len(found)} components, {passed} checks passed, {failed} failed", err=True
    )
    if failed:
        raise typer.Exit(code=EXIT_FAILED)
