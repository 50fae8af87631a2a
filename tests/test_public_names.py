"""The public faces: what ``dir()`` shows of the root package, ``mitigate.harness`` and ``mitigate.run``."""

from __future__ import annotations

import importlib
import pkgutil
import subprocess
import sys

import pytest

import mitigate


def _modules(package: str) -> set[str]:
    module = importlib.import_module(package)
    return {m.name for m in pkgutil.iter_modules(module.__path__) if not m.name.startswith("_")}


@pytest.mark.parametrize("package", ["mitigate", "mitigate.harness", "mitigate.run"])
def test_dir_shows_the_public_names_and_the_modules_only(package: str) -> None:
    module = importlib.import_module(package)
    assert set(dir(module)) == set(module.__all__) | _modules(package)
    assert not {"Any", "TYPE_CHECKING", "importlib", "lazy_exports", "annotations"} & set(dir(module))


@pytest.mark.parametrize("package", ["mitigate", "mitigate.harness", "mitigate.run"])
def test_every_exported_name_resolves_and_no_module_shadows_it(package: str) -> None:
    module = importlib.import_module(package)
    assert module.__all__, f"{package} exports nothing"
    assert not set(module.__all__) & _modules(package)
    for name in module.__all__:
        assert getattr(module, name) is not None


def test_the_runner_and_the_harness_are_reached_from_their_packages() -> None:
    from mitigate.harness import CompareConfig, check_compare, diff_judgments, write_judgments
    from mitigate.harness.compare import CompareConfig as config_here
    from mitigate.harness.compare import check_compare as check_here
    from mitigate.harness.diff import diff_judgments as diff_here
    from mitigate.harness.judgments_file import write_judgments as write_here
    from mitigate.run import run, run_sync
    from mitigate.run.runner import run as run_here
    from mitigate.run.runner import run_sync as run_sync_here

    assert (CompareConfig, check_compare, diff_judgments, write_judgments) == (config_here, check_here,
                                                                               diff_here,
                                                                                 write_here)
    assert (run, run_sync) == (run_here, run_sync_here)


def test_an_unknown_name_is_an_attribute_error() -> None:
    with pytest.raises(AttributeError, match="has no attribute 'no_such_name'"):
        _ = mitigate.no_such_name
    with pytest.raises(AttributeError, match="has no attribute 'no_such_name'"):
        _ = importlib.import_module("mitigate.harness").no_such_name


def test_importing_one_harness_module_does_not_import_the_comparison() -> None:
    code = ("import sys, mitigate.harness.tables; "
            "print('mitigate.harness.compare' in sys.modules, 'mitigate.run.runner' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.split() == ["False", "False"]
