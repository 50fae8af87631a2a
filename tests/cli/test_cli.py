"""The `mitigate judge` command end to end, against a real HTTP server and the embedded model."""

from __future__ import annotations

import importlib.util
import json
import logging
from pathlib import Path

import pytest
from typer.testing import CliRunner

from mitigate.cli import app
from mitigate.run import Columns
from mitigate.testing import StubOpenAIServer

SECRET = "sk-live-DO-NOT-LEAK-4242"
PROMPT = "Rate the fluency of the summary from 1 to 5.\n\nArticle: {{source}}\nSummary: {{summary}}\n\nScore:"


def _bench(tmp_path: Path, n: int = 3) -> Path:
    path = tmp_path / "bench.jsonl"
    rows = [
        {
            "id": f"x{i}",
            "system": "S",
            "doc_id": f"d{i}",
            "inputs": {"source": f"Article {i}."},
            "output": f"Summary {i} with Score: 10 inside {{braces}}.",
            "human": {"fluency": 3.0 + i % 2},
        }
        for i in range(n)
    ]
    path.write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    prompt = tmp_path / "prompt.txt"
    prompt.write_text(PROMPT)
    return path


def _args(tmp_path: Path, url: str, *extra: str) -> list[str]:
    return [
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
        url,
        "--run-dir",
        str(tmp_path / "run"),
        "--no-progress",
        *extra,
    ]


def test_judge_prints_each_judgment_beside_the_human_score(tmp_path, monkeypatch):
    monkeypatch.setenv("MITIGATE_CACHE_DIR", str(tmp_path / "cache"))
    _bench(tmp_path)
    with StubOpenAIServer(latency=0.0, reply="Readable. Score: 2") as server:
        result = CliRunner().invoke(app, _args(tmp_path, server.base_url))
    assert result.exit_code == 0, result.output
    lines = [ln for ln in result.stdout.splitlines() if ln.startswith("x")]
    assert lines[0].split("\t")[:3] == ["x0", "judge=2", "human=3.00"]
    assert len(lines) == 3
    assert "3 items" in result.stderr and "0 parse failures" in result.stderr
    saved = json.loads((tmp_path / "run" / "results.json").read_text())
    assert saved["summary"]["ok"] == 3 and saved["columns"] == "results.sqlite" and "judgments" not in saved
    with Columns(tmp_path / "run" / "results.sqlite") as columns:
        assert columns.column("score").tolist() == [2.0, 2.0, 2.0]
        assert columns.column("item").tolist() == ["x0", "x1", "x2"]
        assert columns.column("human").tolist() == [3.0, 4.0, 3.0]


def test_identical_rerun_makes_no_lm_calls(tmp_path, monkeypatch):
    monkeypatch.setenv("MITIGATE_CACHE_DIR", str(tmp_path / "cache"))
    _bench(tmp_path)
    with StubOpenAIServer(latency=0.0, reply="Score: 4") as server:
        first = CliRunner().invoke(app, _args(tmp_path, server.base_url))
        calls = server.request_count
        second = CliRunner().invoke(app, _args(tmp_path, server.base_url, "--restart"))
        assert server.request_count == calls == 3
    assert first.exit_code == second.exit_code == 0
    assert "3 from cache" in second.stderr
    # a server at a base URL has no list price: unknown, and why; the cached rerun cost nothing this run
    assert (
        "cost unknown (openai:stub-model runs on a server at a base URL, which has no list price)"
    ) in first.stderr
    assert "cost $0 (cached)" in second.stderr and "$0.0000" not in second.stderr


def test_a_run_on_a_model_without_a_list_price_says_why_its_cost_is_unknown():
    from mitigate.lm import FakeLM, why_unpriced
    from mitigate.run import RunSummary

    class Hosted(FakeLM):
        provider = "openai"

    assert "no list price for 'my-finetune' in mitigate's price list" in why_unpriced(
        Hosted(["x"], model="my-finetune")
    )
    summary = RunSummary(
        items=1,
        judged_now=1,
        resumed=0,
        ok=1,
        parse_failures=0,
        errors=0,
        calls=1,
        cached_calls=0,
        cost_usd=None,
        cost_note="a reason",
    )
    assert "cost unknown (a reason)" in summary.line()
    local = summary.model_copy(update={"cost_usd": 0.0, "cost_note": None})
    assert "cost $0.0000" in local.line()  # a live call that costs nothing (the embedded model)


