"""Help texts that name what is registered: a stand-in written when the option is declared, filled when help
is printed.

A help text such as ``--engine``'s lists the search engines registered now, plugins' included. Looking them up
when the option is declared would import the registry and the package of that kind whenever a command is
loaded; the help holds :func:`registered_names` instead, and :func:`fill_registered_names` replaces it when
that command's help is printed.
"""

from __future__ import annotations

import re


def registered_names(kind: str | None = None) -> str:
    """A help text's stand-in for the names registered for ``kind`` ("engine", "selector" ...; None: the
    kinds)."""
    return "{registered}" if kind is None else f"{{registered:{kind}}}"


_REGISTERED = re.compile(r"\{registered(?::([a-z-]+))?\}")


def fill_registered_names(text: str, *, shipped: bool = False) -> str:
    """``text`` with each :func:`registered_names` stand-in replaced by the names registered now,
    comma-separated.

    Benchmarks include their ``<prefix>:<path>`` forms. ``shipped``: only what mitigate itself registers (not
    plugins' or tests' components), for the generated docs/cli.md.
    """
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
