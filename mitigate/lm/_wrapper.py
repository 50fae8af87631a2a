"""The base class of LM wrappers (retry, cache, budget, replay recording): delegate everything to an inner
LM."""

from __future__ import annotations

from typing import Any

from mitigate.errors import ConfigError
from mitigate.lm._base import LM, LMRequest, LMResponse


class WrapperLM(LM):
    """An LM that delegates to ``inner``; subclasses override what they change.

    Capabilities, ``provider``, ``model``, ``spec`` and ``identity()`` are the inner LM's,
    so a wrapped backend is interchangeable with the bare one (and shares its cache keys).
    """

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
        """The inner backend's spec."""
        return self.inner.spec

    def identity(self) -> str:
        """The inner backend's identity (wrappers do not change what the model answers)."""
        return self.inner.identity()

    def constraint_modes(self) -> frozenset[str]:
        """The inner backend's answer-constraint modes."""
        return self.inner.constraint_modes()

    def constraint_fields(self, request: LMRequest) -> dict[str, Any]:
        """The inner backend's constraint fields."""
        return self.inner.constraint_fields(request)

    def check(self, request: LMRequest) -> None:
        """Delegate the capability check to the inner backend."""
        self.inner.check(request)

    async def complete(self, request: LMRequest) -> LMResponse:
        """Delegate to the inner backend."""
        return await self.inner.complete(request)

    async def loglikelihood(self, context: str, continuation: str) -> float:
        """Delegate to the inner backend."""
        return await self.inner.loglikelihood(context, continuation)

    async def aclose(self) -> None:
        """Close the inner backend."""
        await self.inner.aclose()

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.inner!r})"
