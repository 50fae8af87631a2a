"""The CLI's typed options and its one judge builder: a frozen value per command, checked when built,
and one item order (document by document) in judge, compare and search."""

from __future__ import annotations

import dataclasses
import json
import subprocess
import sys
from pathlib import Path

import click
import pytest
import typer
from typer.testing import CliRunner

from mitigate.cli import app
from mitigate.cli._app import EXTRA_PARAMETERS
from mitigate.cli._build import build_judge, load_workload
from mitigate.cli._compare import CompareOptions
from mitigate.cli._errors import flat_message
from mitigate.cli._judge import JudgeOptions
from mitigate.cli._prompts import PromptsOptions
from mitigate.cli._report import ReportOptions
from mitigate.cli._search import SearchOptions
from mitigate.cli.options._declare import parameters
from mitigate.errors import ConfigError
from mitigate.testing import StubOpenAIServer

ROOT = Path(__file__).resolve().parents[2]
PROMPT = "Rate the fluency of the summary from 1 to 5.\n\nArticle: {{source}}\nSummary: {{summary}}\n\nScore:"


def _bench(tmp_path: Path) -> str:
    """Six items listed system by system (S0 on d0..d2, then S1 on d0..d2), the way many releases list
    them."""
    rows = [
        {
            "id": f"{s}-{doc}",
            "system": s,
            "doc_id": doc,
            "inputs": {"source": f"Article {doc}."},
            "output": f"Summary by {s} of {doc}.",
            "human": {"fluency": 1.0 + i % 5},
        }
        for i, (s, doc) in enumerate((s, doc) for s in ("S0", "S1") for doc in ("d0", "d1", "d2"))
    ]
    (tmp_path / "bench.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    (tmp_path / "prompt.txt").write_text(PROMPT)
    return f"jsonl:{tmp_path / 'bench.jsonl'}"


# --------------------------------------------------------------------------- typed, frozen options


@pytest.mark.parametrize("cls", [JudgeOptions, CompareOptions, SearchOptions, PromptsOptions])
def test_an_options_value_is_frozen(cls: type) -> None:
    value = cls()
    field = dataclasses.fields(value)[0].name
    with pytest.raises(dataclasses.FrozenInstanceError):
        setattr(value, field, None)


def test_the_report_options_need_the_folder() -> None:
    with pytest.raises(TypeError):
        ReportOptions()  # type: ignore[call-arg]
    assert ReportOptions(folder=Path("x")).folder == Path("x")


@pytest.mark.parametrize(
    ("cls", "command"),
    [
        (JudgeOptions, "judge"),
        (CompareOptions, "compare"),
        (SearchOptions, "search"),
        (PromptsOptions, "prompts"),
        (ReportOptions, "report"),
    ],
)
def test_every_field_of_the_options_is_a_parameter_of_its_command(cls: type, command: str) -> None:
    group = typer.main.get_command(app)
    click_command = group.get_command(click.Context(group), command)  # type: ignore[attr-defined]
    names = [p.name for p in click_command.params]
    extra = [n for n in names if n in EXTRA_PARAMETERS]  # --plugin everywhere; -f and --save-config on most
    assert names == [p.name for p in parameters(cls)] + extra  # in the order help lists them
    assert sorted(p.name for p in parameters(cls)) == sorted(f.name for f in dataclasses.fields(cls))
    assert "plugin" in extra


def test_the_options_hold_their_parsed_values() -> None:
    judge = JudgeOptions(scale="1,10", samples=3, reducer="median")
    assert judge.scale_range == (1.0, 10.0) and judge.samples_per_item == 3 and judge.reducer_name == "median"
    assert CompareOptions(train="0.25").train_split == 0.25
    assert CompareOptions(train="jsonl:other.jsonl").train_split == "jsonl:other.jsonl"
    assert SearchOptions(splits="0.6,0.2,0.2").split_fractions == (0.6, 0.2, 0.2)
    # the search caches itself
    assert SearchOptions().samples_per_item == 1 and SearchOptions().lm_cache is False


BAD_VALUES = [
    (JudgeOptions, {"limit": -1}, ["judge", "-n", "-1"]),
    (JudgeOptions, {"samples": 0}, ["judge", "--samples", "0"]),
    (JudgeOptions, {"reducer": "foo"}, ["judge", "--reducer", "foo"]),
    (JudgeOptions, {"temperature": float("nan")}, ["judge", "--temperature", "nan"]),
    (JudgeOptions, {"scale": "low,high"}, ["judge", "--scale", "low,high"]),
    (JudgeOptions, {"batch": True}, ["judge", "--batch"]),
    (JudgeOptions, {"batch_retries": 2}, ["judge", "--batch-retries", "2"]),
    (JudgeOptions, {"backend": "local", "timeout": 5.0}, ["judge", "--backend", "local", "--timeout", "5"]),
    (
        JudgeOptions,
        {"backend": "anthropic:x", "transport": "direct"},
        ["judge", "--backend", "anthropic:x", "--transport", "direct"],
    ),
    (CompareOptions, {"train": "1.5"}, ["compare", "--train", "1.5"]),
    (CompareOptions, {"patience": 0.0}, ["compare", "--patience", "0"]),
    (SearchOptions, {"splits": "0.5,0.5"}, ["search", "--splits", "0.5,0.5"]),
    (SearchOptions, {"k": [0]}, ["search", "--k", "0"]),
    (SearchOptions, {"engine": "bogus"}, ["search", "--engine", "bogus"]),
]


@pytest.mark.parametrize(("cls", "values", "args"), BAD_VALUES, ids=[" ".join(a) for _, _, a in BAD_VALUES])
def test_a_bad_value_is_refused_when_the_options_are_built_with_the_commands_one_line(
    cls: type, values: dict, args: list[str]
) -> None:
    with pytest.raises(ConfigError) as refused:
        cls(**values)
    result = CliRunner().invoke(app, args)  # refused before the data, the prompt or any folder is looked at
    assert result.exit_code == 2
    assert result.stderr.splitlines() == [f"error: {flat_message(str(refused.value))}"]


# --------------------------------------------------------------------------- one builder, one item order


def test_the_items_are_taken_document_by_document(tmp_path: Path) -> None:
    task = load_workload(_bench(tmp_path), "fluency", 4)
    assert [it.id for it in task.items] == ["S0-d0", "S1-d0", "S0-d1", "S1-d1"]
    assert [it.id for it in load_workload(_bench(tmp_path), "fluency", 0).items] == [
        "S0-d0",
        "S1-d0",
        "S0-d1",
        "S1-d1",
        "S0-d2",
        "S1-d2",
    ]
    assert [it.id for it in load_workload(_bench(tmp_path), "fluency", 4, labelled=True).items] == [
        "S0-d0",
        "S1-d0",
        "S0-d1",
        "S1-d1",
    ]


def test_judge_n_and_compare_limit_pick_the_same_items(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MITIGATE_CACHE_DIR", str(tmp_path / "cache"))
    bench = _bench(tmp_path)
    common = [
        "-b",
        bench,
        "-c",
        "fluency",
        "--prompt",
        str(tmp_path / "prompt.txt"),
        "--backend",
        "openai:stub-model",
        "--no-progress",
        "--no-cache",
    ]
    with StubOpenAIServer(latency=0.0, reply="Score: 3") as server:
        judged = CliRunner().invoke(
            app,
            [
                "judge",
                *common,
                "--base-url",
                server.base_url,
                "-n",
                "4",
                "--out",
                str(tmp_path / "rows.jsonl"),
            ],
        )
        compared = CliRunner().invoke(
            app,
            [
                "compare",
                *common,
                "--base-url",
                server.base_url,
                "--limit",
                "4",
                "-p",
                "baseline",
                "--out",
                str(tmp_path / "cmp"),
                "--n-boot",
                "0",
            ],
        )
    assert judged.exit_code == 0, judged.output
    assert compared.exit_code == 0, compared.output
    by_judge = [json.loads(line)["item_id"] for line in (tmp_path / "rows.jsonl").read_text().splitlines()]
    entry = json.loads((tmp_path / "cmp" / "results.json").read_text())["entries"][0]
    by_compare = [j["item_id"] for j in entry["judgments"]]
    assert by_judge == by_compare == ["S0-d0", "S1-d0", "S0-d1", "S1-d1"]
    assert [ln.split("\t")[0] for ln in judged.stdout.splitlines()] == by_judge


def test_build_judge_reads_each_commands_options(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MITIGATE_CACHE_DIR", str(tmp_path / "cache"))
    bench = _bench(tmp_path)
    lm = {"prompt": tmp_path / "prompt.txt", "backend": "openai:m", "base_url": ["http://127.0.0.1:9/v1"]}
    task = load_workload(bench, "fluency", 0)
    judged = build_judge(
        JudgeOptions(benchmark=bench, samples=3, reducer="median", temperature=0.7, scale="1,10", **lm), task
    )
    compared = build_judge(CompareOptions(benchmark=bench, samples=2, cache=False, **lm), task)
    searched = build_judge(SearchOptions(benchmark=bench, max_tokens=16, **lm), task)
    assert (judged.config.n, judged.config.reducer, judged.config.temperature) == (3, "median", 0.7)
    assert (judged.prompt.scale.min, judged.prompt.scale.max) == (1, 10)
    assert (compared.config.n, compared.config.reducer) == (2, "mean")
    assert (searched.config.n, searched.config.max_tokens) == (1, 16)
    assert type(judged.lm).__name__ == "CachedLM"  # --cache (the default)
    assert type(compared.lm).__name__ != "CachedLM"  # --no-cache
    assert type(searched.lm).__name__ != "CachedLM"  # the search wraps its own cache around the judge


def test_a_pairwise_benchmark_needs_a_prompt_in_every_command(tmp_path: Path) -> None:
    (tmp_path / "pairs.jsonl").write_text(
        json.dumps({"id": "p", "output": "a", "output_b": "b", "preference": {"fluency": "A"}}) + "\n"
    )
    task = load_workload(f"jsonl:{tmp_path / 'pairs.jsonl'}", "fluency", 0)
    for options in (JudgeOptions, CompareOptions, SearchOptions):
        with pytest.raises(ConfigError, match="is pairwise; expected --prompt"):
            build_judge(options(benchmark=f"jsonl:{tmp_path / 'pairs.jsonl'}", backend="openai:m"), task)


def test_importing_the_cli_does_not_load_the_harness_or_plotting() -> None:
    code = (
        "import sys, mitigate.cli; "
        "print(sorted(m for m in sys.modules if m.startswith(('mitigate.harness', "
        "'matplotlib', 'scipy'))))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        check=True,
        cwd=ROOT,
        env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"},
    )
    assert out.stdout.strip() == "[]"


def test_a_refusals_notes_are_said_on_its_one_line_and_a_stopped_run_exits_1(
    capsys: pytest.CaptureFixture[str],
) -> None:
    from mitigate.cli._errors import report_error
    from mitigate.errors import RunStoppedError

    refused = ConfigError("expected a pool with varied scores; got one score")
    refused.add_note("8 items excluded: the judge's answer failed to parse")
    assert report_error(refused) == 2 and report_error(RunStoppedError("circuit breaker")) == 1
    assert capsys.readouterr().err.splitlines() == [
        "error: expected a pool with varied scores; got one score; 8 items excluded: the judge's answer "
        "failed to parse",
        "error: circuit breaker",
    ]
