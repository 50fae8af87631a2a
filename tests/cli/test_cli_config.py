"""Config files: ``-f run.toml`` reads any command's options, ``--save-config`` writes them back,
the command line overrides only what it gives, and a bad key or value is one line naming file:line."""

from __future__ import annotations

import dataclasses
import importlib
import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from mitigate.cli import app
from mitigate.cli._compare import CompareOptions
from mitigate.cli._config import read_config, split_label
from mitigate.cli._judge import JudgeOptions
from mitigate.cli._search import SearchOptions
from mitigate.errors import ConfigError
from mitigate.testing import StubOpenAIServer

# the module (the package's attribute `app` is the Typer app)
cli_app = importlib.import_module("mitigate.cli._app")
PROMPT = "Rate the fluency of the summary from 1 to 5.\n\nArticle: {{source}}\nSummary: {{summary}}\n\nScore:"


def _bench(tmp_path: Path, n: int = 4) -> str:
    rows = [
        {
            "id": f"x{i}",
            "system": f"S{i % 2}",
            "doc_id": f"d{i // 2}",
            "inputs": {"source": f"Article {i}."},
            "output": f"Summary {i}.",
            "human": {"fluency": 1.0 + i % 5},
        }
        for i in range(n)
    ]
    (tmp_path / "bench.jsonl").write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    (tmp_path / "prompt.txt").write_text(PROMPT)
    return f"jsonl:{tmp_path / 'bench.jsonl'}"


@pytest.fixture
def built(monkeypatch: pytest.MonkeyPatch) -> list[Any]:
    """The options values --save-config wrote (each command's value, as a run would receive it)."""
    seen: list[Any] = []
    real = cli_app.write_config

    def spy(path: Path, options: Any, *args: Any) -> Path:
        seen.append(options)
        return real(path, options, *args)

    monkeypatch.setattr(cli_app, "write_config", spy)
    return seen


ROUND_TRIPS = {
    "compare": [
        "-b",
        "summeval",
        "-c",
        "coherence",
        "-p",
        "baseline",
        "-p",
        "one call per criterion=single-attribute | granularity(scale=1-10)",
        "--released",
        "chatgpt-rts",
        "--train",
        "0.5",
        "--limit",
        "0",
        "--max-tokens",
        "64",
        "--no-cache",
        "--prompt",
        "p.txt",
        "--out",
        "reports/x",
    ],
    "judge": [
        "-b",
        "summeval",
        "--pipeline",
        "sampling(n=3, temperature=0.7)",
        "--samples",
        "2",
        "--reducer",
        "median",
        "--scale",
        "1,10",
        "--no-progress",
        "--run-dir",
        "runs/a",
    ],
    "search": [
        "-b",
        "summeval",
        "--engine",
        "greedy",
        "--k",
        "2",
        "--k",
        "4",
        "--selector",
        "stratified",
        "--consistency-weight",
        "0.5",
        "--splits",
        "0.6,0.2,0.2",
        "-o",
        "out/spec.json",
    ],
}


@pytest.mark.parametrize("command", sorted(ROUND_TRIPS))
def test_a_command_line_saved_and_read_back_gives_the_same_options(
    command: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, built: list[Any]
) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "cfg").mkdir()
    first = CliRunner().invoke(app, [command, *ROUND_TRIPS[command], "--save-config", "cfg/run.toml"])
    assert first.exit_code == 0, first.output
    assert "wrote cfg/run.toml" in first.stderr and not (tmp_path / "reports").exists()  # saved, not run
    again = CliRunner().invoke(app, [command, "-f", "cfg/run.toml", "--save-config", "cfg/again.toml"])
    assert again.exit_code == 0, again.output
    assert len(built) == 2 and built[0] == built[1]
    assert (tmp_path / "cfg" / "run.toml").read_text().splitlines()[1:] == (
        tmp_path / "cfg" / "again.toml"
    ).read_text().splitlines()[1:]


