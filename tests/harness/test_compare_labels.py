"""compare with human labels for a slice: ``--labels FILE`` (and ``labels=``), and notes that name only its
options.

The labels file is the one ``mitigate estimate --labels`` reads (``id,label[,weight]``); a
labels file gives compare the same corrected estimates as the same labels written into the
benchmark's rows. Every note and refusal of the estimates a compare report shows suggests only
what compare offers: it groups by system with one method, so never ``--by``, ``--method`` or
``--tune`` (options of ``mitigate estimate``).
"""

from __future__ import annotations

import csv
import json
import re
from pathlib import Path

import pytest
from typer.testing import CliRunner

from mitigate import JudgePrompt, PromptJudge
from mitigate.cli import app
from mitigate.cli._compare import CompareOptions
from mitigate.cli.options._declare import parameters
from mitigate.data import Benchmark, Item, load_jsonl
from mitigate.data._labels import apply_labels
from mitigate.harness import CompareConfig, Entry, compare
from mitigate.lm import FakeLM, LMRequest
from mitigate.report import render_markdown
from tests.cli.test_estimate_cli import write_task

CRIT = "helpfulness"


def _task(tmp_path: Path, labelled: int = 8) -> tuple[Path, Path, dict[str, float]]:
    """``write_task``'s benchmark and recorded judge, with the item it left unanswered answered (compare
    replays a judge only on items it answered)."""
    bench, recorded, truth = write_task(tmp_path, labelled=labelled)
    with recorded.open("a", encoding="utf-8") as handle:
        handle.write(
            json.dumps({"item_id": "south-3", "judge": "small-judge", "criterion": CRIT, "score": 3.0}) + "\n"
        )
    return bench, recorded, truth


def run(*args: str):
    return CliRunner().invoke(app, ["compare", *args])


