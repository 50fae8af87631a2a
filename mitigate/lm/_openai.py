"""OpenAI chat-completions backend, also for any OpenAI-compatible server.

``OpenAILM("gpt-4o-mini")`` talks to api.openai.com; ``OpenAILM("my-model",
base_url="http://localhost:8000/v1")`` talks to an OpenAI-compatible server (vLLM,
llama.cpp server, Ollama, ...). Built on the official ``openai`` SDK (``AsyncOpenAI``)
with its own retries switched off (``max_retries=0``): :class:`~mitigate.lm._retry.RetryingLM`
owns retries.

The request goes through the SDK's generic ``client.post("/chat/completions", ...)``
(the SDK's documented way to call an endpoint with a hand-built body) rather than
``chat.completions.create``: the body is built here, and the JSON answer is read here,
which skips the SDK's per-call parameter transformation and response-model validation —
about half of its client-side CPU per call, which matters at high concurrency. Auth,
base URL, timeouts and the SDK's error classes are the same either way.

Transport
    ``transport="auto"`` (default) is ``"direct"`` whenever ``aiohttp`` is installed and no
    ``http_client`` is given, else ``"sdk"``. ``"direct"`` skips the SDK and posts the same
    JSON body with a plain aiohttp session (same request mapping, response reading, size
    cap, deadline, error mapping and Retry-After handling); it costs about a quarter of the
    SDK's client CPU per call, which is what lets a runner at high concurrency keep up with
    a fast local server (see ``benchmarks/bench_runner_overhead.py`` and
    ``benchmarks/bench_peers.py``), and it does not import the SDK at all. ``"sdk"`` goes
    through the official SDK with its aiohttp transport (``openai.DefaultAioHttpClient``)
    when the installed SDK offers it, else its default httpx client (whose connection pool
    costs a lot of CPU per request under many concurrent requests); ``"httpx"`` /
    ``"aiohttp"`` force one SDK transport, and ``http_client=`` passes an SDK client of your
    own. The batch API (:meth:`OpenAILM.sdk_client`) always uses the SDK.

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
    seed, ``logprobs`` / ``top_logprobs``. With a ``base_url`` the body also carries
    ``cache_prompt: true`` (llama.cpp server's prompt-prefix reuse; other servers ignore
    unknown fields). A server that returns fewer choices than ``n`` or no logprobs when
    they were asked for raises :class:`~mitigate.errors.CapabilityError` rather than
    returning less than was requested.

Answer constraints
    A request's ``constraint`` (:mod:`mitigate.lm._constraint`) is sent the way the server
    enforces it. Mode "json": ``response_format`` ``{"type": "json_schema", ...}`` with
    ``strict: true``, on official models that support structured outputs (gpt-4o-mini,
    gpt-4o except its first 2024-05-13 snapshot, gpt-4.1, gpt-4.5, gpt-5, o1, o3, o4-mini)
    and on compatible servers. Mode "format" (the template's own answer format) needs a
    server whose guided decoding is named with ``guided=``: ``"vllm"``
    (``structured_outputs.regex``, vLLM 0.12+), ``"vllm-legacy"`` (``guided_regex``),
    ``"sglang"`` (``regex``) or ``"llamacpp"`` (``grammar``, GBNF); ``guided="openai"``
    declares a compatible server that only takes ``response_format``. Anything else raises
    :class:`~mitigate.errors.CapabilityError` before a call is made.

Usage and cost
    ``usage.prompt_tokens_details.cached_tokens`` (OpenAI's automatic prompt caching of
    prefixes of 1,024+ tokens) becomes ``Usage.cached_prompt_tokens``; OpenAI reports no
    cache writes. Cost comes from :mod:`mitigate.lm._pricing` (list prices, cached tokens at
    their own price) on the official API; a ``base_url`` server's price is unknown, so its
    ``cost_usd`` is None.

Rate limits
    Calls go through an :class:`~mitigate.lm._ratelimit.AdaptiveLimiter` fed with the
    ``x-ratelimit-*`` headers and 429s (``rate_limit=False`` turns it off; pass one limiter
    to several backends that share an account). Without such headers and without a 429 it
    only counts the calls in flight.

Time
    ``timeout`` is how long an attempt may go without anything from the server (connecting,
    waiting for the answer to start, between two pieces of it; None, the default: as long as
    the deadline allows); past it the attempt fails and is retried. ``limits.deadline`` is the
    time the request may spend on the server over all its attempts
    (:mod:`mitigate.lm._deadline`). Both mean the same on every transport.

Errors
    HTTP 408/409/429/5xx, timeouts and connection errors raise
    :class:`~mitigate.errors.TransientLMError` (``status``, and ``retry_after`` from the
    ``Retry-After`` header when sent); other HTTP errors raise
    :class:`~mitigate.errors.LMCallError`. Redirects are not followed: a 3xx is an
    LMCallError naming both servers. An answer that is not HTTP, or whose fields are not what
    the API says (:mod:`mitigate.lm._answer_fields`), is a malformed LMCallError naming the
    field and the server; a connection closed mid-answer is retryable. Everything returned or
    raised has the key taken out first (:mod:`mitigate.lm._scrub`).

Size: over 600 lines because one backend holds the request body, the SDK and HTTP paths, guided
decoding for several servers and the error mapping.
"""

