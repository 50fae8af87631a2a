"""The ``mitigate`` command group: the Typer app, its one-line error handling, and how a command is declared.

A command is a function of one typed, frozen options value (see :mod:`mitigate.cli.options`);
:func:`command` registers it with the fields of that value as its command-line options, so
each option is declared once, and a bad value is refused when the value is built, before any
work.
"""

from __future__ import annotations

import dataclasses
import inspect
import os
import sys
import warnings
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Annotated, Any, TypeVar, get_type_hints

import click
import typer
from typer.core import TyperCommand, TyperGroup

from mitigate.cli.config import CONFIG_HELP, PLUGIN_HELP, SAVE_HELP, read_config, write_config
from mitigate.cli.errors import (
    DEBUG_ENV,
    EXIT_FAILED,
    EXIT_INTERRUPTED,
    EXIT_REFUSED,
    report_error,
    say_error,
    show_warning,
)
from mitigate.cli.files import writable_file
from mitigate.cli.options import fill_registered_names


def _usage_error_classes() -> tuple[tuple[type[Exception], ...], tuple[type[Exception], ...]]:
    """(usage errors, "no arguments: show help") classes: click's, and those of the click copy recent typer ships."""
    found: list[type[Exception]] = [click.ClickException]
    help_only: list[type[Exception]] = [click.exceptions.NoArgsIsHelpError]
    vendored = next((c for c in typer.BadParameter.__mro__ if c.__name__ == "ClickException"), None)
    if vendored is not None and vendored is not click.ClickException:
        found.append(vendored)
        extra = getattr(sys.modules.get(vendored.__module__), "NoArgsIsHelpError", None)
        if isinstance(extra, type):
            help_only.append(extra)
    return tuple(found), tuple(help_only)


_USAGE_ERRORS, _NO_ARGS = _usage_error_classes()
_ABORTS = tuple({click.exceptions.Abort, typer.Abort})


class OneLineErrors(TyperGroup):
    """The command group: turns every exception into one ``error:`` line and an exit code.

    ``--debug`` anywhere on the command line (or ``MITIGATE_DEBUG=1``) re-raises instead, so
    the traceback is shown.
    """

    def main(self, args: Sequence[str] | None = None, prog_name: str | None = None,
             complete_var: str | None = None, standalone_mode: bool = True, **extra: Any) -> Any:
        """Run the command; print one line per error and exit with :data:`EXIT_REFUSED` or :data:`EXIT_FAILED`."""
        argv = list(sys.argv[1:] if args is None else args)
        debug = "--debug" in argv or os.environ.get(DEBUG_ENV, "") not in ("", "0")
        argv = [a for a in argv if a != "--debug"]
        code = 0
        with warnings.catch_warnings():
            if not debug:
                warnings.showwarning = show_warning
            try:
                rv = super().main(args=argv, prog_name=prog_name, complete_var=complete_var,
                                  standalone_mode=False, **extra)
                code = rv if isinstance(rv, int) else 0
            except _NO_ARGS as exc:
                ctx = getattr(exc, "ctx", None)
                typer.echo(ctx.get_help() if ctx is not None else "")
                code = EXIT_REFUSED
            except _USAGE_ERRORS as exc:  # usage errors: unknown option, value not an int ...
                ctx = getattr(exc, "ctx", None)
                hint = f" (see '{ctx.command_path} --help')" if ctx is not None else ""
                say_error(exc.format_message() + hint)  # type: ignore[attr-defined]
                code = int(getattr(exc, "exit_code", EXIT_REFUSED))
            except _ABORTS:
                say_error("aborted")
                code = EXIT_FAILED
            except KeyboardInterrupt:
                say_error("interrupted; a run with --run-dir (or --out) resumes where it stopped")
                code = EXIT_INTERRUPTED
            except Exception as exc:
                if debug:
                    raise
                code = report_error(exc)
        if standalone_mode:
            sys.exit(code)
        return code


app = typer.Typer(
    cls=OneLineErrors,
    add_completion=False,
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    help="Make LLM-as-a-judge evaluators less biased and more consistent, and measure it.",
)


@app.callback()
def _root(
    debug: Annotated[bool, typer.Option("--debug", help="show the traceback of an error instead of one line "
                                        "(also: MITIGATE_DEBUG=1); accepted anywhere on the command line")] = False,
) -> None:
    """Make LLM-as-a-judge evaluators less biased and more consistent, and measure it."""


class RegisteredNamesHelp(TyperCommand):
    """A command whose option help may name what is registered (``--engine``: the search engines ...).

    Those names are looked up when this command's help is printed
    (:func:`~mitigate.cli.options.fill_registered_names`), not when the command is registered,
    so ``mitigate --help`` and the other commands never import the packages that hold them.
    """

    def format_help(self, ctx: Any, formatter: Any) -> None:
        """The help, with the registered names filled into the option texts first."""
        for param in self.params:
            text = getattr(param, "help", None)
            if isinstance(text, str) and "{registered" in text:
                param.help = fill_registered_names(text)  # type: ignore[attr-defined]
        super().format_help(ctx, formatter)


