"""Where mitigate finds shared data and keeps its caches."""

from __future__ import annotations

import os
from pathlib import Path

_REPO_ROOT = Path(__file__).resolve().parent.parent


def data_dir() -> Path | None:
    """The shared data folder: ``$MITIGATE_DATA_DIR``, else ``../shared/data`` beside the repo when present.

    Returns None when neither exists, so tests can skip cleanly.
    """
    env = os.environ.get("MITIGATE_DATA_DIR")
    if env:
        return Path(env)
    candidate = _REPO_ROOT.parent / "shared" / "data"
    return candidate if candidate.is_dir() else None


def cache_dir() -> Path:
    """Where LM-call caches live: ``$MITIGATE_CACHE_DIR``, else ``~/.cache/mitigate``."""
    env = os.environ.get("MITIGATE_CACHE_DIR")
    if env:
        return Path(env)
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "mitigate"
