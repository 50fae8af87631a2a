"""Bounded in every dimension: every misbehaving server stops a run within one deadline plus the
breaker's three attempts, with its real cause; caps refuse before sending; writes respect what a path is."""

from __future__ import annotations

import asyncio
import importlib.util
import json
import os
import stat
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from mitigate import Item, JudgePrompt, PromptJudge
from mitigate.cli import EXIT_FAILED, app
from mitigate.errors import ConfigError, DataError, RunStoppedError
from mitigate.lm import AnthropicLM, Limits, LMRequest, Message, OpenAILM, RetryPolicy
from mitigate.lm._http import check_base_url
from mitigate.lm._retry import RetryingLM
from mitigate.paths import one_line, path_kind, write_output
from mitigate.run import run
from mitigate.testing import StubOpenAIServer
from tests.support.fault_server import KEY, FaultServer

REPO = Path(__file__).resolve().parent.parent
DEADLINE = 0.5
POLICY = RetryPolicy(base_delay=0.01, max_delay=0.05, jitter=False)

# (backend, server mode, transport, fragment of the stop cause, most requests the run may make)
CASES = [
    ("openai", "hang", "sdk", "hung or trickling", 3),
    ("openai", "trickle", "sdk", "hung or trickling", 3),
    ("openai", "trickle", "direct", "hung or trickling", 3),
    ("openai", "hang", "direct", "hung or trickling", 3),
    ("anthropic", "hang", "auto", "hung or trickling", 3),
    ("anthropic", "trickle", "auto", "hung or trickling", 3),
    ("openai", "close", "sdk", "closed the connection", 9),
    ("openai", "close", "direct", "closed the connection", 9),
    ("openai", "close", "httpx", "closed the connection", 9),
    ("anthropic", "close", "auto", "closed the connection", 9),
    ("openai", "huge", "sdk", "more than 100,000 bytes", 3),
    ("openai", "huge", "direct", "more than 100,000 bytes", 3),
    ("anthropic", "huge", "auto", "more than 100,000 bytes", 3),
    ("openai", "truncated", "sdk", "truncated or invalid JSON", 3),
    ("openai", "truncated", "direct", "truncated or invalid JSON", 3),
    ("openai", "html", "sdk", "HTML", 3),
    ("openai", "html", "direct", "HTML", 3),
    ("openai", "empty", "sdk", "an empty body", 3),
    ("openai", "empty", "direct", "an empty body", 3),
    ("openai", "content_null", "sdk", "content: null", 3),
    ("openai", "content_null", "direct", "content: null", 3),
    ("openai", "no_choices", "sdk", "no choices", 3),
    ("openai", "no_choices", "direct", "no choices", 3),
    ("openai", "deep", "sdk", "JSON nested too deep", 3),
    ("openai", "deep", "direct", "JSON nested too deep", 3),
    ("anthropic", "anthropic_no_content", "auto", "without content", 3),
    ("anthropic", "html", "auto", "HTML", 3),
    ("anthropic", "truncated", "auto", "truncated or invalid JSON", 3),
]


def _lm(kind: str, url: str, transport: str) -> Any:
    limits = Limits(deadline=DEADLINE, max_response_bytes=100_000)
    if kind == "openai":
        return OpenAILM(
            "m", base_url=url + "/v1", api_key=KEY, timeout=30, limits=limits, transport=transport
        )
    return AnthropicLM("m", base_url=url, api_key=KEY, timeout=30, limits=limits)


def _items(n: int, text: str = "a text") -> list[Item]:
    return [Item(id=f"it{i}", output=f"{text} {i}") for i in range(n)]


def _judge(lm: Any) -> PromptJudge:
    return PromptJudge(JudgePrompt.from_template("Rate the text from 1 to 5.\nText: {{output}}\nScore:"), lm)


