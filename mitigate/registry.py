"""One registry for every kind of component, and parameter constraints declared once per class.

A named component registers under a *kind* and a kebab-case name (``@register("selector", "stratified")``);
:func:`registered`, :func:`lookup` and :func:`build` (from a spec ``{"name": ..., "params": {...}}``) find
it, a kind's package (:data:`KIND_PACKAGES`) being imported on its first look-up. :class:`Component`'s
``parameter_constraints`` are checked before pydantic sees the values, so a bad parameter is one
ConfigError in scikit-learn's wording. :class:`Tags` is what a component declares about itself;
:class:`Preset` names a configuration of another component. Plugins register components on import:
entry points of :data:`PLUGIN_GROUP`, or :func:`load_plugin` (the CLI's ``--plugin``).
"""

from __future__ import annotations

import importlib
import importlib.metadata
import re
import sys
import warnings
from collections.abc import Callable, Coroutine, Mapping
from typing import Any, ClassVar, Self, TypeVar

from pydantic import BaseModel, ConfigDict, ValidationError, model_validator

from mitigate._lazy import declared_modules
from mitigate.constraints import ConstraintLike, check_param
from mitigate.errors import ConfigError

__all__ = [
    "KIND_PACKAGES",
    "Component",
    "add",
    "PLUGIN_GROUP",
    "Preset",
    "Tags",
    "build",
    "load_entry_point_plugins",
    "load_plugin",
    "lookup",
    "names",
    "plugin_components",
    "register",
    "registered",
]

T = TypeVar("T")

KIND_PACKAGES: dict[str, str] = {
    "mitigation": "mitigate.strategies",
    "selector": "mitigate.selectors",
    "engine": "mitigate.search.engines",
    "measure": "mitigate.measures",
    "backend": "mitigate.lm._registry",
    "benchmark": "mitigate.data._registry",
    "released-judge": "mitigate.data._released",
    "prompt": "mitigate.prompt._builtin",
    "probe": "mitigate.probes",
}
"""Where each kind's entries live, imported on the kind's first look-up: classes registered with
:func:`register`, or plain values added with :func:`add` (a backend's builder, a benchmark's loader, a
released judge's files, a built-in prompt's text file)."""

PLUGIN_GROUP = "mitigate.plugins"
"""The entry-point group of installed plugins (each names a module whose import registers components)."""

_REGISTRY: dict[str, dict[str, Any]] = {}
_discovered: set[str] = set()
_PLUGIN_ORIGIN: dict[tuple[str, str], str] = {}  # (kind, name) -> the plugin module that registered it
_loading_plugins: list[str] = []
_entry_points_loaded = False


def _table(kind: str) -> dict[str, Any]:
    """The registry's table of ``kind``; ConfigError naming the kinds for an unknown one."""
    if kind not in KIND_PACKAGES:
        raise ConfigError(f"unknown component kind {kind!r}; expected one of {sorted(KIND_PACKAGES)}")
    return _REGISTRY.setdefault(kind, {})


def _discover(kind: str) -> None:
    if kind in _discovered:
        return
    _table(kind)
    _discovered.add(kind)
    module = importlib.import_module(KIND_PACKAGES[kind])
    for name in getattr(module, "__all__", ()):  # a lazy package imports its modules, in declared order
        getattr(module, name)
    load_entry_point_plugins()


_MODULE_PATH = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*")


