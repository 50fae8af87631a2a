"""The README's way to try the command line without a key or a model runs as written: the stub server, then
judge and compare pointed at it (the port swapped for a free one, ``mitigate`` run from this tree)."""

from __future__ import annotations

import os
import re
import shlex
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from mitigate.paths import data_dir

ROOT = Path(__file__).resolve().parents[1]


pytestmark = pytest.mark.slow  # starts the stub server and runs the README's commands


def _stub_block() -> list[str]:
    """The README's bash block that starts the stub server, one command per line (comments dropped)."""
    blocks = re.findall(r"```bash\n(.*?)```", (ROOT / "README.md").read_text(), flags=re.DOTALL)
    block = next(b for b in blocks if "python -m mitigate.testing" in b)
    return [line.split("  #")[0].strip() for line in block.strip().splitlines() if line.strip()]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_the_readme_stub_server_example_runs_as_written(tmp_path):
    root = data_dir()
    if root is None or not (root / "summeval_llm_summeval").is_dir():
        pytest.skip("shared SummEval data (summeval_llm_summeval) is not available")
    lines = _stub_block()
    assert lines[0].startswith("python -m mitigate.testing --port 8765") and lines[-1] == "kill %1"
    port = str(_free_port())
    env = {**os.environ, "PYTHONPATH": str(ROOT), "MITIGATE_CACHE_DIR": str(tmp_path / "cache")}
    start = [sys.executable, *shlex.split(lines[0].rstrip("&").replace("8765", port))[1:]]
    server = subprocess.Popen(start, stdout=subprocess.PIPE, text=True, env=env, cwd=tmp_path)
    try:
        assert server.stdout is not None
        assert server.stdout.readline().strip() == f"http://127.0.0.1:{port}/v1"
        commands = [line for line in lines[1:] if line.startswith("mitigate ")]
        assert len(commands) == 2
        for line in commands:
            args = shlex.split(line.replace("8765", port))[1:]
            done = subprocess.run(
                [sys.executable, "-m", "mitigate", *args, "--no-progress"],
                capture_output=True,
                text=True,
                env=env,
                cwd=tmp_path,
                timeout=300,
            )
            assert done.returncode == 0, (line, done.stderr[-2000:])
        assert (tmp_path / "reports" / "stub" / "report.md").is_file()
    finally:
        server.terminate()
        server.wait(timeout=30)


@pytest.mark.parametrize(
    ("prompt", "read"),
    [
        ("summeval-coherence", "parse the score from the text"),
        ("summeval-fluency", "parse the score from the text"),
        ("webnlg-fluency", "expected score from the top-10 logprobs"),
        ("tmu-grammar", "expected score from the top-10 logprobs"),
        ("uss-satisfaction", "expected score from the top-10 logprobs"),
    ],
)
def test_the_embedded_judge_is_read_as_getting_started_says(prompt, read):
    from typer.testing import CliRunner

    from mitigate.cli import app

    # the embedded model, as the quick start runs it
    done = CliRunner().invoke(app, ["prompts", "render", prompt])
    assert done.exit_code == 0, done.output
    assert f"answer read: {read}" in done.stdout
    readme = " ".join((ROOT / "docs" / "getting-started.md").read_text().split())
    assert (
        "The built-in SummEval prompts (the quick start's included) ask for one sentence of "
        'justification before "Score: N"'
    ) in readme
    assert "which is read from the text" in readme
    assert (
        "(the built-in WebNLG, TMU-GFM and USS prompts, or your own) is read from the model's next-token"
    ) in readme
