"""A package's public names, declared once and imported on first use (PEP 562): a package ``__init__`` lists
them as imports under ``if TYPE_CHECKING:`` and takes ``__getattr__, __dir__, __all__ =
lazy_exports(__name__)``, so importing the package imports none of its modules."""

from __future__ import annotations

import ast
import importlib
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any


def _declared(package: str) -> dict[str, str]:
    """Name -> defining module, read from the ``if TYPE_CHECKING:`` imports of ``package``'s ``__init__``."""
    tree = ast.parse(Path(sys.modules[package].__file__ or "").read_text(encoding="utf-8"))
    where: dict[str, str] = {}
    for node in tree.body:
        if isinstance(node, ast.If) and ast.unparse(node.test) == "TYPE_CHECKING":
            for sub in node.body:
                if isinstance(sub, ast.ImportFrom) and sub.module:
                    where.update({a.asname or a.name: sub.module for a in sub.names})
    return where


def declared_modules(package: str) -> list[str]:
    """The modules a lazy package declares, in the order it declares them (none for a plain module)."""
    module = importlib.import_module(package)
    if not hasattr(module, "__path__"):
        return []
    return list(dict.fromkeys(_declared(package).values()))


def lazy_exports(package: str) -> tuple[Callable[[str], Any], Callable[[], list[str]], list[str]]:
    """``__getattr__``, ``__dir__`` and ``__all__`` for ``package``, from its ``TYPE_CHECKING`` imports."""
    where = _declared(package)

    def __getattr__(name: str) -> Any:
        module = where.get(name)
        if module is None:
            if not name.startswith("_"):  # a public subpackage: ``mitigate.lm`` after ``import mitigate``
                try:
                    return importlib.import_module(f"{package}.{name}")
                except ModuleNotFoundError as exc:
                    if exc.name != f"{package}.{name}":
                        raise
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(module), name)
        setattr(sys.modules[package], name, value)  # the next look-up skips this function
        return value

    def __dir__() -> list[str]:
        return sorted(where)

    return __getattr__, __dir__, list(where)  # __all__ in declared order: the registry imports it so