def load_plugin(module: str) -> list[tuple[str, str]]:
    """Import the plugin ``module`` (a dotted path); the (kind, name) of every component it registered (a
    module that cannot be found or fails to import is one ConfigError naming it and the cause)."""
    if not isinstance(module, str) or not _MODULE_PATH.fullmatch(module.strip()):
        raise ConfigError(
            f"expected a plugin as a dotted module path such as 'my_package.judges'; got {module!r}"
        )
    module = module.strip()
    _loading_plugins.append(module)
    try:
        importlib.import_module(module)
    except Exception as exc:  # a plugin's own bug: one line naming the plugin, never a traceback
        missing = exc.name if isinstance(exc, ModuleNotFoundError) else None
        if missing and (module == missing or module.startswith(missing + ".")):
            raise ConfigError(
                f"plugin module {module!r} was not found; expected a module importable from "
                f"sys.path (installed, or on PYTHONPATH); got no module {missing!r}"
            ) from None
        cause = str(exc) if isinstance(exc, ConfigError) else f"{type(exc).__name__}: {exc}"
        raise ConfigError(f"plugin module {module!r} failed to import: {cause}") from None
    finally:
        _loading_plugins.pop()
    return plugin_components(module)


def plugin_components(module: str) -> list[tuple[str, str]]:
    """(kind, name) of every component the plugin ``module`` (or a module under it) registered."""
    found: list[tuple[str, str]] = []
    for kind in KIND_PACKAGES:
        for name, obj in registered(kind).items():
            origin, defined = _PLUGIN_ORIGIN.get((kind, name), ""), str(getattr(obj, "__module__", "") or "")
            if any(m == module or m.startswith(module + ".") for m in (origin, defined)):
                found.append((kind, name))
    return found


def plugin_of(kind: str, name: str) -> str | None:
    """The plugin module whose import registered the ``kind`` entry ``name``; else None."""
    return _PLUGIN_ORIGIN.get((kind, name))


def load_entry_point_plugins(*, again: bool = False) -> list[str]:
    """Import every module named under :data:`PLUGIN_GROUP`, once (``again=True``: anew); those imported. A
    plugin that fails to import is one warning naming its entry point and the cause."""
    global _entry_points_loaded
    if _entry_points_loaded and not again:
        return []
    _entry_points_loaded = True
    loaded: list[str] = []
    for ep in sorted(importlib.metadata.entry_points(group=PLUGIN_GROUP), key=lambda e: e.name):
        dist = getattr(getattr(ep, "dist", None), "name", None) or "?"
        try:
            load_plugin(ep.module)
            if ep.attr:
                ep.load()
        except Exception as exc:  # reported as one warning; the other plugins still load
            warnings.warn(
                f"plugin {ep.name!r} (entry point {ep.value!r} of {dist}, group {PLUGIN_GROUP}) "
                f"was not loaded: {exc}",
                stacklevel=2,
            )
            continue
        loaded.append(ep.module)
    return loaded


def register(kind: str, name: str) -> Callable[[T], T]:
    """Decorator: register a class (or any object) as the ``kind`` component ``name``, setting its
    ``registry_name`` and ``registry_kind`` (another object under a taken name is a ConfigError)."""
    table = _table(kind)

    def deco(obj: T) -> T:
        old = table.get(name)
        if old is not None and old is not obj and _qualname(old) != _qualname(obj):
            raise ConfigError(f"{kind} name {name!r} is already registered by {_qualname(old)}")
        obj.registry_name = name  # type: ignore[attr-defined]
        obj.registry_kind = kind  # type: ignore[attr-defined]
        table[name] = obj
        _note_origin(kind, name, str(getattr(obj, "__module__", "") or ""))
        return obj

    return deco


def add(kind: str, name: str, value: Any) -> None:
    """Register a plain value as the ``kind`` entry ``name`` (ConfigError when another value has it)."""
    table = _table(kind)
    if name in table and table[name] is not value and table[name] != value:
        raise ConfigError(f"{kind} name {name!r} is already registered")
    table[name] = value
    _note_origin(kind, name, str(sys._getframe(1).f_globals.get("__name__", "")))  # the module that added it


def _note_origin(kind: str, name: str, module: str) -> None:
    """Remember the plugin being imported as the origin of what ``module`` registers (not mitigate's own)."""
    if _loading_plugins and not (module == "mitigate" or module.startswith("mitigate.")):
        _PLUGIN_ORIGIN.setdefault((kind, name), _loading_plugins[-1])


