"""Anthropic Messages API backend.

``AnthropicLM("claude-3-5-haiku-latest")`` through the official ``anthropic`` SDK, with
the SDK's own retries off (``max_retries=0``): :class:`~mitigate.lm._retry.RetryingLM`
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

Prompt caching
    With ``prompt_cache="auto"`` (the default) requests mark their invariant prefix with a
    ``cache_control`` breakpoint: a :class:`~mitigate.lm._prompt_cache.PrefixPlanner` learns
    the prefix the judge's requests share (instructions, guideline, demos) and the backend
    splits the system text or the message there into text blocks, the first marked. Only
    prefixes at least as long as the model's minimum
    (:func:`~mitigate.lm._prompt_cache.anthropic_min_cache_tokens`,
    or ``cache_min_tokens=``) are marked; requests without such a prefix are sent as plain
    strings, as before. ``prompt_cache="off"`` sends no breakpoints.

Answer constraints
    A request whose ``constraint`` asks for mode "json" gets a tool-shaped answer: one tool
    whose ``input_schema`` is the answer's JSON schema, forced with ``tool_choice``; the
    tool call's input becomes the choice's text as JSON (the same object an OpenAI
    ``response_format`` answer holds). Mode "format" (free text in the template's own
    format) cannot be enforced by the Messages API and raises
    :class:`~mitigate.errors.CapabilityError`.

Usage and cost
    ``cache_read_input_tokens`` becomes ``Usage.cached_prompt_tokens`` and
    ``cache_creation_input_tokens`` ``Usage.cache_write_tokens``; ``prompt_tokens`` counts
    all input tokens (uncached + cache reads + cache writes). Cost from
    :mod:`mitigate.lm._pricing` at list prices, each kind of token at its own price.

Rate limits
    Calls go through an :class:`~mitigate.lm._ratelimit.AdaptiveLimiter` fed with the
    ``anthropic-ratelimit-*`` headers and 429s (``rate_limit=False`` turns it off; pass one
    limiter to several backends that share an account).

Keys, time and errors
    ``api_key=`` or ``$ANTHROPIC_API_KEY``; a missing key raises
    :class:`~mitigate.errors.MissingAPIKeyError` unless ``base_url`` points at a
    compatible server, in which case a placeholder is sent. ``timeout`` and
    ``limits.deadline`` mean what they mean for :mod:`mitigate.lm._openai` (the silence an
    attempt may wait through; the time on the server over all attempts). 408/409/429/5xx
    (incl. 529 "overloaded"), timeouts and connection errors raise
    :class:`~mitigate.errors.TransientLMError` with ``retry_after`` from the headers;
    redirects are not followed (an LMCallError naming both servers); an answer that is not
    a Messages API message names the field and the server. Everything returned or raised has
    the key taken out first (:mod:`mitigate.lm._scrub`).
"""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import json
import os
from collections.abc import Mapping, Sequence
from typing import Any, Literal

import anthropic
from pydantic import SecretStr, ValidationError

from mitigate.errors import CapabilityError, ConfigError, MissingAPIKeyError, MitigateError
from mitigate.lm import _pricing as pricing
from mitigate.lm._answer_fields import AnswerFields
from mitigate.lm._base import LM, Choice, LMRequest, LMResponse, Usage, validate_spec_part
from mitigate.lm._constraint import tool_answer_fields
from mitigate.lm._deadline import request_clock
from mitigate.lm._http import (
    Exchange,
    Limits,
    check_base_url,
    check_limits,
    check_request_size,
    check_timeout,
    counted,
    deadline_error,
    decode_json_object,
    http_error,
    is_client_failure,
    malformed,
    no_cookies,
    parse_retry_after,
    public_url,
    read_capped,
    sdk_error,
)
from mitigate.lm._prompt_cache import PrefixPlanner, anthropic_min_cache_tokens, split_at
from mitigate.lm._ratelimit import AdaptiveLimiter, estimate_tokens
from mitigate.lm._scrub import PLACEHOLDER_KEY, Scrubber

_FINISH = {"end_turn": "stop", "stop_sequence": "stop", "max_tokens": "length"}


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


