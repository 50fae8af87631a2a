"""Replay source for the released SummEval judge outputs and head-to-head verdicts.

Layout, id mapping, parsing and error paths run on tiny files in tmp_path; the real-data tests
(skipped without the shared data) check the counts and print parse failures (run with -s).
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest

from mitigate.data import CRITERIA, Benchmark, Item, ReleasedRun, load_released, load_summeval
from mitigate.data._released import (
    H2H_PAIRS,
    h2h_files,
    judge_files,
    load_head_to_head,
    released_judges,
    stars_as_score,
)
from mitigate.data._summeval import LLM_SUMMEVAL_SYSTEMS
from mitigate.errors import DataError, ReplayFormatError
from mitigate.paths import data_dir

DOCS = ("d1", "d2")


def write_judge(
    root: Path, judge: str, resp: str | dict[tuple[str, str, str], list[str]] = "Score: 4"
) -> Path:
    """Write every file of ``judge``: one line per doc, or the lines given per (system, dim, doc)."""
    for rel in judge_files(judge):
        path = root / rel
        system = path.parent.name.split("_")[1]
        dim = path.name.split("_")[0]
        lines = []
        for doc in DOCS:
            answers = resp.get((system, dim, doc), ["Score: 3"]) if isinstance(resp, dict) else [resp]
            lines.append(
                [json.dumps({"id": doc, "prompt_len": 10, "total_len": 12, "resp": a}) for a in answers]
            )
        # runs are written as whole passes over the documents, as in the released files
        passes = max(len(x) for x in lines)
        out = [doc_lines[k] for k in range(passes) for doc_lines in lines if k < len(doc_lines)]
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("\n".join(out) + "\n", encoding="utf-8")
    return root


def tiny_benchmark(systems: tuple[str, ...] = LLM_SUMMEVAL_SYSTEMS) -> Benchmark:
    items = tuple(Item(id=f"{s}/{d}", system=s, doc_id=d, output="x") for s in systems for d in DOCS)
    return Benchmark(name="tiny", items=items, criteria=CRITERIA)


# ----------------------------------------------------------------------------- names and layout


def test_released_judges_names_every_family_and_method():
    names = released_judges()
    for name in (
        "chatgpt-rts",
        "chatgpt-mcq",
        "gpt4-rts",
        "llama2-7b-rts",
        "llama2-13b-rts",
        "llama2-70b-rts",
    ):
        assert name in names
    assert len(judge_files("gpt4-rts")) == 48
    assert judge_files("gpt4-rts")[0] == (
        "summeval_llm_summeval/eval_model_generations/gpt-4-0314/eval_M8_generations/coherence_rts.txt"
    )


def test_unknown_judge_lists_the_names(tmp_path):
    with pytest.raises(DataError) as info:
        load_released("gpt5-rts", root=tmp_path)
    assert "chatgpt-rts" in str(info.value) and "'gpt5-rts'" in str(info.value)


def test_missing_judge_files_are_named_relative_to_data_dir(tmp_path):
    write_judge(tmp_path, "gpt4-rts")
    (tmp_path / judge_files("gpt4-rts")[5]).unlink()
    with pytest.raises(DataError) as info:
        load_released("gpt4-rts", root=tmp_path)
    assert "1 of 48 are missing" in str(info.value)
    assert "gpt-4-0314/eval_M9_generations/consistency_rts.txt" in str(info.value)


def test_doc_ids_repeat_across_systems_so_the_folder_names_the_system(tmp_path):
    write_judge(tmp_path, "chatgpt-rts", {("M9", "fluency", "d2"): ["Score: 1"]})
    run = load_released("chatgpt-rts", root=tmp_path)
    assert isinstance(run, ReleasedRun)
    assert len(run) == 12 * 2 * 4
    assert set(run.judgments) == {f"{s}/{d}" for s in LLM_SUMMEVAL_SYSTEMS for d in DOCS}
    assert run.get("M9/d2", "fluency").score == 1.0
    assert run.get("M8/d2", "fluency").score == 3.0
    assert run.criteria == CRITERIA
    with pytest.raises(DataError, match="got 'M99/d1'"):
        run.get("M99/d1", "fluency")
    with pytest.raises(DataError, match="got 'grammar'"):
        run.get("M8/d1", "grammar")


# ----------------------------------------------------------------------------- parsing


def test_rts_failures_are_recorded_with_raw_text_never_scored(tmp_path):
    write_judge(
        tmp_path,
        "gpt4-rts",
        {
            ("M8", "coherence", "d1"): ["The summary is fine."],
            ("M8", "coherence", "d2"): ["Mostly fluent. Final score: 3.5."],
        },
    )
    run = load_released("gpt4-rts", root=tmp_path)
    failed = run.get("M8/d1", "coherence")
    assert failed.score is None and failed.raw == "The summary is fine."
    assert failed.error and "expected a score" in failed.error
    assert run.get("M8/d2", "coherence").score == 3.5
    assert run.parse_failures() == 1
    assert run.counts()["coherence"] == {"judgments": 24, "samples": 24, "failures": 1, "sample_failures": 1}
    assert "parse failures 1" in run.summary()
    assert run.scores("coherence")["M8/d1"] is None


def test_mcq_letters_map_a_to_1_through_e_to_5(tmp_path):
    write_judge(
        tmp_path,
        "chatgpt-mcq",
        {
            ("M8", "relevance", "d1"): ["A"],
            ("M8", "relevance", "d2"): ["E"],
            ("M9", "relevance", "d1"): ["maybe"],
        },
    )
    run = load_released("chatgpt-mcq", root=tmp_path)
    assert run.get("M8/d1", "relevance").score == 1.0
    assert run.get("M8/d2", "relevance").score == 5.0
    assert run.get("M9/d1", "relevance").score is None
    assert run.scale.letters == {"A": 1, "B": 2, "C": 3, "D": 4, "E": 5}


def test_star_ratings_are_read_as_scores(tmp_path):
    assert stars_as_score("Four stars. Clear summary.") == "Score: Four. Clear summary."
    assert stars_as_score("The Oasis stars sang") == "The Oasis stars sang"
    write_judge(
        tmp_path,
        "chatgpt-stareval",
        {("M8", "fluency", "d1"): ["Two stars. Choppy."], ("M8", "fluency", "d2"): ["5 stars"]},
    )
    run = load_released("chatgpt-stareval", root=tmp_path)
    assert run.get("M8/d1", "fluency").score == 2.0
    assert run.get("M8/d2", "fluency").score == 5.0


def test_second_full_pass_is_kept_as_a_sample_and_becomes_primary(tmp_path):
    write_judge(
        tmp_path,
        "chatgpt-mcq",
        {("M8", "consistency", "d1"): ["D", "E"], ("M8", "consistency", "d2"): ["B", "B"]},
    )
    run = load_released("chatgpt-mcq", root=tmp_path)
    judgment = run.get("M8/d1", "consistency")
    assert judgment.scores == (4.0, 5.0)
    assert [s.run for s in judgment.samples] == [0, 1]
    assert [s.line for s in judgment.samples] == [1, 3]
    assert judgment.primary == 1 and judgment.score == 5.0
    assert run.counts()["consistency"]["samples"] == 24 + 2


def test_partial_second_pass_keeps_the_first_pass_primary(tmp_path):
    write_judge(
        tmp_path, "chatgpt-altmcq", {("M8", "relevance", "d1"): ["D", "C"], ("M8", "relevance", "d2"): ["D"]}
    )
    run = load_released("chatgpt-altmcq", root=tmp_path)
    judgment = run.get("M8/d1", "relevance")
    assert judgment.scores == (4.0, 3.0)
    assert judgment.primary == 0 and judgment.score == 4.0


@pytest.mark.parametrize(
    ("line", "needle"),
    [
        ("{oops", "invalid JSON"),
        (json.dumps({"id": "d1"}), "expected a string 'resp'"),
        (json.dumps({"resp": "Score: 3"}), "expected a non-empty string 'id'"),
        (
            json.dumps({"id": "d1", "resp": "Score: 3", "prompt_len": "long"}),
            "expected an integer 'prompt_len'",
        ),
    ],
)
def test_malformed_judge_line_is_a_replay_format_error_with_file_and_line(tmp_path, line, needle):
    write_judge(tmp_path, "llama2-7b-rts")
    path = tmp_path / judge_files("llama2-7b-rts")[0]
    path.write_text(json.dumps({"id": "d1", "resp": "Score: 3"}) + "\n" + line + "\n", encoding="utf-8")
    with pytest.raises(ReplayFormatError) as info:
        load_released("llama2-7b-rts", root=tmp_path)
    assert str(info.value).startswith(f"{path}:2:")
    assert needle in str(info.value)


def test_benchmark_restricts_the_run_and_must_be_fully_covered(tmp_path):
    write_judge(tmp_path, "chatgpt-rts")
    subset = tiny_benchmark(("M8", "M9"))
    run = load_released("chatgpt-rts", subset, root=tmp_path)
    assert set(run.judgments) == {i.id for i in subset.items}
    assert len(run) == 2 * 2 * 4
    wider = tiny_benchmark(("M0", *LLM_SUMMEVAL_SYSTEMS))
    with pytest.raises(DataError) as info:
        load_released("chatgpt-rts", wider, root=tmp_path)
    assert "2 of 26 items have none" in str(info.value) and "M0/d1" in str(info.value)


# ----------------------------------------------------------------------------- head-to-head


def write_h2h(root: Path, special: dict[tuple[str, str, str], dict[str, object]] | None = None) -> Path:
    special = special or {}
    for rel in h2h_files():
        path = root / rel
        stem = path.name[: -len(".result")]
        order = "toggled" if stem.endswith("_toggle") else "original"
        pair, dim = stem.removesuffix("_toggle").rsplit("_", 1)
        rows = []
        for doc in DOCS:
            row: dict[str, object] = {
                "id": doc,
                "prompt_len": 5,
                "total_len": 6,
                "resp": "A",
                "human_score_1": 3.0,
                "human_score_2": 2.0,
            }
            row.update(special.get((pair, dim, order), {}) if doc == "d1" else {})
            rows.append(json.dumps(row))
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("\n".join(rows) + "\n", encoding="utf-8")
    return root


def test_h2h_verdicts_map_back_to_systems_in_both_orders(tmp_path):
    write_h2h(
        tmp_path,
        {
            ("M8-M9", "fluency", "toggled"): {"resp": "B: Summary #2 is more fluent."},
            ("M8-M9", "coherence", "original"): {"resp": "C: Both Summary #1 and #2 are equally coherent."},
            ("M8-M9", "relevance", "original"): {"resp": "I cannot decide.", "human_score_2": 3.0},
        },
    )
    records = load_head_to_head(root=tmp_path)
    assert len(records) == len(H2H_PAIRS) * 4 * 2 * 2
    by_key = {(r.pair, r.criterion, r.order, r.doc_id): r for r in records}
    original = by_key[("M8-M9", "fluency", "original", "d1")]
    assert original.verdict == "first" and original.preferred == "M8" and original.human_preferred == "M8"
    toggled_a = by_key[("M8-M9", "fluency", "toggled", "d2")]
    assert toggled_a.verdict == "first" and toggled_a.preferred == "M9"
    toggled_b = by_key[("M8-M9", "fluency", "toggled", "d1")]
    assert toggled_b.verdict == "second" and toggled_b.preferred == "M8"
    assert toggled_b.item_ids == ("M8/d1", "M9/d1")
    tie = by_key[("M8-M9", "coherence", "original", "d1")]
    assert tie.verdict == "tie" and tie.preferred == "tie"
    failed = by_key[("M8-M9", "relevance", "original", "d1")]
    assert failed.verdict is None and failed.preferred is None and failed.error
    assert failed.human_preferred == "tie"


def test_h2h_missing_file_and_bad_score_are_reported(tmp_path):
    write_h2h(tmp_path, {("M8-M9", "fluency", "original"): {"human_score_1": "high"}})
    with pytest.raises(
        ReplayFormatError, match=r"M8-M9_fluency\.result:1: expected a number 'human_score_1'"
    ):
        load_head_to_head(root=tmp_path)
    (tmp_path / h2h_files()[0]).unlink()
    with pytest.raises(DataError, match="comp_res/gpt-3.5-turbo-0301/M10-M20_coherence.result"):
        load_head_to_head(root=tmp_path)


# ----------------------------------------------------------------------------- real data


def real_root() -> Path:
    root = data_dir()
    if root is None or not (root / "summeval_llm_summeval" / "eval_model_generations").is_dir():
        pytest.skip("shared SummEval judge outputs absent (set MITIGATE_DATA_DIR)")
    return root


@pytest.mark.slow
@pytest.mark.data
@pytest.mark.parametrize("judge", released_judges())
def test_real_released_run_aligns_with_every_summeval_item(judge):
    root = real_root()
    bench = load_summeval(root=root)
    run = load_released(judge, bench, root=root)
    assert len(run) == 4800
    assert set(run.judgments) == {i.id for i in bench.items}
    counts = run.counts()
    print(f"\n{run.summary()}\n  per criterion: {counts}")
    failures = run.parse_failures()
    assert failures <= 10, f"{judge}: {failures} parse failures"
    for judgment in run.iter_judgments():
        if judgment.score is not None:
            assert 1 <= judgment.score <= 5
        else:
            assert judgment.error


@pytest.mark.data
def test_real_mcq_second_passes_are_samples_and_primary_matches_the_common_template():
    root = real_root()
    mcq = load_released("chatgpt-mcq", root=root)
    rts = load_released("chatgpt-rts", root=root)
    assert sum(c["samples"] for c in mcq.counts().values()) == 5100
    doubled = [j for j in mcq.iter_judgments() if len(j.samples) == 2]
    assert len(doubled) == 300 and {j.criterion for j in doubled} == {"consistency"}
    assert {j.item_id.split("/")[0] for j in doubled} == {"M8", "M9", "M10"}
    # the primary pass used the prompt template of the other systems: same length offset vs RTS
    offsets = Counter()
    for judgment in mcq.iter_judgments():
        if judgment.criterion != "consistency":
            continue
        reference = rts.get(judgment.item_id, "consistency").sample.prompt_len
        offsets[("primary", judgment.sample.prompt_len - reference)] += 1  # type: ignore[operator]
        for sample in judgment.samples:
            if sample is not judgment.sample:
                offsets[("other", sample.prompt_len - reference)] += 1  # type: ignore[operator]
    assert offsets == Counter({("primary", 98): 1200, ("other", 104): 300})


@pytest.mark.data
def test_real_head_to_head_has_8800_verdicts_in_both_orders():
    root = real_root()
    if not (root / h2h_files()[0]).is_file():
        pytest.skip("shared head-to-head files absent")
    records = load_head_to_head(root=root)
    assert len(records) == 8800
    assert Counter(r.order for r in records) == {"original": 4400, "toggled": 4400}
    assert len({(r.pair, r.criterion) for r in records}) == 44
    verdicts = Counter(r.verdict for r in records)
    print(f"\nhead-to-head verdicts: {dict(verdicts)}; parse failures {verdicts[None]}")
    assert verdicts[None] <= 10
    ids = {i.id for i in load_summeval(root=root).items}
    assert all(set(r.item_ids) <= ids for r in records)
    # alignment check: mapped back to systems, the verdicts agree with the experts more often than not
    agree = sum(r.preferred == r.human_preferred for r in records if r.human_preferred != "tie")
    decided = sum(1 for r in records if r.human_preferred != "tie")
    assert agree / decided > 0.5