from __future__ import annotations

import asyncio
import contextlib
import importlib.util
import os
from typing import TYPE_CHECKING, Any, Literal

from pydantic import SecretStr

from mitigate.errors import BackendSpecError, CapabilityError, ConfigError, MissingAPIKeyError, MitigateError
from mitigate.lm import _pricing as pricing
from mitigate.lm._answer_fields import AnswerFields
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
    read_head,
    sdk_error,
    transport_error,
)
from mitigate.lm._ratelimit import AdaptiveLimiter, estimate_tokens
from mitigate.lm._scrub import PLACEHOLDER_KEY, Scrubber

if TYPE_CHECKING:
    import openai

Transport = Literal["auto", "direct", "sdk", "aiohttp", "httpx"]
TRANSPORTS = ("auto", "direct", "sdk", "aiohttp", "httpx")
"""The HTTP clients of :class:`OpenAILM` (see "Transport" in the module docstring)."""


def _sdk() -> Any:
    """The ``openai`` SDK module, imported on first use (the direct transport never needs it: a faster
    start)."""
    import openai

    return openai


def _raw_response_class() -> Any:
    """``httpx.Response``: for it the SDK returns its raw HTTP response (with the rate-limit headers); None
    without httpx."""
    try:
        import httpx
    except ImportError:  # pragma: no cover - httpx is installed with the SDKs
        return None
    return httpx.Response


GuidedServer = Literal["openai", "vllm", "vllm-legacy", "sglang", "llamacpp"]
_GUIDED = ("openai", "vllm", "vllm-legacy", "sglang", "llamacpp")
_STRUCTURED_PREFIXES = (
    "gpt-4o-mini",
    "gpt-4o",
    "gpt-4.1",
    "gpt-4.5",
    "gpt-5",
    "o1",
    "o3",
    "o4",
    "chatgpt-4o",
)
_NO_STRUCTURED = ("gpt-4o-2024-05-13", "o1-mini", "o1-preview")


def structured_outputs_model(model: str) -> bool:
    """Whether an official OpenAI model name takes ``response_format`` json_schema (structured outputs)."""
    name = model.lower()
    return name.startswith(_STRUCTURED_PREFIXES) and not name.startswith(_NO_STRUCTURED)


def constraint_modes_for(model: str, base_url: str | None, guided: str | None) -> frozenset[str]:
    """The answer-constraint modes of ``model``: "json" on structured-outputs models of the official API and
    on declared servers; "format" too on named guided-decoding servers; none on an undeclared server."""
    if base_url is None:
        return frozenset({"json"}) if structured_outputs_model(model) else frozenset()
    if guided is None:
        return frozenset()
    return frozenset({"json"}) if guided == "openai" else frozenset({"format", "json"})


