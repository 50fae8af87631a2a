"""The CLI's large-run options end to end against the stub: --batch, --batch-retries and --transport."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from mitigate.cli import app
from mitigate.run import Columns
from mitigate.testing import StubOpenAIServer

PROMPT = "Rate the fluency of the summary from 1 to 5.\n\nArticle: {{source}}\nSummary: {{summary}}\n\nScore:"


def _bench(tmp_path: Path, n: int = 6) -> None:
    rows = [
        {
            "id": f"x{i}",
            "system": f"S{i % 3}",
            "doc_id": f"d{i // 3}",
            "inputs": {"source": f"Article {i}."},
            "output": f"Summary {i}.",
            "human": {"fluency": 1.0 + i % 5},
        }
        for i in range(n)
    ]
    (tmp_path / "bench.jsonl").write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    (tmp_path / "prompt.txt").write_text(PROMPT)


def _judge(tmp_path: Path, backend: str, url: str, *extra: str) -> list[str]:
    return [
        "judge",
        "-b",
        f"jsonl:{tmp_path / 'bench.jsonl'}",
        "-c",
        "fluency",
        "--prompt",
        str(tmp_path / "prompt.txt"),
        "--backend",
        backend,
        "--base-url",
        url,
        "--no-progress",
        *extra,
    ]


@pytest.mark.slow
def test_judge_batch_runs_through_the_batch_api_and_a_rerun_resumes(tmp_path, monkeypatch):
    monkeypatch.setenv("MITIGATE_CACHE_DIR", str(tmp_path / "cache"))
    _bench(tmp_path)
    with StubOpenAIServer(latency=0.0, batch_latency=0.001, reply="Score: 3") as server:
        args = _judge(
            tmp_path,
            "openai:stub-model",
            server.base_url,
            "--run-dir",
            str(tmp_path / "run"),
            "--batch",
            "--limit",
            "0",
        )
        first = CliRunner().invoke(app, args)
        assert first.exit_code == 0, first.output
        assert [len(b["custom_ids"]) for b in server.batch.created] == [6]
        assert not any(p.endswith("/chat/completions") for p in server.paths)
        assert "batch: 1 batches submitted (6 requests)" in first.stderr and "6 answers" in first.stderr
        again = CliRunner().invoke(app, args)
        assert again.exit_code == 0 and len(server.batch.created) == 1
        assert "6 resumed" in again.stderr
    with Columns(tmp_path / "run" / "results.sqlite") as columns:
        assert columns.column("score").tolist() == [3.0] * 6
    assert (tmp_path / "run" / "batches" / "batches.jsonl").exists()


def test_batch_without_a_run_dir_is_a_clear_error(tmp_path):
    _bench(tmp_path)
    result = CliRunner().invoke(
        app, _judge(tmp_path, "openai:stub-model", "http://127.0.0.1:9/v1", "--batch")
    )
    assert result.exit_code == 2
    assert "--batch needs --run-dir" in result.stderr


def test_batch_with_a_local_backend_is_refused_before_any_call(tmp_path):
    _bench(tmp_path)
    (tmp_path / "none.jsonl").write_text("")
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
            "replay:" + str(tmp_path / "none.jsonl"),
            "--run-dir",
            str(tmp_path / "run"),
            "--batch",
            "--no-progress",
        ],
    )
    assert result.exit_code == 2
    assert "batch mode needs an 'openai:<model>' or 'anthropic:<model>' backend" in result.stderr


def test_the_default_and_direct_transports_reach_the_server_without_the_sdk_and_sdk_through_it(
    tmp_path, monkeypatch
):
    monkeypatch.setenv("MITIGATE_CACHE_DIR", str(tmp_path / "cache"))
    _bench(tmp_path, n=3)
    with StubOpenAIServer(latency=0.0, reply="Score: 4") as server:
        direct = CliRunner().invoke(
            app, _judge(tmp_path, "openai:stub-model", server.base_url, "--transport", "direct", "--no-cache")
        )
        default = CliRunner().invoke(
            app, _judge(tmp_path, "openai:stub-model", server.base_url, "--no-cache")
        )
        sdk = CliRunner().invoke(
            app, _judge(tmp_path, "openai:stub-model", server.base_url, "--transport", "sdk", "--no-cache")
        )
        agents = server.user_agents
    assert direct.exit_code == 0 and default.exit_code == 0 and sdk.exit_code == 0, direct.output + sdk.output
    assert "judge=4" in direct.stdout and "judge=4" in default.stdout and "judge=4" in sdk.stdout
    assert len(agents) == 9
    # plain aiohttp (the default is the direct client)
    assert all("OpenAI/Python" not in a for a in agents[:6])
    assert all("OpenAI/Python" in a for a in agents[6:])  # the SDK names itself


def test_transport_on_a_non_openai_backend_is_refused(tmp_path):
    _bench(tmp_path)
    result = CliRunner().invoke(
        app, _judge(tmp_path, "anthropic:claude-x", "http://127.0.0.1:9", "--transport", "direct")
    )
    assert result.exit_code == 2
    assert "--transport applies to openai:<model> backends" in result.stderr


@pytest.mark.slow
def test_compare_batch_puts_every_pipeline_in_one_batch(tmp_path, monkeypatch):
    monkeypatch.setenv("MITIGATE_CACHE_DIR", str(tmp_path / "cache"))
    _bench(tmp_path)
    with StubOpenAIServer(latency=0.0, batch_latency=0.001, reply="Score: 3") as server:
        result = CliRunner().invoke(
            app,
            [
                "compare",
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
                "--pipeline",
                "baseline",
                "--pipeline",
                "sampling(temperature=0.5)",
                "--out",
                str(tmp_path / "out"),
                "--no-progress",
                "--n-boot",
                "0",
                "--batch",
            ],
        )
        created = server.batch.created
    assert result.exit_code == 0, result.output
    assert [len(b["custom_ids"]) for b in created] == [12]
    assert "12 answers" in result.stderr


def test_guided_sends_the_answer_constraint_in_the_servers_own_field(tmp_path, monkeypatch):
    monkeypatch.setenv("MITIGATE_CACHE_DIR", str(tmp_path / "cache"))
    _bench(tmp_path, n=2)
    with StubOpenAIServer(latency=0.0, reply="Score: 4") as server:
        vllm = CliRunner().invoke(
            app,
            _judge(
                tmp_path,
                "openai:stub-model",
                server.base_url,
                "--guided",
                "vllm",
                "--constrain",
                "format",
                "--no-cache",
            ),
        )
        sglang = CliRunner().invoke(
            app,
            _judge(
                tmp_path,
                "openai:stub-model",
                server.base_url,
                "--guided",
                "sglang",
                "--constrain",
                "format",
                "--no-cache",
            ),
        )
        bodies = server.bodies
    assert vllm.exit_code == 0 and sglang.exit_code == 0, vllm.output + sglang.output
    assert "judge=4" in vllm.stdout
    first, last = bodies[0], bodies[-1]
    # the prompt ends with the stub "Score:": the guided regex is the value that completes it, in each
    # server's field
    assert first["structured_outputs"]["regex"] == "[ ]?(?:1|2|3|4|5)" and "regex" not in first
    assert last["regex"] == "[ ]?(?:1|2|3|4|5)" and "structured_outputs" not in last


def test_a_named_server_without_guided_decoding_is_told_about_guided(tmp_path, monkeypatch):
    monkeypatch.setenv("MITIGATE_CACHE_DIR", str(tmp_path / "cache"))
    _bench(tmp_path, n=2)
    with StubOpenAIServer(latency=0.0, reply="Score: 4") as server:
        result = CliRunner().invoke(
            app, _judge(tmp_path, "openai:stub-model", server.base_url, "--constrain", "format", "--no-cache")
        )
    assert result.exit_code != 0
    assert "--guided" in result.stderr
