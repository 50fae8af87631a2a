"""Anthropic Messages API backend.

``AnthropicLM("claude-3-5-haiku-latest")`` through the official ``anthropic`` SDK, with
the SDK's own retries off (``max_retries=0``): :class:`~mitigate.lm.retry.RetryingLM`
owns retries.

Request mapping
    System messages go to ``system=`` (several are joined with a blank line); the others
    go to ``messages``. ``max_tokens``, ``temperature`` (Anthropic accepts 0..1; a higher
    value raises :class:`~mitigate.errors.CapabilityError`) and ``stop`` ->
    ``stop_sequences``. Recent SDK releases no longer declare ``temperature`` on
    ``messages.create``; with those it is sent in the request body (``extra_body``), so a
    model that refuses it fails loudly with the server's HTTP 400 instead of silently
    sampling at another temperature.

    ``n > 1``: the Messages API has no ``n``, so ``n`` independent calls are made
    (concurrently) and their answers become the ``n`` choices. That is real sampling, at
    ``n`` times the price of one call, and usage is summed over the calls.

    Token logprobs are not offered by the API: asking for them raises
    :class:`~mitigate.errors.CapabilityError`. ``seed`` has no Anthropic counterpart and
    is not sent (a seed is a best-effort reproducibility hint on every provider).

Answer constraints
    A request whose ``constraint`` asks for mode "json" gets a tool-shaped answer: one tool
    whose ``input_schema`` is the answer's JSON schema, forced with ``tool_choice``; the
    tool call's input becomes the choice's text as JSON (the same object an OpenAI
    ``response_format`` answer holds). Mode "format" (free text in the template's own
    format) cannot be enforced by the Messages API and raises
    :class:`~mitigate.errors.CapabilityError`.

Usage and cost
    ``cache_read_input_tokens`` becomes ``Usage.cached_prompt_tokens``; ``prompt_tokens``
    counts all input tokens (uncached + cache reads + cache writes). Cost from
    :mod:`mitigate.lm.pricing` (cache writes are priced as ordinary input).

Keys and errors
    ``api_key=`` or ``$ANTHROPIC_API_KEY``; a missing key raises
    :class:`~mitigate.errors.MissingAPIKeyError` unless ``base_url`` points at a
    compatible server, in which case a placeholder is sent. 408/409/429/5xx (incl. 529
    "overloaded"), timeouts and connection errors raise
    :class:`~mitigate.errors.TransientLMError` with ``retry_after`` from the headers.
"""

from __future__ import annotations

import asyncio
import inspect
import json
import os
from typing import Any

import anthropic
from pydantic import SecretStr

from mitigate.errors import CapabilityError, MissingAPIKeyError, MitigateError
from mitigate.lm import pricing
from mitigate.lm.base import LM, Choice, LMRequest, LMResponse, Usage, validate_spec_part
from mitigate.lm.http import PLACEHOLDER_KEY, check_base_url, check_timeout, public_url, sdk_error

_FINISH = {"end_turn": "stop", "stop_sequence": "stop", "max_tokens": "length"}


def _sdk_takes_temperature() -> bool:
    """Whether the installed SDK's ``messages.create`` declares ``temperature`` (recent SDKs dropped it)."""
    from anthropic.resources.messages import AsyncMessages

    return "temperature" in inspect.signature(AsyncMessages.create).parameters


_SDK_TEMPERATURE = _sdk_takes_temperature()


def tool_answer_fields(request: LMRequest) -> dict[str, Any]:
    """The ``tools`` / ``tool_choice`` that make the model answer through the constraint's schema (empty without one)."""
    c = request.constraint
    if c is None:
        return {}
    tool = {"name": c.name, "description": f"Record the judge's answer: {c.describe}", "input_schema": c.json_schema}
    return {"tools": [tool], "tool_choice": {"type": "tool", "name": c.name}}


def answer_text(content: Any) -> str:
    """A message's text: its text blocks, or a forced tool call's input as JSON."""
    tools = [block for block in content if getattr(block, "type", "") == "tool_use"]
    if tools:
        return json.dumps(tools[-1].input, ensure_ascii=False)
    return "".join(getattr(block, "text", "") for block in content if getattr(block, "type", "") == "text")


