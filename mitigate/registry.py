"""One registry for every kind of component, and parameter constraints declared once per class.

Every named component (a mitigation, a demo selector, a search engine, a measure) registers
itself under a kebab-case name and a *kind*::

    @register("selector", "stratified")
    class Stratified(Component):
        parameter_constraints = {"seed": [Interval(int)], "by": [Options("label", "range")]}

- :func:`registered` lists a kind's names and objects, :func:`lookup` finds one (a
  :class:`~mitigate.errors.ConfigError` naming the known names when it is absent), and
  :func:`build` rebuilds a component from its spec ``{"name": ..., "params": {...}}``.
- A kind's components live in one package (:data:`KIND_PACKAGES`); it is imported on the first
  look-up, so asking for a mitigation by name works without importing the strategies first.
  This is discovery by module name (as entry points work), not an import of an upper layer.
- :class:`Component` is the frozen pydantic base of registered values. Its
  ``parameter_constraints`` are checked *before* pydantic sees the values, so a bad parameter
  is one :class:`~mitigate.errors.ConfigError` in scikit-learn's wording — "The 'k' parameter
  of Stratified must be an int >= 1. Got 0 instead." — never a pydantic traceback. The
  sentence is written from the declaration (:func:`check_param`), never by hand.
"""

from __future__ import annotations

import importlib
import math
from collections.abc import Callable, Iterable, Mapping
from typing import Any, ClassVar, Literal, Self, TypeVar

from pydantic import BaseModel, ConfigDict, ValidationError, model_validator

from mitigate.errors import ConfigError

__all__ = [
    "KIND_PACKAGES",
    "Component",
    "Constraint",
    "Interval",
    "IsInstance",
    "Options",
    "Satisfies",
    "build",
    "check_param",
    "describe_constraints",
    "lookup",
    "register",
    "registered",
]

T = TypeVar("T")

KIND_PACKAGES: dict[str, str] = {
    "mitigation": "mitigate.strategies",
    "selector": "mitigate.selectors",
    "engine": "mitigate.search",
    "measure": "mitigate.measures",
    "probe": "mitigate.probes",
}
"""Where each kind's components live; imported on the first look-up of that kind."""

_REGISTRY: dict[str, dict[str, Any]] = {}
_discovered: set[str] = set()


def _discover(kind: str) -> None:
    if kind in _discovered:
        return
    package = KIND_PACKAGES.get(kind)
    if package is None:
        raise ConfigError(f"unknown component kind {kind!r}; expected one of {sorted(KIND_PACKAGES)}")
    _discovered.add(kind)
    importlib.import_module(package)


def register(kind: str, name: str) -> Callable[[T], T]:
    """Decorator: register a class (or any object) as the ``kind`` component called ``name``.

    Sets ``registry_name`` and ``registry_kind`` on it. Registering another object under a
    name already taken is a ConfigError (re-registering the same object is allowed).
    """
    if kind not in KIND_PACKAGES:
        raise ConfigError(f"unknown component kind {kind!r}; expected one of {sorted(KIND_PACKAGES)}")

    def deco(obj: T) -> T:
        table = _REGISTRY.setdefault(kind, {})
        old = table.get(name)
        if old is not None and old is not obj and _qualname(old) != _qualname(obj):
            raise ConfigError(f"{kind} name {name!r} is already registered by {_qualname(old)}")
        obj.registry_name = name  # type: ignore[attr-defined]
        obj.registry_kind = kind  # type: ignore[attr-defined]
        table[name] = obj
        return obj

    return deco


def _qualname(obj: Any) -> str:
    return f"{getattr(obj, '__module__', '?')}.{getattr(obj, '__qualname__', type(obj).__name__)}"


def registered(kind: str) -> dict[str, Any]:
    """The registered ``kind`` components, name -> object (a copy)."""
    _discover(kind)
    return dict(_REGISTRY.get(kind, {}))


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
    return cls.model_validate(dict(params))


# --------------------------------------------------------------------------- constraints


