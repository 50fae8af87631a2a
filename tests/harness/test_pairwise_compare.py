"""A live pairwise judge on a pairwise benchmark: verdicts, position swap and the pairwise measures in
compare."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from mitigate import Item, JudgePrompt, PromptJudge
from mitigate.cli import app
from mitigate.data import Benchmark, save_jsonl
from mitigate.harness import Entry, compare
from mitigate.lm import FakeLM, LMRequest
from mitigate.report import render_markdown
from mitigate.testing import StubOpenAIServer

TEMPLATE = (
    "Which response answers better?\n\nResponse 1: {{output}}\n\nResponse 2: {{output_b}}\n\n"
    "Answer with 1, 2 or tie."
)


def _bench() -> Benchmark:
    items = []
    for k in range(8):
        long, short = f"a careful and complete answer number {k}", f"short {k}"
        a, b = (long, short) if k % 2 == 0 else (short, long)
        items.append(Item(id=f"p{k}", output=a, output_b=b, preference={"help": "A" if k % 2 == 0 else "B"}))
    return Benchmark(name="pw", items=tuple(items), criteria=("help",))


def _first_always(request: LMRequest) -> str:
    return "1"  # prefers whatever is shown first


def _longer(request: LMRequest) -> str:
    text = request.messages[-1].content
    a = text.split("Response 1: ")[1].split("\n")[0]
    b = text.split("Response 2: ")[1].split("\n")[0]
    return "1" if len(a) > len(b) else "2"


async def test_position_swap_entry_reports_consistency_fairness_and_its_gain(tmp_path: Path) -> None:
    prompt = JudgePrompt.from_template(TEMPLATE, criterion="help", answer="pairwise")
    entries = [
        Entry.from_pipeline("one order", PromptJudge(prompt, FakeLM(_first_always)), "baseline"),
        Entry.from_pipeline("swap", PromptJudge(prompt, FakeLM(_first_always)), "position-swap"),
        Entry.from_pipeline("swap, length judge", PromptJudge(prompt, FakeLM(_longer)), "position-swap"),
    ]
    result = await compare(
        benchmark=_bench(),
        criterion="help",
        entries=entries,
        out_dir=tmp_path,
        progress=False,
        n_boot=50,
        n_perm=200,
    )
    one, swap, longer = result.entries
    assert result.task == "pairwise"
    assert one.measures["preference-accuracy"].value == pytest.approx(0.5)  # A is right on half the items
    assert not one.measures["position-consistency"].ok  # one order only
    # always "first": every pair is primacy-preferred, so PC 0, PF -1, and every verdict becomes a tie
    assert swap.measures["position-consistency"].value == 0.0
    assert swap.measures["preference-fairness"].value == pytest.approx(-1.0)
    assert swap.measures["swap-gain"].value == pytest.approx(-0.5)
    assert swap.histogram == {"A": 0, "B": 0, "tie": 8}
    # the length judge is position-consistent, always right here, and always prefers the longer text
    assert longer.measures["position-consistency"].value == 1.0
    assert longer.measures["preference-accuracy"].value == 1.0
    assert longer.measures["longer-preference"].value == pytest.approx(0.5)
    assert longer.comparison is not None and longer.comparison.measure == "preference-accuracy"
    assert longer.comparison.observed == pytest.approx(0.5)


def test_cli_compare_on_a_pairwise_benchmark_needs_a_pairwise_prompt(tmp_path: Path) -> None:
    path = save_jsonl(_bench(), tmp_path / "pw.jsonl")
    result = CliRunner().invoke(
        app, ["compare", "-b", f"jsonl:{path}", "-p", "baseline", "--out", str(tmp_path / "o")]
    )
    assert result.exit_code == 2 and "is pairwise; expected --prompt" in result.stderr
    (tmp_path / "p.txt").write_text(TEMPLATE)
    with StubOpenAIServer(latency=0.0, reply="1") as server:
        ok = CliRunner().invoke(
            app,
            [
                "compare",
                "-b",
                f"jsonl:{path}",
                "-p",
                "position-swap",
                "--prompt",
                str(tmp_path / "p.txt"),
                "--backend",
                "openai:stub",
                "--base-url",
                server.base_url,
                "--no-cache",
                "--out",
                str(tmp_path / "o"),
                "--n-boot",
                "20",
                "--no-progress",
            ],
        )
        assert server.request_count == 16  # 8 pairs in both orders
    assert ok.exit_code == 0, ok.output
    data = json.loads((tmp_path / "o" / "results.json").read_text())
    assert data["task"] == "pairwise"
    assert data["entries"][0]["measures"]["position-consistency"]["value"] == 0.0
    assert "pref. fairness" in (tmp_path / "o" / "report.md").read_text()


async def test_the_pairwise_report_counts_both_orders_and_never_flatters(tmp_path: Path) -> None:
    """Accuracy over both orders beside the judge's verdict, the orders named, no scale line,
    a swap gain <= 0 by construction neither 'higher is better' nor bold, equal lengths not failures."""
    prompt = JudgePrompt.from_template(TEMPLATE, criterion="help", answer="pairwise")
    entries = [
        Entry.from_pipeline("one order", PromptJudge(prompt, FakeLM(_first_always)), "baseline"),
        Entry.from_pipeline("swap", PromptJudge(prompt, FakeLM(_first_always)), "position-swap"),
        Entry.from_pipeline("swap, length judge", PromptJudge(prompt, FakeLM(_longer)), "position-swap"),
    ]
    result = await compare(
        benchmark=_bench(),
        criterion="help",
        entries=entries,
        out_dir=tmp_path,
        progress=False,
        n_boot=50,
        n_perm=200,
    )
    one, swap, longer = result.entries
    both = swap.measures["accuracy-both-orders"]
    assert both.value == pytest.approx(0.5) and both.n == 16  # "first" in both orders: right once per pair
    assert longer.measures["accuracy-both-orders"].value == 1.0
    assert not one.measures["accuracy-both-orders"].ok
    assert one.measures["preference-accuracy"].extra["orders"] == "one order, as presented"
    assert swap.measures["preference-accuracy"].extra["orders"] == "both orders, reconciled"
    assert swap.measures["swap-gain"].extra["nonpositive_by_construction"] is True
    report = render_markdown(result)
    head = next(line for line in report.splitlines() if line.startswith("| entry"))
    assert "accuracy (both orders) (↑ higher)" in head and "accuracy (judge's verdict)" in head
    assert "swap gain (≤ 0 by construction: no gold ties)" in head and "swap gain (↑" not in head
    lines = report.splitlines()
    table = lines[lines.index(head) + 2 :]
    rows = [line for line in table[: table.index("")] if line.startswith("| swap")]
    assert len(rows) == 2
    gain_col = head.split(" | ").index("swap gain (≤ 0 by construction: no gold ties)")
    assert all("**" not in row.split(" | ")[gain_col] for row in rows)
    assert "scale 1 to" not in report and "verdicts first / second / tie" in report
    assert "parse failures (both orders)" in report


def test_longer_preference_calls_equal_lengths_not_applicable_not_failed() -> None:
    from mitigate.measures import longer_preference

    m = longer_preference(["A", "B", "tie", None], [3, 3, 3, 3], [3, 3, 3, 3])
    assert not m.ok and m.n_failed == 1 and "equal length" in (m.reason or "")
    assert m.extra["equal_length"] == 2 and m.extra["tie"] == 1
    ok = longer_preference(["A", "A", None], [5, 3, 1], [3, 3, 2])
    assert ok.value == pytest.approx(0.5) and ok.n == 1 and ok.n_failed == 1 and ok.extra["equal_length"] == 1


def test_accuracy_both_orders_counts_each_order_once_and_a_missing_verdict_as_that_orders_failure() -> None:
    from mitigate.measures import accuracy_both_orders

    # gold A: "first" in the original order and "second" in the swapped order are both right
    m = accuracy_both_orders(["first", "first", None], ["second", "first", "first"], ["A", "A", "B"])
    assert m.value == pytest.approx(4 / 5) and m.n == 5 and m.n_failed == 1  # 4 of the 5 verdicts given
    assert m.extra["accuracy_original"] == 1.0 and m.extra["accuracy_swapped"] == pytest.approx(2 / 3)
