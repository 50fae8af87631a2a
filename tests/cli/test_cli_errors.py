"""Every CLI error is one line and a non-zero exit; runs that cannot succeed stop early and say why."""

from __future__ import annotations

import json
import os
import re
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest
from typer.testing import CliRunner

from mitigate.cli import EXIT_FAILED, EXIT_REFUSED, app
from mitigate.errors import ConfigError
from mitigate.testing import StubOpenAIServer
from tests.support.bad_inputs import BAD_INPUTS, BadInput, expand, make_fixtures

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def fixtures(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return make_fixtures(tmp_path_factory.mktemp("bad-inputs"))


@pytest.fixture(scope="module")
def never_called():
    """A server every case could reach, but none may: each bad input is refused before the first call."""
    with StubOpenAIServer(latency=0.0, fail_first=10**9, fail_status=500) as server:
        yield server


@pytest.fixture(autouse=True)
def _no_ambient_keys(monkeypatch):
    for var in ("OPENAI_API_KEY", "OPENAI_BASE_URL", "ANTHROPIC_API_KEY", "MITIGATE_DEBUG"):
        monkeypatch.delenv(var, raising=False)


def test_the_table_holds_at_least_forty_distinct_bad_inputs():
    assert len(BAD_INPUTS) >= 40
    assert len({c.name for c in BAD_INPUTS}) == len({c.args for c in BAD_INPUTS}) == len(BAD_INPUTS)


@pytest.mark.parametrize("case", BAD_INPUTS, ids=[c.name for c in BAD_INPUTS])
def test_bad_input_is_one_error_line_and_a_non_zero_exit(case: BadInput, fixtures, never_called):
    before = never_called.request_count
    result = CliRunner().invoke(app, expand(case, fixtures, never_called.base_url))
    lines = result.stderr.splitlines()
    assert result.exit_code != 0, result.output
    assert len(lines) == 1 and lines[0].startswith("error: "), result.stderr
    assert case.expect.lower() in lines[0].lower()
    assert "Traceback" not in result.output
    assert result.exception is None or isinstance(result.exception, SystemExit)
    assert never_called.request_count == before  # refused before any LM call


def test_converting_an_inspect_log_without_inspect_ai_names_the_extra_to_install(fixtures, monkeypatch):
    monkeypatch.setitem(sys.modules, "inspect_ai", None)  # as if not installed: importing it fails
    monkeypatch.setitem(sys.modules, "inspect_ai.log", None)
    log = fixtures / "bench.jsonl"
    result = CliRunner().invoke(app, ["data", "convert", str(log), "--from", "inspect", "--out", "x.jsonl"])
    lines = result.stderr.splitlines()
    assert result.exit_code == EXIT_REFUSED and len(lines) == 1
    assert "needs the inspect-ai package" in lines[0] and "pip install 'mitigate[inspect]'" in lines[0]


def test_a_jsonl_file_opening_with_a_byte_order_mark_is_read(fixtures, tmp_path):
    bom = tmp_path / "bom.jsonl"
    bom.write_bytes(b"\xef\xbb\xbf" + (fixtures / "bench.jsonl").read_bytes())
    result = CliRunner().invoke(
        app,
        [
            "judge",
            "-b",
            f"jsonl:{bom}",
            "-c",
            "fluency",
            "--prompt",
            str(fixtures / "prompt.txt"),
            "--backend",
            "openai:m",
            "--dry-run",
            "-n",
            "0",
        ],
    )
    assert result.exit_code == 0, result.output
    assert "for item 'x0'" in result.output and "Summary 0." in result.output


def test_debug_shows_the_exception_instead_of_one_line(fixtures, never_called):
    case = next(c for c in BAD_INPUTS if c.name == "unknown reducer")
    for args in (
        ["--debug", *expand(case, fixtures, never_called.base_url)],
        [*expand(case, fixtures, never_called.base_url), "--debug"],
    ):
        result = CliRunner().invoke(app, args)
        assert isinstance(result.exception, ConfigError) and "'--reducer'" in str(result.exception)
        assert "error:" not in result.stderr


def _bench(tmp_path: Path, n: int = 30) -> list[str]:
    bench = tmp_path / "bench.jsonl"
    bench.write_text(
        "".join(
            json.dumps(
                {"id": f"x{i}", "inputs": {"source": f"A{i}"}, "output": f"S{i}", "human": {"fluency": 3}}
            )
            + "\n"
            for i in range(n)
        )
    )
    prompt = tmp_path / "prompt.txt"
    prompt.write_text("Rate 1-5.\nArticle: {{source}}\nSummary: {{summary}}\nScore:")
    return [
        "judge",
        "-b",
        f"jsonl:{bench}",
        "-c",
        "fluency",
        "--prompt",
        str(prompt),
        "-n",
        "0",
        "--no-progress",
        "--concurrency",
        "8",
        "--run-dir",
        str(tmp_path / "run"),
    ]


@pytest.mark.parametrize(
    ("kind", "status"),
    [
        ("openai", 401),
        ("openai", 403),
        ("openai", 400),
        ("openai", 404),
        ("anthropic", 401),
        ("anthropic", 400),
    ],
)
def test_permanent_http_error_stops_within_five_requests_with_one_line(kind, status, tmp_path, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-test")
    with StubOpenAIServer(latency=0.0, fail_first=10**9, fail_status=status) as server:
        url = server.base_url if kind == "openai" else server.url
        result = CliRunner().invoke(app, [*_bench(tmp_path), "--backend", f"{kind}:m", "--base-url", url])
        requests = server.request_count
    assert result.exit_code == EXIT_FAILED
    assert requests <= 5
    errors = [ln for ln in result.stderr.splitlines() if ln.startswith("error:")]
    assert len(errors) == 1 and f"HTTP {status}" in errors[0] and "run stopped" in errors[0]
    assert (tmp_path / "run" / "journal.jsonl").is_file()


def test_run_whose_items_all_failed_exits_non_zero(tmp_path, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    with StubOpenAIServer(latency=0.0, fail_first=10**9, fail_status=401) as server:
        result = CliRunner().invoke(
            app, [*_bench(tmp_path, n=2), "--backend", "openai:m", "--base-url", server.base_url]
        )
    assert result.exit_code == EXIT_FAILED
    assert result.stderr.splitlines()[-1].startswith("error: all 2 items failed; the first: LMCallError")
    assert json.loads((tmp_path / "run" / "results.json").read_text())["summary"]["errors"] == 2


def test_unreachable_server_stops_the_run_in_seconds(tmp_path):
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]  # nothing listens here once the socket is closed
    start = time.perf_counter()
    result = CliRunner().invoke(
        app, [*_bench(tmp_path), "--backend", "openai:m", "--base-url", f"http://127.0.0.1:{port}/v1"]
    )
    assert result.exit_code == EXIT_FAILED
    assert "could not connect on any of 3 attempts" in result.stderr.splitlines()[-1]
    assert time.perf_counter() - start < 10


def test_retry_after_longer_than_the_patience_says_so(tmp_path):
    with StubOpenAIServer(latency=0.0, fail_first=10**9, fail_status=429, retry_after=600) as server:
        result = CliRunner().invoke(
            app,
            [*_bench(tmp_path), "--backend", "openai:m", "--base-url", server.base_url, "--patience", "30"],
        )
        assert server.request_count <= 3  # the first wave only
    assert result.exit_code == EXIT_FAILED
    assert (
        "asked to wait 600 s before retrying (Retry-After), longer than this run's patience of 30 s"
        in (result.stderr.splitlines()[-1])
    )


HOLD = (
    "import sys, time\nfrom mitigate.run._journal import RunLock\n"
    "with RunLock.for_journal(sys.argv[1]):\n    print('held', flush=True)\n    time.sleep(30)\n"
)


def test_second_process_on_a_run_dir_in_use_is_refused(tmp_path):
    # the lock is re-entrant within one process, so it is held by a child process here
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLD, str(tmp_path / "run" / "journal.jsonl")],
        stdout=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONPATH": str(REPO)},
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
        with StubOpenAIServer(latency=0.0) as server:
            result = CliRunner().invoke(
                app, [*_bench(tmp_path), "--backend", "openai:m", "--base-url", server.base_url]
            )
            assert server.request_count == 0
    finally:
        holder.kill()
        holder.wait()
    assert result.exit_code == EXIT_REFUSED
    assert result.stderr.splitlines() == [
        f"error: {tmp_path / 'run'} is in use by another mitigate process (pid {holder.pid}); expected one "
        "process per run folder: wait for it to finish, or use another folder"
    ]


def test_damaged_cache_is_one_warning_line_and_the_run_succeeds(tmp_path, monkeypatch):
    cache = tmp_path / "cache"
    cache.mkdir()
    (cache / "lm_cache.sqlite").write_bytes(b"\x00garbage" * 500)
    monkeypatch.setenv("MITIGATE_CACHE_DIR", str(cache))
    with StubOpenAIServer(latency=0.0) as server:
        result = CliRunner().invoke(
            app, [*_bench(tmp_path, n=3), "--backend", "openai:m", "--base-url", server.base_url, "--cache"]
        )
        assert server.request_count == 3
    assert result.exit_code == 0, result.output
    warnings = [ln for ln in result.stderr.splitlines() if ln.startswith("warning:")]
    assert len(warnings) == 1 and "lm_cache.sqlite is damaged" in warnings[0]


def test_results_json_is_replaced_atomically(tmp_path):
    args = _bench(tmp_path, n=3)
    with StubOpenAIServer(latency=0.0) as server:
        first = CliRunner().invoke(app, [*args, "--backend", "openai:m", "--base-url", server.base_url])
        inode = (tmp_path / "run" / "results.json").stat().st_ino
        second = CliRunner().invoke(app, [*args, "--backend", "openai:m", "--base-url", server.base_url])
    assert first.exit_code == second.exit_code == 0
    assert (tmp_path / "run" / "results.json").stat().st_ino != inode
    assert sorted(p.name for p in (tmp_path / "run").iterdir()) == [
        "journal.jsonl",
        "journal.jsonl.lock",
        "results.json",
        "results.sqlite",
    ]


def test_compare_whose_pipeline_failed_on_every_item_exits_non_zero(tmp_path, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    judge_args = _bench(tmp_path, n=2)
    bench, prompt = judge_args[2].removeprefix("jsonl:"), judge_args[6]
    with StubOpenAIServer(latency=0.0, fail_first=10**9, fail_status=401) as server:
        result = CliRunner().invoke(
            app,
            [
                "compare",
                "-b",
                f"jsonl:{bench}",
                "-c",
                "fluency",
                "--prompt",
                prompt,
                "-p",
                "baseline",
                "--backend",
                "openai:m",
                "--base-url",
                server.base_url,
                "--out",
                str(tmp_path / "cmp"),
                "--no-progress",
                "--n-boot",
                "0",
            ],
        )
    assert result.exit_code == EXIT_FAILED, result.output
    assert result.stderr.splitlines()[-1].startswith(
        "error: every item of 'baseline' failed; the first: LMCallError"
    )
    assert (tmp_path / "cmp" / "report.md").is_file()  # the report of what happened is still written


def test_a_pasted_value_thousands_of_characters_long_is_echoed_by_its_ends_and_its_length(
    tmp_path: Path,
) -> None:
    template = tmp_path / "judge.txt"
    template.write_text('Rate the reply from 1 to 5.\n\n{{output}}\n\nAnswer "Score: N".\n')
    digits = "7" * 5000
    result = CliRunner().invoke(
        app, ["prompts", "render", str(template), "--pipeline", f"granularity(scale={digits})"]
    )
    assert result.exit_code == EXIT_REFUSED
    lines = result.output.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ")
    assert digits not in lines[0] and len(lines[0]) < 400
    assert re.search(r"7{20}\.\.\.\(5,00\d characters\)\.\.\.7{19}", lines[0])  # quotes count