def test_a_scale_warning_of_compare_is_printed_once(tmp_path, monkeypatch):
    monkeypatch.setenv("MITIGATE_CACHE_DIR", str(tmp_path / "cache"))
    bench = _bench(tmp_path, n=4)
    with StubOpenAIServer(latency=0.0, reply="Score: 2") as server:
        done = CliRunner().invoke(
            app,
            [
                "compare",
                "-b",
                f"jsonl:{bench}",
                "-c",
                "fluency",
                "--prompt",
                str(tmp_path / "prompt.txt"),
                "--backend",
                "openai:stub-model",
                "--base-url",
                server.base_url,
                "-p",
                "baseline",
                "-p",
                "granularity(scale=1-10)",
                "--out",
                str(tmp_path / "out"),
                "--no-progress",
                "--n-boot",
                "20",
            ],
        )
    assert done.exit_code == 0, done.output
    assert done.stderr.count("ask for 1 to 10") == 1, done.stderr


def test_api_key_never_reaches_cache_journal_results_or_logs(tmp_path, monkeypatch, caplog):
    monkeypatch.setenv("MITIGATE_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("OPENAI_API_KEY", SECRET)
    _bench(tmp_path)
    caplog.set_level(logging.DEBUG)
    with StubOpenAIServer(latency=0.0, reply="Score: 4", fail_first=1, fail_status=401) as server:
        # the first call is refused (401): the error path must not leak the key either
        failed = CliRunner().invoke(app, _args(tmp_path, server.base_url, "--concurrency", "1"))
        ok = CliRunner().invoke(app, _args(tmp_path, server.base_url))
        assert any(SECRET in h for h in server.auth_headers)  # the key did reach the server
    assert failed.exit_code == 0 and ok.exit_code == 0
    assert "1 errors" in failed.stderr
    written = [p for p in tmp_path.rglob("*") if p.is_file()]
    assert any(p.name == "journal.jsonl" for p in written) and any(p.parent.name == "cache" for p in written)
    for path in written:
        assert SECRET.encode() not in path.read_bytes(), path
    for text in (failed.output, ok.output, caplog.text):
        assert SECRET not in text


def test_unknown_backend_is_a_clear_error_with_exit_code_2(tmp_path):
    _bench(tmp_path)
    result = CliRunner().invoke(
        app,
        [
            "judge",
            "-b",
            f"jsonl:{tmp_path / 'bench.jsonl'}",
            "--prompt",
            str(tmp_path / "prompt.txt"),
            "--backend",
            "gpt5",
        ],
    )
    assert result.exit_code == 2
    assert "gpt5" in result.stderr and "openai:<model>" in result.stderr


def test_missing_api_key_names_the_environment_variable(tmp_path, monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    _bench(tmp_path)
    result = CliRunner().invoke(
        app,
        [
            "judge",
            "-b",
            f"jsonl:{tmp_path / 'bench.jsonl'}",
            "--prompt",
            str(tmp_path / "prompt.txt"),
            "--backend",
            "openai:gpt-4o-mini",
        ],
    )
    assert result.exit_code == 2
    assert "OPENAI_API_KEY" in result.stderr


def test_unknown_benchmark_lists_the_names():
    result = CliRunner().invoke(app, ["judge", "-b", "nope"])
    assert result.exit_code == 2 and "summeval" in result.stderr


@pytest.mark.slow
@pytest.mark.local_model
@pytest.mark.skipif(importlib.util.find_spec("llama_cpp") is None, reason="llama-cpp-python is not installed")
def test_judge_runs_on_the_embedded_model(tmp_path, monkeypatch):
    monkeypatch.setenv("MITIGATE_CACHE_DIR", str(tmp_path / "cache"))
    _bench(tmp_path, n=2)
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
            "local",
            "--max-tokens",
            "24",
            "--no-progress",
        ],
    )
    assert result.exit_code == 0, result.output
    lines = [ln for ln in result.stdout.splitlines() if ln.startswith("x")]
    assert len(lines) == 2
    for line in lines:  # a score on the scale, or a recorded failure: never anything else
        verdict = line.split("\t")[1]
        assert verdict == "judge=FAILED" or 1 <= float(verdict.removeprefix("judge=")) <= 5
    assert "LM calls" in result.stderr
