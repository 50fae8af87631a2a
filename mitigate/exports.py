"""A package's public names imported on first use (PEP 562), so importing one of its modules stays light.

A package declares ``__all__`` and where each name lives, then takes its ``__getattr__`` and
``__dir__`` from :func:`lazy_exports`::

    __all__ = ["compare", "estimate"]
    __getattr__, __dir__ = lazy_exports(__name__, {"compare": "mitigate.harness.compare", ...})

``dir(package)`` then lists the public names and the package's own modules, nothing it imported
for itself (``Any``, ``importlib`` ...).
"""

from __future__ import annotations

import importlib
import pkgutil
import sys
from collections.abc import Callable, Mapping
from typing import Any


def lazy_exports(package: str,
                 where: Mapping[str, str]) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """``__getattr__`` and ``__dir__`` for ``package``: ``where`` maps each public name to the module defining
    it.

    An unknown name that is a module of the package is imported (``mitigate.lm``); any other is an
    AttributeError as usual.
    """

    def __getattr__(name: str) -> Any:
        module = where.get(name)
        if module is not None:
            value = getattr(importlib.import_module(module), name)
            setattr(sys.modules[package], name, value)  # the next look-up skips this function
            return value
        if not name.startswith("_"):
            try:
                return importlib.import_module(f"{package}.{name}")
            except ModuleNotFoundError as exc:
                if exc.name != f"{package}.{name}":
                    raise
        raise AttributeError(f"module {package!r} has no attribute {name!r}")

    def __dir__() -> list[str]:
        own = sys.modules[package]
        public = set(getattr(own, "__all__", ())) | set(where)
        modules = {m.name for m in pkgutil.iter_modules(getattr(own, "__path__", []))
                   if not m.name.startswith("_")}
        return sorted(public | modules)

    return __getattr__, __dir__
