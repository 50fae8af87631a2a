"""``mitigate list KIND [NAME]`` (and ``mitigate mitigations``, ``selectors`` ...): what the registry holds,
plugins' components included; one line per component, or one in detail (class, paper, tags, parameters with
type, default and accepted values); ``--json`` prints the same as JSON."""

from __future__ import annotations

import importlib
import inspect
import json
import re
import types
import typing
from collections.abc import Callable
from dataclasses import dataclass
from typing import Annotated, Any, ClassVar

import typer

from mitigate.cli._app import command
from mitigate.cli._commands import COMMANDS
from mitigate.cli.options._declare import CommandOptions, argument, registered_names
from mitigate.cli.options._results import JSON
from mitigate.constraints import describe_constraints
from mitigate.errors import ConfigError
from mitigate.registry import KIND_PACKAGES, Component, Preset, lookup, plugin_of, registered

ALIASES = {
    f"{k}s": k
    for k in ("mitigation", "selector", "measure", "backend", "benchmark", "engine", "released-judge")
}
"""Command name (plural) -> registry kind; ``mitigate list`` also takes either form."""


def to_jsonable_python(value: Any) -> Any:
    """``value`` as JSON-ready data (as pydantic dumps it, NaN as null; repr() for what it cannot)."""
    from pydantic_core import to_jsonable_python as dump  # here: listing the commands loads no pydantic

    return dump(value, fallback=repr, inf_nan_mode="null")


def _plain(text: str) -> str:
    """``text`` without reST roles and literals (:class:`~a.b.C` -> C)."""
    return re.sub(r":\w+:`~?(?:[\w.]*\.)?([^`]+)`", r"\1", text).replace("``", "")


def kind_of(text: str) -> str:
    """The registry kind ``text`` names ("mitigation", "mitigations"); else ConfigError listing the kinds."""
    kind = ALIASES.get(text, text)
    if kind not in KIND_PACKAGES:
        raise ConfigError(
            f"expected a kind of component, one of {sorted(KIND_PACKAGES)} (or its plural); got {text!r}"
        )
    return kind


def _summary(obj: Any) -> str:
    """The first paragraph of an object's docstring, on one line and without reST markup ('' without one)."""
    doc = getattr(obj, "__doc__", None)
    return "" if not doc else _plain(" ".join(inspect.cleandoc(doc).split("\n\n")[0].split()))


def _type_name(annotation: Any) -> str:
    """A parameter's type as a reader writes it: ``Demo | None``, ``tuple[Demo, ...]`` (no module path, no
    validator attached to it)."""
    origin, args = typing.get_origin(annotation), typing.get_args(annotation)
    if origin is typing.Annotated:
        return _type_name(args[0])
    if origin in (typing.Union, types.UnionType):
        return " | ".join(_type_name(a) for a in args)
    if origin is typing.Literal:
        return json.dumps(list(args))[1:-1].replace(", ", " | ")
    if annotation is type(None):
        return "None"
    if origin is not None:
        inner = ", ".join("..." if a is Ellipsis else _type_name(a) for a in args)
        return f"{getattr(origin, '__name__', str(origin))}[{inner}]" if args else _type_name(origin)
    if isinstance(annotation, type):
        return annotation.__name__
    return str(annotation).replace("typing.", "").replace("pathlib.", "")


def parameter_docs(cls: type) -> dict[str, str]:
    """Each parameter's sentence from the ``Parameters:`` (or ``Args:``) block of a class docstring."""
    doc = inspect.cleandoc(cls.__doc__ or "")
    found: dict[str, str] = {}
    block = re.search(r"^(?:Parameters|Args):\n((?:[ \t]+.*\n?|\n)+)", doc, re.M)
    if block is None:
        return found
    name, indent = None, 0
    for line in block.group(1).splitlines():
        m = re.match(r"\s{2,8}(\w+)(?: \([^)]*\))?: (.*)", line)
        if m and (name is None or len(line) - len(line.lstrip()) <= indent):
            name, indent = m.group(1), len(line) - len(line.lstrip())
            found[name] = m.group(2).strip()
        elif name is not None and line.strip():
            found[name] += " " + line.strip()
    return {k: _plain(v) for k, v in found.items()}


def _parameters(cls: type[Component]) -> list[dict[str, Any]]:
    """Each parameter of a component class: name, type, default (or required) and declared constraint."""
    out = []
    docs = parameter_docs(cls)
    for name, field in cls.model_fields.items():
        if name.endswith("_"):  # fitted state, set by fit, never a parameter
            continue
        row: dict[str, Any] = {"name": name, "type": _type_name(field.annotation)}
        if field.is_required():
            row["required"] = True
        else:
            row["default"] = to_jsonable_python(field.get_default(call_default_factory=True))
        constraints = cls.parameter_constraints.get(name)
        row["accepts"] = describe_constraints(constraints) if constraints else ""
        if field.description or name in docs:
            row["description"] = field.description or docs[name]
        out.append(row)
    return out


def _public_path(kind: str, cls: type) -> str:
    """Where Python code imports ``cls`` from: its kind's package when that exports it (``mitigate.strategies.
    Demos``), else a plugin's own module; "" for a built-in class no package exports (a private address)."""
    package = KIND_PACKAGES.get(kind, "")
    if package and not package.rpartition(".")[2].startswith("_"):
        if getattr(importlib.import_module(package), cls.__name__, None) is cls:
            return f"{package}.{cls.__name__}"
    return "" if cls.__module__.startswith("mitigate.") else f"{cls.__module__}.{cls.__qualname__}"


