"""Shared test settings: every test gets its own LM cache folder, so no run reads another's answers."""

from __future__ import annotations

import os

import pytest

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")  # dspy/litellm: never fetch a price map


@pytest.fixture(autouse=True)
def _isolated_lm_cache(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MITIGATE_CACHE_DIR", str(tmp_path_factory.mktemp("lm-cache")))
