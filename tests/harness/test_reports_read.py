"""Reports people read: escaped tables, honest bold, linked plots that exist, plain reasons, the HTML report.

The HTML report is checked here as text (escaping, self-containment, per-item content);
tests/harness/test_html_browser.py opens it in a real headless browser.
"""

from __future__ import annotations

import asyncio
import math
import re
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from mitigate import Item, JudgePrompt, PromptJudge
from mitigate.cli import app
from mitigate.data import Benchmark
from mitigate.errors import ConfigError
from mitigate.harness import Entry, compare
from mitigate.judge import FRAME_COLUMNS, Judgment
from mitigate.lm import FakeLM
from mitigate.report import CompareResult, load_results, md_table, render_report
from mitigate.report._files import dump_results, write_results
from mitigate.report._html import item_view, markdown_to_html
from mitigate.report._reading import bottom_lines, plain_reason, warnings
from mitigate.report._tables import best_indices, md_cell, split_row
from mitigate.run import RunResult
from mitigate.scale import Scale
from tests.report_fixture import NAMES, SCRIPT, SYSTEM_HTML, bench, entries, run_compare


@pytest.fixture(scope="module")
def written(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, CompareResult]:
    out = tmp_path_factory.mktemp("report")
    return out, run_compare(out)


def _tables(md: str) -> list[list[str]]:
    """Every markdown table of ``md`` as its lines."""
    tables, cur = [], []
    for line in md.splitlines():
        if line.startswith("|"):
            cur.append(line)
        elif cur:
            tables.append(cur)
            cur = []
    if cur:
        tables.append(cur)
    return tables


# ----------------------------------------------------------------------------- markdown tables


def test_md_cell_escapes_pipes_and_line_breaks_and_split_row_reads_them_back() -> None:
    assert md_cell("a | b\nc") == "a \\| b c"
    assert md_cell("already \\| escaped") == "already \\| escaped"
    row = md_table(["name", "value"], [["consistency-hint | sampling(n=5)", 1]])[2]
    assert split_row(row) == ["consistency-hint | sampling(n=5)", "1"]
    with pytest.raises(ValueError, match="expected 2 cells in row 0"):
        md_table(["a", "b"], [["only one"]])


@pytest.mark.parametrize(
    ("values", "direction", "bold"),
    [
        ([0.5, 0.5, 0.5], "higher", set()),  # one value: nothing is best
        ([0.7], "higher", set()),  # one entry
        ([0.2, 0.9, 0.9], "higher", {1, 2}),  # ties share bold
        ([0.2, 0.9], "lower", {0}),
        ([-0.5, 0.5], "zero", set()),  # best is also worst
        ([-0.5, 0.1, float("nan")], "zero", {1}),  # NaN never counts
        ([0.1234, 0.1231], "higher", set()),  # equal at the precision shown
        ([None, 1.0, 2.0], "higher", {2}),
    ],
)
def test_bold_only_where_a_column_has_two_values_by_its_direction(values, direction, bold) -> None:
    assert best_indices(values, direction) == bold


def test_every_table_row_has_as_many_cells_as_its_header_with_pipes_in_entry_names(written) -> None:
    folder, _ = written
    md = (folder / "report.md").read_text()
    tables = _tables(md)
    assert len(tables) >= 5  # main, one per entry, per system, against the first
    for table in tables:
        width = len(split_row(table[0]))
        assert all(len(split_row(line)) == width for line in table), table[0]
    names_seen = {split_row(line)[0] for table in tables for line in table}
    assert set(NAMES) <= names_seen  # each name whole, in its own first cell


def test_main_table_never_bolds_a_column_with_one_value(written) -> None:
    folder, result = written
    md = (folder / "report.md").read_text()
    main = _tables(md.split("## Accuracy and bias")[1])[0]
    header = split_row(main[0])
    body = [split_row(line) for line in main[2:5]]
    for col, head in enumerate(header[4:], start=4):
        cells = [row[col] for row in body]
        shown = {re.sub(r"\*\*|\s*\[.*", "", c) for c in cells if c and c not in ("n/a", "reference")}
        if len(shown) < 2:
            assert not any(c.startswith("**") for c in cells), head


