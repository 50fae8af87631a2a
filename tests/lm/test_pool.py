"""Several replicas of one server (mitigate.lm._pool): least outstanding requests, a breaker and probes per
replica, one cache key whichever replica answers, and --base-url given more than once or as @FILE."""

from __future__ import annotations

import asyncio
import json
import socket
import warnings
from pathlib import Path

import pytest
from typer.testing import CliRunner

from mitigate import Item, JudgePrompt, PromptJudge
from mitigate.cli import app
from mitigate.errors import ConfigError, LMCallError, RunStoppedError, TransientLMError
from mitigate.lm import LM, Choice, LMRequest, LMResponse, Message, RetryPolicy, get, read_endpoints, wrap
from mitigate.lm._pool import EndpointWarning, PoolLM, parse_endpoints
from mitigate.run import run
from mitigate.testing import StubOpenAIServer

TEMPLATE = "Rate the text from 1 to 5.\nText: {{output}}\nScore:"
REQUEST = LMRequest(messages=(Message(role="user", content="hi"),))


def _closed_port() -> str:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    return f"http://127.0.0.1:{port}/v1"


def _items(n: int) -> list[Item]:
    return [Item(id=f"it{i}", output=f"t{i}") for i in range(n)]


class Scripted(LM):
    """A replica whose answers are scripted: "ok", or an exception to raise."""

    provider = "openai"
    model = "m"

    def __init__(self, script: list[object] | None = None, delay: float = 0.0) -> None:
        self.script = list(script or [])
        self.calls = 0
        self.delay = delay

    async def complete(self, request: LMRequest) -> LMResponse:
        self.calls += 1
        await asyncio.sleep(self.delay)
        step = self.script.pop(0) if self.script else "ok"
        if isinstance(step, BaseException):
            raise step
        return LMResponse(choices=(Choice(text="Score: 4"),))


def _down() -> TransientLMError:
    return TransientLMError("could not connect", reason="connection")


async def test_requests_go_to_the_replica_with_the_fewest_in_flight_for_its_weight() -> None:
    a, b, c = Scripted(delay=0.01), Scripted(delay=0.01), Scripted(delay=0.01)
    pool = PoolLM([("http://a/v1", 2.0, a), ("http://b/v1", 1.0, b), ("http://c/v1", 1.0, c)])
    await asyncio.gather(*(pool.complete(REQUEST) for _ in range(40)))
    assert (a.calls, b.calls, c.calls) == (20, 10, 10)
    stats = pool.stats()
    assert [s["served"] for s in stats] == [20, 10, 10] and all(s["in"] for s in stats)


async def test_a_replica_that_cannot_be_reached_is_taken_out_then_probed_after_its_backoff() -> None:
    now = [0.0]
    dead, good = Scripted([_down(), _down()]), Scripted()
    pool = PoolLM([("http://dead/v1", 1.0, dead), ("http://good/v1", 1.0, good)], clock=lambda: now[0])
    with pytest.warns(
        EndpointWarning, match=r"replica http://dead/v1 of openai:m taken out .* probed again in 1 s"
    ):
        await pool.complete(REQUEST)  # the dead one failed it: the good one answered it
    for _ in range(5):
        await pool.complete(REQUEST)
    assert dead.calls == 1 and good.calls == 6
    now[0] = 1.5  # the backoff passed: the next request probes it, and it fails again: out for 2 s
    await pool.complete(REQUEST)
    assert dead.calls == 2 and good.calls == 7 and pool.endpoints[0].down_until == 3.5
    now[0] = 4.0  # probed again: it answers, and is back
    with pytest.warns(EndpointWarning, match="answered again: back in the pool"):
        await pool.complete(REQUEST)
    assert dead.calls == 3 and pool.stats()[0]["in"]


async def test_a_replica_failing_with_5xx_trips_after_three_in_a_row_and_a_success_resets_the_count() -> None:
    err = TransientLMError("HTTP 503", status=503)
    flaky = Scripted([err, err, "ok", err, err, err])
    pool = PoolLM([("http://f/v1", 1.0, flaky)])
    outcomes = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", EndpointWarning)
        for _ in range(7):
            try:
                await pool.complete(REQUEST)
                outcomes.append("ok")
            except TransientLMError as exc:
                outcomes.append("out" if "out of the pool" in str(exc) else "503")
    assert outcomes == ["503", "503", "ok", "503", "503", "503", "out"]
    assert pool.stats()[0]["causes"] == {"http-503": 5}