def test_saved_compare_config_names_its_entries_and_writes_paths_relative_to_the_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "cfg").mkdir()
    result = CliRunner().invoke(app, ["compare", *ROUND_TRIPS["compare"], "--save-config", "cfg/run.toml"])
    assert result.exit_code == 0, result.output
    text = (tmp_path / "cfg" / "run.toml").read_text()
    assert 'command = "compare"' in text and 'prompt = "../p.txt"' in text and "max-tokens = 64" in text
    assert (
        '[[entry]]\nname = "one call per criterion"\npipeline = "single-attribute | granularity(scale=1-10)"'
    ) in text
    assert '[[entry]]\nreleased = "chatgpt-rts"' in text
    assert "concurrency" not in text  # left at its default on the command line: not written


def test_options_given_on_the_command_line_override_the_file_even_at_their_default(
    tmp_path: Path, built: list[Any]
) -> None:
    cfg = tmp_path / "run.toml"
    cfg.write_text('benchmark = "webnlg"\nlimit = 7\nmax-tokens = 99\n\n[[entry]]\npipeline = "sampling"\n')
    result = CliRunner().invoke(
        app, ["compare", "-f", str(cfg), "--limit", "0", "--save-config", str(tmp_path / "out.toml")]
    )
    assert result.exit_code == 0, result.output
    value = built[0]
    assert isinstance(value, CompareOptions)
    assert value.limit == 0  # given (at the default) on the command line: wins
    # from the file
    assert (value.benchmark, value.max_tokens, value.pipeline) == ("webnlg", 99, ["sampling"])


def test_a_repeated_option_on_the_command_line_replaces_the_files_list(
    tmp_path: Path, built: list[Any]
) -> None:
    cfg = tmp_path / "run.json"
    cfg.write_text(json.dumps({"pipeline": ["baseline", "sampling"], "seed": 3}))
    result = CliRunner().invoke(
        app, ["compare", "-f", str(cfg), "-p", "granularity", "--save-config", str(tmp_path / "out.toml")]
    )
    assert result.exit_code == 0, result.output
    assert (built[0].pipeline, built[0].seed) == (["granularity"], 3)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ('benchmark = "summeval"\n\nlimitt = 3\n', "run.toml:3: unknown key 'limitt' for 'mitigate compare'"),
        ('limit = "ten"\n', "run.toml:1: expected 'limit' to be an integer; got 'ten'"),
        ("cache = 1\n", "run.toml:1: expected 'cache' to be true or false; got 1"),
        (
            'command = "search"\n',
            "run.toml:1: this file is for 'mitigate search'; got it in 'mitigate compare'",
        ),
        (
            '[[entry]]\npipeline = "baseline"\n\n[[entry]]\nname = "x"\npipelin = "sampling"\n',
            "run.toml:6: unknown key 'pipelin' in [[entry]] 2",
        ),
        (
            '[[entry]]\nname = "a judge"\nreleased = "chatgpt-rts"\n',
            "run.toml:2: a display name applies to a pipeline entry",
        ),
        ("limit = 3\nlimit = 4\n", "run.toml:2: expected valid TOML"),
        ("max-tokens = 5\nmax_tokens = 6\n", "'max_tokens' is given twice"),
        (
            '[[entry]]\nname = "a (b)"\npipeline = "baseline"\n',
            "run.toml:2: expected a non-empty display name",
        ),
        ('[[entry]]\nname = "a"\n', "run.toml:2: expected [[entry]] 1 to hold exactly one of"),
    ],
)
def test_a_bad_config_file_is_one_line_naming_the_file_and_line(
    text: str, expected: str, tmp_path: Path
) -> None:
    cfg = tmp_path / "run.toml"
    cfg.write_text(text)
    result = CliRunner().invoke(app, ["compare", "-f", str(cfg)])
    assert result.exit_code == 2
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ") and expected in lines[0], result.stderr


def test_a_config_value_out_of_range_is_refused_like_the_option(tmp_path: Path) -> None:
    cfg = tmp_path / "run.toml"
    cfg.write_text("samples = 0\n")
    result = CliRunner().invoke(app, ["judge", "-f", str(cfg)])
    assert result.exit_code == 2 and "--samples" in result.stderr


