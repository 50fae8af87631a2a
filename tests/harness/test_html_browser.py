"""report.html in a real headless browser (Debian's Chromium): it renders, and its per-item view filters and
sorts.

The browser is driven directly: ``--dump-dom`` prints the document after the page's script
ran (the view is chosen by the address, ``#filter=...&sort=...``), ``--screenshot`` draws
it. No network: the page is a local file whose Content-Security-Policy forbids any fetch,
and the browser runs with its background networking off. Skipped, with the reason, only
where no Chromium is installed (``.ci/run`` installs Debian's package where apt-get exists).
"""

from __future__ import annotations

import asyncio
import os
import re
import shutil
import subprocess
from html.parser import HTMLParser
from pathlib import Path

import pytest

from mitigate import Item, JudgePrompt, PromptJudge
from mitigate.data import Benchmark
from mitigate.harness import Entry, compare
from mitigate.lm import FakeLM, LMRequest
from mitigate.report import CompareResult
from tests.report_fixture import run_compare

PNG = b"\x89PNG\r\n\x1a\n"


def _browser() -> str | None:
    named = os.environ.get("MITIGATE_BROWSER")
    if named:
        return shutil.which(named) or (named if Path(named).is_file() else None)
    for name in ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable"):
        found = shutil.which(name)
        if found:
            return found
    return None


BROWSER = _browser()
pytestmark = pytest.mark.skipif(BROWSER is None, reason="no Chromium installed (apt-get install chromium)")


def _run(page: Path, fragment: str, tmp: Path, *extra: str) -> subprocess.CompletedProcess[str]:
    assert BROWSER is not None
    profile = tmp / f"profile-{abs(hash((fragment, extra)))}"
    args = [
        BROWSER,
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-dev-shm-usage",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--disable-extensions",
        "--no-first-run",
        "--no-default-browser-check",
        "--mute-audio",
        f"--user-data-dir={profile}",
        "--virtual-time-budget=5000",
        *extra,
        page.resolve().as_uri() + fragment,
    ]
    done = subprocess.run(args, capture_output=True, text=True, timeout=180, check=False)
    assert done.returncode == 0, done.stderr[-2000:]
    return done


def dump_dom(page: Path, fragment: str, tmp: Path) -> str:
    """The document after the page's script ran, opened at ``page`` + ``fragment``."""
    return _run(page, fragment, tmp, "--dump-dom").stdout


class _Items(HTMLParser):
    """The per-item view as the browser left it: each item's attributes and whether its detail row is open."""

    def __init__(self) -> None:
        super().__init__()
        self.items: list[dict[str, str | None]] = []
        self.summary_rows = 0
        self.scripts = 0
        self.shown = ""
        self._in_shown = False
        self._in_summary = False

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = dict(attrs)
        if tag == "script":
            self.scripts += 1
        if tag == "tbody" and a.get("class") == "item":
            self.items.append({**a, "open": None})
        if tag == "tr" and a.get("class") == "detail" and self.items:
            self.items[-1]["open"] = "no" if "hidden" in a else "yes"
        if tag == "table" and a.get("class") == "summary":
            self._in_summary = True
        if tag == "tr" and self._in_summary:
            self.summary_rows += 1
        if a.get("id") == "shown":
            self._in_shown = True

    def handle_endtag(self, tag: str) -> None:
        if tag == "table":
            self._in_summary = False
        if tag == "span":
            self._in_shown = False

    def handle_data(self, data: str) -> None:
        if self._in_shown:
            self.shown += data


def parse(dom: str) -> _Items:
    p = _Items()
    p.feed(dom)
    return p


def visible(view: _Items) -> list[dict[str, str | None]]:
    return [it for it in view.items if "hidden" not in it]


