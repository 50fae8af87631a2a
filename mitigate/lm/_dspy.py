"""Any DSPy / LiteLLM model as a mitigate backend (spec ``dspy:<model id>``, whatever ``dspy.LM`` accepts).

DSPy's cache and retries are off (mitigate's own are the ones). The given key and every ``*_API_KEY`` variable
of 8 characters or more are taken out of every answer and error. Usage and cost come from the call's DSPy
history entry (cost as LiteLLM computed it, else list prices, else None).
"""

from __future__ import annotations

import asyncio
import inspect
import os
import warnings
from collections.abc import Mapping
from typing import Any

import dspy

from mitigate.errors import CapabilityError, ConfigError, LMCallError, MitigateError, TransientLMError
from mitigate.lm import _http as http
from mitigate.lm._base import (
    LM,
    Choice,
    LMRequest,
    LMResponse,
    TokenLogprob,
    Usage,
    openai_style_options,
    validate_spec_part,
)
from mitigate.lm._http import Exchange, Limits
from mitigate.lm._provider import AnswerFields, ProviderLM
from mitigate.lm._retry import RequestClock
from mitigate.lm._scrub import Scrubber, chain

ENV_KEY_MIN_CHARS = 8
"""A ``*_API_KEY`` variable's value is treated as a secret from this length on."""


_TRANSIENT_NAMES = frozenset(
    "RateLimitError Timeout APITimeoutError APIConnectionError ServiceUnavailableError InternalServerError "
    "LMRateLimitError LMTimeoutError LMServerError LMTransportError LMLockTimeoutError".split()
)


def _get(obj: Any, name: str, default: Any = None) -> Any:
    return obj.get(name, default) if isinstance(obj, Mapping) else getattr(obj, name, default)


def _token_logprobs(raw: Any) -> tuple[TokenLogprob, ...] | None:
    """Normalise an OpenAI-shaped ``logprobs`` value (dict or SDK object) to TokenLogprob tuples."""
    content = _get(raw, "content")  # None for no logprobs at all
    if content is None:
        return None
    return tuple(
        TokenLogprob(
            token=str(_get(t, "token")),
            logprob=float(_get(t, "logprob")),
            top=tuple(
                (str(_get(a, "token")), float(_get(a, "logprob"))) for a in (_get(t, "top_logprobs") or [])
            ),
        )
        for t in content
    )


def _retry_after(exc: BaseException) -> float | None:
    """A Retry-After hint from the error or its causes (DSPy's ``retry_after`` or response headers)."""
    for seen in chain(exc, 5):
        value = getattr(seen, "retry_after", None)
        if isinstance(value, int | float):
            return float(value)
        parsed = http.parse_retry_after(getattr(getattr(seen, "response", None), "headers", None))
        if parsed is not None:
            return parsed
    return None