def names(kind: str) -> list[str]:
    """The names registered for ``kind``, in :func:`registered` order."""
    return list(registered(kind))


def _qualname(obj: Any) -> str:
    return f"{getattr(obj, '__module__', '?')}.{getattr(obj, '__qualname__', type(obj).__name__)}"


def registered(kind: str) -> dict[str, Any]:
    """The registered ``kind`` components, name -> object (a copy): mitigate's own module by module in the
    order their package declares them (whatever was imported first), then plugins' as they registered."""
    _discover(kind)
    order = {m: i for i, m in enumerate(declared_modules(KIND_PACKAGES[kind]))}
    table = _REGISTRY.get(kind, {})
    rank = {name: order.get(str(getattr(obj, "__module__", "")), len(order)) for name, obj in table.items()}
    return {name: table[name] for name in sorted(table, key=rank.__getitem__)}


def lookup(kind: str, name: str) -> Any:
    """The ``kind`` component registered as ``name``; ConfigError naming the known ones when absent."""
    table = registered(kind)
    if not isinstance(name, str) or name not in table:
        raise ConfigError(f"unknown {kind} {name!r}; expected one of {sorted(table)}")
    return table[name]


def build(kind: str, spec: Mapping[str, Any]) -> Any:
    """A component rebuilt from its spec ``{"name": ..., "params": {...}}``."""
    if not isinstance(spec, Mapping) or "name" not in spec:
        raise ConfigError(f"expected a {kind} spec {{'name': ..., 'params': {{...}}}}; got {spec!r}")
    extra = sorted(set(spec) - {"name", "params"})
    if extra:
        raise ConfigError(f"expected a {kind} spec with keys 'name' and 'params'; got extra keys {extra}")
    cls = lookup(kind, spec["name"])
    params = spec.get("params", {})
    if not isinstance(params, Mapping):
        raise ConfigError(f"expected the 'params' of {kind} {spec['name']!r} to be a mapping; got {params!r}")
    value = cls.model_validate(dict(params))
    return value.build() if isinstance(value, Preset) else value


def _one_line_error(owner: str, exc: ValidationError) -> ConfigError:
    """A pydantic ValidationError as one ConfigError sentence naming the parameter."""
    first = exc.errors()[0]
    name = ".".join(str(p) for p in first.get("loc", ())) or "?"
    if first.get("type") == "missing":
        return ConfigError(f"{owner} needs the {name!r} parameter; got none", parameter=name, owner=owner)
    msg = str(first.get("msg", "invalid value"))
    msg = msg[:1].lower() + msg[1:]
    more = f" (and {exc.error_count() - 1} more problems)" if exc.error_count() > 1 else ""
    return ConfigError(
        f"The {name!r} parameter of {owner} is not valid: {msg}. Got {first.get('input')!r} instead{more}.",
        parameter=name,
        owner=owner,
    )


class Tags(BaseModel):
    """What a component declares about itself (read by the harness, the search and the contract battery):

    - ``needs_fitting``: ``fit`` learns from the training items (else it returns the component itself).
    - ``calls_judge_while_fitting``: fitting runs the judge (or a likelihood model) over the training
      items, unless the fit context gives the judge's scores and the component reads them.
    - ``needs_judge``: fitting needs the wrapped judge, whatever the fit context holds.
    - ``query_dependent``: the choice depends on the judged item (a selector that needs ``query=``).
    - ``uses_selectors``: a search engine drawing its candidates from demo selectors.
    - ``pairwise_only``: works only on a judge of pairs, so it is fitted and checked against one.
    - ``adds_reasoning``: asks the judge to reason before answering, so the answer is read from the text.
    - ``random_draws``: a selector whose seed draws one of many demo sets (a search's candidates).
    """

    model_config = ConfigDict(frozen=True, extra="forbid")
    needs_fitting: bool = False
    calls_judge_while_fitting: bool = False
    needs_judge: bool = False
    query_dependent: bool = False
    uses_selectors: bool = False
    pairwise_only: bool = False
    adds_reasoning: bool = False
    random_draws: bool = False

    def __or__(self, other: Tags) -> Tags:
        """Either's tag set (what a composition of both components declares)."""
        return Tags(**{k: bool(getattr(self, k) or getattr(other, k)) for k in Tags.model_fields})


