"""promptfoo adapter: ``get_assert(output, context)`` called as promptfoo calls it, and result files read
back.

``fixtures/promptfoo_results.json`` was written by ``promptfoo eval -o`` (promptfoo 0.121.20, echo
provider, our Python assertion on FakeLM; stack traces and local paths trimmed). The end-to-end
test reruns promptfoo itself when its CLI is available (``PROMPTFOO_BIN`` or ``promptfoo`` on PATH).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from mitigate.adapters.promptfoo import (
    get_assert,
    make_assert,
    promptfoo_results_to_recorded,
    read_promptfoo_results,
)
from mitigate.cli import app
from mitigate.data import Benchmark, Item, load_recorded_runs, save_jsonl
from mitigate.errors import ConfigError, DataError, ParseError
from mitigate.judge import PromptJudge
from mitigate.lm import FakeLM
from mitigate.prompt import JudgePrompt
from mitigate.scale import Scale
from mitigate.testing import StubOpenAIServer

FIXTURE = Path(__file__).parents[1] / "fixtures" / "promptfoo_results.json"
TEMPLATE = "Rate the answer from 1 to 5.\nQuestion: {{source}}\nAnswer: {{output}}\nScore:"


def _judge(reply: str) -> tuple[PromptJudge, FakeLM]:
    lm = FakeLM(lambda request: reply)
    return PromptJudge(JudgePrompt.from_template(TEMPLATE, scale=(1, 5)), lm), lm


def _context(**variables: Any) -> dict[str, Any]:
    return {"prompt": "Answer: {{answer}}", "vars": variables, "test": {"vars": variables}, "config": {}}


def test_get_assert_returns_a_grading_result_on_the_0_1_scale_with_the_raw_answer_as_reason() -> None:
    judge, lm = _judge("Good. Score: 4")
    grade = make_assert(judge, threshold=0.7, input_var="question")
    result = grade("Paris", _context(question="Capital of France?"))
    assert result == {"pass": True, "score": 0.75, "reason": "Good. Score: 4"}
    assert "Question: Capital of France?\nAnswer: Paris" in lm.requests[0].messages[-1].content
    assert make_assert(judge, threshold=0.8)("Paris", _context())["pass"] is False  # 0.75 < 0.8


def test_get_assert_without_input_var_judges_against_the_prompt_promptfoo_sent() -> None:
    judge, lm = _judge("Score: 2")
    make_assert(judge)("Paris", _context())
    assert "Question: Answer: {{answer}}" in lm.requests[0].messages[-1].content


def test_an_answer_without_a_score_raises_instead_of_grading() -> None:
    judge, _ = _judge("I cannot tell.")
    with pytest.raises(ParseError, match="held no score.*raw answer: 'I cannot tell.'"):
        make_assert(judge)("Paris", _context())


def test_a_missing_input_var_and_a_threshold_off_0_1_are_refused() -> None:
    judge, _ = _judge("Score: 3")
    with pytest.raises(ConfigError, match="expected the test var 'question'"):
        make_assert(judge, input_var="question")("Paris", _context(other="x"))
    with pytest.raises(ConfigError, match="threshold between 0 and 1"):
        make_assert(judge, threshold=4)("Paris", _context())


def test_the_module_get_assert_builds_the_judge_from_the_assertion_config(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    (tmp_path / "judge.txt").write_text(TEMPLATE)
    with StubOpenAIServer(latency=0.0, reply="Score: 4") as server:
        context = _context(question="Capital of France?")
        context["config"] = {
            "prompt": str(tmp_path / "judge.txt"),
            "backend": "openai:stub-model",
            "base_url": server.base_url,
            "pipeline": "baseline",
            "threshold": 0.9,
            "input_var": "question",
        }
        result = get_assert("Paris", context)
        assert server.request_count == 1
    assert result == {"pass": False, "score": 0.75, "reason": "Score: 4"}
    context["config"]["temperature"] = 0
    with pytest.raises(ConfigError, match="unknown \\['temperature'\\]"):
        get_assert("Paris", context)


def test_a_real_promptfoo_results_file_reads_back_with_the_grader_failure_kept_as_a_failure() -> None:
    (run,) = read_promptfoo_results(FIXTURE, id_var="id").values()
    assert run.judge == "python" and run.criteria == ("fit",)
    got = {r.item_id: (r.score, r.error is not None) for r in run.rows()}
    assert got == {"q0": (1.0, False), "q1": (0.25, False), "q2": (None, True)}
    assert "held no score" in (run.get("q2", "fit").rows[0].error or "")
    assert run.get("q0", "fit").rows[0].raw == "Score: 5"
    assert run.scales["fit"] == Scale(min=0, max=1)


def test_results_of_several_providers_become_one_item_per_output_and_errored_outputs_failures(
    tmp_path: Path,
) -> None:
    def result(test: int, provider: str, score: float, failure: int = 0) -> dict[str, Any]:
        component = {
            "pass": score > 0.5,
            "score": score,
            "reason": f"graded {score}",
            "assertion": {"type": "llm-rubric", "value": "is polite", "provider": "openai:gpt-4o-mini"},
        }
        return {
            "testIdx": test,
            "promptIdx": 0,
            "provider": {"id": provider, "label": ""},
            "vars": {"id": f"t{test}"},
            "testCase": {"vars": {"id": f"t{test}"}},
            "failureReason": failure,
            "error": "provider timed out" if failure == 2 else None,
            "success": failure == 0,
            "score": score,
            "response": {"output": "hello"},
            "gradingResult": {"pass": True, "score": score, "reason": "", "componentResults": [component]},
        }

    doc = {
        "evalId": "e",
        "results": {
            "version": 3,
            "results": [
                result(0, "openai:a", 0.9),
                result(0, "openai:b", 0.2),
                result(1, "openai:a", 0.0, failure=2),
            ],
        },
    }
    path = tmp_path / "results.json"
    path.write_text(json.dumps(doc))
    (run,) = read_promptfoo_results(path, id_var="id").values()
    assert run.judge == "llm-rubric:openai:gpt-4o-mini"
    got = {r.item_id: (r.score, r.error) for r in run.rows()}
    assert got == {
        "t0/openai:a": (0.9, None),
        "t0/openai:b": (0.2, None),
        "t1/openai:a": (None, "the output errored: provider timed out"),
    }


def test_a_promptfoo_results_file_feeds_compare_recorded(tmp_path: Path) -> None:
    recorded = promptfoo_results_to_recorded(FIXTURE, tmp_path / "recorded.jsonl", id_var="id")
    bench = Benchmark(
        name="qa",
        criteria=("fit",),
        scale=Scale(min=1, max=5),
        items=tuple(
            Item(id=f"q{i}", output=a, inputs={"source": q}, human={"fit": h})
            for i, (q, a, h) in enumerate(
                (
                    ("Capital of France?", "Paris", 5),
                    ("Two plus two?", "Five", 1),
                    ("Colour of the sky?", "It depends", 3),
                )
            )
        ),
    )
    save_jsonl(bench, tmp_path / "bench.jsonl")
    result = CliRunner().invoke(
        app,
        [
            "compare",
            "-b",
            f"jsonl:{tmp_path / 'bench.jsonl'}",
            "-c",
            "fit",
            "--recorded",
            str(recorded),
            "--out",
            str(tmp_path / "report"),
        ],
    )
    assert result.exit_code == 0, result.output
    assert "python" in result.stdout


def test_a_file_that_is_not_a_promptfoo_results_file_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "x.json"
    path.write_text("[1, 2]")
    with pytest.raises(DataError, match="expected a promptfoo results file"):
        read_promptfoo_results(path)


def _promptfoo() -> str:
    found = os.environ.get("PROMPTFOO_BIN") or shutil.which("promptfoo")
    if not found:
        pytest.skip("promptfoo CLI not available (set PROMPTFOO_BIN or put promptfoo on PATH)")
    return found


def test_promptfoo_itself_runs_our_assertion_and_its_results_file_reads_back(tmp_path: Path) -> None:
    binary = _promptfoo()
    (tmp_path / "grader.py").write_text(
        "from mitigate.adapters.promptfoo import make_assert\n"
        "from mitigate.judge import PromptJudge\nfrom mitigate.lm._fake import FakeLM\nfrom mitigate.prompt "
        f"import JudgePrompt\nTEMPLATE = {TEMPLATE!r}\n"
        "def reply(request):\n"
        "    text = request.messages[-1].content\n"
        "    return 'I cannot tell.' if 'depends' in text else ('Score: 5' if 'Paris' in text else 'Score: "
        "2')\nget_assert = make_assert(PromptJudge(JudgePrompt.from_template(TEMPLATE, scale=(1, 5)), "
        "FakeLM(reply)),\n                         input_var='question')\n"
    )
    tests = "".join(
        f"  - vars: {{question: '{q}', answer: '{a}', id: q{i}}}\n"
        "    assert:\n      - type: python\n        value: file://grader.py\n        metric: fit\n"
        for i, (q, a) in enumerate(
            (("Capital of France?", "Paris"), ("Two plus two?", "Five"), ("Colour of the sky?", "It depends"))
        )
    )
    (tmp_path / "promptfooconfig.yaml").write_text(
        "prompts:\n  - 'Answer: {{answer}}'\nproviders:\n  - echo\ntests:\n" + tests
    )
    env = {
        **os.environ,
        "PYTHONPATH": str(Path(__file__).resolve().parents[2]),
        "PROMPTFOO_PYTHON": sys.executable,
        "PROMPTFOO_DISABLE_TELEMETRY": "1",
        "PROMPTFOO_DISABLE_UPDATE": "1",
        "PROMPTFOO_CONFIG_DIR": str(tmp_path / "pfhome"),
    }
    subprocess.run(
        [
            binary,
            "eval",
            "-c",
            "promptfooconfig.yaml",
            "-o",
            "results.json",
            "--no-cache",
            "--no-progress-bar",
            "--no-table",
        ],
        cwd=tmp_path,
        env=env,
        timeout=300,
        check=False,
        capture_output=True,
    )
    (run,) = read_promptfoo_results(tmp_path / "results.json", id_var="id").values()
    got = {r.item_id: (r.score, r.error is not None) for r in run.rows()}
    assert got == {"q0": (1.0, False), "q1": (0.25, False), "q2": (None, True)}


def test_the_cli_converts_a_promptfoo_results_file_into_recorded_judgments(tmp_path: Path) -> None:
    out = tmp_path / "recorded.jsonl"
    result = CliRunner().invoke(
        app, ["data", "convert", str(FIXTURE), "--from", "promptfoo", "--id-key", "id", "-o", str(out)]
    )
    assert result.exit_code == 0, result.output
    (run,) = load_recorded_runs(out).values()
    assert {r.item_id: r.score for r in run.rows()} == {"q0": 1.0, "q1": 0.25, "q2": None}
    refused = CliRunner().invoke(app, ["data", "convert", str(FIXTURE), "--from", "lm-eval", "-o", str(out)])
    assert refused.exit_code == 2 and "expected --from inspect or promptfoo; got 'lm-eval'" in refused.stderr
