"""OpenAI chat-completions backend, also for any OpenAI-compatible server.

``OpenAILM("gpt-4o-mini")`` talks to api.openai.com; ``OpenAILM("my-model",
base_url="http://localhost:8000/v1")`` talks to an OpenAI-compatible server (vLLM,
llama.cpp server, Ollama, ...). Built on the official ``openai`` SDK with its own retries
switched off (``max_retries=0``): :class:`~mitigate.lm.limits.RetryingLM` owns retries.

API keys
    ``api_key=`` wins, else the environment variable named by ``api_key_env``
    (``OPENAI_API_KEY``). Without a key the official API raises
    :class:`~mitigate.errors.MissingAPIKeyError` naming the variable. With a ``base_url``
    a missing key is not an error: local servers usually need none, so the placeholder
    ``"sk-no-key-required"`` is sent instead. The key is kept as a ``SecretStr``; it is
    never part of ``repr``, ``spec``, ``identity()`` or any error text.

Request mapping
    temperature, n, max tokens (``max_completion_tokens`` on the official API,
    ``max_tokens`` on compatible servers, which mostly know only that name), stop,
    seed, ``logprobs`` / ``top_logprobs``. With a ``base_url`` the request also carries
    ``cache_prompt: true`` (llama.cpp server's prompt-prefix reuse; other servers ignore
    unknown fields). A server that returns fewer choices than ``n`` or no logprobs when
    they were asked for raises :class:`~mitigate.errors.CapabilityError` rather than
    returning less than was requested.

Usage and cost
    ``usage.prompt_tokens_details.cached_tokens`` becomes ``Usage.cached_prompt_tokens``.
    Cost comes from :mod:`mitigate.lm.pricing` on the official API; a ``base_url`` server's
    price is unknown, so its ``cost_usd`` is None.

Errors
    HTTP 408/409/429/5xx, timeouts and connection errors raise
    :class:`~mitigate.errors.TransientLMError` (``status``, and ``retry_after`` from the
    ``Retry-After`` header when sent); other HTTP errors raise
    :class:`~mitigate.errors.LMCallError`.
"""

from __future__ import annotations

import asyncio
import os
from typing import Any

import openai
from pydantic import SecretStr

from mitigate.errors import CapabilityError, LMCallError, MissingAPIKeyError, MitigateError, TransientLMError
from mitigate.lm import pricing
from mitigate.lm.base import LM, Choice, LMRequest, LMResponse, TokenLogprob, Usage, validate_spec_part
from mitigate.lm.limits import PLACEHOLDER_KEY, is_retryable_status, parse_retry_after, public_url


