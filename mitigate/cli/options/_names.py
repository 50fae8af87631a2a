"""Help texts that name what is registered (``--engine``: the search engines, plugins' included): a
stand-in when the option is declared, filled when the help is printed, so loading a command imports neither
the registry nor that kind's package."""

from __future__ import annotations

import re


def registered_names(kind: str | None = None) -> str:
    """A help text's stand-in for the names registered for ``kind`` ("engine" ...; None: the kinds)."""
    return "{registered}" if kind is None else f"{{registered:{kind}}}"


_REGISTERED = re.compile(r"\{registered(?::([a-z-]+))?\}")


def fill_registered_names(text: str, *, shipped: bool = False) -> str:
    """``text`` with each :func:`registered_names` stand-in replaced by the names registered now (benchmarks
    with their ``<prefix>:<path>`` forms); ``shipped``: only mitigate's own, for docs/cli.md."""
    if "{registered" not in text:
        return text
    from mitigate.registry import KIND_PACKAGES, registered  # imports the kind's package, for this help alone

    def names(kind: str) -> list[str]:
        table = registered(kind)
        found = [
            n
            for n, obj in table.items()
            if not shipped or str(getattr(obj, "__module__", "")).startswith("mitigate.")
        ]
        if kind == "benchmark":
            from mitigate.data import PATH_LOADERS

            found += [f"{prefix}:<path>" for prefix in PATH_LOADERS]
        return found

    return _REGISTERED.sub(lambda m: ", ".join(names(m.group(1)) if m.group(1) else KIND_PACKAGES), text)
