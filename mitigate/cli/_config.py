"""Config files: a command's options read from a TOML (or JSON) file, and written back from a command line.

``mitigate compare -f run.toml`` reads the options of any command from a file whose keys are the command's
option names (``max-tokens`` or ``max_tokens``), read generically from the command's options dataclass
(:mod:`mitigate.cli.options`), so an option added there is a config key with no code here. Options the user
gives on the command line override the file; options left at their default do not. ``--save-config FILE``
writes the options a command line gave (and those of its ``-f`` file) and exits without running, so a long
command line becomes a file that can be kept, reviewed and rerun.

A file may also hold ``command = "compare"`` (refused when another command reads it), ``plugins =
["my_package.judges"]`` (imported as ``--plugin`` is) and, for commands with a ``--pipeline`` list,
``[[entry]]`` tables: one entry per compared judge, with ``pipeline = "..."`` and an optional display ``name``
(what the report shows), or ``recorded = "file"``, or ``released = "judge"``. Relative paths in a file are
relative to the file's folder, as in other tools' config files: path options (``prompt = "judge.txt"``) and
the paths inside specs (``benchmark = "jsonl:data.jsonl"``, ``released = "llmbar:LLMBar#GPT-4/*"``, ``backend
= "local:model.gguf"``, ``pipeline = "@spec.json"``, ``const = ["rubric=@rubric.txt"]``); a spec naming a file
that is not there is refused naming the folder it was looked for in. An unknown key or a value of the wrong
type is one ``error:`` line naming ``file:line``.
"""

from __future__ import annotations

import json
import os
import re
import tomllib
import types
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, Union, get_args, get_origin

from mitigate.cli._files import read_text_file
from mitigate.cli.options._declare import option, parameters, typer_annotation
from mitigate.errors import ConfigError
from mitigate.paths import loads_json, write_output

CONFIG = option(
    "config_file",
    "--config",
    "-f",
    help="read options from this TOML (or .json) file: keys are the option names (max-tokens = 64), entry "
    "tables name compared judges; options given on the command line override it",
)
SAVE_CONFIG = option(
    "save_config",
    "--save-config",
    help="write the options of this command line (with those of -f) "
    "to this TOML file and exit without running",
)
PLUGIN = option(
    "plugin",
    "--plugin",
    help="import this module first; the components it registers (mitigations, "
    "selectors, measures ...) can then be named like built-in ones; repeat for several",
)

ENTRY_FIELDS = ("pipeline", "recorded", "released")
"""The list options an ``[[entry]]`` table adds to, in the order a comparison lists them."""


def split_label(text: str) -> tuple[str | None, str]:
    """``"NAME=pipeline text"`` as (NAME, pipeline text); (None, text) when the text carries no display name.

    The name ends at the last ``=`` before the first ``(`` or ``|`` (a mitigation's name has no ``=``), so a
    name may hold ``=`` but not ``(`` or ``|``: ``"T=0.7=sampling(n=5)"`` is named "T=0.7",
    ``"granularity(scale=1-10)"`` and ``"@spec.json"`` are not named.
    """
    if text.lstrip().startswith("@"):
        return None, text
    cut = min((i for i in (text.find("("), text.find("|")) if i >= 0), default=len(text))
    eq = text.rfind("=", 0, cut)
    label, rest = text[:eq].strip(), text[eq + 1 :].strip()
    return (None, text) if eq < 0 or not label or not rest else (label, rest)


@dataclass(frozen=True)
class ConfigFile:
    """What a config file holds for one command: option values (by field name) and plugin modules."""

    path: Path
    values: dict[str, Any]
    plugins: tuple[str, ...] = ()


def option_fields(options: type) -> dict[str, Any]:
    """Field name -> type of an options dataclass as the command line reads it (a ``Literal`` as text): the
    keys a config file may hold."""
    return {p.name: typer_annotation(p.type) for p in parameters(options)}


# --------------------------------------------------------------------------- reading


def takes_entries(fields: Mapping[str, Any]) -> bool:
    """Whether a command compares several judges (a ``pipeline`` list), so a file may hold ``[[entry]]``."""
    return "pipeline" in fields and get_origin(_strip_none(fields["pipeline"])) is list


