"""compare as stages: one CompareConfig, plan -> fit -> judge -> measure -> report, each step done once.

The counts pin that a comparison plans, chooses its items and checks each entry's prompts
(preflight) exactly once, and that ``check_compare`` + ``compare`` plan once when the plan is
passed along (what the CLI does).
"""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

import mitigate.cli._build as cli_build
import mitigate.harness._compare as C
import mitigate.harness._judging as judging
import mitigate.harness._planning as planning
import mitigate.run._runner as runner
from mitigate import Item, JudgePrompt, PromptJudge
from mitigate.cli import app
from mitigate.data import Benchmark, save_jsonl
from mitigate.errors import ConfigError, DataError
from mitigate.harness import CompareConfig, ComparePlan, Entry, check_compare, compare
from mitigate.harness._judging import FittedPlan, Judged, fit, judge
from mitigate.harness._measuring import measure
from mitigate.harness._planning import plan
from mitigate.lm import FakeLM, LMRequest
from mitigate.report import load_results, render_summary, write_report
from mitigate.testing import StubOpenAIServer

TEMPLATE = "Rate the text from 1 to 5.\nText: {{output}}\nScore:"


def _bench(docs: int = 4, systems: int = 3) -> Benchmark:
    items = tuple(
        Item(
            id=f"S{s}/d{d}",
            system=f"S{s}",
            doc_id=f"d{d}",
            output=f"q={1 + (d + s) % 5} d{d} s{s}",
            human={"q": float(1 + (d * 2 + s) % 5)},
        )
        for d in range(docs)
        for s in range(systems)
    )
    return Benchmark(name="toy", items=items, criteria=("q",))


def _answer(request: LMRequest) -> str:
    return "Score: " + re.search(r"q=(\d)", request.messages[-1].content).group(1)


def _recorded_file(bench: Benchmark, path: Path) -> Path:
    path.write_text(
        "".join(
            json.dumps({"item_id": it.id, "judge": "logged", "criterion": "q", "score": float(1 + i % 5)})
            + "\n"
            for i, it in enumerate(bench.items)
        )
    )
    return path


def _entries(lm: FakeLM, bench: Benchmark, folder: Path) -> list[Entry]:
    base = PromptJudge(JudgePrompt.from_template(TEMPLATE, criterion="q"), lm)
    return [
        Entry.from_pipeline("baseline", base, "baseline"),
        Entry.from_pipeline("two samples", base, "sampling(n=2, temperature=0.7)"),
        Entry.from_recorded(_recorded_file(bench, folder / "recorded.jsonl"), "q"),
    ]


def _counting(counts: Counter[str], name: str, fn: Callable[..., Any]) -> Callable[..., Any]:
    def counted(*args: Any, **kwargs: Any) -> Any:
        counts[name] += 1
        return fn(*args, **kwargs)

    return counted


@pytest.fixture
def counts(monkeypatch: pytest.MonkeyPatch) -> Counter[str]:
    """Counts of plan, item selection and preflight calls (each preflight keyed by the judge it checked)."""
    counted: Counter[str] = Counter()
    monkeypatch.setattr(C, "plan", _counting(counted, "plan", planning.plan))
    monkeypatch.setattr(planning, "select_items", _counting(counted, "select_items", planning.select_items))
    monkeypatch.setattr(cli_build, "select_items", _counting(counted, "select_items", cli_build.select_items))
    monkeypatch.setattr(cli_build, "answer_mode", _counting(counted, "answer_mode", cli_build.answer_mode))
    preflight = runner.preflight

    def checked(j: Any, items: Any) -> None:
        inner = getattr(j, "inner", j)  # the first-prompt wrapper around the entry's judge
        counted[f"preflight {json.dumps(inner.describe(), sort_keys=True, default=str)[:300]}"] += 1
        counted["preflight"] += 1
        preflight(j, items)

    monkeypatch.setattr(runner, "preflight", checked)
    monkeypatch.setattr(judging, "preflight", checked)
    return counted


async def test_compare_plans_selects_items_and_preflights_each_entry_exactly_once(
    tmp_path: Path, counts: Counter[str]
) -> None:
    bench = _bench()
    result = await compare(
        benchmark=bench,
        criterion="q",
        entries=_entries(FakeLM(_answer), bench, tmp_path),
        out_dir=tmp_path,
        progress=False,
        n_boot=0,
        n_perm=20,
    )
    assert [e.name for e in result.entries] == ["baseline", "two samples", "logged"]
    assert counts["plan"] == 1 and counts["select_items"] == 1
    assert counts["preflight"] == 3  # one per entry, the replayed one included
    assert all(n == 1 for key, n in counts.items() if key.startswith("preflight "))
    assert len([k for k in counts if k.startswith("preflight ")]) == 3


