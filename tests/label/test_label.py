"""``mitigate label`` without a browser: the labels file, blindness of everything the server sends, refusals,
the agreement view, and the trade with Label Studio and Argilla."""

from __future__ import annotations

import csv
import json
import re
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from mitigate.cli import app
from mitigate.data import load, load_recorded_runs
from mitigate.errors import DataError
from mitigate.label import (
    LabelServer,
    LabelSession,
    design,
    draw_per_system,
    export_labels,
    import_labels,
    one_server,
    read_selection,
)
from tests.label.toy import JUDGE, SYSTEMS, write_toy


def _session(tmp_path: Path, per_system: int = 4, pairwise: bool = False, criteria=("quality",)):
    bench_path, recorded = write_toy(tmp_path, pairwise=pairwise)
    bench = load(f"jsonl:{bench_path}")
    plan = draw_per_system(bench, list(criteria), per_system, seed=1)
    session = LabelSession.open(tmp_path / "labels.jsonl", bench, list(criteria), plan, seed=1)
    return session, next(iter(load_recorded_runs(recorded).values())), bench_path, recorded


class Client:
    """Every request of a page, keeping every byte the server sent."""

    def __init__(self, server: LabelServer):
        self.server = server
        self.received: list[str] = []

    def __call__(self, path: str, body: Any = None, *, token: bool = True, host: str | None = None):
        headers = {"X-Mitigate-Token": self.server.token} if token else {}
        if host:
            headers["Host"] = host
        data = None if body is None else json.dumps(body).encode()
        req = urllib.request.Request(f"http://127.0.0.1:{self.server.port}{path}", data=data, headers=headers)
        try:
            with urllib.request.urlopen(req, timeout=10) as r:
                status, text, head = r.status, r.read().decode(), dict(r.headers)
        except urllib.error.HTTPError as e:
            status, text, head = e.code, e.read().decode(), dict(e.headers)
        self.received.append(json.dumps(head) + text)
        return status, text, head


@pytest.fixture
def served(tmp_path):
    session, judge, *_ = _session(tmp_path)
    logged: list[str] = []
    server = LabelServer(session, judge=judge, log=logged.append)
    server.start()
    yield server, Client(server), logged
    server.stop()


def test_nothing_the_blind_server_sends_names_a_system_an_item_or_the_judge(served):
    server, get, _ = served
    session = server.session
    get(f"/?t={server.token}", token=False)
    for position in range(len(session.rows)):
        status, text, _ = get(f"/api/item?position={position}")
        assert status == 200
        assert set(json.loads(text)) == {
            "position",
            "task",
            "inputs",
            "outputs",
            "criteria",
            "labels",
            "progress",
        }
        get("/api/label", {"position": position, "labels": {"quality": 3}})
        get("/api/summary")  # refused while blind and unfinished... and answered once done
    sent = "\n".join(get.received[:-1])
    judge_scores = {v for r in session.rows for v in server.judge_of(r["id"]).values()}
    assert judge_scores  # the judge has values for these items: the server holds them but does not send them
    for secret in [*SYSTEMS, JUDGE, '"judge"', '"shown"', *(r["id"] for r in session.rows), "doc_id", "doc0"]:
        assert secret not in sent, secret
    assert "groups" in sent and "group 1" in sent  # progress per system, the systems unnamed
    # the one response that shows them is the agreement view once every item is labelled
    assert SYSTEMS[0] in get.received[-1] and JUDGE in get.received[-1]


def test_unblind_shows_the_id_systems_and_judge_value(tmp_path):
    session, judge, *_ = _session(tmp_path)
    server = LabelServer(session, judge=judge, blind=False, log=lambda line: None)
    server.start()
    get = Client(server)
    try:
        _, text, _ = get("/api/item?position=0")
        for position in range(3):
            session.label(position, {"quality": 2 + position})
        status, live, _ = get("/api/summary")  # open while labelling, the estimate waiting for its prefixes
    finally:
        server.stop()
    assert status == 200
    assert json.loads(live)["criteria"]["quality"]["agreement"]["all"]["n"] == 3
    shown = json.loads(text)["shown"]
    assert shown["id"] == session.rows[0]["id"] and shown["systems"][0] in SYSTEMS
    assert shown["judge"]["quality"] == server.judge_of(session.rows[0]["id"])["quality"]