class AnthropicLM(LM):
    """An Anthropic Claude model through the Messages API.

    Parameters:
        model: the model id (``claude-3-5-sonnet-latest``, ``claude-3-5-haiku-20241022``).
        api_key: the key; defaults to ``$<api_key_env>``.
        api_key_env: the environment variable holding the key (``ANTHROPIC_API_KEY``).
        base_url: a compatible endpoint (tests, proxies); defaults to the official API.
        timeout: seconds an attempt may go without anything from the server (a retryable failure); None: as
            long as ``limits.deadline`` allows.
        prompt_cache: ``"auto"`` marks the invariant prompt prefix for the provider's prompt
            cache, ``"off"`` does not (see the module docstring).
        cache_min_tokens: the shortest prefix worth marking (default: the model's published minimum).
        rate_limit: True for an :class:`~mitigate.lm._ratelimit.AdaptiveLimiter` of its own,
            a limiter to share, or False for none.
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
        timeout: float | None = None,
        prompt_cache: Literal["auto", "off"] = "auto",
        cache_min_tokens: int | None = None,
        rate_limit: bool | AdaptiveLimiter = True,
        limits: Limits | None = None,
    ) -> None:
        self.model = validate_spec_part("Anthropic model name", model)
        self.limits = check_limits(limits, backend=f"anthropic:{model}")
        if prompt_cache not in ("auto", "off"):
            raise ConfigError(f"expected prompt_cache to be 'auto' or 'off'; got {prompt_cache!r}")
        self.prompt_cache = prompt_cache
        self.planner = (
            PrefixPlanner(cache_min_tokens or anthropic_min_cache_tokens(model))
            if prompt_cache == "auto"
            else None
        )
        self.limiter = (
            rate_limit
            if isinstance(rate_limit, AdaptiveLimiter)
            else (AdaptiveLimiter() if rate_limit else None)
        )
        self.base_url = check_base_url(base_url, backend=f"anthropic:{model}") if base_url else None
        self.api_key_env = api_key_env
        self.timeout = None if timeout is None else check_timeout(timeout, backend=f"anthropic:{model}")
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
        self.scrubber = Scrubber((key,))
        """Takes the key out of everything this backend returns or raises."""
        self._client: anthropic.AsyncAnthropic | None = None
        self._client_loop: asyncio.AbstractEventLoop | None = None

    def identity(self) -> str:
        """``anthropic:<model>``, plus ``@<url>`` when a non-default endpoint is used."""
        if self.base_url is None:
            return self.spec
        return f"{self.spec}@{public_url(self.base_url)}"

    def __repr__(self) -> str:
        return f"AnthropicLM(model={self.model!r}, base_url={self.base_url!r})"

    @property
    def read_timeout(self) -> float:
        """Seconds an attempt may go without anything from the server (``timeout``, else the deadline)."""
        return self.timeout if self.timeout is not None else self.limits.deadline

    def constraint_modes(self) -> frozenset[str]:
        """ "json", as a forced tool call whose input schema is the answer's."""
        return frozenset({"json"})

    def constraint_fields(self, request: LMRequest) -> dict[str, Any]:
        """The forced tool call carrying the answer's schema."""
        return tool_answer_fields(request.constraint)

    def check(self, request: LMRequest) -> None:
        """Reject logprobs (not offered), temperatures above Anthropic's maximum of 1 and requests over the
        limits."""
        check_request_size(request, self.limits, backend=self.spec)
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
                "timeout": self.read_timeout,
                "http_client": anthropic.DefaultAsyncHttpxClient(
                    timeout=self.read_timeout, follow_redirects=False, cookies=no_cookies()
                ),
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
        params.update(tool_answer_fields(request.constraint))
        return params

    def sdk_client(self) -> anthropic.AsyncAnthropic:
        """The SDK client for the running event loop (the batch API uses it)."""
        return self._get_client()

    def message_params(self, request: LMRequest, *, learn: bool = True) -> dict[str, Any]:
        """The ``messages.create`` arguments for ``request``, with prompt-cache breakpoints marked."""
        return self.mark_cache(self._params(request), learn=learn)

    def message_body(self, request: LMRequest, *, learn: bool = True) -> dict[str, Any]:
        """The JSON body of ``POST /v1/messages`` for ``request`` (the ``params`` of a batch request)."""
        params = self.message_params(request, learn=learn)
        extra = params.pop("extra_body", None) or {}
        return {**params, **extra}

    def mark_cache(self, params: dict[str, Any], *, learn: bool = True) -> dict[str, Any]:
        """``params`` with ``cache_control`` breakpoints where the planner finds an invariant prefix.

        The marked text is split into text blocks (system blocks, or a message's content blocks),
        the block ending at each breakpoint carrying ``{"type": "ephemeral"}``. Unchanged when the
        planner is off or finds no qualifying prefix. ``learn=False`` plans without learning (a
        batch that has already shown the planner every request with :meth:`observe_cache`).
        """
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

    async def _one(
        self,
        client: anthropic.AsyncAnthropic,
        params: dict[str, Any],
        tokens: int,
        clock: Any,
        exchange: Exchange,
    ) -> Any:
        """One call within what is left of the request's deadline: the answer read up to the size cap and
        checked to be a Message (a typed LMCallError if not)."""
        limiter = self.limiter
        ticket = await limiter.acquire(tokens, where=self.identity()) if limiter is not None else None
        mine = Exchange()
        try:
            left = clock.begin(self.limits.deadline)
            try:
                async with asyncio.timeout(left):
                    data = await self._post(client, params, mine)
            finally:
                clock.end()
        finally:
            exchange.got += mine.got
            if limiter is not None and ticket is not None:
                limiter.release(
                    ticket,
                    status=mine.status,
                    headers=mine.headers,
                    retry_after=parse_retry_after(mine.headers) if mine.status == 429 else None,
                )
        return self.parse_message(
            decode_json_object(
                data, where=self.identity(), backend=self.spec, expected="a JSON Messages API message"
            )
        )

    async def _post(
        self, client: anthropic.AsyncAnthropic, params: dict[str, Any], exchange: Exchange
    ) -> bytes:
        """POST the message (redirects not followed); the body, read up to the size cap."""
        where = self.identity()
        try:
            manager = client.messages.with_streaming_response.create(**params)
            resp = await manager.__aenter__()
        except anthropic.APIStatusError as exc:
            exchange.status, exchange.headers = exc.status_code, exc.response.headers
            raise self._translate(exc) from exc
        except Exception as exc:
            if not (isinstance(exc, anthropic.AnthropicError) or is_client_failure(exc)):
                raise
            raise self._translate(exc) from exc
        try:
            exchange.status, exchange.headers = resp.status_code, resp.headers
            history = getattr(resp.http_response, "history", None)
            if history:
                raise http_error(
                    where,
                    history[0].status_code,
                    history[0].headers,
                    "",
                    api_key_env=self.api_key_env,
                    backend=self.spec,
                )
            return await read_capped(
                counted(resp.iter_bytes(), exchange),
                self.limits.max_response_bytes,
                where=where,
                backend=self.spec,
            )
        except MitigateError:
            raise
        except Exception as exc:  # the connection closed or timed out mid-body
            if not (isinstance(exc, anthropic.AnthropicError) or is_client_failure(exc)):
                raise
            raise self._translate(exc, phase="body") from exc
        finally:
            with contextlib.suppress(Exception):
                await manager.__aexit__(None, None, None)

    async def complete(self, request: LMRequest) -> LMResponse:
        """Run the request (``n`` concurrent calls when ``n > 1``)."""
        self.check(request)
        try:
            return self.scrubber.response(await self._complete(request))
        except MitigateError as exc:  # the boundary: no secret leaves in an error (nor in an answer, above)
            # the same error, scrubbed; its chain is kept unless it shows a key
            raise self.scrubber.error(exc)  # noqa: B904

    async def _complete(self, request: LMRequest) -> LMResponse:
        client = self._get_client()
        params = self.message_params(request)
        tokens = (
            estimate_tokens(request) // request.n
            if self.limiter is not None and self.limiter.tracks_tokens
            else 0
        )
        clock = request_clock()
        exchange = Exchange()
        try:
            if request.n == 1:
                raws = [await self._one(client, params, tokens, clock, exchange)]
            else:
                raws = list(
                    await asyncio.gather(
                        *(self._one(client, params, tokens, clock, exchange) for _ in range(request.n))
                    )
                )
        except TimeoutError:
            raise deadline_error(
                self.identity(),
                self.limits.deadline,
                backend=self.spec,
                got=exchange.got,
                attempts=clock.attempts,
            ) from None
        return self.response_from(raws)

    def parse_message(self, raw: Mapping[str, Any]) -> Any:
        """A Messages API JSON answer (a batch result's ``message``) as the SDK's ``Message``; a typed
        ``malformed`` LMCallError naming the field when it is not one (no ``content``, a ``usage`` that is no
        object, a negative token count ...)."""
        try:
            message = anthropic.types.Message.model_validate(dict(raw))
        except ValidationError as exc:
            errors = exc.errors()
            loc, err_type, said = (
                (errors[0]["loc"], errors[0]["type"], errors[0]["msg"]) if errors else ((), "", "")
            )
            field = _field_of(loc, raw) or "the message"
            kind = f"a message without {field}" if err_type == "missing" else f"a malformed {field}"
            said = said[:120]
            shown = self.scrubber.text(str(dict(raw)))[:160]
            raise self.scrubber.error(
                malformed(
                    self.identity(),
                    kind,
                    f"a Messages API message ({said}); got {shown!r}",
                    backend=self.spec,
                )
            ) from None
        fields = AnswerFields(self.identity(), self.spec)
        usage = message.usage
        try:
            for name in (
                "input_tokens",
                "output_tokens",
                "cache_read_input_tokens",
                "cache_creation_input_tokens",
            ):
                fields.count(getattr(usage, name, None), f"usage.{name}")
        except MitigateError as exc:
            raise self.scrubber.error(exc) from None
        return message

    def cost_of(self, usage: Usage, *, batch: bool = False) -> float | None:
        """The list-price cost of ``usage`` on this model (None for a non-default endpoint or an unknown
        model)."""
        return pricing.cost(self.model, usage, batch=batch) if self.base_url is None else None

    def response_from(self, raws: Sequence[Any], *, batch: bool = False) -> LMResponse:
        """One :class:`LMResponse` from the SDK ``Message`` of each sample (usage summed)."""
        choices = []
        usage = Usage()
        model = self.model
        for raw in raws:
            text = answer_text(raw.content)
            choices.append(
                Choice(text=text, finish_reason=_FINISH.get(raw.stop_reason or "", raw.stop_reason))
            )
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
        return self.scrubber.response(
            LMResponse(
                choices=tuple(choices), usage=usage, model=model, cost_usd=self.cost_of(usage, batch=batch)
            )
        )

    def _translate(self, exc: BaseException, phase: Literal["answer", "body"] = "answer") -> MitigateError:
        """Map an SDK error (or a client exception under it) to a typed error (scrubbed at the boundary,
        :meth:`complete`)."""
        return sdk_error(
            exc,
            where=self.identity(),
            detail=str(exc),
            timeout=self.read_timeout,
            backend=self.spec,
            api_key_env=self.api_key_env,
            status_error=anthropic.APIStatusError,
            timeout_error=anthropic.APITimeoutError,
            connection_error=anthropic.APIConnectionError,
            phase=phase,
        )

    async def aclose(self) -> None:
        """Close the HTTP client."""
        if self._client is not None:
            client, self._client = self._client, None
            try:
                await client.close()
            except RuntimeError:
                pass


