"""``mitigate prompts render``, ``--dry-run`` on judge, compare and search (no LM call), and the prompt
overrides."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from mitigate.cli import app
from mitigate.data import Benchmark, Item, save_jsonl
from mitigate.testing import StubOpenAIServer

TEMPLATE = (
    "Rate how helpful the assistant's reply is, on a scale of 1 to 5.\n\n[User "
    "request]\n{{question}}\n\n[Begin assistant reply]\n{{output}}\n[End assistant reply]\n\nRate it "
    'on the last line as "Rating: [[N]]".'
)
PAIRWISE = (
    "Which response answers better?\n\nResponse 1: {{output}}\n\nResponse 2: {{output_b}}\n\n"
    "Answer with 1, 2 or tie."
)


def _bench(tmp_path: Path, n: int = 8) -> Path:
    items = tuple(
        Item(
            id=f"x{i}",
            output=f"Reply number {i}." + " More." * (i % 3),
            inputs={"question": f"Q{i}?"},
            system=f"S{i % 2}",
            doc_id=f"d{i // 2}",
            human={"help": float(1 + i % 5)},
        )
        for i in range(n)
    )
    return save_jsonl(Benchmark(name="b", items=items, criteria=("help",)), tmp_path / "b.jsonl")


def _pairwise(tmp_path: Path, n: int = 8) -> Path:
    items = tuple(
        Item(
            id=f"p{k}",
            output=f"a careful answer {k}",
            output_b=f"short {k}",
            doc_id=f"d{k // 2}",
            preference={"help": "A" if k % 2 == 0 else "B"},
        )
        for k in range(n)
    )
    return save_jsonl(Benchmark(name="pw", items=items, criteria=("help",)), tmp_path / "pw.jsonl")


def _template(tmp_path: Path, text: str = TEMPLATE) -> Path:
    path = tmp_path / "t.txt"
    path.write_text(text)
    return path


def _invoke(args: list[str]):
    return CliRunner().invoke(app, args)


# --------------------------------------------------------------------------- prompts render


def test_render_shows_every_request_with_its_sampling_constraint_and_diff(tmp_path: Path) -> None:
    t = _template(tmp_path)
    result = _invoke(["prompts", "render", str(t), "--pipeline", "sampling(temperature=0.7, n=3)"])
    assert result.exit_code == 0, result.output
    out = result.stdout
    assert "=== request 1 of 1" in out
    assert "temperature: 0.7   n: 3" in out
    assert "constraint: format constraint" in out and "grammar:" in out and "Rating: [[" in out
    assert "<question>" in out and "<output>" in out  # a placeholder item without -b


def test_render_of_a_position_swap_lists_both_orders_with_the_outputs_exchanged(tmp_path: Path) -> None:
    t = _template(tmp_path, PAIRWISE)
    b = _pairwise(tmp_path)
    result = _invoke(
        ["prompts", "render", str(t), "-b", f"jsonl:{b}", "--item", "p3", "--pipeline", "position-swap"]
    )
    assert result.exit_code == 0, result.output
    out = result.stdout
    assert "request 1 of 2: original" in out and "request 2 of 2: swapped" in out and "outputs swapped" in out
    second = out.split("request 2 of 2")[1]
    assert second.index("short 3") < second.index("a careful answer 3")
    assert "messages identical to the unmitigated prompt's" in out  # each order diffed against its own base


def test_render_of_a_built_in_prompt_by_name() -> None:
    result = _invoke(["prompts", "render", "summeval-coherence", "--pipeline", "consistency-hint"])
    assert result.exit_code == 0, result.output
    assert "+Important: the order in which the score options are listed" in result.stdout


def test_render_with_train_fits_demos_without_a_backend(tmp_path: Path) -> None:
    t, b = _template(tmp_path), _bench(tmp_path)
    result = _invoke(
        ["prompts", "render", str(t), "-b", f"jsonl:{b}", "--pipeline", "random-demos(k=2)", "--train", "0.5"]
    )
    assert result.exit_code == 0, result.output
    assert "fitted on" in result.stdout and "+Examples:" in result.stdout


def test_render_refuses_to_fit_a_pipeline_that_calls_the_judge_without_a_backend(tmp_path: Path) -> None:
    t, b = _template(tmp_path), _bench(tmp_path)
    result = _invoke(
        [
            "prompts",
            "render",
            str(t),
            "-b",
            f"jsonl:{b}",
            "--pipeline",
            "highest-rs-demos(k=2)",
            "--train",
            "0.5",
        ]
    )
    assert result.exit_code == 2
    assert "calls the judge while fitting; expected --backend" in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1


def test_render_of_a_pipeline_that_learns_needs_train(tmp_path: Path) -> None:
    result = _invoke(["prompts", "render", str(_template(tmp_path)), "--pipeline", "random-demos(k=2)"])
    assert result.exit_code == 2 and "must be fitted first; expected -b with --train" in result.stderr


def test_readme_pipeline_consistency_hint_then_cot_renders_on_the_default_backend(tmp_path: Path) -> None:
    result = _invoke(
        [
            "prompts",
            "render",
            str(_template(tmp_path)),
            "--pipeline",
            "consistency-hint | sampling(cot=true, temperature=0.7, n=3)",
        ]
    )
    # was: an error about ExpectedScore, which the user never added
    assert result.exit_code == 0, result.output
    assert "answer read: parse" in result.stdout and "logprobs: no" in result.stdout


# --------------------------------------------------------------------------- overrides


def test_answer_format_and_reasoning_overrides_change_the_constraint(tmp_path: Path) -> None:
    t = _template(tmp_path)
    result = _invoke(
        ["prompts", "render", str(t), "--answer-format", "Verdict: <{value}>", "--reasoning", "before"]
    )
    assert result.exit_code == 0, result.output
    assert '"Verdict: <N>" after reasoning' in result.stdout
    assert "reason ::=" in result.stdout


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (["--answer-format", "Rating: N"], "expected --answer-format as an answer line with one {value}"),
        (["--reasoning", "after"], "--reasoning"),
        (["--slot-field", "question"], "expected --slot-field as SLOT=FIELD"),
        (["--const", "=x"], "expected --const as NAME=VALUE"),
        (["--output-slot", "not a slot"], "expected --output-slot as a slot name"),
    ],
)
def test_a_bad_override_is_one_line_naming_what_was_expected(
    tmp_path: Path, args: list[str], expected: str
) -> None:
    for cmd in (
        ["prompts", "render", str(_template(tmp_path))],
        ["judge"],
        ["compare", "-p", "baseline"],
        ["search"],
    ):
        result = _invoke([*cmd, *args])
        assert result.exit_code == 2, (cmd, result.output)
        assert expected in result.stderr, (cmd, result.stderr)
        assert len(result.stderr.strip().splitlines()) == 1


def test_slot_field_and_const_overrides_fill_the_template(tmp_path: Path) -> None:
    t = _template(tmp_path, "Judge by this rubric: {{rubric}}\nQ: {{ask}}\nA: {{output}}\nScore (1-5):")
    b = _bench(tmp_path)
    result = _invoke(
        [
            "prompts",
            "render",
            str(t),
            "-b",
            f"jsonl:{b}",
            "--slot-field",
            "ask=question",
            "--const",
            "rubric=be strict",
        ]
    )
    assert result.exit_code == 0, result.output
    assert "Judge by this rubric: be strict" in result.stdout and "Q: Q0?" in result.stdout


# --------------------------------------------------------------------------- --dry-run makes no call


def test_dry_run_on_judge_compare_and_search_makes_no_call(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("MITIGATE_CACHE_DIR", str(tmp_path / "cache"))
    t, b = _template(tmp_path), _bench(tmp_path, 12)
    with StubOpenAIServer(latency=0.0, reply="Rating: [[3]]") as server:
        lm = ["--backend", "openai:stub", "--base-url", server.base_url, "--no-progress"]
        judge = _invoke(
            [
                "judge",
                "-b",
                f"jsonl:{b}",
                "--prompt",
                str(t),
                "--pipeline",
                "sampling(temperature=0.7, n=3)",
                "--dry-run",
                *lm,
            ]
        )
        compare = _invoke(
            [
                "compare",
                "-b",
                f"jsonl:{b}",
                "--prompt",
                str(t),
                "-p",
                "baseline",
                "-p",
                "random-demos(k=2)",
                "-p",
                "highest-rs-demos(k=2)",
                "--train",
                "0.5",
                "--out",
                str(tmp_path / "o"),
                "--dry-run",
                *lm,
            ]
        )
        search = _invoke(
            [
                "search",
                "-b",
                f"jsonl:{b}",
                "--prompt",
                str(t),
                "--out",
                str(tmp_path / "s.json"),
                "--dry-run",
                *lm,
            ]
        )
        assert server.request_count == 0
    for result in (judge, compare, search):
        assert result.exit_code == 0, result.output
        assert "dry run: no LM call" in result.stdout
    assert "entry 'random-demos(k=2)'" in compare.stdout and "+Examples:" in compare.stdout
    assert "calls the judge while fitting on --train" in compare.stdout
    assert not (tmp_path / "o" / "results.json").exists() and not (tmp_path / "s.json").exists()


# --------------------------------------------------------------------------- pairwise judge prints verdicts


def test_judge_on_a_pairwise_benchmark_prints_verdicts_beside_the_gold_preference(
    tmp_path: Path, monkeypatch
) -> None:
    monkeypatch.setenv("MITIGATE_CACHE_DIR", str(tmp_path / "cache"))
    t, b = _template(tmp_path, PAIRWISE), _pairwise(tmp_path, 4)
    with StubOpenAIServer(latency=0.0, reply="1") as server:
        result = _invoke(
            [
                "judge",
                "-b",
                f"jsonl:{b}",
                "--prompt",
                str(t),
                "--backend",
                "openai:stub",
                "--base-url",
                server.base_url,
                "--no-progress",
                "--no-cache",
            ]
        )
    assert result.exit_code == 0, result.output
    lines = [ln.split("\t") for ln in result.stdout.splitlines() if ln.startswith("p")]
    assert [ln[1:3] for ln in lines[:2]] == [["judge=first", "gold=A"], ["judge=first", "gold=B"]]
    assert "FAILED" not in result.stdout


# --------------------------------------------------------------------------- one default, identical entries


def test_an_entry_identical_by_construction_is_flagged_not_reported_as_a_zero_difference(
    tmp_path: Path, monkeypatch
) -> None:
    monkeypatch.setenv("MITIGATE_CACHE_DIR", str(tmp_path / "cache"))
    t, b = _template(tmp_path), _bench(tmp_path, 10)
    with StubOpenAIServer(latency=0.0, reply="Rating: [[3]]") as server:
        result = _invoke(
            [
                "compare",
                "-b",
                f"jsonl:{b}",
                "--prompt",
                str(t),
                "-p",
                "baseline",
                "-p",
                "expected-score",
                "-p",
                "sampling(temperature=0.7, n=2)",
                "--scoring",
                "expected",
                "--backend",
                "openai:stub",
                "--base-url",
                server.base_url,
                "--no-progress",
                "--no-cache",
                "--n-boot",
                "10",
                "--out",
                str(tmp_path / "o"),
            ]
        )
    assert result.exit_code == 0, result.output
    report = (tmp_path / "o" / "report.md").read_text()
    assert "- expected-score = baseline" in report
    assert "identical to baseline by construction" in report
    data = {e["name"]: e for e in json.loads((tmp_path / "o" / "results.json").read_text())["entries"]}
    assert data["expected-score"]["identical_to"] == "baseline"
    assert data["sampling(temperature=0.7, n=2)"]["identical_to"] is None
    assert "baseline: expected score from logprobs" in report


def test_auto_scoring_reads_the_text_of_an_entry_that_asks_for_reasoning(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("MITIGATE_CACHE_DIR", str(tmp_path / "cache"))
    t, b = _template(tmp_path), _bench(tmp_path, 4)
    result = _invoke(
        [
            "compare",
            "-b",
            f"jsonl:{b}",
            "--prompt",
            str(t),
            "-p",
            "baseline",
            "-p",
            "consistency-hint | sampling(cot=true, temperature=0.7, n=2)",
            "--dry-run",
            "--out",
            str(tmp_path / "o"),
        ]
    )  # the embedded model's default: expected score
    assert result.exit_code == 0, result.output
    base, cot = result.stdout.split("### entry")[1:3]
    assert "answer read: expected score" in base
    assert "answer read: parse" in cot and "logprobs: no" in cot


def test_render_of_a_published_template_read_from_its_package(tmp_path: Path) -> None:
    # reads the installed package's file; skips when it is absent
    from tests.prompt.test_template_corpus import REAL, _hints

    loader, hints, _ = REAL["prometheus-absolute"]
    (tmp_path / "p.txt").write_text(loader())
    (tmp_path / "rubric.txt").write_text(_hints(hints).constants["rubric"])
    result = _invoke(
        [
            "prompts",
            "render",
            str(tmp_path / "p.txt"),
            "--const",
            f"rubric=@{tmp_path / 'rubric.txt'}",
            "--pipeline",
            "sampling(cot=true, temperature=0.7, n=2) | position-swap",
        ]
    )
    # refused, one line
    assert result.exit_code == 2 and "PositionSwap needs pairwise prompt judges" in result.stderr
    result = _invoke(
        [
            "prompts",
            "render",
            str(tmp_path / "p.txt"),
            "--const",
            f"rubric=@{tmp_path / 'rubric.txt'}",
            "--pipeline",
            "agreement-gate",
        ]
    )
    assert result.exit_code == 0, result.output
    out = result.stdout
    assert "request 1 of 2: rts" in out and "request 2 of 2: mcq" in out
    assert '"[RESULT] N" after reasoning' in out and 'answer ::= "[RESULT] "' in out
    # the MCQ form ends with "Answer: ": the judge completes it with the letter alone, never "Answer:" again
    assert 'root ::= " "? ("A" | "B" | "C" | "D" | "E")' in out and 'Complete the last line "Answer:"' in out


def test_render_warns_in_one_line_about_a_single_brace_field_beside_double_brace_slots(
    tmp_path: Path,
) -> None:
    text = 'Rate the summary.\n\nDocument:\n{Document}\n\nSummary:\n{{Summary}}\n\nAnswer with "Score: N".'
    result = _invoke(["prompts", "render", str(_template(tmp_path, text))])
    assert result.exit_code == 0, result.output
    (line,) = [ln for ln in result.output.splitlines() if ln.startswith("warning:")]
    assert "{Document}" in line and "literally" in line and "{{Document}}" in line
    assert "Document:\n{Document}" in result.output  # sent as written
