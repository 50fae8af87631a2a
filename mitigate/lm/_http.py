"""HTTP failure handling shared by the provider backends: statuses worth retrying, ``Retry-After``,
client exceptions (aiohttp, httpx, the SDKs) mapped onto :class:`~mitigate.errors.TransientLMError` /
:class:`~mitigate.errors.LMCallError` by what happened (see :func:`transport_error`), redirects refused,
and URLs stripped of credentials before they appear in a message.
"""

from __future__ import annotations

import asyncio
import email.utils
import json
import math
import socket
import time
from collections.abc import AsyncIterator, Mapping
from typing import Any, Literal
from urllib.parse import urlsplit, urlunsplit

from pydantic import BaseModel, ConfigDict, Field

from mitigate.errors import ConfigError, DataError, LMCallError, MitigateError, TransientLMError
from mitigate.lm._base import LMRequest
from mitigate.lm._defaults import (  # the defaults live apart so the command line shows them cheaply
    DEFAULT_DEADLINE,
    DEFAULT_MAX_PROMPT_CHARS,
    DEFAULT_MAX_RESPONSE_BYTES,
    DEFAULT_MAX_SAMPLES,
)
from mitigate.lm._scrub import PLACEHOLDER_KEY as PLACEHOLDER_KEY  # re-exported: the backends send it

RETRYABLE_STATUS = frozenset({408, 409, 429})


def public_url(url: str) -> str:
    """``url`` without user info, query or fragment (they may carry credentials)."""
    parts = urlsplit(url)
    host = parts.hostname or ""
    if parts.port is not None:
        host = f"{host}:{parts.port}"
    return urlunsplit((parts.scheme, host, parts.path.rstrip("/"), "", ""))


def check_base_url(url: str, *, backend: str) -> str:
    """``url`` without a trailing slash when it is an http(s) URL with a host; ConfigError otherwise.

    A malformed URL can never start working, so it is refused when the backend is built instead
    of being retried as a connection failure on every call.
    """
    if not isinstance(url, str):
        raise ConfigError(
            f"expected the base URL of {backend} as a str; got {type(url).__name__}", backend=backend
        )
    try:
        shown = public_url(url)
    except ValueError:  # a port that is not a number: the URL as given, minus anything before an '@'
        shown = url.rpartition("@")[2]
    if any(ord(ch) <= 32 or ord(ch) == 127 for ch in url):
        raise ConfigError(
            f"expected the base URL of {backend} as http(s)://host[:port][/path] without spaces or control "
            f"characters; got {shown!r}",
            backend=backend,
        )
    try:
        parts = urlsplit(url)
        parts.port  # noqa: B018 - raises ValueError for a port that is not a number in 0-65535
    except ValueError as exc:
        raise ConfigError(
            f"expected the base URL of {backend} as http(s)://host[:port][/path]; got {shown!r} ({exc})",
            backend=backend,
        ) from None
    if parts.username is not None or parts.password is not None:
        raise ConfigError(
            f"expected the base URL of {backend} without credentials (user:password@); got {shown!r} with "
            "them: they are not sent; pass the key through the API key variable instead",
            backend=backend,
        )
    if parts.scheme.lower() not in ("http", "https") or not parts.hostname:
        raise ConfigError(
            f"expected the base URL of {backend} as http(s)://host[:port][/path], e.g. "
            f"http://localhost:8000/v1; got {shown!r}",
            backend=backend,
        )
    return url.rstrip("/")


def no_cookies() -> Any:
    """A cookie jar (``http.cookiejar.CookieJar``) that keeps nothing, for the SDKs' HTTP clients: an API call
    needs no cookie, and one kept from a hostile answer (a value the client cannot encode) would break every
    later request of the backend."""
    # here: it loads urllib.request, which the direct transport never needs (a faster start)
    import http.cookiejar

    return http.cookiejar.CookieJar(policy=http.cookiejar.DefaultCookiePolicy(allowed_domains=[]))


def check_timeout(timeout: float, *, backend: str) -> float:
    """``timeout`` as a float when it is a finite number of seconds > 0; ConfigError otherwise."""
    if isinstance(timeout, bool) or not isinstance(timeout, int | float) or not 0 < timeout < float("inf"):
        raise ConfigError(
            f"The 'timeout' parameter of {backend} must be a float > 0 (seconds). Got {timeout!r} instead.",
            backend=backend,
        )
    return float(timeout)


def is_retryable_status(status: int) -> bool:
    """True for HTTP statuses worth retrying: 408, 409, 429 and every 5xx."""
    return status in RETRYABLE_STATUS or 500 <= status <= 599


