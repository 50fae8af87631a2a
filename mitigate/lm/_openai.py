"""OpenAI chat-completions backend, also for OpenAI-compatible servers (vLLM, llama.cpp server, Ollama ...).

The body is built and the answer read here. ``transport="direct"`` (the default) posts it without importing
the SDK, with a plain aiohttp session when aiohttp is installed (the ``openai`` extra) and with httpx (a core
dependency) otherwise, so ``openai:<model>`` against a server needs no extra; ``"sdk"``, ``"aiohttp"`` and
``"httpx"`` go through the SDK (as the batch API always does). A server that returns fewer choices than
``n``, or no logprobs when asked, is a :class:`~mitigate.errors.CapabilityError`. Mode "json" is
``response_format`` json_schema; mode "format" needs the server's guided decoding named (``guided=``:
``"vllm"``, ``"vllm-legacy"``, ``"sglang"``, ``"llamacpp"``; ``"openai"`` for ``response_format`` only).
Cost at list prices on the official API; None on a server.
"""

from __future__ import annotations

import asyncio
import contextlib
import importlib.util
import os
from collections.abc import AsyncIterator
from typing import TYPE_CHECKING, Any, ClassVar, Literal

from mitigate.errors import BackendSpecError, CapabilityError, ConfigError, MitigateError
from mitigate.lm import _http as http
from mitigate.lm._base import (
    Choice,
    LMRequest,
    LMResponse,
    TokenLogprob,
    openai_style_options,
    validate_spec_part,
)
from mitigate.lm._http import Exchange, Limits
from mitigate.lm._provider import AnswerFields, ProviderLM
from mitigate.lm._ratelimit import AdaptiveLimiter, estimate_tokens
from mitigate.lm._retry import RequestClock

if TYPE_CHECKING:
    import openai

Transport = Literal["auto", "direct", "sdk", "aiohttp", "httpx"]
TRANSPORTS = ("auto", "direct", "sdk", "aiohttp", "httpx")
"""The HTTP clients of :class:`OpenAILM` (see "Transport" in the module docstring)."""
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


def _sdk() -> Any:
    import openai

    return openai


def constraint_modes_for(model: str, base_url: str | None, guided: str | None) -> frozenset[str]:
    """The answer-constraint modes of ``model`` on the official API or a (guided) server."""
    if base_url is None:
        name = model.lower()
        structured = name.startswith(_STRUCTURED_PREFIXES) and not name.startswith(_NO_STRUCTURED)
        return frozenset({"json"}) if structured else frozenset()
    if guided is None:
        return frozenset()
    return frozenset({"json"}) if guided == "openai" else frozenset({"format", "json"})


def constraint_fields(request: LMRequest, guided: str | None) -> dict[str, Any]:
    """The body fields that make a server enforce ``request.constraint`` (empty without one)."""
    c = request.constraint
    if c is None:
        return {}
    if c.mode == "json":
        schema = {"name": c.name, "schema": c.json_schema, "strict": True}
        return {"response_format": {"type": "json_schema", "json_schema": schema}}
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
    return importlib.util.find_spec("aiohttp") is not None and hasattr(_sdk(), "DefaultAioHttpClient")


def _index(choice: dict[str, Any], fields: AnswerFields) -> int:
    value = choice.get("index")
    if value is None:
        return 0
    if isinstance(value, bool) or not isinstance(value, int):
        raise fields.error("choices[].index", "a whole number", value)
    return value