@pytest.mark.parametrize(
    ("kind", "mode", "transport", "cause", "most"), CASES, ids=[f"{k}-{m}-{t}" for k, m, t, _, _ in CASES]
)
def test_a_misbehaving_server_stops_the_run_with_its_cause_within_one_deadline(
    kind, mode, transport, cause, most, tmp_path
):
    async def go() -> tuple[RunStoppedError, float, int]:
        with FaultServer(mode) as server:
            lm = RetryingLM(_lm(kind, server.url, transport), POLICY)
            start = time.monotonic()
            try:
                with pytest.raises(RunStoppedError) as info:
                    await run(
                        _judge(lm),
                        _items(30),
                        concurrency=8,
                        progress=False,
                        journal=tmp_path / "journal.jsonl",
                    )
            finally:
                await lm.aclose()
            return info.value, time.monotonic() - start, server.requests

    error, seconds, requests = asyncio.run(go())
    assert cause in str(error), str(error)
    assert "does not honour n" not in str(error)
    assert "\n" not in str(error)
    assert 1 <= requests <= most, requests
    assert seconds < DEADLINE + 3 * 0.5 + 1.0, seconds  # one deadline plus three quick attempts, with slack
    journal = (tmp_path / "journal.jsonl").read_text(encoding="utf-8").splitlines()
    recorded = [json.loads(line) for line in journal[1:]]
    # each failure is a recorded judgment, never a score
    assert recorded and all(r["error"] for r in recorded)
    assert KEY not in "\n".join(journal)


@pytest.mark.parametrize(("kind", "mode"), [("openai", "echo_key"), ("anthropic", "anthropic_echo_key")])
def test_a_key_echoed_in_an_answer_is_scrubbed_before_it_is_stored(kind, mode):
    async def go() -> str:
        with FaultServer(mode) as server:
            lm = _lm(kind, server.url, "auto")
            try:
                response = await lm.complete(LMRequest(messages=(Message(role="user", content="hi"),)))
            finally:
                await lm.aclose()
        return response.choices[0].text

    text = asyncio.run(go())
    assert KEY not in text and "***" in text and text.startswith("Score: 4")


def test_prompt_size_and_samples_are_refused_before_sending():
    lm = OpenAILM("m", base_url="http://127.0.0.1:9/v1", limits=Limits(max_prompt_chars=100, max_samples=4))
    with pytest.raises(DataError, match="max_prompt_chars=100"):
        lm.check(LMRequest(messages=(Message(role="user", content="x" * 101),)))
    with pytest.raises(ConfigError, match="max_samples=4"):
        lm.check(LMRequest(messages=(Message(role="user", content="x"),), n=5, temperature=1.0))


def test_credentials_in_a_base_url_are_refused_in_one_line():
    with pytest.raises(ConfigError, match="without credentials") as info:
        check_base_url("http://user:secret@127.0.0.1:8000/v1", backend="openai:m")
    assert "secret" not in str(info.value)


def _cli_judge(tmp_path: Path, url: str, rows: list[dict[str, Any]], prompt: bytes, *extra: str) -> Any:
    bench = tmp_path / "b.jsonl"
    bench.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    (tmp_path / "p.txt").write_bytes(prompt)
    return CliRunner().invoke(
        app,
        [
            "judge",
            "-b",
            f"jsonl:{bench}",
            "-c",
            "q",
            "--prompt",
            str(tmp_path / "p.txt"),
            "--backend",
            "openai:m",
            "--base-url",
            url,
            "--no-progress",
            "--no-cache",
            *extra,
        ],
    )


