"""What the network backends share: their base, secrets taken out of what a server sent, and the typed reading
of an answer's fields.

:class:`ProviderLM` (OpenAI, Anthropic, DSPy) holds the server, request :class:`~mitigate.lm._http.Limits`,
``timeout`` (the silence an attempt may wait through; None: the deadline), rate limiter, and for the SDK
providers the key (missing: :class:`~mitigate.errors.MissingAPIKeyError`, unless a ``base_url`` server is
named) and a client per event loop; it runs one exchange within what is left of the request's deadline.
Everything it returns or raises passes through a :class:`~mitigate.lm._scrub.Scrubber` of its secrets.
:class:`AnswerFields` reads an HTTP 200 answer's fields: one that is not what the API says is a ``malformed``
error naming it.
"""

from __future__ import annotations

import asyncio
import contextlib
import math
import os
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from typing import Any, ClassVar, TypeVar

from pydantic import SecretStr

from mitigate.errors import LMCallError, MissingAPIKeyError, MitigateError
from mitigate.lm import _http as http
from mitigate.lm import _pricing as pricing
from mitigate.lm._base import LM, LMRequest, LMResponse, Usage
from mitigate.lm._http import Exchange, Limits, Phase
from mitigate.lm._ratelimit import AdaptiveLimiter
from mitigate.lm._retry import RequestClock, request_clock
from mitigate.lm._scrub import PLACEHOLDER_KEY, Scrubber

T = TypeVar("T")