class DSPyLM(ProviderLM):
    """A model reached through ``dspy.LM``: ``api_base`` (or ``base_url``) a server URL, ``lm_kwargs`` further
    ``dspy.LM`` arguments."""

    provider = "dspy"
    supports_logprobs = True
    supports_n = True
    supports_stop = True

    def __init__(
        self,
        model: str,
        *,
        api_base: str | None = None,
        api_key: str | None = None,
        base_url: str | None = None,
        timeout: float | None = None,
        limits: Limits | None = None,
        **lm_kwargs: Any,
    ) -> None:
        self.model = validate_spec_part("DSPy/LiteLLM model id", model)
        self.limits = http.check_limits(limits, backend=self.spec)
        if base_url and api_base and base_url.rstrip("/") != api_base.rstrip("/"):
            raise ConfigError(
                f"DSPyLM takes one server URL; got api_base={http.public_url(api_base)!r} and "
                f"base_url={http.public_url(base_url)!r} (expected one of them, or both equal)"
            )
        api_base = api_base or base_url
        self.api_base = self.base_url = http.check_base_url(api_base, backend=self.spec) if api_base else None
        self.timeout = None if timeout is None else http.check_timeout(timeout, backend=self.spec)
        self.limiter = None
        kwargs: dict[str, Any] = {**lm_kwargs, "cache": False, "num_retries": 0, "timeout": self.read_timeout}
        if self.api_base is not None:
            kwargs["api_base"] = self.api_base
        if api_key is not None:
            kwargs["api_key"] = api_key
        keys = [
            v for k, v in os.environ.items() if k.upper().endswith("API_KEY") and len(v) >= ENV_KEY_MIN_CHARS
        ]
        self.scrubber = Scrubber((api_key, *keys))
        """Takes the keys out of everything this backend returns or raises."""
        self._lm = dspy.LM(model, **kwargs)
        self._async = hasattr(self._lm, "acall") and inspect.iscoroutinefunction(self._lm.acall)

    def __repr__(self) -> str:
        return f"DSPyLM(model={self.model!r}, api_base={self.api_base!r})"

    def check(self, request: LMRequest) -> None:
        """The base checks, then the request's size."""
        LM.check(self, request)
        http.check_request_size(request, self.limits, backend=self.spec)

    async def _complete(self, request: LMRequest, clock: RequestClock, exchange: Exchange) -> LMResponse:
        lm = self._lm.copy()  # its own history, so usage is read from this call's entry
        messages = [{"role": m.role, "content": m.content} for m in request.messages]
        kwargs = {"temperature": request.temperature, "max_tokens": request.max_tokens}
        kwargs.update(openai_style_options(request))
        # DSPy 3.4 deprecates messages= dictionaries (re-applied per call: test runners reset the filters)
        warnings.filterwarnings(
            "ignore", message=r"Passing OpenAI-style message dictionaries", category=DeprecationWarning
        )

        async def call(_: Exchange) -> Any:
            try:
                if self._async:
                    return await lm.acall(messages=messages, **kwargs)
                return await asyncio.to_thread(lambda: lm(messages=messages, **kwargs))
            except (MitigateError, TypeError, AttributeError, TimeoutError):
                raise
            except Exception as exc:
                raise self._translate(exc) from exc

        outputs = await self._exchange(0, clock, exchange, call)
        return self._response(request, list(outputs or []), lm)

    def _response(self, request: LMRequest, outputs: list[Any], lm: Any) -> LMResponse:
        if not outputs:
            raise http.malformed(self.identity(), "no choices", "at least one output", backend=self.spec)
        if len(outputs) != request.n:
            raise CapabilityError(
                f"{self.identity()} was asked for n={request.n} samples and returned {len(outputs)}; "
                "expected exactly n outputs",
                backend=self.spec,
            )
        choices = []
        for out in outputs:
            text = out if isinstance(out, str) else _get(out, "text")
            logprobs = None
            if request.wants_logprobs():
                logprobs = None if isinstance(out, str) else _token_logprobs(_get(out, "logprobs"))
                if logprobs is None:
                    raise CapabilityError(
                        f"{self.identity()} returned no token logprobs although the request asked for them; "
                        "this provider/model (through LiteLLM) does not provide logprobs",
                        backend=self.spec,
                    )
            if not isinstance(text, str):
                raise http.malformed(
                    self.identity(), "content: null", "each output's text", backend=self.spec
                )
            choices.append(Choice(text=text, logprobs=logprobs))
        entry = lm.history[-1] if getattr(lm, "history", None) else {}
        fields = AnswerFields(self.identity(), self.spec, self.scrubber)
        raw_usage = entry.get("usage") or {}
        details = _get(raw_usage, "prompt_tokens_details") or {}
        # LiteLLM reports OpenAI's cached_tokens, and Anthropic's cache reads and writes as well
        usage = Usage(
            prompt_tokens=fields.count(_get(raw_usage, "prompt_tokens"), "usage.prompt_tokens"),
            completion_tokens=fields.count(_get(raw_usage, "completion_tokens"), "usage.completion_tokens"),
            cached_prompt_tokens=fields.count(
                _get(details, "cached_tokens") or _get(raw_usage, "cache_read_input_tokens"),
                "usage.cached_tokens",
            ),
            cache_write_tokens=fields.count(
                _get(details, "cache_creation_tokens") or _get(raw_usage, "cache_creation_input_tokens"),
                "usage.cache_creation_tokens",
            ),
        )
        cost = entry.get("cost")
        if cost is None:
            cost = self.cost_of(usage)
        elif isinstance(cost, bool) or not isinstance(cost, int | float) or not 0 <= cost < 1e9:
            raise fields.error("cost", "a number of dollars >= 0", cost)
        model = fields.optional_text(entry.get("response_model"), "model") or self.model
        return LMResponse(
            choices=tuple(choices), usage=usage, model=model, cost_usd=None if cost is None else float(cost)
        )

    def _translate(self, exc: Exception) -> MitigateError:
        detail = self.scrubber.text(str(exc))
        status = getattr(exc, "status", None) or getattr(exc, "status_code", None)
        status = status if isinstance(status, int) else None
        names = {cls.__name__ for cls in type(exc).__mro__}
        transient = bool(names & _TRANSIENT_NAMES) or (
            status is not None and http.is_retryable_status(status)
        )
        where = self.identity()
        if transient:
            return TransientLMError(
                f"{where} failed (retryable{f', HTTP {status}' if status else ''}): {detail}",
                status=status,
                retry_after=_retry_after(exc),
                backend=self.spec,
                reason="connection" if names & {"APIConnectionError", "LMTransportError"} else None,
            )
        return LMCallError(
            f"{where} failed{f' with HTTP {status}' if status else ''}: {type(exc).__name__}: {detail}",
            status=status,
            backend=self.spec,
        )
