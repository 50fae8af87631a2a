"""Anthropic Messages API backend (what it shares with the other network backends is
:mod:`mitigate.lm._provider`'s).

The API has no ``n`` (``n > 1`` makes ``n`` concurrent calls, usage summed) and no logprobs; ``temperature``
above 1 is a :class:`~mitigate.errors.CapabilityError`. With ``prompt_cache="auto"`` the prefix a judge's
requests share is marked with a ``cache_control`` breakpoint (:mod:`mitigate.lm._prompt_cache`). Mode "json"
is one forced tool whose input becomes the answer text; mode "format" cannot be enforced.
"""

from __future__ import annotations

import asyncio
import inspect
import json
from collections.abc import Mapping, Sequence
from typing import Any, ClassVar, Literal

import anthropic
from pydantic import ValidationError

from mitigate.errors import CapabilityError, ConfigError, MitigateError
from mitigate.lm._base import Choice, LMRequest, LMResponse, Usage, tool_answer_fields, validate_spec_part
from mitigate.lm._http import Exchange, Limits, check_limits, decode_json_object, malformed
from mitigate.lm._prompt_cache import PrefixPlanner, anthropic_min_cache_tokens, split_at
from mitigate.lm._provider import AnswerFields, ProviderLM
from mitigate.lm._ratelimit import AdaptiveLimiter, estimate_tokens
from mitigate.lm._retry import RequestClock

_FINISH = {"end_turn": "stop", "stop_sequence": "stop", "max_tokens": "length"}
_USAGE_COUNTS = ("input_tokens", "output_tokens", "cache_read_input_tokens", "cache_creation_input_tokens")


def _sdk_takes_temperature() -> bool:
    """Whether the installed SDK's ``messages.create`` declares ``temperature`` (recent SDKs dropped it)."""
    from anthropic.resources.messages import AsyncMessages

    return "temperature" in inspect.signature(AsyncMessages.create).parameters


_SDK_TEMPERATURE = _sdk_takes_temperature()


def answer_text(content: Any) -> str:
    """A message's text: its text blocks, or a forced tool call's input as JSON."""
    tools = [block for block in content if getattr(block, "type", "") == "tool_use"]
    if tools:
        return json.dumps(tools[-1].input, ensure_ascii=False)
    return "".join(getattr(block, "text", "") for block in content if getattr(block, "type", "") == "text")