def test_an_id_with_a_newline_stays_on_one_row_and_a_bom_is_not_sent(tmp_path, monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    rows = [
        {"id": "a\nb", "output": "t1", "human": {"q": 3}},
        {"id": "c\td", "output": "t2", "human": {"q": 2}},
    ]
    with StubOpenAIServer(latency=0.0) as server:
        result = _cli_judge(
            tmp_path, server.base_url, rows, "\ufeffRate 1 to 5.\n{{output}}\nScore:".encode()
        )
        bodies = server.bodies
    assert result.exit_code == 0, result.output
    assert result.stdout.splitlines() == [
        "a\\nb\tjudge=4\thuman=3.00\tScore: 4",
        "c\\td\tjudge=4\thuman=2.00\tScore: 4",
    ]
    sent = [m["content"] for b in bodies for m in b["messages"]]
    assert sent and all(not c.startswith("\ufeff") and "\ufeff" not in c for c in sent)


def test_a_run_where_every_answer_fails_to_parse_exits_non_zero_saying_what_came(tmp_path, monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    rows = [{"id": f"x{i}", "output": f"t{i}", "human": {"q": 3}} for i in range(3)]
    with StubOpenAIServer(latency=0.0, reply="I cannot rate this.") as server:
        result = _cli_judge(tmp_path, server.base_url, rows, b"Rate 1 to 5.\n{{output}}\nScore:")
    errors = [ln for ln in result.stderr.splitlines() if ln.startswith("error:")]
    assert result.exit_code == EXIT_FAILED
    assert len(errors) == 1 and "failed to parse" in errors[0] and "I cannot rate this." in errors[0]


def test_a_symlinked_output_is_followed_and_stays_a_link(tmp_path):
    target = tmp_path / "real.jsonl"
    target.write_text("old\n", encoding="utf-8")
    link = tmp_path / "link.jsonl"
    link.symlink_to(target)
    write_output(link, "new\n", "--out")
    assert link.is_symlink() and os.readlink(link) == str(target)
    assert target.read_text(encoding="utf-8") == "new\n"


def test_a_device_is_written_through_never_replaced(tmp_path):
    write_output("/dev/null", "rows\n", "--out")
    assert path_kind("/dev/null") == "a character device"
    if os.path.exists("/dev/full"):
        with pytest.raises(ConfigError, match="No space left"):
            write_output("/dev/full", "rows\n", "--out")
        assert stat.S_ISCHR(os.stat("/dev/full").st_mode)


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no FIFOs here")
def test_a_fifo_is_refused_as_output_and_as_input_without_blocking(tmp_path):
    from mitigate.paths import check_input_file

    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    with pytest.raises(ConfigError, match="is a FIFO"):
        write_output(fifo, "x", "--out")
    with pytest.raises(ConfigError, match="is a FIFO"):
        check_input_file(fifo, "--prompt")


def test_one_line_escapes_line_breaks_and_control_characters():
    assert one_line("a\nb\r\tc\x1bd") == "a\\nb\\r\\tc\\x1bd"
    assert one_line("plain é") == "plain é"


def _bench_module() -> Any:
    spec = importlib.util.spec_from_file_location(
        "bench_reliability", REPO / "benchmarks" / "bench_reliability.py"
    )
    module = importlib.util.module_from_spec(spec)
    sys.modules.setdefault("bench_reliability", module)
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize(("rate", "expected"), [(1.0, {429, 500, 502, 503}), (0.0, {200})])
def test_the_reliability_benchmarks_storm_server_answers_with_the_stubs_signature(rate, expected):
    bench = _bench_module()
    with bench.StormServer(rate, 0, latency=0.0, reply=bench.reply) as server:
        statuses = []
        for i in range(4):
            request = urllib.request.Request(
                server.base_url + "/chat/completions",
                method="POST",
                headers={"Content-Type": "application/json"},
                data=json.dumps(
                    {"model": "m", "messages": [{"role": "user", "content": f"Summary: S{i}."}]}
                ).encode(),
            )
            try:
                with urllib.request.urlopen(request, timeout=5) as resp:
                    statuses.append(resp.status)
            except urllib.error.HTTPError as exc:
                statuses.append(exc.code)
        assert set(statuses) <= expected and len(statuses) == 4
        assert server.faults + server.answered == 4