def test_read_config_converts_paths_relative_to_the_file_and_one_value_to_a_list(tmp_path: Path) -> None:
    (tmp_path / "sub").mkdir()
    cfg = tmp_path / "sub" / "run.toml"
    cfg.write_text('prompt = "p.txt"\nrecorded = "../rows.jsonl"\ntemperature = 1\n')
    read = read_config(cfg, CompareOptions, "compare")
    assert read.values == {
        "prompt": tmp_path / "sub" / "p.txt",
        "recorded": [tmp_path / "rows.jsonl"],
        "temperature": 1.0,
    }
    assert isinstance(read.values["temperature"], float)


def test_every_field_of_every_options_class_is_a_config_key(tmp_path: Path) -> None:
    for cls in (JudgeOptions, CompareOptions, SearchOptions):
        # the options, not class constants (COMMAND, HELP_FIRST)
        keys = [f.name for f in dataclasses.fields(cls)]
        cfg = tmp_path / "unknown.toml"
        cfg.write_text("nope = 1\n")
        with pytest.raises(ConfigError) as exc:
            read_config(cfg, cls, cls.COMMAND)
        for key in keys:
            assert repr(key.replace("_", "-")) in str(exc.value)


@pytest.mark.parametrize(
    ("text", "label", "rest"),
    [
        ("one call per criterion=single-attribute", "one call per criterion", "single-attribute"),
        ("granularity(scale=1-10)", None, "granularity(scale=1-10)"),
        ("@spec.json", None, "@spec.json"),
        ("baseline", None, "baseline"),
        (
            "1-10 scale = granularity(scale=1-10) | sampling(n=3)",
            "1-10 scale",
            "granularity(scale=1-10) | sampling(n=3)",
        ),
        (
            "5 samples at T=0.7=sampling(temperature=0.7, n=5)",
            "5 samples at T=0.7",
            "sampling(temperature=0.7, n=5)",
        ),
        ("@dir/a=b.json", None, "@dir/a=b.json"),
        ("=baseline", None, "=baseline"),
    ],
)
def test_a_pipeline_text_may_carry_a_display_name(text: str, label: str | None, rest: str) -> None:
    assert split_label(text) == (label, rest)


def test_compare_from_a_config_file_reports_the_display_names(tmp_path: Path) -> None:
    bench = _bench(tmp_path)
    cfg = tmp_path / "run.toml"
    cfg.write_text(f"""# a comparison kept in a file
benchmark = "{bench}"
criterion = "fluency"
prompt = "prompt.txt"
backend = "openai:stub-model"
n-boot = 0
progress = false
cache = false
out = "cmp"

[[entry]]
name = "plain judge"
pipeline = "baseline"

[[entry]]
name = "hinted judge"
pipeline = "consistency-hint"
""")
    with StubOpenAIServer(latency=0.0, reply="Score: 3") as server:
        result = CliRunner().invoke(app, ["compare", "-f", str(cfg), "--base-url", server.base_url])
    assert result.exit_code == 0, result.output
    saved = json.loads((tmp_path / "cmp" / "results.json").read_text())
    assert [e["name"] for e in saved["entries"]] == ["plain judge", "hinted judge"]
    report = (tmp_path / "cmp" / "report.md").read_text()
    assert "plain judge" in report and "hinted judge" in report


def test_the_documented_config_file_reads_as_compare_options(tmp_path: Path, built: list[Any]) -> None:
    readme = (Path(__file__).resolve().parents[2] / "docs" / "tutorials" / "compare.md").read_text()
    start = readme.index("# coherence.toml")
    (tmp_path / "coherence.toml").write_text(readme[start : readme.index("```", start)])
    result = CliRunner().invoke(
        app,
        ["compare", "-f", str(tmp_path / "coherence.toml"), "--save-config", str(tmp_path / "again.toml")],
    )
    assert result.exit_code == 0, result.output
    value = built[0]
    assert value.pipeline == [
        "plain judge=baseline",
        "5 samples at T=0.7=sampling(temperature=0.7, n=5)",
        "one call per criterion, 1-10=single-attribute | granularity(scale=1-10)",
    ]
    assert (value.released, value.train_split, value.limit) == (["chatgpt-rts"], 0.5, 48)