async def test_the_requests_own_faults_never_take_a_replica_out() -> None:
    bad = LMCallError("HTTP 400: bad request", status=400)
    pool = PoolLM([("http://a/v1", 1.0, Scripted([bad] * 5))], trip_after=1)
    for _ in range(5):
        with pytest.raises(LMCallError, match="HTTP 400"):
            await pool.complete(REQUEST)
    assert pool.stats()[0]["in"] and pool.stats()[0]["failed"] == 0


async def test_every_replica_out_for_the_same_cause_fails_as_one_server_would() -> None:
    pool = PoolLM([("http://a/v1", 1.0, Scripted([_down()])), ("http://b/v1", 1.0, Scripted([_down()]))])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", EndpointWarning)
        for _ in range(2):
            with pytest.raises(TransientLMError):
                await pool.complete(REQUEST)
        with pytest.raises(TransientLMError, match="every replica of openai:m is out of the pool") as info:
            await pool.complete(REQUEST)
    assert info.value.context["reason"] == "connection"


def test_the_cache_key_is_the_same_whichever_replica_answers_and_in_any_order() -> None:
    one = PoolLM([("http://a/v1", 1.0, Scripted()), ("http://user:pw@b/v1", 1.0, Scripted())])
    other = PoolLM([("http://user:pw@b/v1", 3.0, Scripted()), ("http://a/v1", 1.0, Scripted())])
    assert one.identity() == other.identity() == "openai:m@http://a/v1,http://b/v1"
    assert "pw" not in one.identity() and "pw" not in repr(one)
    with pytest.raises(ConfigError, match="expected replicas of one model"):
        PoolLM([("http://a/v1", 1.0, Scripted()), ("http://b/v1", 1.0, get("fake:other", responses=["x"]))])


def test_endpoint_files_give_weights_and_refuse_what_they_cannot_read(tmp_path: Path) -> None:
    assert parse_endpoints(["# replicas", "http://a/v1 2", "", "http://b/v1  # the small one"], "e.txt") == [
        ("http://a/v1", 2.0, 2),
        ("http://b/v1", 1.0, 4),
    ]
    for lines, said in (
        (["http://a/v1 zero"], r"e.txt:1: expected a weight that is a positive number"),
        (["http://a/v1 -1"], r"e.txt:1: expected a weight"),
        (["http://a/v1 1 2"], r"e.txt:1: expected 'URL' or 'URL WEIGHT'"),
    ):
        with pytest.raises(ConfigError, match=said):
            parse_endpoints(lines, "e.txt")
    (tmp_path / "e.txt").write_text("http://a/v1\nhttp://b/v1 3\n")
    read = lambda path, option: Path(path).read_text()  # noqa: E731
    assert read_endpoints([f"@{tmp_path / 'e.txt'}", "http://c/v1"], read) == [
        ("http://a/v1", 1.0),
        ("http://b/v1", 3.0),
        ("http://c/v1", 1.0),
    ]
    with pytest.raises(ConfigError, match=r"http://b/v1 is given at .*e.txt:2 and at --base-url"):
        read_endpoints([f"@{tmp_path / 'e.txt'}", "http://b/v1"], read)
    (tmp_path / "twice.txt").write_text("http://a/v1\nhttp://a/v1\n")
    with pytest.raises(ConfigError, match=r"given at .*twice.txt:1 and at .*twice.txt:2"):
        read_endpoints([f"@{tmp_path / 'twice.txt'}"], read)


# --------------------------------------------------------------------------- real servers, one of them
# failing


