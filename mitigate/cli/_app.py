"""The ``mitigate`` command group: the Typer app, its one-line error handling, how a command is declared and
loaded.

A command is a function of one frozen options value (its options class, made of the groups in
:mod:`mitigate.cli.options`); :func:`command` registers it with that value's fields as its options. The group
imports a command's module only when that command runs or shows its help
(:data:`mitigate.cli._commands.COMMANDS`), as pip's ``commands_dict`` does.
"""

from __future__ import annotations

import dataclasses
import importlib
import inspect
import os
import sys
import warnings
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, ClassVar, TypeVar

import click
import typer
from typer.core import TyperCommand, TyperGroup
from typer.models import CommandInfo

if TYPE_CHECKING:  # typer vendors its own click; its commands are that click's
    from typer._click import Command as VendoredCommand

from mitigate.cli._commands import COMMANDS
from mitigate.cli._config import CONFIG, PLUGIN, SAVE_CONFIG, read_config, write_config
from mitigate.cli._errors import (
    DEBUG_ENV,
    EXIT_FAILED,
    EXIT_INTERRUPTED,
    EXIT_REFUSED,
    report_error,
    say_error,
    show_warning,
)
from mitigate.cli._files import writable_file
from mitigate.cli.options._declare import fill_registered_names, option, parameters, typer_annotation


def _usage_error_classes() -> tuple[tuple[type[Exception], ...], tuple[type[Exception], ...]]:
    """(usage errors, "no arguments: show help") classes: click's, and those of the click typer vendors."""
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


DEFINED: dict[str, CommandInfo | typer.Typer] = {}
"""The commands (and groups, such as ``data``) the command modules imported so far define, by name."""


class LazyCommands(TyperGroup):
    """The ``mitigate`` group: every exception becomes one ``error:`` line and an exit code (``--debug``
    anywhere on the command line, or ``MITIGATE_DEBUG=1``, shows the traceback instead); the commands of
    :data:`~mitigate.cli._commands.COMMANDS` are each imported from their module when first asked for (the
    group's help lists their summaries, importing none)."""

    def main(
        self,
        args: Sequence[str] | None = None,
        prog_name: str | None = None,
        complete_var: str | None = None,
        standalone_mode: bool = True,
        windows_expand_args: bool = True,
        **extra: Any,
    ) -> Any:
        """Run the command; print one line per error and exit with its code."""
        argv = list(sys.argv[1:] if args is None else args)
        debug = "--debug" in argv or os.environ.get(DEBUG_ENV, "") not in ("", "0")
        argv = [a for a in argv if a != "--debug"]
        code = 0
        with warnings.catch_warnings():
            if not debug:
                warnings.showwarning = show_warning
            try:
                rv = super().main(
                    args=argv,
                    prog_name=prog_name,
                    complete_var=complete_var,
                    standalone_mode=False,
                    windows_expand_args=windows_expand_args,
                    **extra,
                )
                code = rv if isinstance(rv, int) else 0
                if code == EXIT_INTERRUPTED:  # typer turns Ctrl-C into exit code 130 without a word
                    _say_interrupted()
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
                _say_interrupted()
                code = EXIT_INTERRUPTED
            except Exception as exc:
                if debug:
                    raise
                code = report_error(exc)
        if standalone_mode:
            sys.exit(code)
        return code

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._loaded: dict[str, VendoredCommand] = {}
        self._listing = False

    def list_commands(self, ctx: Any) -> list[str]:
        return list(COMMANDS)

    def get_command(self, ctx: Any, cmd_name: str) -> Any:
        """The command ``cmd_name`` (a stand-in with its summary while the group's help is written)."""
        entry = COMMANDS.get(cmd_name)
        if entry is None:
            return None
        if self._listing:
            return TyperCommand(name=cmd_name, help=entry.summary)
        if cmd_name not in self._loaded:
            importlib.import_module(entry.module)
            defined = DEFINED.get(cmd_name)
            if defined is None:
                raise RuntimeError(
                    f"{entry.module} defines no command {cmd_name!r} (mitigate.cli._commands names it)"
                )
            if isinstance(defined, typer.Typer):
                self._loaded[cmd_name] = typer.main.get_command(defined)
            else:
                self._loaded[cmd_name] = typer.main.get_command_from_info(
                    defined, pretty_exceptions_short=True, rich_markup_mode=self.rich_markup_mode
                )
        return self._loaded[cmd_name]

    def format_help(self, ctx: Any, formatter: Any) -> None:
        self._listing = True
        try:
            super().format_help(ctx, formatter)
        finally:
            self._listing = False


