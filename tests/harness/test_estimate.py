"""The benchmark-level estimate: columns from items and judges, pairwise win rates, labels files, hidden
labels, the JSON object, plans and selection files; and SummEval's released judges when the data folder is
there."""

from __future__ import annotations

import csv
import json
import math
from pathlib import Path

import numpy as np
import pytest

from mitigate.data import Benchmark, Item, RecordedRow, hide_labels, label_value, runs_from_rows
from mitigate.data._labels import apply_labels, read_labels
from mitigate.errors import ConfigError, DataError
from mitigate.estimators import (
    EstimateResult,
    columns,
    columns_from_items,
    estimate,
    estimate_columns,
    judge_values,
    plan_labels,
    select_for_labelling,
    write_selection,
)
from mitigate.judge import Judgment, ParseFailure
from mitigate.scale import Scale

SYSTEMS = ("alpha", "beta", "gamma")
QUALITY = {"alpha": 4.2, "beta": 3.1, "gamma": 2.4}


def partly_labelled(
    per_system: int = 40, labelled: int = 10, seed: int = 0
) -> tuple[Benchmark, dict[str, float], dict[str, float]]:
    """Three systems' answers, labels on a random few per system; a judge that scores them 1.2 too low,
    noisily.

    Returns the benchmark, the judge's values and every label (before the unlabelled ones were removed).
    """
    rng = np.random.default_rng(seed)
    items, judge, truth = [], {}, {}
    for system in SYSTEMS:
        keep = set(rng.choice(per_system, labelled, replace=False).tolist())
        for k in range(per_system):
            label = float(np.clip(np.round(QUALITY[system] + rng.normal(scale=0.8)), 1, 5))
            item_id = f"{system}/d{k}"
            truth[item_id] = label
            judge[item_id] = float(np.clip(np.round(label - 1.2 + rng.normal(scale=0.5)), 1, 5))
            items.append(
                Item(
                    id=item_id,
                    system=system,
                    doc_id=f"d{k}",
                    inputs={"question": f"Question {k}?"},
                    output=f"{system} answers question {k}.",
                    human={"quality": label} if k in keep else {},
                )
            )
    bench = Benchmark(name="toy", items=tuple(items), criteria=("quality",), scale=Scale(min=1, max=5))
    return bench, judge, truth


def pairwise_items() -> list[Item]:
    return [
        Item(id="p1", system="x", system_b="y", output="one", output_b="two", preference={"c": "A"}),
        Item(id="p2", system="y", system_b="x", output="three", output_b="four", preference={"c": "A"}),
        Item(id="p3", system="x", system_b="y", output="five", output_b="six", preference={"c": "tie"}),
        Item(id="p4", system="x", system_b="z", output="seven", output_b="eight"),
    ]


# ---------------------------------------------------------------------------------------------
# the estimate and its JSON object


def test_each_system_gets_a_corrected_estimate_with_the_labels_alone_and_judge_alone_beside_it():
    bench, judge, truth = partly_labelled()
    result = estimate(bench, "quality", judge)
    assert [g.group for g in result.groups] == list(SYSTEMS)
    for g in result.groups:
        assert g.n == 40 and g.n_labelled == 10
        assert g.human is not None and g.judge is not None and not g.judge.bias_corrected
        assert g.estimate.half_width < g.human.half_width  # a useful judge narrows the interval
        # the judge's bias
        assert g.judge.estimate < np.mean([truth[f"{g.group}/d{k}"] for k in range(40)]) - 0.6
    assert result.ranking is not None and result.ranking.order == ("alpha", "beta", "gamma")


def test_the_json_object_holds_the_keys_the_command_documents():
    bench, judge, _ = partly_labelled()
    out = estimate(bench, "quality", judge, method="calibrated").to_json()
    assert {
        "criterion",
        "method",
        "confidence",
        "groups",
        "benchmark",
        "judge",
        "target",
        "by",
        "ranking",
        "notes",
        "bias_corrected",
        "assumption",
    } == set(out)
    assert (out["criterion"], out["method"], out["confidence"], out["bias_corrected"]) == (
        "quality",
        "calibrated",
        0.95,
        True,
    )
    group = out["groups"][0]
    assert {
        "group",
        "n",
        "n_labelled",
        "estimate",
        "low",
        "high",
        "se",
        "n_judged",
        "rank",
        "rank_low",
        "rank_high",
        "human",
        "judge",
        "notes",
    } <= set(group)
    assert set(group["human"]) == {"estimate", "low", "high"}
    assert group["judge"]["bias_corrected"] is False
    assert set(out["ranking"]) == {"order", "simultaneous_confidence", "separable", "kendall_tau"}
    assert set(out["ranking"]["kendall_tau"]) == {"judge_only", "human_only"}
    json.dumps(out)  # plain JSON


