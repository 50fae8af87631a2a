"""The package's layering: no import cycle, no import of another module's private name, each layer importing
only from below.

The imports are read with ``ast`` from the source files, module-level and function-level
alike (an import inside a function is still a dependency), imports under ``if TYPE_CHECKING:``
too (a cycle a type checker sees is two modules sharing one concept), and so are the modules
named in ``importlib.import_module("mitigate....")`` calls (a literal name, or the literal start
of an f-string). Importing ``mitigate.a.b`` also runs the package ``mitigate.a`` (its
``__init__``), so that counts as an import of the package too. No module may take a name from
the root package (``from mitigate import JudgePrompt``): the root re-exports for users.

The one import by a name known only at run time is the registry's discovery
(:data:`mitigate.registry.KIND_PACKAGES`: a kind's package is imported on its first
look-up), which is discovery by module name, as entry points are.
"""

from __future__ import annotations

import ast
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
from scipy.sparse import csr_matrix
from scipy.sparse.csgraph import connected_components

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "mitigate"

LAYERS: tuple[tuple[str, ...], ...] = (
    ("errors", "_lazy", "constraints", "scale", "registry", "paths"),
    ("lm",),
    ("parse",),
    ("data",),
    ("prompt",),
    ("judge",),
    ("replay",),
    ("measures", "estimators"),
    ("run",),
    ("probes",),
    ("selectors",),
    ("strategies",),
    ("search",),
    ("report",),
    ("diff",),
    ("harness",),
    ("label",),
    ("adapters",),
    ("testing",),
    ("cli", "__main__"),
)
"""The layers, bottom first: a module may import from its own layer and the layers beneath it."""

UPWARD_ALLOWED: dict[tuple[str, str], str] = {}
"""Known imports from a lower layer to a higher one, each with why it stays."""


