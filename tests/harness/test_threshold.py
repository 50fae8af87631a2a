"""Threshold gates: the pass rate over reruns per item and overall, straddling items, and a decision drawn
from an interval (Wilson for one sample per item, a bootstrap over items otherwise); `judge --threshold` exits
1 when the required rate is not shown to be met."""

from __future__ import annotations

import html
import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from mitigate.cli import app
from mitigate.diff import threshold_report, threshold_text
from mitigate.diff._threshold import wilson_interval
from mitigate.judge import Judgment
from mitigate.testing import StubOpenAIServer


def _j(item: str, *samples: float | None, error: str | None = None) -> Judgment:
    good = [s for s in samples if s is not None]
    return Judgment(
        item_id=item,
        scores={"q": sum(good) / len(good) if good else None},
        samples={"q": samples},
        error=error,
    )


def test_wilson_matches_the_textbook_values():
    low, high = wilson_interval(40, 40)
    assert (round(low, 4), round(high, 9)) == (0.9124, 1.0)
    low, high = wilson_interval(5, 10)
    assert (round(low, 4), round(high, 4)) == (0.2366, 0.7634)


def test_pass_rates_per_item_straddling_and_a_failed_item_counted_as_not_passing():
    rep = threshold_report(
        [_j("a", 4, 5, 4), _j("b", 3, 4, 5), _j("c", 1, 2, 2), _j("d", None, None, None)], "q", 4
    )
    by = {it.item_id: it for it in rep.items}
    assert [by[k].pass_rate for k in "abcd"] == [1.0, pytest.approx(2 / 3), 0.0, 0.0]
    assert [it.item_id for it in rep.straddling] == ["b"] and by["d"].failed and rep.n_failed == 1
    assert rep.pass_rate == pytest.approx((1 + 2 / 3) / 4) and rep.interval == "bootstrap"
    text = threshold_text(rep)
    assert "1 items without a score count as not passing" in text and "b (2/3)" in text


@pytest.mark.parametrize("n, passing, decision", [(40, 40, "pass"), (5, 5, "undecided"), (40, 20, "fail")])
def test_the_decision_comes_from_the_interval_not_the_point(n, passing, decision):
    judgments = [_j(f"i{k}", 5 if k < passing else 1) for k in range(n)]
    rep = threshold_report(judgments, "q", 4, require=0.9)
    assert rep.interval == "wilson" and rep.decision == decision


def _bench(tmp_path: Path, n: int) -> list[str]:
    rows = [
        {
            "id": f"x{i}",
            "doc_id": f"d{i}",
            "inputs": {"source": f"Article {i}."},
            "output": f"Summary {i}.",
            "human": {"fluency": 4.0},
        }
        for i in range(n)
    ]
    (tmp_path / "bench.jsonl").write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    (tmp_path / "p.txt").write_text("Rate the fluency from 1 to 5.\n\nSummary: {{output}}\n\nScore:")
    return [
        "judge",
        "-b",
        f"jsonl:{tmp_path / 'bench.jsonl'}",
        "-c",
        "fluency",
        "-n",
        "0",
        "--prompt",
        str(tmp_path / "p.txt"),
        "--backend",
        "openai:stub",
        "--no-progress",
    ]


def test_judge_passes_the_gate_only_when_enough_items_show_the_rate(tmp_path, monkeypatch):
    monkeypatch.setenv("MITIGATE_CACHE_DIR", str(tmp_path / "cache"))
    with StubOpenAIServer(latency=0.0, reply="Score: 4") as server:
        args = ["--base-url", server.base_url, "--threshold", "4", "--require-pass-rate", "0.9"]
        few = CliRunner().invoke(app, [*_bench(tmp_path, 5), *args])
        assert few.exit_code == 1 and "undecided, required 0.9" in few.stderr
        many = CliRunner().invoke(app, [*_bench(tmp_path, 40), *args])
    assert many.exit_code == 0, many.output
    assert "PASS: the interval's lower end is at or above the required pass rate 0.9" in many.stdout


def test_require_pass_rate_without_a_threshold_is_refused(tmp_path):
    result = CliRunner().invoke(app, [*_bench(tmp_path, 3), "--require-pass-rate", "0.9"])
    assert result.exit_code == 2 and "--require-pass-rate applies with --threshold" in result.stderr


def test_compares_threshold_section_is_in_report_html_as_in_report_md_and_kept_by_a_re_render(
    tmp_path, monkeypatch
):
    monkeypatch.setenv("MITIGATE_CACHE_DIR", str(tmp_path / "cache"))
    args = _bench(tmp_path, 6)
    args[0] = "compare"
    with StubOpenAIServer(latency=0.0, reply="Score: 4") as server:
        out = tmp_path / "out"
        result = CliRunner().invoke(
            app,
            [
                *args,
                "-p",
                "baseline",
                "--base-url",
                server.base_url,
                "--threshold",
                "4",
                "--out",
                str(out),
                "--n-boot",
                "20",
            ],
        )
    assert result.exit_code == 0, result.output
    md, page = (out / "report.md").read_text(), (out / "report.html").read_text()
    section = md[md.index("## Pass threshold") :].splitlines()
    said = [line for line in section if line.startswith("Pass threshold:")]
    assert said and all(line in html.unescape(page) for line in said)  # each entry's line, on the page too
    (out / "report.md").unlink()
    (out / "report.html").unlink()
    again = CliRunner().invoke(app, ["report", str(out), "--html"])
    assert again.exit_code == 0, again.output
    assert (out / "report.md").read_text() == md and (out / "report.html").read_text() == page