@pytest.fixture(scope="module")
def report(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("browser")
    run_compare(out)
    return out / "report.html"


def test_the_tables_and_the_per_item_view_render(report: Path, tmp_path: Path) -> None:
    dom = dump_dom(report, "", tmp_path)
    view = parse(dom)
    assert view.summary_rows >= 5  # the accuracy table (header, 3 entries, humans) and more
    assert len(view.items) == 12 and len(visible(view)) == 12
    assert view.shown == "12 of 12 items shown"
    assert view.scripts == 1  # the judged text's <script> stayed text
    assert "&lt;script&gt;alert('x')&lt;/script&gt;" in dom
    assert "Bottom line" in dom and "Warnings" in dom and "Per item" in dom


def test_filtering_by_parse_failures_and_flags_and_sorting_by_disagreement(
    report: Path, tmp_path: Path
) -> None:
    failures = parse(dump_dom(report, "#filter=failures", tmp_path))
    assert failures.shown == "3 of 12 items shown"
    assert [it["data-failure"] for it in visible(failures)] == ["1", "1", "1"]
    flagged = parse(dump_dom(report, "#filter=flagged&sort=disagreement", tmp_path))
    shown = visible(flagged)
    assert len(shown) == 4 and all(it["data-flagged"] == "1" for it in shown)
    keys = [float(it["data-disagreement"] or 0) for it in shown]
    assert keys == sorted(keys, reverse=True)
    ordered = parse(dump_dom(report, "#sort=disagreement", tmp_path))
    every = [float(it["data-disagreement"] or 0) for it in ordered.items]
    assert every == sorted(every, reverse=True) and len(set(every)) > 1


def test_a_search_opens_one_item_with_its_prompt(report: Path, tmp_path: Path) -> None:
    dom = dump_dom(report, "#q=s2%2Fd3&open=1", tmp_path)
    view = parse(dom)
    shown = visible(view)
    assert [it["data-index"] for it in shown] == ["11"] and shown[0]["open"] == "yes"
    assert view.shown == "1 of 12 items shown"
    assert "Rate the text from 1 to 5." in dom and "prompt not recorded" in dom


PAIRWISE = (
    "Which response answers better?\n\nResponse 1: {{output}}\n\nResponse 2: {{output_b}}\n\n"
    "Answer with 1, 2 or tie."
)


def _pairwise_answer(request: LMRequest) -> str:
    text = request.messages[-1].content
    a = text.split("Response 1: ")[1].split("\n")[0]
    b = text.split("Response 2: ")[1].split("\n")[0]
    if "flip" in a + b:
        return "1"  # always the first shown: its verdict flips with the order
    return "1" if len(a) > len(b) else "2"


def test_order_flips_filter_on_a_pairwise_comparison(tmp_path: Path) -> None:
    items = []
    for k in range(8):
        long, short = f"a careful and complete answer {k}" + (" flip" if k < 3 else ""), f"short {k}"
        items.append(Item(id=f"p{k}", output=long, output_b=short, preference={"help": "A"}))
    bench = Benchmark(name="pw", items=tuple(items), criteria=("help",))
    judge = PromptJudge(JudgePrompt.from_template(PAIRWISE, criterion="help"), FakeLM(_pairwise_answer))
    out = tmp_path / "pw"
    asyncio.run(
        compare(
            benchmark=bench,
            criterion="help",
            entries=[Entry.from_pipeline("swap", judge, "position-swap")],
            out_dir=out,
            progress=False,
            n_boot=20,
            n_perm=50,
        )
    )
    view = parse(dump_dom(out / "report.html", "#filter=flips", tmp_path))
    assert [it["data-index"] for it in visible(view)] == ["0", "1", "2"]
    assert view.shown == "3 of 8 items shown"


def test_a_screenshot_is_drawn(report: Path, tmp_path: Path) -> None:
    shot = tmp_path / "shot.png"
    _run(
        report,
        "#filter=failures&open=1",
        tmp_path,
        f"--screenshot={shot}",
        "--window-size=1280,1600",
        "--hide-scrollbars",
    )
    data = shot.read_bytes()
    assert data.startswith(PNG) and len(data) > 20_000
    width, height = int.from_bytes(data[16:20], "big"), int.from_bytes(data[20:24], "big")
    assert (width, height) == (1280, 1600)
    assert re.search(rb"IDAT", data)


# ----------------------------------------------------------------------------- a large report, in pages


def _packed_page(report: Path, tmp: Path) -> Path:
    """The fixture's report rebuilt with its per-item view as compressed blocks of 5 items (as a large one
    is)."""
    from mitigate.report import load_results
    from mitigate.report._html import render_html

    folder = report.parent
    page = tmp / "packed.html"
    md = (folder / "report.md").read_text()
    page.write_text(
        render_html(load_results(folder), md, sorted(folder.glob("*.png")), inline_items=0, block_items=5)
    )
    return page


def _view_of(dom: str) -> list[tuple[str | None, str | None]]:
    return [(it["data-index"], it["open"]) for it in visible(parse(dom))]


@pytest.mark.parametrize(
    "fragment",
    [
        "",
        "#filter=failures",
        "#filter=flagged&sort=disagreement",
        "#sort=human",
        "#q=s2%2Fd3&open=1",
        "#open=S1%2Fd2",
    ],
)
def test_a_packed_per_item_view_shows_what_the_plain_one_shows(
    report: Path, tmp_path: Path, fragment: str
) -> None:
    packed = _packed_page(report, tmp_path)
    text = packed.read_text()
    assert text.count("<script>") == 1 and '<tbody class="item"' not in text  # the items travel packed
    plain, unpacked = dump_dom(report, fragment, tmp_path), dump_dom(packed, fragment, tmp_path)
    assert _view_of(unpacked) == _view_of(plain) and _view_of(plain)
    assert parse(unpacked).shown == parse(plain).shown


def _large_result(n: int, entries: int = 2) -> CompareResult:
    from mitigate.judge import Judgment
    from mitigate.report import EntryResult, ItemRecord
    from mitigate.run import RunSummary
    from mitigate.scale import Scale

    scale = Scale(min=1, max=5)
    records = tuple(
        ItemRecord(
            id=f"t{k:06d}",
            system=f"S{k % 4}",
            doc_id=f"d{k // 4}",
            human=float(1 + k % 5),
            words=12,
            output=f"Text number {k}: the weather was mild and the streets were quiet.",
        )
        for k in range(n)
    )
    summary = RunSummary(
        items=n, judged_now=n, resumed=0, ok=n, parse_failures=0, errors=0, calls=n, cached_calls=0
    )
    out = []
    for e in range(entries):
        judgments = tuple(
            Judgment(
                item_id=r.id,
                scores={"quality": float(1 + (k * (e + 3)) % 5)},
                raw=(f"Score: {1 + (k * (e + 3)) % 5}",),
                flags=("needs_human",) if k % 97 == 0 else (),
            )
            for k, r in enumerate(records)
        )
        out.append(
            EntryResult(
                name=f"judge {e}",
                kind="judge",
                scale=scale,
                summary=summary,
                judgments=judgments,
                measures={},
            )
        )
    return CompareResult(
        benchmark="large", criterion="quality", human_scale=scale, items=records, entries=tuple(out)
    )


@pytest.mark.slow
def test_a_large_report_opens_on_its_summary_and_pages_through_its_items(tmp_path: Path) -> None:
    from mitigate.report._html import PAGE_ITEMS, render_html

    n = 20_000
    page = tmp_path / "report.html"
    md = (
        "# Comparison\n\n## Bottom line\n\n- judge 1 agrees more\n\n| entry | ρ |\n|---|---:|\n| "
        "judge 0 | 0.1 |\n"
    )
    page.write_text(render_html(_large_result(n), md))
    assert page.stat().st_size < 5_000_000  # 20,000 items x 2 entries; plain HTML would be some 30 MB
    done = _run(page, "", tmp_path, "--dump-dom", "--enable-logging=stderr", "--v=0")
    assert "Uncaught" not in done.stderr, done.stderr[-2000:]
    first = parse(done.stdout)
    assert first.summary_rows >= 2 and "judge 1 agrees more" in done.stdout
    assert [it["data-index"] for it in first.items] == [str(k) for k in range(PAGE_ITEMS)]
    assert first.shown == f"{n:,} of {n:,} items shown".replace(",", "")
    assert f"page 1 of {n // PAGE_ITEMS}" in done.stdout
    third = parse(dump_dom(page, "#filter=flagged&sort=disagreement&page=3", tmp_path))
    flagged = [k for k in range(n) if k % 97 == 0]
    assert third.shown == f"{len(flagged)} of {n} items shown"
    keys = [(-float(it["data-disagreement"] or 0), int(it["data-index"] or 0)) for it in third.items]
    ranked = sorted(keys)
    assert keys == ranked and len(keys) == min(PAGE_ITEMS, len(flagged) - 2 * PAGE_ITEMS)
    assert all(int(it["data-index"] or 0) in flagged and it["data-flagged"] == "1" for it in third.items)
    last = parse(dump_dom(page, f"#page={n // PAGE_ITEMS}&open=t019999", tmp_path))
    assert [(it["data-index"], it["open"]) for it in last.items][-1] == ("19999", "yes")
