"""DeepEval adapter: a mitigated judge as a DeepEval metric, measured directly and through
``deepeval.evaluate``."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from mitigate.errors import ConfigError, ParseError
from mitigate.judge import PromptJudge
from mitigate.lm import FakeLM
from mitigate.prompt import JudgePrompt

TEMPLATE = (
    "Rate the answer from 1 to 5.\nQuestion: {{source}}\nReference: {{reference}}\nAnswer: {{output}}\nScore:"
)


def _judge() -> tuple[PromptJudge, FakeLM]:
    def reply(request: Any) -> str:
        text = request.messages[-1].content
        if "It depends" in text:
            return "I cannot tell."
        return "Score: 5" if "Paris" in text else "Score: 2"

    lm = FakeLM(reply)
    return PromptJudge(
        JudgePrompt.from_template(TEMPLATE, scale=(1, 5), slot_fields={"reference": "reference"}), lm
    ), lm


@pytest.fixture(autouse=True)
def _in_tmp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """deepeval (3 s to import) is imported by these tests only: a worker running none never pays for it."""
    os.environ.setdefault("DEEPEVAL_TELEMETRY_OPT_OUT", "YES")  # before deepeval is imported: no telemetry
    pytest.importorskip("deepeval", reason="deepeval not installed (pip install 'mitigate[deepeval]')")
    monkeypatch.chdir(tmp_path)  # deepeval writes a .deepeval folder into the working directory


def test_measure_gives_the_normalised_score_the_raw_answer_as_reason_and_success_by_threshold() -> None:
    from deepeval.metrics import BaseMetric
    from deepeval.test_case import LLMTestCase

    from mitigate.adapters.deepeval import mitigated_metric

    judge, lm = _judge()
    metric = mitigated_metric(judge, threshold=0.7)
    assert isinstance(metric, BaseMetric)
    case = LLMTestCase(input="Capital of France?", actual_output="Paris", expected_output="Paris")
    assert metric.measure(case) == 1.0
    assert (metric.score, metric.raw_score, metric.reason, metric.success) == (1.0, 5.0, "Score: 5", True)
    shown = lm.requests[0].messages[-1].content
    assert "Question: Capital of France?\nReference: Paris\nAnswer: Paris" in shown
    metric.measure(LLMTestCase(input="Two plus two?", actual_output="Five", expected_output="Four"))
    assert (metric.score, metric.success, metric.is_successful()) == (0.25, False, False)


async def test_a_measure_is_the_async_twin() -> None:
    from deepeval.test_case import LLMTestCase

    from mitigate.adapters.deepeval import mitigated_metric

    judge, _ = _judge()
    metric = mitigated_metric(judge, threshold=0.2)
    assert (
        await metric.a_measure(
            LLMTestCase(input="Two plus two?", actual_output="Five", expected_output="Four")
        )
        == 0.25
    )
    assert metric.success is True


def test_an_answer_without_a_score_is_a_metric_error_not_a_score() -> None:
    from deepeval.test_case import LLMTestCase

    from mitigate.adapters.deepeval import mitigated_metric

    judge, _ = _judge()
    metric = mitigated_metric(judge)
    with pytest.raises(ParseError, match="held no score"):
        metric.measure(
            LLMTestCase(input="Colour of the sky?", actual_output="It depends", expected_output="Blue")
        )
    assert metric.score is None and metric.success is False and metric.reason == "I cannot tell."
    assert metric.error is not None and "held no score" in metric.error


def test_deepeval_evaluate_runs_the_metric_and_records_the_parse_failure_as_an_error() -> None:
    from deepeval import evaluate
    from deepeval.evaluate.configs import DisplayConfig, ErrorConfig
    from deepeval.test_case import LLMTestCase

    from mitigate.adapters.deepeval import mitigated_metric

    judge, _ = _judge()
    cases = [
        LLMTestCase(input="Capital of France?", actual_output="Paris", expected_output="Paris", name="q0"),
        LLMTestCase(
            input="Colour of the sky?", actual_output="It depends", expected_output="Blue", name="q1"
        ),
    ]
    result = evaluate(
        cases,
        [mitigated_metric(judge, threshold=0.5)],
        error_config=ErrorConfig(ignore_errors=True),
        display_config=DisplayConfig(print_results=False, show_indicator=False),
    )
    by_name = {t.name: t.metrics_data[0] for t in result.test_results}
    assert (by_name["q0"].score, by_name["q0"].success, by_name["q0"].error) == (1.0, True, None)
    assert by_name["q1"].score is None and by_name["q1"].success is False
    assert "held no score" in (by_name["q1"].error or "")


def test_a_threshold_outside_0_1_is_refused() -> None:
    from mitigate.adapters.deepeval import mitigated_metric

    judge, _ = _judge()
    with pytest.raises(ConfigError, match="threshold between 0 and 1"):
        mitigated_metric(judge, threshold=4)