def _header(headers: Mapping[str, str] | None, name: str) -> str | None:
    if not headers:
        return None
    try:
        return next((str(v) for k, v in headers.items() if str(k).lower() == name), None)
    except (TypeError, ValueError):
        return None


def _host_of(url: str) -> str:
    """The scheme, host and port of ``url`` (credentials, path and query dropped); the text itself, cut, if it
    is not a URL."""
    try:
        parts = urlsplit(url)
        if parts.hostname:
            port = f":{parts.port}" if parts.port is not None else ""
            return f"{parts.scheme}://{parts.hostname}{port}"
    except ValueError:
        pass
    return repr(url[:80])


def _origin(where: str) -> str:
    """The server of a backend identity (``openai:m@http://host:port/v1``): ``http://host:port``."""
    url = where.partition("@")[2]
    return _host_of(url) if url else "the provider's own API"


def http_error(
    where: str, status: int, headers: Mapping[str, str] | None, detail: str, *, api_key_env: str, backend: str
) -> LMCallError:
    """The error for an HTTP status other than 2xx: retryable statuses give TransientLMError (with the
    server's Retry-After), a redirect LMCallError naming both servers (API calls are never redirected),
    a status outside 100-599 a malformed answer, others LMCallError (with a hint to check the key on
    401/403)."""
    if not 100 <= status <= 599:
        return not_http(
            where,
            "a status line that is not HTTP",
            "an HTTP status from 100 to 599",
            str(status),
            backend=backend,
        )
    if 300 <= status <= 399:
        location = _header(headers, "location")
        to = f"to {_host_of(location)}" if location else "without a Location"
        return LMCallError(
            f"{where} answered HTTP {status}, a redirect {to}; API calls are not redirected (an answer from "
            "another server would be stored under this one's name): expected an answer from "
            f"{_origin(where)}; point --base-url "
            "at the server that answers",
            status=status,
            backend=backend,
            reason="redirect",
        )
    if is_retryable_status(status):
        return TransientLMError(
            f"{where} failed with HTTP {status} (retryable): {detail}",
            status=status,
            retry_after=parse_retry_after(headers),
            backend=backend,
        )
    hint = f"; check the key in ${api_key_env}" if status in (401, 403) else ""
    return LMCallError(f"{where} failed with HTTP {status}{hint}: {detail}", status=status, backend=backend)


Phase = Literal["answer", "body"]
"""Where an exchange was when a client exception came: waiting for the ``answer`` (connecting, sending,
reading the status line and headers) or reading its ``body``."""

_CLIENT_MODULES = (
    "aiohttp",
    "httpx",
    "httpcore",
    "h11",
    "h2",
    "openai",
    "anthropic",
    "litellm",
    "ssl",
    "asyncio",
    "socket",
)
_TIMEOUT_NAMES = ("Timeout",)
_NOT_HTTP_STATUS = ("status line", "expected http/", "invalid status", "bad status", "status code")
_NOT_DECODABLE = ("decompress", "decodingerror", "content-encoding", "content encoding", "can not decode")
_NOT_HTTP_FRAMING = (
    "chunk size",
    "chunk header",
    "chunk extension",
    "bad content-length",
    "in content-length",
    "transfer-encoding can't",
    "invalid chunk",
    "illegal chunk",
    "content-length can't",
)
_NOT_HTTP_HEADERS = (
    "receive buffer too long",
    "got more than",
    "too many headers",
    "header",
    "line too long",
    "malformed data",
    "illegal request line",
    "bad http message",
)
_SHORT_BODY = (
    "not enough data",
    "complete message body",
    "payload is not completed",
    "incomplete chunked",
    "incompleteread",
)


def _chain(exc: BaseException) -> list[BaseException]:
    out: list[BaseException] = []
    seen: BaseException | None = exc
    while seen is not None and len(out) < 8 and seen not in out:
        out.append(seen)
        seen = seen.__cause__ or seen.__context__
    return out


def _said(exc: BaseException) -> str:
    try:
        text = str(exc)
    except Exception:  # an exception whose str() fails still has a type
        text = ""
    text = " ".join(text.split())
    return f"{type(exc).__name__}: {text[:300]}" if text else type(exc).__name__


def is_client_failure(exc: BaseException) -> bool:
    """Whether ``exc`` (or an error it was raised from) comes from the HTTP client or the network, not from a
    bug."""
    for e in _chain(exc):
        if isinstance(e, OSError | TimeoutError | EOFError | asyncio.IncompleteReadError):
            return True
        module = type(e).__module__.split(".")[0].rstrip("0123456789")  # httpx2, httpcore2: the same clients
        programming = TypeError | AttributeError | NameError | AssertionError
        if module in _CLIENT_MODULES and not isinstance(e, programming):
            return True
    return False


