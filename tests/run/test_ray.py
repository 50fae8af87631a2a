"""mitigate on Ray Data: the judge as a batch transform (JudgeBatches, tested without Ray), and on a local Ray
cluster (a head and a separate worker node process; skipped when Ray is not installed): ``judge --engine ray``
writes the records a plain run writes, and a worker killed half way repeats no LM call."""

from __future__ import annotations

import json
import os
import signal
import sys
import threading
import time
import zlib
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from mitigate import Item, JudgePrompt, PromptJudge
from mitigate.cli import app
from mitigate.judge import Judgment
from mitigate.lm import FakeLM, get
from mitigate.run import JudgeBatches, batch_key
from mitigate.testing import StubOpenAIServer

TEMPLATE = "Rate the fluency of the text from 1 to 5.\n\nText: {{output}}\n\nAnswer 'Score: N'."


def reply(body: dict[str, Any]) -> str:
    """``Score: N`` from a hash of the prompt, or (one prompt in six) an answer with no score."""
    k = zlib.crc32(str(body["messages"][-1]["content"]).encode()) % 6
    return "I cannot tell." if k == 5 else f"Reads well. Score: {1 + k}"


def items(n: int) -> list[Item]:
    return [
        Item(id=f"t{k:04d}", output=f"Text {k}: the streets were quiet.", human={"fluency": 3})
        for k in range(n)
    ]


def batch_of(chosen: list[Item]) -> dict[str, list[str]]:
    return {"item": [it.model_dump_json() for it in chosen]}


def test_a_batch_is_judged_in_order_and_its_journal_serves_the_batch_run_again(tmp_path):
    lm = FakeLM(lambda request: "Score: 4" if "Text 1:" not in request.messages[-1].content else "no idea")
    judge = PromptJudge(JudgePrompt.from_template(TEMPLATE, criterion="fluency"), lm)
    transform = JudgeBatches(judge, tmp_path, criterion="fluency")
    chosen = items(3)
    out = transform(batch_of(chosen))
    assert out["id"] == ["t0000", "t0001", "t0002"]
    assert out["score"] == [4.0, None, 4.0] and out["resumed"] == [False, False, False]
    failed = Judgment.model_validate_json(out["judgment"][1])
    assert failed.failures and failed.scores["fluency"] is None  # a parse failure is recorded, never a score
    assert out["item"] == batch_of(chosen)["item"]  # the input columns come back beside the judgment
    assert (tmp_path / "journals" / f"{batch_key([it.id for it in chosen])}.jsonl").is_file()
    calls = len(lm.requests)
    # as a batch Ray runs again after its worker died: every judgment (the parse failure too) from the journal
    again = JudgeBatches(judge, tmp_path, criterion="fluency")(batch_of(chosen))
    assert len(lm.requests) == calls and again["resumed"] == [True, True, True]
    assert again["judgment"] == out["judgment"]


def test_a_batch_without_the_item_column_is_refused_in_one_line():
    judge = PromptJudge(JudgePrompt.from_template(TEMPLATE, criterion="fluency"), FakeLM(["Score: 4"]))
    with pytest.raises(Exception, match=r"expected a column 'item' of items as JSON; got columns \['text'\]"):
        JudgeBatches(judge)({"text": ["{}"]})


def test_engine_ray_without_ray_installed_names_the_extra(tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "ray", None)
    bench = write_bench(tmp_path, 2)
    result = CliRunner().invoke(app, judge_args(tmp_path, bench, "http://127.0.0.1:9/v1", "--engine", "ray"))
    assert result.exit_code != 0
    assert "pip install 'mitigate[ray]'" in result.output


# --------------------------------------------------------------------------- on a local Ray cluster


def write_bench(folder: Path, n: int) -> Path:
    path = folder / "bench.jsonl"
    rows = [{"benchmark": {"name": "raytest", "criteria": ["fluency"], "scale": [1, 5]}}]
    rows += [
        {
            "id": f"t{k:04d}",
            "doc_id": f"d{k // 3}",
            "system": f"S{k % 3}",
            "output": f"Text {k}: it rained.",
            "human": {"fluency": 1 + k % 5},
        }
        for k in range(n)
    ]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    (folder / "prompt.txt").write_text(TEMPLATE)
    return path


def judge_args(folder: Path, bench: Path, url: str, *extra: str) -> list[str]:
    return [
        "judge",
        "-b",
        f"jsonl:{bench}",
        "--prompt",
        str(folder / "prompt.txt"),
        "--backend",
        "openai:stub",
        "--base-url",
        url,
        "-n",
        "0",
        "--no-progress",
        "--no-cache",
        *extra,
    ]


@pytest.fixture(scope="module")
def cluster():
    """A Ray cluster on this machine: a head node and a separate worker node process, one CPU each."""
    pytest.importorskip("ray.data")
    import ray
    from ray.cluster_utils import Cluster

    os.environ.setdefault("OPENAI_API_KEY", "sk-test")  # the workers inherit the driver's environment
    made = Cluster(initialize_head=True, head_node_args={"num_cpus": 1, "include_dashboard": False})
    made.add_node(num_cpus=1)
    ray.init(address=made.address, log_to_driver=False)
    yield made
    ray.shutdown()
    made.shutdown()


