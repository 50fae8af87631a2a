"""Where mitigate finds shared data and keeps its caches."""

from __future__ import annotations

import os
from pathlib import Path

_REPO_ROOT = Path(__file__).resolve().parent.parent


def data_dir() -> Path | None:
    """The shared data folder: ``$MITIGATE_DATA_DIR``, else ``../shared/data`` beside the repo when present,
    else the folder ``mitigate data fetch`` downloads into (:func:`user_data_dir`) when present.

    Returns None when none exists, so tests can skip cleanly.
    """
    env = os.environ.get("MITIGATE_DATA_DIR")
    if env:
        return Path(env)
    candidate = _REPO_ROOT.parent / "shared" / "data"
    if candidate.is_dir():
        return candidate
    fetched = user_data_dir()
    return fetched if fetched.is_dir() else None


def user_data_dir() -> Path:
    """Where ``mitigate data fetch`` puts benchmarks when no data folder is set: ``$XDG_DATA_HOME/mitigate/data``,
    else ``~/.local/share/mitigate/data``."""
    base = os.environ.get("XDG_DATA_HOME") or str(Path.home() / ".local" / "share")
    return Path(base) / "mitigate" / "data"


def cache_dir() -> Path:
    """Where LM-call caches live: ``$MITIGATE_CACHE_DIR``, else ``~/.cache/mitigate``."""
    env = os.environ.get("MITIGATE_CACHE_DIR")
    if env:
        return Path(env)
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "mitigate"
