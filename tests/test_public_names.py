"""One import path per name: public names live in package ``__init__`` files, every other module is private.

A package exports its names from its ``__init__``; its modules are ``_private``, so a name is reached one
way (``mitigate.lm.LM``, never also ``mitigate.lm.base.LM``) and a module can move without a shim. The few
public modules are the top-level modules of the bottom layer, the adapters (each an optional extra of its
own) and ``__main__`` files.
"""

from __future__ import annotations

import ast
import importlib
import pkgutil
import subprocess
import sys
from pathlib import Path

import pytest

import mitigate

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "mitigate"

PUBLIC_MODULES = {
    "mitigate.errors",
    "mitigate.scale",
    "mitigate.paths",
    "mitigate.registry",
    "mitigate.constraints",
    "mitigate.adapters.deepeval",
    "mitigate.adapters.inspect_ai",
    "mitigate.adapters.promptfoo",
    "mitigate.__main__",
    "mitigate.testing.__main__",
}
"""Modules (not packages) whose names are imported from the module itself."""


def _module_names() -> list[str]:
    names = []
    for path in sorted(PACKAGE.rglob("*.py")):
        parts = list(path.relative_to(ROOT).with_suffix("").parts)
        names.append(".".join(parts[:-1] if parts[-1] == "__init__" else parts))
    return names


def _packages() -> list[str]:
    return [n for n in _module_names() if (ROOT / n.replace(".", "/") / "__init__.py").exists()]


def test_every_module_is_private_but_packages_and_the_named_public_ones() -> None:
    public = {n for n in _module_names() if not any(part.startswith("_") for part in n.split(".")[1:])}
    public |= {n for n in _module_names() if n.endswith("__main__")}
    assert public - set(_packages()) == PUBLIC_MODULES


@pytest.mark.parametrize("package", _packages())
def test_a_packages_names_resolve_and_dir_shows_them_and_its_public_subpackages(package: str) -> None:
    module = importlib.import_module(package)
    exported = set(getattr(module, "__all__", ()))
    subpackages = {m.name for m in pkgutil.iter_modules(module.__path__) if not m.name.startswith("_")}
    assert not exported & subpackages, "a name and a module of the same name"
    for name in exported:
        assert getattr(module, name) is not None
    if "lazy_exports" in (PACKAGE.parent / module.__file__).read_text(encoding="utf-8"):
        assert set(dir(module)) == exported
        assert not {"Any", "TYPE_CHECKING", "importlib", "lazy_exports", "annotations"} & set(dir(module))


def test_no_object_is_exported_by_two_packages() -> None:
    homes: dict[int, list[str]] = {}
    for package in _packages():
        if package == "mitigate":
            continue  # the root re-exports the most used names of the packages, for users
        module = importlib.import_module(package)
        for name in getattr(module, "__all__", ()):
            value = getattr(module, name)
            if isinstance(value, (type, type(len))) or callable(value):
                homes.setdefault(id(value), []).append(f"{package}.{name}")
    assert [paths for paths in homes.values() if len(paths) > 1] == []


def test_the_root_exports_only_names_its_packages_export() -> None:
    for name in mitigate.__all__:
        value = getattr(mitigate, name)
        home = ".".join(value.__module__.split(".")[:2])  # the top-level package (or module) defining it
        assert getattr(importlib.import_module(home), name) is value, f"{name}: not exported by {home}"


def test_at_most_five_names_are_re_exported_outside_package_inits() -> None:
    """A module that imports a name from elsewhere and lists it in its ``__all__`` re-exports it."""
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        if path.name == "__init__.py":
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"))
        imported = {
            a.asname or a.name for node in tree.body if isinstance(node, ast.ImportFrom) for a in node.names
        }
        for node in tree.body:
            if isinstance(node, ast.Assign) and any(
                getattr(t, "id", None) == "__all__" for t in node.targets
            ):
                found += [
                    f"{path.relative_to(ROOT)}: {n}" for n in ast.literal_eval(node.value) if n in imported
                ]
    assert len(found) <= 5, found


def test_an_unknown_name_is_an_attribute_error() -> None:
    with pytest.raises(AttributeError, match="has no attribute 'no_such_name'"):
        _ = mitigate.no_such_name
    with pytest.raises(AttributeError, match="has no attribute 'no_such_name'"):
        _ = importlib.import_module("mitigate.harness").no_such_name


def test_importing_a_package_imports_none_of_its_modules() -> None:
    code = (
        "import sys, mitigate.report, mitigate.harness, mitigate.lm; "
        "print(sorted(m for m in sys.modules if m.startswith('mitigate.') and '._' in m and m != "
        "'mitigate._lazy'))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=ROOT)
    assert out.stdout.strip() == "[]"
