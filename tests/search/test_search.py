"""The demonstration search: a scripted judge whose accuracy depends on the demos it is shown.

The FakeLM below answers the human score exactly when both "good" demos (g1, g2) are in the
prompt, gets half the items right with one of them, and answers the reversed score with
neither, so the search has exactly one best pair to find.
"""

from __future__ import annotations

import asyncio
import json
import math
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from mitigate import Item, JudgePrompt, PromptJudge
from mitigate.cli import app
from mitigate.data import Split, split_items
from mitigate.errors import ConfigError, NotRecommendedWarning
from mitigate.lm import BudgetExhaustedError, CallBudget, FakeLM, LMRequest, Message
from mitigate.registry import names
from mitigate.report import plot_search
from mitigate.search import Objective, asearch, engine_from, instrument, judgment_score, search
from mitigate.search.engines._greedy import GreedyEngine
from mitigate.selectors import KNN, HighestRS, Random, Stratified
from mitigate.strategies import (
    Demos,
    PerItemDemosPreset,
    PerturbedDemosPreset,
    PerturbedGuidelines,
    load_pipeline,
    parse_pipeline,
)
from mitigate.strategies._edits import DEFAULT_HINT
from mitigate.testing import StubOpenAIServer
from tests.search_task import GOOD, ID_RE, PROMPT, _human, _split


def scripted(split: Split) -> FakeLM:
    human = _human(split)

    def answer(request: LMRequest) -> str:
        ids = ID_RE.findall(request.messages[-1].content)
        query, demos = ids[-1], set(ids[:-1])
        h = human[query]
        good = len(demos & GOOD)
        right = good == 2 or (good == 1 and int(query[1:]) % 2 == 0)
        return f"Score: {int(h if right else 6 - h)}"

    return FakeLM(answer)


def _judge(lm: FakeLM) -> PromptJudge:
    return PromptJudge(JudgePrompt.from_template(PROMPT, criterion="coherence"), lm)


def _demo_ids(request: LMRequest) -> list[str]:
    return ID_RE.findall(request.messages[-1].content)[:-1]


def test_random_search_finds_the_best_pair_and_reports_dev_and_held_out_test():
    split = _split()
    fake = scripted(split)
    result = search(_judge(fake), split, k=2, budget=400, n_boot=200, progress=False)
    assert set(result.best.demo_ids) == GOOD
    assert result.dev.value == pytest.approx(1.0)
    assert result.baseline_dev.value == pytest.approx(-1.0)
    assert result.test.value == pytest.approx(1.0) and result.baseline_test.value == pytest.approx(-1.0)
    assert result.test_gain.value == pytest.approx(2.0)
    assert result.test.ci_low is not None and result.test.ci_low <= result.test.value <= result.test.ci_high
    # 6 train items give 15 distinct pairs: each evaluated once, then the draws run dry
    assert result.stopped == "exhausted" and len(result.trials) == 16
    assert result.split["test"] == tuple(it.id for it in split.test)
    assert fake.calls == result.calls_search + result.calls_test == 16 * 10 + 2 * 10


def test_search_stops_at_the_budget_counted_in_lm_calls():
    split = _split()
    fake = scripted(split)
    result = search(_judge(fake), split, k=2, budget=45, n_boot=0, progress=False)
    assert result.stopped == "budget"
    assert result.calls_search <= 45 and len(result.trials) == 4  # baseline + 3 candidates of 10 calls
    search_requests = fake.requests[: result.calls_search]
    assert len(search_requests) == result.calls_search
    assert fake.calls == result.calls_search + result.calls_test


def test_a_budget_spent_on_the_baseline_alone_says_no_demo_set_was_tried_and_the_budget_that_tries_one():
    split = _split()
    result = search(_judge(scripted(split)), split, k=2, budget=15, n_boot=0, progress=False)
    assert len(result.trials) == 1 and result.stopped == "budget"
    assert "no demo set was tried" in result.verdict() and "a budget of 20 or more" in result.verdict()


def test_budget_smaller_than_the_baseline_is_a_config_error():
    split = _split()
    with pytest.raises(ConfigError, match="cannot cover even the baseline"):
        search(_judge(scripted(split)), split, budget=5, progress=False)