def transport_error(
    exc: BaseException, *, where: str, backend: str, timeout: float, phase: Phase
) -> MitigateError:
    """What a client exception says happened, as one typed error naming the server.

    * nothing came for ``timeout`` seconds: TransientLMError, ``reason="timeout"``;
    * a status line or headers that are not HTTP (garbage, a header over the client's limit, too many
      headers): LMCallError, ``reason="malformed"`` (the same server answers the same way again);
    * a body shorter than its Content-Length, or the connection closed or reset while the body was read:
      TransientLMError, ``reason="cut"`` (the server answered, then broke off: retried like a 5xx);
    * the connection closed or reset before any answer: TransientLMError, ``reason="closed"``;
    * a connection that could not be made: TransientLMError, ``reason="connection"``;
    * anything else from the client: LMCallError.
    """
    chain = _chain(exc)
    said = [(e, _said(e)) for e in chain]

    def first(*keys: str) -> str | None:
        return next((text for _, text in said if any(k in text.lower() for k in keys)), None)

    status_line = first(*_NOT_HTTP_STATUS)
    if status_line is not None:
        return not_http(
            where,
            "a status line that is not HTTP",
            "'HTTP/1.1 <status> <reason>'",
            status_line,
            backend=backend,
        )
    undecodable = first(*_NOT_DECODABLE)
    if undecodable is not None:
        return not_http(
            where,
            "a body that does not decode as its Content-Encoding says",
            "a body in the encoding its headers name",
            undecodable,
            backend=backend,
        )
    framing = first(*_NOT_HTTP_FRAMING)
    if framing is not None:
        return not_http(
            where,
            "a body framing (Content-Length or chunked encoding) that is not HTTP",
            "a valid Content-Length or chunked body",
            framing,
            backend=backend,
        )
    short = first(*_SHORT_BODY)
    if short is not None:
        return TransientLMError(
            f"{where} connection closed mid-answer: the body was shorter than declared (retryable): {short}",
            backend=backend,
            reason="cut",
        )
    headers = first(*_NOT_HTTP_HEADERS)
    if headers is not None:
        return not_http(
            where,
            "headers that are not HTTP or too large",
            "HTTP headers within the client's limits",
            headers,
            backend=backend,
        )
    protocol = next(
        (
            text
            for e, text in said
            if "ProtocolError" in type(e).__name__
            or type(e).__name__ in ("ClientResponseError", "BadHttpMessage", "HttpProcessingError")
        ),
        None,
    )
    closed = first("disconnected", "closed", "reset", "broken pipe", "eof") or next(
        (
            text
            for e, text in said
            if isinstance(
                e,
                ConnectionResetError
                | ConnectionAbortedError
                | BrokenPipeError
                | EOFError
                | asyncio.IncompleteReadError,
            )
            or type(e).__name__ == "ReadError"
        ),
        None,
    )
    timed = next(
        (text for e, text in said if isinstance(e, TimeoutError) or "Timeout" in type(e).__name__), None
    )
    if protocol is not None and closed is None and timed is None:
        return not_http(
            where, "an answer that is not HTTP", "an HTTP/1.1 response", protocol, backend=backend
        )
    if phase == "body" and closed is not None:
        return TransientLMError(
            f"{where} connection closed mid-answer, before the whole body came (retryable): {closed}",
            backend=backend,
            reason="cut",
        )
    refused = next(
        (
            text
            for e, text in said
            if isinstance(e, ConnectionRefusedError | socket.gaierror)
            or "Connector" in type(e).__name__
            or type(e).__name__ == "ConnectError"
        ),
        None,
    )
    if refused is not None:
        return TransientLMError(
            f"{where} connection failed (retryable): {refused}", backend=backend, reason="connection"
        )
    if closed is not None:
        return TransientLMError(
            f"{where} connection closed by the server before a whole answer (retryable): {closed}",
            backend=backend,
            reason="closed",
        )
    if timed is not None:  # after the causes an SDK may report as a timeout (a refused or closed connection)
        return TransientLMError(
            f"{where} sent nothing for {timeout:g} s (--timeout; retryable): {timed}",
            backend=backend,
            reason="timeout",
        )
    if phase == "body":
        return TransientLMError(
            f"{where} connection closed mid-answer, before the whole body came (retryable): {said[0][1]}",
            backend=backend,
            reason="cut",
        )
    os_error = next((text for e, text in said if isinstance(e, OSError)), None)
    if os_error is not None:
        return TransientLMError(
            f"{where} connection failed (retryable): {os_error}", backend=backend, reason="connection"
        )
    return LMCallError(f"{where} failed: {said[0][1]}", backend=backend)


