"""The mitigation contract: composition, fold order, spec round-trips, CLI pipeline text."""

from __future__ import annotations

import pytest

from mitigate import JudgePrompt, PromptJudge
from mitigate.errors import ConfigError
from mitigate.lm import FakeLM
from mitigate.prompt import PromptMessage
from mitigate.registry import register
from mitigate.strategies import Pipeline, PromptMitigation, from_spec, parse_pipeline


@register("mitigation", "test-append")
class Append(PromptMitigation):
    """Appends a marker to the last message (test-only)."""

    text: str = "!"

    def apply(self, prompt: JudgePrompt) -> JudgePrompt:
        msgs = list(prompt.messages)
        msgs[-1] = PromptMessage(role=msgs[-1].role, template=msgs[-1].template + self.text)
        return prompt.model_copy(update={"messages": tuple(msgs)})


def _judge() -> PromptJudge:
    return PromptJudge(JudgePrompt.from_template("Rate {{output}}"), FakeLM([]))


def test_pipe_builds_a_flat_pipeline_that_folds_left_to_right() -> None:
    p = Append(text="[a]") | Append(text="[b]") | (Append(text="[c]") | Append(text="[d]"))
    assert isinstance(p, Pipeline) and len(p) == 4
    wrapped = p.wrap(_judge())
    assert isinstance(wrapped, PromptJudge)
    assert wrapped.prompt.messages[-1].template == "Rate {{output}}[a][b][c][d]"


def test_wrap_never_mutates_the_input_judge() -> None:
    judge = _judge()
    Append(text="X").wrap(judge)
    assert isinstance(judge, PromptJudge) and judge.prompt.messages[-1].template == "Rate {{output}}"


def test_spec_round_trips_for_steps_and_pipelines() -> None:
    p = Pipeline([Append(text="1"), Append(text="2")])
    spec = p.spec()
    assert spec == {
        "name": "pipeline",
        "steps": [
            {"name": "test-append", "params": {"text": "1"}},
            {"name": "test-append", "params": {"text": "2"}},
        ],
    }
    again = from_spec(spec)
    assert again == p and again.spec() == spec


def test_cli_pipeline_text_is_parsed_with_json_values() -> None:
    p = parse_pipeline('test-append(text="x, y") | test-append')
    assert [s.text for s in p.steps] == ["x, y", "!"]  # type: ignore[attr-defined]
    assert len(parse_pipeline("baseline")) == 0


def test_unknown_mitigation_and_bad_params_are_refused() -> None:
    with pytest.raises(ConfigError, match="unknown mitigation 'nope'"):
        parse_pipeline("nope(k=1)")
    with pytest.raises(ConfigError, match="expected k=v"):
        parse_pipeline("test-append(oops)")
    with pytest.raises(
        ConfigError, match=r"mitigation 'test-append' has no parameter 'wrong'; expected some of \['text'\]"
    ):
        from_spec({"name": "test-append", "params": {"wrong": 1}})