async def test_a_run_over_three_replicas_one_dead_and_one_failing_loses_nothing(tmp_path: Path) -> None:
    with (
        StubOpenAIServer(latency=0.01) as a,
        StubOpenAIServer(latency=0.01) as b,
        StubOpenAIServer(latency=0.0, fail_first=10**6, fail_status=500) as failing,
    ):
        urls = [a.base_url, b.base_url, failing.base_url, _closed_port()]
        lm = wrap(
            get("openai:stub-model", base_url=urls),
            cache=False,
            retry=RetryPolicy(base_delay=0.01, max_delay=0.1),
        )
        judge = PromptJudge(JudgePrompt.from_template(TEMPLATE), lm)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always", EndpointWarning)
            result = await run(judge, _items(60), concurrency=8, progress=False)
        await lm.aclose()
        served = a.request_count + b.request_count
    assert result.summary.ok == 60 and result.summary.errors == 0
    assert served == 60
    assert 3 <= failing.request_count <= 6  # three in a row take it out; a probe or two after its backoff
    taken_out = [str(w.message) for w in caught if "taken out" in str(w.message)]
    assert (
        len(taken_out) == 2
        and any("(connection" in m for m in taken_out)
        and any("(http-500" in m for m in taken_out)
    )


async def test_a_pool_of_dead_replicas_stops_the_run_after_a_few_requests() -> None:
    lm = wrap(
        get("openai:m", base_url=[_closed_port(), _closed_port()]),
        cache=False,
        retry=RetryPolicy(base_delay=0.01, max_delay=0.1),
    )
    judge = PromptJudge(JudgePrompt.from_template(TEMPLATE), lm)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", EndpointWarning)
        with pytest.raises(RunStoppedError, match="could not connect"):
            await run(judge, _items(20), concurrency=8, progress=False)
    await lm.aclose()


def _cli_bench(tmp_path: Path, n: int) -> list[str]:
    rows = [
        {
            "id": f"x{i}",
            "inputs": {"source": f"Article {i}."},
            "output": f"Summary {i}.",
            "human": {"fluency": 3},
        }
        for i in range(n)
    ]
    (tmp_path / "bench.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    (tmp_path / "prompt.txt").write_text(
        "Rate the fluency from 1 to 5.\n\nArticle: {{source}}\nSummary: {{summary}}\n\nScore:"
    )
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
        "-n",
        "0",
        "--no-progress",
    ]