def test_a_repeated_search_retraces_the_same_trials_from_the_cache(tmp_path):
    split = _split()
    first = scripted(split)
    before = search(_judge(first), split, budget=60, n_boot=0, progress=False, cache=tmp_path / "c.sqlite")
    assert first.calls == 60 + 20
    assert before.calls_search == 60 and before.calls_backend == 60
    again = scripted(split)
    # the budget counts requests whether the cache answers them or not, so a warm cache gives the same search
    result = search(_judge(again), split, budget=60, n_boot=0, progress=False, cache=tmp_path / "c.sqlite")
    assert again.calls == 0
    assert [t.demo_ids for t in result.trials] == [t.demo_ids for t in before.trials]
    assert [t.calls for t in result.trials] == [t.calls for t in before.trials]
    assert result.best.demo_ids == before.best.demo_ids and result.test.value == before.test.value
    assert result.calls_search == 60 and result.calls_backend == 0


def test_a_request_repeated_within_a_search_counts_once():
    budget = CallBudget(2)
    budget.take("a")
    budget.take("a")
    budget.take("b")
    assert budget.used == 2
    budget.take("b")  # seen before: free even at the limit
    with pytest.raises(BudgetExhaustedError, match="budget of 2 LM calls is spent"):
        budget.take("c")
    assert budget.refused == 1 and budget.exhausted


def test_greedy_search_adds_the_demo_that_helps_most_at_each_step():
    split = _split()
    fake = scripted(split)
    result = search(
        _judge(fake), split, engine="greedy", k=2, budget=400, n_candidates=6, n_boot=0, progress=False
    )
    assert set(result.best.demo_ids) == GOOD
    # step 1 tries the 6 candidates alone; step 2 adds each of the 5 others to the best single one
    assert len(result.trials) == 1 + 6 + 5
    assert result.stopped == "done"
    assert result.best.label.startswith("greedy: step 2")


def test_saved_spec_rebuilds_the_winning_prompt(tmp_path):
    split = _split()
    result = search(_judge(scripted(split)), split, budget=400, n_boot=0, progress=False)
    path = result.save_pipeline(tmp_path / "spec.json")
    saved = json.loads(path.read_text())
    assert saved["pipeline"]["name"] == "demos" and saved["pipeline"]["params"]["selector"] is None
    assert saved["search"]["demo_ids"] == list(result.best.demo_ids)
    with pytest.warns(NotRecommendedWarning):  # 10 test items, no interval: not established, still loadable
        pipe = load_pipeline(path)
    assert isinstance(pipe, Demos) and pipe.display == "plain" and pipe.selector is None
    assert [d.item.id for d in pipe.demos] == list(result.best.demo_ids)
    assert {(d.item.id, d.score) for d in pipe.demos} == {("g1", 2.0), ("g2", 5.0)}  # human scores shown
    fresh = scripted(split)
    judged = pipe.wrap(_judge(fresh))
    j = asyncio.run(judged.judge(split.test[0]))
    assert set(_demo_ids(fresh.requests[0])) == GOOD
    assert judgment_score(j, "coherence") == split.test[0].human["coherence"]


def test_search_over_perturbation_templates_can_save_perturbed_demos():
    split = _split()
    fake = scripted(split)
    template = PerturbedDemosPreset(kind="order", n=2).build()
    result = search(_judge(fake), split, budget=600, perturbations=[template], n_boot=0, progress=False)
    pipe = result.pipeline()
    assert isinstance(pipe, Demos) and pipe.display == "perturbed" and pipe.k == 2 and pipe.n == 2
    assert {d.item.id for d in pipe.demos} == GOOD


def test_consistency_term_wraps_the_judge_in_perturbed_guidelines():
    split = _split()
    fake = scripted(split)
    objective = Objective(consistency_weight=0.5)
    result = search(
        _judge(fake),
        split,
        budget=30,
        objective=objective,
        max_trials=1,
        n_boot=0,
        probe=PerturbedGuidelines(kind="order", n=1),
        progress=False,
    )
    # one perturbed child per item: 2 calls per dev item
    assert result.trials[0].calls == 2 * len(split.dev)
    assert result.baseline_dev.consistency is not None
    # the script ignores the guideline order
    assert result.baseline_dev.consistency.value == pytest.approx(1.0)
    assert result.baseline_dev.value == pytest.approx(-1.0 + 0.5)