def test_only_written_plots_are_linked(tmp_path: Path) -> None:
    # no system labels: no per-system plot, so no link to one
    items = tuple(it.model_copy(update={"system": None}) for it in bench().items)
    flat = Benchmark(name="flat", items=items, criteria=("quality",))
    asyncio.run(
        compare(
            benchmark=flat,
            criterion="quality",
            entries=entries()[:2],
            out_dir=tmp_path,
            progress=False,
            n_boot=20,
            n_perm=50,
        )
    )
    md = (tmp_path / "report.md").read_text()
    linked = re.findall(r"!\[[^\]]*\]\(([^)]+)\)", md)
    assert linked and "per_system.png" not in linked
    assert all((tmp_path / name).is_file() for name in linked)


def test_reasons_are_in_the_users_words(tmp_path: Path) -> None:
    prompt = JudgePrompt.from_template(
        "Rate the text from 1 to 5.\nText: {{output}}\nScore:", criterion="quality"
    )
    constant = Entry.from_pipeline("constant", PromptJudge(prompt, FakeLM(lambda r: "Score: 3")), "baseline")
    asyncio.run(
        compare(
            benchmark=bench(),
            criterion="quality",
            entries=[constant],
            out_dir=tmp_path,
            progress=False,
            n_boot=20,
            n_perm=50,
        )
    )
    md = (tmp_path / "report.md").read_text()
    assert "meta[" not in md and "first input" not in md and "second input" not in md
    assert "the judge gave every item the same score, so no correlation can be computed" in md
    assert "no item was scored under 2 or more perturbed guidelines" in md
    assert plain_reason("no judgment holds verdicts in both orders (meta['orders'])") == (
        "no pair was judged in both orders (add position-swap, or record both orders)"
    )


# ----------------------------------------------------------------------------- bottom line and warnings


def _enough(result: CompareResult, n: int = 40, documents: int = 6) -> CompareResult:
    """``result`` as if its comparisons rested on ``n`` items from ``documents`` documents (the claim rule's
    floor)."""
    items = tuple(
        result.items[i % len(result.items)].model_copy(update={"id": f"i{i}", "doc_id": f"d{i % documents}"})
        for i in range(n)
    )
    entries = tuple(
        e
        if e.comparison is None
        else e.model_copy(update={"comparison": e.comparison.model_copy(update={"n": n})})
        for e in result.entries
    )
    return result.model_copy(update={"items": items, "entries": entries})


def test_bottom_line_says_whether_each_entry_differs_from_the_reference(written) -> None:
    folder, result = written
    lines = bottom_lines(_enough(result))
    assert len(lines) == 2
    assert lines[0].startswith("consistency-hint | x agrees with humans better than base | plain at this n")
    assert re.search(r"\+1\.\d+ \[\+\d\.\d+, \+\d\.\d+\], p=[\d.e-]+, n=40", lines[0])


def test_a_bottom_line_claims_no_difference_on_fewer_items_or_documents_than_its_warnings_accept(
    written,
) -> None:
    # 9 compared items from 4 documents: the warnings say read differences as anecdotes
    folder, result = written
    lines = bottom_lines(result)
    assert lines[0].startswith("consistency-hint | x: no claim against base | plain at this n (")
    assert re.search(r"\+1\.\d+ \[\+\d\.\d+, \+\d\.\d+\], p=[\d.e-]+, n=9", lines[0])
    assert "9 items from 4 documents are too few" in lines[0]
    assert not any("better than" in line or "worse than" in line for line in lines)
    assert "read differences as anecdotes" in "\n".join(warnings(result))
    md = (folder / "report.md").read_text()
    assert "## Bottom line" in md and lines[0] in md
    assert "4 documents are too few" in bottom_lines(_enough(result, documents=4))[0]
    assert "29 items are too few" in bottom_lines(_enough(result, n=29))[0]


def test_warnings_name_small_n_few_documents_zero_width_intervals_and_identical_entries(
    written, tmp_path
) -> None:
    _, result = written
    text = "\n".join(warnings(result))
    assert "Only 12 items were judged" in text and "4 documents" in text
    assert "zero width" in text
    # the replayed judge answers exactly what consistency-hint | x answers
    assert "replayed gave exactly the same answer as consistency-hint | x on every item" in text
    other = result.model_copy(
        update={"entries": (result.entries[0].model_copy(update={"scale": Scale(min=1, max=10)}),)}
    )
    assert any("answers on 1 to 10 but the human labels are on 1 to 5" in w for w in warnings(other))


