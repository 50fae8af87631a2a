"""The one LM interface every backend implements, and the values that cross it.

A backend turns an :class:`LMRequest` into an :class:`LMResponse`. Requests and responses
are frozen pydantic values so they can be hashed for the cache, written to the journal,
and compared in tests. A backend that cannot honour part of a request (token logprobs,
n > 1, stop sequences) raises :class:`~mitigate.errors.CapabilityError`; it never
silently drops the option or switches to another scoring mode.
"""

from __future__ import annotations

import hashlib
import json
from abc import ABC, abstractmethod
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from mitigate.errors import CapabilityError, ConfigError
from mitigate.lm._constraint import AnswerConstraint

Role = Literal["system", "user", "assistant"]


class Message(BaseModel):
    """One chat message."""

    model_config = ConfigDict(frozen=True, extra="forbid")
    role: Role
    content: str


class LMRequest(BaseModel):
    """Everything a backend needs for one call.

    ``logprobs`` asks for the log-probability of each generated token; ``top_logprobs``
    (k > 0) also asks for the k most likely alternatives at each position. ``constraint``
    asks the backend to enforce the answer's shape (see :mod:`mitigate.lm._constraint`).
    """

    model_config = ConfigDict(frozen=True, extra="forbid")
    messages: tuple[Message, ...]
    temperature: float = 0.0
    n: int = 1
    max_tokens: int = 256
    stop: tuple[str, ...] = ()
    logprobs: bool = False
    top_logprobs: int = 0
    seed: int | None = None
    constraint: AnswerConstraint | None = None

    @field_validator("messages")
    @classmethod
    def _non_empty(cls, v: tuple[Message, ...]) -> tuple[Message, ...]:
        if not v:
            raise ValueError("an LMRequest needs at least one message; got none")
        return v

    @field_validator("n", "max_tokens")
    @classmethod
    def _positive(cls, v: int) -> int:
        if v < 1:
            raise ValueError(f"must be an int >= 1; got {v}")
        return v

    @field_validator("top_logprobs")
    @classmethod
    def _top_k(cls, v: int) -> int:
        if v < 0 or v > 20:
            raise ValueError(f"top_logprobs must be between 0 and 20; got {v}")
        return v

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
    """Token counts for one call.

    ``prompt_tokens`` counts every prompt token. Of those, ``cached_prompt_tokens`` were read
    from a prefix cache (the provider's prompt cache, or the embedded model's reused KV
    prefix) and ``cache_write_tokens`` were written to the provider's prompt cache
    (Anthropic reports and charges writes; OpenAI's automatic cache writes for free and
    reports none). Every count is >= 0 (a backend refuses a server's negative count as malformed).
    """

    model_config = ConfigDict(frozen=True, extra="forbid")
    prompt_tokens: int = Field(default=0, ge=0)
    completion_tokens: int = Field(default=0, ge=0)
    cached_prompt_tokens: int = Field(default=0, ge=0)
    cache_write_tokens: int = Field(default=0, ge=0)

    def __add__(self, other: Usage) -> Usage:
        return Usage(
            prompt_tokens=self.prompt_tokens + other.prompt_tokens,
            completion_tokens=self.completion_tokens + other.completion_tokens,
            cached_prompt_tokens=self.cached_prompt_tokens + other.cached_prompt_tokens,
            cache_write_tokens=self.cache_write_tokens + other.cache_write_tokens,
        )


class LMResponse(BaseModel):
    """A backend's answer: one :class:`Choice` per requested sample, plus usage and cost.

    ``cost_usd`` is None when the price of the model is unknown (never a made-up 0).
    ``cached`` is True when the response came from mitigate's on-disk cache.
    """

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
    """Base class of every backend.

    ``provider`` and ``model`` identify the backend in cache keys and reports; ``spec``
    is the string that :func:`mitigate.lm.get` turns back into an equivalent backend.
    Secrets (API keys) are never part of ``spec``, ``provider``, ``model`` or ``identity()``.
    """

    provider: str = "base"
    model: str = ""
    supports_logprobs: bool = False
    supports_n: bool = False
    supports_stop: bool = True

    @property
    def spec(self) -> str:
        """The spec string that rebuilds this backend."""
        return f"{self.provider}:{self.model}" if self.model else self.provider

    def identity(self) -> str:
        """What distinguishes this backend's answers, for cache keys. Never contains secrets."""
        return self.spec

    def constraint_modes(self) -> frozenset[str]:
        """The answer-constraint modes this backend can enforce ("format", "json"); none by default."""
        return frozenset()

    def constraint_fields(self, request: LMRequest) -> dict[str, Any]:
        """The answer constraint of ``request`` as this backend sends it (request fields by name; empty
        without one).

        The default names the notation for the mode: ``grammar`` (GBNF) and ``regex`` for
        "format" (a backend takes one of them), ``json_schema`` for "json". Backends override
        it with the exact fields they send.
        """
        c = request.constraint
        if c is None:
            return {}
        if c.mode == "json":
            return {"json_schema": c.json_schema}
        return {"grammar": c.gbnf, "regex": c.regex}

    def check(self, request: LMRequest) -> None:
        """Raise :class:`CapabilityError` when ``request`` asks for what this backend cannot do."""
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
        """Run one request. Raises TransientLMError for retryable failures, LMCallError otherwise."""

    async def loglikelihood(self, context: str, continuation: str) -> float:
        """Sum of log P(continuation tokens | context) under the model.

        Backends that cannot compute it raise :class:`CapabilityError`.
        """
        raise CapabilityError(
            f"backend {self.spec!r} cannot score the likelihood of a given text; use a backend with "
            "prompt logprobs such as 'local' or 'local:<path.gguf>'",
            backend=self.spec,
        )

    async def aclose(self) -> None:  # noqa: B027 - optional hook
        """Release network clients or model memory. Optional."""


def openai_style_options(request: LMRequest) -> dict[str, Any]:
    """The optional sampling fields of an OpenAI-style chat request (n, stop, seed, logprobs), set only when
    used.

    Shared by the OpenAI body and the DSPy/LiteLLM call, which take the same names.
    """
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
    """Reject empty spec components, and any with a line break or other control character
    (it would be sent to the server, written into cache keys and journals, and split log lines)."""
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