class OpenAILM(LM):
    """An OpenAI (or OpenAI-compatible server) chat model.

    Parameters:
        model: the model name sent to the server (``gpt-4o-mini``, ``Qwen/Qwen2.5-7B-Instruct``).
        base_url: an OpenAI-compatible server's base URL (``http://host:port/v1``); defaults
            to ``$OPENAI_BASE_URL`` when set, else the official API.
        api_key: the key; defaults to ``$<api_key_env>`` (see the module docstring for
            servers that need none).
        api_key_env: the environment variable holding the key.
        timeout: seconds before one HTTP call times out (a retryable failure).
        http_client: an ``httpx.AsyncClient`` (or the SDK's ``DefaultAioHttpClient()``)
            to use instead of the SDK's default; useful to tune connection limits.
    """

    provider = "openai"
    supports_logprobs = True
    supports_n = True
    supports_stop = True

    def __init__(
        self,
        model: str,
        *,
        base_url: str | None = None,
        api_key: str | None = None,
        api_key_env: str = "OPENAI_API_KEY",
        timeout: float = 120.0,
        http_client: Any | None = None,
    ) -> None:
        self.model = validate_spec_part("OpenAI model name", model)
        resolved_url = base_url or os.environ.get("OPENAI_BASE_URL") or None
        self.base_url = resolved_url.rstrip("/") if resolved_url else None
        self.api_key_env = api_key_env
        self.timeout = timeout
        key = api_key or os.environ.get(api_key_env) or None
        if key is None:
            if self.base_url is None:
                raise MissingAPIKeyError(
                    f"openai:{model} needs an API key; expected the environment variable {api_key_env} "
                    "to be set (or api_key=... to be passed); it is not set. For a local OpenAI-compatible "
                    "server pass base_url=... instead.",
                    env_var=api_key_env,
                    backend=f"openai:{model}",
                )
            key = PLACEHOLDER_KEY
        self._api_key = SecretStr(key)
        self._http_client = http_client
        self._client: openai.AsyncOpenAI | None = None
        self._client_loop: asyncio.AbstractEventLoop | None = None

    def identity(self) -> str:
        """``openai:<model>``, plus ``@<server url>`` for a base_url server (credentials stripped)."""
        if self.base_url is None:
            return self.spec
        return f"{self.spec}@{public_url(self.base_url)}"

    def __repr__(self) -> str:
        return f"OpenAILM(model={self.model!r}, base_url={self.base_url!r})"

    def _get_client(self) -> openai.AsyncOpenAI:
        """The SDK client for the running event loop (a client is bound to the loop that made it)."""
        loop = asyncio.get_running_loop()
        if self._client is None or self._client_loop is not loop:
            kwargs: dict[str, Any] = {
                "api_key": self._api_key.get_secret_value(),
                "max_retries": 0,
                "timeout": self.timeout,
            }
            if self.base_url is not None:
                kwargs["base_url"] = self.base_url
            if self._http_client is not None:
                kwargs["http_client"] = self._http_client
            self._client = openai.AsyncOpenAI(**kwargs)
            self._client_loop = loop
        return self._client

    def _params(self, request: LMRequest) -> dict[str, Any]:
        """The keyword arguments of ``chat.completions.create`` for ``request``."""
        params: dict[str, Any] = {
            "model": self.model,
            "messages": [{"role": m.role, "content": m.content} for m in request.messages],
            "temperature": request.temperature,
        }
        if self.base_url is None:
            params["max_completion_tokens"] = request.max_tokens
        else:
            params["max_tokens"] = request.max_tokens
            params["extra_body"] = {"cache_prompt": True}
        if request.n > 1:
            params["n"] = request.n
        if request.stop:
            params["stop"] = list(request.stop)
        if request.seed is not None:
            params["seed"] = request.seed
        if request.wants_logprobs():
            params["logprobs"] = True
            if request.top_logprobs > 0:
                params["top_logprobs"] = request.top_logprobs
        return params

    async def complete(self, request: LMRequest) -> LMResponse:
        """Run one chat completion. See the module docstring for the mapping and errors."""
        self.check(request)
        client = self._get_client()
        try:
            raw = await client.chat.completions.create(**self._params(request))
        except openai.OpenAIError as exc:
            raise self._translate(exc) from exc
        return self._response(request, raw)

    def _response(self, request: LMRequest, raw: Any) -> LMResponse:
        """Turn the SDK's ChatCompletion into an :class:`LMResponse`."""
        raw_choices = sorted(raw.choices or [], key=lambda c: c.index)
        if len(raw_choices) != request.n:
            raise CapabilityError(
                f"{self.identity()} was asked for n={request.n} samples and returned {len(raw_choices)} "
                "choices; this server does not honour n. Expected exactly n choices; request n=1 samples "
                "separately (with different seeds) instead.",
                backend=self.spec,
            )
        choices = []
        for rc in raw_choices:
            logprobs = None
            if request.wants_logprobs():
                content = getattr(rc.logprobs, "content", None) if rc.logprobs is not None else None
                if content is None:
                    raise CapabilityError(
                        f"{self.identity()} returned no token logprobs although the request asked for them "
                        f"(logprobs={request.logprobs}, top_logprobs={request.top_logprobs}); expected "
                        "choices[].logprobs.content. This server or model does not provide logprobs.",
                        backend=self.spec,
                    )
                logprobs = tuple(
                    TokenLogprob(
                        token=t.token,
                        logprob=float(t.logprob),
                        top=tuple((a.token, float(a.logprob)) for a in (t.top_logprobs or [])),
                    )
                    for t in content
                )
            text = rc.message.content if rc.message is not None and rc.message.content is not None else ""
            choices.append(Choice(text=text, logprobs=logprobs, finish_reason=rc.finish_reason))
        usage = Usage()
        if raw.usage is not None:
            details = getattr(raw.usage, "prompt_tokens_details", None)
            usage = Usage(
                prompt_tokens=raw.usage.prompt_tokens or 0,
                completion_tokens=raw.usage.completion_tokens or 0,
                cached_prompt_tokens=(getattr(details, "cached_tokens", None) or 0) if details else 0,
            )
        cost = pricing.cost(self.model, usage) if self.base_url is None else None
        return LMResponse(choices=tuple(choices), usage=usage, model=raw.model or self.model, cost_usd=cost)

    def _scrub(self, text: str) -> str:
        """``text`` with the API key removed, should a server have echoed it."""
        key = self._api_key.get_secret_value()
        return text.replace(key, "***") if key and key != PLACEHOLDER_KEY else text

    def _translate(self, exc: openai.OpenAIError) -> MitigateError:
        """Map an SDK error to TransientLMError (retryable) or LMCallError."""
        where = self.identity()
        detail = self._scrub(str(exc))
        if isinstance(exc, openai.APIStatusError):
            status = exc.status_code
            if is_retryable_status(status):
                return TransientLMError(
                    f"{where} failed with HTTP {status} (retryable): {detail}",
                    status=status,
                    retry_after=parse_retry_after(exc.response.headers),
                    backend=self.spec,
                )
            hint = f"; check the key in ${self.api_key_env}" if status in (401, 403) else ""
            return LMCallError(
                f"{where} failed with HTTP {status}{hint}: {detail}", status=status, backend=self.spec
            )
        if isinstance(exc, openai.APITimeoutError):
            return TransientLMError(
                f"{where} timed out after {self.timeout:g} s (retryable)", backend=self.spec
            )
        if isinstance(exc, openai.APIConnectionError):
            return TransientLMError(f"{where} connection failed (retryable): {detail}", backend=self.spec)
        return LMCallError(f"{where} failed: {type(exc).__name__}: {detail}", backend=self.spec)

    async def aclose(self) -> None:
        """Close the HTTP client."""
        if self._client is not None:
            client, self._client = self._client, None
            try:
                await client.close()
            except RuntimeError:
                pass