# ----------------------------------------------------------------------------- chosen demos


def test_report_lists_the_demos_each_fitted_entry_chose(tmp_path: Path) -> None:
    items = tuple(
        Item(
            id=f"S{s}/d{d}",
            output=f"q={1 + (s + d) % 5} text {s} {d}",
            system=f"S{s}",
            doc_id=f"d{d}",
            human={"quality": float(1 + (s + d) % 5)},
        )
        for d in range(8)
        for s in range(3)
    )
    b = Benchmark(name="b", items=items, criteria=("quality",))
    prompt = JudgePrompt.from_template(
        "Rate the text from 1 to 5.\nText: {{output}}\nScore:", criterion="quality"
    )
    base = PromptJudge(prompt, FakeLM(lambda r: "Score: 3"))
    entry = Entry.from_pipeline("random-demos(k=2)", base, "random-demos(k=2)")
    result = asyncio.run(
        compare(
            benchmark=b,
            criterion="quality",
            entries=[entry],
            out_dir=tmp_path,
            progress=False,
            n_boot=0,
            train=0.5,
        )
    )
    chosen = [d["item"]["id"] for d in result.entries[0].spec["steps"][0]["params"]["demos_"]]
    md = (tmp_path / "report.md").read_text()
    section = md.split("## Demos", 1)[1].split("\n## ", 1)[0]
    assert len(chosen) == 2
    assert all(f"- {i} (shown as" in section for i in chosen)


# ----------------------------------------------------------------------------- writing the reports


def test_compare_with_out_dir_writes_both_reports_and_report_false_writes_none(written, tmp_path) -> None:
    folder, result = written
    for name in ("results.json", "report.md", "report.html", "histograms.png"):
        assert (folder / name).is_file(), name
    assert dump_results(load_results(folder)) == dump_results(result)  # NaN-safe equality
    run_compare(tmp_path, report=False)
    assert not (tmp_path / "report.md").exists() and not (tmp_path / "report.html").exists()
    assert (tmp_path / "journals").is_dir()


def test_results_json_is_written_an_item_at_a_time_as_the_one_dump_would_write_it(written, tmp_path) -> None:
    folder, result = written
    assert (folder / "results.json").read_text() == dump_results(result)
    empty = result.model_copy(
        update={
            "items": (),
            "entries": (result.entries[0].model_copy(update={"judgments": (), "measures": {}}),),
        }
    )
    with (tmp_path / "empty.json").open("w") as fh:
        write_results(empty, fh)
    assert (tmp_path / "empty.json").read_text() == dump_results(empty)
    pairwise = asyncio.run(
        compare(
            benchmark=Benchmark(
                name="pw",
                criteria=("help",),
                items=tuple(
                    Item(
                        id=f"p{k}",
                        output=f"long answer {k} " * (1 + k % 3),
                        output_b=f"short {k}",
                        preference={"help": "AB"[k % 2]},
                    )
                    for k in range(6)
                ),
            ),
            criterion="help",
            entries=[
                Entry.from_pipeline(
                    "pos",
                    PromptJudge(
                        JudgePrompt.from_template(
                            "Which is better?\nA: {{output}}\nB: {{output_b}}\nAnswer A or B.",
                            criterion="help",
                        ),
                        FakeLM(lambda r: "A"),
                    ),
                    "position-swap",
                )
            ],
            out_dir=tmp_path / "pw",
            progress=False,
            n_boot=20,
            n_perm=50,
        )
    )
    assert (tmp_path / "pw" / "results.json").read_text() == dump_results(pairwise)
    if sys.modules.get("pandas") or _has_pandas():
        import pandas as pd

        pd.testing.assert_frame_equal(pairwise.to_pandas(folder=tmp_path / "pw"), pairwise.to_pandas())


def _has_pandas() -> bool:
    try:
        import pandas  # noqa: F401
    except ImportError:
        return False
    return True


