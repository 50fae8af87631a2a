"""The stub server answers a request that forces a function call with that tool call (what autoevals-style
classifiers send; ``benchmarks/bench_peers.py`` relies on it), and a plain request as before."""

from __future__ import annotations

import json
import urllib.request
from typing import Any

from mitigate.testing import StubOpenAIServer

TOOL = {
    "type": "function",
    "function": {
        "name": "select_choice",
        "parameters": {"type": "object", "properties": {"choice": {"type": "string", "enum": ["A", "B"]}}},
    },
}


def _post(server: StubOpenAIServer, body: dict[str, Any]) -> dict[str, Any]:
    req = urllib.request.Request(
        f"{server.base_url}/chat/completions",
        data=json.dumps(body).encode(),
        headers={"Content-Type": "application/json"},
    )
    with urllib.request.urlopen(req, timeout=10) as resp:
        return json.loads(resp.read())


def _args_from_schema(body: dict[str, Any]) -> str:
    enum = body["tools"][0]["function"]["parameters"]["properties"]["choice"]["enum"]
    return json.dumps({"choice": enum[-1]})


def test_a_forced_function_is_answered_with_that_tool_call_whose_arguments_are_the_reply():
    with StubOpenAIServer(latency=0.0, reply=_args_from_schema) as server:
        body = {
            "model": "m",
            "messages": [{"role": "user", "content": "pick"}],
            "tools": [TOOL],
            "tool_choice": {"type": "function", "function": {"name": "select_choice"}},
        }
        choice = _post(server, body)["choices"][0]
    assert choice["finish_reason"] == "tool_calls"
    assert choice["message"]["content"] is None
    call = choice["message"]["tool_calls"][0]
    assert call["function"]["name"] == "select_choice"
    assert json.loads(call["function"]["arguments"]) == {"choice": "B"}


def test_required_with_one_tool_forces_it_and_auto_does_not():
    with StubOpenAIServer(latency=0.0, reply="Score: 4") as server:
        base = {"model": "m", "messages": [{"role": "user", "content": "rate"}], "tools": [TOOL]}
        required = _post(server, {**base, "tool_choice": "required"})["choices"][0]["message"]
        auto = _post(server, {**base, "tool_choice": "auto"})["choices"][0]["message"]
    assert required["tool_calls"][0]["function"] == {"name": "select_choice", "arguments": "Score: 4"}
    assert auto == {"role": "assistant", "content": "Score: 4"}
