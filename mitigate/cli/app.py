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
from collections.abc import Callable, Sequence
from typing import Annotated, Any, TypeVar, get_type_hints

import click
import typer
from typer.core import TyperGroup

from mitigate.cli.errors import (
    DEBUG_ENV,
    EXIT_FAILED,
    EXIT_INTERRUPTED,
    EXIT_REFUSED,
    report_error,
    say_error,
    show_warning,
)


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


OptionsT = TypeVar("OptionsT")


def command(name: str, options: type[OptionsT]) -> Callable[[Callable[[OptionsT], None]], Callable[[OptionsT], None]]:
    """Register ``fn(options_value)`` as the command ``name``; its options are the fields of ``options``.

    ``options`` is a frozen dataclass whose fields are annotated the Typer way
    (``Annotated[int, typer.Option(...)] = default``), in the order ``--help`` lists them.
    Typer parses the command line into those fields; the dataclass checks them when built
    (a bad value is one ``error:`` line, exit 2); ``fn`` receives the built value. The help
    text of the command is ``fn``'s docstring.
    """
    hints = get_type_hints(options, include_extras=True)
    params = [inspect.Parameter(f.name, inspect.Parameter.KEYWORD_ONLY, annotation=hints[f.name],
                                default=inspect.Parameter.empty if f.default is dataclasses.MISSING else f.default)
              for f in dataclasses.fields(options)  # type: ignore[arg-type]
              if f.init]

    def register(fn: Callable[[OptionsT], None]) -> Callable[[OptionsT], None]:
        def parsed(**values: Any) -> None:
            fn(options(**values))

        parsed.__signature__ = inspect.Signature(params)  # type: ignore[attr-defined]
        parsed.__doc__ = fn.__doc__
        parsed.__name__ = fn.__name__
        app.command(name)(parsed)
        return fn

    return register


def main() -> None:  # pragma: no cover - console entry
    """Entry point for ``python -m mitigate``."""
    typer.main.get_command(app).main(prog_name="mitigate")


__all__ = ["EXIT_FAILED", "EXIT_REFUSED", "OneLineErrors", "app", "command", "main"]