class ProviderLM(LM):
    """The base of a provider backend; a subclass builds its client, names its SDK and answers a request."""

    _sdk_base: ClassVar[str]
    """The name of the SDK's base exception class."""
    limits: Limits
    base_url: str | None
    _client: Any = None
    _client_loop: asyncio.AbstractEventLoop | None = None

    def _connect(
        self,
        base_url: str | None,
        api_key: str | None,
        api_key_env: str,
        timeout: float | None,
        rate_limit: bool | AdaptiveLimiter,
        *,
        hint: str = "",
    ) -> str:
        """Set up the rate limiter, server, timeout, key and scrubber (``limits`` set before); the key."""
        self.limiter = (
            rate_limit
            if isinstance(rate_limit, AdaptiveLimiter)
            else (AdaptiveLimiter() if rate_limit else None)
        )
        self.base_url = http.check_base_url(base_url, backend=self.spec) if base_url else None
        self.api_key_env = api_key_env
        self.timeout = None if timeout is None else http.check_timeout(timeout, backend=self.spec)
        key = api_key or os.environ.get(api_key_env) or None
        if key is None:
            if self.base_url is None:
                raise MissingAPIKeyError(
                    f"{self.spec} needs an API key; expected the environment variable {api_key_env} to be "
                    f"set (or api_key=... to be passed); it is not set.{hint}",
                    env_var=api_key_env,
                    backend=self.spec,
                )
            key = PLACEHOLDER_KEY
        self._api_key = SecretStr(key)
        self.scrubber = Scrubber((key,))
        """Takes the key out of everything this backend returns or raises."""
        return key

    def identity(self) -> str:
        """The spec, plus ``@<server url>`` for a ``base_url`` server (credentials stripped)."""
        if self.base_url is None:
            return self.spec
        known = self.__dict__.get("_identity")
        if known is None or known[0] != self.base_url:  # worked out once per URL, not once per call
            known = self._identity = (self.base_url, http.server_identity(self.spec, self.base_url))
        return known[1]

    @property
    def read_timeout(self) -> float:
        """Seconds an attempt may go without anything from the server (``timeout``, else the deadline)."""
        return self.timeout if self.timeout is not None else self.limits.deadline

    def cost_of(self, usage: Usage, *, batch: bool = False) -> float | None:
        """The list-price cost of ``usage`` (None on a ``base_url`` server or an unknown model)."""
        return pricing.cost(self.model, usage, batch=batch) if self.base_url is None else None

    def check(self, request: LMRequest) -> None:
        """The request's size (:class:`~mitigate.lm._http.Limits`), then the base checks."""
        http.check_request_size(request, self.limits, backend=self.spec)
        super().check(request)

    def client_options(self) -> tuple[dict[str, Any], dict[str, Any]]:
        """The SDK client's arguments (the key, no retries of the SDK's own, the read timeout, the server when
        set) and its HTTP client's (the read timeout, no redirect followed, no cookie kept)."""
        sdk = {"api_key": self._api_key.get_secret_value(), "max_retries": 0, "timeout": self.read_timeout}
        if self.base_url is not None:
            sdk["base_url"] = self.base_url
        return sdk, {"timeout": self.read_timeout, "follow_redirects": False, "cookies": http.no_cookies()}

    def _sdk(self) -> Any:
        raise NotImplementedError

    def _make_client(self) -> Any:
        raise NotImplementedError

    def sdk_client(self) -> Any:
        """The SDK client for the running event loop (a client is bound to the loop that made it)."""
        loop = asyncio.get_running_loop()
        if self._client is None or self._client_loop is not loop:
            self._client, self._client_loop = self._make_client(), loop
        return self._client

    def error_of(
        self, exc: BaseException, *, phase: Phase = "answer", what: str | None = None
    ) -> MitigateError:
        """An SDK error (or a client exception under it) as a typed error naming the server (and ``what``)."""
        where = self.identity() if what is None else f"{self.identity()} ({what})"
        return http.sdk_error(
            exc,
            where=where,
            timeout=self.read_timeout,
            backend=self.spec,
            api_key_env=self.api_key_env,
            sdk=self._sdk(),
            phase=phase,
            scrubber=self.scrubber,
        )

    def _failed(self, exc: BaseException) -> bool:
        """Whether ``exc`` comes from the SDK, its HTTP client or the network (not a bug)."""
        return isinstance(exc, getattr(self._sdk(), self._sdk_base)) or http.is_client_failure(exc)

    async def sdk_call(self, what: str, call: Callable[[], Awaitable[T]]) -> T:
        """``call()`` of the batch API; an SDK error as a typed error naming ``what``, key taken out."""
        try:
            return await call()
        except getattr(self._sdk(), self._sdk_base) as exc:
            raise self.scrubber.chained(self.error_of(exc, what=what), exc)  # noqa: B904 - chained there

    async def complete(self, request: LMRequest) -> LMResponse:
        """Run one request within what is left of its deadline (see the backend's module docstring)."""
        self.check(request)
        clock, exchange = request_clock(), Exchange()
        try:
            try:
                response = await self._complete(request, clock, exchange)
            except TimeoutError:
                raise http.deadline_error(
                    self.identity(),
                    self.limits.deadline,
                    backend=self.spec,
                    got=exchange.got,
                    attempts=clock.attempts,
                ) from None
            return self.scrubber.response(response)
        except MitigateError as exc:  # the boundary: no secret leaves in an error (nor in an answer, above)
            raise self.scrubber.error(exc)  # noqa: B904 - the same error, its chain kept unless it shows a key

    async def _complete(self, request: LMRequest, clock: RequestClock, exchange: Exchange) -> LMResponse:
        """The answer to a checked request (TimeoutError past its deadline)."""
        raise NotImplementedError

    async def _exchange(
        self, tokens: int, clock: RequestClock, exchange: Exchange, post: Callable[[Exchange], Awaitable[T]]
    ) -> T:
        """``post(exchange)`` within what is left of the deadline (else TimeoutError), paced by the rate
        limiter; its bytes added to ``exchange``."""
        limiter = self.limiter
        ticket = await limiter.acquire(tokens, where=self.identity()) if limiter is not None else None
        mine = Exchange()
        try:
            left = clock.begin(self.limits.deadline)
            try:
                async with asyncio.timeout(left):
                    return await post(mine)
            finally:
                clock.end()
        finally:
            exchange.got += mine.got
            if limiter is not None and ticket is not None:
                limiter.release(
                    ticket,
                    status=mine.status,
                    headers=mine.headers,
                    retry_after=http.parse_retry_after(mine.headers) if mine.status == 429 else None,
                )

    def status_error(self, status: int, headers: Mapping[str, str] | None, detail: str) -> LMCallError:
        """The error of an HTTP status other than 2xx (``detail`` scrubbed), see :func:`http.http_error`."""
        return http.http_error(
            self.identity(),
            status,
            headers,
            detail,
            api_key_env=self.api_key_env,
            backend=self.spec,
            scrubber=self.scrubber,
        )

    async def read_body(self, chunks: AsyncIterator[bytes], exchange: Exchange) -> bytes:
        """An answer's body up to the size cap, its bytes counted in ``exchange``."""
        return await http.read_capped(
            http.counted(chunks, exchange),
            self.limits.max_response_bytes,
            where=self.identity(),
            backend=self.spec,
        )

    async def _sdk_body(
        self,
        start: Callable[[], Awaitable[Any]],
        exchange: Exchange,
        chunks: Callable[[Any], AsyncIterator[bytes]],
        close: Callable[[Any], Awaitable[Any]],
    ) -> bytes:
        """The body of the SDK's raw answer, read up to the size cap (a redirect refused), errors typed."""
        try:
            resp = await start()
        except Exception as exc:
            if isinstance(exc, self._sdk().APIStatusError):
                exchange.status, exchange.headers = exc.status_code, exc.response.headers
            elif not self._failed(exc):
                raise
            raise self.error_of(exc) from exc
        try:
            exchange.status, exchange.headers = resp.status_code, resp.headers
            history = getattr(getattr(resp, "http_response", resp), "history", None)
            if history:  # an HTTP client of the caller's own that follows redirects
                raise self.status_error(history[0].status_code, history[0].headers, "")
            return await self.read_body(chunks(resp), exchange)
        except MitigateError:
            raise
        except Exception as exc:  # the connection closed or timed out mid-body
            if not self._failed(exc):
                raise
            raise self.error_of(exc, phase="body") from exc
        finally:
            with contextlib.suppress(Exception):
                await close(resp)

    async def aclose(self) -> None:
        if self._client is not None:
            client, self._client = self._client, None
            with contextlib.suppress(RuntimeError):  # its event loop is gone
                await client.close()