def test_base_url_given_twice_spreads_the_run_and_a_rerun_over_the_file_is_served_from_the_cache(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MITIGATE_CACHE_DIR", str(tmp_path / "cache"))
    args = _cli_bench(tmp_path, 12)
    with (
        StubOpenAIServer(latency=0.02, reply="Score: 4") as a,
        StubOpenAIServer(latency=0.02, reply="Score: 4") as b,
    ):
        first = CliRunner().invoke(
            app, [*args, "--base-url", a.base_url, "--base-url", b.base_url, "--concurrency", "4"]
        )
        assert first.exit_code == 0, first.output
        assert a.request_count + b.request_count == 12 and a.request_count >= 4 and b.request_count >= 4
        (tmp_path / "endpoints.txt").write_text(
            f"# the same replicas, the other way round\n{b.base_url} 2\n{a.base_url}\n"
        )
        again = CliRunner().invoke(app, [*args, "--base-url", f"@{tmp_path / 'endpoints.txt'}"])
        assert again.exit_code == 0, again.output
        assert a.request_count + b.request_count == 12  # same replicas, same cache key: nothing sent again
    assert again.stdout.count("judge=4") == 12


def test_a_bad_endpoints_file_and_batch_over_replicas_are_refused_in_one_line(tmp_path: Path) -> None:
    args = _cli_bench(tmp_path, 2)
    (tmp_path / "endpoints.txt").write_text("http://127.0.0.1:9/v1 heavy\n")
    bad = CliRunner().invoke(app, [*args, "--base-url", f"@{tmp_path / 'endpoints.txt'}"])
    assert bad.exit_code == 2 and "endpoints.txt:1: expected a weight that is a positive number" in bad.stderr
    batch = CliRunner().invoke(
        app,
        [
            *args,
            "--base-url",
            "http://127.0.0.1:9/v1",
            "--base-url",
            "http://127.0.0.1:8/v1",
            "--batch",
            "--run-dir",
            str(tmp_path / "run"),
        ],
    )
    assert batch.exit_code == 2 and "expected one --base-url with it" in batch.stderr


async def test_with_a_silence_timeout_a_request_leaves_a_hung_replica_for_another_in_its_deadline() -> None:
    from mitigate.lm import Limits
    from tests.support.fault_server import FaultServer

    with FaultServer("hang", hold=5.0) as hung, StubOpenAIServer(latency=0.0) as good:
        lm = wrap(
            get(
                "openai:stub-model",
                base_url=[f"{hung.url}/v1", good.base_url],
                timeout=0.3,
                limits=Limits(deadline=20.0),
            ),
            cache=False,
            retry=RetryPolicy(base_delay=0.01, max_delay=0.1),
        )
        judge = PromptJudge(JudgePrompt.from_template(TEMPLATE), lm)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", EndpointWarning)
            result = await run(judge, _items(12), concurrency=4, progress=False)
        await lm.aclose()
        pool = lm.inner
        assert isinstance(pool, PoolLM)
    assert result.summary.ok == 12 and good.request_count == 12
    assert 1 <= hung.requests <= 4
    assert pool.stats()[0]["causes"].get("timeout", 0) == hung.requests


def test_an_empty_base_url_drops_the_ones_given_before_it() -> None:
    from mitigate.cli.options._backend import base_urls_given

    assert base_urls_given(["http://a/v1", "", "http://b/v1", "@e.txt"]) == ["http://b/v1", "@e.txt"]
    assert base_urls_given(["http://a/v1", ""]) == [] and base_urls_given(None) == []
    assert base_urls_given("http://a/v1") == ["http://a/v1"]


def _hung() -> LMCallError:
    return LMCallError("did not finish answering within the deadline", reason="deadline")


async def test_a_replica_hung_past_a_requests_deadline_is_taken_out_at_once_and_the_request_goes_on() -> None:
    hung, good = Scripted([_hung()]), Scripted()
    pool = PoolLM([("http://hung/v1", 1.0, hung), ("http://good/v1", 1.0, good)])
    with pytest.warns(EndpointWarning, match=r"http://hung/v1 .* taken out .* after 1 failure .*\(deadline"):
        response = await pool.complete(REQUEST)
    assert response.text == "Score: 4" and (hung.calls, good.calls) == (1, 1)
    assert [s["in"] for s in pool.stats()] == [False, True]
    assert pool.stats()[0]["causes"] == {"deadline": 1}


async def test_requests_sent_before_a_replica_was_taken_out_fail_over_without_lengthening_its_backoff() -> (
    None
):
    hung, good = Scripted([_hung()] * 4, delay=0.02), Scripted()
    pool = PoolLM([("http://hung/v1", 1.0, hung), ("http://good/v1", 1.0, good)], trip_after=1)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", EndpointWarning)
        answers = await asyncio.gather(*(pool.complete(REQUEST) for _ in range(8)))
    assert all(a.text == "Score: 4" for a in answers) and good.calls == 8
    assert hung.calls == 4 and pool.endpoints[0].backoff == 1.0  # one taking-out, not four doublings


async def test_a_run_over_two_healthy_one_hung_one_closing_and_three_dead_replicas_judges_every_item() -> (
    None
):
    from mitigate.lm import Limits
    from tests.support.fault_server import FaultServer

    with (
        StubOpenAIServer(latency=0.005) as a,
        StubOpenAIServer(latency=0.005) as b,
        FaultServer("hang", hold=5.0) as hung,
        FaultServer("close") as closing,
    ):
        urls = [a.base_url, b.base_url, f"{hung.url}/v1", f"{closing.url}/v1"]
        urls += [_closed_port() for _ in range(3)]
        lm = wrap(  # no --timeout: only the deadline tells a hung replica
            get("openai:stub-model", base_url=urls, limits=Limits(deadline=0.5)),
            cache=False,
            retry=RetryPolicy(base_delay=0.01, max_delay=0.1),
        )
        judge = PromptJudge(JudgePrompt.from_template(TEMPLATE), lm)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always", EndpointWarning)
            result = await run(judge, _items(120), concurrency=16, progress=False)
        await lm.aclose()
        pool = lm.inner
        assert isinstance(pool, PoolLM)
        served = a.request_count + b.request_count
    assert result.summary.ok == 120 and result.summary.errors == 0
    assert served == 120 and hung.requests >= 1 and closing.requests >= 1
    stats = {s["url"]: s for s in pool.stats()}
    assert set(stats[urls[2]]["causes"]) == {"deadline"} and set(stats[urls[3]]["causes"]) == {"closed"}
    taken_out = [str(w.message) for w in caught if "taken out" in str(w.message)]
    assert sum("(deadline" in m for m in taken_out) == 1 and sum("(connection" in m for m in taken_out) == 3
