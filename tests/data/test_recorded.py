"""Recorded judgments: the generic format, its replay as a judge, and every measure on it with no LM call."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

import mitigate.measures as M
from mitigate.data import (
    Benchmark,
    Item,
    load_jsonl,
    load_recorded,
    load_recorded_runs,
    save_jsonl,
    save_recorded,
)
from mitigate.errors import ConfigError, DataError
from mitigate.harness import Entry, compare
from mitigate.paths import data_dir
from mitigate.replay import RecordedJudge
from mitigate.report import write_report

FIXTURES = Path(__file__).parents[1] / "fixtures"
TOPICAL = FIXTURES / "topical_chat_mini.jsonl"
TOPICAL_RECORDED = FIXTURES / "topical_chat_mini_recorded.jsonl"


def _lines(path: Path, rows: list[object]) -> Path:
    path.write_text(
        "".join((r if isinstance(r, str) else json.dumps(r)) + "\n" for r in rows), encoding="utf-8"
    )
    return path


# ----------------------------------------------------------------------------- per-criterion scales


def test_topical_chat_shaped_fixture_holds_three_scales_and_round_trips(tmp_path: Path) -> None:
    bench = load_jsonl(TOPICAL)
    assert bench.name == "topical-chat-mini" and len(bench) == 12
    assert bench.criteria == ("naturalness", "groundedness", "overall")
    assert [(bench.scale_for(c).min, bench.scale_for(c).max) for c in bench.criteria] == [
        (1, 3),
        (0, 1),
        (1, 5),
    ]
    assert "groundedness 0 to 1" in bench.summary()
    again = load_jsonl(save_jsonl(bench, tmp_path / "copy.jsonl"))
    assert again == bench


def test_a_score_outside_its_criterions_scale_is_a_file_line_error(tmp_path: Path) -> None:
    header = {"benchmark": {"scales": {"groundedness": [0, 1]}}}
    path = _lines(
        tmp_path / "b.jsonl",
        [
            header,
            {"id": "a", "output": "o", "human": {"groundedness": 1, "overall": 5}},
            {"id": "b", "output": "o", "human": {"groundedness": 2}},
        ],
    )
    with pytest.raises(DataError) as info:
        load_jsonl(path)
    assert str(info.value).startswith(f"{path}:3:") and (
        "'groundedness' scores within the human scale 0 to 1"
    ) in str(info.value)
    # the 1-5 default still holds for the other criteria, and an argument overrides the header
    assert load_jsonl(path, scale={"groundedness": (0, 2)}).scale_for("groundedness").max == 2


def test_a_bad_header_and_a_preference_without_a_second_text_are_row_errors(tmp_path: Path) -> None:
    bad = _lines(tmp_path / "h.jsonl", [{"benchmark": {"scales": {"q": [5, 1]}}}, {"id": "a", "output": "o"}])
    with pytest.raises(DataError, match=r"h\.jsonl:1: expected a valid scale for criterion 'q'"):
        load_jsonl(bad)
    pref = _lines(tmp_path / "p.jsonl", [{"id": "a", "output": "o", "preference": {"q": "A"}}])
    with pytest.raises(DataError, match=r"p\.jsonl:1: expected an 'output_b'"):
        load_jsonl(pref)
    wrong = _lines(
        tmp_path / "w.jsonl", [{"id": "a", "output": "o", "output_b": "p", "preference": {"q": "left"}}]
    )
    with pytest.raises(
        DataError, match=r"w\.jsonl:1: expected the preference for 'q' to be \"A\", \"B\" or \"tie\""
    ):
        load_jsonl(wrong)


# ----------------------------------------------------------------------------- the recorded format


def test_recorded_answers_replay_as_judgments_with_samples_and_variants() -> None:
    run = load_recorded(TOPICAL_RECORDED, "judge-a")
    assert run.primary_variant == "default" and run.criteria == ("naturalness", "groundedness", "overall")
    assert run.scales["overall"].max == 5
    judge = RecordedJudge(run, "overall")
    rows = run.get("c1/nbr", "overall").rows  # type: ignore[union-attr]
    default = [r.score for r in rows if r.variant == "default"]
    other = [r.score for r in rows if r.variant == "reordered"]
    j = judge.to_judgment(run.get("c1/nbr", "overall"))  # type: ignore[arg-type]
    assert j.samples == {"overall": tuple(default)} and j.scores["overall"] == pytest.approx(sum(default) / 2)
    assert j.meta["perturbations"] == {
        "default": pytest.approx(sum(default) / 2),
        "reordered": pytest.approx(sum(other) / 2),
    }
    assert j.calls == 0 and j.raw == tuple(f"Score: {s:g}" for s in default)
    failed = RecordedJudge(load_recorded(TOPICAL_RECORDED, "judge-b"), "overall")
    jf = failed.to_judgment(failed.recorded.get("c3/ret", "overall"))  # type: ignore[arg-type]
    assert jf.scores == {"overall": None} and jf.failures[0].raw == "It depends on the reader."
    with pytest.raises(DataError, match="several judges"):
        load_recorded(TOPICAL_RECORDED)
    with pytest.raises(ConfigError, match="prompt to transform"):
        judge.map_prompts(lambda p: p)


@pytest.mark.parametrize(
    ("row", "needle"),
    [
        ("{oops", "invalid JSON"),
        ({"judge": "j", "criterion": "q", "score": 1}, "expected a non-empty string 'item_id'; got nothing"),
        ({"item_id": "a", "criterion": "q", "score": 1}, "expected a non-empty string 'judge'"),
        ({"item_id": "a", "judge": "j", "score": 1}, "expected a non-empty string 'criterion'"),
        ({"item_id": "a", "judge": "j", "criterion": "q"}, "expected a 'score', a 'verdict' or an 'error'"),
        (
            {"item_id": "a", "judge": "j", "criterion": "q", "score": "4"},
            "expected a number for 'score'; got str",
        ),
        ({"item_id": "a", "judge": "j", "criterion": "q", "score": 9}, "within the declared scale 1 to 5"),
        ({"item_id": "a", "judge": "j", "criterion": "q", "score": 1, "verdict": "A"}, "not both"),
        (
            {"item_id": "a", "judge": "j", "criterion": "q", "verdict": "left"},
            'expected a \'verdict\' of "A", "B"',
        ),
        (
            {"item_id": "a", "judge": "j", "criterion": "q", "score": 1, "order": "BA?"},
            '"original" or "swapped"',
        ),
        (
            {"item_id": "a", "judge": "j", "criterion": "q", "score": 1, "sample": -1},
            "'sample' to be an integer >= 0",
        ),
        (
            {"item_id": "a", "judge": "j", "criterion": "q", "score": 1, "scroe": 2},
            "unknown key(s) ['scroe']",
        ),
        ({"item_id": "a", "judge": "j", "criterion": "q", "score": 2}, "already given on line 2"),
    ],
)
def test_a_bad_recorded_row_names_file_line_and_expectation(tmp_path: Path, row: object, needle: str) -> None:
    path = _lines(
        tmp_path / "rec.jsonl",
        [{"recorded": {"scale": [1, 5]}}, {"item_id": "a", "judge": "j", "criterion": "q", "score": 3}, row],
    )
    with pytest.raises(DataError) as info:
        load_recorded_runs(path)
    assert str(info.value).startswith(f"{path}:3:") and needle in str(info.value)


def test_csv_holds_the_same_judgments_and_reports_the_line_of_a_bad_row(tmp_path: Path) -> None:
    runs = list(load_recorded_runs(TOPICAL_RECORDED).values())
    csv_path = save_recorded(runs, tmp_path / "rec.csv")
    again = load_recorded_runs(csv_path)
    assert [r.judge for r in again.values()] == ["judge-a", "judge-b"]
    for run in runs:

        def key(r: Any) -> tuple[Any, ...]:
            return (r.item_id, r.criterion, r.score, r.sample, r.variant, r.error)

        assert [key(r) for r in again[run.judge].rows()] == [key(r) for r in run.rows()]
    bad = tmp_path / "bad.csv"
    bad.write_text(
        'item_id,judge,criterion,score,raw\na,j,q,3,"two\nlines"\nb,j,q,high,x\n', encoding="utf-8"
    )
    with pytest.raises(DataError, match=r"bad\.csv:4: expected a number for 'score'"):
        load_recorded_runs(bad)


# ----------------------------------------------------------------------------- every measure, no LM call


@pytest.mark.parametrize("criterion", ["naturalness", "groundedness", "overall"])
async def test_every_measure_runs_on_recorded_judgments_of_three_scales(
    tmp_path: Path, criterion: str
) -> None:
    bench = load_jsonl(TOPICAL)
    result = await compare(
        benchmark=bench,
        criterion=criterion,
        entries=Entry.all_recorded(TOPICAL_RECORDED, criterion),
        out_dir=tmp_path,
        progress=False,
        n_boot=100,
        n_perm=200,
    )
    write_report(result, tmp_path)
    a, b = result.entries
    assert a.summary.calls == b.summary.calls == 0 and a.kind == "recorded"
    assert (a.scale.min, a.scale.max) == (bench.scale_for(criterion).min, bench.scale_for(criterion).max)
    assert result.human_scale == bench.scale_for(criterion)
    for key in (
        "spearman-item",
        "scale-coverage",
        "score-entropy",
        "length-spearman",
        "alpha-across-samples",
        "perturbation-consistency",
    ):
        assert a.measures[key].ok, (key, a.measures[key].reason)
    assert a.measures["alpha-across-samples"].n == 12  # two samples per item under the primary variant
    assert not b.measures["alpha-across-samples"].ok  # one answer per item
    assert b.comparison is not None and b.comparison.against == "judge-a"
    assert "judge-a" in (tmp_path / "report.md").read_text()


async def test_a_recorded_judge_missing_items_fails_before_judging(tmp_path: Path) -> None:
    path = _lines(
        tmp_path / "rec.jsonl", [{"item_id": "c1/tmpl", "judge": "j", "criterion": "overall", "score": 4}]
    )
    with pytest.raises(ConfigError, match=r"no answer on 'overall' for 11 of the 12 items"):
        await compare(
            benchmark=load_jsonl(TOPICAL),
            criterion="overall",
            entries=Entry.all_recorded(path, "overall"),
            out_dir=tmp_path,
        )
    with pytest.raises(ConfigError, match="answered other criteria"):
        Entry.all_recorded(path, "naturalness")


# ----------------------------------------------------------------------------- pairwise, against a hand table

# Six pairs judged in both orders, presented verdicts (original, swapped), and the gold preference:
#   p1 first/second  consistent -> A     gold A
#   p2 first/first   primacy             gold B
#   p3 second/first  consistent -> B     gold B
#   p4 tie/tie       consistent -> tie   gold A
#   p5 second/second recency             gold A
#   p6 first/tie     primacy             gold tie
# By hand: position consistency 3/6 = 0.5; primacy P = 2, recency R = 1, so preference fairness
# = (R*R/(P+R) - P*P/(P+R)) / 6 = (1/3 - 4/3) / 6 = -1/6. Accuracy of the original order
# (A, A, B, tie, B, A) against gold (A, B, B, A, A, tie): 2/6. Position swap keeps p1, p3, p4 and
# turns p2, p5, p6 into ties: (A, tie, B, tie, tie, tie) -> right on p1, p3, p6 = 3/6, a gain of 1/6.
# Pair groups: S1 vs S2 = p1-p3 (PC 2/3, PF (0 - 1)/3 = -1/3), S3 vs S4 = p4-p6 (PC 1/3,
# PF (1/2 - 1/2)/3 = 0).
HAND = [
    ("p1", "first", "second", "A"),
    ("p2", "first", "first", "B"),
    ("p3", "second", "first", "B"),
    ("p4", "tie", "tie", "A"),
    ("p5", "second", "second", "A"),
    ("p6", "first", "tie", "tie"),
]


def _hand_table(tmp_path: Path) -> tuple[Benchmark, Path]:
    items = tuple(
        Item(
            id=pid,
            output=f"text a {pid}",
            output_b=f"the longer text b of {pid}",
            system="S1" if k < 3 else "S3",
            system_b="S2" if k < 3 else "S4",
            preference={"q": gold},
        )
        for k, (pid, _, _, gold) in enumerate(HAND)
    )
    rows: list[object] = []
    for pid, original, swapped, _ in HAND:
        rows.append({"item_id": pid, "judge": "hand", "criterion": "q", "verdict": original, "raw": original})
        rows.append(
            {"item_id": pid, "judge": "hand", "criterion": "q", "verdict": swapped, "order": "swapped"}
        )
    # repeated answers in the original order for p1 (3 of 3 agree) and p2 (2 of 3 agree)
    rows += [
        {"item_id": "p1", "judge": "hand", "criterion": "q", "verdict": "first", "sample": s} for s in (1, 2)
    ]
    rows += [
        {"item_id": "p2", "judge": "hand", "criterion": "q", "verdict": v, "sample": s}
        for s, v in ((1, "first"), (2, "second"))
    ]
    return Benchmark(name="hand", items=items, criteria=("q",)), _lines(tmp_path / "hand.jsonl", rows)


async def test_pairwise_measures_through_the_recorded_path_match_a_hand_computation(tmp_path: Path) -> None:
    bench, path = _hand_table(tmp_path)
    result = await compare(
        benchmark=bench,
        criterion="q",
        entries=Entry.all_recorded(path, "q"),
        out_dir=tmp_path,
        progress=False,
        n_boot=100,
        n_perm=200,
    )
    assert result.task == "pairwise"
    m = result.entries[0].measures
    assert m["position-consistency"].value == pytest.approx(0.5)
    assert m["preference-fairness"].value == pytest.approx(-1 / 6)
    assert (m["preference-fairness"].extra["primacy"], m["preference-fairness"].extra["recency"]) == (2, 1)
    assert m["swap-gain"].value == pytest.approx(1 / 6)
    assert m["swap-gain"].extra["accuracy_one_order"] == pytest.approx(2 / 6)
    # the headline verdict is the majority of the original order's samples: p2 has first, first, second
    assert m["preference-accuracy"].value == pytest.approx(2 / 6)
    per_pc = m["position-consistency"].extra["per_group"]
    per_pf = m["preference-fairness"].extra["per_group"]
    assert per_pc["S1 vs S2"]["value"] == pytest.approx(2 / 3) and per_pc["S3 vs S4"][
        "value"
    ] == pytest.approx(1 / 3)
    assert per_pf["S1 vs S2"]["value"] == pytest.approx(-1 / 3) and per_pf["S3 vs S4"][
        "value"
    ] == pytest.approx(0.0)
    # repetition stability over the instances judged more than once: p1 original (3/3), p2 original (2/3)
    assert m["repetition-stability"].value == pytest.approx((1 + 2 / 3) / 2)
    assert m["repetition-stability"].n == 2
    # every decisive original-order verdict on texts of different length: p1 A, p2 A, p3 B, p5 B, p6 A;
    # B is always the longer text, so P(longer) = 2/5
    assert m["longer-preference"].extra["p_longer"] == pytest.approx(2 / 5)
    write_report(result, tmp_path)
    report = (tmp_path / "report.md").read_text()
    assert "## Per system pair" in report and "| hand | S1 vs S2 | 3 | 0.667" in report
    assert (tmp_path / "per_pair.png").stat().st_size > 0 and "per_pair.png" in report


def test_the_pairwise_functions_agree_with_the_same_hand_table() -> None:
    original = [o for _, o, _, _ in HAND]
    swapped = [s for _, _, s, _ in HAND]
    gold = [g for *_, g in HAND]
    assert M.position_consistency(original, swapped).value == pytest.approx(0.5)
    assert M.preference_fairness(original, swapped).value == pytest.approx(-1 / 6)
    assert M.swap_gain(original, swapped, gold).value == pytest.approx(1 / 6)
    assert [M.pair_category(o, s) for o, s in zip(original, swapped, strict=True)] == [
        "consistent",
        "primacy",
        "consistent",
        "consistent",
        "recency",
        "primacy",
    ]
    # every pair inconsistent towards one position gives the extremes -1 and +1
    assert M.preference_fairness(["first"] * 4, ["first"] * 4).value == pytest.approx(-1.0)
    assert M.preference_fairness(["second"] * 4, ["tie"] * 4).value == pytest.approx(1.0)
    # a failed verdict is dropped from the value and counted inconsistent in of_all
    m = M.position_consistency([*original, None], [*swapped, "first"])
    assert (m.n, m.n_failed, m.of_all) == (6, 1, pytest.approx(3 / 7))


# ----------------------------------------------------------------------------- the released head-to-head


def _h2h_or_skip() -> None:
    root = data_dir()
    if root is None or not (root / "summeval_llm_summeval" / "comp_res").is_dir():
        pytest.skip("shared SummEval data (summeval_llm_summeval/comp_res) is not available")


@pytest.mark.slow
async def test_released_head_to_head_through_the_recorded_path_matches_the_records(tmp_path: Path) -> None:
    _h2h_or_skip()
    from mitigate.data._released import load_head_to_head

    records = [r for r in load_head_to_head() if r.criterion == "fluency"]
    by_item: dict[str, dict[str, str | None]] = {}
    for r in records:
        by_item.setdefault(f"{r.pair}/{r.doc_id}", {})[r.order] = r.verdict
    direct = M.position_consistency(
        [v["original"] for v in by_item.values()], [v["toggled"] for v in by_item.values()]
    )
    result = await compare(
        benchmark="summeval-h2h",
        criterion="fluency",
        entries=[Entry.from_released("chatgpt-h2h", "fluency")],
        out_dir=tmp_path,
        progress=False,
        n_boot=50,
        n_perm=100,
    )
    m = result.entries[0].measures
    assert result.entries[0].summary.calls == 0 and len(result.items) == 1100
    assert m["position-consistency"].value == pytest.approx(direct.value)
    assert m["position-consistency"].n + m["position-consistency"].n_failed == 1100
    assert len(m["preference-fairness"].extra["per_group"]) == 11
    gold = {it.id: it.gold for it in result.items}
    humans = {f"{r.pair}/{r.doc_id}": (r.human_score_1, r.human_score_2) for r in records}
    for item_id, (h1, h2) in humans.items():
        assert gold[item_id] == ("tie" if h1 == h2 else "A" if h1 > h2 else "B")
