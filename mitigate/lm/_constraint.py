"""What a judge's answer must look like, in the forms LM backends can enforce.

An :class:`AnswerConstraint` (``LMRequest.constraint``, built by :mod:`mitigate.prompt.answer`) holds one
answer in three notations, each backend taking the one it enforces: ``gbnf`` (a llama.cpp grammar of the
answer in the template's own format), ``regex`` (the same, for vLLM and SGLang) and ``json_schema`` (the
answer as a JSON object: OpenAI ``response_format``, Anthropic's forced tool call). ``mode`` is the shape
wanted back: ``"format"`` (grammar or regex) or ``"json"``. A backend that cannot enforce the mode raises
:class:`~mitigate.errors.CapabilityError` from ``LM.check``, never dropping the constraint. With reasoning
allowed, grammar and regex constrain the final answer line only.
"""

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
    """The ``tools`` / ``tool_choice`` that make a model answer through the constraint's schema (Anthropic's
    forced tool call; empty without a constraint)."""
    if c is None:
        return {}
    tool = {
        "name": c.name,
        "description": f"Record the judge's answer: {c.describe}",
        "input_schema": c.json_schema,
    }
    return {"tools": [tool], "tool_choice": {"type": "tool", "name": c.name}}
