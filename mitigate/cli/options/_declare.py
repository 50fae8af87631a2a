"""How a command-line option is declared once and used by every command that has it.

An option is declared once, by :func:`option` (or :func:`argument`): its flags, its help text and the
values it accepts, in the module of the group it belongs to or, for an option only one command has,
beside that command's options class. A field of an options class uses it in its annotation and gives
the type and default the command holds::

    Limit = Annotated[int, option("limit", "--limit", "-n", help="...", accepts=(Interval(int, 0, None),))]

    limit: Limit = 0                                                         # a group's field
    limit: Annotated[Limit, Override(help="probe the first N items ...")] = 20  # one command's wording

A command rewords an option with an :class:`Override`, never a second declaration (:data:`DECLARED`;
tests/cli/test_cli_options_declared.py fails on a flag declared twice). :func:`parameters` reads an options
class into its :class:`Param` values in the order ``--help`` lists them, and :class:`CommandOptions` checks
each value when the options are built. A choice is typed as a ``Literal``: its values are what the option
accepts, read as text, so a refused value gets the same one-line error as any other.
"""

from __future__ import annotations

import dataclasses
import functools
import inspect
import re
import sys
import types
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Annotated, Any, ClassVar, Literal, Union, get_args, get_origin, get_type_hints

from mitigate.constraints import ConstraintLike, Options, check_param

DECLARED: dict[str, list[Opt]] = {}
"""Each flag (``--limit``) -> its declarations, in import order: one each (arguments are per command)."""


@dataclass(frozen=True)
class Opt:
    """One command-line option (or argument), declared once: its flags, help text and accepted values.

    ``name`` is the field name every options class holds it under (and a config file's key); ``flags`` the
    command line's (none: ``--name``, ``--name/--no-name`` for a boolean); ``accepts`` the forms a value (each
    element of a list) may take; ``settings`` go to ``typer.Option`` as they are (``is_eager`` ...).
    """

    name: str
    flags: tuple[str, ...]
    help: str
    accepts: tuple[ConstraintLike, ...] = ()
    is_argument: bool = False
    settings: tuple[tuple[str, Any], ...] = ()
    where: str = ""  # ``module:line`` of the declaration

    @property
    def flag(self) -> str:
        """The option's long flag (``--limit``), or an argument's name (``NAME``): what identifies it."""
        if self.is_argument:
            return self.name.upper()
        long = [f.split("/")[0] for f in self.flags if f.startswith("--")]
        return long[0] if long else "--" + self.name.replace("_", "-")

    def parameter(self, override: Override | None = None) -> Any:
        """A new ``typer.Option`` (or ``typer.Argument``) of this declaration, as ``override`` shows it."""
        import typer

        text = override.help if override is not None and override.help is not None else self.help
        if self.is_argument:
            return typer.Argument(help=text, **dict(self.settings))
        flags = override.flags if override is not None and override.flags is not None else self.flags
        return typer.Option(*flags, help=text, **dict(self.settings))


@dataclass(frozen=True)
class Override:
    """What one command shows differently from an option's declaration: its help text, or its flags (a short
    flag added or dropped, never another long flag: :func:`parameters` refuses it)."""

    help: str | None = None
    flags: tuple[str, ...] | None = None


def _where() -> str:
    frame = sys._getframe(2)
    return f"{frame.f_globals.get('__name__', '?')}:{frame.f_lineno}"


def option(name: str, *flags: str, help: str, accepts: Iterable[ConstraintLike] = (), **settings: Any) -> Opt:
    """Declare the option ``name`` once: its ``flags`` (none: ``--name``), help text and accepted values."""
    if flags and not any(f.startswith("--") for f in flags):
        raise TypeError(
            f"option {name!r} is declared with {flags} and no long flag; expected one such as --x"
        )
    opt = Opt(name, tuple(flags), help, tuple(accepts), settings=tuple(settings.items()), where=_where())
    DECLARED.setdefault(opt.flag, []).append(opt)
    return opt