def test_a_result_is_a_frozen_value_that_round_trips_and_becomes_a_table():
    pd = pytest.importorskip("pandas")
    bench, judge, _ = partly_labelled()
    result = estimate(bench, "quality", judge)
    assert EstimateResult.model_validate(result.model_dump()) == result
    frame = result.to_pandas()
    assert isinstance(frame, pd.DataFrame) and list(frame["group"]) == list(SYSTEMS)
    assert {"estimate", "low", "high", "human_estimate", "judge_estimate", "rank_low", "rank_high"} <= set(
        frame
    )
    text = result.table()
    assert "ppi (PPI++ with power tuning)" in text and "judge alone (not corrected)" in text


def test_the_estimate_of_items_and_values_equals_the_estimate_of_the_benchmark_and_judge():
    bench, judge, _ = partly_labelled()
    values = [judge[it.id] for it in bench.items]
    from_columns = estimate_columns(
        columns_from_items(
            bench.items, "quality", values, benchmark="toy", judge="judge", label_scale=bench.scale
        )
    )
    assert from_columns == estimate(bench, "quality", judge)


def test_by_none_gives_one_estimate_over_every_item():
    bench, judge, _ = partly_labelled()
    result = estimate(bench, "quality", judge, by="none")
    assert (
        [g.group for g in result.groups] == ["all"] and result.groups[0].n == 120 and result.ranking is None
    )


def test_a_system_without_labels_is_refused_naming_it():
    bench, judge, _ = partly_labelled()
    items = tuple(it.model_copy(update={"human": {}}) if it.system == "beta" else it for it in bench.items)
    with pytest.raises(DataError, match="group 'beta' has no labelled item"):
        estimate(bench.model_copy(update={"items": items}), "quality", judge)


def test_by_system_is_refused_when_an_item_names_no_system():
    bench, judge, _ = partly_labelled()
    items = (bench.items[0].model_copy(update={"system": None}), *bench.items[1:])
    with pytest.raises(ConfigError, match="--by system needs the system on every item; 1 of 120"):
        estimate(bench.model_copy(update={"items": items}), "quality", judge, by="system")
    assert estimate(bench.model_copy(update={"items": items}), "quality", judge).by == "none"  # auto


# ---------------------------------------------------------------------------------------------
# judge values


def test_judge_values_from_a_recorded_run_keep_parse_failures_and_missing_answers_as_missing():
    items = [Item(id=f"i{k}", output="t", human={"c": 3.0}) for k in range(4)]
    rows = [
        RecordedRow(item_id="i0", judge="j", criterion="c", score=4),
        RecordedRow(item_id="i1", judge="j", criterion="c", error="no score in the answer", raw="hmm"),
        RecordedRow(item_id="i2", judge="j", criterion="c", score=2, sample=0),
        RecordedRow(item_id="i2", judge="j", criterion="c", score=3, sample=1),
    ]
    run = runs_from_rows(rows, "mem")["j"]
    values, missing = judge_values(run, items, "c")
    assert values == [4.0, None, 2.5, None]
    assert missing == {"parse failure": 1, "no answer": 1}


def test_judge_values_from_judgments_code_a_pairwise_verdict_as_the_first_texts_win():
    items = pairwise_items()[:3]
    judgments = [
        Judgment(item_id="p1", verdict="first"),
        Judgment(item_id="p2", verdict="tie"),
        Judgment(item_id="p3", failures=(ParseFailure(criterion="c", raw="?", reason="no verdict"),)),
    ]
    values, missing = judge_values(judgments, items, "c")
    assert values == [1.0, 0.5, None] and missing == {"parse failure": 1}


def test_a_judge_value_that_is_not_a_number_is_refused():
    with pytest.raises(DataError, match="expected a finite number"):
        judge_values({"i0": "four"}, [Item(id="i0", output="t")], "c")


# ---------------------------------------------------------------------------------------------
# pairwise: win rates


def test_pairwise_by_system_counts_each_item_in_both_systems_groups_from_each_side():
    items = pairwise_items()[:3]
    cols = columns_from_items(items, "c", [1.0, 0.0, 0.5], by="system")
    assert cols.groups == ("x", "y", "y", "x", "x", "y")
    assert cols.labels == (1.0, 0.0, 1.0, 0.0, 0.5, 0.5)  # p1: x won; p2: y (its first text) won; p3: a tie
    assert cols.judge_values == (1.0, 0.0, 0.0, 1.0, 0.5, 0.5)


def test_pairwise_by_pair_reads_every_item_from_the_first_named_systems_side():
    cols = columns_from_items(pairwise_items(), "c", [1.0, 1.0, 0.0, None], by="pair")
    assert cols.groups == ("x vs y", "x vs y", "x vs y", "x vs z")
    assert cols.labels == (1.0, 0.0, 0.5, None) and cols.judge_values == (1.0, 0.0, 0.0, None)