def test_knn_candidates_are_per_item_demo_judges():
    split = _split()
    fake = scripted(split)
    result = search(_judge(fake), split, selectors=[KNN()], budget=100, n_boot=0, progress=False)
    assert len(result.trials) == 2  # baseline and the one KNN candidate
    assert result.trials[1].pipeline["name"] == "demos" and result.trials[1].pipeline["params"]["per_item"]
    assert isinstance(result.trials[1].pipeline["params"]["selector"], dict)


class LengthLM(FakeLM):
    """A likelihood backend for tests: LS = minus the continuation's length."""

    async def loglikelihood(self, context: str, continuation: str) -> float:
        return -float(len(continuation))


def test_unfitted_highest_rs_is_fitted_on_the_train_split_within_the_budget():
    split = _split()
    fake = scripted(split)
    result = search(
        _judge(fake),
        split,
        selectors=[HighestRS()],
        likelihood=LengthLM([]),
        budget=100,
        n_boot=0,
        progress=False,
    )
    assert len(result.trials) == 2 and result.trials[1].selector == "highest-rs"
    assert result.calls_search == 10 + 6 + 10  # baseline on dev, the train split judged for US, the candidate
    human = _human(split)
    expected = (
        HighestRS()
        .fit(
            list(split.train),
            criterion="coherence",
            ls={it.id: -float(len(it.output)) for it in split.train},
            judge_scores={it.id: 6 - human[it.id] for it in split.train},
        )
        .select(2)
    )
    assert list(result.trials[1].demo_ids) == [d.item.id for d in expected]


def test_bias_term_needs_ls_and_uses_it():
    split = _split()
    with pytest.raises(ConfigError, match="needs LS"):
        search(
            _judge(scripted(split)), split, objective=Objective(bias_weight=1.0), budget=50, progress=False
        )
    ls = {it.id: -float(i) for i, it in enumerate((*split.dev, *split.test))}
    result = search(
        _judge(scripted(split)),
        split,
        objective=Objective(bias_weight=1.0),
        ls=ls,
        budget=40,
        max_trials=2,
        n_boot=0,
        progress=False,
    )
    assert result.baseline_dev.bias is not None and math.isfinite(result.baseline_dev.bias.value)


def test_split_items_is_seeded_grouped_and_disjoint():
    items = [
        Item(id=f"x{i}", doc_id=f"doc{i // 3}", output="t", human={"c": float(i % 5)}) for i in range(30)
    ]
    a = split_items(items, seed=1, criterion="c")
    b = split_items(items, seed=1, criterion="c")
    assert a == b and a != split_items(items, seed=2, criterion="c")
    ids = a.ids()
    assert not set(ids["train"]) & set(ids["dev"]) and not set(ids["dev"]) & set(ids["test"])
    assert sum(len(v) for v in ids.values()) == 30
    docs = [{it.doc_id for it in part} for part in (a.train, a.dev, a.test)]
    assert not docs[0] & docs[1] and not docs[1] & docs[2] and not docs[0] & docs[2]


async def test_asearch_runs_inside_an_event_loop_and_search_refuses_to():
    split = _split()
    result = await asearch(_judge(scripted(split)), split, budget=30, n_boot=0, progress=False)
    assert result.calls_search <= 30
    with pytest.raises(ConfigError, match="running one"):
        search(_judge(scripted(split)), split, budget=30, progress=False)


def test_selectors_default_to_random_and_stratified_and_unknown_engine_errors():
    split = _split()
    result = search(_judge(scripted(split)), split, budget=30, n_boot=0, progress=False)
    assert result.meta["selectors"][0].startswith("random") and result.meta["selectors"][1].startswith(
        "stratified"
    )
    with pytest.raises(ConfigError, match="'engine' parameter of search"):
        search(_judge(scripted(split)), split, engine="annealing", progress=False)  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match="'k' parameter of search"):
        search(_judge(scripted(split)), split, k=0, progress=False)
    assert [type(s) for s in (Random(), Stratified())] == [Random, Stratified]
    assert PerItemDemosPreset.registry_name == "per-item-demos"


# --------------------------------------------------------------------------- CLI