def command_group(name: str, help: str) -> typer.Typer:
    """A group of subcommands (``mitigate data ...``), whose commands are declared with ``group=`` it."""
    group = typer.Typer(name=name, no_args_is_help=True, help=help, add_completion=False)
    DEFINED[name] = group
    return group


app = typer.Typer(
    cls=LazyCommands,
    add_completion=False,
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    help="Make LLM-as-a-judge evaluators less biased and more consistent, and measure it.",
)


DEBUG = option(
    "debug",
    "--debug",
    help="show the traceback of an error instead of one line (also: MITIGATE_DEBUG=1); "
    "accepted anywhere on the command line",
)


@app.callback()
def _root(debug: Annotated[bool, DEBUG.parameter()] = False) -> None:
    """Make LLM-as-a-judge evaluators less biased and more consistent, and measure it."""


HELP_ALL = "mitigate_help_all"  # the ``ctx.meta`` key ``--help-all`` sets: print every option
MORE_OPTIONS = "More options"  # the panel of the options not shown first (``--help-all``, docs/cli.md)
HELP_PANEL = "Help"


class RegisteredNamesHelp(TyperCommand):
    """A command whose help shows the options a user needs first, grouped, and names what is registered.

    ``first`` (panel title -> parameter names, the options class's ``HELP_FIRST``) is what ``--help`` shows;
    ``--help-all`` (and docs/cli.md) shows every option, the rest under "More options"; a command without
    ``first`` shows everything. Registered names in help texts are filled when it is printed.
    """

    first: ClassVar[dict[str, tuple[str, ...]]] = {}

    def grouped(self, ctx: Any, *, every: bool) -> list[tuple[str, list[Any]]]:
        """(panel title, parameters) as help shows them: arguments, the first-shown groups, the rest (under
        "More options" when ``every``, else left out), then Help."""
        params = [p for p in self.get_params(ctx) if not getattr(p, "hidden", False)]
        helps = [p for p in params if p.name in ("help", "help_all")]
        arguments = [p for p in params if p.param_type_name == "argument"]
        options = [p for p in params if p not in helps and p not in arguments]
        panels: list[tuple[str, list[Any]]] = [("Arguments", arguments)]
        if not self.first:
            if all(p.name != "help_all" for p in helps):  # --help alone: an option like the others
                options, helps = options + helps, []
            panels.append(("Options", options))
        else:
            by_name = {p.name: p for p in options}
            panels += [
                (title, [by_name[n] for n in names if n in by_name]) for title, names in self.first.items()
            ]
            placed = {n for names in self.first.values() for n in names}
            if every:
                panels.append((MORE_OPTIONS, [p for p in options if p.name not in placed]))
        panels.append((HELP_PANEL, helps))
        return [(title, ps) for title, ps in panels if ps]

    def format_help(self, ctx: Any, formatter: Any) -> None:
        """The help: the first-shown options grouped (every option with ``--help-all``)."""
        for param in self.params:
            text = getattr(param, "help", None)
            if isinstance(text, str) and "{registered" in text:
                param.help = fill_registered_names(text)  # type: ignore[attr-defined]
        every = bool(ctx.meta.get(HELP_ALL))
        panels = self.grouped(ctx, every=every)
        shown = {id(p) for _, ps in panels for p in ps}
        # click options, typer options and arguments: all hideable
        shown_params: list[Any] = self.get_params(ctx)
        saved = [(p, getattr(p, "rich_help_panel", None), p.hidden) for p in shown_params]
        epilog, params = self.epilog, self.params
        try:  # in the order of the panels (help lists a panel's options in parameter order)
            self.params = [p for _, ps in panels for p in ps if p in params] + [
                p for p in params if id(p) not in shown
            ]
            for title, ps in panels:
                for p in ps:
                    p.rich_help_panel = None if title == "Arguments" else title
            for p, _, _ in saved:
                p.hidden = p.hidden or id(p) not in shown
            options = [
                p for p, _, _ in saved if p.param_type_name == "option" and p.name not in ("help", "help_all")
            ]
            if self.first and not every:
                self.epilog = (
                    f"{sum(id(p) in shown for p in options)} of {len(options)} options shown. Every option: "
                    f"mitigate {ctx.info_name} --help-all, or docs/cli.md."
                )
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


