"""The audit path on the command line: `compare --recorded`, the pairwise releases, and `judge --out`."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from mitigate.cli import app
from mitigate.paths import data_dir
from mitigate.testing import StubOpenAIServer

FIXTURES = Path(__file__).parents[1] / "fixtures"
PROMPT = "Rate the fluency of the summary from 1 to 5.\n\nArticle: {{source}}\nSummary: {{summary}}\n\nScore:"


@pytest.mark.slow
def test_compare_recorded_judgments_writes_a_report_without_a_backend(tmp_path: Path) -> None:
    out = tmp_path / "audit"
    result = CliRunner().invoke(
        app,
        [
            "compare",
            "-b",
            f"jsonl:{FIXTURES / 'topical_chat_mini.jsonl'}",
            "-c",
            "groundedness",
            "--recorded",
            str(FIXTURES / "topical_chat_mini_recorded.jsonl"),
            "--backend",
            "no-such-backend",
            "--out",
            str(out),
            "--n-boot",
            "50",
            "--no-progress",
        ],
    )
    assert result.exit_code == 0, result.output
    assert "comparing 2 entries on 'groundedness': judge-a, judge-b" in result.stderr
    data = json.loads((out / "results.json").read_text())
    assert [e["kind"] for e in data["entries"]] == ["recorded", "recorded"]
    assert all(e["summary"]["calls"] == 0 for e in data["entries"])
    assert data["human_scale"]["max"] == 1
    assert "| judge-a |" in (out / "report.md").read_text()


def test_compare_without_any_entry_and_with_a_bad_recorded_file_exits_2(tmp_path: Path) -> None:
    none = CliRunner().invoke(app, ["compare", "-b", f"jsonl:{FIXTURES / 'topical_chat_mini.jsonl'}"])
    assert none.exit_code == 2 and "--recorded file" in none.stderr
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"item_id": "c1/tmpl", "judge": "j", "criterion": "overall", "score": "four"}\n')
    result = CliRunner().invoke(
        app,
        [
            "compare",
            "-b",
            f"jsonl:{FIXTURES / 'topical_chat_mini.jsonl'}",
            "-c",
            "overall",
            "--recorded",
            str(bad),
            "--out",
            str(tmp_path / "o"),
        ],
    )
    assert result.exit_code == 2 and f"{bad}:1: expected a number for 'score'" in result.stderr


@pytest.mark.slow
def test_compare_the_released_head_to_head_on_the_pairwise_benchmark(tmp_path: Path) -> None:
    root = data_dir()
    if root is None or not (root / "summeval_llm_summeval" / "comp_res").is_dir():
        pytest.skip("shared SummEval data (summeval_llm_summeval/comp_res) is not available")
    result = CliRunner().invoke(
        app,
        [
            "compare",
            "-b",
            "summeval-h2h",
            "-c",
            "relevance",
            "--released",
            "chatgpt-h2h",
            "--out",
            str(tmp_path),
            "--n-boot",
            "50",
            "--no-progress",
        ],
    )
    assert result.exit_code == 0, result.output
    report = (tmp_path / "report.md").read_text()
    assert (
        "position consistency" in report
        and "## Per system pair" in report
        and ("| chatgpt-h2h | M8 vs M9 |") in report
    )


def _bench(tmp_path: Path) -> Path:
    path = tmp_path / "bench.jsonl"
    rows = [
        {
            "id": f"x{i}",
            "inputs": {"source": f"Article {i}."},
            "output": f"Summary {i}.",
            "human": {"fluency": 3.0 + i % 2},
        }
        for i in range(3)
    ]
    path.write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    (tmp_path / "prompt.txt").write_text(PROMPT)
    return path


@pytest.mark.parametrize("name", ["judgments.jsonl", "judgments.csv"])
def test_judge_out_writes_one_row_per_item_with_failures_and_usage(
    tmp_path: Path, monkeypatch, name: str
) -> None:
    monkeypatch.setenv("MITIGATE_CACHE_DIR", str(tmp_path / "cache"))
    _bench(tmp_path)
    replies = {"Summary 0.": "Score: 4", "Summary 1.": "I cannot tell.", "Summary 2.": "Score: 2"}

    def reply(body: dict) -> str:
        text = json.dumps(body)
        return next(answer for key, answer in replies.items() if key in text)

    with StubOpenAIServer(latency=0.0, reply=reply) as server:
        result = CliRunner().invoke(
            app,
            [
                "judge",
                "-b",
                f"jsonl:{tmp_path / 'bench.jsonl'}",
                "-c",
                "fluency",
                "--prompt",
                str(tmp_path / "prompt.txt"),
                "--backend",
                "openai:stub-model",
                "--base-url",
                server.base_url,
                "--concurrency",
                "1",
                "--no-progress",
                "--out",
                str(tmp_path / name),
            ],
        )
    assert result.exit_code == 0, result.output
    assert f"wrote {tmp_path / name} (3 rows)" in result.stderr
    if name.endswith(".csv"):
        with (tmp_path / name).open(newline="") as handle:
            rows = list(csv.DictReader(handle))
        scores = [r["score"] for r in rows]
        failures = [json.loads(r["failures"]) for r in rows]
        assert scores == ["4.0", "", "2.0"] and rows[0]["human"] == "3.0"
    else:
        rows = [json.loads(line) for line in (tmp_path / name).read_text().splitlines()]
        scores = [r["score"] for r in rows]
        failures = [r["failures"] for r in rows]
        assert scores == [4.0, None, 2.0] and rows[1]["human"] == 4.0 and rows[0]["needs_human"] is False
        assert rows[0]["prompt_tokens"] > 0 and rows[0]["calls"] == 1
    assert [r["item_id"] for r in rows] == ["x0", "x1", "x2"]
    assert failures[1][0]["raw"] == "I cannot tell." and failures[0] == []


def test_compare_recorded_reads_raw_only_rows_with_the_prompts_format_and_counts_unknown_items(
    tmp_path: Path,
) -> None:
    """Logged answers audited with a template's own format; rows for other items are counted."""
    bench = tmp_path / "pw.jsonl"
    items = [
        {
            "id": f"p{i}",
            "output": f"answer one {i}",
            "output_b": f"answer two {i}",
            "preference": {"help": "A"},
        }
        for i in range(3)
    ]
    bench.write_text("\n".join(json.dumps(r) for r in items) + "\n")
    prompt = tmp_path / "prompt.txt"
    prompt.write_text(
        'Explain briefly which output is better. End with "Therefore, Output (a) is better." '
        'or "Therefore, Output (b) is better."\n\n# Output (a):\n{{output}}\n\n# Output '
        "(b):\n{{output_b}}\n"
    )
    rows = [
        {
            "item_id": "p0",
            "judge": "logged",
            "criterion": "help",
            "raw": "Output (b) adds detail not in Output (a). Therefore, Output (a) is better as it is "
            "right.",
        },
        {"item_id": "p1", "judge": "logged", "criterion": "help", "raw": "Therefore, Output (b) is better."},
        {
            "item_id": "p1",
            "judge": "logged",
            "criterion": "help",
            "raw": "Both are fine.",
            "order": "swapped",
        },
        {
            "item_id": "p2",
            "judge": "logged",
            "criterion": "help",
            "raw": "It is hard to say whether Output (a) is better.",
        },
        {
            "item_id": "p2",
            "judge": "logged",
            "criterion": "help",
            "raw": "Therefore, Output (b) is better.",
            "order": "swapped",
        },
        {"item_id": "zz", "judge": "logged", "criterion": "help", "raw": "Therefore, Output (a) is better."},
        {
            "item_id": "zz",
            "judge": "logged",
            "criterion": "help",
            "raw": "Therefore, Output (a) is better.",
            "order": "swapped",
        },
    ]
    recorded = tmp_path / "logged.jsonl"
    recorded.write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    base = [
        "compare",
        "-b",
        f"jsonl:{bench}",
        "-c",
        "help",
        "--recorded",
        str(recorded),
        "--n-boot",
        "20",
        "--no-progress",
    ]
    refused = CliRunner().invoke(app, [*base, "--out", str(tmp_path / "o0")])
    assert refused.exit_code == 2 and "got only 'raw'" in refused.stderr and "--prompt" in refused.stderr
    result = CliRunner().invoke(app, [*base, "--prompt", str(prompt), "--out", str(tmp_path / "o1")])
    assert result.exit_code == 0, result.output
    warned = [line for line in result.stderr.splitlines() if "not in benchmark" in line]
    assert len(warned) == 1 and "logged: 2 rows on 1 items" in warned[0]
    data = json.loads((tmp_path / "o1" / "results.json").read_text())
    (entry,) = data["entries"]
    # p0 reads first (A, right), p1 second (B, wrong), p2's original order is a hedge: a recorded failure
    assert entry["measures"]["preference-accuracy"]["value"] == pytest.approx(1 / 2)
    # p2's original order and p1's swapped one: both orders count
    assert entry["summary"]["parse_failures"] == 2