def _write_bench(tmp_path: Path) -> Path:
    split = _split()
    rows = [
        {"id": it.id, "output": it.output, "human": it.human}
        for it in (*split.train, *split.dev, *split.test)
    ]
    path = tmp_path / "bench.jsonl"
    path.write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    (tmp_path / "prompt.txt").write_text(PROMPT)
    return path


def _server_reply(split: Split) -> Callable[[dict[str, Any]], str]:
    human = _human(split)

    def reply(body: dict[str, Any]) -> str:
        ids = ID_RE.findall(body["messages"][-1]["content"])
        query, demos = ids[-1], set(ids[:-1])
        h = human[query]
        return f"Score: {int(h if demos >= GOOD else 6 - h)}"

    return reply


def test_cli_search_writes_a_spec_that_judge_pipeline_loads(tmp_path, monkeypatch):
    monkeypatch.setenv("MITIGATE_CACHE_DIR", str(tmp_path / "cache"))
    bench = _write_bench(tmp_path)
    spec = tmp_path / "spec.json"
    with StubOpenAIServer(latency=0.0, reply=_server_reply(_split())) as server:
        common = [
            "-b",
            f"jsonl:{bench}",
            "-c",
            "coherence",
            "--prompt",
            str(tmp_path / "prompt.txt"),
            "--backend",
            "openai:stub-model",
            "--base-url",
            server.base_url,
            "--no-progress",
        ]
        found = CliRunner().invoke(
            app,
            [
                "search",
                *common,
                "--budget",
                "400",
                "--splits",
                "0.25,0.4,0.35",
                "--seed",
                "3",
                "--n-boot",
                "50",
                "--out",
                str(spec),
            ],
        )
        assert found.exit_code == 0, found.output
        assert "test  winner" in found.stdout and spec.is_file()
        assert spec.with_suffix(".png").is_file()  # the search plot beside the spec
        saved = json.loads(spec.read_text())
        assert saved["search"]["calls_search"] <= 400
        demo_ids = saved["search"]["demo_ids"]
        server.reset()
        judged = CliRunner().invoke(
            app, ["judge", *common, "--limit", "2", "--pipeline", f"@{spec}", "--no-cache"]
        )
        assert judged.exit_code == 0, judged.output
        assert server.request_count == 2
        for body in server.bodies:
            assert ID_RE.findall(body["messages"][-1]["content"])[:-1] == demo_ids


def test_cli_judge_pipeline_rejects_a_missing_file(tmp_path):
    bench = _write_bench(tmp_path)
    result = CliRunner().invoke(
        app,
        [
            "judge",
            "-b",
            f"jsonl:{bench}",
            "-c",
            "coherence",
            "--prompt",
            str(tmp_path / "prompt.txt"),
            "--backend",
            "openai:m",
            "--base-url",
            "http://127.0.0.1:9/v1",
            "--pipeline",
            f"@{tmp_path / 'nope.json'}",
        ],
    )
    assert result.exit_code == 2 and "does not exist" in result.output
    bare = CliRunner().invoke(
        app,
        [
            "judge",
            "-b",
            f"jsonl:{bench}",
            "-c",
            "coherence",
            "--prompt",
            str(tmp_path / "prompt.txt"),
            "--backend",
            "openai:m",
            "--base-url",
            "http://127.0.0.1:9/v1",
            "--pipeline",
            "spec.json",
        ],
    )
    assert bare.exit_code == 2 and "write @spec.json to load a spec file" in bare.output


def test_cli_search_rejects_an_unknown_consistency_mode_and_a_negative_limit(tmp_path):
    bench = _write_bench(tmp_path)
    result = CliRunner().invoke(
        app,
        [
            "search",
            "-b",
            f"jsonl:{bench}",
            "-c",
            "coherence",
            "--prompt",
            str(tmp_path / "prompt.txt"),
            "--backend",
            "openai:m",
            "--base-url",
            "http://127.0.0.1:9/v1",
            "--consistency-weight",
            "1",
            "--consistency",
            "share",
            "--no-progress",
        ],
    )
    assert result.exit_code == 2
    assert "consistency" in result.output and "kappa" in result.output and "share" in result.output
    negative = CliRunner().invoke(
        app,
        [
            "search",
            "-b",
            f"jsonl:{bench}",
            "-c",
            "coherence",
            "--prompt",
            str(tmp_path / "prompt.txt"),
            "--backend",
            "openai:m",
            "--base-url",
            "http://127.0.0.1:9/v1",
            "--limit",
            "-3",
            "--no-progress",
        ],
    )
    assert negative.exit_code == 2 and "'--limit'" in negative.output and "Got -3" in negative.output


