"""Any DSPy / LiteLLM model as a mitigate backend (spec ``dspy:<model id>``, whatever ``dspy.LM`` accepts:
``openai/gpt-4o-mini``, ``ollama_chat/llama3.1`` with ``api_base=...``).

Calls go through ``dspy.LM(...).acall(messages=[...])`` with ``cache=False`` (mitigate's cache is the one
cache), ``num_retries=0`` (:class:`~mitigate.lm._retry.RetryingLM` owns retries) and the request's
sampling options; fewer outputs than ``n``, or no logprobs when asked for, is a
:class:`~mitigate.errors.CapabilityError`. Keys (``api_key=`` or the provider's variable) are never part
of ``repr``, ``spec`` or ``identity()``, and are taken out of every answer and error (the given key and
every ``*_API_KEY`` variable of 8 characters or more). ``timeout`` is LiteLLM's (None: the deadline);
``limits.deadline`` bounds the time on the server over all attempts. Usage and cost come from the call's
DSPy history entry (cost as LiteLLM computed it, else :mod:`mitigate.lm._pricing`, else None). DSPy 3.4's
deprecation of ``messages=`` dictionaries is silenced.
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
from mitigate.lm import _pricing as pricing
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
from mitigate.lm._http import (
    Limits,
    check_base_url,
    check_limits,
    check_request_size,
    check_timeout,
    deadline_error,
    is_retryable_status,
    malformed,
    parse_retry_after,
    public_url,
    server_identity,
)
from mitigate.lm._provider import AnswerFields
from mitigate.lm._retry import request_clock
from mitigate.lm._scrub import Scrubber

ENV_KEY_MIN_CHARS = 8
"""A ``*_API_KEY`` variable's value is treated as a secret from this length on."""


def _silence_messages_deprecation() -> None:
    """Ignore DSPy 3.4's deprecation of ``messages=`` (re-applied per call: test runners reset filters)."""
    warnings.filterwarnings(
        "ignore", message=r"Passing OpenAI-style message dictionaries", category=DeprecationWarning
    )


_TRANSIENT_NAMES = frozenset(
    {
        "RateLimitError",
        "Timeout",
        "APITimeoutError",
        "APIConnectionError",
        "ServiceUnavailableError",
        "InternalServerError",
        "LMRateLimitError",
        "LMTimeoutError",
        "LMServerError",
        "LMTransportError",
        "LMLockTimeoutError",
    }
)


def _get(obj: Any, name: str, default: Any = None) -> Any:
    """``obj[name]`` for mappings, ``obj.name`` otherwise."""
    if isinstance(obj, Mapping):
        return obj.get(name, default)
    return getattr(obj, name, default)


def _token_logprobs(raw: Any) -> tuple[TokenLogprob, ...] | None:
    """Normalise an OpenAI-shaped ``logprobs`` value (dict or SDK object) to TokenLogprob tuples."""
    if raw is None:
        return None
    content = _get(raw, "content")
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
    seen: BaseException | None = exc
    for _ in range(5):
        if seen is None:
            return None
        value = getattr(seen, "retry_after", None)
        if isinstance(value, int | float):
            return float(value)
        response = getattr(seen, "response", None)
        headers = getattr(response, "headers", None)
        if headers is not None:
            parsed = parse_retry_after(headers)
            if parsed is not None:
                return parsed
        seen = seen.__cause__ or seen.__context__
    return None


