"""Runs of any length in bounded memory: run_stream, the journal's index, benchmark files read as streams, the
results' columns and outputs written as judgments come."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

from mitigate import Item, JudgePrompt, PromptJudge
from mitigate.data import load_jsonl, open_benchmark, select_items
from mitigate.data._stream import scan_jsonl
from mitigate.errors import ConfigError, DataError
from mitigate.judge import Judgment, ParseFailure
from mitigate.lm import LM, Choice, LMRequest, LMResponse, Usage
from mitigate.paths import open_output
from mitigate.run import Columns, ColumnWriter, Journal, RunResult, Tally, run, run_stream
from mitigate.run import _journal as journal_module

TEMPLATE = "Rate the text from 1 to 5.\nText: {{output}}\nScore:"


class ScoreLM(LM):
    """Answers "Score: N" with N from the text's number, after a delay that can differ per text."""

    provider = "score"

    def __init__(self, delay: dict[str, float] | None = None) -> None:
        self.delay = delay or {}
        self.calls = 0

    async def complete(self, request: LMRequest) -> LMResponse:
        self.calls += 1
        text = request.messages[-1].content
        number = int(text.split("Text: t", 1)[1].split("\n", 1)[0])
        await asyncio.sleep(self.delay.get(f"t{number}", 0.0))
        return LMResponse(
            choices=(Choice(text=f"Score: {1 + number % 5}"),),
            usage=Usage(prompt_tokens=10, completion_tokens=2),
            cost_usd=0.001,
        )


def _items(n: int) -> list[Item]:
    return [Item(id=f"it{i}", output=f"t{i}", human={"score": 3.0}) for i in range(n)]


def _judge(lm: LM) -> PromptJudge:
    return PromptJudge(JudgePrompt.from_template(TEMPLATE), lm)


async def test_run_stream_yields_in_item_order_and_keeps_at_most_window_items_in_hand() -> None:
    lm = ScoreLM(delay={"t0": 0.05, "t7": 0.03})  # slow items hold up the order, never the window bound
    pulled = [0]

    def items():  # a one-pass iterator: read as the run goes
        for it in _items(40):
            pulled[0] += 1
            yield it

    seen, in_hand = [], []
    async with run_stream(_judge(lm), items(), concurrency=3, window=5, progress=False) as stream:
        async for item, judgment in stream:
            in_hand.append(pulled[0] - len(seen))
            seen.append((item.id, judgment.item_id, judgment.scores["score"]))
    assert [s[0] for s in seen] == [f"it{i}" for i in range(40)]
    assert all(a == b for a, b, _ in seen) and [s[2] for s in seen] == [1.0 + i % 5 for i in range(40)]
    assert max(in_hand) <= 5
    assert stream.summary.items == 40 and stream.summary.ok == 40 and stream.summary.calls == 40


async def test_run_stream_refuses_a_repeated_id_in_a_one_pass_iterator_before_judging_it() -> None:
    lm = ScoreLM()
    items = iter([*_items(3), Item(id="it1", output="t9")])
    with pytest.raises(DataError, match="'it1' appears more than once"):
        async with run_stream(_judge(lm), items, progress=False) as stream:
            async for _ in stream:
                pass
    assert lm.calls <= 3  # the repeated item itself is never sent


async def test_run_stream_checks_the_ids_of_an_iterable_read_more_than_once_as_it_reads_them() -> None:
    class Twice:
        def __iter__(self):
            return iter([*_items(2), Item(id="it0", output="t5")])

    with pytest.raises(DataError, match="'it0' appears more than once"):
        async with run_stream(_judge(ScoreLM()), Twice(), progress=False) as stream:
            async for _ in stream:
                pass


async def test_run_stream_must_be_entered_before_it_is_iterated() -> None:
    stream = run_stream(_judge(ScoreLM()), _items(2), progress=False)
    with pytest.raises(ConfigError, match="async with run_stream"):
        stream.__aiter__()


async def test_resumed_judgments_are_read_back_from_the_journal_in_their_place(tmp_path: Path) -> None:
    journal = tmp_path / "j.jsonl"
    first = await run(_judge(ScoreLM()), _items(6), journal=journal, progress=False)
    lm = ScoreLM()
    again = await run(_judge(lm), _items(9), journal=journal, progress=False)
    assert lm.calls == 3
    assert again.judgments[:6] == first.judgments
    assert [j.item_id for j in again.judgments] == [f"it{i}" for i in range(9)]
    assert again.summary.resumed == 6 and again.summary.judged_now == 3