async def test_check_compare_returns_the_plan_that_compare_runs_without_planning_again(
    tmp_path: Path, counts: Counter[str]
) -> None:
    bench = _bench()
    config = CompareConfig(
        benchmark=bench,
        criterion="q",
        entries=_entries(FakeLM(_answer), bench, tmp_path),
        out_dir=tmp_path,
        progress=False,
        n_boot=0,
        n_perm=20,
        limit=6,
    )
    planned = check_compare(config)
    assert isinstance(planned, ComparePlan) and planned.config is config
    assert [it.id for it in planned.items] == [it.id for it in bench.items[:6]]
    result = await compare(planned)
    assert counts["plan"] == 1 and counts["select_items"] == 1
    assert [r.id for r in result.items] == [it.id for it in planned.items]


def test_the_cli_plans_once_selects_once_preflights_once_and_reads_answers_once_per_entry(
    tmp_path: Path, counts: Counter[str]
) -> None:
    path = save_jsonl(_bench(), tmp_path / "b.jsonl")
    (tmp_path / "p.txt").write_text(TEMPLATE)
    with StubOpenAIServer(latency=0.0, reply="Score: 3") as server:
        result = CliRunner().invoke(
            app,
            [
                "compare",
                "-b",
                f"jsonl:{path}",
                "-c",
                "q",
                "--prompt",
                str(tmp_path / "p.txt"),
                "--backend",
                "openai:stub",
                "--base-url",
                server.base_url,
                "--no-cache",
                "-p",
                "baseline",
                "-p",
                "sampling(n=2, temperature=0.7)",
                "--out",
                str(tmp_path / "o"),
                "--n-boot",
                "0",
                "--no-progress",
            ],
        )
    assert result.exit_code == 0, result.output
    assert counts["plan"] == 1 and counts["select_items"] == 1
    assert counts["preflight"] == 2
    assert counts["answer_mode"] == 2  # one read mode per entry, none for the base judge alone


