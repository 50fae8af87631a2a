"""Help that a newcomer can read: ``--help`` shows the options needed first, grouped; ``--help-all`` and
docs/cli.md (written from the commands, checked current here) hold every option."""

from __future__ import annotations

import dataclasses
import os
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import Result
from typer.testing import CliRunner

from mitigate.cli import app
from mitigate.cli._compare import CompareOptions
from mitigate.cli._judge import JudgeOptions
from mitigate.cli._probe import ProbeOptions
from mitigate.cli._search import SearchOptions

ROOT = Path(__file__).resolve().parents[2]
COMMANDS = {"judge": JudgeOptions, "compare": CompareOptions, "search": SearchOptions, "probe": ProbeOptions}


def _mitigate(*args: str) -> Result:
    """The command at 80 columns, run here: what ``python -m mitigate`` prints, without its start-up."""
    return CliRunner().invoke(app, list(args), prog_name="mitigate", env={"COLUMNS": "80"})


def _flag(field: dataclasses.Field) -> str:
    return "--" + field.name.replace("_", "-")


@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_help_shows_the_first_options_grouped_and_says_where_the_rest_are(command):
    options = COMMANDS[command]
    short, every = _mitigate(command, "--help"), _mitigate(command, "--help-all")
    assert short.exit_code == every.exit_code == 0, short.output + every.output
    lines = short.stdout.splitlines()
    assert len(lines) <= 100, f"{command} --help is {len(lines)} lines at 80 columns"
    for title, names in options.HELP_FIRST.items():
        assert f"─ {title} " in short.stdout
        for name in names:
            flag = "--config" if name == "config_file" else "--" + name.replace("_", "-")
            assert f"{flag} " in short.stdout, (command, flag)
    assert "--deadline " not in short.stdout and "--deadline " in every.stdout
    fields = [f for f in dataclasses.fields(options) if f.init]
    first = {n for names in options.HELP_FIRST.values() for n in names}
    # + plugin, -f, save
    assert f"{len(first)} of {len(fields) + 3} options shown" in " ".join(short.stdout.split())
    assert f"mitigate {command} --help-all, or docs/cli.md" in " ".join(short.stdout.split())
    assert "─ More options " in every.stdout
    for field in fields:
        assert f"{_flag(field)} " in every.stdout, field


def test_docs_cli_md_is_what_the_commands_give_now():
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    done = subprocess.run(
        [sys.executable, "-m", "mitigate.cli._reference", "--check", str(ROOT / "docs" / "cli.md")],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    text = (ROOT / "docs" / "cli.md").read_text()
    for command, options in COMMANDS.items():
        section = text.split(f"## mitigate {command}\n", 1)[1].split("\n## mitigate ", 1)[0]
        for field in dataclasses.fields(options):
            if field.init:
                assert f"`{_flag(field)}`" in section, (command, field.name)


def test_the_reference_check_fails_on_a_stale_file(tmp_path):
    stale = tmp_path / "cli.md"
    stale.write_text((ROOT / "docs" / "cli.md").read_text().replace("--deadline", "--dead-line", 1))
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    done = subprocess.run(
        [sys.executable, "-m", "mitigate.cli._reference", "--check", str(stale)],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )
    assert done.returncode == 1 and "is not current" in done.stderr