def not_http(where: str, what: str, expected: str, got: str, *, backend: str) -> LMCallError:
    """The error of an answer whose status line or headers are not HTTP (not retried: the server answers so
    again)."""
    return LMCallError(
        f"{where} answered with {what}; expected {expected}; got {got}",
        backend=backend,
        reason="malformed",
        kind=what,
    )


def sdk_error(
    exc: BaseException,
    *,
    where: str,
    detail: str,
    timeout: float,
    backend: str,
    api_key_env: str,
    status_error: type[BaseException],
    timeout_error: type[BaseException],
    connection_error: type[BaseException],
    phase: Phase = "answer",
) -> MitigateError:
    """Map a provider SDK's exception (or a client exception under it) to a typed error.

    The SDK's own classes are passed in, so the OpenAI and Anthropic backends share one
    mapping: HTTP status errors go through :func:`http_error`, everything the client or the
    network raised through :func:`transport_error`; anything else is an LMCallError.
    """
    if isinstance(exc, status_error):
        response = getattr(exc, "response", None)
        return http_error(
            where,
            exc.status_code,  # type: ignore[attr-defined]
            getattr(response, "headers", None),
            detail,
            api_key_env=api_key_env,
            backend=backend,
        )
    if isinstance(exc, timeout_error | connection_error) or is_client_failure(exc):
        return transport_error(exc, where=where, backend=backend, timeout=timeout, phase=phase)
    return LMCallError(f"{where} failed: {type(exc).__name__}: {detail}", backend=backend)


def parse_retry_after(headers: Mapping[str, str] | None) -> float | None:
    """Seconds the server asked us to wait, from ``retry-after-ms`` or ``Retry-After``; None if absent.

    ``Retry-After`` may be a number of seconds or an HTTP date.
    """
    if not headers:
        return None
    lowered = {str(k).lower(): str(v) for k, v in headers.items()}
    ms = lowered.get("retry-after-ms")
    if ms is not None:
        try:
            wait = float(ms) / 1000.0
        except ValueError:
            pass
        else:
            if not math.isnan(wait):
                return max(0.0, wait)
    value = lowered.get("retry-after")
    if value is None:
        return None
    try:
        wait = float(value)
    except ValueError:
        pass
    else:
        return None if math.isnan(wait) else max(0.0, wait)
    try:
        when = email.utils.parsedate_to_datetime(value)
        return max(0.0, when.timestamp() - time.time())
    except (TypeError, ValueError, OverflowError, IndexError, OSError):
        return None


# --------------------------------------------------------------------------- bounds on one request


class Limits(BaseModel):
    """Bounds on every request of a network backend, each refused or cut in one line.

    ``deadline``: seconds the request may spend on the server over all its attempts (connect to
    last byte of each; the waits between retries and for the rate limiter not counted; see
    :mod:`mitigate.lm._deadline`), apart from the backend's ``timeout`` (the silence one attempt
    may wait through); a server that never answers or trickles its answer fails the request with
    ``reason="deadline"`` once that is spent, not retried (a retry would hang just the same).
    ``max_response_bytes``: reading an answer stops past this many bytes. ``max_prompt_chars``:
    a longer prompt is refused before it is sent (:class:`~mitigate.errors.DataError`, that
    item alone). ``max_samples``: a larger ``n`` is refused before it is sent.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")
    deadline: float = Field(default=DEFAULT_DEADLINE, gt=0, allow_inf_nan=False)
    max_response_bytes: int = Field(default=DEFAULT_MAX_RESPONSE_BYTES, ge=1)
    max_prompt_chars: int = Field(default=DEFAULT_MAX_PROMPT_CHARS, ge=1)
    max_samples: int = Field(default=DEFAULT_MAX_SAMPLES, ge=1)


def check_limits(limits: Limits | None, *, backend: str) -> Limits:
    """``limits`` (the defaults for None); ConfigError when it is not a :class:`Limits`."""
    if limits is None:
        return Limits()
    if not isinstance(limits, Limits):
        raise ConfigError(
            f"expected limits= of {backend} as a mitigate.lm._http.Limits; got {type(limits).__name__}",
            backend=backend,
        )
    return limits


def check_request_size(request: LMRequest, limits: Limits, *, backend: str) -> None:
    """Refuse, before sending, a request asking for more samples or holding a longer prompt than ``limits``
    allow."""
    if request.n > limits.max_samples:
        raise ConfigError(
            f"{backend} was asked for n={request.n} samples in one request; expected at most "
            f"max_samples={limits.max_samples} (--max-samples)",
            backend=backend,
        )
    chars = sum(len(m.content) for m in request.messages)
    if chars > limits.max_prompt_chars:
        raise DataError(
            f"the prompt for {backend} is {chars:,} characters (about {chars // 4:,} tokens); expected at "
            f"most max_prompt_chars={limits.max_prompt_chars:,} (--max-prompt-chars); it was not sent",
            backend=backend,
        )


def deadline_error(
    where: str, deadline: float, *, backend: str, got: int = 0, attempts: int = 1
) -> LMCallError:
    """The error of a request whose attempts together did not finish within its deadline (not retried: a hung
    server stays hung); see :mod:`mitigate.lm._deadline`."""
    so_far = f"; {got:,} bytes of the answer had come" if got else "; no answer had come"
    over = f" over {attempts} attempts" if attempts > 1 else ""
    return LMCallError(
        f"{where} did not finish answering within the deadline of {deadline:g} s (time on the server, "
        f"connect to last byte{over}){so_far}: the server is hung or trickling its answer (--deadline "
        "sets the limit)",
        backend=backend,
        reason="deadline",
    )


class Exchange:
    """What one exchange with a server showed so far: its HTTP ``status`` (0 before one came), ``headers`` and
    the bytes of the body read (``got``); the rate limiter and the deadline's message read it."""

    __slots__ = ("got", "headers", "status")

    def __init__(self) -> None:
        self.status = 0
        self.headers: Mapping[str, str] | None = None
        self.got = 0


