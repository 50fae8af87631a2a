"""The docs site's own machinery: the results pages cut from benchmarks/RESULTS.md keep every section and
every number as written, and the nav of mkdocs.yml names only pages that exist (``mkdocs build --strict`` in
.ci/run builds the site itself)."""

from __future__ import annotations

import importlib.util
import re
from pathlib import Path
from types import ModuleType

import pytest

ROOT = Path(__file__).resolve().parents[1]


def _hook(name: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location(name, ROOT / "docs" / "_hooks" / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


results_pages = _hook("results_pages")
unlisted_pages = _hook("unlisted_pages")
rest_roles = _hook("rest_roles")


def test_every_results_section_lands_on_one_page_with_its_text_unchanged() -> None:
    results = ROOT / "benchmarks" / "RESULTS.md"
    _, sections = results_pages.split_results(results.read_text(encoding="utf-8"))
    pages = results_pages.pages(results, ROOT / "docs")
    topic_pages = "".join(text for path, text in pages.items() if path != "results/index.md")
    assert sections
    for heading, body in sections:
        assert topic_pages.count(f"\n## {heading}\n") == 1, heading
        linked = results_pages.repoint_links(body, ROOT / "docs", results)
        assert linked in topic_pages, heading
        # the numbers stay as measured: every number of the section is on its page
        for number in set(re.findall(r"\d[\d,.]*", body)):
            assert number in linked


def test_a_heading_inside_a_code_block_does_not_start_a_section() -> None:
    preamble, sections = results_pages.split_results(
        "# Results\n\nAbout.\n\n## One\n\n```bash\n## not a heading\n```\n\n## Two\n\ntext\n"
    )
    assert preamble == "About."
    assert [h for h, _ in sections] == ["One", "Two"]
    assert "## not a heading" in sections[0][1]


def test_a_section_no_topic_claims_goes_to_more_results(tmp_path: Path) -> None:
    results = tmp_path / "benchmarks" / "RESULTS.md"
    results.parent.mkdir()
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "juries.md").write_text("# Juries\n")
    results.write_text(
        "# Benchmark results\n\nIntro.\n\n## Panels of small judges\n\nA panel: 0.71 "
        "[see](../docs/juries.md#x), [script](bench_panels.py).\n\n## Runner "
        "overhead\n\n1.05x\n"
    )
    pages = results_pages.pages(results, tmp_path / "docs")
    assert "## Panels of small judges" in pages["results/more.md"]
    # a docs page: linked from the results folder
    assert "[see](../juries.md#x)" in pages["results/more.md"]
    assert "script" in pages["results/more.md"] and "bench_panels.py)" not in pages["results/more.md"]
    assert "## Runner overhead" in pages["results/speed.md"]
    assert "No section" in pages["results/reproduction.md"]  # every topic page exists for the nav
    assert "- [More results](more.md)" in pages["results/index.md"]


def _nav_pages() -> set[str]:
    yaml = pytest.importorskip("yaml")
    text = (ROOT / "mkdocs.yml").read_text(encoding="utf-8")
    return unlisted_pages.named_in_nav(yaml.safe_load(text)["nav"])


def test_the_nav_names_only_pages_that_exist_or_are_generated() -> None:
    generated = {f"results/{page}.md" for page, *_ in results_pages.TOPICS} | {
        "results/index.md",
        f"results/{results_pages.MORE[0]}.md",
    }
    for page in _nav_pages():
        assert (ROOT / "docs" / page).is_file() or page in generated, page


def test_a_page_the_nav_leaves_out_is_added_under_more(tmp_path: Path) -> None:
    class Page:
        def __init__(self, uri: str) -> None:
            self.src_uri = uri
            self.abs_src_path = str(tmp_path / uri)
            (tmp_path / uri).write_text(f"# Title of {uri}\n")

    class Files:
        def documentation_pages(self) -> list[Page]:
            return [Page("index.md"), Page("juries.md")]

    config = {"nav": [{"Home": "index.md"}]}
    unlisted_pages.on_files(Files(), config)
    assert config["nav"][-1] == {"More": [{"Title of juries.md": "juries.md"}]}


def test_a_docstrings_rest_roles_become_code_linked_by_autorefs_and_no_role_text_is_left() -> None:
    rendered = (
        "<p>A :class:<code>~mitigate.errors.CapabilityError</code>, :func:<code>get</code> and "
        ":meth:<code>mitigate.judge.Judge.judge</code>; a plain <code>:class:</code> stays.</p>"
    )
    out = rest_roles.convert(rendered)
    assert (
        '<autoref identifier="mitigate.errors.CapabilityError" optional><code>CapabilityError</code>' in out
    )
    assert "<code>get</code>" in out and "<code>mitigate.judge.Judge.judge</code></autoref>" in out
    assert ":class:<code>" not in out and ":func:" not in out and ":meth:" not in out