def test_without_a_cache_a_repeated_request_counts_again(tmp_path):
    request = LMRequest(messages=(Message(role="user", content="Rate g1"),), max_tokens=4)
    for cache, expected in ((False, 2), (tmp_path / "c.sqlite", 1)):
        budget = CallBudget(None)
        fake = FakeLM(["Score: 3", "Score: 3"])
        judge, opened = instrument(_judge(fake), budget, cache=cache)
        lm = judge.leaves()[0].lm
        asyncio.run(lm.complete(request))
        asyncio.run(lm.complete(request))
        for c in opened:
            c.close()
        assert budget.used == expected, cache
        assert budget.backend == len(fake.requests) == expected


def test_cli_search_limit_takes_whole_documents_in_order(tmp_path):
    rows = [
        {
            "id": f"{sys_}/{d}",
            "system": sys_,
            "doc_id": f"doc{d}",
            "output": f"text {sys_} {d}",
            "human": {"coherence": float(1 + (d + (sys_ == "B")) % 5)},
        }
        for sys_ in ("A", "B")
        for d in range(6)
    ]  # system-major, as benchmarks are often stored
    bench = tmp_path / "bench.jsonl"
    bench.write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    (tmp_path / "prompt.txt").write_text(
        "Rate this text from 1 to 5.\n\n{{summary}}\n\nReply with 'Score: N'."
    )
    spec = tmp_path / "spec.json"
    with StubOpenAIServer(latency=0.0, reply=lambda body: f"Score: {len(str(body)) % 5 + 1}") as server:
        result = CliRunner().invoke(
            app,
            [
                "search",
                "-b",
                f"jsonl:{bench}",
                "-c",
                "coherence",
                "--prompt",
                str(tmp_path / "prompt.txt"),
                "--backend",
                "openai:m",
                "--base-url",
                server.base_url,
                "--limit",
                "8",
                "--budget",
                "20",
                "--n-boot",
                "0",
                "--no-cache",
                "--no-progress",
                "--out",
                str(spec),
            ],
        )
    assert result.exit_code == 0, result.output
    used = {i for ids in json.loads(spec.read_text())["search"]["split"].values() for i in ids}
    assert used == {f"{s}/{d}" for s in ("A", "B") for d in range(4)}  # the first 4 documents, both systems


def test_search_plot_shows_every_trial_including_undefined_ones(tmp_path):
    import matplotlib.image

    split = _split()
    result = search(_judge(scripted(split)), split, budget=60, n_boot=50, progress=False, cache=False)
    undefined = result.trials[1].model_copy(
        update={"dev": result.trials[1].dev.model_copy(update={"value": math.nan, "reason": "constant"})}
    )
    broken = result.model_copy(update={"trials": (result.trials[0], undefined, *result.trials[2:])})
    for r, name in ((result, "a.png"), (broken, "b.png")):
        path = plot_search(r, tmp_path / "plots" / name)
        image = matplotlib.image.imread(path)
        assert image.shape[0] == 400 and image.shape[1] == 1100  # 11 x 4 inches at 100 dpi


def test_search_trial_points_keep_undefined_trials_and_the_best_so_far():
    from mitigate.report._plots import search_trial_points

    ok, bad, best = search_trial_points([math.nan, 0.2, math.nan, 0.5, 0.1])
    assert ok == [(1, 0.2), (3, 0.5), (4, 0.1)] and bad == [0, 2]
    assert math.isnan(best[0]) and best[1:] == [0.2, 0.2, 0.5, 0.5]


