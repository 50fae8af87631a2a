"""A backend as its declared facts, with no client: the requests a judge would send, rendered and checked,
never sent.

Commands that make no LM call (``mitigate prompts render``, ``--dry-run``) still need a few
facts about the backend: whether it returns token logprobs (``--scoring auto`` and expected
scores), takes ``n`` samples and stop sequences, which answer constraints it enforces and in
which request fields, and what it refuses (Anthropic's temperature above 1, a prompt over
``--max-prompt-chars``). Building the backend itself for that would need its SDK, its API key
or its model file. Each backend kind of the registry (:mod:`mitigate.lm._registry`) therefore
declares these facts as a :class:`BackendFacts`, and :func:`mitigate.lm._registry.declare`
turns a spec into a :class:`DeclaredLM`: an :class:`~mitigate.lm._base.LM` that answers every
question about requests as the real backend would and raises
:class:`~mitigate.errors.CapabilityError` when asked to complete one.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from mitigate.errors import CapabilityError
from mitigate.lm._base import LM, LMRequest, LMResponse


def _no_modes(model: str, options: Mapping[str, Any]) -> frozenset[str]:
    return frozenset()


@dataclass(frozen=True)
class BackendFacts:
    """What a backend kind declares about the requests it takes, known without building its client.

    ``modes(model, options)`` gives the answer-constraint modes ("format", "json") the backend
    enforces for that model and those constructor options (an OpenAI-compatible server's
    ``guided=``, say); ``fields(request, options)`` the request fields a constraint is sent in
    (None: the notation :meth:`LM.constraint_fields` names by default). ``max_temperature``
    is the highest temperature the provider accepts.
    """

    supports_logprobs: bool
    supports_n: bool
    supports_stop: bool = True
    max_temperature: float = 2.0
    modes: Callable[[str, Mapping[str, Any]], frozenset[str]] = _no_modes
    fields: Callable[[LMRequest, Mapping[str, Any]], dict[str, Any]] | None = None
    identity: Callable[[str, Mapping[str, Any]], str] | None = None
    """``identity(spec, options)``: the backend's identity (a server URL beside the spec); None: the spec."""
    options: tuple[str, ...] = field(default=())
    """The constructor options the facts read (the others are ignored here: keys, timeouts, clients)."""


class DeclaredLM(LM):
    """A backend named by its spec and described by its :class:`BackendFacts`: it checks and renders requests
    exactly as the backend would, and never sends one.

    ``limits`` (a :class:`~mitigate.lm._http.Limits`) applies the request-size checks of a
    network backend (``--max-prompt-chars``, ``--max-samples``).
    """

    def __init__(
        self,
        provider: str,
        model: str,
        facts: BackendFacts,
        options: Mapping[str, Any] | None = None,
        *,
        limits: Any | None = None,
    ) -> None:
        self.provider = provider
        self.model = model
        self.facts = facts
        self.options = {k: v for k, v in (options or {}).items() if k in facts.options}
        self.limits = limits
        self.supports_logprobs = facts.supports_logprobs
        self.supports_n = facts.supports_n
        self.supports_stop = facts.supports_stop

    def __repr__(self) -> str:
        return f"DeclaredLM({self.spec!r})"

    def identity(self) -> str:
        """What the built backend's ``identity()`` would be (the spec, and a server URL where it has one)."""
        return self.facts.identity(self.spec, self.options) if self.facts.identity is not None else self.spec

    def constraint_modes(self) -> frozenset[str]:
        """The modes the backend enforces for this model and these options."""
        return self.facts.modes(self.model, self.options)

    def constraint_fields(self, request: LMRequest) -> dict[str, Any]:
        """The fields the backend would send the request's constraint in."""
        if self.facts.fields is None:
            return super().constraint_fields(request)
        return self.facts.fields(request, self.options)

    def check(self, request: LMRequest) -> None:
        """The backend's refusals: an unsupported constraint, logprobs, stop or temperature, an oversized
        request."""
        if self.limits is not None:
            from mitigate.lm._http import check_request_size

            check_request_size(request, self.limits, backend=self.spec)
        super().check(request)
        if request.temperature > self.facts.max_temperature:
            raise CapabilityError(
                f"{self.spec!r} accepts temperature between 0 and {self.facts.max_temperature:g}; got "
                f"temperature={request.temperature}",
                backend=self.spec,
            )

    async def complete(self, request: LMRequest) -> LMResponse:
        """Never sends: a declared backend only renders and checks requests."""
        raise CapabilityError(
            f"backend {self.spec!r} was declared for rendering requests only (no client was built); expected "
            "a backend from mitigate.lm.get() to send a request",
            backend=self.spec,
        )
