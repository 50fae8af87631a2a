"""Batch mode of the runner against the stub's OpenAI and Anthropic batch endpoints.

Submit, poll and collect; splitting over size limits; failed and expired requests as per-item
errors and their follow-up batches; resume after a crash at every point (in-process states
and a real SIGKILL), never submitting a request twice.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import textwrap
import time
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from mitigate import Item, JudgePrompt, PromptJudge
from mitigate.errors import ConfigError
from mitigate.judge import JudgeConfig
from mitigate.lm import AnthropicLM, BatchStore, FakeLM, LMCache, OpenAILM, wrap
from mitigate.prompt import Demo
from mitigate.run import BatchConfig, BatchSession, run
from mitigate.run._batch_session import batch_api_for
from mitigate.testing import StubOpenAIServer

REPO = Path(__file__).resolve().parents[2]
TEMPLATE = "Rate the text from 1 to 5.\n\nText: {{output}}\n\nAnswer 'Score: N'."
FAST = BatchConfig(poll_interval=0.02, max_poll_interval=0.1, settle=0.02, progress=False)


def expected(text: str) -> int:
    """The stub's deterministic score for an item text."""
    return sum(map(ord, text)) % 5 + 1


def reply(body: dict[str, Any]) -> str:
    found = re.findall(r"Text: (t\d+)", json.dumps(body))
    return f"Score: {expected(found[-1])}" if found else "no text"


def items(n: int) -> list[Item]:
    return [Item(id=f"it{i}", output=f"t{i}") for i in range(n)]


def backend(provider: str, server: StubOpenAIServer) -> Any:
    if provider == "openai":
        return OpenAILM("stub-model", base_url=server.base_url)
    return AnthropicLM("claude-stub", base_url=server.url, api_key="test-key")


def judge_for(lm: Any, config: JudgeConfig | None = None) -> PromptJudge:
    return PromptJudge(JudgePrompt.from_template(TEMPLATE), lm, config)


def submissions(server: StubOpenAIServer) -> Counter[str]:
    """How many created batches each custom id was in."""
    return Counter(cid for batch in server.batch.created for cid in batch["custom_ids"])


def assert_all_right(result: Any, n: int) -> None:
    assert result.summary.ok == n and result.summary.errors == 0
    for j in result.judgments:
        assert j.scores["score"] == expected(f"t{j.item_id[2:]}")


@pytest.fixture
def server():
    with StubOpenAIServer(latency=0.0, batch_latency=0.001, reply=reply) as s:
        yield s


@pytest.mark.parametrize("provider", ["openai", "anthropic"])
async def test_batch_run_submits_polls_collects_and_fills_cache_and_journal(provider, server, tmp_path):
    cache = LMCache(tmp_path / "cache.sqlite")
    lm = wrap(backend(provider, server), cache=cache)
    journal = tmp_path / "run" / "journal.jsonl"
    result = await run(judge_for(lm), items(30), journal=journal, progress=False, batch=FAST)
    assert_all_right(result, 30)
    assert len(server.batch.created) == 1 and max(submissions(server).values()) == 1
    assert not any(p.endswith(("/chat/completions", "/v1/messages")) for p in server.paths)  # no live calls
    # the journal holds every judgment; the cache answers a plain rerun without any call
    assert len(journal.read_text().splitlines()) == 31
    count = server.request_count
    again = await run(judge_for(lm), items(30), progress=False)
    assert again.summary.cached_calls == 30 and server.request_count == count
    record = BatchStore(tmp_path / "run" / "batches")
    assert [r.collected for r in record.records.values()] == [True]
    await lm.aclose()


@pytest.mark.parametrize("provider", ["openai", "anthropic"])
async def test_batches_over_the_size_limits_are_split(provider, server, tmp_path):
    lm = wrap(backend(provider, server), cache=tmp_path / "c.sqlite")
    options = FAST.model_copy(update={"max_requests": 10})
    result = await run(judge_for(lm), items(25), journal=tmp_path / "j.jsonl", progress=False, batch=options)
    assert_all_right(result, 25)
    assert [len(b["custom_ids"]) for b in server.batch.created] == [10, 10, 5]
    by_bytes = FAST.model_copy(update={"max_bytes": 1000})  # a line is 250-350 bytes: at most 3 per batch
    result = await run(
        judge_for(lm),
        [Item(id=f"x{i}", output=f"t{i + 100}") for i in range(12)],
        journal=tmp_path / "j2.jsonl",
        progress=False,
        batch=by_bytes,
    )
    sizes = [len(b["custom_ids"]) for b in server.batch.created[3:]]
    assert result.summary.ok == 12 and sum(sizes) == 12 and len(sizes) >= 4 and max(sizes) <= 3
    assert max(submissions(server).values()) == 1
    await lm.aclose()