class AnthropicLM(LM):
    """An Anthropic Claude model through the Messages API.

    Parameters:
        model: the model id (``claude-3-5-sonnet-latest``, ``claude-3-5-haiku-20241022``).
        api_key: the key; defaults to ``$<api_key_env>``.
        api_key_env: the environment variable holding the key (``ANTHROPIC_API_KEY``).
        base_url: a compatible endpoint (tests, proxies); defaults to the official API.
        timeout: seconds before one HTTP call times out (a retryable failure).
    """

    provider = "anthropic"
    supports_logprobs = False
    supports_n = True
    supports_stop = True

    def __init__(
        self,
        model: str,
        *,
        api_key: str | None = None,
        api_key_env: str = "ANTHROPIC_API_KEY",
        base_url: str | None = None,
        timeout: float = 120.0,
    ) -> None:
        self.model = validate_spec_part("Anthropic model name", model)
        self.base_url = check_base_url(base_url, backend=f"anthropic:{model}") if base_url else None
        self.api_key_env = api_key_env
        self.timeout = check_timeout(timeout, backend=f"anthropic:{model}")
        key = api_key or os.environ.get(api_key_env) or None
        if key is None:
            if self.base_url is None:
                raise MissingAPIKeyError(
                    f"anthropic:{model} needs an API key; expected the environment variable {api_key_env} "
                    "to be set (or api_key=... to be passed); it is not set.",
                    env_var=api_key_env,
                    backend=f"anthropic:{model}",
                )
            key = PLACEHOLDER_KEY
        self._api_key = SecretStr(key)
        self._client: anthropic.AsyncAnthropic | None = None
        self._client_loop: asyncio.AbstractEventLoop | None = None

    def identity(self) -> str:
        """``anthropic:<model>``, plus ``@<url>`` when a non-default endpoint is used."""
        if self.base_url is None:
            return self.spec
        return f"{self.spec}@{public_url(self.base_url)}"

    def __repr__(self) -> str:
        return f"AnthropicLM(model={self.model!r}, base_url={self.base_url!r})"

    def constraint_modes(self) -> frozenset[str]:
        """"json", as a forced tool call whose input schema is the answer's."""
        return frozenset({"json"})

    def check(self, request: LMRequest) -> None:
        """Reject logprobs (not offered) and temperatures above Anthropic's maximum of 1."""
        super().check(request)
        if request.temperature > 1.0:
            raise CapabilityError(
                f"{self.spec!r} accepts temperature between 0 and 1; got temperature={request.temperature}",
                backend=self.spec,
            )

    def _get_client(self) -> anthropic.AsyncAnthropic:
        """The SDK client for the running event loop."""
        loop = asyncio.get_running_loop()
        if self._client is None or self._client_loop is not loop:
            kwargs: dict[str, Any] = {
                "api_key": self._api_key.get_secret_value(),
                "max_retries": 0,
                "timeout": self.timeout,
            }
            if self.base_url is not None:
                kwargs["base_url"] = self.base_url
            self._client = anthropic.AsyncAnthropic(**kwargs)
            self._client_loop = loop
        return self._client

    def _params(self, request: LMRequest) -> dict[str, Any]:
        """The keyword arguments of ``messages.create`` for ``request``."""
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
        params.update(tool_answer_fields(request))
        return params

    async def _one(self, client: anthropic.AsyncAnthropic, params: dict[str, Any]) -> Any:
        try:
            return await client.messages.create(**params)
        except anthropic.AnthropicError as exc:
            raise self._translate(exc) from exc

    async def complete(self, request: LMRequest) -> LMResponse:
        """Run the request (``n`` concurrent calls when ``n > 1``)."""
        self.check(request)
        client = self._get_client()
        params = self._params(request)
        if request.n == 1:
            raws = [await self._one(client, params)]
        else:
            raws = list(await asyncio.gather(*(self._one(client, params) for _ in range(request.n))))
        choices = []
        usage = Usage()
        model = self.model
        for raw in raws:
            text = answer_text(raw.content)
            choices.append(Choice(text=text, finish_reason=_FINISH.get(raw.stop_reason or "", raw.stop_reason)))
            u = raw.usage
            cache_read = getattr(u, "cache_read_input_tokens", None) or 0
            cache_write = getattr(u, "cache_creation_input_tokens", None) or 0
            usage = usage + Usage(
                prompt_tokens=(u.input_tokens or 0) + cache_read + cache_write,
                completion_tokens=u.output_tokens or 0,
                cached_prompt_tokens=cache_read,
            )
            model = raw.model or model
        cost = pricing.cost(self.model, usage) if self.base_url is None else None
        return LMResponse(choices=tuple(choices), usage=usage, model=model, cost_usd=cost)

    def _translate(self, exc: anthropic.AnthropicError) -> MitigateError:
        """Map an SDK error to TransientLMError (retryable) or LMCallError, without the key."""
        key = self._api_key.get_secret_value()
        detail = str(exc).replace(key, "***") if key != PLACEHOLDER_KEY else str(exc)
        return sdk_error(
            exc, where=self.identity(), detail=detail, timeout=self.timeout, backend=self.spec,
            api_key_env=self.api_key_env, status_error=anthropic.APIStatusError,
            timeout_error=anthropic.APITimeoutError, connection_error=anthropic.APIConnectionError,
        )

    async def aclose(self) -> None:
        """Close the HTTP client."""
        if self._client is not None:
            client, self._client = self._client, None
            try:
                await client.close()
            except RuntimeError:
                pass