HELP_ALL_OPTION = option(
    "help_all",
    "--help-all",
    help="show every option and exit (--help shows those needed first)",
    is_eager=True,
    expose_value=False,
    callback=_help_all,
)

OptionsT = TypeVar("OptionsT")

EXTRA_PARAMETERS = ("ctx", "plugin", "help_all", "config_file", "save_config")
"""The parameters :func:`command` adds to a command; no options field may take these names."""


def _explicit(ctx: Any, names: Iterable[str]) -> set[str]:
    """The parameters the user gave (command line or environment), not left at their default."""
    given = ("COMMANDLINE", "ENVIRONMENT", "PROMPT")
    return {n for n in names if (source := ctx.get_parameter_source(n)) and source.name in given}


def _parameter(name: str, annotation: Any, default: Any = inspect.Parameter.empty) -> inspect.Parameter:
    return inspect.Parameter(name, inspect.Parameter.KEYWORD_ONLY, annotation=annotation, default=default)


def command(
    name: str,
    options: type[OptionsT],
    *,
    config: bool = True,
    group: typer.Typer | None = None,
    plugins: bool = True,
) -> Callable[[Callable[[OptionsT], None]], Callable[[OptionsT], None]]:
    """Register ``fn(options_value)`` as the command ``name`` (its help: ``fn``'s docstring); its options are
    the fields of ``options``, a :class:`~mitigate.cli.options._declare.CommandOptions` that checks them when
    built. ``group``: the command group (:func:`command_group`) it belongs to, if not ``mitigate``.

    With ``plugins`` the command also takes ``--plugin MODULE`` (imported before the options are built) and
    ``--help-all``; with ``config`` too, ``-f/--config FILE`` and ``--save-config FILE``
    (:mod:`mitigate.cli._config`): the file's options apply where the command line leaves the default.
    """
    fields = parameters(options)  # type: ignore[arg-type]  # a class is hashable (mypy reads its instances')
    clash = sorted({p.name for p in fields} & set(EXTRA_PARAMETERS))
    if clash:
        raise TypeError(
            f"{options.__name__} may not have fields named {clash}: command() adds those parameters"
        )
    params = [
        _parameter(
            p.name,
            Annotated[typer_annotation(p.type), p.opt.parameter(p.override)],
            inspect.Parameter.empty if p.default is dataclasses.MISSING else p.default,
        )
        for p in fields
    ]
    extra = [_parameter("ctx", typer.Context)]
    if plugins:
        extra += [
            _parameter("plugin", Annotated[list[str] | None, PLUGIN.parameter()], None),
            _parameter("help_all", Annotated[bool, HELP_ALL_OPTION.parameter()], False),
        ]
    if config and plugins:
        extra += [
            _parameter("config_file", Annotated[Path | None, CONFIG.parameter()], None),
            _parameter("save_config", Annotated[Path | None, SAVE_CONFIG.parameter()], None),
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
        unknown = sorted(
            {n for names in first.values() for n in names} - {p.name for p in fields} - set(EXTRA_PARAMETERS)
        )
        if unknown:
            raise TypeError(f"{options.__name__}.HELP_FIRST names {unknown}, which are not its options")
        helped = type(f"{options.__name__}Help", (RegisteredNamesHelp,), {"first": first})
        if group is not None:
            group.command(name, cls=helped)(parsed)
        else:
            DEFINED[name] = CommandInfo(name=name, cls=helped, callback=parsed)
        return fn

    return register


def _say_interrupted() -> None:
    """The one line after Ctrl-C, unless the run folder already said what it kept."""
    from mitigate.cli._files import INTERRUPTED

    if not INTERRUPTED["said"]:
        say_error(
            "interrupted: no run folder keeps the judgments made (the LM cache keeps the answers received, "
            "so the same command again reuses them); pass --run-dir DIR (or --out) to resume a run exactly"
        )


def main() -> None:  # pragma: no cover - console entry
    """Entry point for ``python -m mitigate``."""
    typer.main.get_command(app).main(prog_name="mitigate")