def read_config(path: Path, options: type, command: str) -> ConfigFile:
    """The options of ``command`` that the file ``path`` sets, checked against ``options``' fields."""
    if not path.is_file():
        raise ConfigError(
            f"expected a config file (TOML, or .json) for -f; {path} "
            f"{'is a folder' if path.exists() else 'does not exist'}",
            path=str(path),
        )
    text = read_text_file(path, "-f")
    data = _parse(path, text)
    fields = option_fields(options)
    where = _Where(path, text)
    values: dict[str, Any] = {}
    plugins: tuple[str, ...] = ()
    for raw_key, value in data.items():
        key = raw_key.replace("-", "_")
        if key == "command":
            if value != command:
                raise ConfigError(
                    f"{where(raw_key)}: this file is for 'mitigate {value}'; got it in 'mitigate {command}'"
                )
        elif key == "plugins":
            plugins = tuple(_convert(value, list[str], where(raw_key), raw_key, path.parent))
        elif key == "entry" and takes_entries(fields):
            continue  # after the plain keys, so its lists follow theirs
        elif key in fields:
            if key in values:
                raise ConfigError(
                    f"{where(raw_key)}: {raw_key!r} is given twice (as "
                    f"{key.replace('_', '-')!r} and {key!r}); expected it once"
                )
            values[key] = _convert(value, fields[key], where(raw_key), raw_key, path.parent)
        else:
            known = sorted(k.replace("_", "-") for k in fields) + ["command", "plugins"]
            if takes_entries(fields):
                known.append("entry")
            raise ConfigError(
                f"{where(raw_key)}: unknown key {raw_key!r} for 'mitigate {command}'; expected "
                f"some of {sorted(known)}"
            )
    if "entry" in data and takes_entries(fields):
        _add_entries(data["entry"], values, fields, where, path.parent)
    return ConfigFile(path, values, plugins)


def _parse(path: Path, text: str) -> dict[str, Any]:
    if path.suffix.lower() == ".json":
        try:
            data = loads_json(text)
        except json.JSONDecodeError as exc:
            raise ConfigError(f"{path}:{exc.lineno}: expected valid JSON; {exc.msg}") from None
        if not isinstance(data, dict):
            raise ConfigError(f"{path}:1: expected a JSON object of options; got a {type(data).__name__}")
        return data
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        msg = str(exc)
        m = re.search(r"\(at line (\d+), column \d+\)", msg)
        line = m.group(1) if m else "1"
        raise ConfigError(f"{path}:{line}: expected valid TOML; {msg}") from None


class _Where:
    """``file:line`` of a key in a config file's text (the file alone when the line cannot be found)."""

    def __init__(self, path: Path, text: str) -> None:
        self.path, self.lines, self.json = path, text.splitlines(), path.suffix.lower() == ".json"

    def __call__(self, key: str, table: str | None = None, nth: int = 0) -> str:
        line = self._json_line(key, table, nth) if self.json else self._toml_line(key, table, nth)
        return f"{self.path}:{line}" if line else str(self.path)

    def _toml_line(self, key: str, table: str | None, nth: int) -> int | None:
        section: str | None = None
        count = -1
        for i, raw in enumerate(self.lines, 1):
            s = raw.split("#", 1)[0].strip()
            header = re.fullmatch(r"\[\[?\s*([^\]]+?)\s*\]\]?", s)
            if header:
                section = header.group(1)
                if table is None and section == key:  # a key that is a table: its header's line
                    return i
                count += section == table
                continue
            m = re.match(r"[\"']?([A-Za-z0-9_-]+)[\"']?\s*=", s)
            if m and m.group(1) == key and section == table and (table is None or count == nth):
                return i
        return None

    def _json_line(self, key: str, table: str | None, nth: int) -> int | None:
        seen = -1
        for i, raw in enumerate(self.lines, 1):
            if re.search(rf'"{re.escape(key)}"\s*:', raw):
                seen += 1
                if table is None or seen == nth:
                    return i
        return None


_NOUNS = {
    str: "a string",
    int: "an integer",
    float: "a number",
    bool: "true or false",
    Path: "a path (a string)",
}


def _noun(tp: Any) -> str:
    origin, args = get_origin(tp), get_args(tp)
    if origin in (Union, types.UnionType):
        return " or ".join(_noun(a) for a in args if a is not type(None))
    if origin is list:
        return f"a list of {_noun(args[0]).removeprefix('a ').removeprefix('an ')}s" if args else "a list"
    if origin is Literal:
        return "one of " + ", ".join(repr(a) for a in args)
    return _NOUNS.get(tp, f"a {getattr(tp, '__name__', tp)}")


