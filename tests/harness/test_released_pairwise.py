"""Released pairwise judges (LLMBar, JudgeBench, FairEval): loaders, reading the raw answers, recorded runs,
compare.

Every test runs on the hand-written copies under ``tests/fixtures/released/`` (our own text in
the releases' layouts); none needs the releases themselves.
"""

from __future__ import annotations

import asyncio
import json
import shutil
from pathlib import Path

import pytest

from mitigate.data import (
    RELEASE_CRITERION,
    benchmark_names,
    load,
    read_judgebench,
    read_llmbar,
    split_release_spec,
)
from mitigate.data._faireval import load_faireval
from mitigate.data._judgebench import category, load_judgebench
from mitigate.data._llmbar import LLMBAR_SETS, load_llmbar
from mitigate.errors import ConfigError, DataError
from mitigate.harness import Entry, compare
from mitigate.measures import position_consistency
from mitigate.replay import RecordedJudge, load_released_pairwise
from mitigate.replay._released_pairwise import parse_release, parse_report, recorded_runs

FIX = Path(__file__).parents[1] / "fixtures" / "released"
LLMBAR, JUDGEBENCH, FAIREVAL = FIX / "llmbar", FIX / "judgebench", FIX / "faireval"
NATURAL = "LLMBar/Natural"


def _rows(run, item_id):  # the recorded rows of one item, by order
    return {r.order: r for r in run.get(item_id, RELEASE_CRITERION).rows}


# ---------------------------------------------------------------------------------------------- LLMBar


def test_llmbar_benchmark_holds_pairs_with_gold_from_the_label():
    bench = load_llmbar(LLMBAR)
    assert bench.pairwise and bench.criteria == (RELEASE_CRITERION,)
    assert [i.id for i in bench.items][:3] == [f"{NATURAL}/0", f"{NATURAL}/1", f"{NATURAL}/2"]
    first = bench.items[0]
    assert first.output == "A banana." and first.output_b == "A cucumber is green."
    assert first.inputs == {"input": "Name a fruit that is yellow."}
    assert [i.preference[RELEASE_CRITERION] for i in bench.items] == ["A", "B", "A", "B"]


def test_llmbar_sets_default_to_llmbar_proper_and_a_set_folder_reads_that_set_alone():
    sets = sorted({item.id.rsplit("/", 1)[0] for item in load_llmbar(LLMBAR).items})
    assert sets == ["LLMBar/Adversarial/Manual", NATURAL]
    assert set(sets) <= set(LLMBAR_SETS)
    only = load_llmbar(LLMBAR / "Dataset" / "LLMBar" / "Natural")
    assert len(only) == 3 and only.items[0].id == f"{NATURAL}/0"
    assert len(load_llmbar(LLMBAR, sets=["LLMBar/Adversarial/Manual"])) == 1


def test_llmbar_loads_by_name_through_the_benchmark_registry():
    assert "llmbar:<path>" in benchmark_names() and "judgebench:<path>" in benchmark_names()
    assert len(load(f"llmbar:{LLMBAR}")) == 4
    with pytest.raises(DataError, match="expected a path after 'llmbar:'"):
        load("llmbar:")


def test_llmbar_unknown_set_and_missing_folder_are_one_line_errors():
    with pytest.raises(DataError, match=r"expected LLMBar sets among .*; got \['Nope'\]"):
        load_llmbar(LLMBAR, sets=["Nope"])
    with pytest.raises(DataError, match="does not exist"):
        load_llmbar(LLMBAR / "missing")


def test_llmbar_bad_label_names_the_file_and_instance(tmp_path):
    folder = tmp_path / "Dataset" / "LLMBar" / "Natural"
    folder.mkdir(parents=True)
    (folder / "dataset.json").write_text(
        json.dumps([{"input": "x", "output_1": "a", "output_2": "b", "label": 3}])
    )
    with pytest.raises(DataError, match=r"dataset.json: instance 0: expected 'label' 1 or 2; got 3"):
        load_llmbar(tmp_path)


def test_llmbar_release_keeps_every_raw_answer_with_the_release_reading():
    release = read_llmbar(LLMBAR)
    assert set(release.judges) == {"GPT-4/CoT", "GPT-4/Rating", "GPT-4/Swap", "GPT-4/Vanilla"}
    vanilla = [a for a in release.answers if a.judge == "GPT-4/Vanilla"]
    assert len(vanilla) == 6 and {a.order for a in vanilla} == {"original", "swapped"}
    failed = next(a for a in vanilla if a.item_id == f"{NATURAL}/2" and a.order == "original")
    assert failed.raw == "I like neither of them." and failed.release_verdict is None
    assert release.release_stats[f"{NATURAL}|GPT-4/Vanilla"]["equal"].startswith("1 / 3")
    # only the templates an answer was given under (the config's auxiliary calls judge nothing)
    assert set(release.templates) == {
        "comparison/Vanilla.txt",
        "comparison/CoT.txt",
        "swap_and_synthesize/Swap.txt",
        "rating/Rating.txt",
    }


