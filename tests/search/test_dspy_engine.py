"""The DSPy engine against the stub OpenAI server on 127.0.0.1 (through dspy.LM; nothing leaves the machine).

The judge's backend is mitigate's DSPyLM, i.e. ``dspy.LM("openai/stub", api_base=<stub>)``;
MIPROv2's instruction proposer gets a second ``dspy.LM`` pointed at the same stub. The stub
answers the judge prompt like the scripted judge of ``test_search.py`` (right with both good
demos, reversed otherwise) and fills every output field of a DSPy-formatted request.
"""

from __future__ import annotations

import asyncio
import random
import re
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from mitigate import JudgePrompt, PromptJudge
from mitigate.errors import ConfigError
from mitigate.lm import FakeLM
from mitigate.prompt import Demo
from mitigate.search import search
from mitigate.strategies import Demos
from mitigate.testing import StubOpenAIServer
from tests.search_task import GOOD, ID_RE, PROMPT, _human, _split

FIELD_RE = re.compile(r"\d+\. `(\w+)` \(([^)]*)\)")


def _reply() -> Callable[[dict[str, Any]], str]:
    human = _human(_split())

    def reply(body: dict[str, Any]) -> str:
        messages = body["messages"]
        system = messages[0]["content"] if messages[0]["role"] == "system" else ""
        if "[[ ## " in system:  # a DSPy-formatted request (MIPROv2's proposer): fill every output field
            outputs = system.split("Your output fields are:")[1].split("All interactions")[0]
            fields = FIELD_RE.findall(outputs)
            return (
                "".join(
                    f"[[ ## {name} ## ]]\n{'1' if kind in ('float', 'int') else 'Judge with care.'}\n\n"
                    for name, kind in fields
                )
                + "[[ ## completed ## ]]"
            )
        ids = ID_RE.findall(messages[-1]["content"])
        query, demos = ids[-1], set(ids[:-1])
        h = human[query]
        return f"Score: {int(h if demos >= GOOD else 6 - h)}"

    return reply


@pytest.fixture
def server() -> Iterator[StubOpenAIServer]:
    with StubOpenAIServer(latency=0.0, reply=_reply()) as s:
        yield s


def _judge(server: StubOpenAIServer) -> PromptJudge:
    from mitigate.lm import DSPyLM  # dspy (1 s to import) only on the worker that runs these tests

    lm = DSPyLM("openai/stub", api_base=server.base_url, api_key="sk-test")
    return PromptJudge(JudgePrompt.from_template(PROMPT, criterion="coherence"), lm)


def test_labeled_few_shot_demos_map_back_to_demo_objects_with_human_scores(server):
    split = _split()
    result = search(
        _judge(server), split, engine="dspy-labeled", k=2, budget=100, seed=5, n_boot=0, progress=False
    )
    # LabeledFewShot samples with its own fixed Random(0) from the train split we shuffled with the seed
    shuffled = list(split.train)
    random.Random(5).shuffle(shuffled)
    expected = [it.id for it in random.Random(0).sample(shuffled, 2)]
    trial = result.trials[1]
    assert list(trial.demo_ids) == expected
    pipe = Demos.model_validate(trial.pipeline["params"])
    by_id = {it.id: it for it in split.train}
    assert list(pipe.demos) == [Demo.from_item(by_id[i], "coherence") for i in expected]
    # every LM call rendered the judge's own prompt (never DSPy's format) through the stub
    assert all("[[ ## " not in b["messages"][0]["content"] for b in server.bodies)
    shown = [ID_RE.findall(b["messages"][-1]["content"])[:-1] for b in server.bodies]
    assert expected in shown
    assert result.calls_search <= 100 and server.request_count == result.calls_search + result.calls_test


def test_bootstrap_random_search_runs_and_ranks_candidates_from_the_cache(server):
    split = _split()
    result = search(
        _judge(server), split, engine="dspy-bootstrap-rs", k=2, budget=120, n_boot=0, progress=False
    )
    assert result.engine == "dspy-bootstrap-rs" and result.meta["num_candidate_programs"] >= 1
    assert result.calls_search <= 120
    candidates = result.trials[1:]
    assert candidates, "DSPy produced no demo set"
    for t in candidates:
        assert 1 <= len(t.demo_ids) <= 2 and set(t.demo_ids) <= {it.id for it in split.train}
        if result.stopped == "done":
            assert t.calls == 0  # DSPy's own dev evaluation already made exactly these calls
    assert result.best.dev.value == max(t.dev.value for t in result.trials)


def test_bootstrap_random_search_stops_at_the_budget(server):
    result = search(
        _judge(server), _split(), engine="dspy-bootstrap-rs", k=2, budget=40, n_boot=0, progress=False
    )
    assert result.stopped == "budget" and result.calls_search <= 40
    assert result.meta["calls_refused_in_dspy"] > 0