def argument(name: str, *, help: str, **settings: Any) -> Opt:
    """Declare the positional argument ``name`` (its one declaration) with its help text."""
    return Opt(name, (), help, is_argument=True, settings=tuple(settings.items()), where=_where())


# --------------------------------------------------------------------------- reading an options class


@dataclass(frozen=True)
class Param:
    """One field of an options class as the command line takes it."""

    name: str
    type: Any  # the field's type, ``Annotated`` removed
    default: Any  # the field's default, :data:`dataclasses.MISSING` when it has none
    opt: Opt
    override: Override | None

    @property
    def accepts(self) -> tuple[ConstraintLike, ...]:
        """What a value may be: its declared forms, or its ``Literal``'s values (and None where allowed)."""
        if self.opt.accepts:
            return self.opt.accepts
        values = choices(self.type)
        if not values:
            return ()
        return (Options(*values), None) if _optional(self.type) else (Options(*values),)

    @property
    def repeated(self) -> bool:
        """Whether the option may be given several times (a list): its accepted forms apply to each value."""
        return any(get_origin(t) is list for t in (self.type, *get_args(self.type)))


def choices(tp: Any) -> tuple[Any, ...]:
    """The values of a ``Literal`` type (inside ``| None`` or ``list[...]`` too); () for any other type."""
    if get_origin(tp) is Literal:
        return get_args(tp)
    if get_origin(tp) in (Union, types.UnionType, list):
        return next((found for arg in get_args(tp) if (found := choices(arg))), ())
    return ()


def _optional(tp: Any) -> bool:
    return get_origin(tp) in (Union, types.UnionType) and type(None) in get_args(tp)


def typer_annotation(tp: Any) -> Any:
    """``tp`` as the command line reads it: a ``Literal`` as text (its values are checked with the rest)."""
    if not choices(tp):
        return tp
    if get_origin(tp) is Literal:
        return type(get_args(tp)[0])
    if get_origin(tp) in (Union, types.UnionType):
        args = tuple(typer_annotation(a) for a in get_args(tp))
        return functools.reduce(lambda a, b: a | b, args)
    if get_origin(tp) is list:
        return list[typer_annotation(get_args(tp)[0])]  # type: ignore[misc]
    return tp


def _own_fields(cls: type) -> list[str]:
    """The fields ``cls`` adds (not those it only redeclares), in its order."""
    inherited = {
        f.name for base in cls.__mro__[1:] if dataclasses.is_dataclass(base) for f in dataclasses.fields(base)
    }
    own = inspect.get_annotations(cls)
    return [
        name for name, annotation in own.items() if name not in inherited and not _is_classvar(annotation)
    ]


def _is_classvar(annotation: Any) -> bool:
    return (
        annotation is ClassVar
        or get_origin(annotation) is ClassVar
        or (isinstance(annotation, str) and annotation.startswith(("ClassVar", "typing.ClassVar")))
    )


def _display_order(cls: type) -> list[str]:
    """The fields of ``cls`` in the order help lists them: its own, then each group's, in order."""
    order = _own_fields(cls)
    for base in cls.__bases__:
        if dataclasses.is_dataclass(base):
            order += [name for name in _display_order(base) if name not in order]
    return order


def _groups(cls: type) -> list[type]:
    """The groups ``cls`` is made of, in the order it names them (depth first), each once."""
    out: list[type] = []
    for base in cls.__bases__:
        for group in [base, *_groups(base)]:
            if group not in out and group is not object:
                out.append(group)
    return out