def constraint_fields(request: LMRequest, guided: str | None) -> dict[str, Any]:
    """The body fields that make a server enforce ``request.constraint`` (empty without one)."""
    c = request.constraint
    if c is None:
        return {}
    if c.mode == "json":
        return {
            "response_format": {
                "type": "json_schema",
                "json_schema": {"name": c.name, "schema": c.json_schema, "strict": True},
            }
        }
    if guided == "vllm":
        return {"structured_outputs": {"regex": c.regex}}
    if guided == "vllm-legacy":
        return {"guided_regex": c.regex}
    if guided == "sglang":
        return {"regex": c.regex}
    if guided == "llamacpp":
        return {"grammar": c.gbnf}
    raise CapabilityError(f"no way to send a {c.summary()} to this server (guided={guided!r})")


def _aiohttp_available() -> bool:
    """Whether the SDK's aiohttp transport can be used (SDK support and aiohttp installed)."""
    return importlib.util.find_spec("aiohttp") is not None and hasattr(_sdk(), "DefaultAioHttpClient")


def _index(choice: dict[str, Any], fields: AnswerFields) -> int:
    """A choice's ``index`` (0 when absent), for putting the choices in order."""
    value = choice.get("index")
    if value is None:
        return 0
    if isinstance(value, bool) or not isinstance(value, int):
        raise fields.error("choices[].index", "a whole number", value)
    return value