_SCALARS: dict[Any, tuple[type, ...]] = {bool: (bool,), int: (int,), float: (int, float)}
"""A scalar option's type -> the TOML or JSON values it takes."""


def _convert(value: Any, tp: Any, where: str, key: str, base: Path) -> Any:
    """``value`` from the file as the field's type ``tp``; ConfigError "file:line: expected ..." otherwise."""
    origin, args = get_origin(tp), get_args(tp)
    if origin in (Union, types.UnionType):
        if value is None and type(None) in args:
            return None
        for member in (a for a in args if a is not type(None)):
            try:
                return _convert(value, member, where, key, base)
            except ConfigError:
                continue
    elif origin is list:
        items = value if isinstance(value, list) else [value]  # one value for a repeatable option
        return [_convert(v, args[0] if args else Any, where, key, base) for v in items]
    elif origin is Literal:
        if value in args:
            return value
    elif tp is Any:
        return value
    elif tp in _SCALARS:  # true is not the number 1 here
        if isinstance(value, _SCALARS[tp]) and (tp is bool or not isinstance(value, bool)):
            return tp(value)
    elif tp is str:
        if isinstance(value, str):
            return with_paths_from(value, base, where, key)
    elif isinstance(tp, type) and issubclass(tp, Path):
        if isinstance(value, str) and value.strip():
            p = Path(value).expanduser()
            return p if p.is_absolute() else Path(os.path.normpath(base / p))
    elif isinstance(tp, type) and not isinstance(value, (dict, list)):
        try:
            return tp(value)  # an Enum, or another type built from its text
        except (TypeError, ValueError):
            pass
    raise ConfigError(f"{where}: expected {key!r} to be {_noun(tp)}; got {value!r}")


def path_prefixes() -> tuple[str, ...]:
    """Spec prefixes followed by a file or folder, as registered: the benchmarks' path forms (which released
    judges share: ``llmbar:LLMBar#GPT-4/*``) and the backends' (``local:model.gguf``)."""
    from mitigate.data import PATH_LOADERS  # here: only a config file's paths need them
    from mitigate.registry import registered

    backends = [
        kind
        for kind, b in registered("backend").items()
        if any(f.startswith(f"{kind}:<path") for f in b.forms)
    ]
    return (*PATH_LOADERS, *backends)


def spec_path(value: str) -> tuple[str, str, str] | None:
    """``(before, path, after)`` of a spec string that names a file, None for one that names none.

    A path is what follows a :func:`path_prefixes` prefix (up to a ``#`` judge pattern), or a pipeline's or
    constant's ``@file`` (``"@spec.json"``, ``"NAME=@file"``).
    """
    prefix, sep, rest = value.partition(":")
    if sep and rest and "://" not in value and prefix in path_prefixes():
        path, hash_, pattern = rest.partition("#")
        return f"{prefix}:", path, f"{hash_}{pattern}"
    label, at, rest = value.partition("@")
    if at and rest.strip() and (not label.strip() or (label.rstrip().endswith("=") and "(" not in label)):
        return f"{label}@", rest.strip(), ""
    return None


def with_paths_from(value: str, base: Path, where: str, key: str) -> str:
    """``value`` from a config file with the relative path it names (:func:`spec_path`) read from ``base``,
    the file's folder; a named path that does not exist is refused, naming that folder."""
    parts = spec_path(value)
    if parts is None or Path(parts[1]).expanduser().is_absolute():
        return value
    before, path, after = parts
    full = Path(os.path.normpath(base / Path(path).expanduser()))
    if not full.exists():
        raise ConfigError(
            f"{where}: {key} = {value!r} names {full}, which does not exist (relative paths in "
            f"a config file are read from the file's folder, {base})"
        )
    return f"{before}{full}{after}"


def with_paths_to(value: str, base: Path) -> str:
    """``value`` (a path in it relative to the working folder) as a config file in ``base`` holds it."""
    parts = spec_path(value)
    if parts is None or Path(parts[1]).expanduser().is_absolute():
        return value
    before, path, after = parts
    return f"{before}{os.path.relpath(path, base)}{after}"