def test_llmbar_swap_strategy_rests_on_its_second_call_when_the_first_disagreed():
    release = read_llmbar(LLMBAR, judges="GPT-4/Swap")
    item1 = [a for a in release.answers if a.item_id == f"{NATURAL}/1"]
    assert sorted((a.stage, a.final) for a in item1) == [(1, False), (1, False), (2, True), (2, True)]
    assert {a.template for a in item1 if a.stage == 2} == {"swap_and_synthesize/Swap.txt"}
    run = recorded_runs(parse_release(release))["GPT-4/Swap"]
    rows = _rows(run, f"{NATURAL}/1")
    # the synthesis, not the first call
    assert rows["original"].verdict == "B" and rows["swapped"].verdict == "B"
    assert rows["original"].meta["stage"] == 2


def test_llmbar_answers_are_read_in_the_format_recovered_from_their_prompt():
    parse = parse_release(read_llmbar(LLMBAR))
    assert parse.formats["comparison/Vanilla.txt"].startswith('"Output (X)" alone')
    assert parse.formats["comparison/CoT.txt"].startswith(
        '"Therefore, Output (X) is better." after reasoning'
    )
    assert parse.formats["rating/Rating.txt"].endswith("on 0 to 9")
    runs = recorded_runs(parse)
    cot = _rows(runs["GPT-4/CoT"], f"{NATURAL}/1")
    # the swapped order shows B first: "Output (a) is better" there prefers B
    assert cot["original"].verdict == "B" and cot["swapped"].verdict == "B"


def test_an_unparsable_raw_answer_is_a_recorded_failure_never_a_verdict():
    runs = load_released_pairwise(f"llmbar:{LLMBAR}#GPT-4/Vanilla")
    row = _rows(runs["GPT-4/Vanilla"], f"{NATURAL}/2")["original"]
    assert row.verdict is None and row.failed and row.raw == "I like neither of them."
    assert "no verdict" in (row.error or "")


def test_a_rating_strategy_verdict_is_the_higher_score_with_equal_scores_a_tie():
    run = load_released_pairwise(f"llmbar:{LLMBAR}#GPT-4/Rating")["GPT-4/Rating"]
    verdicts = [_rows(run, f"{NATURAL}/{i}")["original"] for i in range(3)]
    assert verdicts[0].verdict == "A" and verdicts[0].meta["scores"] == [8.0, 2.0]
    assert verdicts[1].verdict == "tie"
    assert verdicts[2].verdict is None and "rating of output A did not parse" in (verdicts[2].error or "")
    assert verdicts[2].meta["raw_score_a"] == "It deserves a good score."


def test_parse_report_sets_mitigates_reading_beside_the_releases():
    report = parse_report(parse_release(read_llmbar(LLMBAR, judges="GPT-4/Vanilla")))
    row = report["GPT-4/Vanilla|comparison/Vanilla.txt"]
    assert (row["answers"], row["parsed"], row["failed"]) == (6, 5, 1)
    assert row["agree"] == 5 and row["both_none"] == 1 and row["differ"] == 0
    assert row["examples"]["both_none"][0]["raw_tail"] == "I like neither of them."


def test_without_the_prompts_folder_the_declared_llmbar_format_reads_the_answers(tmp_path):
    shutil.copytree(LLMBAR / "Dataset", tmp_path / "Dataset")
    parse = parse_release(read_llmbar(tmp_path))
    assert set(parse.formats) == {"declared:output-ab", "declared:output-ab-cot", "declared:rating"}
    run = recorded_runs(parse)["GPT-4/CoT"]
    assert _rows(run, f"{NATURAL}/0")["swapped"].verdict == "A"


def test_recorded_llmbar_runs_feed_the_position_measures():
    run = load_released_pairwise(f"llmbar:{LLMBAR}#GPT-4/Vanilla")["GPT-4/Vanilla"]
    judge = RecordedJudge(run, RELEASE_CRITERION)
    bench = load_llmbar(LLMBAR, sets=[NATURAL])
    js = [asyncio.run(judge.judge(it)) for it in bench.items]
    orders = [j.meta["orders"] for j in js]
    m = position_consistency([o["original"] for o in orders], [o["swapped"] for o in orders])
    # item 0 consistent, item 1 picked the first shown twice, item 2 failed in one order
    assert (m.value, m.n, m.n_failed, m.extra["primacy"]) == (0.5, 2, 1, 1)