def test_selection_refuses_pairwise_items_grouped_by_system():
    cols = columns_from_items(pairwise_items()[:3], "c", [1.0, 0.0, 0.5], by="system")
    with pytest.raises(ConfigError, match="counts each item in two groups"):
        select_for_labelling(cols, 2)


# ---------------------------------------------------------------------------------------------
# labels files and hidden labels


def _write_csv(path: Path, rows: list[dict[str, object]]) -> Path:
    with path.open("w", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
    return path


def test_a_labels_file_adds_labels_and_its_weights(tmp_path):
    path = _write_csv(
        tmp_path / "l.csv",
        [
            {"id": "a", "label": "4", "weight": "2.5", "note": "fine"},
            {"id": "b", "label": "2", "weight": "4", "note": ""},
        ],
    )
    found = read_labels(path, "c", Scale(min=1, max=5))
    assert found.labels == {"a": 4.0, "b": 2.0} and found.weights == {"a": 2.5, "b": 4.0}
    bench = Benchmark(name="t", items=(Item(id="a", output="x"), Item(id="b", output="y", human={"c": 2.0})))
    assert [label_value(it, "c") for it in apply_labels(bench, "c", found.labels).items] == [4.0, 2.0]


@pytest.mark.parametrize(
    ("rows", "expected"),
    [
        ([{"id": "a", "label": "7"}], "on 'c''s scale 1 to 5; got 7"),
        ([{"id": "a", "label": "good"}], "expected a number on 'c''s scale"),
        ([{"id": "a", "label": "3"}, {"id": "a", "label": "4"}], "each item once"),
        (
            [{"id": "a", "label": "3", "weight": "2"}, {"id": "b", "label": "", "weight": "2"}],
            "1 of 2 selected items have no label",
        ),
        ([{"id": "a", "label": "3", "weight": "0.5"}], "'weight' to be a number >= 1"),
        ([{"id": "a", "label": "1" * 200_000}], "a row the csv reader refuses"),
    ],
)
def test_a_bad_labels_file_is_refused_in_one_line(tmp_path, rows, expected):
    path = _write_csv(tmp_path / "l.csv", rows)
    with pytest.raises(DataError) as err:
        read_labels(path, "c", Scale(min=1, max=5))
    assert expected in err.value.message and "\n" not in err.value.message


def test_a_labels_file_of_json_lines_with_pairwise_labels(tmp_path):
    path = tmp_path / "l.jsonl"
    path.write_text(
        "\n".join(
            json.dumps(r)
            for r in [{"id": "p1", "label": "B"}, {"id": "p2", "label": 0.5}, {"id": "p3", "label": None}]
        )
        + "\n"
    )
    found = read_labels(path, "c", Scale(min=0, max=1), pairwise=True)
    assert found.labels == {"p1": "B", "p2": "tie"}
    bench = Benchmark(name="t", items=tuple(pairwise_items()))
    with pytest.raises(DataError, match="already has the preference 'A'"):
        apply_labels(bench, "c", found.labels)


def test_hiding_labels_keeps_a_seeded_draw_per_group_and_returns_every_label():
    bench, _, _ = partly_labelled(labelled=40)
    kept, truth = hide_labels(bench, "quality", per_group=5, seed=3, group=lambda it: str(it.system))
    again, _ = hide_labels(bench, "quality", per_group=5, seed=3, group=lambda it: str(it.system))
    assert kept == again and len(truth) == 120
    for system in SYSTEMS:
        assert sum(1 for it in kept.items if it.system == system and "quality" in it.human) == 5
    half, _ = hide_labels(bench, "quality", fraction=0.25, seed=3, group=lambda it: str(it.system))
    assert sum(1 for it in half.items if "quality" in it.human) == 30


# ---------------------------------------------------------------------------------------------
# plans and selections


def test_a_plan_gives_each_group_and_method_the_labels_needed(tmp_path):
    bench, judge, _ = partly_labelled()
    cols = columns(bench, "quality", judge)
    plan = plan_labels(cols, 0.3)
    assert [g.group for g in plan.groups] == list(SYSTEMS) and plan.methods == ["human", "ppi", "calibrated"]
    for g in plan.groups:
        assert g.plans["ppi"].needed is not None and g.plans["ppi"].needed <= g.plans["human"].needed  # type: ignore[operator]
    assert plan.more("ppi") == sum(g.plans["ppi"].more for g in plan.groups)  # type: ignore[misc]
    assert "+" in plan.table() and json.dumps(plan.to_json())


def test_a_selection_file_once_filled_gives_the_weighted_estimate(tmp_path):
    bench, judge, truth = partly_labelled()
    cols = columns(bench, "quality", judge)
    chosen = select_for_labelling(cols, 12, seed=5)
    assert len(chosen.rows) == 12 and len({r.id for r in chosen.rows}) == 12
    assert all(r.weight == pytest.approx(1 / r.probability) for r in chosen.rows)
    labelled_now = {it.id for it in bench.items if "quality" in it.human}
    assert not labelled_now & {r.id for r in chosen.rows}
    path = write_selection(chosen, bench.items, tmp_path / "sel.csv")
    with path.open(newline="", encoding="utf-8") as handle:
        rows = list(csv.DictReader(handle))
    assert list(rows[0])[:5] == ["id", "label", "weight", "probability", "group"]
    # the judge's value could anchor the labeller
    assert "inputs.question" in rows[0] and "judge" not in rows[0]
    for row in rows:
        row["label"] = str(truth[row["id"]])
    _write_csv(path, rows)
    found = read_labels(path, "quality", bench.scale)
    weighted = estimate(apply_labels(bench, "quality", found.labels), "quality", judge, weights=found.weights)
    assert sum(g.n_weighted for g in weighted.groups) == 12
    assert all(any("selection round" in n for n in g.estimate.notes) for g in weighted.groups if g.n_weighted)
    jsonl = write_selection(chosen, bench.items, tmp_path / "sel.jsonl")
    first = json.loads(jsonl.read_text().splitlines()[0])
    assert first["label"] is None and first["inputs"] == {"question": first["inputs"]["question"]}


# ---------------------------------------------------------------------------------------------
# the released SummEval judges (data folder)


@pytest.mark.data
def test_summeval_released_judge_corrected_with_ten_labels_per_system_is_closer_than_the_judge_alone():
    from mitigate.data import load, released_recorded

    try:
        bench = load("summeval")
        run = released_recorded("chatgpt-rts")
    except DataError as exc:
        pytest.skip(f"SummEval data not available: {exc.message}")
    kept, truth = hide_labels(bench, "coherence", per_group=10, seed=0, group=lambda it: str(it.system))
    result = estimate(kept, "coherence", run, truth=truth)
    assert len(result.groups) == 12 and all(g.n == 100 and g.n_labelled == 10 for g in result.groups)
    ppi_error = np.mean([abs(g.estimate.estimate - g.truth) for g in result.groups])  # type: ignore[operator]
    judge_error = np.mean(
        [
            abs(g.judge.estimate - g.truth)  # type: ignore[operator, union-attr]
            for g in result.groups
        ]
    )
    assert ppi_error < judge_error / 2
    assert (
        sum(
            g.estimate.low <= g.truth <= g.estimate.high  # type: ignore[operator]
            for g in result.groups
        )
        >= 10
    )
    assert (
        sum(
            g.judge.low <= g.truth <= g.judge.high  # type: ignore[operator, union-attr]
            for g in result.groups
        )
        <= 2
    )
    assert result.ranking is not None and not math.isnan(result.ranking.kendall["all_labels"] or math.nan)


def test_a_win_rate_interval_is_cut_to_zero_and_one():
    items = [
        Item(
            id=f"p{k}",
            system="x",
            system_b="y",
            output="a",
            output_b="b",
            preference={"c": "A"} if k in (0, 1, 2) else ({"c": "B"} if k == 3 else {}),
        )
        for k in range(12)
    ]
    cols = columns_from_items(items, "c", [1.0, 1.0, 1.0, 0.0, *[1.0] * 8], by="pair")
    result = estimate_columns(cols, method="human")
    e = result.groups[0].estimate
    assert e.high == 1.0 and e.low >= 0.0 and any("cut to the labels' scale [0, 1]" in n for n in e.notes)
    assert e.interval(0.95)[1] > 1.0  # the uncut interval, as the simultaneous rank intervals use it


def test_a_selection_csv_never_hands_a_spreadsheet_a_formula_from_the_judged_text(tmp_path):
    bench, judge, _ = partly_labelled(per_system=12, labelled=4)
    items = tuple(
        it.model_copy(
            update={"output": '=HYPERLINK("http://x.example","click")', "inputs": {"question": "@SUM(A1)"}}
        )
        for it in bench.items
    )
    bench = bench.model_copy(update={"items": items})
    chosen = select_for_labelling(columns(bench, "quality", judge), 6, seed=1)
    with write_selection(chosen, bench.items, tmp_path / "s.csv").open(
        newline="", encoding="utf-8"
    ) as handle:
        rows = list(csv.DictReader(handle))
    assert all(r["output"].startswith("'=HYPERLINK") and r["inputs.question"] == "'@SUM(A1)" for r in rows)
    assert all(not r["id"].startswith("'") for r in rows)
