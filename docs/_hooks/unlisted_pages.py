"""MkDocs hook: a page under docs/ that the nav of mkdocs.yml does not name still gets a place in it.

Pages are added by several people at once; a new page lands in the nav's last section, "More", under its
own first heading, until someone gives it a better place in mkdocs.yml. The site never hides a page.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any


def named_in_nav(nav: Any) -> set[str]:
    """Every page path the nav of mkdocs.yml names."""
    if isinstance(nav, str):
        return {nav}
    if isinstance(nav, list):
        return set().union(*(named_in_nav(x) for x in nav)) if nav else set()
    if isinstance(nav, dict):
        return set().union(*(named_in_nav(x) for x in nav.values())) if nav else set()
    return set()


def title_of(text: str, fallback: str) -> str:
    """A page's first level-1 heading, else the fallback."""
    heading = re.search(r"^# (.+)$", text, flags=re.MULTILINE)
    return heading.group(1).strip() if heading else fallback


def on_files(files: Any, config: Any, **kwargs: Any) -> Any:
    """Append every documentation page the nav leaves out to a "More" section at its end."""
    nav = config.get("nav")
    if not nav:
        return files
    named = named_in_nav(nav)
    extra = []
    for f in files.documentation_pages():
        if f.src_uri not in named and not f.src_uri.startswith("results/"):
            text = Path(f.abs_src_path).read_text(encoding="utf-8") if f.abs_src_path else ""
            extra.append({title_of(text, f.src_uri): f.src_uri})
    if extra:
        nav.append({"More": sorted(extra, key=lambda d: next(iter(d.values())))})
    return files