@pytest.mark.slow
def test_judge_on_ray_writes_the_records_a_plain_run_writes(cluster, tmp_path, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    bench = write_bench(tmp_path, 120)
    with StubOpenAIServer(latency=0.0, reply=reply, record=False) as server:
        plain = CliRunner().invoke(
            app, judge_args(tmp_path, bench, server.base_url, "--out", str(tmp_path / "a.jsonl"))
        )
        assert server.request_count == 120
        on_ray = CliRunner().invoke(
            app,
            judge_args(
                tmp_path,
                bench,
                server.base_url,
                "--engine",
                "ray",
                "--out",
                str(tmp_path / "b.jsonl"),
                "--run-dir",
                str(tmp_path / "run"),
            ),
        )
        assert server.request_count == 240
    assert plain.exit_code == on_ray.exit_code == 0, on_ray.output
    first, second = (tmp_path / "a.jsonl").read_text(), (tmp_path / "b.jsonl").read_text()
    assert first == second  # ids, scores and failures, in item order
    rows = [json.loads(line) for line in first.splitlines()]
    assert len(rows) == 120 and 0 < sum(r["score"] is None for r in rows) < 120
    assert plain.stdout == on_ray.stdout
    assert "120 items (0 resumed, 120 judged now)" in on_ray.stderr
    import pyarrow.parquet as pq

    table = pq.read_table(tmp_path / "run" / "results.parquet")
    assert table.column("id").to_pylist() == [r["item_id"] for r in rows]
    assert table.column("score").to_pylist() == [r["score"] for r in rows]


@pytest.mark.slow
def test_a_worker_killed_half_way_repeats_no_lm_call(cluster, tmp_path):
    import ray

    from mitigate.run import judge_dataset

    n = 400
    pids = tmp_path / "pids"
    pids.mkdir()
    (tmp_path / "items.jsonl").write_text("".join(it.model_dump_json() + "\n" for it in items(n)))
    with StubOpenAIServer(latency=0.02, reply=reply) as server:
        url = server.base_url

        def build() -> PromptJudge:  # runs on the worker: it leaves its pid where the test finds it
            (pids / str(os.getpid())).touch()
            lm = get("openai:stub", base_url=url)
            return PromptJudge(JudgePrompt.from_template(TEMPLATE, criterion="fluency"), lm)

        def dataset() -> Any:
            source = ray.data.read_text(str(tmp_path / "items.jsonl"))
            return judge_dataset(
                source,
                build,
                tmp_path / "run",
                workers=2,
                batch_size=20,
                item_column="text",
                concurrency=2,
                criterion="fluency",
            )

        killed: list[int] = []

        def kill_half_way() -> None:
            while server.request_count < n // 2:
                time.sleep(0.01)
            pid = int(sorted(pids.iterdir(), key=lambda p: p.stat().st_mtime)[0].name)
            os.kill(pid, signal.SIGKILL)
            killed.append(pid)

        killer = threading.Thread(target=kill_half_way, daemon=True)
        killer.start()
        first = dataset().take_all()
        killer.join(timeout=60)
        assert killed, "no worker was killed"
        assert sorted(r["id"] for r in first) == [it.id for it in items(n)]  # nothing lost
        # the retried batch read its journal: a call is made again only when it was in flight at the kill (its
        # answer never came back), at most --concurrency of them
        sent = Counter(body["messages"][-1]["content"] for body in server.bodies)
        assert len(sent) == n and sum(sent.values()) - n <= 2
        again = dataset().take_all()  # a rerun, as after a killed driver: no call at all
        assert len(server.bodies) == sum(sent.values())
    assert all(r["resumed"] for r in again)
    assert {r["id"]: r["judgment"] for r in again} == {r["id"]: r["judgment"] for r in first}


@pytest.mark.slow
def test_spark_map_in_pandas_runs_the_same_transform(tmp_path, monkeypatch):
    """The docs' Spark use: JudgeBatches per partition through mapInPandas, on a local Spark."""
    pytest.importorskip("pyspark")
    import shutil

    if shutil.which("java") is None:
        pytest.skip("Spark needs Java")
    import pandas as pd
    from pyspark.sql import SparkSession

    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(p for p in sys.path if p))  # the Python workers' imports
    chosen = items(30)
    with StubOpenAIServer(latency=0.0, reply=reply, record=False) as server:
        judge = PromptJudge(
            JudgePrompt.from_template(TEMPLATE, criterion="fluency"),
            get("openai:stub", base_url=server.base_url),
        )
        folder = str(tmp_path / "run")

        def judge_partitions(batches):
            transform = JudgeBatches(judge, folder, criterion="fluency")
            for frame in batches:
                yield pd.DataFrame(transform(frame))

        spark = SparkSession.builder.master("local[1]").config("spark.ui.enabled", "false").getOrCreate()
        try:
            frame = spark.createDataFrame(pd.DataFrame(batch_of(chosen)))
            schema = "item string, id string, judgment string, score double, error string, resumed boolean"
            rows = frame.mapInPandas(judge_partitions, schema).collect()
        finally:
            spark.stop()
        assert server.request_count == 30
    expected = JudgeBatches(
        PromptJudge(
            JudgePrompt.from_template(TEMPLATE, criterion="fluency"),
            FakeLM(lambda r: reply({"messages": [{"content": r.messages[-1].content}]})),
        ),
        criterion="fluency",
    )(batch_of(chosen))
    assert sorted((r["id"], r["score"]) for r in rows) == sorted(
        zip(expected["id"], expected["score"], strict=True)
    )