OptionsT = TypeVar("OptionsT")

EXTRA_PARAMETERS = ("ctx", "plugin", "config_file", "save_config")
"""The parameters :func:`command` adds to every command; no options field may take these names."""


def _explicit(ctx: Any, names: Iterable[str]) -> set[str]:
    """The parameters the user gave (command line or environment), as against those left at their default."""
    out = set()
    for name in names:
        source = ctx.get_parameter_source(name)
        if source is not None and source.name in ("COMMANDLINE", "ENVIRONMENT", "PROMPT"):
            out.add(name)
    return out


def command(name: str, options: type[OptionsT], *, config: bool = True
            ) -> Callable[[Callable[[OptionsT], None]], Callable[[OptionsT], None]]:
    """Register ``fn(options_value)`` as the command ``name``; its options are the fields of ``options``.

    ``options`` is a frozen dataclass whose fields are annotated the Typer way
    (``Annotated[int, typer.Option(...)] = default``), in the order ``--help`` lists them.
    Typer parses the command line into those fields; the dataclass checks them when built
    (a bad value is one ``error:`` line, exit 2); ``fn`` receives the built value. The help
    text of the command is ``fn``'s docstring.

    Every command also takes ``--plugin MODULE`` (imported before the options are built, so
    its components can be named). With ``config`` (the default) it takes ``-f/--config FILE``
    and ``--save-config FILE`` (:mod:`mitigate.cli.config`): the file's options apply where
    the command line leaves an option at its default.
    """
    hints = get_type_hints(options, include_extras=True)
    fields = [f for f in dataclasses.fields(options) if f.init]  # type: ignore[arg-type]
    clash = sorted({f.name for f in fields} & set(EXTRA_PARAMETERS))
    if clash:
        raise TypeError(f"{options.__name__} may not have fields named {clash}: command() adds those parameters")
    params = [inspect.Parameter(f.name, inspect.Parameter.KEYWORD_ONLY, annotation=hints[f.name],
                                default=inspect.Parameter.empty if f.default is dataclasses.MISSING else f.default)
              for f in fields]
    extra = [
        inspect.Parameter("ctx", inspect.Parameter.KEYWORD_ONLY, annotation=typer.Context),
        inspect.Parameter("plugin", inspect.Parameter.KEYWORD_ONLY, default=None, annotation=Annotated[
            list[str] | None, typer.Option("--plugin", help=PLUGIN_HELP)]),
    ]
    if config:
        extra += [
            inspect.Parameter("config_file", inspect.Parameter.KEYWORD_ONLY, default=None, annotation=Annotated[
                Path | None, typer.Option("--config", "-f", help=CONFIG_HELP)]),
            inspect.Parameter("save_config", inspect.Parameter.KEYWORD_ONLY, default=None, annotation=Annotated[
                Path | None, typer.Option("--save-config", help=SAVE_HELP)]),
        ]

    def register(fn: Callable[[OptionsT], None]) -> Callable[[OptionsT], None]:
        def parsed(**values: Any) -> None:  # typer reads the parameters from __signature__ below
            ctx, plugin = values.pop("ctx"), values.pop("plugin", None)
            config_file, save_config = values.pop("config_file", None), values.pop("save_config", None)
            from_file = read_config(config_file, options, name) if config_file is not None else None
            plugins = list(dict.fromkeys([*(from_file.plugins if from_file else ()), *(plugin or [])]))
            if plugins:
                from mitigate.registry import load_plugin  # lazy: a command without --plugin may not need it

            for module in plugins:  # before the options are built: a plugin's names are then known
                load_plugin(module)
            given = _explicit(ctx, values)
            file_values = from_file.values if from_file else {}
            value = options(**{**values, **{k: v for k, v in file_values.items() if k not in given}})
            if save_config is not None:
                writable_file(save_config, "--save-config")
                path = write_config(save_config, value, given | set(file_values), plugins, name)
                typer.echo(f"wrote {path} (run it with: mitigate {name} -f {path})", err=True)
                return
            fn(value)

        parsed.__signature__ = inspect.Signature(extra[:1] + params + extra[1:])  # type: ignore[attr-defined]
        parsed.__doc__ = fn.__doc__
        parsed.__name__ = fn.__name__
        app.command(name, cls=RegisteredNamesHelp)(parsed)
        return fn

    return register


def main() -> None:  # pragma: no cover - console entry
    """Entry point for ``python -m mitigate``."""
    typer.main.get_command(app).main(prog_name="mitigate")


__all__ = ["EXIT_FAILED", "EXIT_REFUSED", "OneLineErrors", "RegisteredNamesHelp", "app", "command", "main"]
