"""What a judge's answer must look like, in the forms LM backends can enforce: one answer as a llama.cpp
grammar (``gbnf``), a ``regex`` (vLLM, SGLang) and a ``json_schema`` (OpenAI, Anthropic's forced tool call); a
backend that cannot enforce a constraint's ``mode`` refuses it, never dropping it."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

ConstraintMode = Literal["format", "json"]


class AnswerConstraint(BaseModel):
    """One answer shape in the notations backends understand (see the module docstring)."""

    model_config = ConfigDict(frozen=True, extra="forbid")
    mode: ConstraintMode = "format"
    gbnf: str
    regex: str
    json_schema: dict[str, Any] = Field(default_factory=dict)
    name: str = "answer"
    describe: str = ""

    def summary(self) -> str:
        """A short text naming the mode and the expected answer, for errors and logs."""
        what = self.describe or self.name
        return f"{self.mode} constraint ({what})"


def tool_answer_fields(c: AnswerConstraint | None) -> dict[str, Any]:
    """The ``tools`` / ``tool_choice`` that force an answer through the constraint's schema."""
    if c is None:
        return {}
    tool = {
        "name": c.name,
        "description": f"Record the judge's answer: {c.describe}",
        "input_schema": c.json_schema,
    }
    return {"tools": [tool], "tool_choice": {"type": "tool", "name": c.name}}