class OpenAILM(ProviderLM):
    """An OpenAI (or OpenAI-compatible server) chat model: ``base_url`` a compatible server's (default
    ``$OPENAI_BASE_URL``, else the official API), ``transport`` the client (see the module docstring; it then
    holds the one chosen), ``http_client`` an SDK HTTP client of your own (bound to one event loop),
    ``rate_limit`` an :class:`~mitigate.lm._ratelimit.AdaptiveLimiter` of its own (True), one to share or
    none, ``guided`` the guided decoding a ``base_url`` server takes."""

    provider = "openai"
    supports_logprobs = True
    supports_n = True
    supports_stop = True
    _sdk_base: ClassVar[str] = "OpenAIError"

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
        self.limits = http.check_limits(limits, backend=self.spec)
        if guided is not None and guided not in _GUIDED:
            raise ConfigError(f"expected guided to be one of {list(_GUIDED)} or None; got {guided!r}")
        self.guided = guided
        hint = " For a local OpenAI-compatible server pass base_url=... instead."
        base_url = base_url or os.environ.get("OPENAI_BASE_URL") or None
        self._connect(base_url, api_key, api_key_env, timeout, rate_limit, hint=hint)
        if transport not in TRANSPORTS:
            raise ConfigError(
                f"expected transport to be 'auto', 'direct', 'sdk', 'aiohttp' or 'httpx'; got {transport!r}"
            )
        if transport == "auto":  # the cheapest client that behaves the same; the SDK for a client of yours
            transport = "direct" if http_client is None else "sdk"
        if transport != "direct" and importlib.util.find_spec("openai") is None:
            raise BackendSpecError(
                f"transport={transport!r} of backend spec 'openai:{model}' needs the 'openai' package, which "
                "is not installed; expected it importable (pip install 'mitigate[openai]'), or the default "
                "transport, which needs no extra",
                spec=f"openai:{model}",
            )
        if transport == "aiohttp" and not _aiohttp_available():
            raise ConfigError(
                "transport='aiohttp' needs aiohttp and an openai SDK with DefaultAioHttpClient; expected "
                "both installed (pip install 'openai[aiohttp]'); one is missing"
            )
        self.transport = transport
        self._http_client = http_client
        self._session: Any = None
        self._session_loop: asyncio.AbstractEventLoop | None = None
        self._session_keeper: asyncio.Task[None] | None = None

    def constraint_modes(self) -> frozenset[str]:
        return constraint_modes_for(self.model, self.base_url, self.guided)

    def constraint_fields(self, request: LMRequest) -> dict[str, Any]:
        return constraint_fields(request, self.guided)

    def check(self, request: LMRequest) -> None:
        """The base checks, with a hint on how to declare a server's guided decoding."""
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

    def __repr__(self) -> str:
        return f"OpenAILM(model={self.model!r}, base_url={self.base_url!r}, transport={self.transport!r})"

    def _sdk(self) -> Any:
        return _sdk()

    def _make_client(self) -> openai.AsyncOpenAI:
        openai = _sdk()
        kwargs, client_kwargs = self.client_options()
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
        return openai.AsyncOpenAI(**kwargs)

    def chat_body(self, request: LMRequest) -> dict[str, Any]:
        """The JSON body of ``POST /chat/completions`` for a checked ``request`` (also a batch line's)."""
        self.check(request)
        return self._body(request)

    def _body(self, request: LMRequest) -> dict[str, Any]:
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

    async def _complete(self, request: LMRequest, clock: RequestClock, exchange: Exchange) -> LMResponse:
        limiter = self.limiter
        tokens = estimate_tokens(request) if limiter is not None and limiter.tracks_tokens else 0
        post = self._post_direct if self.transport == "direct" else self._post_sdk
        body = self._body(request)
        data = await self._exchange(tokens, clock, exchange, lambda mine: post(body, mine))
        raw = http.decode_json_object(
            data,
            where=self.identity(),
            backend=self.spec,
            expected="a JSON chat.completion object",
            scrubber=self.scrubber,
        )
        return self._response(request, raw)

    async def _post_sdk(self, body: dict[str, Any], exchange: Exchange) -> bytes:
        import httpx  # a core dependency: for its Response the SDK returns the raw answer (with rate limits)

        client = self.sdk_client()

        def start() -> Any:
            return client.post(
                "/chat/completions",
                body=body,
                cast_to=httpx.Response,
                options={"headers": {"X-Stainless-Raw-Response": "stream"}, "follow_redirects": False},
            )

        return await self._sdk_body(start, exchange, lambda r: r.aiter_bytes(), lambda r: r.aclose())

    async def _post_direct(self, body: dict[str, Any], exchange: Exchange) -> bytes:
        loop = asyncio.get_running_loop()
        if self._session is None or self._session_loop is not loop:
            self._session = _direct_session(self.timeout, self._api_key.get_secret_value())
            self._session_loop = loop
            self._session_keeper = loop.create_task(_close_when_its_loop_ends(self._session))
        url = f"{self.base_url or 'https://api.openai.com/v1'}/chat/completions"
        phase: Literal["answer", "body"] = "answer"
        try:
            async with _post(self._session, url, body) as (status, headers, chunks):
                exchange.status, exchange.headers = status, headers
                phase = "body"
                if status >= 300 or status < 200:
                    raise self.status_error(status, headers, await http.read_head(chunks, self.scrubber))
                return await self.read_body(chunks, exchange)
        except MitigateError:
            raise
        except Exception as exc:
            if not http.is_client_failure(exc):
                raise
            raise http.transport_error(
                exc,
                where=self.identity(),
                backend=self.spec,
                timeout=self.read_timeout,
                phase=phase,
                scrubber=self.scrubber,
            ) from exc

    def parse_chat_completion(
        self, request: LMRequest, raw: dict[str, Any], *, batch: bool = False
    ) -> LMResponse:
        """A chat.completion JSON object (a batch result's body) as a scrubbed :class:`LMResponse`."""
        try:
            response = self.scrubber.response(self._response(request, raw))
        except MitigateError as exc:
            raise self.scrubber.error(exc)  # noqa: B904 - the same error, scrubbed
        if not batch:
            return response
        return response.model_copy(update={"cost_usd": self.cost_of(response.usage, batch=True)})

    def _response(self, request: LMRequest, raw: dict[str, Any]) -> LMResponse:
        """A chat.completion object as an :class:`LMResponse`; a malformed field is a typed LMCallError."""
        where = self.identity()
        fields = AnswerFields(where, self.spec, self.scrubber)
        expected = "a chat.completion object with choices[].message.content"
        found = raw.get("choices")
        if not isinstance(found, list) or not found:
            kind = "no choices" if found in (None, []) else "choices that are not a list"
            got = self.scrubber.clip(str(raw), 160)
            raise http.malformed(where, kind, f"{expected}; got {got!r}", backend=self.spec)
        if not all(isinstance(c, dict) for c in found):
            raise http.malformed(where, "choices that are not objects", expected, backend=self.spec)
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
            content = _content_text(message.get("content")) if isinstance(message, dict) else None
            if content is None:
                kind = _no_text(message)
                got = self.scrubber.clip(str(rc), 160)
                raise http.malformed(where, kind, f"{expected} as text; got {got!r}", backend=self.spec)
            finish = fields.optional_text(rc.get("finish_reason"), "choices[].finish_reason")
            choices.append(Choice(text=content, logprobs=logprobs, finish_reason=finish))
        usage = fields.openai_usage(raw.get("usage"))
        model = fields.optional_text(raw.get("model"), "model")
        return LMResponse(
            choices=tuple(choices), usage=usage, model=model or self.model, cost_usd=self.cost_of(usage)
        )

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

        def entry(value: Any, at: str) -> tuple[str, float]:  # an entry's token and logprob
            found = fields.mapping(value, at)
            token = fields.text(found.get("token"), f"{at}.token")
            return token, fields.logprob(found.get("logprob"), f"{at}.logprob")

        at = "choices[].logprobs.content[]"
        out = []
        for t in content:
            top = fields.mapping(t, at).get("top_logprobs") or []
            if not isinstance(top, list):
                raise fields.error(f"{at}.top_logprobs", "a list", top)
            alternatives = tuple(entry(a, f"{at}.top_logprobs[]") for a in top)
            token, logprob = entry(t, at)
            out.append(TokenLogprob(token=token, logprob=logprob, top=alternatives))
        return tuple(out)

    async def aclose(self) -> None:
        """Close the HTTP clients."""
        await super().aclose()
        if self._session is not None:
            session, self._session = self._session, None
            with contextlib.suppress(RuntimeError):  # its event loop is gone
                await _close(session)