_LARGEST_COUNT = 2**53
"""Token counts at or above this are not counts (a float could not even hold them exactly)."""


class AnswerFields:
    """Typed readers of one server's answer fields, each raising a malformed LMCallError naming the field
    (and quoting what came, scrubbed of the ``scrubber``'s secrets before it is cut)."""

    __slots__ = ("backend", "scrubber", "where")

    def __init__(self, where: str, backend: str, scrubber: Scrubber) -> None:
        self.where = where
        self.backend = backend
        self.scrubber = scrubber

    def shown(self, value: Any, limit: int = 80) -> str:
        text = self.scrubber.clip(repr(value), limit + 1)
        return text if len(text) <= limit else text[: limit - 3] + "..."

    def error(self, field: str, expected: str, got: Any) -> LMCallError:
        return LMCallError(
            f"{self.where} answered HTTP 200 with a malformed {field}; expected {expected}; "
            f"got {self.shown(got)}",
            backend=self.backend,
            reason="malformed",
            kind=f"a malformed {field}",
            field=field,
        )

    def mapping(self, value: Any, field: str) -> Mapping[str, Any]:
        """An object (a missing or null one is empty)."""
        if value is None:
            return {}
        if not isinstance(value, Mapping):
            raise self.error(field, "an object", value)
        return value

    def count(self, value: Any, field: str) -> int:
        """A token count: a whole number >= 0 (a missing or null one is 0: APIs leave out what is none)."""
        if value is None:
            return 0
        whole = isinstance(value, float) and math.isfinite(value) and value.is_integer()
        number = int(value) if whole else value
        if isinstance(number, int) and not isinstance(number, bool) and 0 <= number < _LARGEST_COUNT:
            return number
        raise self.error(field, f"a whole number from 0 to {_LARGEST_COUNT:,}", value)

    def text(self, value: Any, field: str) -> str:
        if not isinstance(value, str):
            raise self.error(field, "a string", value)
        return value

    def optional_text(self, value: Any, field: str) -> str | None:
        if value is not None and not isinstance(value, str):
            raise self.error(field, "a string or null", value)
        return value

    def logprob(self, value: Any, field: str) -> float:
        """A log-probability: a finite number <= 0 (a tiny positive rounding error is read as 0)."""
        number = isinstance(value, int | float) and not isinstance(value, bool)
        if number and math.isfinite(value) and value <= 1e-6:
            return min(float(value), 0.0)
        raise self.error(field, "a finite number <= 0", value)

    def openai_usage(self, value: Any) -> Usage:
        """An OpenAI ``usage`` object (``cached_tokens``: prompt tokens read from a cache)."""
        usage = self.mapping(value, "usage")
        details = self.mapping(usage.get("prompt_tokens_details"), "usage.prompt_tokens_details")
        prompt = self.count(usage.get("prompt_tokens"), "usage.prompt_tokens")
        cached = self.count(details.get("cached_tokens"), "usage.prompt_tokens_details.cached_tokens")
        if cached > prompt:
            raise self.error(
                "usage.prompt_tokens_details.cached_tokens", f"at most prompt_tokens ({prompt})", cached
            )
        return Usage(
            prompt_tokens=prompt,
            completion_tokens=self.count(usage.get("completion_tokens"), "usage.completion_tokens"),
            cached_prompt_tokens=cached,
        )