async def test_anthropic_samples_become_lines_and_join_into_one_answer(server, tmp_path):
    lm = wrap(backend("anthropic", server), cache=tmp_path / "c.sqlite")
    judge = judge_for(lm, JudgeConfig(n=3, temperature=0.7))
    result = await run(judge, items(4), journal=tmp_path / "j.jsonl", progress=False, batch=FAST)
    assert result.summary.ok == 4
    assert all(len(j.raw) == 3 for j in result.judgments)
    ids = server.batch.created[0]["custom_ids"]
    assert len(ids) == 12 and all(re.fullmatch(r"[0-9a-f]{60}_00[0-2]", i) for i in ids)
    await lm.aclose()


@pytest.mark.parametrize("provider", ["openai", "anthropic"])
async def test_failed_requests_are_item_errors_and_a_follow_up_batch_retries_them(provider, tmp_path):
    tries: Counter[str] = Counter()

    def flaky(_provider: str, cid: str, _body: dict[str, Any]) -> int | None:
        tries[cid] += 1
        return 500 if tries[cid] == 1 and len(tries) <= 3 else None

    with StubOpenAIServer(latency=0.0, batch_latency=0.001, reply=reply, batch_fail=flaky) as s:
        lm = wrap(backend(provider, s), cache=tmp_path / "c.sqlite")
        first = await run(judge_for(lm), items(10), journal=tmp_path / "a.jsonl", progress=False, batch=FAST)
        assert first.summary.ok == 7 and first.summary.errors == 3
        bad = [j for j in first.judgments if j.error]
        assert all("errored" in j.error for j in bad)
        tries.clear()
        retried = await run(
            judge_for(lm),
            [Item(id=f"b{i}", output=f"t{i + 50}") for i in range(10)],
            journal=tmp_path / "b.jsonl",
            progress=False,
            batch=FAST.model_copy(update={"retry_failed": 1}),
        )
        assert retried.summary.ok == 10
        assert [len(b["custom_ids"]) for b in s.batch.created[1:]] == [10, 3]  # the follow-up holds the three
        await lm.aclose()


async def test_non_retryable_failures_are_not_resent(tmp_path):
    def refuse(_p: str, cid: str, _b: dict[str, Any]) -> int | None:
        return 400 if cid.startswith(first_key[:8]) else None

    lm0 = OpenAILM("stub-model", base_url="http://unused.invalid/v1")
    first_key = LMCache.make_key(lm0.identity().replace("unused.invalid", "x"), "", "")  # replaced below
    with StubOpenAIServer(latency=0.0, batch_latency=0.001, reply=reply, batch_fail=None) as s:
        lm = wrap(backend("openai", s), cache=tmp_path / "c.sqlite")
        judge = judge_for(lm)
        first_key = LMCache.make_key(lm.identity(), lm.model, judge.request(items(1)[0]).key())
        s.batch.fail = refuse
        result = await run(
            judge,
            items(5),
            journal=tmp_path / "j.jsonl",
            progress=False,
            batch=FAST.model_copy(update={"retry_failed": 2}),
        )
        assert result.summary.errors == 1 and "HTTP 400" in (result.by_id()["it0"].error or "")
        assert len(s.batch.created) == 1
        await lm.aclose()


@pytest.mark.parametrize("provider", ["openai", "anthropic"])
async def test_expired_requests_are_errors_then_retried_when_asked(provider, tmp_path):
    with StubOpenAIServer(latency=0.0, batch_latency=0.02, reply=reply, batch_expire_after=0.1) as s:
        lm = wrap(backend(provider, s), cache=tmp_path / "c.sqlite")
        result = await run(judge_for(lm), items(12), journal=tmp_path / "j.jsonl", progress=False, batch=FAST)
        expired = [j for j in result.judgments if j.error]
        assert expired and all("expired" in (j.error or "") for j in expired)
        assert result.summary.ok + len(expired) == 12
        s.batch.expire_after = None
        again = await run(judge_for(lm), items(12), journal=tmp_path / "j.jsonl", progress=False, batch=FAST)
        assert again.summary.ok == 12 and again.summary.resumed == 12 - len(expired)
        assert max(submissions(s).values()) == 2  # only the expired ones went again
        await lm.aclose()


def _intent(
    session_dir: Path, lm: Any, judge: PromptJudge, todo: list[Item]
) -> tuple[BatchStore, Any, Any, list]:
    """Write an intent for ``todo``'s requests as the runner would (what a killed run leaves behind)."""
    store = BatchStore(session_dir)
    api = batch_api_for(lm)
    pairs = [
        (LMCache.make_key(lm.identity(), lm.model, judge.request(it).key()), judge.request(it)) for it in todo
    ]
    groups = api.lines(pairs)
    lines = [line for _, ls in groups for line in ls]
    record = store.begin(api, pairs, len(lines))
    return store, api, record, lines