# ---------------------------------------------------------------------------------------------- JudgeBench


def test_judgebench_benchmark_maps_labels_and_categories():
    bench = load_judgebench(JUDGEBENCH)
    assert [i.preference[RELEASE_CRITERION] for i in bench.items] == ["A", "B", "A"]
    assert [i.meta["category"] for i in bench.items] == ["knowledge", "math", "coding"]
    assert category("livebench-reasoning") == "reasoning"
    assert load(f"judgebench:{JUDGEBENCH}").name == "judgebench"
    with pytest.raises(DataError, match=r"expected a JudgeBench response model among \['m1'\]; got 'm2'"):
        load_judgebench(JUDGEBENCH, response_model="m2")
    one_file = load(f"judgebench:{JUDGEBENCH / 'data' / 'dataset=judgebench,response_model=m1.jsonl'}")
    assert one_file.name == "judgebench:m1" and len(one_file) == 3


def test_judgebench_swapped_decisions_are_mapped_back_to_the_texts():
    release = read_judgebench(JUDGEBENCH, judges="arena_hard/*")
    p2 = {a.order: a for a in release.answers if a.item_id == "p-2"}
    assert p2["original"].release_verdict == "tie" and p2["swapped"].release_verdict == "B"


def test_judgebench_arena_hard_answers_are_read_from_its_template_and_a_missing_one_fails():
    runs = load_released_pairwise(f"judgebench:{JUDGEBENCH}#arena_hard/*")
    run = runs["arena_hard/j1@m1"]
    p1, p2, p3 = (_rows(run, f"p-{i}") for i in (1, 2, 3))
    assert (p1["original"].verdict, p1["swapped"].verdict) == ("A", "A")  # [[B>>A]] with B shown first is A
    assert (p2["original"].verdict, p2["swapped"].verdict) == ("tie", "B")
    assert p3["original"].failed and p3["swapped"].failed and p3["swapped"].raw == ""


def test_a_judgebench_copy_without_its_templates_is_refused_naming_the_missing_files(tmp_path):
    copy = tmp_path / "jb"
    shutil.copytree(JUDGEBENCH, copy)
    (copy / "utils" / "templates" / "arena_hard_judge_system.jinja2").unlink()
    with pytest.raises(
        DataError, match=r"lacks utils/templates/arena_hard_judge_system\.jinja2 \(a copy without"
    ):
        load_released_pairwise(f"judgebench:{copy}#arena_hard/*")
    shutil.rmtree(copy / "utils")
    with pytest.raises(
        DataError,
        match=r"answers of arena_hard/j1@m1 are read with; .* lacks "
        r"utils/templates/arena_hard_judge_prompt\.jinja2, "
        r"utils/templates/arena_hard_judge_system\.jinja2",
    ):
        load_released_pairwise(f"judgebench:{copy}")
    rewards = load_released_pairwise(f"judgebench:{copy}#reward_model/*")  # needs no template
    assert list(rewards) == ["reward_model/rm1@m1"]


def test_judgebench_reward_models_prefer_the_higher_reward_and_equal_rewards_tie():
    run = load_released_pairwise(f"judgebench:{JUDGEBENCH}#reward_model/*")["reward_model/rm1@m1"]
    assert _rows(run, "p-1")["swapped"].verdict == "A"  # rewards [1, 2] as presented, B first
    assert _rows(run, "p-3")["original"].verdict == "tie"
    # the release reads equal rewards as B>A
    assert _rows(run, "p-3")["original"].meta["release_verdict"] == "B"


def test_a_judge_pattern_that_matches_nothing_lists_the_judges():
    with pytest.raises(
        DataError, match=r"expected a judge pattern matching some of .*arena_hard/j1@m1.*; got 'x\*'"
    ):
        read_judgebench(JUDGEBENCH, judges="x*")


def test_release_specs_name_a_layout_and_a_path():
    assert split_release_spec("llmbar:/d/LLMBar#GPT-4/*", ["llmbar"]) == (
        "llmbar",
        Path("/d/LLMBar"),
        "GPT-4/*",
    )
    with pytest.raises(DataError, match=r"expected '<layout>:<path>\[#<judge pattern>\]'"):
        split_release_spec("nope:/x", ["llmbar", "judgebench"])


