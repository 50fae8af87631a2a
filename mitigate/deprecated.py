"""Old public names kept working after a rename: each call warns once per place with a DeprecationWarning
naming the new one.

:func:`renamed` wraps a function under its old name; :func:`warn_renamed` is the warning alone,
for names read from text (a measure name in a config file or on the command line).
"""

from __future__ import annotations

import functools
import warnings
from collections.abc import Callable
from typing import ParamSpec, TypeVar

_P = ParamSpec("_P")
_R = TypeVar("_R")


def warn_renamed(old: str, new: str, *, stacklevel: int = 3) -> None:
    """Warn that ``old`` is deprecated and ``new`` is its name now."""
    warnings.warn(f"{old} is deprecated; use {new}", DeprecationWarning, stacklevel=stacklevel)


def renamed(func: Callable[_P, _R], old: str, new: str) -> Callable[_P, _R]:
    """``func`` under its old name ``old``: it runs ``func`` after a DeprecationWarning naming ``new``."""

    @functools.wraps(func)
    def wrapper(*args: _P.args, **kwargs: _P.kwargs) -> _R:
        warn_renamed(old, new)
        return func(*args, **kwargs)

    wrapper.__doc__ = f"Deprecated name of :func:`{new}` (same call; warns)."
    return wrapper