class Component(BaseModel):
    """Frozen pydantic base of registered components.

    ``parameter_constraints`` maps a field to the forms its value may take (a :class:`Constraint`, a type,
    or None), checked on the raw input before pydantic's validation; unknown parameters are refused.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")
    registry_name: ClassVar[str] = ""
    registry_kind: ClassVar[str] = ""
    paper: ClassVar[str] = ""
    """The work the component implements, "Author et al. YEAR" (empty for mitigate's own designs)."""
    parameter_constraints: ClassVar[dict[str, list[ConstraintLike]]] = {}
    declared_tags: ClassVar[Tags] = Tags()

    @property
    def tags(self) -> Tags:
        """What this component declares about itself: ``declared_tags``, or what its parameters imply."""
        return self.declared_tags

    @classmethod
    def owner(cls) -> str:
        """How errors name it: its kind and registered name, as a pipeline or config writes it ("mitigation
        'per-item-demos'"); the class name when it is not registered."""
        return f"{cls.registry_kind} {cls.registry_name!r}" if cls.registry_name else cls.__name__

    @model_validator(mode="wrap")
    @classmethod
    def _validate(cls, data: Any, handler: Callable[[Any], Any]) -> Any:
        if isinstance(data, Mapping):
            cls._check_parameters(data)
        try:
            return handler(data)
        except ValidationError as exc:  # what the declared constraints do not cover: still one line
            raise _one_line_error(cls.owner(), exc) from None

    @classmethod
    def _check_parameters(cls, data: Mapping[str, Any]) -> None:
        owner = cls.owner()
        unknown = sorted(k for k in data if isinstance(k, str) and k not in cls.model_fields)
        if unknown and cls.model_config.get("extra") == "forbid":
            known = sorted(k for k in cls.model_fields if not k.endswith("_"))
            raise ConfigError(
                f"{owner} has no parameter {', '.join(repr(u) for u in unknown)}; expected some of {known}",
                owner=owner,
            )
        for name, constraints in cls.parameter_constraints.items():
            if name in data:
                check_param(owner, name, data[name], constraints)

    @classmethod
    def examples(cls) -> list[Any]:
        """Instances the contract checks (:mod:`mitigate.testing`) exercise."""
        return [cls()]

    def spec(self) -> dict[str, Any]:
        """``{"name": ..., "params": {...}}``: what :func:`build` rebuilds this from."""
        if not self.registry_name:
            raise ConfigError(
                f"{type(self).__name__} is not registered; decorate it with @register(<kind>, '<name>')"
            )
        return {"name": self.registry_name, "params": self.model_dump(mode="json")}

    def with_params(self, **params: Any) -> Self:
        """A copy with ``params`` changed, validated (constraints included) like a new object."""
        return type(self).model_validate({**self.model_dump(), **params})


class Preset(Component):
    """A registered name for a configuration of another component: its fields are the preset's parameters,
    and :func:`build` (so every spec, pipeline text and CLI name) returns :meth:`build`'s value."""

    def build(self) -> Any:
        """The component these parameters stand for."""
        raise NotImplementedError(f"{type(self).__name__} must implement build()")


def run_coroutine(coro: Coroutine[Any, Any, T], *, what: str, instead: str) -> T:
    """``asyncio.run(coro)``; inside a running loop a ConfigError naming the call ``what`` and the async form
    ``instead`` to await there (``coro`` is closed, never leaked)."""
    import asyncio  # here: importing the registry (as the command line does first) needs no event loop

    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(coro)
    coro.close()
    raise ConfigError(
        f"{what} runs its own event loop and was called inside a running one; expected `await "
        f"{instead}` there"
    )
