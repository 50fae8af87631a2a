"""The runner: bounded concurrency, crash-safe journal and resume, usage tally."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from mitigate import Item, JudgePrompt, PromptJudge
from mitigate.errors import (
    CapabilityError,
    ConfigError,
    DataError,
    LMCallError,
    RunBusyError,
    RunStoppedError,
    TransientLMError,
)
from mitigate.lm import LM, Choice, LMRequest, LMResponse, RetryPolicy, Usage
from mitigate.lm._retry import RetryingLM
from mitigate.paths import write_output
from mitigate.run import RunLock, run
from mitigate.run._tally import permanent_cause

REPO = Path(__file__).resolve().parents[2]
TEMPLATE = "Rate the text from 1 to 5.\nText: {{output}}\nScore:"


class CountingLM(LM):
    """A slow scripted backend that tracks how many calls are in flight."""

    provider = "counting"

    def __init__(self, delay: float = 0.01, fail_ids: frozenset[str] = frozenset()) -> None:
        self.delay = delay
        self.in_flight = 0
        self.max_in_flight = 0
        self.calls = 0
        self.fail_ids = fail_ids

    async def complete(self, request: LMRequest) -> LMResponse:
        self.calls += 1
        self.in_flight += 1
        self.max_in_flight = max(self.max_in_flight, self.in_flight)
        try:
            await asyncio.sleep(self.delay)
        finally:
            self.in_flight -= 1
        text = request.messages[-1].content
        if any(f"Text: {i}\n" in text for i in self.fail_ids):
            raise LMCallError("server said no")
        return LMResponse(
            choices=(Choice(text="Score: 4"),),
            usage=Usage(prompt_tokens=10, completion_tokens=2),
            cost_usd=0.001,
        )


def _items(n: int) -> list[Item]:
    return [Item(id=f"it{i}", output=f"t{i}") for i in range(n)]


def _judge(lm: LM) -> PromptJudge:
    return PromptJudge(JudgePrompt.from_template(TEMPLATE), lm)


async def test_concurrency_limit_is_respected_and_results_keep_item_order() -> None:
    lm = CountingLM(delay=0.02)
    result = await run(_judge(lm), _items(30), concurrency=5, progress=False)
    assert lm.max_in_flight == 5
    assert [j.item_id for j in result.judgments] == [f"it{i}" for i in range(30)]
    s = result.summary
    assert (s.ok, s.calls, s.usage.prompt_tokens) == (30, 30, 300)
    assert s.cost_usd == pytest.approx(0.03)


async def test_resume_from_journal_judges_only_the_missing_items(tmp_path: Path) -> None:
    journal = tmp_path / "journal.jsonl"
    first = CountingLM()
    await run(_judge(first), _items(10), journal=journal, progress=False)
    second = CountingLM()
    result = await run(_judge(second), _items(15), journal=journal, progress=False)
    assert second.calls == 5
    assert result.summary.resumed == 10 and result.summary.judged_now == 5
    assert len(result.judgments) == 15


async def test_half_written_last_journal_line_is_discarded_and_redone(tmp_path: Path) -> None:
    journal = tmp_path / "journal.jsonl"
    await run(_judge(CountingLM()), _items(4), journal=journal, progress=False)
    lines = journal.read_text().splitlines(keepends=True)
    journal.write_text("".join(lines[:-1]) + lines[-1][: len(lines[-1]) // 2])  # torn write
    lm = CountingLM()
    result = await run(_judge(lm), _items(4), journal=journal, progress=False)
    assert lm.calls == 1
    assert [j.item_id for j in result.judgments] == ["it0", "it1", "it2", "it3"]


async def test_failed_calls_are_recorded_as_errors_and_retried_on_resume(tmp_path: Path) -> None:
    journal = tmp_path / "journal.jsonl"
    result = await run(
        _judge(CountingLM(fail_ids=frozenset({"t2"}))), _items(4), journal=journal, progress=False
    )
    bad = result.by_id()["it2"]
    assert bad.error is not None and "server said no" in bad.error and bad.scores == {}
    assert result.summary.errors == 1
    lm = CountingLM()
    again = await run(_judge(lm), _items(4), journal=journal, progress=False)
    assert lm.calls == 1 and again.by_id()["it2"].ok


async def test_journal_of_another_judge_is_refused(tmp_path: Path) -> None:
    journal = tmp_path / "journal.jsonl"
    await run(_judge(CountingLM()), _items(2), journal=journal, progress=False)
    other = PromptJudge(JudgePrompt.from_template("Grade 1-5: {{output}}"), CountingLM())
    with pytest.raises(ConfigError, match="another judge configuration"):
        await run(other, _items(2), journal=journal, progress=False)


async def test_duplicate_item_ids_are_refused() -> None:
    with pytest.raises(Exception, match="unique item ids"):
        await run(_judge(CountingLM()), [*_items(2), *_items(1)], progress=False)


KILL_SCRIPT = textwrap.dedent(
    """
    import asyncio, sys
    from pathlib import Path
    from mitigate import Item, JudgePrompt, PromptJudge
    from mitigate.run._runner import run
    from mitigate.lm._base import LM, Choice, LMResponse

    calls = Path(sys.argv[2])

    class SlowLM(LM):
        provider = "slow"
        async def complete(self, request):
            await asyncio.sleep(0.05)
            with calls.open("a") as fh:
                fh.write("call\\n")
            return LMResponse(choices=(Choice(text="Score: 3"),))

    items = [Item(id=f"it{i}", output=f"t{i}") for i in range(300)]
    judge = PromptJudge(JudgePrompt.from_template("Rate 1-5.\\nText: {{output}}"), SlowLM())
    result = asyncio.run(run(judge, items, concurrency=4, journal=sys.argv[1], progress=False))
    print(len(result.judgments))
    """
)


@pytest.mark.slow
def test_run_killed_with_sigkill_resumes_without_losing_or_duplicating(tmp_path: Path) -> None:
    script = tmp_path / "job.py"
    script.write_text(KILL_SCRIPT)
    journal, calls = tmp_path / "journal.jsonl", tmp_path / "calls.txt"
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    proc = subprocess.Popen([sys.executable, str(script), str(journal), str(calls)], env=env)
    deadline = time.time() + 60
    while time.time() < deadline:
        if journal.exists() and journal.read_text().count("\n") >= 21:  # the header and 20 judgments
            break
        time.sleep(0.01)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    assert proc.returncode == -signal.SIGKILL
    done_before = 0
    for ln in journal.read_text().splitlines()[1:]:
        try:
            json.loads(ln)
        except json.JSONDecodeError:  # a write torn by the kill: the runner must redo that item
            continue
        done_before += 1
    assert 20 <= done_before < 300, "the kill must land mid-run"
    calls.write_text("")
    out = subprocess.run(
        [sys.executable, str(script), str(journal), str(calls)],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    assert out.stdout.strip() == "300"
    ids = [json.loads(ln)["item_id"] for ln in journal.read_text().splitlines()[1:]]
    assert sorted(ids) == sorted(f"it{i}" for i in range(300))  # every item exactly once
    assert calls.read_text().count("call") == 300 - done_before  # nothing journalled was re-judged


# ---------------------------------------------------------------- failing fast


class ScriptedLM(LM):
    """Answers "Score: 4" or raises what ``outcome(call_number)`` returns; tracks calls in flight."""

    provider = "scripted"

    def __init__(self, outcome, delay: float = 0.005) -> None:
        self.outcome = outcome
        self.delay = delay
        self.calls = 0
        self.in_flight = 0
        self.max_in_flight = 0

    async def complete(self, request: LMRequest) -> LMResponse:
        self.calls += 1
        number = self.calls
        self.in_flight += 1
        self.max_in_flight = max(self.max_in_flight, self.in_flight)
        try:
            await asyncio.sleep(self.delay)
        finally:
            self.in_flight -= 1
        error = self.outcome(number)
        if error is not None:
            raise error
        return LMResponse(choices=(Choice(text="Score: 4"),))


def _http(status: int) -> LMCallError:
    return LMCallError(f"failed with HTTP {status}", status=status, backend="x")


@pytest.mark.parametrize("status", [400, 401, 403, 404, 422])
async def test_permanent_http_error_stops_the_run_after_three_requests(status, tmp_path) -> None:
    lm = ScriptedLM(lambda n: _http(status))
    with pytest.raises(RunStoppedError) as info:
        await run(_judge(lm), _items(100), concurrency=8, journal=tmp_path / "j.jsonl", progress=False)
    assert lm.calls == 3 and lm.max_in_flight == 3  # nothing succeeded yet: at most stop_after in flight
    assert f"HTTP {status}" in str(info.value) and "\n" not in str(info.value)
    assert "nothing was judged" in str(info.value)
    assert info.value.result.summary.errors == 3  # type: ignore[attr-defined]
    lines = (tmp_path / "j.jsonl").read_text().splitlines()
    assert len(lines) == 4  # header + the three failed judgments, redone on resume


async def test_stopped_run_keeps_what_succeeded_and_resumes_the_rest(tmp_path) -> None:
    journal = tmp_path / "j.jsonl"
    key_revoked = ScriptedLM(lambda n: _http(401) if n > 5 else None)
    with pytest.raises(RunStoppedError, match="the 5 judgments made are kept"):
        await run(_judge(key_revoked), _items(40), concurrency=4, journal=journal, progress=False)
    assert key_revoked.calls <= 5 + 3 + 4  # the stop comes within stop_after + concurrency requests
    fixed = ScriptedLM(lambda n: None)
    result = await run(_judge(fixed), _items(40), concurrency=4, journal=journal, progress=False)
    assert result.summary.resumed == 5 and fixed.calls == 35 and result.summary.ok == 40


async def test_after_the_first_success_judgments_run_concurrently() -> None:
    lm = ScriptedLM(lambda n: None, delay=0.02)
    result = await run(_judge(lm), _items(20), concurrency=5, progress=False)
    assert result.summary.ok == 20 and lm.max_in_flight == 5


async def test_item_specific_errors_never_stop_the_run() -> None:
    lm = ScriptedLM(lambda n: LMCallError("the prompt has 5000 tokens; expected fewer than n_ctx=4096"))
    result = await run(_judge(lm), _items(12), concurrency=3, progress=False)
    assert lm.calls == 12 and result.summary.errors == 12


async def test_a_success_between_permanent_errors_resets_the_count() -> None:
    lm = ScriptedLM(lambda n: None if n % 3 == 0 else _http(400), delay=0.0)
    result = await run(_judge(lm), _items(30), concurrency=1, progress=False)
    assert lm.calls == 30 and result.summary.ok == 10


async def test_stop_after_zero_never_stops() -> None:
    lm = ScriptedLM(lambda n: _http(401))
    result = await run(_judge(lm), _items(10), concurrency=4, progress=False, stop_after=0)
    assert lm.calls == 10 and result.summary.errors == 10 and lm.max_in_flight == 4


async def test_unreachable_server_or_too_long_retry_after_stop_after_the_first_wave() -> None:
    refused = ScriptedLM(lambda n: TransientLMError("connection failed: refused", reason="connection"))
    with pytest.raises(RunStoppedError, match="could not connect on any of 3 attempts"):
        await run(
            _judge(RetryingLM(refused, RetryPolicy(jitter=False, base_delay=0.0))),
            _items(50),
            concurrency=8,
            progress=False,
        )
    # the first wave (stop_after = 3 items) makes 3 attempts each, then it stops
    assert refused.calls <= 3 * 3
    busy = ScriptedLM(lambda n: TransientLMError("rate limited", status=429, retry_after=3600))
    with pytest.raises(RunStoppedError, match=r"asked to wait 3600 s .*patience of 60 s"):
        await run(_judge(RetryingLM(busy, RetryPolicy())), _items(50), concurrency=8, progress=False)
    assert busy.calls <= 3


async def test_every_attempt_failing_with_the_same_5xx_stops_after_three_items() -> None:
    down = ScriptedLM(lambda n: TransientLMError("HTTP 500", status=500))
    with pytest.raises(RunStoppedError, match="every one of 2 attempts failed"):
        await run(
            _judge(RetryingLM(down, RetryPolicy(max_attempts=2, base_delay=0.0, jitter=False))),
            _items(50),
            concurrency=8,
            progress=False,
        )
    assert down.calls == 6


async def test_a_backend_that_cannot_do_what_is_asked_stops_the_run() -> None:
    lm = ScriptedLM(lambda n: CapabilityError("backend 'x' cannot return token logprobs"))
    with pytest.raises(RunStoppedError, match="cannot return token logprobs"):
        await run(_judge(lm), _items(20), concurrency=4, progress=False)
    assert lm.calls == 3


def test_permanent_cause_classifies_errors() -> None:
    assert permanent_cause(_http(401))[0] == "http-401"
    assert permanent_cause(LMCallError("HTTP 500", status=500)) is None  # one failed call: may pass
    assert permanent_cause(LMCallError("context too long")) is None
    assert permanent_cause(DataError("item 'x' has no field 'source'")) is None
    assert permanent_cause(ConfigError("bad setting"))[2] is False


async def test_a_slot_no_item_can_fill_is_refused_before_the_first_call() -> None:
    lm = ScriptedLM(lambda n: None)
    judge = PromptJudge(JudgePrompt.from_template("Source: {{source}}\nText: {{output}}\nScore:"), lm)
    items = [Item(id="a", output="x", inputs={"source": "s"}), *_items(3)]
    with pytest.raises(DataError, match=r"3 of 4 items cannot be put into the judge's prompt.*'it0'.*source"):
        await run(judge, items, progress=False)
    assert lm.calls == 0


# ---------------------------------------------------------------- damaged journals and shared run folders


@pytest.mark.parametrize(
    "tail",
    [
        b"\n",
        b"\n\n\n",
        b"   \n",
        b"\xff\xfe not utf-8\n",
        b'{"item_id": "it9", "scor\n',
        b'{"valid": "json", "but": "not a judgment"}\n',
        b'{"item_id": "it3", "sc',
    ],
)
async def test_damaged_or_blank_trailing_journal_lines_are_trimmed_and_redone(tail, tmp_path) -> None:
    journal = tmp_path / "journal.jsonl"
    await run(_judge(CountingLM()), _items(4), journal=journal, progress=False)
    lines = journal.read_bytes().splitlines(keepends=True)
    journal.write_bytes(b"".join(lines[:-1]) + tail)  # the last judgment is lost, damage after it
    lm = CountingLM()
    result = await run(_judge(lm), _items(4), journal=journal, progress=False)
    assert lm.calls == 1 and result.summary.ok == 4
    lm = CountingLM()
    again = await run(_judge(lm), _items(4), journal=journal, progress=False)  # and every later resume works
    assert lm.calls == 0 and again.summary.resumed == 4
    assert all(json.loads(ln) for ln in journal.read_text(encoding="utf-8").splitlines())


async def test_unreadable_line_followed_by_good_ones_names_the_line(tmp_path) -> None:
    journal = tmp_path / "journal.jsonl"
    await run(_judge(CountingLM()), _items(4), journal=journal, progress=False)
    lines = journal.read_bytes().splitlines(keepends=True)
    lines[2] = b"\xff garbage\n"
    journal.write_bytes(b"".join(lines))
    with pytest.raises(
        DataError, match=r"journal.jsonl:3: expected a judgment; got an unreadable line \(not UTF-8\)"
    ):
        await run(_judge(CountingLM()), _items(4), journal=journal, progress=False)


async def test_journal_with_only_a_torn_header_starts_afresh(tmp_path) -> None:
    journal = tmp_path / "journal.jsonl"
    journal.write_bytes(b'{"journal": 1, "ju')
    lm = CountingLM()
    result = await run(_judge(lm), _items(3), journal=journal, progress=False)
    assert lm.calls == 3 and result.summary.ok == 3


async def test_journal_path_that_is_a_folder_or_under_a_file_is_a_config_error(tmp_path) -> None:
    (tmp_path / "j.jsonl").mkdir()
    with pytest.raises(ConfigError, match="got a directory"):
        await run(_judge(CountingLM()), _items(2), journal=tmp_path / "j.jsonl", progress=False)
    (tmp_path / "file").write_text("x")
    with pytest.raises(ConfigError, match="file is a file"):
        await run(_judge(CountingLM()), _items(2), journal=tmp_path / "file" / "j.jsonl", progress=False)


HOLD_LOCK = textwrap.dedent(
    """
    import sys, time
    from mitigate.run._journal import RunLock
    with RunLock(sys.argv[1]):
        print("locked", flush=True)
        time.sleep(30)
    """
)


async def test_a_second_process_on_the_same_journal_is_refused_at_once(tmp_path) -> None:
    journal = tmp_path / "journal.jsonl"
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLD_LOCK, str(RunLock.for_journal(journal).path)],
        env=env,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "locked"
        lm = CountingLM()
        with pytest.raises(RunBusyError, match=rf"in use by another mitigate process \(pid {holder.pid}\)"):
            await run(_judge(lm), _items(3), journal=journal, progress=False)
        assert lm.calls == 0
    finally:
        holder.kill()
        holder.wait()
    result = await run(_judge(CountingLM()), _items(3), journal=journal, progress=False)  # free again
    assert result.summary.ok == 3


async def test_run_lock_is_reentrant_within_a_process_and_released_by_the_last_holder(tmp_path) -> None:
    journal = tmp_path / "journal.jsonl"
    with RunLock.for_journal(journal):  # what the CLI does around a run
        await run(_judge(CountingLM()), _items(2), journal=journal, progress=False)
    probe = subprocess.run(
        [
            sys.executable,
            "-c",
            HOLD_LOCK.replace("time.sleep(30)", "pass"),
            str(RunLock.for_journal(journal).path),
        ],
        env={**os.environ, "PYTHONPATH": str(REPO)},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert probe.stdout.strip() == "locked", probe.stderr


def test_write_output_replaces_the_file_and_leaves_it_intact_on_failure(tmp_path) -> None:
    target = tmp_path / "results.json"
    target.write_text("old")
    inode = target.stat().st_ino
    write_output(target, "new")
    assert target.read_text() == "new" and target.stat().st_ino != inode  # replaced, never rewritten in place
    assert [p.name for p in tmp_path.iterdir()] == ["results.json"]
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "results.json").mkdir()  # a folder where the file should go
    with pytest.raises(ConfigError, match="expected to write"):
        write_output(tmp_path / "sub" / "results.json", "x")
    assert list((tmp_path / "sub").iterdir()) == [tmp_path / "sub" / "results.json"]


async def test_a_run_on_an_lm_that_already_answered_skips_the_warm_up() -> None:
    lm = ScriptedLM(lambda n: None, delay=0.05)
    await run(_judge(lm), _items(1), concurrency=1, progress=False)  # this LM object has answered once
    lm.max_in_flight = 0
    await run(_judge(lm), _items(8), concurrency=8, progress=False)
    assert lm.max_in_flight == 8  # all eight at once
    fresh = ScriptedLM(lambda n: None, delay=0.05)
    await run(_judge(fresh), _items(8), concurrency=8, progress=False)
    assert fresh.max_in_flight <= 5  # warm-up: 3 first, the other 5 once one has answered
    refused = ScriptedLM(lambda n: _http(401))
    with pytest.raises(RunStoppedError):
        await run(_judge(refused), _items(20), concurrency=8, progress=False)
    assert refused.calls == 3  # a new LM that never answered still costs stop_after requests


async def test_an_lm_that_answered_before_and_is_refused_now_still_stops_the_run() -> None:
    state = {"revoked": False}
    lm = ScriptedLM(lambda n: _http(401) if state["revoked"] else None)
    await run(_judge(lm), _items(2), concurrency=2, progress=False)
    state["revoked"] = True
    before = lm.calls
    with pytest.raises(RunStoppedError, match="HTTP 401"):
        await run(_judge(lm), _items(100), concurrency=8, progress=False)
    assert lm.calls - before <= 3 + 8  # stop_after, plus what was already in flight


async def test_stored_items_are_counted_as_they_are_served_not_after_the_items_ahead_that_need_calls(
    tmp_path, monkeypatch
):
    from mitigate import strategies as S
    from mitigate.lm import CachedLM, FakeLM, LMCache
    from mitigate.run import _runner as runner

    class Gated(FakeLM):
        """The same backend, whose new calls wait until the test opens the gate."""

        gate = asyncio.Event()

        async def complete(self, request: LMRequest) -> LMResponse:
            await self.gate.wait()
            return await super().complete(request)

    items = [Item(id=f"i{k}", output=f"text {k}") for k in range(8)]
    prompt = JudgePrompt.from_template(TEMPLATE)
    cache = LMCache(tmp_path / "c.sqlite")
    pipe = S.parse_pipeline("sampling(n=2, temperature=0.5)")  # a pipeline-wrapped judge
    stored = pipe.wrap(PromptJudge(prompt, CachedLM(FakeLM(lambda r: "Score: 3"), cache)))
    await run(stored, items[4:], progress=False)  # the last four are stored

    updates: list[int] = []

    class Bar:
        def __init__(self, *a, **kw) -> None:
            pass

        def update(self, n: int) -> None:
            updates.append(n)

        def close(self) -> None:
            pass

    monkeypatch.setattr(runner, "tqdm", Bar)
    gated = Gated(lambda r: "Score: 4")
    judge = pipe.wrap(PromptJudge(prompt, CachedLM(gated, cache)))
    task = asyncio.ensure_future(run(judge, items, concurrency=1, progress=True))
    for _ in range(200):  # the four stored items are counted while the first new call still waits
        if len(updates) >= 4:
            break
        await asyncio.sleep(0.01)
    assert len(updates) == 4 and not task.done() and gated.calls == 0
    Gated.gate.set()
    result = await task
    assert len(updates) == 8 and gated.calls == 4
    by_id = result.by_id()
    assert [by_id[f"i{k}"].scores["score"] for k in range(8)] == [4.0] * 4 + [3.0] * 4
    assert result.summary.cached_calls == 4 and result.summary.calls == 4