async def test_ids_that_share_a_journal_key_are_judged_again_never_given_anothers_judgment(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(journal_module, "id_hash", lambda item_id: 7)  # every id shares one key
    journal = tmp_path / "j.jsonl"
    await run(_judge(ScoreLM()), _items(5), journal=journal, progress=False)
    lm = ScoreLM()
    again = await run(_judge(lm), _items(5), journal=journal, progress=False)
    assert [j.item_id for j in again.judgments] == [f"it{i}" for i in range(5)]
    assert [j.scores["score"] for j in again.judgments] == [1.0, 2.0, 3.0, 4.0, 5.0]
    assert lm.calls == 4  # only the id whose line the key points at is read back


def test_journal_index_keeps_the_last_line_of_each_item(tmp_path: Path) -> None:
    path = tmp_path / "j.jsonl"
    a, b, c = (Item(id=i, output=f"text {i}") for i in "abc")
    good = Judgment(item_id="a", scores={"score": 2.0})
    jr = Journal(path, "fp")
    jr.record(a, good)
    jr.record(b, Judgment(item_id="b", scores={"score": 3.0}))
    jr.record(b, Judgment(item_id="b", error="LMCallError: no"))
    jr.close()
    jr = Journal(path, "fp")
    try:
        assert len(jr) == 1 and a in jr and b not in jr
        assert jr.get(a) == good and jr.get(b) is None and jr.get(c) is None
        assert jr.get(a.model_copy(update={"output": "text a, rewritten"})) is None and jr.changed == 1
    finally:
        jr.close()


async def test_a_rerun_judges_again_the_items_whose_texts_changed_under_the_same_ids(tmp_path: Path) -> None:
    journal = tmp_path / "j.jsonl"
    items = _items(30)
    await run(_judge(ScoreLM()), items, journal=journal, progress=False)
    rewritten = [
        it.model_copy(update={"output": f"t{100 + i}"}) if i % 3 == 0 else it for i, it in enumerate(items)
    ]
    lm = ScoreLM()
    again = await run(_judge(lm), rewritten, journal=journal, progress=False)
    assert lm.calls == 10 and again.summary.rejudged == 10 and again.summary.resumed == 20
    assert "10 of them again as their texts changed" in again.summary.line()
    expected = [1.0 + int(it.output[1:]) % 5 for it in rewritten]  # every verdict is of the text judged
    assert [j.scores["score"] for j in again.judgments] == expected
    lm = ScoreLM()
    unchanged = await run(_judge(lm), rewritten, journal=journal, progress=False)
    assert lm.calls == 0 and unchanged.summary.resumed == 30 and unchanged.summary.rejudged == 0


async def test_a_journal_written_without_content_keys_is_said_and_judged_again(tmp_path: Path) -> None:
    journal = tmp_path / "j.jsonl"
    judge = _judge(ScoreLM())
    old = [Judgment(item_id=f"it{i}", scores={"score": 5.0}) for i in range(4)]  # verdicts of other texts
    header = {"journal": 1, "judge": judge.fingerprint()}
    journal.write_text(
        "".join(json.dumps(x) + "\n" for x in [header, *(j.model_dump(mode="json") for j in old)])
    )
    lm = ScoreLM()
    with pytest.warns(Warning, match="4 judgment.*without the content of the item.*judged again"):
        result = await run(_judge(lm), _items(4), journal=journal, progress=False)
    assert lm.calls == 4 and [j.scores["score"] for j in result.judgments] == [1.0, 2.0, 3.0, 4.0]
    lm = ScoreLM()
    again = await run(_judge(lm), _items(4), journal=journal, progress=False)  # keyed now: resumed
    assert lm.calls == 0 and again.summary.resumed == 4


def test_tally_counts_judgments_errors_parse_failures_and_an_unknown_cost() -> None:
    judgments = [
        Judgment(item_id="a", scores={"s": 3.0}, calls=1, usage=Usage(prompt_tokens=5), cost_usd=0.5),
        Judgment(item_id="b", error="LMCallError: refused"),
        Judgment(
            item_id="c",
            scores={"s": None},
            failures=(ParseFailure(criterion="s", raw="x", reason="no score"),),
            cached_calls=1,
            cost_usd=None,
        ),
    ]
    tally = Tally()
    for j in judgments:
        tally.add(j)
    summary = tally.summary()
    assert (summary.items, summary.ok, summary.errors, summary.parse_failures) == (3, 1, 1, 1)
    assert summary.cost_usd is None and summary.usage.prompt_tokens == 5
    assert tally.first_error == "LMCallError: refused" and tally.first_failure.reason == "no score"


# --------------------------------------------------------------------------- benchmark files read as streams


def _bench_file(path: Path, rows: list[dict]) -> Path:
    path.write_text(
        json.dumps({"benchmark": {"name": "b", "scale": [1, 5]}})
        + "\n"
        + "".join(json.dumps(r) + "\n" for r in rows)
    )
    return path


@pytest.mark.parametrize("limit", [0, 1, 4, 7])
def test_a_scanned_file_gives_the_items_a_loaded_one_gives_in_document_order(
    tmp_path: Path, limit: int
) -> None:
    rows = [
        {
            "id": f"x{i}",
            "doc_id": f"d{(i * 5) % 3}",
            "system": f"S{i % 2}",
            "output": f"o{i}",
            "human": {"flu": 1 + i % 5},
        }
        for i in range(10)
    ]  # documents interleaved: the order groups them
    path = _bench_file(tmp_path / "b.jsonl", rows)
    streamed = scan_jsonl(path, limit)
    loaded = load_jsonl(path)
    assert list(streamed.items) == select_items(loaded.items, limit or None)
    assert list(streamed.items) == list(streamed.items)  # read again from the file, the same
    assert len(streamed.items) == (limit or 10)
    assert streamed.summary() == loaded.summary() and streamed.criteria == loaded.criteria


def test_a_file_in_document_order_is_read_straight_through(tmp_path: Path) -> None:
    rows = [{"id": f"x{i}", "doc_id": f"d{i // 3}", "output": f"o{i}"} for i in range(7)]
    streamed = scan_jsonl(_bench_file(tmp_path / "b.jsonl", rows))
    assert [it.id for it in streamed.items] == [f"x{i}" for i in range(7)]


def test_a_scanned_file_refuses_what_load_jsonl_refuses_naming_the_same_line(tmp_path: Path) -> None:
    rows = [{"id": "x0", "output": "a"}, {"id": "x1", "output": "b"}, {"id": "x0", "output": "c"}]
    path = _bench_file(tmp_path / "b.jsonl", rows)
    with pytest.raises(DataError) as loaded:
        load_jsonl(path)
    with pytest.raises(DataError) as scanned:
        scan_jsonl(path)
    assert str(scanned.value) == str(loaded.value) and ":4: expected a unique 'id'" in str(scanned.value)
    (tmp_path / "bad.jsonl").write_text('{"id": "x0", "output": "a"}\n{"id": "x1", "outputs": "b"}\n')
    with pytest.raises(DataError, match=r"bad.jsonl:2: expected only the keys"):
        scan_jsonl(tmp_path / "bad.jsonl")


def test_a_file_changed_after_its_scan_is_refused_when_read(tmp_path: Path) -> None:
    path = _bench_file(tmp_path / "b.jsonl", [{"id": f"x{i}", "output": f"o{i}"} for i in range(3)])
    streamed = scan_jsonl(path)
    with path.open("a") as fh:
        fh.write(json.dumps({"id": "x0", "output": "again"}) + "\n")
    with pytest.raises(DataError, match="changed while it was being read"):
        list(streamed.items)


def test_other_benchmarks_open_whole_behind_the_same_interface(tmp_path: Path) -> None:
    path = _bench_file(tmp_path / "b.jsonl", [{"id": f"x{i}", "output": f"o{i}"} for i in range(3)])
    streamed = open_benchmark(f"jsonl:{path}", 2)
    assert [it.id for it in streamed.items] == ["x0", "x1"] and streamed.count == 3


# --------------------------------------------------------------------------- the results' columns


async def test_the_columns_read_back_as_the_frame_of_the_run_result(tmp_path: Path) -> None:
    pd = pytest.importorskip("pandas")
    items = _items(7)
    result = await run(_judge(ScoreLM()), items, progress=False)
    failed = Judgment(item_id="it7", error="LMCallError: refused")
    judgments = [*result.judgments, failed]
    with ColumnWriter(tmp_path / "r.sqlite", {"benchmark": "b"}, criterion="score") as writer:
        for item, j in zip([*items, Item(id="it7", output="t7")], judgments, strict=True):
            writer.append(item, j)
    columns = Columns(tmp_path / "r.sqlite")
    try:
        expected = type(result)(judgments=tuple(judgments), summary=result.summary).to_pandas(
            [*items, Item(id="it7", output="t7")], criterion="score"
        )
        pd.testing.assert_frame_equal(columns.to_pandas(criterion="score"), expected)
        assert columns.column("score")[:7].tolist() == [1.0 + i % 5 for i in range(7)]
        assert len(columns) == 8 and columns.column("ok").tolist() == [1.0] * 7 + [0.0]
        assert columns.about["benchmark"] == "b"
        with pytest.raises(ConfigError, match="expected a column of"):
            columns.column("nope")
    finally:
        columns.close()


def test_stored_judgments_read_each_entry_back_whole_across_blocks_when_entries_interleave(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from mitigate.run import _columns as columns_module

    monkeypatch.setattr(columns_module, "BATCH", 3)  # blocks of 3: every read crosses blocks
    made = {
        e: [
            Judgment(
                item_id=f"it{k}",
                scores={"s": float(k)},
                samples={"s": (float(k), None)},
                raw=(f"Score: {k}",),
                meta={"entry": e, "k": k},
                cost_usd=None,
            )
            for k in range(8)
        ]
        for e in ("a", "b")
    }
    with ColumnWriter(tmp_path / "r.sqlite") as writer:
        for k in range(8):  # the two entries' rows alternate, as entries judged through one batch do
            for e in ("a", "b"):
                writer.append(None, made[e][k], entry=e)
    with Columns(tmp_path / "r.sqlite") as columns:
        for e in ("a", "b"):
            stored = columns.judgments(e)
            assert len(stored) == 8 and list(stored) == made[e]
            assert [stored[k] for k in (7, 0, 4, -1)] == [made[e][k] for k in (7, 0, 4, -1)]
            assert stored[2:5] == made[e][2:5]
            with pytest.raises(IndexError):
                stored[8]
            assert RunResult(judgments=stored, summary=Tally().summary()).judgments is stored  # never copied
        assert len(columns.judgments()) == 16


def test_a_column_writer_whose_block_fails_leaves_the_older_file(tmp_path: Path) -> None:
    target = tmp_path / "r.sqlite"
    with ColumnWriter(target) as writer:
        writer.append(None, Judgment(item_id="a", scores={"s": 1.0}))
    with pytest.raises(RuntimeError), ColumnWriter(target) as writer:
        writer.append(None, Judgment(item_id="b", scores={"s": 2.0}))
        raise RuntimeError("killed")
    with Columns(target) as columns:
        assert columns.column("item").tolist() == ["a"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["r.sqlite"]


def test_open_output_puts_the_file_in_place_only_when_its_block_ends(tmp_path: Path) -> None:
    target = tmp_path / "out.jsonl"
    target.write_text("old\n")
    with open_output(target, "--out") as fh:
        fh.write("new 1\n")
        fh.flush()
        assert target.read_text() == "old\n"
        fh.write("new 2\n")
    assert target.read_text() == "new 1\nnew 2\n"
    with pytest.raises(RuntimeError), open_output(target, "--out") as fh:
        fh.write("half\n")
        raise RuntimeError("stopped")
    assert target.read_text() == "new 1\nnew 2\n" and [p.name for p in tmp_path.iterdir()] == ["out.jsonl"]


# --------------------------------------------------------------------------- judge writes as judgments come


def _cli_bench(tmp_path: Path, n: int) -> list[str]:
    rows = [
        {
            "id": f"x{i}",
            "doc_id": f"d{i % 2}",
            "inputs": {"source": f"Article {i}."},
            "output": f"Summary {i}.",
            "human": {"fluency": 1.0 + i % 5},
        }
        for i in range(n)
    ]
    (tmp_path / "bench.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    (tmp_path / "prompt.txt").write_text(
        "Rate the fluency from 1 to 5.\n\nArticle: {{source}}\nSummary: {{summary}}\n\nScore:"
    )
    return [
        "judge",
        "-b",
        f"jsonl:{tmp_path / 'bench.jsonl'}",
        "-c",
        "fluency",
        "--prompt",
        str(tmp_path / "prompt.txt"),
        "--backend",
        "openai:stub-model",
        "-n",
        "0",
        "--no-progress",
    ]


def test_judge_writes_out_and_the_columns_in_item_order(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from typer.testing import CliRunner

    from mitigate.cli import app
    from mitigate.testing import StubOpenAIServer

    monkeypatch.setenv("MITIGATE_CACHE_DIR", str(tmp_path / "cache"))
    args = _cli_bench(tmp_path, 6)
    with StubOpenAIServer(latency=0.0, reply="Score: 2") as server:
        result = CliRunner().invoke(
            app,
            [
                *args,
                "--base-url",
                server.base_url,
                "--run-dir",
                str(tmp_path / "run"),
                "--out",
                str(tmp_path / "out.jsonl"),
                "--concurrency",
                "3",
            ],
        )
    assert result.exit_code == 0, result.output
    order = ["x0", "x2", "x4", "x1", "x3", "x5"]  # document by document
    rows = [json.loads(line) for line in (tmp_path / "out.jsonl").read_text().splitlines()]
    assert [r["item_id"] for r in rows] == order and {r["score"] for r in rows} == {2.0}
    assert [line.split("\t")[0] for line in result.stdout.splitlines()] == order
    with Columns(tmp_path / "run" / "results.sqlite") as columns:
        assert columns.column("item").tolist() == order
        assert columns.column("human").tolist() == [1.0, 3.0, 5.0, 2.0, 4.0, 1.0]
        assert columns.about["criterion"] == "fluency"
    assert "wrote " + str(tmp_path / "out.jsonl") + " (6 rows)" in result.stderr


def test_an_out_that_cannot_be_written_lets_the_run_finish_and_exits_1_naming_the_journal(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from typer.testing import CliRunner

    from mitigate.cli import app
    from mitigate.testing import StubOpenAIServer

    if not Path("/dev/full").exists():
        pytest.skip("needs /dev/full")
    monkeypatch.setenv("MITIGATE_CACHE_DIR", str(tmp_path / "cache"))
    args = _cli_bench(tmp_path, 4)
    with StubOpenAIServer(latency=0.0, reply="Score: 2") as server:
        result = CliRunner().invoke(
            app,
            [*args, "--base-url", server.base_url, "--run-dir", str(tmp_path / "run"), "--out", "/dev/full"],
        )
        calls = server.request_count
    assert result.exit_code == 1
    journal = tmp_path / "run" / "journal.jsonl"
    assert "--out /dev/full" in result.stderr and f"kept in the journal {journal}" in result.stderr
    assert calls == 4
    with Columns(tmp_path / "run" / "results.sqlite") as columns:
        assert len(columns) == 4
    assert json.loads((tmp_path / "run" / "results.json").read_text())["summary"]["ok"] == 4


def test_a_stopped_run_leaves_out_and_the_columns_as_they_were(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from typer.testing import CliRunner

    from mitigate.cli import app
    from mitigate.testing import StubOpenAIServer

    monkeypatch.setenv("MITIGATE_CACHE_DIR", str(tmp_path / "cache"))
    args = _cli_bench(tmp_path, 5)
    (tmp_path / "out.jsonl").write_text("before\n")
    with StubOpenAIServer(latency=0.0, fail_first=100, fail_status=401) as server:
        result = CliRunner().invoke(
            app,
            [
                *args,
                "--base-url",
                server.base_url,
                "--run-dir",
                str(tmp_path / "run"),
                "--out",
                str(tmp_path / "out.jsonl"),
            ],
        )
    assert result.exit_code == 1 and "run stopped" in result.stderr
    assert (tmp_path / "out.jsonl").read_text() == "before\n"
    assert sorted(p.name for p in (tmp_path / "run").iterdir()) == ["journal.jsonl", "journal.jsonl.lock"]


def test_recorded_rows_are_read_one_at_a_time(tmp_path: Path) -> None:
    from mitigate.data import load_recorded_runs
    from mitigate.data._recorded import RecordedRows

    path = tmp_path / "rec.jsonl"
    rows = [
        {"recorded": {"scale": [1, 5]}},
        {"item_id": "a", "judge": "j", "criterion": "c", "score": 4},
        {"item_id": "b", "judge": "j", "criterion": "c", "score": 2},
        {"item_id": "c", "judge": "j"},
    ]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    reader = RecordedRows(path)
    first = next(iter(reader))  # the bad fourth line is not read yet
    assert (first.item_id, first.score) == ("a", 4.0) and reader.common is not None
    with pytest.raises(DataError, match=r"rec.jsonl:4:"):
        list(reader)
    with pytest.raises(DataError, match=r"rec.jsonl:4:"):
        load_recorded_runs(path)