class OpenAILM(LM):
    """An OpenAI (or OpenAI-compatible server) chat model.

    Parameters:
        model: the model name sent to the server (``gpt-4o-mini``, ``Qwen/Qwen2.5-7B-Instruct``).
        base_url: an OpenAI-compatible server's base URL (``http://host:port/v1``); defaults
            to ``$OPENAI_BASE_URL`` when set, else the official API.
        api_key: the key; defaults to ``$<api_key_env>`` (see the module docstring for
            servers that need none).
        api_key_env: the environment variable holding the key.
        timeout: seconds an attempt may go without anything from the server (a retryable failure); None: as
            long as ``limits.deadline`` allows.
        transport: ``"auto"`` (direct when aiohttp is installed), ``"direct"``, ``"sdk"``, ``"aiohttp"`` or
            ``"httpx"`` (see the module docstring); ``transport`` afterwards holds the one chosen.
        http_client: an HTTP client for the SDK (``httpx.AsyncClient`` or
            ``openai.DefaultAioHttpClient()``), overriding ``transport``. It is bound to
            one event loop, so pass one only when the backend is used from a single loop.
        rate_limit: True for an :class:`~mitigate.lm._ratelimit.AdaptiveLimiter` of its own,
            a limiter to share, or False for none.
        guided: the guided-decoding fields a ``base_url`` server takes ("vllm",
            "vllm-legacy", "sglang", "llamacpp", or "openai" for ``response_format`` only);
            see "Answer constraints" in the module docstring.
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
        timeout: float | None = None,
        transport: Transport = "auto",
        http_client: Any | None = None,
        rate_limit: bool | AdaptiveLimiter = True,
        guided: GuidedServer | None = None,
        limits: Limits | None = None,
    ) -> None:
        self.model = validate_spec_part("OpenAI model name", model)
        self.limits = check_limits(limits, backend=f"openai:{model}")
        if guided is not None and guided not in _GUIDED:
            raise ConfigError(f"expected guided to be one of {list(_GUIDED)} or None; got {guided!r}")
        self.guided = guided
        self.limiter = (
            rate_limit
            if isinstance(rate_limit, AdaptiveLimiter)
            else (AdaptiveLimiter() if rate_limit else None)
        )
        resolved_url = base_url or os.environ.get("OPENAI_BASE_URL") or None
        self.base_url = check_base_url(resolved_url, backend=f"openai:{model}") if resolved_url else None
        self.api_key_env = api_key_env
        self.timeout = None if timeout is None else check_timeout(timeout, backend=f"openai:{model}")
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
        if transport not in TRANSPORTS:
            raise ConfigError(
                f"expected transport to be 'auto', 'direct', 'sdk', 'aiohttp' or 'httpx'; got {transport!r}"
            )
        # the cheapest client that behaves the same; the SDK only for a client of yours
        if transport == "auto":
            transport = "direct" if http_client is None and importlib.util.find_spec("aiohttp") else "sdk"
        if transport == "direct" and importlib.util.find_spec("aiohttp") is None:
            raise ConfigError(
                "transport='direct' needs aiohttp; expected it installed (pip install "
                "'mitigate[openai]' or pip install aiohttp)"
            )
        if transport != "direct" and importlib.util.find_spec("openai") is None:
            raise BackendSpecError(
                f"backend spec 'openai:{model}' needs the 'openai' package (or aiohttp for its direct "
                "client), and neither is installed; expected them importable (pip install "
                "'mitigate[openai]')",
                spec=f"openai:{model}",
            )
        if transport == "aiohttp" and not _aiohttp_available():
            raise ConfigError(
                "transport='aiohttp' needs aiohttp and an openai SDK with DefaultAioHttpClient; expected "
                "both installed (pip install 'openai[aiohttp]'); one is missing"
            )
        self.transport = transport
        self._api_key = SecretStr(key)
        self.scrubber = Scrubber((key,))
        """Takes the key out of everything this backend returns or raises."""
        self._http_client = http_client
        # the SDK client (transports other than direct, batches)
        self._client: openai.AsyncOpenAI | None = None
        self._client_loop: asyncio.AbstractEventLoop | None = None
        self._session: Any = None
        self._session_loop: asyncio.AbstractEventLoop | None = None
        self._session_keeper: asyncio.Task[None] | None = None

    def constraint_modes(self) -> frozenset[str]:
        """ "json" on structured-outputs models and declared servers; "format" on named guided-decoding
        servers."""
        return constraint_modes_for(self.model, self.base_url, self.guided)

    def constraint_fields(self, request: LMRequest) -> dict[str, Any]:
        """The body fields this client sends for the constraint (see :func:`constraint_fields`)."""
        return constraint_fields(request, self.guided)

    def check(self, request: LMRequest) -> None:
        """The base checks and the request's size (:class:`~mitigate.lm._http.Limits`), with a hint on how to
        declare a server's guided decoding."""
        check_request_size(request, self.limits, backend=self.spec)
        try:
            super().check(request)
        except CapabilityError as exc:
            if request.constraint is None or self.base_url is None or self.guided is not None:
                raise
            raise CapabilityError(
                f"{exc.message} This server's guided decoding is unknown: pass guided='vllm', 'vllm-legacy', "
                "'sglang', 'llamacpp' or 'openai' (response_format only); on the command line, --guided vllm "
                "(or the others).",
                backend=self.spec,
            ) from None

    def identity(self) -> str:
        """``openai:<model>``, plus ``@<server url>`` for a base_url server (credentials stripped)."""
        if self.base_url is None:
            return self.spec
        known = self.__dict__.get("_identity")
        if known is None or known[0] != self.base_url:  # worked out once per URL, not once per call
            known = self._identity = (self.base_url, f"{self.spec}@{public_url(self.base_url)}")
        return known[1]

    def __repr__(self) -> str:
        return f"OpenAILM(model={self.model!r}, base_url={self.base_url!r}, transport={self.transport!r})"

    @property
    def read_timeout(self) -> float:
        """Seconds an attempt may go without anything from the server (``timeout``, else the deadline)."""
        return self.timeout if self.timeout is not None else self.limits.deadline

    def _get_client(self) -> openai.AsyncOpenAI:
        """The SDK client for the running event loop (a client is bound to the loop that made it)."""
        openai = _sdk()
        loop = asyncio.get_running_loop()
        if self._client is None or self._client_loop is not loop:
            kwargs: dict[str, Any] = {
                "api_key": self._api_key.get_secret_value(),
                "max_retries": 0,
                "timeout": self.read_timeout,
            }
            if self.base_url is not None:
                kwargs["base_url"] = self.base_url
            client_kwargs = {"timeout": self.read_timeout, "follow_redirects": False, "cookies": no_cookies()}
            if self._http_client is not None:
                kwargs["http_client"] = self._http_client
            elif self.transport == "aiohttp" or (self.transport == "sdk" and _aiohttp_available()):
                try:
                    kwargs["http_client"] = openai.DefaultAioHttpClient(**client_kwargs)
                except RuntimeError as exc:  # the SDK was installed without its aiohttp extra
                    if self.transport == "aiohttp":
                        raise ConfigError(
                            f"transport='aiohttp' is not usable with this openai SDK; expected "
                            f"pip install 'openai[aiohttp]'; got: {exc}"
                        ) from exc
                    kwargs["http_client"] = openai.DefaultAsyncHttpxClient(**client_kwargs)
            else:  # httpx, and the batch calls of the direct transport
                kwargs["http_client"] = openai.DefaultAsyncHttpxClient(**client_kwargs)
            self._client = openai.AsyncOpenAI(**kwargs)
            self._client_loop = loop
        return self._client

    def _body(self, request: LMRequest) -> dict[str, Any]:
        """The JSON body of ``POST /chat/completions`` for ``request``."""
        body: dict[str, Any] = {
            "model": self.model,
            "messages": [{"role": m.role, "content": m.content} for m in request.messages],
            "temperature": request.temperature,
        }
        if self.base_url is None:
            body["max_completion_tokens"] = request.max_tokens
        else:
            body["max_tokens"] = request.max_tokens
            body["cache_prompt"] = True
        body.update(openai_style_options(request))
        body.update(constraint_fields(request, self.guided))
        return body

    async def complete(self, request: LMRequest) -> LMResponse:
        """Run one chat completion within what is left of the request's deadline, paced by the rate limiter.
        See the module docstring for the mapping and errors."""
        self.check(request)
        limiter = self.limiter
        exchange = Exchange()
        clock = request_clock()
        try:
            ticket = (
                await limiter.acquire(
                    estimate_tokens(request) if limiter.tracks_tokens else 0, where=self.identity()
                )
                if limiter is not None
                else None
            )
            try:
                left = clock.begin(self.limits.deadline)
                try:
                    async with asyncio.timeout(left):
                        raw = await (self._post_direct if self.transport == "direct" else self._post_sdk)(
                            self._body(request), exchange
                        )
                finally:
                    clock.end()
            except TimeoutError:
                raise deadline_error(
                    self.identity(),
                    self.limits.deadline,
                    backend=self.spec,
                    got=exchange.got,
                    attempts=clock.attempts,
                ) from None
            finally:
                if limiter is not None and ticket is not None:
                    status = exchange.status
                    limiter.release(
                        ticket,
                        status=status,
                        headers=exchange.headers,
                        retry_after=parse_retry_after(exchange.headers) if status == 429 else None,
                    )
            return self.scrubber.response(self._response(request, raw))
        except MitigateError as exc:  # the boundary: no secret leaves in an error (nor in an answer, above)
            # the same error, scrubbed; its chain is kept unless it shows a key
            raise self.scrubber.error(exc)  # noqa: B904

    async def _post_sdk(self, body: dict[str, Any], exchange: Exchange) -> dict[str, Any]:
        """POST the body through the SDK client (redirects not followed); the answer is read up to the size
        cap."""
        client = self._get_client()
        openai = _sdk()
        where = self.identity()
        try:
            resp = await client.post(
                "/chat/completions",
                body=body,
                cast_to=_raw_response_class(),
                options={"headers": {"X-Stainless-Raw-Response": "stream"}, "follow_redirects": False},
            )
        except openai.APIStatusError as exc:
            exchange.status, exchange.headers = exc.status_code, exc.response.headers
            raise self._translate(exc) from exc
        except Exception as exc:
            if not (isinstance(exc, openai.OpenAIError) or is_client_failure(exc)):
                raise
            raise self._translate(exc) from exc
        try:
            exchange.status, exchange.headers = resp.status_code, resp.headers
            if getattr(resp, "history", None):  # a client of the caller's own that follows redirects
                first = resp.history[0]
                raise http_error(
                    where,
                    first.status_code,
                    first.headers,
                    "",
                    api_key_env=self.api_key_env,
                    backend=self.spec,
                )
            data = await read_capped(
                counted(resp.aiter_bytes(), exchange),
                self.limits.max_response_bytes,
                where=where,
                backend=self.spec,
            )
        except MitigateError:
            raise
        except Exception as exc:
            if not (isinstance(exc, openai.OpenAIError) or is_client_failure(exc)):
                raise
            raise self._translate(exc, phase="body") from exc
        finally:
            with contextlib.suppress(Exception):
                await resp.aclose()
        return decode_json_object(
            data, where=where, backend=self.spec, expected="a JSON chat.completion object"
        )

    def chat_body(self, request: LMRequest) -> dict[str, Any]:
        """The JSON body of ``POST /chat/completions`` for ``request`` (also a batch line's ``body``)."""
        self.check(request)
        return self._body(request)

    def parse_chat_completion(
        self, request: LMRequest, raw: dict[str, Any], *, batch: bool = False
    ) -> LMResponse:
        """A chat.completion JSON object (a batch result's ``response.body``) as an :class:`LMResponse` (the
        key taken out of it, and out of the error of a malformed one)."""
        try:
            response = self.scrubber.response(self._response(request, raw))
        except MitigateError as exc:
            raise self.scrubber.error(exc)  # noqa: B904 - the same error, scrubbed
        if not batch:
            return response
        return response.model_copy(update={"cost_usd": self.cost_of(response.usage, batch=True)})

    def cost_of(self, usage: Usage, *, batch: bool = False) -> float | None:
        """The list-price cost of ``usage`` on this model (None on a ``base_url`` server or an unknown
        model)."""
        return pricing.cost(self.model, usage, batch=batch) if self.base_url is None else None

    def sdk_client(self) -> openai.AsyncOpenAI:
        """The SDK client for the running event loop (the batch API uses it for files and batches)."""
        return self._get_client()

    def _response(self, request: LMRequest, raw: dict[str, Any]) -> LMResponse:
        """Turn a chat.completion JSON object into an :class:`LMResponse`; a field that is not what the API
        says is a
        typed malformed LMCallError naming it (:mod:`mitigate.lm._answer_fields`)."""
        where = self.identity()
        fields = AnswerFields(where, self.spec)
        expected = "a chat.completion object with choices[].message.content"
        found = raw.get("choices")
        if not isinstance(found, list) or not found:
            kind = "no choices" if found in (None, []) else "choices that are not a list"
            raise malformed(where, kind, f"{expected}; got {str(raw)[:160]!r}", backend=self.spec)
        if not all(isinstance(c, dict) for c in found):
            raise malformed(where, "choices that are not objects", expected, backend=self.spec)
        if len(found) != request.n:
            raise CapabilityError(
                f"{self.identity()} was asked for n={request.n} samples and returned {len(found)} "
                "choices; this server does not honour n. Expected exactly n choices; request n=1 samples "
                "separately (with different seeds) instead.",
                backend=self.spec,
            )
        raw_choices = found if len(found) == 1 else sorted(found, key=lambda c: _index(c, fields))
        choices = []
        for rc in raw_choices:
            logprobs = self._logprobs(request, rc, fields) if request.wants_logprobs() else None
            message = rc.get("message")
            content = message.get("content") if isinstance(message, dict) else None
            if not isinstance(content, str):
                kind = "content: null" if isinstance(message, dict) else "a choice without a message"
                raise malformed(where, kind, f"{expected} as text; got {str(rc)[:160]!r}", backend=self.spec)
            finish = fields.optional_text(rc.get("finish_reason"), "choices[].finish_reason")
            choices.append(Choice(text=content, logprobs=logprobs, finish_reason=finish))
        usage = fields.openai_usage(raw.get("usage"))
        model = fields.optional_text(raw.get("model"), "model")
        cost = pricing.cost(self.model, usage) if self.base_url is None else None
        return LMResponse(choices=tuple(choices), usage=usage, model=model or self.model, cost_usd=cost)

    def _logprobs(
        self, request: LMRequest, rc: dict[str, Any], fields: AnswerFields
    ) -> tuple[TokenLogprob, ...]:
        """A choice's token logprobs (``logprobs.content``); CapabilityError when the server sent none."""
        content = fields.mapping(rc.get("logprobs"), "choices[].logprobs").get("content")
        if content is None:
            raise CapabilityError(
                f"{self.identity()} returned no token logprobs although the request asked for them "
                f"(logprobs={request.logprobs}, top_logprobs={request.top_logprobs}); expected "
                "choices[].logprobs.content. This server or model does not provide logprobs.",
                backend=self.spec,
            )
        if not isinstance(content, list):
            raise fields.error("choices[].logprobs.content", "a list", content)
        out = []
        for t in content:
            t = fields.mapping(t, "choices[].logprobs.content[]")
            top = t.get("top_logprobs") or []
            if not isinstance(top, list):
                raise fields.error("choices[].logprobs.content[].top_logprobs", "a list", top)
            alternatives = []
            for a in top:
                a = fields.mapping(a, "choices[].logprobs.content[].top_logprobs[]")
                alternatives.append(
                    (
                        fields.text(a.get("token"), "choices[].logprobs.content[].top_logprobs[].token"),
                        fields.logprob(
                            a.get("logprob"), "choices[].logprobs.content[].top_logprobs[].logprob"
                        ),
                    )
                )
            out.append(
                TokenLogprob(
                    token=fields.text(t.get("token"), "choices[].logprobs.content[].token"),
                    logprob=fields.logprob(t.get("logprob"), "choices[].logprobs.content[].logprob"),
                    top=tuple(alternatives),
                )
            )
        return tuple(out)

    async def _post_direct(self, body: dict[str, Any], exchange: Exchange) -> dict[str, Any]:
        """POST the body with a plain aiohttp session (transport="direct"; redirects not followed)."""
        import aiohttp

        loop = asyncio.get_running_loop()
        if self._session is None or self._session_loop is not loop:
            wait = self.timeout  # None: nothing but the deadline (no timer per read: the cheapest hot path)
            self._session = aiohttp.ClientSession(
                timeout=aiohttp.ClientTimeout(total=None, connect=None, sock_connect=wait, sock_read=wait),
                connector=aiohttp.TCPConnector(limit=0),
                cookie_jar=aiohttp.DummyCookieJar(),  # an API call needs no cookie (see http.no_cookies)
                headers={"Authorization": f"Bearer {self._api_key.get_secret_value()}"},
            )
            self._session_loop = loop
            self._session_keeper = loop.create_task(_close_when_its_loop_ends(self._session))
        url = f"{self.base_url or 'https://api.openai.com/v1'}/chat/completions"
        where = self.identity()
        phase: Literal["answer", "body"] = "answer"
        try:
            async with self._session.post(url, json=body, allow_redirects=False) as resp:
                exchange.status, exchange.headers = resp.status, resp.headers
                phase = "body"
                if resp.status >= 300 or resp.status < 200:
                    detail = await read_head(resp.content.iter_any())
                    raise http_error(
                        where,
                        resp.status,
                        resp.headers,
                        detail,
                        api_key_env=self.api_key_env,
                        backend=self.spec,
                    )
                data = await read_capped(
                    counted(resp.content.iter_any(), exchange),
                    self.limits.max_response_bytes,
                    where=where,
                    backend=self.spec,
                )
        except MitigateError:
            raise
        except Exception as exc:
            if not is_client_failure(exc):
                raise
            raise transport_error(
                exc, where=where, backend=self.spec, timeout=self.read_timeout, phase=phase
            ) from exc
        return decode_json_object(
            data, where=where, backend=self.spec, expected="a JSON chat.completion object"
        )

    def _translate(self, exc: BaseException, phase: Literal["answer", "body"] = "answer") -> MitigateError:
        """Map an SDK error (or a client exception under it) to a typed error."""
        openai = _sdk()
        return sdk_error(
            exc,
            where=self.identity(),
            detail=str(exc),
            timeout=self.read_timeout,
            backend=self.spec,
            api_key_env=self.api_key_env,
            status_error=openai.APIStatusError,
            timeout_error=openai.APITimeoutError,
            connection_error=openai.APIConnectionError,
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
        if self._session is not None:
            session, self._session = self._session, None
            try:
                await session.close()
            except RuntimeError:  # its event loop is gone
                pass


async def _close_when_its_loop_ends(session: Any) -> None:
    """Closes a direct-transport session when the run of its event loop ends.

    ``asyncio.run`` cancels the tasks still pending before it closes the loop; this one waits for
    that and closes the session then, so ``asyncio.run(judge.judge(item))`` leaves no unclosed
    session behind (``aclose`` closing it earlier makes this a no-op).
    """
    try:
        await asyncio.Event().wait()
    finally:
        await session.close()