class Constraint:
    """One acceptable form of a parameter value; :meth:`accepts` decides, :meth:`describe` words it."""

    def accepts(self, value: Any) -> bool:
        """True when ``value`` satisfies the constraint."""
        raise NotImplementedError

    def describe(self) -> str:
        """The constraint as a noun phrase ("an int >= 1")."""
        raise NotImplementedError


class Interval(Constraint):
    """A number of type ``kind`` (int or float) within bounds; ``None`` bounds are open-ended.

    ``closed`` says which bounds are included: "both" (default), "left", "right" or
    "neither". ``Interval(int)`` is any int; bools are never ints here, and NaN and the
    infinities are never floats (a parameter that is a number is a finite one).
    """

    def __init__(
        self,
        kind: type[int] | type[float],
        left: float | None = None,
        right: float | None = None,
        *,
        closed: Literal["both", "left", "right", "neither"] = "both",
    ) -> None:
        if kind not in (int, float):
            raise ConfigError(f"expected Interval(int | float, ...); got kind {kind!r}")
        self.kind, self.left, self.right, self.closed = kind, left, right, closed

    def accepts(self, value: Any) -> bool:
        """True for an int (or, for a float interval, an int or float) within the bounds."""
        if isinstance(value, bool):
            return False
        ok_types: tuple[type, ...] = (int,) if self.kind is int else (int, float)
        if not isinstance(value, ok_types) or (isinstance(value, float) and not math.isfinite(value)):
            return False
        if self.left is not None:
            if value < self.left or (value == self.left and self.closed in ("right", "neither")):
                return False
        if self.right is not None:
            if value > self.right or (value == self.right and self.closed in ("left", "neither")):
                return False
        return True

    def describe(self) -> str:
        """"an int >= 1", "a float in (0, 1]", "an int"."""
        noun = "an int" if self.kind is int else "a float"
        lo_in = self.closed in ("both", "left")
        hi_in = self.closed in ("both", "right")
        if self.left is None and self.right is None:
            return noun
        if self.right is None:
            return f"{noun} {'>=' if lo_in else '>'} {self.left:g}"
        if self.left is None:
            return f"{noun} {'<=' if hi_in else '<'} {self.right:g}"
        return f"{noun} in {'[' if lo_in else '('}{self.left:g}, {self.right:g}{']' if hi_in else ')'}"


class Options(Constraint):
    """One of a fixed set of values."""

    def __init__(self, *values: Any) -> None:
        if not values:
            raise ConfigError("expected Options(...) with at least one value")
        self.values = tuple(values)

    def accepts(self, value: Any) -> bool:
        """True when ``value`` is one of the options (bools only match bools)."""
        return any(value == v and isinstance(value, bool) == isinstance(v, bool) for v in self.values)

    def describe(self) -> str:
        """"one of 'a', 'b'" (a single option: "'a'")."""
        if len(self.values) == 1:
            return repr(self.values[0])
        return "one of " + ", ".join(repr(v) for v in self.values)


class IsInstance(Constraint):
    """An instance of one of ``types`` (an int is not a bool here; a float accepts an int)."""

    _NOUNS: ClassVar[dict[type, str]] = {
        str: "a str", bool: "a bool", int: "an int", float: "a float", dict: "a dict", list: "a list",
        tuple: "a tuple",
    }

    def __init__(self, *types: type, noun: str | None = None) -> None:
        self.types, self.noun = types, noun

    def accepts(self, value: Any) -> bool:
        """True when ``value`` is an instance of one of the types."""
        for t in self.types:
            if t is int and isinstance(value, bool):
                continue
            if t is float and isinstance(value, int) and not isinstance(value, bool):
                return True
            if isinstance(value, t):
                return True
        return False

    def describe(self) -> str:
        """"a str", "a Scale" or the given noun."""
        if self.noun:
            return self.noun
        return " or ".join(self._NOUNS.get(t, f"a {t.__name__}") for t in self.types)


