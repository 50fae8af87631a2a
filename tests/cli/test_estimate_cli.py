"""``mitigate estimate`` end to end: recorded and live judges, the JSON object, refusals, plans, selections,
plots."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from mitigate.cli import app
from mitigate.data import load_jsonl, load_recorded
from mitigate.estimators import estimate
from mitigate.testing import StubOpenAIServer

SYSTEMS = {"north": 4.0, "south": 3.0, "east": 2.2}


def write_task(
    tmp_path: Path, labelled: int = 8, per_system: int = 30
) -> tuple[Path, Path, dict[str, float]]:
    """A partly labelled benchmark file, a recorded-judgments file (one parse failure, one item unanswered)
    and every label."""
    rng = np.random.default_rng(1)
    rows, answers, truth = [], [], {}
    for system, level in SYSTEMS.items():
        keep = set(rng.choice(per_system, labelled, replace=False).tolist())
        for k in range(per_system):
            label = float(np.clip(np.round(level + rng.normal(scale=0.9)), 1, 5))
            item_id = f"{system}-{k}"
            truth[item_id] = label
            row = {
                "id": item_id,
                "system": system,
                "doc_id": f"doc{k}",
                "inputs": {"question": f"How far is {k}?"},
                "output": f"The {system} answer to {k} is quality {int(label)}.",
            }
            if k in keep:
                row["human"] = {"helpfulness": label}
            rows.append(row)
            if item_id == "south-3":
                continue  # the judge never answered this one
            if item_id == "east-4":
                answers.append(
                    {
                        "item_id": item_id,
                        "judge": "small-judge",
                        "criterion": "helpfulness",
                        "error": "no score in the answer",
                        "raw": "It depends.",
                    }
                )
                continue
            score = float(np.clip(np.round(label - 1 + rng.normal(scale=0.5)), 1, 5))
            answers.append(
                {"item_id": item_id, "judge": "small-judge", "criterion": "helpfulness", "score": score}
            )
    bench = tmp_path / "bench.jsonl"
    bench.write_text(
        json.dumps({"benchmark": {"name": "toy", "criteria": ["helpfulness"], "scale": [1, 5]}})
        + "\n"
        + "".join(json.dumps(r) + "\n" for r in rows)
    )
    recorded = tmp_path / "judged.jsonl"
    recorded.write_text("".join(json.dumps(a) + "\n" for a in answers))
    return bench, recorded, truth


def run(*args: str):
    return CliRunner().invoke(app, ["estimate", *args])


def test_json_prints_the_object_the_python_api_returns(tmp_path):
    bench, recorded, _ = write_task(tmp_path)
    result = run("-b", f"jsonl:{bench}", "--recorded", str(recorded), "--json")
    assert result.exit_code == 0, result.output
    out = json.loads(result.stdout)
    api = estimate(load_jsonl(bench), "helpfulness", load_recorded(recorded)).to_json()
    assert out.pop("command").startswith("mitigate")
    assert out == api
    assert [g["group"] for g in out["groups"]] == ["north", "south", "east"]
    assert [g["n_judged"] for g in out["groups"]] == [30, 29, 29]
    assert any("1 no answer" in n and "1 parse failure" in n for n in out["notes"])


def test_the_table_shows_the_estimate_the_labels_alone_the_judge_alone_and_the_ranks(tmp_path):
    bench, recorded, _ = write_task(tmp_path)
    result = run("-b", f"jsonl:{bench}", "--recorded", str(recorded), "--method", "calibrated")
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    assert "calibrated (cross-fitted judge-to-human calibration)" in lines[0]
    assert lines[2].split()[:4] == ["group", "items", "labelled", "estimate"]
    assert [ln.split()[0] for ln in lines[3:6]] == ["north", "south", "east"]
    assert "Kendall tau" in result.stdout and "separable pairs" in result.stdout


def test_a_group_with_one_label_is_refused_in_one_line(tmp_path):
    bench, recorded, _ = write_task(tmp_path, labelled=1)
    result = run("-b", f"jsonl:{bench}", "--recorded", str(recorded))
    assert result.exit_code == 2
    assert result.stderr.strip().splitlines() == [
        "error: group 'north' has a single label; expected at least 3 for 'ppi' (one label shows no spread, "
        "so no interval can be formed)"
    ]


def test_labels_on_another_scale_are_refused(tmp_path):
    bench, recorded, _ = write_task(tmp_path)
    labels = tmp_path / "labels.csv"
    labels.write_text("id,label\nnorth-0,8\n")
    result = run("-b", f"jsonl:{bench}", "--recorded", str(recorded), "--labels", str(labels))
    assert result.exit_code == 2
    assert "expected a label on 'helpfulness''s scale 1 to 5; got 8" in result.stderr


@pytest.mark.parametrize(
    ("extra", "expected"),
    [
        ((), "expected one judge: --recorded FILE, --released NAME or --pipeline PIPELINE"),
        (("--released", "chatgpt-rts", "--pipeline", "baseline"), "got --released and --pipeline"),
        (("--released", "chatgpt-rts", "--judge", "x"), "--judge names a judge of a --recorded file"),
        (
            ("--released", "chatgpt-rts", "--confidence", "1.2"),
            "'--confidence' parameter of mitigate estimate",
        ),
        (("--released", "chatgpt-rts", "--method", "judge", "--select", "3"), "--select chooses labels"),
    ],
)
def test_option_combinations_that_cannot_work_are_refused_before_any_work(extra, expected):
    result = run(*extra)
    assert result.exit_code == 2 and expected in result.stderr


def test_plan_select_and_plot_write_what_a_labeller_needs(tmp_path):
    bench, recorded, truth = write_task(tmp_path)
    selection = tmp_path / "to_label.csv"
    plot = tmp_path / "estimate.png"
    result = run(
        "-b",
        f"jsonl:{bench}",
        "--recorded",
        str(recorded),
        "--plan",
        "0.3",
        "--select",
        "9",
        "--select-out",
        str(selection),
        "--plot",
        str(plot),
        "--seed",
        "2",
    )
    assert result.exit_code == 0, result.output
    assert "labels for ±0.3 at 95%" in result.stdout and "selected 9 items to label" in result.stdout
    assert plot.read_bytes()[:4] == b"\x89PNG"
    with selection.open(newline="", encoding="utf-8") as handle:
        rows = list(csv.DictReader(handle))
    assert len(rows) == 9 and all(r["label"] == "" and float(r["weight"]) >= 1 for r in rows)
    for row in rows:
        row["label"] = str(truth[row["id"]])
    with selection.open("w", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
    again = run("-b", f"jsonl:{bench}", "--recorded", str(recorded), "--labels", str(selection), "--json")
    assert again.exit_code == 0, again.output
    out = json.loads(again.stdout)
    assert sum(g.get("n_weighted", 0) for g in out["groups"]) == 9
    assert sum(g["n_labelled"] for g in out["groups"]) == 24 + 9


def test_hidden_labels_for_an_experiment_show_the_mean_of_every_label(tmp_path):
    bench, recorded, truth = write_task(tmp_path, labelled=30)
    result = run("-b", f"jsonl:{bench}", "--recorded", str(recorded), "--labels-per-group", "6", "--json")
    assert result.exit_code == 0, result.output
    out = json.loads(result.stdout)
    for g in out["groups"]:
        assert g["n_labelled"] == 6
        assert g["all_labels_mean"] == pytest.approx(
            np.mean([v for k, v in truth.items() if k.startswith(g["group"] + "-")])
        )
    assert "all_labels" in out["ranking"]["kendall_tau"]


def test_a_live_judge_scores_every_item_then_the_labels_correct_it(tmp_path, monkeypatch):
    monkeypatch.setenv("MITIGATE_CACHE_DIR", str(tmp_path / "cache"))
    bench, _, _ = write_task(tmp_path)
    prompt = tmp_path / "prompt.txt"
    prompt.write_text(
        "Rate how helpful the answer is, from 1 to 5.\n\nQuestion: {{question}}\nAnswer: "
        "{{output}}\n\nReply with 'Score: N'."
    )

    # a judge harsher than the labels the answers were written from, and erratic
    def reply(request: dict) -> str:
        text = request["messages"][-1]["content"]
        quality = int(text.split("is quality ")[1][0])
        question = int(text.split("How far is ")[1].split("?")[0])
        return f"Score: {max(1, quality - 1 - (question % 3 == 0))}"

    with StubOpenAIServer(latency=0.0, reply=reply) as server:
        result = run(
            "-b",
            f"jsonl:{bench}",
            "--pipeline",
            "baseline",
            "--prompt",
            str(prompt),
            "--backend",
            "openai:stub-model",
            "--base-url",
            server.base_url,
            "--no-progress",
            "--json",
        )
        assert server.request_count == 90
    assert result.exit_code == 0, result.output
    out = json.loads(result.stdout)
    for g in out["groups"]:
        assert g["n_judged"] == 30
        assert g["judge"]["estimate"] < g["estimate"]  # the correction lifts the harsh judge's mean


@pytest.mark.parametrize(("name", "magic"), [("e.svg", b"<?xml"), ("e.PDF", b"%PDF"), ("e.png", b"\x89PNG")])
def test_the_plot_is_written_in_the_format_its_suffix_names(tmp_path, name, magic):
    bench, recorded, _ = write_task(tmp_path)
    plot = tmp_path / name
    result = run("-b", f"jsonl:{bench}", "--recorded", str(recorded), "--plot", str(plot))
    assert result.exit_code == 0, result.output
    assert plot.read_bytes().startswith(magic)


def test_a_plot_suffix_no_format_has_is_refused_before_any_work(tmp_path):
    bench, recorded, _ = write_task(tmp_path)
    result = run("-b", f"jsonl:{bench}", "--recorded", str(recorded), "--plot", str(tmp_path / "e.jpg"))
    assert result.exit_code == 2, result.output
    assert "expected --plot to end in .png, .svg or .pdf; got 'e.jpg'" in result.stderr
    assert not (tmp_path / "e.jpg").exists() and result.stdout == ""