def test_the_cli_prints_the_summary_from_the_result_not_from_report_md(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import mitigate.paths

    opened = mitigate.paths.open_regular

    def no_read_back(path: Any, mode: str, *args: Any, **kwargs: Any) -> Any:
        assert not (Path(path).name == "report.md" and "r" in mode), "report.md was read back"
        return opened(path, mode, *args, **kwargs)

    monkeypatch.setattr(mitigate.paths, "open_regular", no_read_back)
    bench = _bench()
    path = save_jsonl(bench, tmp_path / "b.jsonl")
    rec = _recorded_file(bench, tmp_path / "rec.jsonl")
    out = tmp_path / "o"
    result = CliRunner().invoke(
        app,
        [
            "compare",
            "-b",
            f"jsonl:{path}",
            "-c",
            "q",
            "--recorded",
            str(rec),
            "--out",
            str(out),
            "--n-boot",
            "0",
            "--no-progress",
        ],
    )
    assert result.exit_code == 0, result.output
    summary = render_summary(load_results(out))
    assert "## Bottom line" in summary and "## Every measure" not in summary
    assert result.stdout == summary + "\n"
    assert (out / "report.md").read_text().startswith(summary)


async def test_the_stages_run_one_by_one_give_what_compare_gives(tmp_path: Path) -> None:
    bench = _bench()
    config = CompareConfig(
        benchmark=bench,
        criterion="q",
        entries=_entries(FakeLM(_answer), bench, tmp_path),
        out_dir=tmp_path / "a",
        progress=False,
        n_boot=50,
        n_perm=100,
        report=False,
    )
    planned = plan(config)
    fitted = await fit(planned)
    judged = await judge(fitted)
    result = measure(judged)
    assert isinstance(fitted, FittedPlan) and isinstance(judged, Judged)
    assert [r.judgments for r in judged.runs] == [e.judgments for e in result.entries]
    paths = write_report(result, tmp_path / "a")
    assert {p.name for p in paths} >= {"results.json", "report.md", "report.html"}
    again = await compare(config.with_options(out_dir=tmp_path / "b", report=True))
    # a second run: the same numbers (times differ)
    for a, b in zip(again.entries, result.entries, strict=True):
        assert a.scores("q") == b.scores("q")
        assert a.model_dump(include={"measures", "per_system", "comparison", "histogram"}) == b.model_dump(
            include={"measures", "per_system", "comparison", "histogram"}
        )


async def test_the_fit_stage_keeps_each_fitted_pipeline_its_spec_and_its_judge_together(
    tmp_path: Path,
) -> None:
    bench = _bench(docs=8)
    base = PromptJudge(JudgePrompt.from_template(TEMPLATE, criterion="q"), FakeLM(_answer))
    config = CompareConfig(
        benchmark=bench,
        criterion="q",
        out_dir=tmp_path,
        progress=False,
        n_boot=0,
        n_perm=20,
        train=0.5,
        entries=[
            Entry.from_pipeline("plain", base, "baseline"),
            Entry.from_pipeline("demos", base, "random-demos(k=2)"),
        ],
    )
    fitted = await fit(plan(config))
    plain, demos = fitted.entries
    assert plain is config.entries[0] and fitted.fit_info["plain"]["fitted"] is False
    assert demos.pipeline is not None and demos.pipeline.is_fitted and demos.spec == demos.pipeline.spec()
    assert demos.judge is not None and demos.judge.describe() == demos.pipeline.wrap(base).describe()
    assert fitted.train_info is not None and fitted.train_info["file"] == "train.jsonl"
    assert (tmp_path / "train.jsonl").is_file()


def test_compare_config_checks_every_parameter_once_in_one_line(tmp_path: Path) -> None:
    bench = _bench()
    entries = _entries(FakeLM(_answer), bench, tmp_path)
    with pytest.raises(
        ConfigError, match=r"^The 'concurrency' parameter of compare must be an int >= 1\. Got 0"
    ):
        CompareConfig(benchmark=bench, criterion="q", entries=entries, concurrency=0)
    with pytest.raises(ConfigError, match=r"^The 'n_perm' parameter of compare must be an int >= 1\. Got 0"):
        CompareConfig(benchmark=bench, criterion="q", entries=entries, n_perm=0)
    with pytest.raises(ConfigError, match="'estimate' parameter of compare"):
        CompareConfig(benchmark=bench, criterion="q", entries=entries, estimate="median")
    with pytest.raises(
        ConfigError, match="'likelihood' parameter of compare must be a bool or a LikelihoodScorer"
    ):
        CompareConfig(benchmark=bench, criterion="q", entries=entries, likelihood="yes")
    with pytest.raises(ConfigError, match="unique entry names"):
        CompareConfig(benchmark=bench, criterion="q", entries=[entries[0], entries[0]])
    with pytest.raises(ConfigError, match="CompareConfig has no field 'concurency'"):
        CompareConfig(benchmark=bench, criterion="q", entries=entries).with_options(concurency=2)


async def test_a_plan_or_config_takes_its_options_from_itself(tmp_path: Path) -> None:
    bench = _bench()
    entries = _entries(FakeLM(_answer), bench, tmp_path)
    config = CompareConfig(benchmark=bench, criterion="q", entries=entries, out_dir=tmp_path)
    with pytest.raises(ConfigError, match=r"takes every option from it; got n_boot"):
        await compare(config, n_boot=10)
    planned = check_compare(benchmark=bench, criterion="q", entries=entries, limit=3)  # no out_dir yet
    with pytest.raises(ConfigError, match="expected out_dir"):
        await compare(planned)
    with pytest.raises(ConfigError, match=r"changing 'limit' changes what is judged"):
        planned.with_options(limit=4)
    result = await compare(planned.with_options(out_dir=tmp_path, progress=False, n_boot=0, n_perm=20))
    assert len(result.items) == 3


def test_check_compare_refuses_what_compare_would_before_any_call(tmp_path: Path) -> None:
    bench = _bench()
    lm = FakeLM([])
    base = PromptJudge(JudgePrompt.from_template(TEMPLATE, criterion="q"), lm)
    with pytest.raises(ConfigError, match=r"entry 'demos' learns from data .* --train FRACTION"):
        check_compare(
            benchmark=bench, criterion="q", entries=[Entry.from_pipeline("demos", base, "random-demos(k=2)")]
        )
    with pytest.raises(ConfigError, match="expected a criterion of toy"):
        check_compare(
            benchmark=bench, criterion="nope", entries=[Entry.from_pipeline("plain", base, "baseline")]
        )
    other = Benchmark(name="other", items=(Item(id="x", output="o", human={"q": 1.0}),), criteria=("q",))
    logged = Entry.from_recorded(_recorded_file(bench, tmp_path / "recorded.jsonl"), "q")
    with pytest.raises(ConfigError, match="has no answer on 'q' for 1 of the 1 items"):
        check_compare(benchmark=other, criterion="q", entries=[logged])
    with pytest.raises(DataError, match="no items to judge"):
        check_compare(
            benchmark=Benchmark(name="empty", items=(), criteria=("q",)), criterion="q", entries=[logged]
        )
    assert lm.calls == 0