@pytest.mark.parametrize("provider", ["openai", "anthropic"])
@pytest.mark.parametrize("state", ["intent_only", "created_unrecorded", "submitted"])
async def test_resume_after_a_crash_at_each_step_submits_each_request_once(provider, state, server, tmp_path):
    lm = wrap(backend(provider, server), cache=tmp_path / "c.sqlite")
    judge = judge_for(lm)
    run_dir = tmp_path / "run"
    todo = items(8)
    store, api, record, lines = _intent(run_dir / "batches", lm, judge, todo)
    if state != "intent_only":
        batch_id = await api.submit(record.local, lines)  # the provider has it ...
        if state == "submitted":
            store.submitted(record, batch_id)  # ... and the record too
    result = await run(judge, todo, journal=run_dir / "journal.jsonl", progress=False, batch=FAST)
    assert_all_right(result, 8)
    assert len(server.batch.created) == 1 and max(submissions(server).values()) == 1
    await lm.aclose()


async def test_an_adopted_anthropic_batch_that_is_not_ours_is_disowned_and_ours_submitted(server, tmp_path):
    lm = wrap(backend("anthropic", server), cache=tmp_path / "c.sqlite")
    judge = judge_for(lm)
    run_dir = tmp_path / "run"
    store, api, record, lines = _intent(run_dir / "batches", lm, judge, items(3))
    stranger = [(f"someone_else_{i}", body) for i, (_, body) in enumerate(lines)]
    await api.submit("other", stranger)  # same count, created after our intent, not ours
    result = await run(judge, items(3), journal=run_dir / "journal.jsonl", progress=False, batch=FAST)
    assert_all_right(result, 3)
    assert len(server.batch.created) == 2
    assert BatchStore(run_dir / "batches").disowned  # the stranger's id is remembered, not adopted again
    await lm.aclose()


async def test_compare_style_shared_session_puts_several_runs_in_one_batch(server, tmp_path):
    lm = wrap(backend("openai", server), cache=tmp_path / "c.sqlite")
    session = BatchSession(FAST, tmp_path / "batches")
    other = PromptJudge(JudgePrompt.from_template("Grade 1-5.\n\nText: {{output}}"), lm)
    import asyncio

    first, second = await asyncio.gather(
        run(judge_for(lm), items(6), journal=tmp_path / "a.jsonl", progress=False, batch=session),
        run(other, items(6), journal=tmp_path / "b.jsonl", progress=False, batch=session),
    )
    await session.aclose()
    assert first.summary.ok == 6 and second.summary.ok == 6
    assert [len(b["custom_ids"]) for b in server.batch.created] == [12]
    await lm.aclose()


async def test_anthropic_batches_mark_the_shared_demos_prefix_for_the_prompt_cache(tmp_path):
    demos = [Demo(item=Item(id=f"d{k}", output="a worked example text " * 300), score=3) for k in range(2)]
    prompt = JudgePrompt.from_template(TEMPLATE).with_demos(demos)
    with StubOpenAIServer(latency=0.0, batch_latency=0.001, reply=reply) as s:
        lm = wrap(
            AnthropicLM("claude-sonnet-4", base_url=s.url, api_key="k", cache_min_tokens=1024),
            cache=tmp_path / "c.sqlite",
        )
        result = await run(
            PromptJudge(prompt, lm), items(6), journal=tmp_path / "j.jsonl", progress=False, batch=FAST
        )
        assert result.summary.ok == 6
        usage = result.summary.usage
        assert usage.cache_write_tokens > 1024  # the first request writes the prefix ...
        assert usage.cached_prompt_tokens == 5 * usage.cache_write_tokens  # ... the other five read it
        await lm.aclose()


async def test_batch_mode_refuses_a_backend_without_a_batch_api(tmp_path):
    judge = judge_for(FakeLM(responses=["Score: 3"]))
    with pytest.raises(ConfigError, match="batch mode needs an 'openai:<model>' or 'anthropic:<model>'"):
        await run(judge, items(1), journal=tmp_path / "run" / "j.jsonl", progress=False, batch=FAST)
    assert not (tmp_path / "run").exists()  # refused before anything was written
    openai_judge = judge_for(OpenAILM("m", base_url="http://127.0.0.1:9/v1"))
    with pytest.raises(ConfigError, match="needs a folder for its batch record"):
        await run(openai_judge, items(1), progress=False, batch=True)