def _labels_file(path: Path, rows: dict[str, float | str], weights: dict[str, float] | None = None) -> Path:
    with path.open("w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        writer.writerow(["id", "label", *(["weight"] if weights else [])])
        for item_id, label in rows.items():
            writer.writerow([item_id, label, *([weights[item_id]] if weights else [])])
    return path


def _slice(truth: dict[str, float], bench: Path, per_system: int) -> dict[str, float]:
    """Labels for the first ``per_system`` unlabelled items of each system (the benchmark file labels
    others)."""
    have = {it.id for it in load_jsonl(bench).items if CRIT in it.human}
    out: dict[str, float] = {}
    for system in ("north", "south", "east"):
        ids = [i for i in truth if i.startswith(system + "-") and i not in have][:per_system]
        out.update({i: truth[i] for i in ids})
    return out


# --------------------------------------------------------------------------- --labels FILE


def test_labels_file_gives_the_estimates_the_same_labels_in_the_rows_give(tmp_path: Path) -> None:
    bench, recorded, truth = _task(tmp_path, labelled=2)  # 2 labels per system: too few alone
    extra = _slice(truth, bench, 4)
    labels = _labels_file(tmp_path / "labels.csv", extra)
    out = tmp_path / "out"
    result = run(
        "-b",
        f"jsonl:{bench}",
        "-c",
        CRIT,
        "--recorded",
        str(recorded),
        "--labels",
        str(labels),
        "--out",
        str(out),
        "--n-boot",
        "0",
    )
    assert result.exit_code == 0, result.output
    assert "## Corrected estimates per system" in result.stdout
    stored = json.loads((out / "results.json").read_text(encoding="utf-8"))
    assert stored["settings"]["n_labelled"] == 3 * 6
    rows = apply_labels(load_jsonl(bench), CRIT, extra)  # the same labels written into the rows
    same = tmp_path / "same"
    again = run(
        "-b",
        f"jsonl:{_write_bench(rows, tmp_path / 'rows.jsonl')}",
        "-c",
        CRIT,
        "--recorded",
        str(recorded),
        "--out",
        str(same),
        "--n-boot",
        "0",
    )
    assert again.exit_code == 0, again.output
    mine = stored["entries"][0]["estimate"]
    theirs = json.loads((same / "results.json").read_text(encoding="utf-8"))["entries"][0]["estimate"]
    assert [(g["group"], g["estimate"]) for g in mine["groups"]] == [
        (g["group"], g["estimate"]) for g in theirs["groups"]
    ]
    assert mine["groups"][0]["estimate"]["n_labelled"] == 6


def _write_bench(bench: Benchmark, path: Path) -> Path:
    header = {"benchmark": {"name": bench.name, "criteria": list(bench.criteria), "scale": [1, 5]}}
    rows = [
        {
            "id": it.id,
            "system": it.system,
            "doc_id": it.doc_id,
            "inputs": dict(it.inputs),
            "output": it.output,
            **({"human": dict(it.human)} if it.human else {}),
        }
        for it in bench.items
    ]
    path.write_text("".join(json.dumps(r) + "\n" for r in [header, *rows]), encoding="utf-8")
    return path


def test_a_filled_selection_file_carries_its_weights_into_the_estimates(tmp_path: Path) -> None:
    bench, recorded, truth = _task(tmp_path, labelled=4)
    chosen = _slice(truth, bench, 3)
    labels = _labels_file(tmp_path / "selected.csv", chosen, dict.fromkeys(chosen, 5.0))
    result = run(
        "-b",
        f"jsonl:{bench}",
        "-c",
        CRIT,
        "--recorded",
        str(recorded),
        "--labels",
        str(labels),
        "--out",
        str(tmp_path / "out"),
        "--n-boot",
        "0",
    )
    assert result.exit_code == 0, result.output
    saved = json.loads((tmp_path / "out" / "results.json").read_text(encoding="utf-8"))
    groups = saved["entries"][0]["estimate"]["groups"]
    assert [g["n_weighted"] for g in groups] == [3, 3, 3]
    assert "weighted by 1 / their inclusion probability" in result.stdout


@pytest.mark.parametrize(
    ("rows", "extra", "expected"),
    [
        (
            {"north-0": 3, "nowhere-1": 4},
            (),
            "labels.csv: expected labels for items of 'toy'; 1 ids are not in it (first 'nowhere-1')",
        ),
        ({"north-0": 9}, (), "expected a label on 'helpfulness''s scale 1 to 5; got 9"),
        (
            {"east-25": 3, "east-26": 2},
            ("--limit", "30"),
            "none of the 2 items labelled there is among the 30 items compared (first labelled 'east-25')",
        ),
    ],
)
def test_a_labels_file_compare_cannot_use_is_refused_in_one_line(
    tmp_path: Path, rows, extra, expected
) -> None:
    bench, recorded, _ = _task(tmp_path)
    labels = _labels_file(tmp_path / "labels.csv", rows)
    result = run(
        "-b",
        f"jsonl:{bench}",
        "-c",
        CRIT,
        "--recorded",
        str(recorded),
        "--labels",
        str(labels),
        "--out",
        str(tmp_path / "out"),
        *extra,
    )
    assert result.exit_code == 2, result.output
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and expected in lines[0]
    assert not (tmp_path / "out" / "results.json").exists()


# --------------------------------------------------------------------------- notes name compare's options
# only


TEMPLATE = "Rate the text from 1 to 5.\nText: {{output}}\nScore:"


def _bench(labels: dict[str, list[float]]) -> Benchmark:
    """12 items per system; system S<k> labelled with ``labels[S<k>]`` on its first items, the rest
    unlabelled."""
    items = []
    for s, given in labels.items():
        for d in range(12):
            human = {"q": given[d]} if d < len(given) else {}
            items.append(
                Item(
                    id=f"{s}/d{d}",
                    system=s,
                    doc_id=f"d{d}",
                    output=f"q={1 + (d * 7) % 5} {s} d{d}",
                    human=human,
                )
            )
    return Benchmark(name="toy", items=tuple(items), criteria=("q",))


def _answer(request: LMRequest) -> str:
    return "Score: " + re.search(r"q=(\d)", request.messages[-1].content).group(1)


SPREAD = [1.0, 2.0, 4.0, 5.0, 3.0, 2.0]
CASES = {  # labels per system, the method, and what the estimate then says
    "one slope over the systems": ({"S0": SPREAD, "S1": SPREAD[::-1]}, "ppi", "ppi: one judge slope"),
    "a system without labels": ({"S0": SPREAD, "S1": []}, "ppi", "has no labelled item"),
    "fewer labels than the method fits": ({"S0": SPREAD, "S1": [2.0, 4.0]}, "calibrated", "needs at least 3"),
    "labels all of one value": ({"S0": SPREAD, "S1": [3.0, 3.0, 3.0, 3.0]}, "ppi", "are all 3, so no spread"),
}


@pytest.mark.parametrize("case", list(CASES))
async def test_compare_estimate_notes_name_only_options_compare_has(tmp_path: Path, case: str) -> None:
    labels, method, says = CASES[case]
    judge = PromptJudge(JudgePrompt.from_template(TEMPLATE, criterion="q"), FakeLM(_answer))
    result = await compare(
        CompareConfig(
            benchmark=_bench(labels),
            criterion="q",
            out_dir=tmp_path,
            progress=False,
            entries=(Entry.from_pipeline("plain", judge, "baseline"),),
            n_boot=0,
            n_perm=50,
            estimate=method,
        )
    )
    e = result.entries[0]
    said = [e.estimate_note or ""]
    if e.estimate is not None:
        said += [*e.estimate.notes, *(n for g in e.estimate.groups for n in g.estimate.notes)]
        said += [r for g in e.estimate.groups for r in g.unavailable.values()]
    text = "\n".join(said)
    section = render_markdown(result).split("## Corrected estimates per system")[1]
    assert says in text and says in section
    flags = {f for p in parameters(CompareOptions) for f in (p.opt.flag, *p.opt.flags) if f.startswith("--")}
    named = set(re.findall(r"--[a-z][a-z-]*", text + section))
    assert named <= flags, f"{case}: {sorted(named - flags)} are not options of compare"
    assert "mitigate estimate --" not in text + section