def test_report_command_rebuilds_the_html_report_only_with_html(written, tmp_path) -> None:
    folder, _ = written
    (tmp_path / "results.json").write_bytes((folder / "results.json").read_bytes())
    plain = CliRunner().invoke(app, ["report", str(tmp_path)])
    assert plain.exit_code == 0, plain.output
    assert (tmp_path / "report.md").is_file() and not (tmp_path / "report.html").exists()
    html = CliRunner().invoke(app, ["report", str(tmp_path), "--html"])
    assert html.exit_code == 0, html.output
    assert (tmp_path / "report.html").read_text() == (folder / "report.html").read_text()
    assert render_report(tmp_path, html=True)[1].name == "report.html"


# ----------------------------------------------------------------------------- the HTML report as text


def test_report_md_shows_a_system_name_holding_html_as_text(written) -> None:
    folder, _ = written
    md = (folder / "report.md").read_text()
    assert "<img" not in md and SYSTEM_HTML.replace("<", "&lt;") in md
    page = (folder / "report.html").read_text()
    assert "<img src=x" not in page and "S2 &lt;img src=x onerror=alert(1)&gt;" in page  # escaped once


def test_html_report_is_self_contained_and_escapes_everything_the_user_wrote(written) -> None:
    folder, _ = written
    page = (folder / "report.html").read_text()
    assert page.count("<script>") == 1  # its own, at the end
    assert SCRIPT not in page and "&lt;script&gt;alert(&#x27;x&#x27;)&lt;/script&gt;" in page
    assert not re.search(r"""(src|href)=["']?(https?:|//)""", page)
    assert "Content-Security-Policy" in page and "default-src 'none'" in page
    assert 'src="data:image/png;base64,' in page
    assert "base \\| plain" not in page and "base | plain" in page


def test_html_per_item_view_holds_labels_answers_failures_flags_and_prompts(written) -> None:
    folder, result = written
    page = (folder / "report.html").read_text()
    assert page.count('<tbody class="item"') == 12
    assert 'data-failure="1"' in page and page.count('data-failure="1"') == 3
    assert page.count('data-flagged="1"') == 4 and '<span class="flag">needs_human</span>' in page
    assert "expected a score from 1 to 5" in page  # the parse failure's reason, beside its raw text
    assert "Rate the text from 1 to 5." in page  # the exact prompt of a prompt judge
    assert "prompt not recorded" in page  # the replayed judge sent none
    first = result.entries[0].judgments[0].meta["prompt"]
    assert first[0]["role"] == "user" and first[0]["content"].startswith(
        "Rate the text from 1 to 5.\nText: q=1"
    )
    rows = item_view(result)
    assert sum(r["failure"] for r in rows) == 3 and sum(r["flagged"] for r in rows) == 4
    assert max(r["disagreement"] for r in rows) == pytest.approx(1.0)


def test_markdown_to_html_escapes_and_drops_links_to_missing_images() -> None:
    html = markdown_to_html(
        "## A <b>\n\n| x | y |\n|---|---:|\n| a \\| b | **1** |\n\n![p](missing.png)\n", images={}
    )
    assert "&lt;b&gt;" in html and "<td>a | b</td>" in html and "<strong>1</strong>" in html
    assert "missing.png" not in html


# ----------------------------------------------------------------------------- tables in Python


def test_compare_to_pandas_is_long_form(written) -> None:
    pytest.importorskip("pandas")
    _, result = written
    df = result.to_pandas()
    assert list(df.columns) == list(FRAME_COLUMNS)
    assert len(df) == 3 * 12
    row = df[(df["entry"] == "base | plain") & (df["item"] == "S0/d0")].iloc[0]
    assert (row["document"], row["system"], row["criterion"], row["score"], row["raw"]) == (
        "d0",
        "S0",
        "quality",
        5.0,
        "Score: 5",
    )
    assert row["human"] == pytest.approx(1.0)
    failed = df[df["failure"].notna()]
    assert len(failed) == 3 and set(failed["entry"]) == {"base | plain"} and failed["score"].isna().all()
    flagged = df[df["flags"] == "needs_human"]
    assert len(flagged) == 4 and set(flagged["entry"]) == {"replayed"}


