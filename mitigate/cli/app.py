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
from typing import Annotated, Any, ClassVar, TypeVar, get_type_hints

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


HELP_ALL = "mitigate_help_all"
"""``ctx.meta`` key set by ``--help-all``: print every option, not the first-shown ones."""
MORE_OPTIONS = "More options"
"""The panel of the options a command does not show first (in ``--help-all`` and docs/cli.md)."""
HELP_PANEL = "Help"


class RegisteredNamesHelp(TyperCommand):
    """A command whose help shows the options a user needs first, grouped, and names what is registered.

    ``first`` (group title -> parameter names, from the options class's ``HELP_FIRST``) is what
    ``--help`` shows, in that order; ``--help-all`` shows every option, the rest under "More
    options" (docs/cli.md holds the same, :mod:`mitigate.cli.reference`). A command without
    ``first`` shows everything. Help texts may name what is registered (``--engine``: the
    search engines ...): those names are looked up when this command's help is printed
    (:func:`~mitigate.cli.options.fill_registered_names`), not when the command is registered,
    so ``mitigate --help`` and the other commands never import the packages that hold them.
    """

    first: ClassVar[dict[str, tuple[str, ...]]] = {}

    def grouped(self, ctx: Any, *, every: bool) -> list[tuple[str, list[Any]]]:
        """(panel title, parameters) in the order help shows them: the first-shown groups, then the rest (under
        "More options" when ``every``, else left out), then Help; arguments are always shown, first."""
        params = [p for p in self.get_params(ctx) if not getattr(p, "hidden", False)]
        helps = [p for p in params if p.name in ("help", "help_all")]
        arguments = [p for p in params if p.param_type_name == "argument"]
        options = [p for p in params if p not in helps and p not in arguments]
        if not self.first:
            return [("Arguments", arguments), ("Options", options), (HELP_PANEL, helps)]
        by_name = {p.name: p for p in options}
        panels: list[tuple[str, list[Any]]] = [("Arguments", arguments)]
        placed: set[str] = set()
        for title, names in self.first.items():
            panels.append((title, [by_name[n] for n in names if n in by_name]))
            placed.update(names)
        if every:
            panels.append((MORE_OPTIONS, [p for p in options if p.name not in placed]))
        panels.append((HELP_PANEL, helps))
        return [(title, ps) for title, ps in panels if ps]

    def format_help(self, ctx: Any, formatter: Any) -> None:
        """The help: the first-shown options grouped (every option with ``--help-all``), registered names filled."""
        for param in self.params:
            text = getattr(param, "help", None)
            if isinstance(text, str) and "{registered" in text:
                param.help = fill_registered_names(text)  # type: ignore[attr-defined]
        every = bool(ctx.meta.get(HELP_ALL))
        panels = self.grouped(ctx, every=every)
        shown = {id(p) for _, ps in panels for p in ps}
        saved = [(p, getattr(p, "rich_help_panel", None), p.hidden) for p in self.get_params(ctx)]
        epilog, params = self.epilog, self.params
        try:  # in the order of the panels (help lists a panel's options in parameter order)
            self.params = [p for _, ps in panels for p in ps if p in params] + [p for p in params if id(p) not in shown]
            for title, ps in panels:
                for p in ps:
                    p.rich_help_panel = None if title == "Arguments" else title
            for p, _, _ in saved:
                p.hidden = p.hidden or id(p) not in shown
            options = [p for p, _, _ in saved if p.param_type_name == "option" and p.name not in ("help", "help_all")]
            if self.first and not every:
                hidden = sum(1 for p in options if id(p) not in shown)
                self.epilog = (f"{len(options) - hidden} of {len(options)} options shown. Every option: "
                               f"mitigate {ctx.info_name} --help-all, or docs/cli.md.")
            super().format_help(ctx, formatter)
        finally:
            self.epilog, self.params = epilog, params
            for p, panel, hidden in saved:
                p.rich_help_panel = panel
                p.hidden = hidden


def _help_all(ctx: Any, value: bool) -> None:
    """``--help-all``: print the help with every option and exit."""
    if value and not ctx.resilient_parsing:
        ctx.meta[HELP_ALL] = True
        typer.echo(ctx.get_help())
        ctx.exit()


OptionsT = TypeVar("OptionsT")

EXTRA_PARAMETERS = ("ctx", "plugin", "help_all", "config_file", "save_config")
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
        inspect.Parameter("help_all", inspect.Parameter.KEYWORD_ONLY, default=False, annotation=Annotated[
            bool, typer.Option("--help-all", is_eager=True, expose_value=False, callback=_help_all,
                               help="show every option and exit (--help shows those needed first)")]),
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
            values.pop("help_all", None)
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
        first = dict(getattr(options, "HELP_FIRST", {}))
        unknown = sorted({n for names in first.values() for n in names}
                         - {f.name for f in fields} - set(EXTRA_PARAMETERS))
        if unknown:
            raise TypeError(f"{options.__name__}.HELP_FIRST names {unknown}, which are not its options")
        helped = type(f"{options.__name__}Help", (RegisteredNamesHelp,), {"first": first})
        app.command(name, cls=helped)(parsed)
        return fn

    return register


def main() -> None:  # pragma: no cover - console entry
    """Entry point for ``python -m mitigate``."""
    typer.main.get_command(app).main(prog_name="mitigate")


__all__ = ["EXIT_FAILED", "EXIT_REFUSED", "OneLineErrors", "RegisteredNamesHelp", "app", "command", "main"]
