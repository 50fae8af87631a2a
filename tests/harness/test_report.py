"""The report: results.json, a markdown table marking each column's best, PNG plots, re-rendering, CLI."""

from __future__ import annotations

import asyncio
import json
import re
import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

from mitigate import Item, JudgePrompt, PromptJudge
from mitigate.cli import app
from mitigate.data import Benchmark
from mitigate.harness import Entry, compare
from mitigate.judge import Judge, Judgment, LikelihoodScorer
from mitigate.lm import LM, FakeLM, LMRequest, LMResponse
from mitigate.measures import MEASURES, EntryData, Measure, MeasureInfo, ReportedMeasure, measure_table
from mitigate.paths import data_dir
from mitigate.registry import register
from mitigate.report import CompareResult, load_results, render_report, write_report
from mitigate.report._tables import best_indices as _best
from mitigate.strategies import Pipeline

TEMPLATE = "Rate the text from 1 to 5.\nText: {{output}}\nScore:"
PNG = b"\x89PNG\r\n\x1a\n"


def _bench() -> Benchmark:
    items = []
    for d in range(4):
        for s in range(3):
            q = 1 + (d * 2 + s * 3) % 5
            items.append(
                Item(
                    id=f"S{s}/d{d}",
                    system=f"S{s}",
                    doc_id=f"d{d}",
                    output=f"q={q} " + "w " * (2 + d + s),
                    human={"quality": q + 0.2 * s},
                )
            )
    return Benchmark(name="toy", items=tuple(items), criteria=("quality",))


def _answer(request: LMRequest) -> str:
    q = int(re.search(r"q=(\d)", request.messages[-1].content).group(1))
    return "unreadable" if q == 3 else f"Score: {6 - q}"


class TrueJudge(Judge):
    """Scores every item with its true quality, two samples, under two perturbations."""

    async def judge(self, item: Item) -> Judgment:
        q = float(item.output[2])
        return Judgment(
            item_id=item.id,
            scores={"quality": q},
            samples={"quality": (q, q)},
            meta={"perturbations": {"a": q, "b": q if item.system != "S0" else q - 1}},
        )

    def map_leaves(self, fn):  # pragma: no cover - not used
        return self

    def describe(self) -> dict:
        return {"kind": "true"}


class LengthLM(LM):
    provider = "test-length"

    async def complete(self, request: LMRequest) -> LMResponse:  # pragma: no cover - not used
        raise AssertionError("not used")

    async def loglikelihood(self, context: str, continuation: str) -> float:
        return -1.5 * len(continuation)


class FlakyJudge(Judge):
    """Scores every item with its true quality under two perturbations, but fails under one on system S2."""

    async def judge(self, item: Item) -> Judgment:
        q = float(item.output[2])
        other = None if item.system == "S2" else (q if item.doc_id != "d0" else q - 1)
        return Judgment(item_id=item.id, scores={"quality": q}, meta={"perturbations": {"a": q, "b": other}})

    def map_leaves(self, fn):  # pragma: no cover - not used
        return self

    def describe(self) -> dict:
        return {"kind": "flaky"}


@register("measure", "test-top-share")
class TopShare(ReportedMeasure):
    """A measure declared in one place (here): the share of items given the scale's top score."""

    info = MeasureInfo(
        label="top share", direction="lower", group="bias", headline=True, note="a test measure"
    )

    def compute(self, entry: EntryData) -> Measure:
        """Share of scored items at the top of the scale."""
        ok = entry.scores[entry.scores == entry.scores]
        return Measure(
            name="test-top-share",
            value=float((ok == entry.scale.max).mean()),
            n=len(ok),
            n_failed=len(entry.scores) - len(ok),
        )


@pytest.fixture(scope="module")
def compared(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, CompareResult]:
    """One compare and its report for the module (2-3 s); each test reads or alters its own copy."""
    out = tmp_path_factory.mktemp("report")
    base = PromptJudge(JudgePrompt.from_template(TEMPLATE, criterion="quality"), FakeLM(_answer))
    entries = [Entry.from_pipeline("baseline", base, Pipeline()), Entry(name="truth", judge=TrueJudge())]
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("MITIGATE_CACHE_DIR", str(tmp_path_factory.mktemp("lm-cache")))
        result = asyncio.run(
            compare(
                benchmark=_bench(),
                criterion="quality",
                entries=entries,
                out_dir=out,
                likelihood=LikelihoodScorer(LengthLM()),
                progress=False,
                n_boot=100,
                n_perm=200,
                command="pytest",
            )
        )
    write_report(result, out)
    return out, result


