"""Shared test settings: every test gets its own LM cache folder, so no run reads another's answers."""

from __future__ import annotations

import os

import pytest

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")  # dspy/litellm: never fetch a price map


@pytest.fixture(autouse=True)
def _isolated_lm_cache(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MITIGATE_CACHE_DIR", str(tmp_path_factory.mktemp("lm-cache")))


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """The slow tests first (otherwise in collection order): under pytest-xdist a long test handed out last
    leaves the other workers idle while it runs, so the longest ones start while there is work to balance."""
    items.sort(key=lambda item: item.get_closest_marker("slow") is None)