def test_mipro_runs_offline_with_a_prompt_model_on_the_stub(server):
    import dspy

    prompt_model = dspy.LM(
        "openai/stub", api_base=server.base_url, api_key="sk-test", cache=False, num_retries=0
    )
    result = search(
        _judge(server),
        _split(),
        engine="dspy-mipro",
        k=2,
        budget=80,
        prompt_model=prompt_model,
        num_candidates=2,
        num_trials=2,
        n_boot=0,
        progress=False,
    )
    assert result.engine == "dspy-mipro" and result.meta["num_trials"] == 2
    assert result.meta["prompt_model_calls"] >= 1
    assert result.calls_search <= 80
    assert any("[[ ## " in b["messages"][0]["content"] for b in server.bodies)  # the proposer's calls


def test_mipro_borrows_the_dspy_lm_of_the_judge_backend(server):
    result = search(
        _judge(server),
        _split(),
        engine="dspy-mipro",
        k=1,
        budget=60,
        num_candidates=2,
        num_trials=1,
        n_boot=0,
        progress=False,
    )
    assert result.meta["prompt_model_calls"] >= 1


def test_search_entry_point_dispatches_to_dspy(server):
    result = search(
        _judge(server), _split(), engine="dspy-labeled", k=[2], budget=60, n_boot=0, progress=False
    )
    assert result.engine == "dspy-labeled" and len(result.best.demo_ids) in (0, 2)


def test_configuration_errors_are_typed():
    judge = PromptJudge(JudgePrompt.from_template(PROMPT, criterion="coherence"), FakeLM([]))
    with pytest.raises(ConfigError, match="'engine' parameter of search"):
        search(judge, _split(), engine="dspy-copro", progress=False)
    with pytest.raises(ConfigError, match="needs prompt_model"):
        search(judge, _split(), engine="dspy-mipro", progress=False)
    with pytest.raises(ConfigError, match="'k' parameter of search asks for 7 demos"):
        search(judge, _split(), engine="dspy-labeled", k=7, progress=False)


def test_program_copies_share_the_backend_and_keep_their_own_demos():
    import dspy

    from mitigate.search.engines._dspy_program import JudgeProgram, ProgramContext

    ctx = ProgramContext.__new__(ProgramContext)
    program = JudgeProgram(ctx, "Rate it.")
    clone = program.deepcopy()
    assert clone.context is ctx and clone.predict is not program.predict
    clone.predict.demos = [dspy.Example(item_id="g1", text="t", score=2.0)]
    assert program.predict.demos == []


def test_cli_search_runs_the_dspy_engine(server, tmp_path, monkeypatch):
    import json

    from typer.testing import CliRunner

    from mitigate.cli import app

    monkeypatch.setenv("MITIGATE_CACHE_DIR", str(tmp_path / "cache"))
    split = _split()
    rows = [
        {"id": it.id, "output": it.output, "human": it.human}
        for it in (*split.train, *split.dev, *split.test)
    ]
    (tmp_path / "bench.jsonl").write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    (tmp_path / "prompt.txt").write_text(PROMPT)
    out = tmp_path / "spec.json"
    result = CliRunner().invoke(
        app,
        [
            "search",
            "-b",
            f"jsonl:{tmp_path / 'bench.jsonl'}",
            "-c",
            "coherence",
            "--prompt",
            str(tmp_path / "prompt.txt"),
            "--backend",
            "openai:stub",
            "--base-url",
            server.base_url,
            "--engine",
            "dspy-labeled",
            "--budget",
            "60",
            "--n-boot",
            "0",
            "--no-progress",
            "--out",
            str(out),
        ],
    )
    assert result.exit_code == 0, result.output
    saved = json.loads(out.read_text())
    assert saved["search"]["engine"] == "dspy-labeled" and saved["search"]["calls_search"] <= 60


def test_dspy_backend_takes_base_url_like_the_other_backends():
    from mitigate.lm import DSPyLM, LMRequest, Message, get

    with StubOpenAIServer(latency=0.0, reply="Score: 3") as server:
        lm = get("dspy:openai/stub", base_url=server.base_url, api_key="sk-test")
        assert lm.api_base == server.base_url.rstrip("/")
        request = LMRequest(messages=(Message(role="user", content="Rate this."),), max_tokens=8)
        reply = asyncio.run(lm.complete(request))
        assert server.request_count == 1 and reply.choices[0].text == "Score: 3"
    with pytest.raises(ConfigError, match="takes one server URL"):
        DSPyLM("openai/stub", api_base="http://a", base_url="http://b")
