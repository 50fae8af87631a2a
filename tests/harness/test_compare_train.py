"""Fit on train, compare on test: the split by document and what compare refuses."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from mitigate import JudgePrompt, PromptJudge
from mitigate.cli import app
from mitigate.data import Benchmark, Item, save_jsonl, train_test_split
from mitigate.errors import ConfigError, DataError
from mitigate.harness import Entry, compare
from mitigate.harness._planning import train_and_test
from mitigate.lm import FakeLM, LMRequest
from mitigate.report import write_report
from mitigate.strategies import parse_pipeline
from mitigate.testing import StubOpenAIServer


def _bench(n_docs: int = 10, per_doc: int = 3) -> Benchmark:
    items = tuple(
        Item(
            id=f"S{s}/d{d}",
            output=f"output {s} {d}",
            system=f"S{s}",
            doc_id=f"d{d}",
            human={"q": float(1 + (s + d) % 5)} if d != 0 else {},
        )
        for d in range(n_docs)
        for s in range(per_doc)
    )
    return Benchmark(name="b", items=items, criteria=("q",))


def test_the_split_keeps_documents_whole_is_seeded_and_labelled() -> None:
    bench = _bench()
    train, test = train_test_split(bench, 0.5, seed=3, criterion="q")
    train_docs = {it.doc_id for it in train.items}
    test_docs = {it.doc_id for it in test.items}
    assert not train_docs & test_docs
    assert len(train_docs) + len(test_docs) in (9, 10)  # d0 has no label: it never trains
    assert all("q" in it.human for it in train.items)
    assert {it.id for it in train.items} | {it.id for it in test.items} <= {it.id for it in bench.items}
    assert train_test_split(bench, 0.5, seed=3, criterion="q") == (train, test)
    assert train_test_split(bench, 0.5, seed=4, criterion="q") != (train, test)
    # half of the 30 items by document (5 documents of 3), less d0's 3 unlabelled items if it was drawn
    assert len(train) in (12, 15)


def test_bad_fractions_and_overlapping_training_benchmarks_are_refused(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="strictly between 0 and 1"):
        train_test_split(_bench(), 1.5)
    with pytest.raises(DataError, match="expected both to be non-empty"):
        train_test_split(_bench(n_docs=1), 0.5)
    bench = _bench()
    with pytest.raises(ConfigError, match="shares no item or document"):
        train_and_test(bench, bench, "q", 0)
    other = Benchmark(
        name="other", items=(Item(id="x", output="o", doc_id="elsewhere", human={"q": 3.0}),), criteria=("q",)
    )
    fit, test, info = train_and_test(bench, other, "q", 0)
    assert fit is not None and test is bench and info is not None and info["ids"] == ["x"]


# ----------------------------------------------------------------------------- fitting every learnable entry

GUIDED = (
    "Rate the text.\n\nScoring guideline:\nScore 1 means poor.\nScore 2 means weak.\nScore 3 means "
    'fair.\nScore 4 means good.\nScore 5 means excellent.\n\nText: {{output}}\n\nReply with "Score: '
    '" and a number.'
)


def _scored(request: LMRequest) -> str:
    text = request.messages[-1].content
    return f"Score: {1 + len(text) % 5}"


def _demo_ids(spec: dict) -> set[str]:
    """The ids of the demos a fitted pipeline spec shows."""
    ids: set[str] = set()
    for step in spec.get("steps", []):
        ids |= {d["item"]["id"] for d in step["params"].get("demos_") or []}
    return ids


def _pool_sizes(spec: dict) -> list[int]:
    """How many labelled training items each fitted demo step's selector chose from."""
    return [step["params"]["selector_"]["params"]["n_pool_"] for step in spec.get("steps", [])]


@pytest.mark.slow
async def test_compare_fits_demo_pipelines_on_train_and_judges_only_test(tmp_path: Path) -> None:
    bench = _bench(n_docs=12)
    base = PromptJudge(JudgePrompt.from_template(GUIDED, criterion="q"), FakeLM(_scored))
    entries = [
        Entry.from_pipeline(text, base, text)
        for text in (
            "baseline",
            "random-demos(k=2)",
            "demos(selector=stratified, k=2)",
            "perturbed-demos(m=2)",
        )
    ]
    assert [e.needs_fit for e in entries] == [False, True, True, True]
    with pytest.raises(
        ConfigError, match=r"entry 'random-demos\(k=2\)' learns from data .* --train FRACTION"
    ):
        await compare(
            benchmark=bench, criterion="q", entries=entries, out_dir=tmp_path / "none", progress=False
        )
    result = await compare(
        benchmark=bench,
        criterion="q",
        entries=entries,
        out_dir=tmp_path,
        progress=False,
        n_boot=20,
        n_perm=50,
        train=0.5,
        seed=1,
    )
    train_ids = set(result.settings["train"]["ids"])
    judged = {it.id for it in result.items}
    assert train_ids and judged and not train_ids & judged
    assert not {i.split("/")[1] for i in train_ids} & {i.split("/")[1] for i in judged}  # whole documents
    assert result.entries[0].fitted == {
        "fitted": False,
        "why": "nothing to learn or already fitted; used as given",
    }
    for e in result.entries[1:]:
        assert e.fitted is not None and e.fitted["fitted"] and e.fitted["n_items"] == len(train_ids)
        assert e.spec["steps"][0]["params"]["demos_"], e.name
        shown = _demo_ids(e.spec)
        assert shown <= train_ids and len(shown) == 2  # demos from the training split only
        assert _pool_sizes(e.spec) == [len(train_ids)]  # chosen from all of it: a count, not the items
        assert not set(json.dumps(e.spec).split('"')) & (train_ids - shown)
        assert e.comparison is not None and e.comparison.against == "baseline"
    assert (tmp_path / "train.jsonl").is_file()
    write_report(result, tmp_path)
    assert "Fit on train, compare on test: 3 entries" in (tmp_path / "report.md").read_text()
    # a rerun resumes every entry from its journal: fitting is deterministic, so the fitted judges match
    again = await compare(
        benchmark=bench,
        criterion="q",
        entries=entries,
        out_dir=tmp_path,
        progress=False,
        n_boot=20,
        n_perm=50,
        train=0.5,
        seed=1,
    )
    assert [e.summary.resumed for e in again.entries] == [len(judged)] * 4


