"""Old names and import paths kept working: each use warns with a DeprecationWarning naming the new one.

- :func:`renamed` wraps a function under its old name; :func:`warn_renamed` is the warning alone,
  for names read from text (a measure name in a config file or on the command line).
- :func:`moved` is a module ``__getattr__`` for names whose module changed: a module that moved
  (or whose names were spread over several new modules) keeps a file at its old path holding only
  ``__getattr__ = moved(__name__, ...)``, and a module that lost a few names to another one ends
  with the same line for those. ``from old.path import name`` still gives the very object, with a
  warning that names where to import it from now.
"""

from __future__ import annotations

import functools
import importlib
import warnings
from collections.abc import Callable, Mapping
from typing import Any, ParamSpec, TypeVar

__all__ = ["moved", "renamed", "warn_renamed"]

_P = ParamSpec("_P")
_R = TypeVar("_R")


def warn_renamed(old: str, new: str, *, stacklevel: int = 3) -> None:
    """Warn that ``old`` is deprecated and ``new`` is its name now."""
    warnings.warn(f"{old} is deprecated; use {new}", DeprecationWarning, stacklevel=stacklevel)


def renamed(func: Callable[_P, _R], old: str, new: str) -> Callable[_P, _R]:
    """``func`` under its old name ``old``: it runs ``func`` after a DeprecationWarning naming ``new``."""

    @functools.wraps(func)
    def wrapper(*args: _P.args, **kwargs: _P.kwargs) -> _R:
        warn_renamed(old, new)
        return func(*args, **kwargs)

    wrapper.__doc__ = f"Deprecated name of :func:`{new}` (same call; warns)."
    return wrapper


def moved(old: str, homes: str | Mapping[str, str], public: str | None = None) -> Callable[[str], Any]:
    """A module ``__getattr__`` for the old module ``old``.

    ``homes`` is the one module every name moved to (a renamed module: any name it holds, private
    ones too), or a mapping name -> defining module (names spread over several modules); ``public``
    is where users should import from when it differs from the defining module (a package
    re-exporting them). An unknown name is an :class:`AttributeError`, as for any module.
    """

    def __getattr__(name: str) -> Any:
        home = homes if isinstance(homes, str) else homes.get(name)
        if home is None or name.startswith("__"):
            raise AttributeError(f"module {old!r} has no attribute {name!r}")
        module = importlib.import_module(home)
        if not hasattr(module, name):
            raise AttributeError(f"module {old!r} has no attribute {name!r}")
        where = f"{public} (defined in {home})" if public and public != home else home
        warnings.warn(f"{old}.{name} moved: import it from {where}", DeprecationWarning, stacklevel=2)
        return getattr(module, name)

    return __getattr__
