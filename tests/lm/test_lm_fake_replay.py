"""FakeLM (scripted test backend) and ReplayLM / ReplayRecorder."""

from __future__ import annotations

import json

import pytest

from mitigate.errors import CapabilityError, ConfigError, LMCallError, ReplayFormatError, ScriptExhaustedError
from mitigate.lm import Choice, FakeLM, LMRequest, LMResponse, Message, TokenLogprob, Usage
from mitigate.lm._replay import ReplayLM, ReplayRecorder


def req(text: str = "Rate it.", **kw) -> LMRequest:
    return LMRequest(messages=(Message(role="user", content=text),), **kw)


# ---------------------------------------------------------------- FakeLM


async def test_fake_answers_in_order_and_records_every_request():
    lm = FakeLM(["Score: 4", "Score: 2"])
    a = await lm.complete(req("first"))
    b = await lm.complete(req("second"))
    assert (a.text, b.text) == ("Score: 4", "Score: 2")
    assert [r.messages[0].content for r in lm.requests] == ["first", "second"]
    assert lm.remaining == 0 and lm.spec == "fake"


async def test_fake_raises_when_the_script_runs_out():
    lm = FakeLM(["only one"])
    await lm.complete(req())
    with pytest.raises(ScriptExhaustedError) as info:
        await lm.complete(req("the overrun"))
    err = info.value
    assert "scripted with 1 responses" in str(err) and "request #2" in str(err)
    assert err.scripted == 1
    assert err.request.messages[0].content == "the overrun"
    assert len(lm.requests) == 2  # the overrunning request is recorded too


async def test_fake_consumes_n_entries_for_n_samples():
    lm = FakeLM(["1", "2", "3", "4"])
    resp = await lm.complete(req(n=3))
    assert [c.text for c in resp.choices] == ["1", "2", "3"]
    assert lm.remaining == 1


async def test_fake_callable_is_called_once_per_sample():
    seen: list[LMRequest] = []

    def answer(request: LMRequest) -> str:
        seen.append(request)
        return f"Score: {len(seen)}"

    lm = FakeLM(answer)
    resp = await lm.complete(req(n=2, temperature=0.7))
    assert [c.text for c in resp.choices] == ["Score: 1", "Score: 2"]
    assert len(seen) == 2 and len(lm.requests) == 1


async def test_fake_lmresponse_with_n_choices_answers_the_whole_request():
    scripted = LMResponse(choices=(Choice(text="a"), Choice(text="b")), usage=Usage(prompt_tokens=5))
    lm = FakeLM([scripted])
    resp = await lm.complete(req(n=2))
    assert [c.text for c in resp.choices] == ["a", "b"] and resp.usage.prompt_tokens == 5
    assert lm.remaining == 0


async def test_fake_keeps_a_scripted_unknown_cost_unknown():
    lm = FakeLM([LMResponse(choices=(Choice(text="a"),), cost_usd=None), "b", "c"])
    assert (await lm.complete(req())).cost_usd is None
    assert (await lm.complete(req())).cost_usd == 0.0
    mixed = FakeLM(["x", LMResponse(choices=(Choice(text="y"),), cost_usd=None)])
    assert (await mixed.complete(req(n=2))).cost_usd is None


async def test_fake_refuses_logprobs_unless_enabled():
    with pytest.raises(CapabilityError, match="logprobs"):
        await FakeLM(["4"]).complete(req(logprobs=True))
    lm = FakeLM(["42"], logprobs=True)
    resp = await lm.complete(req(top_logprobs=1))
    assert [t.token for t in resp.choices[0].logprobs] == ["4", "2"]
    assert all(t.logprob == 0.0 for t in resp.choices[0].logprobs)


async def test_fake_returns_scripted_logprobs():
    lp = (TokenLogprob(token="4", logprob=-0.1, top=(("4", -0.1), ("5", -2.3))),)
    lm = FakeLM([LMResponse(choices=(Choice(text="4", logprobs=lp),))], logprobs=True)
    resp = await lm.complete(req(top_logprobs=2))
    assert resp.choices[0].logprobs == lp


async def test_fake_applies_stop_sequences():
    resp = await FakeLM(["Score: 4\nReason: short"]).complete(req(stop=("\n",)))
    assert resp.text == "Score: 4"


def test_fake_rejects_a_bare_string_script():
    with pytest.raises(ConfigError, match="wrap it in a list"):
        FakeLM("Score: 4")


# ---------------------------------------------------------------- ReplayLM / ReplayRecorder


