"""CSV cells no spreadsheet runs (CSV injection, ``docs/recorded_format.md``): :func:`csv_cell` writes a
text cell starting like a formula with one leading apostrophe (one more if it already starts with an
escaped one), :func:`csv_value` reads it back exactly."""

from __future__ import annotations

from typing import Any

FORMULA_START = ("=", "+", "-", "@", "\t", "\r")
"""The first characters that make a spreadsheet read a cell as a formula."""

_ESCAPED = (*FORMULA_START, "'")


def csv_cell(value: Any) -> Any:
    """``value`` as a CSV cell: a text starting like a formula (or an escaped one) gets an apostrophe."""
    if isinstance(value, str) and (value.startswith(FORMULA_START) or _escaped(value)):
        return "'" + value
    return value


def csv_value(text: str) -> str:
    """The text a cell written by :func:`csv_cell` held."""
    return text[1:] if _escaped(text) else text


def _escaped(text: str) -> bool:
    """Whether ``text`` starts with an apostrophe before a formula start or another apostrophe."""
    return text.startswith("'") and text[1:2] in _ESCAPED