class Satisfies(Constraint):
    """A value for which ``predicate`` is true, described by ``noun`` ("a non-empty tuple of item ids").

    For what a type, a range or a set of options cannot say (non-empty, unique, a prefix);
    a predicate that raises counts as false.
    """

    def __init__(self, predicate: Callable[[Any], bool], noun: str) -> None:
        self.predicate, self.noun = predicate, noun

    def accepts(self, value: Any) -> bool:
        """True when the predicate holds for ``value``."""
        try:
            return bool(self.predicate(value))
        except Exception:  # a predicate that cannot judge the value refuses it
            return False

    def describe(self) -> str:
        """The noun given at construction."""
        return self.noun


ConstraintLike = Constraint | type | None


def _as_constraint(c: ConstraintLike) -> Constraint:
    if isinstance(c, Constraint):
        return c
    if c is None:
        return Options(None)
    if isinstance(c, type):
        return IsInstance(c)
    raise ConfigError(f"expected a Constraint, a type or None in parameter_constraints; got {c!r}")


def describe_constraints(constraints: Iterable[ConstraintLike]) -> str:
    """The constraints joined as one phrase: "an int >= 1 or None"."""
    parts = [_as_constraint(c).describe() for c in constraints]
    parts = ["None" if p == "None" else p for p in parts]
    if len(parts) <= 1:
        return "".join(parts)
    return ", ".join(parts[:-1]) + " or " + parts[-1]


def check_param(owner: str, name: str, value: Any, constraints: Iterable[ConstraintLike]) -> Any:
    """``value`` when one of ``constraints`` accepts it; otherwise ConfigError in scikit-learn's wording.

    "The 'k' parameter of Stratified must be an int >= 1. Got 0 instead."
    """
    cons = [_as_constraint(c) for c in constraints]
    if any(c.accepts(value) for c in cons):
        return value
    raise ConfigError(
        f"The {name!r} parameter of {owner} must be {describe_constraints(cons)}. Got {value!r} instead.",
        parameter=name,
        owner=owner,
    )


def _one_line_error(owner: str, exc: ValidationError) -> ConfigError:
    """A pydantic ValidationError as one ConfigError sentence naming the parameter, what it needs and what came."""
    first = exc.errors()[0]
    name = ".".join(str(p) for p in first.get("loc", ())) or "?"
    if first.get("type") == "missing":
        return ConfigError(f"{owner} needs the {name!r} parameter; got none", parameter=name, owner=owner)
    msg = str(first.get("msg", "invalid value"))
    msg = msg[:1].lower() + msg[1:]
    more = f" (and {exc.error_count() - 1} more problems)" if exc.error_count() > 1 else ""
    return ConfigError(
        f"The {name!r} parameter of {owner} is not valid: {msg}. Got {first.get('input')!r} instead{more}.",
        parameter=name, owner=owner,
    )


class Component(BaseModel):
    """Frozen pydantic base of registered components, with declared parameter constraints.

    ``parameter_constraints`` maps a field name to the forms its value may take (a
    :class:`Constraint`, a type, or None); a value is accepted when any form accepts it.
    They are checked on the raw input, before pydantic's own validation. Unknown parameters
    are refused with the list of known ones.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")
    registry_name: ClassVar[str] = ""
    registry_kind: ClassVar[str] = ""
    parameter_constraints: ClassVar[dict[str, list[ConstraintLike]]] = {}

    @model_validator(mode="wrap")
    @classmethod
    def _validate(cls, data: Any, handler: Callable[[Any], Any]) -> Any:
        if isinstance(data, Mapping):
            cls._check_parameters(data)
        try:
            return handler(data)
        except ValidationError as exc:  # what the declared constraints do not cover: still one line
            raise _one_line_error(cls.__name__, exc) from None

    @classmethod
    def _check_parameters(cls, data: Mapping[str, Any]) -> None:
        owner = cls.__name__
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
        """Instances the contract checks (:mod:`mitigate.testing.checks`) exercise; override when defaults are not enough."""
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