def test_a_saved_spec_keeps_the_mitigations_the_searched_judge_was_wrapped_in(tmp_path):
    split = _split()
    before = parse_pipeline("consistency-hint")
    result = search(before.wrap(_judge(scripted(split))), split, budget=400, n_boot=0, progress=False)
    path = result.save_pipeline(tmp_path / "spec.json", before=before)
    with pytest.warns(NotRecommendedWarning):
        pipe = parse_pipeline(f"@{path}")
    assert [s.registry_name for s in pipe.steps] == ["consistency-hint", "demos"] and pipe.steps[1].demos
    fresh = scripted(split)
    asyncio.run(pipe.wrap(_judge(fresh)).judge(split.test[0]))
    assert DEFAULT_HINT in fresh.requests[0].messages[-1].content
    assert set(_demo_ids(fresh.requests[0])) == GOOD
    plain = result.save_pipeline(tmp_path / "plain.json")
    assert json.loads(plain.read_text())["pipeline"]["name"] == "demos"


def test_engines_come_from_the_registry_and_take_their_own_options():
    assert names("engine") == ["random", "greedy", "dspy-labeled", "dspy-bootstrap-rs", "dspy-mipro"]
    assert engine_from("greedy", {"n_candidates": 3}) == GreedyEngine(n_candidates=3)
    with pytest.raises(
        ConfigError,
        match=r"engine 'random' has no parameter 'n_candidates'; expected some of "
        r"\['max_trials'\]",
    ):
        engine_from("random", {"n_candidates": 3})
    with pytest.raises(
        ConfigError, match="The 'max_trials' parameter of engine 'random' must be an int >= 1 or None"
    ):
        engine_from("random", {"max_trials": 0})
    split = _split()
    with pytest.raises(ConfigError, match="chooses demos its own way; expected no selectors="):
        search(_judge(scripted(split)), split, engine="dspy-labeled", selectors=[Random()], progress=False)


def test_cli_search_takes_a_pipeline_and_saves_it_before_the_winner(tmp_path, monkeypatch):
    monkeypatch.setenv("MITIGATE_CACHE_DIR", str(tmp_path / "cache"))
    bench = _write_bench(tmp_path)
    spec = tmp_path / "spec.json"
    with StubOpenAIServer(latency=0.0, reply=_server_reply(_split())) as server:
        common = [
            "-b",
            f"jsonl:{bench}",
            "-c",
            "coherence",
            "--prompt",
            str(tmp_path / "prompt.txt"),
            "--backend",
            "openai:stub-model",
            "--base-url",
            server.base_url,
            "--no-progress",
        ]
        found = CliRunner().invoke(
            app,
            [
                "search",
                *common,
                "--budget",
                "60",
                "--n-boot",
                "0",
                "--no-plot",
                "--pipeline",
                "consistency-hint",
                "--out",
                str(spec),
            ],
        )
        assert found.exit_code == 0, found.output
        assert all(DEFAULT_HINT in b["messages"][-1]["content"] for b in server.bodies)
        saved = json.loads(spec.read_text())["pipeline"]
        assert saved["name"] == "pipeline" and saved["steps"][0]["name"] == "consistency-hint"
        bad = CliRunner().invoke(app, ["search", *common, "--pipeline", "nope"])
        assert bad.exit_code == 2 and "unknown mitigation 'nope'" in bad.output


# ----------------------------------------------------------------------------- an honest verdict on test


@pytest.fixture(scope="module")
def found():
    split = _split()
    return search(_judge(scripted(split)), split, k=2, budget=400, n_boot=100, progress=False, cache=False)


def _with(result, gain, *, test_items: int = 40, documents: int | None = 8):
    from mitigate.search import Gain

    low, high = (None, None) if len(gain) == 1 else gain[1:]
    split = {**result.split, "test": tuple(f"e{i}" for i in range(test_items))}
    return result.model_copy(
        update={
            "test_gain": Gain(value=gain[0], ci_low=low, ci_high=high, n=test_items),
            "split": split,
            "test_documents": documents,
        }
    )


