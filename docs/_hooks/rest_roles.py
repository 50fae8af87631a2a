"""MkDocs hook: the Sphinx roles of the package's docstrings become code links on the API pages.

The docstrings cross-reference in reST (``:class:`~mitigate.errors.CapabilityError```, ``:func:`get```), which
mkdocstrings renders as the literal text ``:class:`` before the code. Each such role becomes the code
alone (``~`` keeps the last dotted part, as Sphinx shows it), linked through mkdocs-autorefs when the target
is on the site; an unknown target stays plain code without a warning.
"""

from __future__ import annotations

import html
import re
from typing import Any

ROLE = re.compile(
    r":(?:py:)?(?:class|meth|func|attr|mod|data|obj|exc|const|ref|doc|term):<code>([^<]+)</code>"
)


def _code(match: re.Match[str]) -> str:
    target = html.unescape(match.group(1)).strip()
    short = target.startswith("~")
    target = target.lstrip("~.!")
    if "<" in target and target.endswith(">"):  # :ref:`title <target>`
        title, _, target = target[:-1].rpartition("<")
        shown = title.strip()
    else:
        shown = target.rsplit(".", 1)[-1] if short else target
    code = f"<code>{html.escape(shown)}</code>"
    if not re.fullmatch(r"[A-Za-z_][\w.]*", target) or "." not in target:
        return code
    return f'<autoref identifier="{html.escape(target)}" optional>{code}</autoref>'


def convert(content: str) -> str:
    """``content`` (a page's HTML) with every reST role replaced by its (linked) code."""
    return ROLE.sub(_code, content)


def on_page_content(html_text: str, **kwargs: Any) -> str:
    """Convert the roles of a page once its Markdown (and its docstrings) are rendered."""
    return convert(html_text)
