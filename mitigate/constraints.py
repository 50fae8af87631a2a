"""Parameter constraints declared once and worded once (:class:`Interval`, :class:`Options`,
:class:`IsInstance`, :class:`Satisfies`), and :func:`check_param`'s one-line refusal in scikit-learn's
wording: "The 'k' parameter of Stratified must be an int >= 1. Got 0 instead." Only the errors are
imported, so the command line checks its options without pydantic."""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Iterable
from typing import Any, ClassVar, Literal

from mitigate.errors import ConfigError

__all__ = [
    "Constraint",
    "ConstraintLike",
    "Interval",
    "IsInstance",
    "Options",
    "Satisfies",
    "as_constraint",
    "check_param",
    "describe_constraints",
]


class Constraint:
    """One acceptable form of a parameter value; :meth:`accepts` decides, :meth:`describe` words it."""

    def accepts(self, value: Any) -> bool:
        """True when ``value`` satisfies the constraint."""
        raise NotImplementedError

    def describe(self) -> str:
        """The constraint as a noun phrase ("an int >= 1")."""
        raise NotImplementedError


class Interval(Constraint):
    """A finite number of type ``kind`` (int or float; a bool is neither) within bounds (``None``: open);
    ``closed`` says which bounds are included: "both", "left", "right" or "neither"."""

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
        number: float = value  # compared as a number below, once its type is checked
        ok_types: tuple[type, ...] = (int,) if self.kind is int else (int, float)
        if not isinstance(value, ok_types) or (isinstance(value, float) and not math.isfinite(value)):
            return False
        if self.left is not None:
            if number < self.left or (number == self.left and self.closed in ("right", "neither")):
                return False
        if self.right is not None:
            if number > self.right or (number == self.right and self.closed in ("left", "neither")):
                return False
        return True

    def describe(self) -> str:
        """ "an int >= 1", "a float in (0, 1]", "an int"."""
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
        """ "one of 'a', 'b'" (a single option: "'a'")."""
        if len(self.values) == 1:
            return repr(self.values[0])
        return "one of " + ", ".join(repr(v) for v in self.values)


class IsInstance(Constraint):
    """An instance of one of ``types`` (an int is not a bool here; a float accepts an int)."""

    _NOUNS: ClassVar[dict[type, str]] = {int: "an int"}  # any other type: "a <name>"

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
        """ "a str", "a Scale" or the given noun."""
        if self.noun:
            return self.noun
        return " or ".join(self._NOUNS.get(t, f"a {t.__name__}") for t in self.types)


class Satisfies(Constraint):
    """A value for which ``predicate`` is true (one that raises counts as false), described by ``noun``
    ("a non-empty tuple of item ids")."""

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


def as_constraint(c: ConstraintLike) -> Constraint:
    """``c`` as a :class:`Constraint`: a type is :class:`IsInstance`, None is ``Options(None)``."""
    if isinstance(c, Constraint):
        return c
    if c is None:
        return Options(None)
    if isinstance(c, type):
        return IsInstance(c)
    raise ConfigError(f"expected a Constraint, a type or None in parameter_constraints; got {c!r}")


def describe_constraints(constraints: Iterable[ConstraintLike]) -> str:
    """The constraints joined as one phrase: "an int >= 1 or None"."""
    parts = [as_constraint(c).describe() for c in constraints]
    if len(parts) <= 1:
        return "".join(parts)
    return ", ".join(parts[:-1]) + " or " + parts[-1]


def check_param(owner: str, name: str, value: Any, constraints: Iterable[ConstraintLike]) -> Any:
    """``value`` when one of ``constraints`` accepts it; otherwise ConfigError in scikit-learn's wording."""
    cons = [as_constraint(c) for c in constraints]
    if any(c.accepts(value) for c in cons):
        return value
    meant = _meant(value, cons)
    hint = f" (did you mean {meant!r}?)" if meant is not None else ""
    raise ConfigError(
        f"The {name!r} parameter of {owner} must be {describe_constraints(cons)}. Got {value!r} "
        f"instead{hint}.",
        parameter=name,
        owner=owner,
    )


def _meant(value: Any, constraints: Iterable[Constraint]) -> Any:
    """The one option a refused ``value`` plainly stands for (in another case, "Random"; or one of its parts,
    100 for "1-100"), or None; only ever shown in the error, never substituted."""
    if isinstance(value, bool) or not isinstance(value, (str, int, float)):
        return None
    text = (f"{value:g}" if isinstance(value, float) else str(value)).strip().lower()
    options = [v for c in constraints if isinstance(c, Options) for v in c.values if isinstance(v, str)]
    for same in (lambda o: o.lower() == text, lambda o: text in re.split(r"[^0-9a-z.]+", o.lower())):
        hits = [o for o in options if same(o)]
        if len(hits) == 1:
            return hits[0]
        if hits:
            return None
    return None