@pytest.mark.parametrize(
    ("gain", "why"),
    [
        ((-0.4, -2.0, 2.0), "the test gain is -0.400"),
        ((math.nan,), "the test gain is undefined"),
        ((0.0, -0.1, 0.1), "the test gain is +0.000"),
        ((0.3, -0.1, 0.5), "interval [-0.100, +0.500] includes 0"),
        ((0.3,), "no interval (n_boot=0)"),
    ],
)
def test_a_winner_that_does_not_beat_the_baseline_on_test_is_saved_as_no_demo_set_beat_it(
    found, tmp_path, gain, why
):
    from mitigate.search._result import NO_WINNER

    result = _with(found, gain)
    assert not result.beats_baseline
    assert result.verdict().startswith(NO_WINNER) and why in result.verdict()
    assert f"verdict: {NO_WINNER}" in result.summary()
    path = result.save_pipeline(tmp_path / "spec.json")
    saved = json.loads(path.read_text())
    assert saved["verdict"].startswith(NO_WINNER) and saved["search"]["beats_baseline"] is False
    with pytest.warns(NotRecommendedWarning, match=NO_WINNER):
        load_pipeline(path)


def test_a_winner_with_a_gain_whose_interval_excludes_0_on_enough_test_data_is_recommended(found, tmp_path):
    import warnings

    result = _with(found, (0.3, 0.1, 0.5))
    assert result.beats_baseline and result.warnings() == []
    assert result.verdict().startswith("the winner") and "warning:" not in result.summary()
    path = result.save_pipeline(tmp_path / "spec.json")
    assert json.loads(path.read_text())["search"]["beats_baseline"] is True
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        load_pipeline(path)


@pytest.mark.parametrize(
    ("items", "documents", "warned"),
    [(29, 8, "only 29 test items"), (40, 4, "from 4 documents, fewer than 5"), (12, 1, "only 12 test items")],
)
def test_too_few_test_items_or_documents_warn_and_no_gain_is_claimed_on_them(found, items, documents, warned):
    result = _with(found, (0.3, 0.1, 0.5), test_items=items, documents=documents)
    assert any(warned in w for w in result.warnings())
    assert not result.beats_baseline and "rests on too little test data" in result.verdict()
    assert f"warning: {result.warnings()[0]}" in result.summary()


def test_cli_search_on_a_few_items_names_no_winner_and_prints_no_use_it_line(tmp_path, monkeypatch):
    monkeypatch.setenv("MITIGATE_CACHE_DIR", str(tmp_path / "cache"))
    bench = _write_bench(tmp_path)
    spec = tmp_path / "spec.json"
    with StubOpenAIServer(latency=0.0, reply=_server_reply(_split())) as server:
        done = CliRunner().invoke(
            app,
            [
                "search",
                "-b",
                f"jsonl:{bench}",
                "-c",
                "coherence",
                "--prompt",
                str(tmp_path / "prompt.txt"),
                "--backend",
                "openai:stub-model",
                "--base-url",
                server.base_url,
                "--no-progress",
                "--budget",
                "400",
                "--splits",
                "0.25,0.4,0.35",
                "--seed",
                "3",
                "--n-boot",
                "50",
                "--out",
                str(spec),
                "--no-plot",
            ],
        )
    assert done.exit_code == 0, done.output
    assert "use it with" not in done.output
    assert "no demo set beat the baseline on test" in done.output and "warning: only" in done.output
    assert json.loads(spec.read_text())["search"]["beats_baseline"] is False


def test_cli_search_closes_its_http_session(tmp_path):
    import os
    import subprocess
    import sys

    bench = _write_bench(tmp_path)
    env = {
        **os.environ,
        "PYTHONPATH": str(Path(__file__).resolve().parents[2]),
        "MITIGATE_CACHE_DIR": str(tmp_path / "cache"),
        "PYTHONWARNINGS": "default",
    }
    with StubOpenAIServer(latency=0.0, reply=_server_reply(_split())) as server:
        done = subprocess.run(
            [
                sys.executable,
                "-m",
                "mitigate",
                "search",
                "-b",
                f"jsonl:{bench}",
                "-c",
                "coherence",
                "--prompt",
                str(tmp_path / "prompt.txt"),
                "--backend",
                "openai:stub-model",
                "--base-url",
                server.base_url,
                "--transport",
                "direct",
                "--no-progress",
                "--budget",
                "60",
                "--n-boot",
                "20",
                "--out",
                str(tmp_path / "spec.json"),
                "--no-plot",
            ],
            capture_output=True,
            text=True,
            env=env,
            timeout=300,
        )
    assert done.returncode == 0, done.stderr
    assert server.request_count > 0
    assert "Unclosed" not in done.stderr, done.stderr