KILL_CHILD = (
    textwrap.dedent(
        """
    import asyncio, json, re, sys
    from pathlib import Path
    from mitigate import Item, JudgePrompt, PromptJudge
    from mitigate.run._batch_session import BatchConfig
    from mitigate.lm._registry import get, wrap
    from mitigate.run._runner import run

    provider, url, folder, n = sys.argv[1], sys.argv[2], Path(sys.argv[3]), int(sys.argv[4])
    base = (get("openai:stub-model", base_url=url + "/v1") if provider == "openai"
            else get("anthropic:claude-stub", base_url=url, api_key="k"))  # imports only that SDK
    lm = wrap(base, cache=folder / "cache.sqlite")
    judge = PromptJudge(JudgePrompt.from_template(%r), lm)
    items = [Item(id=f"it{i}", output=f"t{i}") for i in range(n)]
    options = BatchConfig(poll_interval=0.02, max_poll_interval=0.05, settle=0.02, max_requests=40,
                           progress=False)
    result = asyncio.run(run(judge, items, journal=folder / "journal.jsonl", progress=False, batch=options))
    print(json.dumps({"ok": result.summary.ok, "errors": result.summary.errors}))
    """
    )
    % TEMPLATE
)


@pytest.mark.slow
@pytest.mark.parametrize("provider", ["openai", "anthropic"])
def test_sigkill_while_polling_then_resume_loses_nothing_and_submits_nothing_twice(provider, tmp_path):
    with StubOpenAIServer(latency=0.0, batch_latency=0.01, reply=reply) as s:
        script = tmp_path / "child.py"
        script.write_text(KILL_CHILD)
        env = {**os.environ, "PYTHONPATH": str(REPO)}
        args = [sys.executable, str(script), provider, s.url, str(tmp_path), "100"]
        proc = subprocess.Popen(args, env=env)
        deadline = time.time() + 60
        while time.time() < deadline and len(s.batch.created) < 2:
            time.sleep(0.005)
        time.sleep(0.05)
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait()
        assert proc.returncode == -signal.SIGKILL
        done = subprocess.run(args, env=env, capture_output=True, text=True, timeout=120, check=True)
        assert json.loads(done.stdout) == {"ok": 100, "errors": 0}
        assert sum(submissions(s).values()) == 100 and max(submissions(s).values()) == 1
        journal = [json.loads(x) for x in (tmp_path / "journal.jsonl").read_text().splitlines()[1:]]
        scores = {j["item_id"]: j["scores"]["score"] for j in journal}
        assert scores == {f"it{i}": expected(f"t{i}") for i in range(100)}


async def test_polling_that_keeps_failing_stops_the_run_with_the_error_and_keeps_the_batch_recorded(tmp_path):
    import asyncio

    from mitigate.errors import MitigateError

    server = StubOpenAIServer(latency=0.0, batch_latency=0.05, reply=reply).start()
    lm = wrap(backend("openai", server), cache=tmp_path / "c.sqlite")
    options = FAST.model_copy(update={"transient_retries": 2, "poll_interval": 0.01})
    task = asyncio.ensure_future(
        run(judge_for(lm), items(5), journal=tmp_path / "run" / "j.jsonl", progress=False, batch=options)
    )
    while not server.batch.created:
        await asyncio.sleep(0.01)
    await asyncio.sleep(0.05)
    server.stop()  # the provider becomes unreachable while the batch runs
    with pytest.raises(MitigateError, match="connection failed|timed out"):
        await task
    journal = [json.loads(x) for x in (tmp_path / "run" / "j.jsonl").read_text().splitlines()[1:]]
    assert len(journal) == 5 and all(j["error"] for j in journal)  # errors, retried on the next run
    record = BatchStore(tmp_path / "run" / "batches")
    assert [(r.batch_id is not None, r.collected) for r in record.records.values()] == [(True, False)]
    await lm.aclose()


@pytest.mark.parametrize("provider", ["openai", "anthropic"])
async def test_circuit_breaker_stops_a_batch_run_whose_every_request_is_refused(provider, tmp_path):
    from mitigate.errors import RunStoppedError

    def no_such_model(_p: str, _cid: str, _b: dict[str, Any]) -> int | None:
        return 404

    with StubOpenAIServer(latency=0.0, batch_latency=0.001, reply=reply, batch_fail=no_such_model) as s:
        lm = wrap(backend(provider, s), cache=tmp_path / "c.sqlite")
        with pytest.raises(RunStoppedError, match="3 failed judgments in a row") as info:
            await run(
                judge_for(lm), items(12), journal=tmp_path / "run" / "j.jsonl", progress=False, batch=FAST
            )
        # no warm-up in batch mode: all twelve requests went out in one batch, none resent
        assert [len(b["custom_ids"]) for b in s.batch.created] == [12]
        result = info.value.result  # type: ignore[attr-defined]
        assert result.summary.ok == 0 and 3 <= result.summary.errors <= 12
        assert all(
            ("HTTP 404" if provider == "openai" else "not_found_error") in (j.error or "")
            for j in result.judgments
        )
        await lm.aclose()