def test_pairwise_rows_give_each_order_its_verdict() -> None:
    j = Judgment(
        item_id="p",
        verdict="tie",
        meta={"orders": {"original": "first", "swapped": "first"}},
        flags=("position_inconsistent",),
        raw=("1", "1"),
    )
    rows = j.rows("help")
    assert [(r["order"], r["verdict"]) for r in rows] == [("original", "A"), ("swapped", "B")]
    assert rows[0]["flags"] == "position_inconsistent" and rows[0]["raw"] == "1\n\n1"
    single = Judgment(item_id="p", verdict="second").rows("help")
    assert [(r["order"], r["verdict"]) for r in single] == [("original", "B")]


def test_judge_results_to_pandas_with_items(written) -> None:
    pytest.importorskip("pandas")
    _, result = written
    run = RunResult(judgments=result.entries[0].judgments, summary=result.entries[0].summary)
    df = run.to_pandas(items=bench().items, criterion="quality", entry="mine")
    assert list(df.columns) == list(FRAME_COLUMNS) and len(df) == 12
    assert (
        set(df["entry"]) == {"mine"}
        and df["human"].iloc[0] == pytest.approx(1.0)
        and df["document"].iloc[0] == "d0"
    )


def test_to_pandas_without_pandas_is_one_line(monkeypatch, written) -> None:
    _, result = written
    monkeypatch.setitem(sys.modules, "pandas", None)
    with pytest.raises(
        ConfigError,
        match=r"^to_pandas\(\) needs pandas; it is not installed \(pip install "
        r"'mitigate\[pandas\]'\)$",
    ):
        result.to_pandas()
    empty = RunResult(judgments=(), summary=result.entries[0].summary)
    with pytest.raises(ConfigError, match="needs pandas"):
        empty.to_pandas()


def test_search_result_repr_is_one_short_line_and_str_is_its_summary() -> None:
    from mitigate.search import search
    from tests.search_task import PROMPT, _split

    judge = PromptJudge(
        JudgePrompt.from_template(PROMPT, criterion="coherence"), FakeLM(lambda r: "Score: 3")
    )
    result = search(judge, _split(), k=2, budget=60, n_boot=20, progress=False)
    text = repr(result)
    assert "\n" not in text and len(text) < 300 and len(result.model_dump_json()) > 2000
    assert (
        text.startswith("SearchResult(engine='random', trials=") and f"calls={result.calls_search}/60" in text
    )
    assert str(result) == result.summary() and "test gain over baseline" in str(result)


def test_pandas_is_an_optional_extra_included_in_all() -> None:
    import tomllib

    extras = tomllib.loads((Path(__file__).parents[2] / "pyproject.toml").read_text())["project"][
        "optional-dependencies"
    ]
    assert any(dep.startswith("pandas") for dep in extras["pandas"])
    assert "pandas" in extras["all"][0]
    pyproject = tomllib.loads((Path(__file__).parents[2] / "pyproject.toml").read_text())
    core = pyproject["project"]["dependencies"]
    assert not any(dep.startswith("pandas") for dep in core)


@pytest.mark.parametrize(
    ("ci", "p", "says"),
    [
        ((0.1, 0.5), 0.01, "agrees with humans better than"),
        ((-0.5, -0.1), 0.01, "agrees with humans worse than"),
        ((-0.1, 0.5), 0.30, "does not differ measurably from"),
        # tests disagree
        ((0.1, 0.5), 0.16, "the interval excludes 0 but the permutation test does not reject it"),
        ((-0.1, 0.5), 0.01, "p < 0.05 but the interval includes 0"),
        ((None, None), 0.01, "agrees with humans better than"),  # no bootstrap: the permutation test alone
    ],
)
def test_a_difference_is_claimed_only_when_interval_and_test_agree(written, ci, p, says) -> None:
    _, result = written
    second = result.entries[1]
    observed = -0.3 if ci[1] is not None and ci[1] < 0 else 0.3
    c = second.comparison.model_copy(
        update={"observed": observed, "ci_low": ci[0], "ci_high": ci[1], "p_value": p}
    )
    one = result.model_copy(
        update={"entries": (result.entries[0], second.model_copy(update={"comparison": c}))}
    )
    assert says in bottom_lines(_enough(one))[0]