def describe(kind: str, name: str, obj: Any) -> dict[str, Any]:
    """What the registry knows about the ``kind`` entry ``name``: a JSON-ready dict."""
    row: dict[str, Any] = {
        "kind": kind,
        "name": name,
        "summary": _summary(obj),
        "paper": "",
        "plugin": plugin_of(kind, name),
    }
    if isinstance(obj, type) and issubclass(obj, Component):
        row.update(
            paper=obj.paper,
            cls=_public_path(kind, obj),
            tags=[t for t, on in obj.declared_tags.model_dump().items() if on],
            parameters=_parameters(obj),
        )
        if issubclass(obj, Preset):
            row["preset"] = True
    elif kind == "backend":
        row.update(
            summary=f"an LM backend: --backend {' or '.join(obj.forms)}",
            forms=list(obj.forms),
            network=obj.network,
        )
    elif kind == "prompt":
        row.update(summary=f"built-in judge prompt {obj.name} (print it with: mitigate prompts {name})")
    elif kind == "released-judge":
        row.update(
            summary="a released judge's outputs: "
            f"{to_jsonable_python(obj._asdict() if hasattr(obj, '_asdict') else obj)}"
        )
    elif kind == "benchmark":
        row["summary"] = (row["summary"] + " " if row["summary"] else "") + f"(use: -b {name})"
    return row


def _text_detail(row: dict[str, Any]) -> str:
    lines = [f"{row['name']} ({row['kind']}{', preset' if row.get('preset') else ''}): {row['summary']}"]
    for key, label in (("cls", "in Python"), ("paper", "paper"), ("plugin", "plugin")):
        if row.get(key):
            lines.append(f"  {label}: {row[key]}")
    if "tags" in row:
        lines.append(f"  tags: {', '.join(row['tags']) or 'none'}")
    if row.get("forms"):
        lines.append(f"  forms: {', '.join(row['forms'])}{' (calls a server)' if row.get('network') else ''}")
    params = row.get("parameters")
    if params is not None:
        lines.append("  parameters:" if params else "  parameters: none")
        for p in params:
            default = "required" if p.get("required") else f"default {json.dumps(p.get('default'))}"
            accepts = f"; accepts {p['accepts']}" if p.get("accepts") else ""
            lines.append(f"    {p['name']}: {p['type']} ({default}){accepts}")
            if p.get("description"):
                lines.append(f"      {p['description']}")
    if row["kind"] == "mitigation":
        lines.append(f'  use: --pipeline "{row["name"]}(k=v, ...)" (values are JSON; bare words are strings)')
    return "\n".join(lines)


def catalog(kind: str | None, name: str | None, as_json: bool) -> str:
    """The text (or JSON) ``mitigate list`` prints."""
    if kind is None:
        if name is not None:
            raise ConfigError(f"expected 'mitigate list KIND NAME'; got a name {name!r} without a kind")
        counts = {k: len(registered(k)) for k in KIND_PACKAGES}
        if as_json:
            return json.dumps(counts, indent=1)
        return "\n".join(f"{k}: {n} (mitigate list {k})" for k, n in counts.items())
    kind = kind_of(kind)
    if name is not None:
        row = describe(kind, name, lookup(kind, name))
        return json.dumps(row, indent=1, ensure_ascii=False) if as_json else _text_detail(row)
    rows = [describe(kind, n, obj) for n, obj in registered(kind).items()]
    if as_json:
        return json.dumps(rows, indent=1, ensure_ascii=False)
    width = max((len(r["name"]) for r in rows), default=0)
    out = []
    for r in rows:
        paper = f"[{r['paper']}] " if r["paper"] else ""
        plugin = f"(plugin {r['plugin']}) " if r["plugin"] else ""
        out.append(f"{r['name']:<{width}}  {plugin}{paper}{r['summary']}")
    return "\n".join(out + [f"details: mitigate list {kind} NAME (--json for JSON)"])


NAME = argument("name", help="show this one in detail: parameters, types, defaults, accepted values, paper")
KIND = argument("kind", help=f"one of {registered_names()} (or the plural); none: how many of each")

Name = Annotated[str | None, NAME]


@dataclass(frozen=True)
class KindOptions(CommandOptions):
    """``mitigate mitigations`` (and the other kinds): the registered components of one kind."""

    COMMAND: ClassVar[str] = "kind"

    name: Name = None
    json: Annotated[bool, JSON] = False


@dataclass(frozen=True)
class ListOptions(KindOptions):
    """``mitigate list``: registered components of a kind, or one of them in detail."""

    COMMAND: ClassVar[str] = "list"

    kind: Annotated[str | None, KIND] = None


@command("list", ListOptions, config=False)
def list_cmd(options: ListOptions) -> None:
    """List registered components (mitigations, selectors, measures, engines, backends ...), or show one."""
    typer.echo(catalog(options.kind, options.name, options.json))


def _kind_command(plural: str, kind: str) -> Callable[[KindOptions], None]:
    def show(options: KindOptions) -> None:
        typer.echo(catalog(kind, options.name, options.json))

    show.__doc__ = COMMANDS[plural].summary
    show.__name__ = f"{plural.replace('-', '_')}_cmd"
    return command(plural, KindOptions, config=False)(show)


for _plural in ("mitigations", "selectors", "measures", "engines", "backends", "benchmarks"):
    _kind_command(_plural, ALIASES[_plural])
