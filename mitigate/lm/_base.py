"""The one LM interface every backend implements, the frozen values that cross it, and the base of wrappers.

A backend that cannot honour part of a request raises :class:`~mitigate.errors.CapabilityError`; it never
silently drops it.
"""

from __future__ import annotations

import hashlib
import json
from abc import ABC, abstractmethod
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from mitigate.errors import CapabilityError, ConfigError

ConstraintMode = Literal["format", "json"]


class AnswerConstraint(BaseModel):
    """What a judge's answer must look like, in the notations backends enforce: a llama.cpp grammar
    (``gbnf``), a ``regex`` (vLLM, SGLang) and a ``json_schema`` (OpenAI, Anthropic's forced tool call);
    ``mode`` is the shape wanted back. A backend that cannot enforce it refuses it, never dropping it."""

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


Role = Literal["system", "user", "assistant"]


class Message(BaseModel):
    """One chat message."""

    model_config = ConfigDict(frozen=True, extra="forbid")
    role: Role
    content: str


class LMRequest(BaseModel):
    """Everything a backend needs for one call (``top_logprobs``: the k likeliest tokens at each step too)."""

    model_config = ConfigDict(frozen=True, extra="forbid")
    messages: tuple[Message, ...] = Field(min_length=1)
    temperature: float = 0.0
    n: int = Field(default=1, ge=1)
    max_tokens: int = Field(default=256, ge=1)
    stop: tuple[str, ...] = ()
    logprobs: bool = False
    top_logprobs: int = Field(default=0, ge=0, le=20)
    seed: int | None = None
    constraint: AnswerConstraint | None = None

    def wants_logprobs(self) -> bool:
        """True when the caller asked for token logprobs or top-k alternatives."""
        return self.logprobs or self.top_logprobs > 0

    def key(self) -> str:
        """A stable digest of the request's content (used, with backend and model, as cache key)."""
        blob = json.dumps(self.model_dump(mode="json"), sort_keys=True, ensure_ascii=False)
        return hashlib.sha256(blob.encode("utf-8")).hexdigest()


class TokenLogprob(BaseModel):
    """One generated token, its logprob, and the top alternatives at that position."""

    model_config = ConfigDict(frozen=True, extra="forbid")
    token: str
    logprob: float
    top: tuple[tuple[str, float], ...] = ()


class Choice(BaseModel):
    """One sampled completion."""

    model_config = ConfigDict(frozen=True, extra="forbid")
    text: str
    logprobs: tuple[TokenLogprob, ...] | None = None
    finish_reason: str | None = None


class Usage(BaseModel):
    """Token counts for one call (of the prompt's, those read from and written to a prefix cache)."""

    model_config = ConfigDict(frozen=True, extra="forbid")
    prompt_tokens: int = Field(default=0, ge=0)
    completion_tokens: int = Field(default=0, ge=0)
    cached_prompt_tokens: int = Field(default=0, ge=0)
    cache_write_tokens: int = Field(default=0, ge=0)

    def __add__(self, other: Usage) -> Usage:
        return Usage(**{name: getattr(self, name) + getattr(other, name) for name in Usage.model_fields})


class LMResponse(BaseModel):
    """A backend's answer: a :class:`Choice` per sample, usage and cost (None: unknown, never a made-up 0)."""

    model_config = ConfigDict(frozen=True, extra="forbid")
    choices: tuple[Choice, ...]
    usage: Usage = Field(default_factory=Usage)
    model: str = ""
    cost_usd: float | None = None
    cached: bool = False

    @property
    def text(self) -> str:
        """The first choice's text."""
        return self.choices[0].text