def test_a_measure_no_entry_could_compute_gives_each_entrys_own_reason(tmp_path: Path) -> None:
    prompt = JudgePrompt.from_template(
        "Rate the text from 1 to 5.\nText: {{output}}\nScore:", criterion="quality"
    )
    constant = PromptJudge(prompt, FakeLM(lambda r: "Score: 3"))
    result = asyncio.run(
        compare(
            benchmark=bench(),
            criterion="quality",
            entries=[
                Entry.from_pipeline("one", constant, "baseline"),
                Entry.from_pipeline("three", constant, "sampling(n=3, temperature=0.7)"),
            ],
            out_dir=tmp_path,
            progress=False,
            n_boot=20,
            n_perm=50,
        )
    )
    assert not any(e.measures["alpha-across-samples"].ok for e in result.entries)
    md = (tmp_path / "report.md").read_text()
    line = next(
        ln for ln in md.split("Not computed for any entry:")[1].splitlines() if ln.startswith("- α samples")
    )
    assert "one: every judgment holds at most 1 sample" in line
    assert "three: every value is the same" in line


def test_compare_writes_its_judgments_as_columns_and_to_pandas_reads_them(written) -> None:
    pd = pytest.importorskip("pandas")
    from mitigate.run import Columns, StoredJudgments

    folder, result = written
    from_columns = result.to_pandas(folder=folder)
    pd.testing.assert_frame_equal(from_columns, result.to_pandas())
    assert set(from_columns["entry"]) == set(NAMES) and len(from_columns) == 3 * 12
    with Columns(folder / "results.sqlite") as cols:
        assert cols.about["entries"] == list(NAMES) and cols.about["criterion"] == "quality"
        for e in result.entries:
            scores = cols.column("score", entry=e.name)
            want = [math.nan if s is None else s for s in e.scores("quality")]
            assert repr(scores.tolist()) == repr(want)
        assert cols.column("human", entry=NAMES[0]).tolist() == [it.human for it in result.items]
    loaded = load_results(folder)
    for e in result.entries:  # read back from the columns as used, the same judgments results.json holds
        assert isinstance(e.judgments, StoredJudgments)
        assert list(e.judgments) == list(loaded.entry(e.name).judgments)


# ----------------------------------------------------------------------------- glossary


def test_every_reported_measure_has_a_glossary_line() -> None:
    from mitigate.measures import measure_table
    from mitigate.report._glossary import MEASURE_LINES

    registered = {
        k
        for task in ("score", "pairwise")
        for k, cls in measure_table(task).items()
        if cls.__module__.startswith("mitigate.")
    }
    assert registered - MEASURE_LINES.keys() == set()
    assert all(line.strip() and "\n" not in line for line in MEASURE_LINES.values())


def test_the_report_explains_each_measure_it_shows_in_its_glossary(written) -> None:
    from mitigate.measures import measure_table

    out, result = written
    glossary = (out / "report.md").read_text().split("\n## Glossary\n", 1)[1]
    table = measure_table(result.task)
    labels = {table[key].info.label for e in result.entries for key in e.measures}
    assert labels and all(f"- **{label}**: " in glossary for label in labels), glossary
    assert "- **P_i**: " in glossary and "- **95% CI**: " in glossary
    assert re.search(r"<h2[^>]*>Glossary</h2>", (out / "report.html").read_text())


def test_every_column_the_report_shows_has_a_glossary_line(written) -> None:
    from mitigate.report._glossary import TERMS

    out, result = written
    md = (out / "report.md").read_text()
    explained = set(re.findall(r"^- \*\*(.+?)\*\*: \S", md.split("\n## Glossary\n", 1)[1], re.M))
    explained |= {name for term in TERMS for name in term.split(", ")}
    named = {e.name for e in result.entries} | {it.system for it in result.items if it.system}
    headers = {cell for table in _tables(md) for cell in split_row(table[0])}
    assert {"#CP (↑ higher)", "n ok", "Q_i", "test", "Δ Spearman"} <= headers  # the report shows them
    unexplained = set()
    for header in headers - named:
        name = re.sub(r" \((↑ higher|↓ lower|→ 0)\)$", "", header)
        if name not in explained and not (name.startswith("Δ ") and "Δ" in explained):
            unexplained.add(header)
    assert unexplained == set()