async def test_recorder_round_trip_replays_the_same_answers(tmp_path):
    path = tmp_path / "run.jsonl"
    lp = (TokenLogprob(token="3", logprob=-0.2, top=(("3", -0.2),)),)
    inner = FakeLM(
        ["Score: 4", LMResponse(choices=(Choice(text="3", logprobs=lp),), model="m")], logprobs=True
    )
    recorder = ReplayRecorder(inner, path)
    r1 = await recorder.complete(req("item A"))
    r2 = await recorder.complete(req("item B", top_logprobs=1))
    assert recorder.identity() == inner.identity()
    lines = path.read_text().splitlines()
    assert len(lines) == 2 and json.loads(lines[0])["key"] == req("item A").key()

    replay = ReplayLM(path)
    assert (await replay.complete(req("item A"))).text == r1.text
    assert (await replay.complete(req("item B", top_logprobs=1))).choices[0].logprobs == r2.choices[
        0
    ].logprobs
    assert replay.spec == f"replay:{path}"


async def test_recorder_does_not_duplicate_known_requests(tmp_path):
    path = tmp_path / "run.jsonl"
    rec = ReplayRecorder(FakeLM(["x", "y"]), path)
    await rec.complete(req("same"))
    await rec.complete(req("same"))
    rec2 = ReplayRecorder(FakeLM(["z"]), path)  # reopening an existing file extends it
    await rec2.complete(req("same"))
    assert len(path.read_text().splitlines()) == 1


async def test_replay_miss_names_the_request_key(tmp_path):
    path = tmp_path / "run.jsonl"
    path.write_text(json.dumps({"prompt": "known", "response": "Score: 1"}) + "\n")
    replay = ReplayLM(path)
    unknown = req("unknown prompt")
    with pytest.raises(LMCallError) as info:
        await replay.complete(unknown)
    assert unknown.key() in str(info.value)
    assert info.value.key == unknown.key()


async def test_hand_written_lines_match_by_prompt_and_give_samples(tmp_path):
    path = tmp_path / "released.jsonl"
    rows = [
        {"item_id": "d1", "prompt": "Rate doc 1.", "response": "Score: 3"},
        {
            "item_id": "d2",
            "prompt": [{"role": "system", "content": "Judge."}, {"role": "user", "content": "Rate doc 2."}],
            "response": ["Score: 4", "Score: 5"],
        },
    ]
    path.write_text("\n".join(json.dumps(r) for r in rows) + "\n\n")
    replay = ReplayLM(path)
    assert (await replay.complete(req("Rate doc 1.", temperature=0.9, max_tokens=5))).text == "Score: 3"
    two = LMRequest(
        messages=(Message(role="system", content="Judge."), Message(role="user", content="Rate doc 2.")), n=2
    )
    assert [c.text for c in (await replay.complete(two)).choices] == ["Score: 4", "Score: 5"]
    with pytest.raises(LMCallError, match="holds 2 recorded answers; the request asked for n=3"):
        await replay.complete(two.model_copy(update={"n": 3}))
    with pytest.raises(CapabilityError, match="text only"):
        await replay.complete(req("Rate doc 1.", logprobs=True))


@pytest.mark.parametrize(
    ("content", "line", "fragment"),
    [
        ('{"prompt": "a", "response": "1"}\n{not json}\n', 2, "invalid JSON"),
        ('\n\n{"prompt": "a"}\n', 3, '"response"'),
        ("[1, 2]\n", 1, "expected a JSON object; got list"),
        ('{"prompt": 5, "response": "1"}\n', 1, '"prompt"'),
        ('{"prompt": "a", "response": [1]}\n', 1, '"response" of a prompt line'),
        ('{"key": "k", "response": {"choices": "nope"}}\n', 1, "LMResponse"),
        ('{"key": "k", "prompt": "a", "response": "1"}\n', 1, "exactly one of"),
        ('{"prompt": "a", "response": "1"}\n{"prompt": "a", "response": "2"}\n', 2, "line 1"),
    ],
)
def test_malformed_replay_file_names_file_and_line(tmp_path, content, line, fragment):
    path = tmp_path / "bad.jsonl"
    path.write_text(content)
    with pytest.raises(ReplayFormatError) as info:
        ReplayLM(path)
    err = info.value
    assert err.line == line
    assert f"{path}:{line}:" in str(err)
    assert fragment in str(err)


def test_identical_duplicate_lines_are_accepted(tmp_path):
    path = tmp_path / "dup.jsonl"
    path.write_text('{"prompt": "a", "response": "1"}\n{"prompt": "a", "response": "1"}\n')
    assert len(ReplayLM(path)) == 1


def test_missing_replay_file_is_a_format_error(tmp_path):
    with pytest.raises(ReplayFormatError, match="no such file"):
        ReplayLM(tmp_path / "absent.jsonl")