class LM(ABC):
    """Base class of every backend; no secret is part of its ``spec``, ``model`` or ``identity()``."""

    provider: str = "base"
    model: str = ""
    supports_logprobs: bool = False
    supports_n: bool = False
    supports_stop: bool = True

    @property
    def spec(self) -> str:
        return f"{self.provider}:{self.model}" if self.model else self.provider

    def identity(self) -> str:
        """What distinguishes this backend's answers, for cache keys."""
        return self.spec

    def constraint_modes(self) -> frozenset[str]:
        """The answer-constraint modes this backend can enforce ("format", "json"); none by default."""
        return frozenset()

    def constraint_fields(self, request: LMRequest) -> dict[str, Any]:
        """The request fields this backend sends ``request``'s answer constraint in."""
        c = request.constraint
        if c is None:
            return {}
        return {"json_schema": c.json_schema} if c.mode == "json" else {"grammar": c.gbnf, "regex": c.regex}

    def check(self, request: LMRequest) -> None:
        """CapabilityError when ``request`` asks for what this backend cannot do."""
        if request.constraint is not None and request.constraint.mode not in self.constraint_modes():
            modes = sorted(self.constraint_modes())
            raise CapabilityError(
                f"backend {self.spec!r} cannot enforce a {request.constraint.summary()}; it can enforce "
                f"{modes or 'no answer constraint'}. Expected a request without that constraint "
                "(JudgeConfig(constrain='off' or 'auto')) or a backend that can.",
                backend=self.spec,
            )
        if request.wants_logprobs() and not self.supports_logprobs:
            raise CapabilityError(
                f"backend {self.spec!r} cannot return token logprobs; expected a request without "
                f"logprobs/top_logprobs, got logprobs={request.logprobs}, "
                f"top_logprobs={request.top_logprobs}",
                backend=self.spec,
            )
        if request.stop and not self.supports_stop:
            raise CapabilityError(
                f"backend {self.spec!r} does not support stop sequences; got stop={list(request.stop)}",
                backend=self.spec,
            )

    @abstractmethod
    async def complete(self, request: LMRequest) -> LMResponse:
        """Run one request; TransientLMError for a retryable failure, LMCallError otherwise."""

    def scores_text(self) -> bool:
        """True when :meth:`loglikelihood` can score a given text (the backend overrides it): a probe that
        calls nothing, for refusing a run that needs it before any LM call."""
        return type(self).loglikelihood is not LM.loglikelihood

    async def loglikelihood(self, context: str, continuation: str) -> float:
        """Sum of log P(continuation tokens | context); CapabilityError for a backend that cannot."""
        raise CapabilityError(
            f"backend {self.spec!r} cannot score the likelihood of a given text; use a backend with "
            "prompt logprobs such as 'local' or 'local:<path.gguf>'",
            backend=self.spec,
        )

    async def aclose(self) -> None:  # noqa: B027 - optional hook
        """Release network clients or model memory. Optional."""


def openai_style_options(request: LMRequest) -> dict[str, Any]:
    """The sampling fields (n, stop, seed, logprobs) of an OpenAI-style request, set when used."""
    options: dict[str, Any] = {}
    if request.n > 1:
        options["n"] = request.n
    if request.stop:
        options["stop"] = list(request.stop)
    if request.seed is not None:
        options["seed"] = request.seed
    if request.wants_logprobs():
        options["logprobs"] = True
        if request.top_logprobs > 0:
            options["top_logprobs"] = request.top_logprobs
    return options


def validate_spec_part(name: str, value: str) -> str:
    """``value``; ConfigError when it is empty, padded, or holds a control character."""
    if not isinstance(value, str):
        raise ConfigError(f"expected the {name} as a str; got {type(value).__name__}")
    if not value:
        raise ConfigError(f"expected a non-empty {name}; got an empty string")
    bad = next((ch for ch in value if ord(ch) < 32 or ord(ch) == 127), None)
    if bad is not None:
        raise ConfigError(
            f"expected a {name} without line breaks or control characters; got {value!r} (contains {bad!r})"
        )
    if value != value.strip():
        raise ConfigError(f"expected a {name} without leading or trailing spaces; got {value!r}")
    return value


class WrapperLM(LM):
    """An LM that delegates everything to ``inner``; subclasses override what they change."""

    def __init__(self, inner: LM) -> None:
        if not isinstance(inner, LM):
            raise ConfigError(f"expected an LM to wrap; got {type(inner).__name__}")
        self.inner = inner
        self.provider = inner.provider
        self.model = inner.model
        self.supports_logprobs = inner.supports_logprobs
        self.supports_n = inner.supports_n
        self.supports_stop = inner.supports_stop

    @property
    def spec(self) -> str:
        return self.inner.spec

    def identity(self) -> str:
        return self.inner.identity()

    def constraint_modes(self) -> frozenset[str]:
        return self.inner.constraint_modes()

    def constraint_fields(self, request: LMRequest) -> dict[str, Any]:
        return self.inner.constraint_fields(request)

    def check(self, request: LMRequest) -> None:
        self.inner.check(request)

    async def complete(self, request: LMRequest) -> LMResponse:
        return await self.inner.complete(request)

    def scores_text(self) -> bool:
        return self.inner.scores_text()

    async def loglikelihood(self, context: str, continuation: str) -> float:
        return await self.inner.loglikelihood(context, continuation)

    async def aclose(self) -> None:
        await self.inner.aclose()

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.inner!r})"


def innermost(lm: LM) -> LM:
    """The backend at the bottom of a stack of wrappers (cache, retry, ...)."""
    seen = 0
    while isinstance(lm, WrapperLM) and seen < 32:
        lm = lm.inner
        seen += 1
    return lm