def _modules() -> dict[str, Path]:
    out = {}
    for path in PACKAGE.rglob("*.py"):
        parts = list(path.relative_to(ROOT).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        out[".".join(parts)] = path
    return out


MODULES = _modules()


def _is_package(name: str) -> bool:
    return MODULES[name].name == "__init__.py"


def _import_module_target(node: ast.Call) -> str | None:
    """The mitigate module an ``importlib.import_module(...)`` call names, as far as its text says; else None.

    A literal name is taken whole; an f-string up to the last dot of its literal start
    (``f"mitigate.lm.{name}"`` -> ``mitigate.lm``).
    """
    func = node.func
    called = func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else None
    if called != "import_module" or not node.args:
        return None
    arg = node.args[0]
    if isinstance(arg, ast.Constant) and isinstance(arg.value, str):
        text = arg.value
    elif isinstance(arg, ast.JoinedStr) and arg.values and isinstance(arg.values[0], ast.Constant):
        text = str(arg.values[0].value).rsplit(".", 1)[0]
    else:
        return None
    return text if text.split(".")[0] == "mitigate" else None


def _imports(name: str) -> Iterator[tuple[str, str | None, int]]:
    """(imported module, imported name or None, line) for every mitigate import in module ``name``."""
    tree = ast.parse(MODULES[name].read_text(encoding="utf-8"))
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and (target := _import_module_target(node)) is not None:
            yield target, None, node.lineno
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.split(".")[0] == "mitigate":
                    yield alias.name, None, node.lineno
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = name.split(".") if _is_package(name) else name.split(".")[:-1]
                base = base[: len(base) - node.level + 1]
                module = ".".join([*base, *([node.module] if node.module else [])])
            else:
                module = node.module or ""
            if module.split(".")[0] != "mitigate":
                continue
            for alias in node.names:
                yield module, alias.name, node.lineno


def _graph() -> dict[str, set[str]]:
    """Module -> the mitigate modules importing it runs (the imported module and its parent packages)."""
    graph: dict[str, set[str]] = {name: set() for name in MODULES}
    for name in MODULES:
        for module, imported, _ in _imports(name):
            targets = [module]
            if imported is not None and f"{module}.{imported}" in MODULES:
                targets.append(f"{module}.{imported}")
            for target in targets:
                parts = target.split(".")
                for i in range(2, len(parts) + 1):  # the packages on the way run too (not the root facade)
                    dep = ".".join(parts[:i])
                    if dep in MODULES and dep != name and not name.startswith(dep + "."):
                        graph[name].add(dep)
    return graph


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components with more than one module."""
    names = sorted(graph)
    index = {n: i for i, n in enumerate(names)}
    edges = [(index[a], index[b]) for a in names for b in graph[a]]
    rows, cols = zip(*edges, strict=True) if edges else ((), ())
    matrix = csr_matrix((np.ones(len(edges)), (rows, cols)), shape=(len(names), len(names)))
    _, labels = connected_components(matrix, directed=True, connection="strong")
    groups: dict[int, list[str]] = {}
    for n, label in zip(names, labels, strict=True):
        groups.setdefault(int(label), []).append(n)
    return sorted(g for g in groups.values() if len(g) > 1)


def _layer(module: str) -> int | None:
    parts = module.split(".")
    if len(parts) < 2:
        return None  # the root facade
    for rank, names in enumerate(LAYERS):
        if parts[1] in names:
            return rank
    raise AssertionError(f"module {module} is in no layer of LAYERS; add its package there")


def test_the_package_has_no_import_cycle() -> None:
    cycles = _cycles(_graph())
    assert not cycles, "import cycles (each list imports itself through the others): " + "; ".join(
        " -> ".join(c) for c in cycles
    )


@pytest.mark.slow
def test_no_module_imports_another_modules_private_name() -> None:
    found = []
    for name in MODULES:
        tree = ast.parse(MODULES[name].read_text(encoding="utf-8"))
        aliases: dict[str, str] = {}
        for module, imported, line in _imports(name):
            if imported is None:
                continue
            full = f"{module}.{imported}"
            if full in MODULES:
                aliases[imported] = full
            elif imported.startswith("_") and not imported.startswith("__") and module != name:
                found.append(f"{name}:{line} imports {imported} from {module}")
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                for alias in node.names:
                    if alias.asname and alias.name in MODULES:
                        aliases[alias.asname] = alias.name
        for node in ast.walk(tree):  # module._name through an imported module
            if (
                isinstance(node, ast.Attribute)
                and isinstance(node.value, ast.Name)
                and node.value.id in aliases
                and node.attr.startswith("_")
                and not node.attr.startswith("__")
            ):
                found.append(f"{name}:{node.lineno} uses {aliases[node.value.id]}.{node.attr}")
    assert not found, "private names used across modules:\n" + "\n".join(found)


def test_each_layer_imports_only_from_itself_and_below() -> None:
    upward = []
    for name, deps in _graph().items():
        here = _layer(name)
        for dep in deps:
            there = _layer(dep)
            if here is None or there is None or there <= here or (name, dep) in UPWARD_ALLOWED:
                continue
            upward.append(f"{name} (layer {here}) imports {dep} (layer {there})")
    assert not upward, "imports from a higher layer:\n" + "\n".join(sorted(upward))


def test_no_module_takes_a_name_from_the_root_package() -> None:
    found = [
        f"{name}:{line} imports {imported} from the root package"
        for name in MODULES
        if name != "mitigate"
        for module, imported, line in _imports(name)
        if module == "mitigate" and imported is not None and f"mitigate.{imported}" not in MODULES
    ]
    assert not found, (
        "names taken from the root package (import them from their own module):\n"
    ) + "\n".join(found)


def test_lm_parse_and_data_are_layered_in_that_order() -> None:
    lm, parse, data = (_layer(f"mitigate.{n}") for n in ("lm", "parse", "data"))
    assert lm is not None and parse is not None and data is not None
    assert lm < parse < data, f"expected lm < parse < data in LAYERS; got lm={lm}, parse={parse}, data={data}"
    graph = _graph()
    assert "mitigate.lm" in graph["mitigate.parse._logprobs"]  # the order is the one the imports need
    assert "mitigate.parse" in graph["mitigate.data._released"]


def test_prompt_sits_above_parse_data_and_lm_and_run_above_judge() -> None:
    prompt, run, judge = (_layer(f"mitigate.{n}") for n in ("prompt", "run", "judge"))
    assert prompt is not None and run is not None and judge is not None
    assert max(_layer(f"mitigate.{n}") or 0 for n in ("lm", "parse", "data")) < prompt < judge < run


def test_the_layering_test_sees_importlib_and_root_package_imports() -> None:
    call = ast.parse('importlib.import_module(f"mitigate.lm.{kind}")').body[0].value
    assert isinstance(call, ast.Call) and _import_module_target(call) == "mitigate.lm"
    call = ast.parse('import_module("mitigate.search")').body[0].value
    assert isinstance(call, ast.Call) and _import_module_target(call) == "mitigate.search"
    call = ast.parse("importlib.import_module(package)").body[0].value
    assert isinstance(call, ast.Call) and _import_module_target(call) is None
    assert any(
        module == "mitigate.lm" and imported is None
        for module, imported, _ in _imports("mitigate.lm._registry")
    )


def test_the_layering_test_sees_cycles_and_private_imports() -> None:
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    graph = _graph()
    assert (
        "mitigate.strategies" in graph["mitigate.strategies._demos"]
        or "mitigate.selectors" in graph["mitigate.strategies._demos"]
    )
    assert (
        "mitigate.selectors" in graph["mitigate.strategies._perturbed_demos"]
    )  # through the package __init__


def test_importing_the_strategies_does_not_import_scipy() -> None:
    code = "import sys, mitigate.strategies; print('scipy' in sys.modules)"
    out = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        check=True,
        cwd=ROOT,
        env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"},
    )
    assert out.stdout.strip() == "False"


def test_importing_the_selectors_does_not_import_the_strategies_or_the_search() -> None:
    code = (
        "import sys, mitigate.selectors; "
        "print(sorted(m for m in sys.modules if m.startswith(('mitigate.strategies', "
        "'mitigate.search'))))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        check=True,
        cwd=ROOT,
        env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"},
    )
    assert out.stdout.strip() == "[]"


def test_importing_the_answer_format_imports_no_search_strategy_selector_or_runner() -> None:
    code = (
        "import sys, mitigate.prompt.answer; print(sorted({m.split('.')[1] for m in sys.modules "
        "if m.startswith(('mitigate.search', 'mitigate.strategies', 'mitigate.selectors', "
        "'mitigate.run', 'mitigate.harness', 'mitigate.cli'))}))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        check=True,
        cwd=ROOT,
        env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"},
    )
    assert out.stdout.strip() == "[]"