@pytest.fixture
def written(compared: tuple[Path, CompareResult], tmp_path: Path) -> tuple[Path, CompareResult]:
    """The module's report folder, copied for one test (some tests delete or move files in it)."""
    folder, result = compared
    shutil.copytree(folder, tmp_path, dirs_exist_ok=True)
    return tmp_path, result


def _main_table(md: str) -> tuple[list[str], list[list[str]]]:
    lines = md.split("## Accuracy and bias", 1)[1].splitlines()
    rows = [ln for ln in lines if ln.startswith("| ")]
    header = [c.strip() for c in rows[0].strip("|").split("|")]
    body = []
    for ln in rows[1:]:
        if not ln.startswith("| "):
            break
        body.append([c.strip() for c in ln.strip("|").split("|")])
        if len(body) == 3:
            break
    return header, body


def test_results_json_holds_every_judgment_and_measure(written: tuple[Path, CompareResult]) -> None:
    folder, result = written
    data = json.loads((folder / "results.json").read_text())
    assert [e["name"] for e in data["entries"]] == ["baseline", "truth"]
    for e in data["entries"]:
        assert len(e["judgments"]) == 12 and set(e["measures"]) == set(measure_table("score"))
    assert data["entries"][0]["summary"]["parse_failures"] == 3
    assert data["entries"][1]["measures"]["spearman-item"]["ci_low"] is not None
    assert data["settings"]["command"] == "pytest"
    assert load_results(folder) == load_results(folder / "results.json")


def test_table_states_direction_and_bolds_the_best_of_each_column(
    written: tuple[Path, CompareResult],
) -> None:
    folder, result = written
    header, body = _main_table((folder / "report.md").read_text())
    assert header[:4] == ["entry", "n ok", "parse failures", "errors"]
    assert body[0][:4] == ["baseline", "9", "3", "0"] and body[1][:4] == ["truth", "12", "0", "0"]
    labels = {f"{info.label} (": key for key, info in MEASURES.items()}
    checked = 0
    for col, head in enumerate(header[4:], start=4):
        key = next((k for prefix, k in labels.items() if head.startswith(prefix)), None)
        if key is None:
            continue
        direction = MEASURES[key].direction
        assert head.endswith({"higher": "(↑ higher)", "lower": "(↓ lower)", "zero": "(→ 0)"}[direction])
        best = _best([e.measures[key].value for e in result.entries], direction)
        bold = {i for i, row in enumerate(body[:2]) if row[col].startswith("**")}
        assert bold == best, head
        checked += 1
    assert checked >= 8
    spearman = header.index("Spearman item (↑ higher)")
    assert body[1][spearman].startswith("**0.9") and not body[0][spearman].startswith("**")


def test_plots_are_written_as_nonempty_pngs(written: tuple[Path, CompareResult]) -> None:
    folder, _ = written
    for name in ("histograms.png", "ls_vs_us.png", "per_system.png", "consistency.png"):
        data = (folder / name).read_bytes()
        assert data.startswith(PNG) and len(data) > 5000, name
        assert f"({name})" in (folder / "report.md").read_text()


def test_render_report_rebuilds_identical_files_from_results_json(
    written: tuple[Path, CompareResult],
) -> None:
    folder, _ = written
    names = ["report.md", "histograms.png", "ls_vs_us.png", "per_system.png", "consistency.png"]
    before = {n: (folder / n).read_bytes() for n in names}
    for n in names:
        (folder / n).unlink()
    (folder / "journals").rename(folder / "moved")  # only results.json is needed
    paths = render_report(folder)
    assert sorted(p.name for p in paths) == sorted(names)
    assert {n: (folder / n).read_bytes() for n in names} == before


def test_cli_report_rerenders_and_a_missing_folder_exits_2(
    written: tuple[Path, CompareResult], tmp_path_factory: pytest.TempPathFactory
) -> None:
    folder, _ = written
    (folder / "report.md").unlink()
    runner = CliRunner()
    ok = runner.invoke(app, ["report", str(folder)])
    assert ok.exit_code == 0 and (folder / "report.md").is_file()
    missing = runner.invoke(app, ["report", str(tmp_path_factory.mktemp("empty"))])
    assert missing.exit_code == 2 and "results.json" in missing.output


