"""Ctrl-C: one line saying what was kept and how to resume, with the count of judgments and calls kept."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from mitigate.testing import StubOpenAIServer

ROOT = Path(__file__).resolve().parents[2]


def _env(tmp_path: Path) -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(ROOT), "MITIGATE_CACHE_DIR": str(tmp_path / "cache")}


def _interrupted(tmp_path: Path, extra: list[str], url: str) -> subprocess.CompletedProcess[str]:
    bench = tmp_path / "bench.jsonl"
    rows = [{"id": f"x{i}", "output": f"Summary {i}.", "human": {"fluency": 3.0}} for i in range(40)]
    bench.write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    (tmp_path / "prompt.txt").write_text("Rate the fluency from 1 to 5.\n\n{{output}}\n\nScore:")
    args = [
        *(sys.executable, "-m", "mitigate", "judge", "-b", f"jsonl:{bench}", "-c", "fluency"),
        *("--prompt", str(tmp_path / "prompt.txt"), "--backend", "openai:stub", "--base-url", url),
        *("-n", "40", "--no-progress", "--concurrency", "1", *extra),
    ]
    proc = subprocess.Popen(
        args,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=_env(tmp_path),
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),  # as a terminal's Ctrl-C
    )
    time.sleep(4.0)
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=60)
    return subprocess.CompletedProcess(args, proc.returncode, out, err)


@pytest.mark.slow
def test_ctrl_c_says_in_one_line_how_many_judgments_and_calls_the_run_folder_keeps(tmp_path: Path) -> None:
    with StubOpenAIServer(latency=0.2, reply="Score: 3") as server:
        done = _interrupted(tmp_path, ["--run-dir", str(tmp_path / "run")], server.base_url)
    assert done.returncode == 130, done.stderr
    lines = [ln for ln in done.stderr.splitlines() if ln.startswith("error: ")]
    kept = [ln for ln in (tmp_path / "run" / "journal.jsonl").read_text().splitlines() if '"item_id"' in ln]
    calls = sum(json.loads(ln)["calls"] for ln in kept)
    assert lines == [
        f"error: interrupted: {len(kept)} judgments ({calls} LM calls) are kept in {tmp_path / 'run'}; run "
        f"the same command again (with --run-dir {tmp_path / 'run'}) to resume from there"
    ]
    assert 0 < len(kept) < 40


@pytest.mark.slow
def test_ctrl_c_without_a_run_folder_says_nothing_is_kept_but_the_cache(tmp_path: Path) -> None:
    with StubOpenAIServer(latency=0.2, reply="Score: 3") as server:
        done = _interrupted(tmp_path, [], server.base_url)
    assert done.returncode == 130, done.stderr
    lines = [ln for ln in done.stderr.splitlines() if ln.startswith("error: ")]
    assert len(lines) == 1 and "no run folder keeps the judgments" in lines[0] and "--run-dir" in lines[0]


@pytest.mark.slow
def test_a_resumed_rerun_counts_the_calls_it_made_apart_from_those_of_the_judgments_it_resumed(
    tmp_path: Path,
) -> None:
    run_dir = tmp_path / "run"
    with StubOpenAIServer(latency=0.2, reply="Score: 3") as server:
        done = _interrupted(tmp_path, ["--run-dir", str(run_dir), "--no-cache"], server.base_url)
        kept = [ln for ln in (run_dir / "journal.jsonl").read_text().splitlines() if '"item_id"' in ln]
        before = server.request_count
        again = subprocess.run(done.args, capture_output=True, text=True, env=_env(tmp_path), timeout=120)
        made = server.request_count - before
    assert again.returncode == 0, again.stderr
    assert 0 < len(kept) < 40 and made == 40 - len(kept)
    assert (
        f"; {made} LM calls this run (0 from cache; 40 in all, {len(kept)} resumed from the journal); "
        in again.stderr
    )