def test_cli_compare_train_fits_and_reports(tmp_path: Path) -> None:
    path = save_jsonl(_bench(n_docs=8), tmp_path / "b.jsonl")
    (tmp_path / "p.txt").write_text(GUIDED)
    with StubOpenAIServer(latency=0.0, reply="Score: 3") as server:
        result = CliRunner().invoke(
            app,
            [
                "compare",
                "-b",
                f"jsonl:{path}",
                "-c",
                "q",
                "--prompt",
                str(tmp_path / "p.txt"),
                "--backend",
                "openai:stub",
                "--base-url",
                server.base_url,
                "--no-cache",
                "-p",
                "baseline",
                "-p",
                "random-demos(k=2)",
                "--train",
                "0.5",
                "--out",
                str(tmp_path / "o"),
                "--n-boot",
                "20",
                "--no-progress",
            ],
        )
    assert result.exit_code == 0, result.output
    data = json.loads((tmp_path / "o" / "results.json").read_text())
    assert data["settings"]["train"]["source"].startswith("b, fraction 0.5 by document")
    assert data["entries"][1]["fitted"]["fitted"] is True
    missing = CliRunner().invoke(
        app,
        [
            "compare",
            "-b",
            f"jsonl:{path}",
            "-c",
            "q",
            "--prompt",
            str(tmp_path / "p.txt"),
            "-p",
            "random-demos(k=2)",
            "--out",
            str(tmp_path / "o2"),
        ],
    )
    assert missing.exit_code == 2 and "--train FRACTION" in missing.stderr


async def test_a_searched_spec_file_is_an_entry_used_as_given(tmp_path: Path) -> None:
    bench = _bench(n_docs=12)
    base = PromptJudge(JudgePrompt.from_template(GUIDED, criterion="q"), FakeLM(_scored))
    other = Benchmark(
        name="pool",
        items=tuple(
            Item(id=f"pool{i}", output=f"pool text {i}", doc_id=f"p{i}", human={"q": float(1 + i % 5)})
            for i in range(6)
        ),
        criteria=("q",),
    )
    searched = parse_pipeline("random-demos(k=2)").fit(other, base, progress=False)
    spec_file = tmp_path / "searched.json"
    spec_file.write_text(json.dumps({"pipeline": searched.spec(), "search": {"engine": "test"}}))
    entry = Entry.from_pipeline(None, base, f"@{spec_file}")
    assert not entry.needs_fit
    result = await compare(
        benchmark=bench,
        criterion="q",
        entries=[Entry.from_pipeline("baseline", base, "baseline"), entry],
        out_dir=tmp_path,
        progress=False,
        n_boot=20,
        n_perm=50,
        train=0.5,
    )
    e = result.entries[1]
    assert e.fitted is not None and not e.fitted["fitted"]
    assert _demo_ids(e.spec) == _demo_ids(searched.spec())  # not refitted on this train split
    assert _demo_ids(e.spec) <= {it.id for it in other.items}


async def test_an_entry_that_cannot_fit_is_left_out_with_its_reason(tmp_path: Path) -> None:
    pytest.importorskip("llama_cpp")
    bench = _bench(n_docs=12)
    base = PromptJudge(JudgePrompt.from_template(GUIDED, criterion="q"), FakeLM(lambda _r: "Score: 3"))
    entries = [
        Entry.from_pipeline(t, base, t)
        for t in ("baseline", "random-demos(k=2)", "highest-rs-demos(k=2, pool_size=6)")
    ]
    result = await compare(
        benchmark=bench,
        criterion="q",
        entries=entries,
        out_dir=tmp_path,
        progress=False,
        n_boot=20,
        n_perm=50,
        train=0.5,
    )
    assert [e.name for e in result.entries] == ["baseline", "random-demos(k=2)"]
    # the judge answers 3 to everything, so US (and RS) is undefined on every pool item: refused before LS
    why = result.settings["not_fitted"][entries[2].name]
    assert why.endswith(
        "got the judge gave every one of the 6 judged items the same score, 3 (of the 6 pool items)"
    )
    assert why.startswith("highest-rs-demos")  # the pipeline's name, never an exception class
    write_report(result, tmp_path)
    report = (tmp_path / "report.md").read_text()
    assert "Not compared, because fitting on the training items failed:" in report
