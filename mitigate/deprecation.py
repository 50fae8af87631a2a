"""Old import paths kept working: a module whose names moved answers each with a warning naming the new home.

A module that moved (or whose names were spread over several new modules) keeps a file at its old
path holding only ``__getattr__ = moved(__name__, ...)``: ``from old.path import name`` still
gives the very object, with a :class:`DeprecationWarning` that names where to import it from now.
"""

from __future__ import annotations

import importlib
import warnings
from collections.abc import Callable, Mapping
from typing import Any

__all__ = ["moved"]


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
