"""How a prompt judge calls its LM (:class:`JudgeConfig`, :func:`answer_mode`) and the requests a judge
would send, listed without calling it (:class:`PlannedRequest`).
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from mitigate.errors import ConfigError
from mitigate.judge._judgment import Reducer
from mitigate.lm import LM, LMRequest


class JudgeConfig(BaseModel):
    """How a prompt judge calls its LM and turns answers into scores.

    - ``temperature``, ``n`` (samples), ``max_tokens``, ``stop``, ``seed``: passed to the LM.
    - ``reducer``: how ``n`` samples become one score (mean, median, majority).
    - ``scoring``: "parse" reads the score from the text; "expected" the probability-weighted score over
      the scale from the top-k token logprobs (G-Eval style; needs a backend with logprobs).
    - ``constrain``: whether the backend must enforce the answer format: "format" (the template's own, by
      grammar or regex), "json" (a JSON object with the answer), "answer" (the answer line alone, without
      reasoning: what a logprob-read answer needs), "auto" ("format" when the backend can enforce it, else
      none) or "off". The raw text is still parsed strictly, in the format the request asked for.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")
    temperature: float = 0.0
    n: int = 1
    max_tokens: int = 256
    stop: tuple[str, ...] = ()
    seed: int | None = None
    reducer: Reducer = "mean"
    scoring: Literal["parse", "expected"] = "parse"
    top_logprobs: int = 10
    constrain: Literal["auto", "format", "answer", "json", "off"] = "auto"

    @field_validator("n", "max_tokens")
    @classmethod
    def _positive(cls, v: int) -> int:
        if v < 1:
            raise ConfigError(f"expected an int >= 1; got {v}")
        return v

    @field_validator("temperature")
    @classmethod
    def _temp(cls, v: float) -> float:
        if not 0.0 <= v <= 2.0:
            raise ConfigError(f"expected a temperature between 0 and 2; got {v}")
        return v


class PlannedRequest(BaseModel):
    """One LM request a judge would send for an item, listed without calling the LM: where in the fan-out it
    comes from (``path``), how its answer is read (``reads``), the ``condition`` it is sent under, and the
    backend's one-line refusal (``refused``) when it cannot take it."""

    model_config = ConfigDict(frozen=True, extra="forbid")
    path: tuple[str, ...] = ()
    item_id: str
    swapped: bool = False
    backend: str
    request: LMRequest
    reads: str = "parse"
    condition: str | None = None
    refused: str | None = None
    backend_fields: dict[str, Any] = Field(default_factory=dict)

    @property
    def label(self) -> str:
        """The path joined with " / " ("judge" for a plain prompt judge)."""
        return " / ".join(self.path) or "judge"

    def under(
        self, name: str, *, condition: str | None = None, swapped: bool | None = None
    ) -> PlannedRequest:
        """This request placed under the fan-out child ``name`` (and its condition)."""
        conds = [c for c in (condition, self.condition) if c]
        update: dict[str, Any] = {"path": (name, *self.path), "condition": "; ".join(conds) or None}
        if swapped is not None:
            update["swapped"] = swapped != self.swapped
        return self.model_copy(update=update)


EMBEDDED_DEFAULT_SPEC = "local"
"""The spec of the embedded default model, whose answers default to a logprob read."""


def answer_mode(lm: LM, scoring: str = "auto", constrain: str = "auto") -> dict[str, str]:
    """``JudgeConfig`` fields for how ``lm``'s answers become scores; "auto" picks what measured best: the
    embedded default model's answer is read from its logprobs at the score position (see RESULTS.md), any
    other backend's parsed from its text. Explicit values are kept."""
    embedded = lm.spec == EMBEDDED_DEFAULT_SPEC
    if scoring == "auto":
        scoring = "expected" if embedded else "parse"
    if constrain == "auto" and scoring == "expected" and "format" in lm.constraint_modes():
        constrain = "answer"
    return {"scoring": scoring, "constrain": constrain}