def test_every_request_needs_the_token_and_the_loopback_host_and_pages_carry_a_strict_csp(served):
    server, get, logged = served
    assert get("/api/item", token=False)[0] == 403
    assert get(f"/?t={server.token}", host="evil.example:80", token=False)[0] == 403
    status, page, head = get(f"/?t={server.token}", token=False)
    assert status == 200
    csp = head["Content-Security-Policy"]
    nonce = re.search(r"'nonce-([^']+)'", csp).group(1)
    assert "default-src 'none'" in csp and "unsafe-inline" not in csp and "connect-src 'self'" in csp
    assert page.count(f'nonce="{nonce}"') == 2  # its one style and one script, nothing else runs
    assert not re.search(r"(src|href)=\"?https?:", page)  # nothing fetched from elsewhere
    assert head["Referrer-Policy"] == "no-referrer" and head["Cache-Control"] == "no-store"
    assert server.httpd.server_address[0] == "127.0.0.1"
    assert len(logged) == 2 and all(line.startswith("refused ") for line in logged)


def test_a_label_off_the_scale_is_refused_in_one_line_on_the_page_and_in_the_log(served):
    server, get, logged = served
    status, text, _ = get("/api/label", {"position": 0, "labels": {"quality": 7}})
    assert status == 400
    error = json.loads(text)["error"]
    assert "\n" not in error and "1 to 5" in error and "7" in error
    assert logged == [f"refused POST /api/label: {error}"]
    assert get("/api/label", {"position": 0, "labels": {"quality": 2.5}})[0] == 400  # off the grid
    assert server.session.rows[0]["labels"]["quality"] is None  # nothing written


def test_two_tabs_do_not_overwrite_each_other(served):
    server, get, _ = served
    assert get("/api/label", {"position": 0, "labels": {"quality": 4}, "expect": {"quality": None}})[0] == 200
    status, text, _ = get(
        "/api/label", {"position": 0, "labels": {"quality": 2}, "expect": {"quality": None}}
    )
    assert status == 409 and "another tab" in json.loads(text)["error"]
    assert server.session.rows[0]["labels"]["quality"] == 4.0


def test_each_label_is_in_the_file_at_once_and_reopening_resumes_at_the_first_unlabelled(tmp_path):
    session, *_ = _session(tmp_path)
    for position, value in ((0, 2), (1, 5), (3, 1)):  # the third item skipped
        session.label(position, {"quality": value}, labeller="ana")
    rows = [json.loads(line) for line in (tmp_path / "labels.jsonl").read_text().splitlines()]
    assert [r["labels"]["quality"] for r in rows[:4]] == [2.0, 5.0, None, 1.0]
    assert rows[0]["labeller"] == "ana" and rows[0]["at"]
    again = LabelSession.open(tmp_path / "labels.jsonl", session.bench, ["quality"])
    assert again.first_open() == 2
    assert [r["order"] for r in again.rows] == list(range(len(rows)))


def test_a_second_server_on_the_same_labels_file_is_refused(tmp_path):
    with one_server(tmp_path / "labels.jsonl"):
        with pytest.raises(DataError, match="open in another 'mitigate label'"):
            with one_server(tmp_path / "labels.jsonl"):
                pass


def test_a_pair_is_shown_in_a_recorded_random_order_and_its_label_stored_on_the_benchmarks(tmp_path):
    session, *_ = _session(tmp_path, pairwise=True)
    swaps = [r["swap"] for r in session.rows]
    assert True in swaps and False in swaps
    flipped = swaps.index(True)
    item = session.items[session.rows[flipped]["id"]]
    assert session.view(flipped, blind=True)["outputs"] == [item.output_b, item.output]
    session.label(flipped, {"quality": "A"})  # the first text shown, which is output_b
    assert session.rows[flipped]["labels"]["quality"] == "B"
    assert session.view(flipped, blind=True)["labels"]["quality"] == "A"


def test_an_item_the_benchmark_lacks_is_refused(tmp_path):
    bench_path, _ = write_toy(tmp_path)
    bench = load(f"jsonl:{bench_path}")
    with pytest.raises(DataError, match="1 ids are not in it"):
        LabelSession.open(
            tmp_path / "l.jsonl",
            bench,
            ["quality"],
            [{"id": "nope", "weight": 1, "probability": 1, "group": "x"}],
        )