@functools.cache
def parameters(cls: type) -> tuple[Param, ...]:
    """The fields of the options class ``cls`` with their declarations, in the order help lists them.

    TypeError (when the command is registered) for a field without a declaration, one whose name is not its
    declaration's, or an override that renames the option.
    """
    hints = get_type_hints(cls, include_extras=True)
    fields = {f.name: f for f in dataclasses.fields(cls) if f.init}
    out = []
    for name in _display_order(cls):
        if name not in fields:
            continue
        field = fields[name]
        tp, metadata = hints[name], tuple[Any, ...]()
        if get_origin(tp) is Annotated:
            tp, metadata = get_args(tp)[0], get_args(tp)[1:]
        opts = [m for m in metadata if isinstance(m, Opt)]
        overrides = [m for m in metadata if isinstance(m, Override)]
        if len(opts) != 1 or len(overrides) > 1:
            raise TypeError(
                f"{cls.__name__}.{name} must name one declared option (Annotated[type, "
                f"option(...)]) and at most one Override; got {len(opts)} and {len(overrides)}"
            )
        opt, override = opts[0], (overrides[0] if overrides else None)
        if opt.name != name:
            raise TypeError(
                f"{cls.__name__}.{name} uses the declaration of {opt.name!r}; expected the field "
                f"named {opt.name!r}"
            )
        flags = None if override is None or opt.is_argument else override.flags
        if flags is not None and Opt(name, flags, "").flag != opt.flag:
            raise TypeError(
                f"{cls.__name__}.{name}: an Override may change the short flag of {opt.flag}, not rename it; "
                f"got {flags}"
            )
        default = field.default
        if field.default_factory is not dataclasses.MISSING:
            default = field.default_factory()
        out.append(Param(name, tp, default, opt, override))
    return tuple(out)


# --------------------------------------------------------------------------- checking the values


def check(command: str, option: str, value: object, *constraints: ConstraintLike) -> object:
    """``value`` when a constraint accepts it; else ConfigError "The '--x' parameter of mitigate cmd ..."."""
    return check_param(f"mitigate {command}", option, value, constraints)


@dataclass(frozen=True)
class CommandOptions:
    """Base of every command's options: a frozen value whose fields are declared options, checked when built.

    Building a value checks each field against what its declaration accepts (a None left at a None default is
    "not given"), then each group's ``check_group`` (its combination checks), then the command's own
    :meth:`check`: a bad value is one ConfigError naming the option, before any work.
    """

    COMMAND: ClassVar[str] = ""  # the command's name, as error messages name it ("mitigate judge")

    def __post_init__(self) -> None:
        """Refuse a value out of range or a combination that cannot work (ConfigError naming the option)."""
        # a class object is hashable; mypy reads the options' own __hash__ (None: mutable-looking dataclass)
        for param in parameters(type(self)):  # type: ignore[arg-type]
            value = getattr(self, param.name)
            if not param.accepts or (value is None and param.default is None):
                continue
            for each in value if param.repeated and isinstance(value, list) else [value]:
                check(self.COMMAND, param.opt.flag, each, *param.accepts)
        for group in _groups(type(self)):
            group_check = group.__dict__.get("check_group")
            if group_check is not None:
                group_check(self)
        self.check()

    def check(self) -> None:
        """The command's own checks of combinations of its options (none by default)."""


# --------------------------------------------------------------------------- help naming what is registered
# (a stand-in when the option is declared, filled when the help is printed: loading a command imports neither
# the registry nor that kind's package)


def registered_names(kind: str | None = None) -> str:
    """A help text's stand-in for the names registered for ``kind`` ("engine" ...; None: the kinds)."""
    return "{registered}" if kind is None else f"{{registered:{kind}}}"


_REGISTERED = re.compile(r"\{registered(?::([a-z-]+))?\}")


def fill_registered_names(text: str, *, shipped: bool = False) -> str:
    """``text`` with each :func:`registered_names` stand-in replaced by the names registered now (benchmarks
    with their ``<prefix>:<path>`` forms); ``shipped``: only mitigate's own, for docs/cli.md."""
    if "{registered" not in text:
        return text
    from mitigate.registry import KIND_PACKAGES, registered  # imports the kind's package, for this help alone

    def names(kind: str) -> list[str]:
        table = registered(kind)
        found = [
            n
            for n, obj in table.items()
            if not shipped or str(getattr(obj, "__module__", "")).startswith("mitigate.")
        ]
        if kind == "benchmark":
            from mitigate.data import PATH_LOADERS

            found += [f"{prefix}:<path>" for prefix in PATH_LOADERS]
        return found

    return _REGISTERED.sub(lambda m: ", ".join(names(m.group(1)) if m.group(1) else KIND_PACKAGES), text)
