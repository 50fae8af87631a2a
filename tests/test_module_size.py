"""Module sizes: none over 750 lines, at most 8 over 600, and each of those says why in its docstring (a
paragraph starting ``Size:``)."""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent.parent / "mitigate"


def _sizes() -> dict[str, int]:
    return {
        p.relative_to(PACKAGE).as_posix(): len(p.read_text(encoding="utf-8").splitlines())
        for p in sorted(PACKAGE.rglob("*.py"))
    }


def test_no_module_is_over_750_lines() -> None:
    assert {rel: n for rel, n in _sizes().items() if n > 750} == {}


def test_at_most_8_modules_are_over_600_lines_and_each_says_why() -> None:
    large = {rel: n for rel, n in _sizes().items() if n > 600}
    assert len(large) <= 8, f"{len(large)} modules over 600 lines: {large}"
    unexplained = []
    for rel in large:
        doc = ast.get_docstring(ast.parse((PACKAGE / rel).read_text(encoding="utf-8"))) or ""
        if not any(line.startswith("Size: ") for line in doc.splitlines()):
            unexplained.append(rel)
    assert unexplained == []
