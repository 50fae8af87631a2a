"""Running a coroutine from synchronous code, with one clear error when a loop is already running.

Components with an async core (``afit``, ``asearch``) offer a synchronous twin that calls
:func:`run_sync`. Called from inside a running event loop (a notebook cell, an async app) it
cannot start a second loop, so it refuses with a :class:`~mitigate.errors.ConfigError` naming
the ``await`` form to use instead.
"""

from __future__ import annotations

import asyncio
from collections.abc import Coroutine
from typing import Any, TypeVar

from mitigate.errors import ConfigError

__all__ = ["run_sync"]

T = TypeVar("T")


def run_sync(coro: Coroutine[Any, Any, T], *, what: str, instead: str) -> T:
    """``asyncio.run(coro)``; ConfigError when called inside a running loop (``coro`` is closed, never leaked).

    ``what`` names the call ("HighestRSDemos.fit()"), ``instead`` the async form to await there
    ("m.afit(train, judge)").
    """
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(coro)
    coro.close()
    raise ConfigError(
        f"{what} runs its own event loop and was called inside a running one; expected `await {instead}` there"
    )