class DSPyLM(LM):
    """A model reached through ``dspy.LM`` (a LiteLLM model id); ``api_base`` (or ``base_url``, the name the
    other backends use) a server URL, ``limits`` the request bounds (the body size is LiteLLM's to read),
    ``lm_kwargs`` further ``dspy.LM`` arguments."""

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
        self.limits = check_limits(limits, backend=f"dspy:{model}")
        if base_url and api_base and base_url.rstrip("/") != api_base.rstrip("/"):
            raise ConfigError(
                f"DSPyLM takes one server URL; got api_base={public_url(api_base)!r} and "
                f"base_url={public_url(base_url)!r} (expected one of them, or both equal)"
            )
        api_base = api_base or base_url
        self.api_base = check_base_url(api_base, backend=f"dspy:{model}") if api_base else None
        kwargs: dict[str, Any] = {**lm_kwargs, "cache": False, "num_retries": 0}
        self.timeout = None if timeout is None else check_timeout(timeout, backend=f"dspy:{model}")
        kwargs["timeout"] = self.timeout if self.timeout is not None else self.limits.deadline
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

    def identity(self) -> str:
        """``dspy:<model>``, plus ``@<api_base>`` when a server URL is set (credentials stripped)."""
        return server_identity(self.spec, self.api_base)

    def __repr__(self) -> str:
        return f"DSPyLM(model={self.model!r}, api_base={self.api_base!r})"

    async def complete(self, request: LMRequest) -> LMResponse:
        """Run ``request`` through ``dspy.LM`` (see the module docstring)."""
        self.check(request)
        check_request_size(request, self.limits, backend=self.spec)
        lm = self._lm.copy()  # its own history, so usage is read from this call's entry
        messages = [{"role": m.role, "content": m.content} for m in request.messages]
        kwargs = {"temperature": request.temperature, "max_tokens": request.max_tokens}
        kwargs.update(openai_style_options(request))
        _silence_messages_deprecation()
        clock = request_clock()
        try:
            try:
                left = clock.begin(self.limits.deadline)
                try:
                    async with asyncio.timeout(left):
                        if self._async:
                            outputs = await lm.acall(messages=messages, **kwargs)
                        else:
                            outputs = await asyncio.to_thread(lambda: lm(messages=messages, **kwargs))
                finally:
                    clock.end()
            except TimeoutError:
                raise deadline_error(
                    self.identity(), self.limits.deadline, backend=self.spec, attempts=clock.attempts
                ) from None
            except (MitigateError, TypeError, AttributeError):
                raise
            except Exception as exc:
                raise self._translate(exc) from exc
            return self.scrubber.response(self._response(request, list(outputs or []), lm))
        except MitigateError as exc:  # the boundary: no secret leaves in an error (nor in an answer, above)
            # the same error, scrubbed; its chain is kept unless it shows a key
            raise self.scrubber.error(exc)  # noqa: B904

    def _response(self, request: LMRequest, outputs: list[Any], lm: Any) -> LMResponse:
        if not outputs:
            raise malformed(self.identity(), "no choices", "at least one output", backend=self.spec)
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
                raise malformed(self.identity(), "content: null", "each output's text", backend=self.spec)
            choices.append(Choice(text=text, logprobs=logprobs))
        entry = lm.history[-1] if getattr(lm, "history", None) else {}
        fields = AnswerFields(self.identity(), self.spec)
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
        if cost is None and self.api_base is None:
            cost = pricing.cost(self.model, usage)
        elif cost is not None and (
            isinstance(cost, bool) or not isinstance(cost, int | float) or not 0 <= cost < 1e9
        ):
            raise fields.error("cost", "a number of dollars >= 0", cost)
        model = fields.optional_text(entry.get("response_model"), "model") or self.model
        return LMResponse(
            choices=tuple(choices), usage=usage, model=model, cost_usd=None if cost is None else float(cost)
        )

    def _translate(self, exc: Exception) -> MitigateError:
        """Map DSPy/LiteLLM errors to TransientLMError (retryable) or LMCallError, without the key."""
        detail = self.scrubber.text(str(exc))
        status = getattr(exc, "status", None) or getattr(exc, "status_code", None)
        status = status if isinstance(status, int) else None
        names = {cls.__name__ for cls in type(exc).__mro__}
        transient = bool(names & _TRANSIENT_NAMES) or (status is not None and is_retryable_status(status))
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