def test_the_per_system_draw_weights_each_label_by_the_systems_pool_and_a_prefix_is_a_uniform_draw(tmp_path):
    session, *_ = _session(tmp_path, per_system=5)
    groups = {r["group"] for r in session.rows}
    assert groups == set(SYSTEMS)
    assert all(r["weight"] == 20 / 5 and r["probability"] == 5 / 20 for r in session.rows)
    first = session.rows[0]["group"]
    mine = [i for i, r in enumerate(session.rows) if r["group"] == first]
    session.label(mine[0], {"quality": 3})
    session.label(mine[2], {"quality": 3})  # the second skipped: the third waits for it
    used, weights, note = design(session, "quality")
    assert [r["id"] for r in used] == [session.rows[mine[0]]["id"]]
    assert weights == {session.rows[mine[0]]["id"]: 20.0} and "skipped" in note


def test_a_select_file_is_labelled_in_its_order_with_its_weights_and_estimate_reads_the_result(tmp_path):
    bench_path, recorded = write_toy(tmp_path, labelled=5)
    select = tmp_path / "selection.csv"
    args = ["-b", f"jsonl:{bench_path}", "-c", "quality", "--recorded", str(recorded)]
    ran = CliRunner().invoke(app, ["estimate", *args, "--select", "9", "--select-out", str(select)])
    assert ran.exit_code == 0, ran.output
    chosen = list(csv.DictReader(select.open()))
    bench = load(f"jsonl:{bench_path}")
    session = LabelSession.open(tmp_path / "labels.jsonl", bench, ["quality"], read_selection(select))
    assert [r["id"] for r in session.rows] == [r["id"] for r in chosen]
    assert [r["weight"] for r in session.rows] == [float(r["weight"]) for r in chosen]
    refused = CliRunner().invoke(app, ["estimate", *args, "--labels", str(session.path)])
    assert refused.exit_code != 0 and "9 of 9 selected items have no label" in refused.output
    assert design(session, "quality")[2].startswith("the --select round is unfinished")
    for position in range(len(session.rows)):
        session.label(position, {"quality": 1 + position % 5})
    done = CliRunner().invoke(app, ["estimate", *args, "--labels", str(session.path), "--json"])
    assert done.exit_code == 0, done.output
    groups = json.loads(done.stdout.splitlines()[0])["groups"]
    assert sum(g.get("n_weighted", 0) for g in groups) == 9


def test_the_agreement_view_has_kappa_spearman_a_matrix_and_corrected_estimates_per_system(tmp_path):
    from mitigate.label import summary

    session, judge, *_ = _session(tmp_path, per_system=6)
    for position in range(len(session.rows)):
        session.label(position, {"quality": 1 + position % 5})
    found = summary(session, judge, plan=0.5)["criteria"]["quality"]
    assert set(found["agreement"]) == {*SYSTEMS, "all"}
    everything = found["agreement"]["all"]
    assert everything["n"] == 18 and len(everything["confusion"]) == 5
    assert sum(map(sum, everything["confusion"])) == 18
    assert everything["kappa_quadratic"]["low"] <= everything["kappa_quadratic"]["value"]
    assert {g["group"] for g in found["estimate"]} == set(SYSTEMS)
    assert set(found["plan"]) == set(SYSTEMS)


