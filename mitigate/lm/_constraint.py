"""What a judge's answer must look like, in the forms LM backends can enforce.

An :class:`AnswerConstraint` travels on :class:`~mitigate.lm._base.LMRequest` (``constraint``).
It is built by the prompt's answer format (:mod:`mitigate.prompt.answer`) and holds the same
answer in three notations, so each backend takes the one it can enforce:

- ``gbnf``: a llama.cpp grammar of the whole answer in the template's own format (the
  embedded backend, llama.cpp server's ``grammar`` field);
- ``regex``: the same answer as a regular expression (vLLM's ``structured_outputs.regex`` or
  legacy ``guided_regex``, SGLang's ``regex``);
- ``json_schema``: the answer as a JSON object (OpenAI ``response_format`` json_schema, the
  same field on compatible servers, Anthropic's forced tool call).

``mode`` says which shape the caller wants back: ``"format"`` (the template's own format:
grammar or regex) or ``"json"`` (a JSON object following ``json_schema``). A backend that
cannot enforce the requested mode raises :class:`~mitigate.errors.CapabilityError` from
``LM.check``; it never drops the constraint silently. With reasoning allowed, the grammar
and regex leave the text before the final answer line free and constrain that line only.
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