# ---------------------------------------------------------------------------------------------- FairEval


def test_faireval_pairs_chatgpt_with_vicuna_and_keeps_human_ties():
    bench = load_faireval(FAIREVAL)
    assert [i.preference[RELEASE_CRITERION] for i in bench.items] == ["A", "B", "tie"]
    assert bench.items[1].output == "Seven." and bench.items[1].output_b == "Thirteen is prime."
    assert load(f"faireval:{FAIREVAL}").items[0].id == "faireval/1"


def test_faireval_unknown_human_verdict_names_file_line_and_value(tmp_path):
    shutil.copytree(FAIREVAL, tmp_path / "fe")
    (tmp_path / "fe" / "review" / "review_gpt35_vicuna-13b_human.txt").write_text("CHATGPT\nALPACA\nTIE\n")
    with pytest.raises(DataError, match=r"human.txt:2: expected CHATGPT, VICUNA13B or TIE; got 'ALPACA'"):
        load_faireval(tmp_path / "fe")


# ---------------------------------------------------------------------------------------------- compare


def test_compare_takes_every_released_judge_of_a_repository_as_an_entry(tmp_path):
    entries = Entry.all_released(f"llmbar:{LLMBAR}#GPT-4/*", RELEASE_CRITERION)
    assert [e.name for e in entries] == ["GPT-4/CoT", "GPT-4/Rating", "GPT-4/Swap", "GPT-4/Vanilla"]
    bench = load_llmbar(LLMBAR, sets=[NATURAL])
    result = asyncio.run(
        compare(
            benchmark=bench,
            criterion=RELEASE_CRITERION,
            entries=entries,
            out_dir=tmp_path,
            progress=False,
            n_boot=50,
        )
    )
    rows = {e.name: e for e in result.entries}
    assert rows["GPT-4/CoT"].measures["preference-accuracy"].value == pytest.approx(1.0)
    assert rows["GPT-4/Vanilla"].measures["position-consistency"].value == pytest.approx(0.5)
    with pytest.raises(ConfigError, match="they answer 'overall'"):
        Entry.all_released(f"llmbar:{LLMBAR}", "helpfulness")


# ---------------------------------------------------------------------------------------------- values,
# scripts


def test_release_values_round_trip_through_their_dump():
    from mitigate.data import PairwiseRelease
    from mitigate.replay._released_pairwise import ReleaseParse

    release = read_judgebench(JUDGEBENCH)
    assert PairwiseRelease.model_validate(release.model_dump()) == release
    parse = parse_release(release)
    assert ReleaseParse.model_validate(parse.model_dump()) == parse


def _run_script(name: str, *args: str) -> None:
    import subprocess
    import sys

    script = Path(__file__).resolve().parents[2] / "benchmarks" / name
    done = subprocess.run(
        [sys.executable, str(script), *args], capture_output=True, text=True, timeout=120, check=False
    )
    assert done.returncode == 0, done.stderr[-2000:]


def test_llmbar_replay_script_reproduces_the_released_statistics_of_the_fixture(tmp_path):
    out = tmp_path / "replay.json"
    _run_script("replay_llmbar.py", str(LLMBAR), "--n-boot", "50", "--out", str(out))
    result = json.loads(out.read_text())
    # 6 + 6 + 8 (Swap: a second call) + 6
    assert result["answers"] == 26 and result["release_rule_mismatches"] == {}
    vanilla = result["per_set"][f"{NATURAL}|GPT-4/Vanilla"]
    assert vanilla["paper"] == pytest.approx({"acc": 2 / 3, "agr": 1 / 3})
    assert vanilla["mitigate_paper_rule"] == pytest.approx({"acc": 2 / 3, "agr": 1 / 3})
    assert result["per_set"][f"{NATURAL}|GPT-4/Rating"]["mitigate_paper_rule"]["acc"] == pytest.approx(2 / 3)


def test_judgebench_replay_script_scores_by_judgebench_rule(tmp_path):
    out = tmp_path / "jb.json"
    _run_script("replay_judgebench.py", str(JUDGEBENCH), "--n-boot", "50", "--out", str(out))
    judges = json.loads(out.read_text())["judges"]
    # p-1: A then A (right twice); p-2: tie then B (one right); p-3: nothing -> 2 of 3 pairs
    assert judges["arena_hard/j1@m1"]["release_rule"]["overall"] == pytest.approx(2 / 3)
    assert judges["arena_hard/j1@m1"]["mitigate_release_rule"]["overall"]["value"] == pytest.approx(2 / 3)
