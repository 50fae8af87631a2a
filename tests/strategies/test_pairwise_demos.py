"""Demos from gold preferences on pairwise benchmarks: selectors, compare --train and search."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from mitigate.cli import app
from mitigate.data import Benchmark, Item, save_jsonl
from mitigate.judge import Judgment
from mitigate.search import Objective
from mitigate.selectors import KNN, Random, Stratified
from mitigate.testing import StubOpenAIServer

PAIRWISE = (
    "Which response answers better?\n\nResponse 1: {{output}}\n\nResponse 2: {{output_b}}\n\n"
    "Answer with 1 or 2."
)


def _bench(n: int = 16) -> Benchmark:
    items = tuple(
        Item(
            id=f"p{k}",
            output=f"a careful answer {k}",
            output_b=f"short {k}",
            doc_id=f"d{k // 2}",
            preference={"help": "A" if k % 3 else "B"},
        )
        for k in range(n)
    )
    return Benchmark(name="pw", items=items, criteria=("help",))


@pytest.mark.parametrize(
    "selector", [Random(seed=1), Stratified(seed=1), KNN()], ids=["random", "stratified", "knn"]
)
def test_selectors_show_gold_preferences_as_verdicts(selector) -> None:
    bench = _bench()
    fitted = selector.fit(bench, criterion="help")
    query = bench.items[0]
    demos = fitted.select(3, query=query)
    assert len(demos) == 3 and query.id not in {d.item.id for d in demos}
    for d in demos:
        assert d.score is None
        assert d.verdict == {"A": "first", "B": "second"}[d.item.preference["help"]]


def test_stratified_balances_demos_over_the_gold_verdicts() -> None:
    demos = Stratified(seed=0).fit(_bench(), criterion="help").select(2)
    assert sorted(d.verdict for d in demos) == ["first", "second"]  # 11 A's and 5 B's: one of each


def test_the_objective_scores_verdicts_by_accuracy_against_gold_preferences() -> None:
    items = list(_bench(4).items)  # preferences B, A, A, B
    judgments = [
        Judgment(item_id=it.id, verdict=v)
        for it, v in zip(items, ["second", "first", "second", "first"], strict=True)
    ]
    value = Objective(agreement="spearman").evaluate(judgments, items, "help")
    assert value.agreement.value == pytest.approx(0.5)  # right on the first two, wrong on the last two


def test_compare_train_fits_pairwise_demo_entries_instead_of_dropping_them(
    tmp_path: Path, monkeypatch
) -> None:
    monkeypatch.setenv("MITIGATE_CACHE_DIR", str(tmp_path / "cache"))
    b = save_jsonl(_bench(), tmp_path / "pw.jsonl")
    (tmp_path / "t.txt").write_text(PAIRWISE)
    entries = ["baseline", "random-demos(k=2)", "demos(selector=stratified, k=2)", "demos(selector=knn, k=2)"]
    with StubOpenAIServer(latency=0.0, reply="1") as server:
        args = [
            "compare",
            "-b",
            f"jsonl:{b}",
            "--prompt",
            str(tmp_path / "t.txt"),
            "--train",
            "0.5",
            "--out",
            str(tmp_path / "o"),
            "--backend",
            "openai:stub",
            "--base-url",
            server.base_url,
            "--no-progress",
            "--no-cache",
            "--n-boot",
            "10",
        ]
        for e in entries:
            args += ["-p", e]
        result = CliRunner().invoke(app, args)
        bodies = list(server.bodies)
    assert result.exit_code == 0, result.output
    data = json.loads((tmp_path / "o" / "results.json").read_text())
    assert [e["name"] for e in data["entries"]] == entries
    assert any("Examples:" in json.dumps(body) for body in bodies)


def test_search_on_a_pairwise_benchmark_searches_its_labelled_items(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("MITIGATE_CACHE_DIR", str(tmp_path / "cache"))
    b = save_jsonl(_bench(), tmp_path / "pw.jsonl")
    (tmp_path / "t.txt").write_text(PAIRWISE)
    with StubOpenAIServer(latency=0.0, reply="1") as server:
        result = CliRunner().invoke(
            app,
            [
                "search",
                "-b",
                f"jsonl:{b}",
                "--prompt",
                str(tmp_path / "t.txt"),
                "--backend",
                "openai:stub",
                "--base-url",
                server.base_url,
                "--no-progress",
                "--no-cache",
                "--out",
                str(tmp_path / "s.json"),
                "--budget",
                "40",
                "--no-plot",
                "--n-boot",
                "10",
            ],
        )
    assert result.exit_code == 0, result.output
    assert "on 16 labelled items" in result.stderr and "agreement is accuracy" in result.stderr
    assert "coverage 100%" in result.stdout
    assert (tmp_path / "s.json").exists()