def _field_of(loc: Sequence[Any], raw: Any) -> str:
    """The answer field a validation error's location points at, as ``usage.input_tokens`` or
    ``content.0.text`` (the type tags pydantic adds to a location, such as ``literal[...]`` or ``str``, left
    out)."""
    parts: list[str] = []
    here = raw
    for part in loc:
        if isinstance(part, str) and (not part.isidentifier() or part in _TYPE_TAGS):
            continue
        if isinstance(here, Mapping) and part in here:
            here = here[part]
        elif isinstance(here, list) and isinstance(part, int) and 0 <= part < len(here):
            here = here[part]
        else:
            here = None
        parts.append(str(part))
    return ".".join(parts)


_TYPE_TAGS = frozenset(
    {"str", "int", "float", "bool", "list", "dict", "none", "union", "literal", "tagged-union"}
)


def _segments(system: str | None, messages: Sequence[Mapping[str, Any]]) -> list[tuple[str, str]]:
    """A request as the planner's segments: the system text (when any), then each message's text."""
    head = [("system", system)] if system is not None else []
    return head + [(str(m["role"]), str(m["content"])) for m in messages]


def _blocks(text: str, offsets: Sequence[int]) -> list[dict[str, Any]]:
    """``text`` as text blocks cut at ``offsets``, each block ending at a cut marked for the prompt cache."""
    return [
        {"type": "text", "text": piece, **({"cache_control": {"type": "ephemeral"}} if cut else {})}
        for piece, cut in split_at(text, offsets)
    ]