_TEXT_PARTS = frozenset({"text", "output_text"})
"""The types of a content part that hold answer text (others, an image or audio, hold none)."""


def _content_text(content: Any) -> str | None:
    """A message's content as text: a string, or a list of parts (``{"type": "text", "text": ...}`` or bare
    strings) with their text parts joined; None when it is neither or holds no text part."""
    if isinstance(content, str):
        return content
    if not isinstance(content, list):
        return None
    texts = [
        part if isinstance(part, str) else part.get("text")
        for part in content
        if isinstance(part, str) or (isinstance(part, dict) and part.get("type") in _TEXT_PARTS)
    ]
    if not texts or not all(isinstance(t, str) for t in texts):
        return None
    return "".join(t for t in texts if isinstance(t, str))


def _no_text(message: Any) -> str:
    """What a choice whose message holds no answer text came with (the malformed answer's kind)."""
    if not isinstance(message, dict):
        return "a choice without a message"
    content = message.get("content")
    if content is None:
        return "content: null"
    if isinstance(content, list):
        return "content parts without a text part"
    return f"content that is a JSON {type(content).__name__}, not text"


def _direct_session(wait: float | None, key: str) -> Any:
    """The direct transport's client: an aiohttp session when aiohttp is installed, else an httpx one.

    ``wait`` bounds connecting and each read (None: nothing but the deadline, the cheapest hot path); no
    cookie is kept (see :func:`mitigate.lm._http.no_cookies`), no redirect followed, no connection limit.
    """
    headers = {"Authorization": f"Bearer {key}"}
    if importlib.util.find_spec("aiohttp") is not None:
        import aiohttp

        return aiohttp.ClientSession(
            timeout=aiohttp.ClientTimeout(total=None, connect=None, sock_connect=wait, sock_read=wait),
            connector=aiohttp.TCPConnector(limit=0),
            cookie_jar=aiohttp.DummyCookieJar(),
            headers=headers,
        )
    import httpx

    return httpx.AsyncClient(
        timeout=httpx.Timeout(None, connect=wait, read=wait),
        limits=httpx.Limits(max_connections=None, max_keepalive_connections=None),
        cookies=http.no_cookies(),
        follow_redirects=False,
        headers=headers,
    )


@contextlib.asynccontextmanager
async def _post(session: Any, url: str, body: dict[str, Any]) -> AsyncIterator[tuple[int, Any, Any]]:
    """POST ``body`` with a direct-transport session: its status, headers and body chunks."""
    if hasattr(session, "stream"):  # httpx
        async with session.stream("POST", url, json=body) as resp:
            yield resp.status_code, resp.headers, resp.aiter_bytes()
    else:
        async with session.post(url, json=body, allow_redirects=False) as resp:
            yield resp.status, resp.headers, resp.content.iter_any()


async def _close_when_its_loop_ends(session: Any) -> None:
    """Close a direct-transport session when ``asyncio.run`` ends its loop."""
    try:
        await asyncio.Event().wait()
    finally:
        await _close(session)


async def _close(session: Any) -> None:
    await (session.aclose() if hasattr(session, "aclose") else session.close())