@pytest.mark.parametrize("command", ["judge", "search"])
def test_entry_tables_are_refused_where_a_command_judges_one_pipeline(command: str, tmp_path: Path) -> None:
    cfg = tmp_path / "run.toml"
    cfg.write_text('pipeline = "sampling"\n\n[[entry]]\npipeline = "baseline"\n')
    result = CliRunner().invoke(app, [command, "-f", str(cfg)])
    assert result.exit_code == 2
    assert f"run.toml:3: unknown key 'entry' for 'mitigate {command}'" in result.stderr


def test_paths_inside_specs_in_a_config_file_are_read_from_the_files_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, built: list[Any]
) -> None:
    (tmp_path / "study").mkdir()
    (tmp_path / "elsewhere").mkdir()
    _bench(tmp_path / "study")
    (tmp_path / "study" / "spec.json").write_text('{"name": "pipeline", "params": {"steps": []}}')
    cfg = tmp_path / "study" / "run.toml"
    cfg.write_text(
        'benchmark = "jsonl:bench.jsonl"\nprompt = "prompt.txt"\n\n[[entry]]\npipeline = '
        '"@spec.json"\n\n[[entry]]\nname = "named"\npipeline = "@spec.json"\n'
    )
    monkeypatch.chdir(tmp_path / "elsewhere")
    done = CliRunner().invoke(app, ["compare", "-f", str(cfg), "--save-config", "again.toml"])
    assert done.exit_code == 0, done.output
    study = tmp_path / "study"
    assert built[0].benchmark == f"jsonl:{study / 'bench.jsonl'}" and built[0].prompt == study / "prompt.txt"
    assert built[0].pipeline == [f"@{study / 'spec.json'}", f"named=@{study / 'spec.json'}"]
    relative = CliRunner().invoke(app, ["compare", "-f", "../study/run.toml", "--save-config", "again.toml"])
    assert relative.exit_code == 0, relative.output
    assert built[1].benchmark == "jsonl:../study/bench.jsonl"  # relative to the working folder, as given
    again = (tmp_path / "elsewhere" / "again.toml").read_text()
    assert 'benchmark = "jsonl:../study/bench.jsonl"' in again and 'pipeline = "@../study/spec.json"' in again
    (tmp_path / "elsewhere" / "cfg").mkdir()
    moved = CliRunner().invoke(app, ["compare", "-f", "again.toml", "--save-config", "cfg/third.toml"])
    assert moved.exit_code == 0, moved.output
    third = (tmp_path / "elsewhere" / "cfg" / "third.toml").read_text()
    assert 'benchmark = "jsonl:../../study/bench.jsonl"' in third
    back = CliRunner().invoke(app, ["compare", "-f", "cfg/third.toml", "--save-config", "fourth.toml"])
    assert back.exit_code == 0, back.output
    assert built[1] == built[2] == built[3]


def test_a_spec_path_missing_from_the_config_files_folder_is_one_line_naming_that_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "study").mkdir()
    _bench(tmp_path)  # the data sits in the working folder, not beside the config file
    cfg = tmp_path / "study" / "run.toml"
    cfg.write_text('benchmark = "jsonl:bench.jsonl"\n')
    monkeypatch.chdir(tmp_path)
    done = CliRunner().invoke(app, ["judge", "-f", str(cfg), "--dry-run"])
    assert done.exit_code == 2
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1, done.stderr
    assert (
        f"run.toml:1: benchmark = 'jsonl:bench.jsonl' names {tmp_path / 'study' / 'bench.jsonl'}, which "
        "does not exist (relative paths in a config file are read from the file's folder, "
        f"{tmp_path / 'study'})"
    ) in lines[0]