def test_label_studio_and_argilla_tasks_go_out_blind_and_their_annotations_come_back(tmp_path):
    session, *_ = _session(tmp_path, criteria=("quality", "fluency"))
    tasks_file = tmp_path / "tasks.json"
    written = export_labels(session, "label-studio", tasks_file)
    tasks = json.loads(tasks_file.read_text())
    assert written[1].suffix == ".xml" and '<Choices name="fluency"' in written[1].read_text()
    text = tasks_file.read_text() + (tmp_path / "tasks.xml").read_text()
    assert not any(s in text for s in SYSTEMS)
    # what Label Studio's JSON export gives back: the task's data, its annotations' result regions
    exported = [
        {
            "id": 100 + i,
            "data": t["data"],
            "annotations": [
                {
                    "result": [
                        {
                            "from_name": "quality",
                            "to_name": "output",
                            "type": "choices",
                            "value": {"choices": ["1"]},
                        }
                    ],
                    "was_cancelled": False,
                    "completed_by": 3,
                },
                {
                    "result": [
                        {
                            "from_name": "quality",
                            "to_name": "output",
                            "type": "choices",
                            "value": {"choices": [str(1 + i % 5)]},
                        },
                        {
                            "from_name": "fluency",
                            "to_name": "output",
                            "type": "rating",
                            "value": {"rating": 5},
                        },
                    ],
                    "was_cancelled": False,
                    "completed_by": 7,
                },
            ],
        }
        for i, t in enumerate(tasks[:5])
    ]
    back = tmp_path / "ls_export.json"
    back.write_text(json.dumps(exported))
    assert import_labels(session, back, "label-studio") == 5
    assert [r["labels"] for r in session.rows[:2]] == [
        {"quality": 1.0, "fluency": 5.0},
        {"quality": 2.0, "fluency": 5.0},
    ]
    assert session.rows[0]["labeller"] == "7"

    records_file = tmp_path / "records.json"
    export_labels(session, "argilla", records_file)
    records = json.loads(records_file.read_text())
    assert set(records[0]) == {"id", "fields"} and "output" in records[0]["fields"]
    nested = [
        {
            "id": r["id"],
            "fields": r["fields"],
            "responses": {
                "quality": [{"value": 4, "user_id": "u1"}],
                "fluency": [{"value": 2, "user_id": "u1"}],
            },
        }
        for r in records[5:8]
    ]
    flat = [
        {
            "id": records[8]["id"],
            "quality.responses": [3],
            "quality.responses.users": ["u2"],
            "fluency.responses": [1],
        }
    ]
    (tmp_path / "argilla.json").write_text(json.dumps(nested + flat))
    assert import_labels(session, tmp_path / "argilla.json", "argilla") == 4
    assert session.rows[5]["labels"] == {"quality": 4.0, "fluency": 2.0}
    assert (
        session.rows[8]["labels"] == {"quality": 3.0, "fluency": 1.0} and session.rows[8]["labeller"] == "u2"
    )

    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps([{"id": "0", "responses": {"quality": [{"value": 9}]}}]))
    with pytest.raises(DataError, match=r"task 1 \(key 0\): expected a label on 'quality'"):
        import_labels(session, bad, "argilla")
    bad.write_text(json.dumps([{"id": "999", "responses": {"quality": [{"value": 2}]}}]))
    with pytest.raises(DataError, match="expected a key from 0 to"):
        import_labels(session, bad, "argilla")


def test_the_command_exports_csv_estimate_reads_and_the_benchmark_jsonl_loads(tmp_path):
    session, _, bench_path, recorded = _session(tmp_path)
    for position in range(len(session.rows)):
        session.label(position, {"quality": 2 + position % 3})
    base = ["label", "-b", f"jsonl:{bench_path}", "-c", "quality", "-o", str(session.path)]
    for fmt, name in (("csv", "labels.csv"), ("jsonl", "labelled.jsonl")):
        ran = CliRunner().invoke(app, [*base, "--export", fmt, "--to", str(tmp_path / name)])
        assert ran.exit_code == 0, ran.output
    est = CliRunner().invoke(
        app,
        [
            "estimate",
            "-b",
            f"jsonl:{bench_path}",
            "--recorded",
            str(recorded),
            "--labels",
            str(tmp_path / "labels.csv"),
        ],
    )
    assert est.exit_code == 0, est.output
    labelled = load(f"jsonl:{tmp_path / 'labelled.jsonl'}")
    assert len(labelled.items) == 12 and all("quality" in it.human for it in labelled.items)
    refused = CliRunner().invoke(app, [*base, "--export", "csv"])
    assert refused.exit_code != 0 and "--to" in refused.output


def test_a_csv_of_several_criteria_has_a_label_column_each_that_estimate_reads(tmp_path):
    session, _, bench_path, recorded = _session(tmp_path, criteria=("quality", "fluency"))
    for position in range(len(session.rows)):
        session.label(position, {"quality": 1 + position % 5, "fluency": 5 - position % 3})
    out = export_labels(session, "csv", tmp_path / "labels.csv")[0]
    header = out.read_text().splitlines()[0]
    assert header.startswith("id,label.quality,label.fluency,weight")
    ran = CliRunner().invoke(
        app,
        ["estimate", "-b", f"jsonl:{bench_path}", "-c", "quality", "--recorded", str(recorded)]
        + ["--labels", str(out), "--json"],
    )
    assert ran.exit_code == 0, ran.output
    groups = json.loads(ran.stdout.splitlines()[0])["groups"]
    assert sum(g["n_labelled"] for g in groups) == 12