class AnthropicLM(ProviderLM):
    """An Anthropic Claude model through the Messages API: ``base_url`` a compatible endpoint (tests,
    proxies), ``prompt_cache`` ``"auto"`` to mark the invariant prompt prefix for the prompt cache (at least
    ``cache_min_tokens`` long, the model's published minimum by default) or ``"off"``, ``rate_limit`` as for
    :class:`~mitigate.lm.OpenAILM`."""

    provider = "anthropic"
    supports_logprobs = False
    supports_n = True
    supports_stop = True
    _sdk_base: ClassVar[str] = "AnthropicError"

    def __init__(
        self,
        model: str,
        *,
        api_key: str | None = None,
        api_key_env: str = "ANTHROPIC_API_KEY",
        base_url: str | None = None,
        timeout: float | None = None,
        prompt_cache: Literal["auto", "off"] = "auto",
        cache_min_tokens: int | None = None,
        rate_limit: bool | AdaptiveLimiter = True,
        limits: Limits | None = None,
    ) -> None:
        self.model = validate_spec_part("Anthropic model name", model)
        self.limits = check_limits(limits, backend=self.spec)
        if prompt_cache not in ("auto", "off"):
            raise ConfigError(f"expected prompt_cache to be 'auto' or 'off'; got {prompt_cache!r}")
        self.prompt_cache = prompt_cache
        self.planner = (
            PrefixPlanner(cache_min_tokens or anthropic_min_cache_tokens(model))
            if prompt_cache == "auto"
            else None
        )
        self._connect(base_url, api_key, api_key_env, timeout, rate_limit)

    def __repr__(self) -> str:
        return f"AnthropicLM(model={self.model!r}, base_url={self.base_url!r})"

    def constraint_modes(self) -> frozenset[str]:
        """ "json", as a forced tool call whose input schema is the answer's."""
        return frozenset({"json"})

    def constraint_fields(self, request: LMRequest) -> dict[str, Any]:
        return tool_answer_fields(request.constraint)

    def check(self, request: LMRequest) -> None:
        """The base checks, and temperatures above Anthropic's maximum of 1 refused."""
        super().check(request)
        if request.temperature > 1.0:
            raise CapabilityError(
                f"{self.spec!r} accepts temperature between 0 and 1; got temperature={request.temperature}",
                backend=self.spec,
            )

    def _sdk(self) -> Any:
        return anthropic

    def _make_client(self) -> anthropic.AsyncAnthropic:
        kwargs, client_kwargs = self.client_options()
        return anthropic.AsyncAnthropic(
            **kwargs, http_client=anthropic.DefaultAsyncHttpxClient(**client_kwargs)
        )

    def _params(self, request: LMRequest) -> dict[str, Any]:
        system = "\n\n".join(m.content for m in request.messages if m.role == "system")
        messages = [{"role": m.role, "content": m.content} for m in request.messages if m.role != "system"]
        if not messages:
            raise CapabilityError(
                f"{self.spec!r} needs at least one user message; the request had only system messages",
                backend=self.spec,
            )
        params: dict[str, Any] = {"model": self.model, "messages": messages, "max_tokens": request.max_tokens}
        if _SDK_TEMPERATURE:
            params["temperature"] = request.temperature
        else:
            params["extra_body"] = {"temperature": request.temperature}
        if system:
            params["system"] = system
        if request.stop:
            params["stop_sequences"] = list(request.stop)
        params.update(tool_answer_fields(request.constraint))
        return params

    def message_params(self, request: LMRequest, *, learn: bool = True) -> dict[str, Any]:
        """The ``messages.create`` arguments for ``request``, with prompt-cache breakpoints marked."""
        return self.mark_cache(self._params(request), learn=learn)

    def message_body(self, request: LMRequest, *, learn: bool = True) -> dict[str, Any]:
        """The JSON body of ``POST /v1/messages`` for ``request`` (the ``params`` of a batch request)."""
        params = self.message_params(request, learn=learn)
        extra = params.pop("extra_body", None) or {}
        return {**params, **extra}

    def mark_cache(self, params: dict[str, Any], *, learn: bool = True) -> dict[str, Any]:
        """``params`` split into text blocks at the planner's breakpoints, each marked ``cache_control``;
        ``learn=False`` plans without learning (a batch shows the planner every request first)."""
        if self.planner is None:
            return params
        system = params.get("system")
        messages = params["messages"]
        if (system is not None and not isinstance(system, str)) or any(
            not isinstance(m.get("content"), str) for m in messages
        ):
            return params  # already in block form: leave the caller's own breakpoints alone
        segments = _segments(system, messages)
        points = self.planner.plan(segments, learn=learn)
        if not points:
            return params
        cuts: dict[int, list[int]] = {}
        for index, offset in points:
            cuts.setdefault(index, []).append(offset)
        out = dict(params)
        first_message = 0 if system is None else 1
        if system is not None and 0 in cuts:
            out["system"] = _blocks(system, cuts[0])
        out["messages"] = [
            {**m, "content": _blocks(m["content"], cuts[k + first_message])}
            if k + first_message in cuts
            else m
            for k, m in enumerate(messages)
        ]
        return out

    def observe_cache(self, request: LMRequest) -> None:
        """Show the planner a request without sending it (a batch's first pass)."""
        if self.planner is None:
            return
        params = self._params(request)
        self.planner.observe(_segments(params.get("system"), params["messages"]))

    async def _complete(self, request: LMRequest, clock: RequestClock, exchange: Exchange) -> LMResponse:
        client = self.sdk_client()
        params = self.message_params(request)
        limiter = self.limiter
        tokens = estimate_tokens(request) // request.n if limiter is not None and limiter.tracks_tokens else 0

        async def post(mine: Exchange) -> bytes:
            manager = client.messages.with_streaming_response.create(**params)
            return await self._sdk_body(
                manager.__aenter__,
                mine,
                lambda r: r.iter_bytes(),
                lambda r: manager.__aexit__(None, None, None),
            )

        async def one() -> Any:
            data = await self._exchange(tokens, clock, exchange, post)
            expected = "a JSON Messages API message"
            return self.parse_message(
                decode_json_object(
                    data, where=self.identity(), backend=self.spec, expected=expected, scrubber=self.scrubber
                )
            )

        if request.n == 1:
            return self.response_from([await one()])
        return self.response_from(await asyncio.gather(*(one() for _ in range(request.n))))

    def parse_message(self, raw: Mapping[str, Any]) -> Any:
        """A Messages API JSON answer as the SDK's ``Message``; a malformed field is a typed LMCallError."""
        try:
            message = anthropic.types.Message.model_validate(dict(raw))
        except ValidationError as exc:
            errors = exc.errors()
            loc, err_type, said = (
                (errors[0]["loc"], errors[0]["type"], errors[0]["msg"]) if errors else ((), "", "")
            )
            field = _field_of(loc) or "the message"
            kind = f"a message without {field}" if err_type == "missing" else f"a malformed {field}"
            got = self.scrubber.clip(str(dict(raw)), 160)
            detail = f"a Messages API message ({self.scrubber.clip(said, 120)}); got {got!r}"
            raise self.scrubber.error(malformed(self.identity(), kind, detail, backend=self.spec)) from None
        fields = AnswerFields(self.identity(), self.spec, self.scrubber)
        usage = message.usage
        try:
            for name in _USAGE_COUNTS:
                fields.count(getattr(usage, name, None), f"usage.{name}")
        except MitigateError as exc:
            raise self.scrubber.error(exc) from None
        return message

    def response_from(self, raws: Sequence[Any], *, batch: bool = False) -> LMResponse:
        """One :class:`LMResponse` from the SDK ``Message`` of each sample (usage summed)."""
        choices = []
        usage = Usage()
        model = self.model
        for raw in raws:
            finish = _FINISH.get(raw.stop_reason or "", raw.stop_reason)
            choices.append(Choice(text=answer_text(raw.content), finish_reason=finish))
            u = raw.usage
            cache_read = getattr(u, "cache_read_input_tokens", None) or 0
            cache_write = getattr(u, "cache_creation_input_tokens", None) or 0
            usage = usage + Usage(
                prompt_tokens=(u.input_tokens or 0) + cache_read + cache_write,
                completion_tokens=u.output_tokens or 0,
                cached_prompt_tokens=cache_read,
                cache_write_tokens=cache_write,
            )
            model = raw.model or model
        cost = self.cost_of(usage, batch=batch)
        return self.scrubber.response(
            LMResponse(choices=tuple(choices), usage=usage, model=model, cost_usd=cost)
        )


def _field_of(loc: Sequence[Any]) -> str:
    """The answer field a validation error points at (``usage.input_tokens``)."""
    tags = [part for part in loc if isinstance(part, str) and (not part.isidentifier() or part in _TYPE_TAGS)]
    return ".".join(str(part) for part in loc if part not in tags)


_TYPE_TAGS = frozenset(
    {"str", "int", "float", "bool", "list", "dict", "none", "union", "literal", "tagged-union"}
)


def _segments(system: str | None, messages: Sequence[Mapping[str, Any]]) -> list[tuple[str, str]]:
    head = [("system", system)] if system is not None else []
    return head + [(str(m["role"]), str(m["content"])) for m in messages]


def _blocks(text: str, offsets: Sequence[int]) -> list[dict[str, Any]]:
    return [
        {"type": "text", "text": piece, **({"cache_control": {"type": "ephemeral"}} if cut else {})}
        for piece, cut in split_at(text, offsets)
    ]