def test_cli_compare_rejects_bad_input_with_exit_2(tmp_path: Path) -> None:
    runner = CliRunner()
    none = runner.invoke(app, ["compare", "--benchmark", "jsonl:/nonexistent.jsonl", "--out", str(tmp_path)])
    assert none.exit_code == 2 and "error:" in none.output
    empty = runner.invoke(app, ["compare", "--out", str(tmp_path)])
    assert empty.exit_code == 2 and "--pipeline" in empty.output
    bad = runner.invoke(app, ["compare", "--pipeline", "no-such-step(k=1)", "--out", str(tmp_path)])
    assert bad.exit_code == 2 and "no-such-step" in bad.output


@pytest.mark.slow
def test_cli_compare_runs_a_pipeline_and_a_released_judge_end_to_end(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = data_dir()
    if root is None or not (root / "summeval_llm_summeval" / "eval_model_generations").is_dir():
        pytest.skip("shared SummEval data (summeval_llm_summeval) is not available")
    from mitigate.testing import StubOpenAIServer

    def reply(body: dict) -> str:
        text = body["messages"][-1]["content"]
        summary = text.split("Summary:", 1)[-1]
        return f"Fine.\nScore: {1 + len(summary.split()) % 5}"

    monkeypatch.setenv("MITIGATE_CACHE_DIR", str(tmp_path / "cache"))
    out = tmp_path / "run"
    with StubOpenAIServer(latency=0.0, reply=reply) as server:
        args = [
            "compare",
            "--benchmark",
            "summeval",
            "--criterion",
            "coherence",
            "--backend",
            "openai:stub-model",
            "--base-url",
            server.base_url,
            "--pipeline",
            "baseline",
            "--released",
            "chatgpt-rts",
            "--limit",
            "12",
            "--out",
            str(out),
            "--n-boot",
            "20",
            "--no-progress",
            "--no-cache",
        ]
        first = CliRunner().invoke(app, args)
        assert first.exit_code == 0, first.output
        calls = server.request_count
        second = CliRunner().invoke(app, args)
        assert second.exit_code == 0 and server.request_count == calls == 12
    data = json.loads((out / "results.json").read_text())
    assert [e["name"] for e in data["entries"]] == ["baseline", "chatgpt-rts"]
    assert data["entries"][0]["summary"]["calls"] == 12
    assert "| baseline |" in (out / "report.md").read_text()


async def test_report_gives_consistency_of_scored_and_of_all_and_says_how_to_read_measures(
    tmp_path: Path,
) -> None:
    result = await compare(
        benchmark=_bench(),
        criterion="quality",
        entries=[Entry(name="flaky", judge=FlakyJudge())],
        out_dir=tmp_path,
        progress=False,
        n_boot=20,
        n_perm=50,
    )
    m = result.entries[0].measures["perturbation-consistency"]
    # 12 items: 4 on S2 have no score under perturbation b; of the 8 others, 6 (not on d0) agree
    assert (m.count, m.n, m.n_failed) == (6, 8, 4)
    assert m.value == pytest.approx(6 / 8) and m.of_all == pytest.approx(6 / 12)
    write_report(result, tmp_path)
    md = (tmp_path / "report.md").read_text()
    header, body = _main_table(md)
    # one entry: nothing to be best against, so nothing in bold
    assert body[0][header.index("consistency (↑ higher)")].startswith("0.750") and "of all: 0.500 of 12" in md
    assert "| consistency | ↑ higher | 0.750 |" in md and "| 0.500 of 12 |" in md
    assert "each dropped one counted against the judge" in md
    assert "How to read:" in md and MEASURES["perturbation-consistency"].note in md


def test_a_registered_measure_appears_in_results_table_and_notes(written: tuple[Path, CompareResult]) -> None:
    folder, result = written
    assert "test-top-share" in MEASURES and MEASURES["test-top-share"].label == "top share"
    top = [float(it.output[2]) == 5.0 for it in _bench().items]
    assert result.entry("truth").measures["test-top-share"].value == pytest.approx(sum(top) / len(top))
    md = (folder / "report.md").read_text()
    header, _ = _main_table(md)
    assert "top share (↓ lower)" in header and "- top share: a test measure" in md
    alpha_note = MEASURES["alpha-across-samples"].note
    assert "binned to the coarsest scale" in alpha_note and alpha_note in md
