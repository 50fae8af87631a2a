"""inspect-ai adapter: a mitigated judge as a scorer in a real (offline) inspect eval, and inspect logs read
back.

The solver model is inspect's ``mockllm/model`` with scripted outputs (token usage set, so inspect
never loads a tokenizer from the network); our judge runs on FakeLM.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
from typer.testing import CliRunner

from mitigate.adapters.inspect_ai import inspect_log_to_recorded, mitigated_scorer, read_inspect_log
from mitigate.cli import app
from mitigate.data import Benchmark, Item, load_recorded_runs, save_jsonl
from mitigate.errors import DataError
from mitigate.judge import PromptJudge
from mitigate.lm import FakeLM
from mitigate.prompt import JudgePrompt
from mitigate.scale import Scale

if TYPE_CHECKING:
    from inspect_ai import Task
    from inspect_ai.dataset import Sample
    from inspect_ai.model import ChatMessage, ModelOutput
    from inspect_ai.scorer import Score, Target

TEMPLATE = (
    "Rate how well the answer fits the question, from 1 to 5.\nQuestion: {{source}}\nAnswer: "
    "{{output}}\nScore:"
)
ANSWERS = {"Capital of France?": "Paris.", "Two plus two?": "Four.", "Colour of the sky?": "It depends."}


@pytest.fixture(autouse=True)
def _inspect_ai() -> None:
    """inspect-ai (2 s to import) is imported by these tests only: a worker running none never pays for it."""
    pytest.importorskip("inspect_ai", reason="inspect-ai not installed (pip install 'mitigate[inspect]')")


def _output(text: str) -> ModelOutput:
    from inspect_ai.model import ModelOutput, ModelUsage

    out = ModelOutput.from_content(model="mockllm", content=text)
    out.usage = ModelUsage(input_tokens=1, output_tokens=1, total_tokens=2)
    return out


def _solver_model() -> Any:
    from inspect_ai.model import get_model

    def answer(messages: list[ChatMessage], *_: Any) -> ModelOutput:
        return _output(ANSWERS[messages[-1].text])

    return get_model("mockllm/model", custom_outputs=answer)


def _judge() -> tuple[PromptJudge, FakeLM]:
    def reply(request: Any) -> str:
        text = request.messages[-1].content
        if "It depends." in text:
            return "I cannot tell."  # no score: must become an unscored sample, never a number
        return "Score: 5" if "Paris." in text else "Score: 3"

    lm = FakeLM(reply)
    return PromptJudge(JudgePrompt.from_template(TEMPLATE, scale=(1, 5)), lm), lm


def _dataset() -> list[Sample]:
    from inspect_ai.dataset import Sample

    return [Sample(input=q, target="", id=f"q{i}") for i, q in enumerate(ANSWERS)]


def _run(tmp_path: Path, task: Task, **kwargs: Any) -> Any:
    from inspect_ai import eval as inspect_eval

    (log,) = inspect_eval(
        task, model=_solver_model(), log_dir=str(tmp_path / "logs"), display="none", **kwargs
    )
    assert log.status == "success", log.error
    return log


def test_the_scorer_judges_the_solver_output_and_leaves_a_parse_failure_unscored(tmp_path: Path) -> None:
    from inspect_ai import Task
    from inspect_ai.solver import generate

    judge, lm = _judge()
    log = _run(tmp_path, Task(dataset=_dataset(), solver=generate(), scorer=mitigated_scorer(judge)))
    scores = {s.id: s.scores["mitigated_judge"] for s in log.samples}
    assert (scores["q0"].value, scores["q1"].value) == (5.0, 3.0)
    assert scores["q0"].explanation == "Score: 5" and scores["q0"].metadata["normalized"] == 1.0
    assert math.isnan(scores["q2"].value) and scores["q2"].reason == "grader_failed"
    assert "held no score" in scores["q2"].metadata["error"] and scores["q2"].explanation == "I cannot tell."
    metrics = log.results.scores[0].metrics
    assert metrics["mean"].value == pytest.approx(4.0)  # the unscored sample is left out, not counted as 0
    sent = [r.messages[-1].content for r in lm.requests]
    assert any("Question: Capital of France?\nAnswer: Paris." in text for text in sent)


def test_a_log_of_the_scorer_reads_back_as_recorded_judgments_with_epochs_as_samples(tmp_path: Path) -> None:
    from inspect_ai import Task
    from inspect_ai.solver import generate

    judge, _ = _judge()
    log = _run(
        tmp_path, Task(dataset=_dataset(), solver=generate(), scorer=mitigated_scorer(judge)), epochs=2
    )
    run = read_inspect_log(log.location)["mitigated_judge"]
    rows = sorted(run.rows(), key=lambda r: (r.item_id, r.sample))
    assert [(r.item_id, r.sample, r.score) for r in rows] == [
        ("q0", 0, 5.0),
        ("q0", 1, 5.0),
        ("q1", 0, 3.0),
        ("q1", 1, 3.0),
        ("q2", 0, None),
        ("q2", 1, None),
    ]
    assert rows[4].error is not None and "held no score" in rows[4].error and rows[4].raw == "I cannot tell."
    assert run.scales["score"] == Scale(min=1, max=5)
    assert rows[0].meta["model"] == "mockllm/model"
    converted = CliRunner().invoke(
        app,
        [
            "data",
            "convert",
            log.location,
            "--from",
            "inspect",
            "--judge",
            "mine",
            "-o",
            str(tmp_path / "rec.csv"),
        ],
    )
    assert converted.exit_code == 0, converted.output
    (again,) = load_recorded_runs(tmp_path / "rec.csv").values()
    assert again.judge == "mine" and len(again.rows()) == 6


def test_a_json_log_of_inspects_own_model_graded_scorer_reads_grades_as_scores(tmp_path: Path) -> None:
    from inspect_ai import Task
    from inspect_ai.model import get_model
    from inspect_ai.scorer import model_graded_qa
    from inspect_ai.solver import generate

    def grade(messages: list[ChatMessage], *_: Any) -> ModelOutput:
        text = messages[-1].text
        return _output("The answer is right.\nGRADE: C" if "Paris." in text else "Wrong.\nGRADE: I")

    grader = get_model("mockllm/model", custom_outputs=grade)
    log = _run(
        tmp_path,
        Task(dataset=_dataset(), solver=generate(), scorer=model_graded_qa(model=grader)),
        log_format="json",
    )
    assert log.location.endswith(".json")
    run = read_inspect_log(log.location, judge="mockllm-grader", criterion="correct")["mockllm-grader"]
    got = {r.item_id: r.score for r in run.rows()}
    assert got == {"q0": 1.0, "q1": 0.0, "q2": 0.0}
    assert run.scales["correct"] == Scale(min=0, max=1, step=0.5)
    assert "GRADE: C" in run.get("q0", "correct").rows[0].raw


def test_an_inspect_log_feeds_compare_recorded(tmp_path: Path) -> None:
    from inspect_ai import Task
    from inspect_ai.solver import generate

    judge, _ = _judge()
    log = _run(tmp_path, Task(dataset=_dataset(), solver=generate(), scorer=mitigated_scorer(judge)))
    recorded = inspect_log_to_recorded(log.location, tmp_path / "recorded.jsonl", criterion="fit")
    assert set(load_recorded_runs(recorded)) == {"mitigated_judge"}
    bench = Benchmark(
        name="qa",
        criteria=("fit",),
        scale=Scale(min=1, max=5),
        items=tuple(
            Item(id=f"q{i}", output=ANSWERS[q], inputs={"source": q}, human={"fit": h})
            for i, (q, h) in enumerate(zip(ANSWERS, (5, 2, 1), strict=True))
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
    assert "mitigated_judge" in result.stdout
    assert (tmp_path / "report").is_dir()


def test_dict_values_give_one_criterion_each_and_noanswer_is_a_failure_not_a_zero(tmp_path: Path) -> None:
    from inspect_ai import Task
    from inspect_ai.scorer import Score, mean, scorer
    from inspect_ai.solver import generate

    @scorer(metrics=[mean()])
    def _two_criteria() -> Any:
        async def score(state: Any, target: Target) -> Score:
            if state.output.completion == "It depends.":
                return Score(value="N", explanation="no answer given")
            return Score(value={"fluency": 4, "correct": 1}, explanation="graded by hand")

        return score

    log = _run(tmp_path, Task(dataset=_dataset(), solver=generate(), scorer=_two_criteria()))
    run = read_inspect_log(log.location)["_two_criteria"]
    assert set(run.criteria) == {"fluency", "correct", "overall"}
    assert run.get("q0", "fluency").rows[0].score == 4.0 and run.get("q0", "correct").rows[0].score == 1.0
    (noanswer,) = run.get("q2", "overall").rows
    assert (
        noanswer.score is None and "got 'N'" in (noanswer.error or "") and noanswer.raw == "no answer given"
    )


def test_a_file_that_is_not_an_inspect_log_is_refused_naming_it(tmp_path: Path) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text('{"not": "a log"}')
    with pytest.raises(DataError, match="expected an inspect eval log"):
        read_inspect_log(bad)