async def counted(chunks: AsyncIterator[bytes], exchange: Exchange) -> AsyncIterator[bytes]:
    """``chunks``, adding each one's size to ``exchange.got``."""
    async for chunk in chunks:
        exchange.got += len(chunk)
        yield chunk


ERROR_BODY_BYTES = 4096
"""How much of an error answer's body is read to quote it."""


async def read_head(chunks: AsyncIterator[bytes], limit: int = ERROR_BODY_BYTES) -> str:
    """The first ``limit`` bytes of a body as text (undecodable bytes replaced); the rest is not read."""
    parts: list[bytes] = []
    size = 0
    async for chunk in chunks:
        parts.append(chunk)
        size += len(chunk)
        if size >= limit:
            break
    return b"".join(parts)[:limit].decode("utf-8", "replace")


def malformed(where: str, kind: str, detail: str, *, backend: str) -> LMCallError:
    """The error of an HTTP 200 whose body is not a usable answer; ``kind`` groups repeats for the circuit
    breaker."""
    return LMCallError(
        f"{where} answered HTTP 200 with {kind}; expected {detail}",
        backend=backend,
        reason="malformed",
        kind=kind,
    )


def _looks(data: bytes) -> str:
    text = data[:120].decode("utf-8", "replace")
    return repr(" ".join(text.split()))


async def read_capped(chunks: AsyncIterator[bytes], cap: int, *, where: str, backend: str) -> bytes:
    """The body from ``chunks``; reading stops, with a non-retryable LMCallError, once it passes ``cap``
    bytes."""
    parts: list[bytes] = []
    size = 0
    async for chunk in chunks:
        size += len(chunk)
        if size > cap:
            raise LMCallError(
                f"{where} answered with a body of more than {cap:,} bytes; expected at most "
                f"max_response_bytes={cap:,} (--max-response-bytes); reading stopped there",
                backend=backend,
                reason="malformed",
                kind="an answer body over the size cap",
            )
        parts.append(chunk)
    return b"".join(parts)


def decode_json_object(data: bytes, *, where: str, backend: str, expected: str) -> dict[str, Any]:
    """A 200 body as a JSON object; a typed ``malformed`` LMCallError naming what came instead."""
    stripped = data.strip()
    if not stripped:
        raise malformed(where, "an empty body", expected, backend=backend)
    if stripped[:1] == b"<":
        raise malformed(where, "HTML or XML", f"{expected}; got {_looks(stripped)}", backend=backend)
    try:
        value = json.loads(stripped)
    except RecursionError:
        raise malformed(where, "JSON nested too deep", expected, backend=backend) from None
    except (ValueError, UnicodeDecodeError):
        raise malformed(
            where, "truncated or invalid JSON", f"{expected}; got {_looks(stripped)}", backend=backend
        ) from None
    if not isinstance(value, dict):
        raise malformed(
            where, f"a JSON {type(value).__name__}", f"{expected}; got {_looks(stripped)}", backend=backend
        )
    return value
