"""`mitigate probe` end to end against the stub OpenAI-compatible server, and its one-line refusals."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from typer.testing import CliRunner

from mitigate.cli import app
from mitigate.testing import StubOpenAIServer

PROMPT = "Rate the fluency of the summary from 1 to 5.\n\nArticle: {{source}}\nSummary: {{summary}}\n\nScore:"


def _bench(tmp_path: Path, n: int = 8) -> list[str]:
    rows = [
        {
            "id": f"x{i}",
            "system": "S",
            "doc_id": f"d{i}",
            "inputs": {"source": f"Article {i}."},
            "output": f"Summary {i} is plain.",
            "human": {"fluency": 3.0},
        }
        for i in range(n)
    ]
    (tmp_path / "bench.jsonl").write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    (tmp_path / "prompt.txt").write_text(PROMPT)
    return [
        "probe",
        "-b",
        f"jsonl:{tmp_path / 'bench.jsonl'}",
        "-c",
        "fluency",
        "--prompt",
        str(tmp_path / "prompt.txt"),
        "--no-progress",
        "--n-boot",
        "100",
    ]


def falls_for_authority(body: dict[str, Any]) -> str:
    text = body["messages"][-1]["content"]
    cited = any(mark in text for mark in ("(Source:", "(See:", "(Reference:", "(Cited from:"))
    return "Score: 5" if cited else "Score: 3"


def test_probe_prints_the_table_and_writes_every_rewrite(tmp_path, monkeypatch) -> None:
    monkeypatch.setenv("MITIGATE_CACHE_DIR", str(tmp_path / "cache"))
    args = _bench(tmp_path)
    with StubOpenAIServer(latency=0.0, reply=falls_for_authority) as server:
        result = CliRunner().invoke(
            app,
            [
                *args,
                "--backend",
                "openai:stub",
                "--base-url",
                server.base_url,
                "--probes",
                "authority,refinement",
                "-o",
                str(tmp_path / "p.json"),
            ],
        )
        assert server.request_count == 8 * 4  # original, rerun, two probes
    assert result.exit_code == 0, result.output
    rows = {ln.split("|")[1].strip(): ln for ln in result.stdout.splitlines() if ln.startswith("| ")}
    assert "moved by the bias" in rows["authority"] and "not moved above noise" in rows["refinement"]
    assert "the floor is 0, as it must be on a deterministic backend" in result.stdout
    saved = json.loads((tmp_path / "p.json").read_text())
    assert len(saved["records"]) == 16 and saved["rows"][0]["effect"]["detected"] is True


def test_lm_probes_without_a_rewriter_are_refused_before_any_work(tmp_path) -> None:
    args = _bench(tmp_path)
    result = CliRunner().invoke(
        app, [*args, "--backend", "openai:stub", "--base-url", "http://127.0.0.1:9", "--probes", "sentiment"]
    )
    assert result.exit_code == 2
    assert (
        "error: probes ['sentiment'] rewrite the judged text with an LM; expected a rewriter backend"
    ) in result.stderr


def test_an_unknown_probe_and_a_bad_side_are_one_line_errors(tmp_path) -> None:
    args = _bench(tmp_path)
    bad = CliRunner().invoke(app, [*args, "--probes", "flattery"])
    assert bad.exit_code == 2 and "unknown probe 'flattery'" in bad.stderr
    side = CliRunner().invoke(app, [*args, "--side", "c"])
    assert (
        side.exit_code == 2
        and ("The '--side' parameter of mitigate probe must be one of 'a', 'b'") in side.stderr
    )


def test_compare_with_probes_adds_a_bias_probes_table_per_pipeline_entry(tmp_path, monkeypatch) -> None:
    monkeypatch.setenv("MITIGATE_CACHE_DIR", str(tmp_path / "cache"))
    args = _bench(tmp_path)
    compare_args = [
        "compare",
        *args[1:-2],
        "--n-boot",
        "50",
        "-p",
        "baseline",
        "--out",
        str(tmp_path / "cmp"),
        "--probes",
        "authority",
    ]
    with StubOpenAIServer(latency=0.0, reply=falls_for_authority) as server:
        result = CliRunner().invoke(
            app, [*compare_args, "--backend", "openai:stub", "--base-url", server.base_url]
        )
        assert server.request_count == 8 * 3  # the entry's judgments are reused: rerun and one probe added
    assert result.exit_code == 0, result.output
    report = (tmp_path / "cmp" / "report.md").read_text()
    assert "## Bias probes" in report and "| authority | up | 8 | 0.00" in report
    assert (tmp_path / "cmp" / "probes" / "baseline.jsonl").is_file()


def test_compare_probes_without_pipelines_or_with_a_lone_rewriter_are_refused(tmp_path) -> None:
    args = _bench(tmp_path)
    base = ["compare", *args[1:-2], "--out", str(tmp_path / "cmp")]
    lone = CliRunner().invoke(app, [*base, "-p", "baseline", "--rewriter", "fake"])
    assert lone.exit_code == 2 and "--rewriter applies with --probes" in lone.stderr
    released = CliRunner().invoke(app, [*base, "--released", "chatgpt-rts", "--probes", "all"])
    assert released.exit_code == 2 and "expected at least one --pipeline" in released.stderr


def test_compare_probe_tolerance_counts_small_score_changes_as_unchanged(tmp_path, monkeypatch) -> None:
    monkeypatch.setenv("MITIGATE_CACHE_DIR", str(tmp_path / "cache"))
    args = _bench(tmp_path)
    compare_args = [
        "compare",
        *args[1:-2],
        "--n-boot",
        "50",
        "-p",
        "baseline",
        "--out",
        str(tmp_path / "cmp"),
        "--probes",
        "authority",
        "--probe-tolerance",
        "2",
    ]
    with StubOpenAIServer(latency=0.0, reply=falls_for_authority) as server:  # authority moves 3 -> 5
        result = CliRunner().invoke(
            app, [*compare_args, "--backend", "openai:stub", "--base-url", server.base_url]
        )
    assert result.exit_code == 0, result.output
    report = (tmp_path / "cmp" / "report.md").read_text()
    assert "Score changes up to 2 count as unchanged." in report
    assert "| authority | up | 8 | 1.00" in report and "not moved above noise" in report


def test_compare_probe_tolerance_out_of_range_or_without_probes_is_refused(tmp_path) -> None:
    args = _bench(tmp_path)
    base = ["compare", *args[1:-2], "--out", str(tmp_path / "cmp"), "-p", "baseline"]
    negative = CliRunner().invoke(app, [*base, "--probes", "authority", "--probe-tolerance", "-1"])
    assert negative.exit_code == 2
    assert "The '--probe-tolerance' parameter of mitigate compare must be" in negative.stderr
    alone = CliRunner().invoke(app, [*base, "--probe-tolerance", "0.5"])
    assert alone.exit_code == 2 and "--probe-tolerance applies with --probes" in alone.stderr