def _add_entries(
    entries: Any, values: dict[str, Any], fields: Mapping[str, Any], where: _Where, base: Path
) -> None:
    """``[[entry]]`` tables: each adds a pipeline (``name=...`` if named), recorded file or released judge."""
    if not isinstance(entries, list) or not all(isinstance(e, dict) for e in entries):
        raise ConfigError(
            f"{where('entry')}: expected [[entry]] tables (pipeline = ..., name = ...); got {entries!r}"
        )
    for n, entry in enumerate(entries):
        at = where(next(iter(entry), "entry"), "entry", n)
        unknown = sorted(set(entry) - {"name", *ENTRY_FIELDS})
        if unknown:
            raise ConfigError(
                f"{where(unknown[0], 'entry', n)}: unknown key {unknown[0]!r} in [[entry]] "
                f"{n + 1}; expected name and one of {list(ENTRY_FIELDS)}"
            )
        kinds = [k for k in ENTRY_FIELDS if k in entry and k in fields]
        if len(kinds) != 1:
            raise ConfigError(
                f"{at}: expected [[entry]] {n + 1} to hold exactly one of "
                f"{list(ENTRY_FIELDS)}; got {kinds or 'none'}"
            )
        kind = kinds[0]
        at = where(kind, "entry", n)
        item_type = get_args(next(a for a in get_args(fields[kind]) if a is not type(None)))[0]
        value = _convert(entry[kind], item_type, at, kind, base)
        name = entry.get("name")
        if name is not None:
            if kind != "pipeline":
                raise ConfigError(
                    f"{where('name', 'entry', n)}: a display name applies to a pipeline entry; the judges "
                    f"of a {kind} entry are named by their file; got name = {name!r}"
                )
            name = _convert(name, str, where("name", "entry", n), "name", base)
            if split_label(f"{name}=baseline") != (name.strip(), "baseline"):
                raise ConfigError(
                    f"{where('name', 'entry', n)}: expected a non-empty display name without "
                    f"'(' or '|', not starting with '@'; got {name!r}"
                )
            value = f"{name.strip()}={value}"
        values[kind] = [*(values.get(kind) or []), value]


# --------------------------------------------------------------------------- writing


def write_config(path: Path, options: Any, keys: Iterable[str], plugins: Iterable[str], command: str) -> Path:
    """Write the ``keys`` of the built ``options`` (and ``plugins``) as a TOML config that ``-f`` reads back
    equal: compared judges as ``[[entry]]`` tables, relative paths relative to the file's folder."""
    fields = option_fields(type(options))
    chosen = [k for k in fields if k in set(keys)]
    base = path.parent
    entries = takes_entries(fields)
    lines = [
        f"# mitigate {command} options (written by --save-config); run with: mitigate {command} "
        f"-f {path.name}",
        f"command = {_toml(command, base)}",
    ]
    plugin_list = list(dict.fromkeys(plugins))
    if plugin_list:
        lines.append(f"plugins = {_toml(plugin_list, base)}")
    tables: list[str] = []
    for key in chosen:
        value = getattr(options, key)
        if value is None:
            continue
        if entries and key in ENTRY_FIELDS and get_origin(_strip_none(fields[key])) is list:
            for item in value:
                tables += ["", "[[entry]]"]
                label, body = split_label(item) if key == "pipeline" else (None, item)
                if label is not None:
                    tables.append(f"name = {_toml(label, base)}")
                tables.append(f"{key} = {_toml(body, base)}")
            continue
        lines.append(f"{key.replace('_', '-')} = {_toml(value, base)}")
    return write_output(path, "\n".join(lines + tables) + "\n", "--save-config")


def _strip_none(tp: Any) -> Any:
    if get_origin(tp) in (Union, types.UnionType):
        rest = [a for a in get_args(tp) if a is not type(None)]
        return rest[0] if len(rest) == 1 else tp
    return tp


def _toml(value: Any, base: Path) -> str:
    """One TOML value: a string, number, boolean, path (relative to ``base``) or a list of those."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return repr(value)
    if isinstance(value, Path):
        return json.dumps(str(value) if value.is_absolute() else os.path.relpath(value, base))
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(_toml(v, base) for v in value) + "]"
    if hasattr(value, "value") and isinstance(value.value, (str, int, float)):  # an Enum
        return _toml(value.value, base)
    text = with_paths_to(value, base) if isinstance(value, str) else str(value)
    return json.dumps(text, ensure_ascii=False)  # a JSON string is a TOML basic string
