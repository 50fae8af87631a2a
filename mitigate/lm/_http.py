"""The request budget and HTTP failures shared by the network backends.

The bounds on one request (:class:`Limits`), server URLs checked and stripped of credentials, HTTP statuses,
``Retry-After`` and client exceptions (aiohttp, httpx, the SDKs) mapped onto typed errors by what happened
(:func:`transport_error`; redirects refused), and an answer's body read within its size cap.
"""

from __future__ import annotations

import asyncio
import email.utils
import errno
import json
import math
import socket
import time
from collections.abc import AsyncIterator, Mapping
from typing import Any, Literal
from urllib.parse import urlsplit, urlunsplit

from pydantic import BaseModel, ConfigDict, Field

try:  # imported before it is needed: with no descriptor free, even an import fails
    import resource
except ImportError:  # pragma: no cover - Windows
    resource = None  # type: ignore[assignment]

from mitigate.errors import ConfigError, DataError, LMCallError, MitigateError, TransientLMError
from mitigate.lm._base import LMRequest
from mitigate.lm._scrub import NO_SECRETS, Scrubber, chain

DEFAULT_DEADLINE = 100.0
"""Seconds one request may spend on the server over all its attempts (see :class:`Limits`)."""
DEFAULT_MAX_RESPONSE_BYTES = 10_000_000
"""The largest answer body read (10 MB); reading stops past it."""
DEFAULT_MAX_PROMPT_CHARS = 400_000
"""The longest prompt sent, in characters (about 100,000 tokens); checked before sending."""
DEFAULT_MAX_SAMPLES = 128
"""The most samples (``n``) asked for in one request."""
RETRYABLE_STATUS = frozenset({408, 409, 429})


class Limits(BaseModel):
    """Bounds on every request of a network backend, each refused or cut in one line.

    ``deadline``: seconds the request may spend on the server over all its attempts (waits between them not
    counted), apart from the backend's ``timeout`` (the silence one attempt may wait through); past it the
    request fails with ``reason="deadline"``, not retried. ``max_response_bytes``: reading an answer stops
    past it. ``max_prompt_chars``: a longer prompt is refused before it is sent (a
    :class:`~mitigate.errors.DataError`, that item alone). ``max_samples``: a larger ``n`` is refused.
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
    """Refuse, before sending, a request asking for more samples or a longer prompt than ``limits`` allow."""
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


def check_timeout(timeout: float, *, backend: str) -> float:
    """``timeout`` as a float when it is a finite number of seconds > 0; ConfigError otherwise."""
    if isinstance(timeout, bool) or not isinstance(timeout, int | float) or not 0 < timeout < float("inf"):
        raise ConfigError(
            f"The 'timeout' parameter of {backend} must be a float > 0 (seconds). Got {timeout!r} instead.",
            backend=backend,
        )
    return float(timeout)


def public_url(url: str) -> str:
    """``url`` without user info, query or fragment (they may carry credentials)."""
    parts = urlsplit(url)
    host = parts.hostname or ""
    if parts.port is not None:
        host = f"{host}:{parts.port}"
    return urlunsplit((parts.scheme, host, parts.path.rstrip("/"), "", ""))


def server_identity(spec: str, url: str | None) -> str:
    """A backend's identity: its spec, plus ``@<url>`` (credentials stripped) for a server of its own."""
    return f"{spec}@{public_url(url)}" if url else spec


def check_base_url(url: str, *, backend: str) -> str:
    """``url`` without a trailing slash when it is an http(s) URL with a host; ConfigError otherwise."""

    def bad(expected: str, got: str) -> ConfigError:
        return ConfigError(f"expected the base URL of {backend} {expected}; got {got}", backend=backend)

    if not isinstance(url, str):
        raise bad("as a str", type(url).__name__)
    try:
        shown = public_url(url)
    except ValueError:  # a port that is not a number: the URL as given, minus anything before an '@'
        shown = url.rpartition("@")[2]
    form = "as http(s)://host[:port][/path]"
    if any(ord(ch) <= 32 or ord(ch) == 127 for ch in url):
        raise bad(f"{form} without spaces or control characters", repr(shown))
    try:
        parts = urlsplit(url)
        parts.port  # noqa: B018 - raises ValueError for a port that is not a number in 0-65535
    except ValueError as exc:
        raise bad(form, f"{shown!r} ({exc})") from None
    if parts.username is not None or parts.password is not None:
        raise bad(
            "without credentials (user:password@)",
            f"{shown!r} with them: they are not sent; pass the key through the API key variable instead",
        )
    if parts.scheme.lower() not in ("http", "https") or not parts.hostname:
        raise bad(f"{form}, e.g. http://localhost:8000/v1", repr(shown))
    return url.rstrip("/")


def no_cookies() -> Any:
    """A cookie jar that keeps nothing (a cookie kept from a hostile answer could break later requests)."""
    import http.cookiejar  # here: it loads urllib.request, which the direct transport never needs

    return http.cookiejar.CookieJar(policy=http.cookiejar.DefaultCookiePolicy(allowed_domains=[]))


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


def _host_of(url: str, scrubber: Scrubber) -> str:
    """The scheme and host of ``url`` (as written: a key in it is scrubbed in its own case)."""
    try:
        parts = urlsplit(url)
        if parts.hostname:
            return scrubber.clip(f"{parts.scheme}://{parts.netloc.rpartition('@')[2]}", 200)
    except ValueError:
        pass
    return repr(scrubber.clip(url, 80))


def http_error(
    where: str,
    status: int,
    headers: Mapping[str, str] | None,
    detail: str,
    *,
    api_key_env: str,
    backend: str,
    scrubber: Scrubber = NO_SECRETS,
) -> LMCallError:
    """The error of a status other than 2xx: TransientLMError when retryable, LMCallError naming both servers
    for a redirect, a malformed answer outside 100-599, else LMCallError (``detail`` scrubbed by the caller,
    the Location header here)."""
    if not 100 <= status <= 599:
        return not_http(
            where,
            "a status line that is not HTTP",
            "an HTTP status from 100 to 599",
            str(status),
            backend=backend,
        )
    if 300 <= status <= 399:
        location = _header(headers, "location")  # scrubbed before it is parsed: a key may hold a '/'
        to = f"to {_host_of(scrubber.text(location), scrubber)}" if location else "without a Location"
        url = where.partition("@")[2]
        origin = _host_of(url, scrubber) if url else "the provider's own API"
        return LMCallError(
            f"{where} answered HTTP {status}, a redirect {to}; API calls are not redirected (an answer from "
            f"another server would be stored under this one's name): expected an answer from {origin}; "
            "point --base-url at the server that answers",
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
"""Where an exchange was when a client exception came: waiting for the ``answer`` or reading its ``body``."""

_CLIENT_MODULES = frozenset(
    "aiohttp httpx httpcore h11 h2 openai anthropic litellm ssl asyncio socket".split()
)
_NOT_HTTP = (  # words in a client's message -> (what came, what was expected); tried in this order
    (
        "status line|expected http/|invalid status|bad status|status code",
        "a status line that is not HTTP",
        "'HTTP/1.1 <status> <reason>'",
    ),
    (
        "decompress|decodingerror|content-encoding|content encoding|can not decode",
        "a body that does not decode as its Content-Encoding says",
        "a body in the encoding its headers name",
    ),
    (
        "chunk size|chunk header|chunk extension|bad content-length|in content-length|transfer-encoding can't"
        "|invalid chunk|illegal chunk|content-length can't",
        "a body framing (Content-Length or chunked encoding) that is not HTTP",
        "a valid Content-Length or chunked body",
    ),
)
_NOT_HTTP_HEADERS = (
    "receive buffer too long|got more than|too many headers|header|line too long|malformed data"
    "|illegal request line|bad http message"
)
_SHORT_BODY = (
    "not enough data|complete message body|payload is not completed|incomplete chunked|incompleteread"
)
_NO_DESCRIPTOR = frozenset({errno.EMFILE, errno.ENFILE})
_CLOSED = (
    ConnectionResetError | ConnectionAbortedError | BrokenPipeError | EOFError | asyncio.IncompleteReadError
)


def _said(exc: BaseException, scrubber: Scrubber) -> str:
    try:
        text = str(exc)
    except Exception:  # an exception whose str() fails still has a type
        text = ""
    text = scrubber.clip(" ".join(text.split()), 300)
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


def _descriptors(code: int) -> str:
    """Why no descriptor was free, naming the limit: the process's (EMFILE) or the system's (ENFILE)."""
    if code == errno.ENFILE:
        return (
            "the system's table of open files is full (ENFILE); close other programs or lower --concurrency"
        )
    try:
        soft = resource.getrlimit(resource.RLIMIT_NOFILE)[0]
        limit = "no limit" if soft == resource.RLIM_INFINITY else f"at most {soft:,}"
    except (AttributeError, OSError, ValueError):  # a platform without resource limits
        limit = "no more"
    return (
        f"this process has every file descriptor it may open in use (EMFILE: its descriptor limit, "
        f"RLIMIT_NOFILE, allows {limit} open files); raise the limit (ulimit -n 4096) or lower --concurrency"
    )


def is_client_failure(exc: BaseException) -> bool:
    """Whether ``exc`` (or its cause) comes from the HTTP client or the network, not a bug."""
    for e in chain(exc):
        if isinstance(e, OSError | TimeoutError | EOFError | asyncio.IncompleteReadError):
            return True
        module = type(e).__module__.split(".")[0].rstrip("0123456789")  # httpx2, httpcore2: the same clients
        programming = TypeError | AttributeError | NameError | AssertionError
        if module in _CLIENT_MODULES and not isinstance(e, programming):
            return True
    return False


def transport_error(
    exc: BaseException,
    *,
    where: str,
    backend: str,
    timeout: float,
    phase: Phase,
    scrubber: Scrubber = NO_SECRETS,
) -> MitigateError:
    """What a client exception says happened, as one typed error naming the server: ``reason`` "timeout",
    "malformed" (not HTTP: not retried), "cut" (the body broken off), "closed", "connection", or
    "descriptors" (this process had no file descriptor free: its limit named); what the client said quoted
    scrubbed, then cut."""
    chained = chain(exc)
    full = next((e.errno for e in chained if isinstance(e, OSError) and e.errno in _NO_DESCRIPTOR), None)
    if full is not None:  # the client's own limit, not the server's doing
        return TransientLMError(
            f"{where} got no connection: {_descriptors(full)}", backend=backend, reason="descriptors"
        )
    said = [(e, _said(e, scrubber)) for e in chained]

    def first(keys: str) -> str | None:
        return next((text for _, text in said if any(k in text.lower() for k in keys.split("|"))), None)

    def kind(test: Any) -> str | None:
        return next((text for e, text in said if test(e)), None)

    def transient(what: str, reason: str) -> TransientLMError:
        return TransientLMError(f"{where} {what}", backend=backend, reason=reason)

    for keys, what, expected in _NOT_HTTP:
        got = first(keys)
        if got is not None:
            return not_http(where, what, expected, got, backend=backend)
    short = first(_SHORT_BODY)
    if short is not None:
        return transient(
            f"connection closed mid-answer: the body was shorter than declared (retryable): {short}", "cut"
        )
    headers = first(_NOT_HTTP_HEADERS)
    if headers is not None:
        return not_http(
            where,
            "headers that are not HTTP or too large",
            "HTTP headers within the client's limits",
            headers,
            backend=backend,
        )
    protocol = kind(
        lambda e: (
            "ProtocolError" in type(e).__name__
            or type(e).__name__ in ("ClientResponseError", "BadHttpMessage", "HttpProcessingError")
        )
    )
    closed = first("disconnected|closed|reset|broken pipe|eof") or kind(
        lambda e: isinstance(e, _CLOSED) or type(e).__name__ == "ReadError"
    )
    timed = kind(lambda e: isinstance(e, TimeoutError) or "Timeout" in type(e).__name__)
    if protocol is not None and closed is None and timed is None:
        return not_http(
            where, "an answer that is not HTTP", "an HTTP/1.1 response", protocol, backend=backend
        )
    cut = "connection closed mid-answer, before the whole body came (retryable): "
    if phase == "body" and closed is not None:
        return transient(cut + closed, "cut")
    refused = kind(
        lambda e: (
            isinstance(e, ConnectionRefusedError | socket.gaierror)
            or "Connector" in type(e).__name__
            or type(e).__name__ == "ConnectError"
        )
    )
    if refused is not None:
        return transient(f"connection failed (retryable): {refused}", "connection")
    if closed is not None:
        return transient(
            f"connection closed by the server before a whole answer (retryable): {closed}", "closed"
        )
    if timed is not None:  # after the causes an SDK may report as a timeout (a refused or closed connection)
        return transient(f"sent nothing for {timeout:g} s (--timeout; retryable): {timed}", "timeout")
    if phase == "body":
        return transient(cut + said[0][1], "cut")
    os_error = kind(lambda e: isinstance(e, OSError))
    if os_error is not None:
        return transient(f"connection failed (retryable): {os_error}", "connection")
    return LMCallError(f"{where} failed: {said[0][1]}", backend=backend)


def not_http(where: str, what: str, expected: str, got: str, *, backend: str) -> LMCallError:
    """The error of an answer whose status line or headers are not HTTP (not retried: it comes again)."""
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
    timeout: float,
    backend: str,
    api_key_env: str,
    sdk: Any,
    phase: Phase = "answer",
    scrubber: Scrubber = NO_SECRETS,
) -> MitigateError:
    """An SDK's exception (``sdk``: the ``openai`` or ``anthropic`` module) as a typed error, through
    :func:`http_error` or :func:`transport_error`."""
    detail = scrubber.text(str(exc))
    if isinstance(exc, sdk.APIStatusError):
        headers = getattr(getattr(exc, "response", None), "headers", None)
        return http_error(
            where,
            exc.status_code,
            headers,
            detail,
            api_key_env=api_key_env,
            backend=backend,
            scrubber=scrubber,
        )
    if isinstance(exc, sdk.APITimeoutError | sdk.APIConnectionError) or is_client_failure(exc):
        return transport_error(
            exc, where=where, backend=backend, timeout=timeout, phase=phase, scrubber=scrubber
        )
    return LMCallError(f"{where} failed: {type(exc).__name__}: {detail}", backend=backend)


def _seconds(value: str | None, unit: float) -> float | None:
    try:
        wait = float(value or "") / unit
    except ValueError:
        return None
    return None if math.isnan(wait) else max(0.0, wait)


def parse_retry_after(headers: Mapping[str, str] | None) -> float | None:
    """Seconds the server asked us to wait (``retry-after-ms`` or ``Retry-After``); None if absent."""
    if not headers:
        return None
    lowered = {str(k).lower(): str(v) for k, v in headers.items()}
    value = lowered.get("retry-after")
    wait = _seconds(lowered.get("retry-after-ms"), 1000.0)
    if wait is None:
        wait = _seconds(value, 1.0)
    if wait is not None or value is None:
        return wait
    try:
        when = email.utils.parsedate_to_datetime(value)
        return max(0.0, when.timestamp() - time.time())
    except (TypeError, ValueError, OverflowError, IndexError, OSError):
        return None


def deadline_error(
    where: str, deadline: float, *, backend: str, got: int = 0, attempts: int = 1
) -> LMCallError:
    """The error of a request whose attempts together passed its deadline (not retried)."""
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
    """What one exchange with a server showed so far: ``status``, ``headers``, body bytes ``got``."""

    __slots__ = ("got", "headers", "status")

    def __init__(self) -> None:
        self.status = self.got = 0
        self.headers: Mapping[str, str] | None = None


async def counted(chunks: AsyncIterator[bytes], exchange: Exchange) -> AsyncIterator[bytes]:
    async for chunk in chunks:
        exchange.got += len(chunk)
        yield chunk


async def read_head(chunks: AsyncIterator[bytes], scrubber: Scrubber, limit: int = 4096) -> str:
    """The first ``limit`` characters of a body (an error answer's, to quote it) as text, scrubbed before it
    is cut; the rest is not read."""
    parts: list[bytes] = []
    size = 0
    wanted = limit + scrubber.reach
    async for chunk in chunks:
        parts.append(chunk)
        size += len(chunk)
        if size > wanted:
            break
    text = b"".join(parts)[:wanted].decode("utf-8", "replace")
    return scrubber.clip(text, limit, cut=size > wanted)


def malformed(where: str, kind: str, detail: str, *, backend: str) -> LMCallError:
    """The error of an HTTP 200 whose body is no answer; ``kind`` groups repeats for the circuit breaker."""
    return LMCallError(
        f"{where} answered HTTP 200 with {kind}; expected {detail}",
        backend=backend,
        reason="malformed",
        kind=kind,
    )


def _looks(data: bytes, scrubber: Scrubber) -> str:
    """The first characters of a body, scrubbed then cut, on one line."""
    wanted = 4 * (120 + scrubber.reach)  # bytes enough for that many characters
    text = data[:wanted].decode("utf-8", "replace")
    return repr(" ".join(scrubber.clip(text, 120, cut=len(data) > wanted).split()))


async def read_capped(chunks: AsyncIterator[bytes], cap: int, *, where: str, backend: str) -> bytes:
    """The body from ``chunks``; reading stops past ``cap`` bytes with a non-retryable LMCallError."""
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


def decode_json_object(
    data: bytes, *, where: str, backend: str, expected: str, scrubber: Scrubber = NO_SECRETS
) -> dict[str, Any]:
    """A 200 body as a JSON object; a typed ``malformed`` LMCallError naming what came instead."""
    stripped = data.strip()
    if not stripped:
        raise malformed(where, "an empty body", expected, backend=backend)

    def refused(kind: str) -> LMCallError:
        return malformed(where, kind, f"{expected}; got {_looks(stripped, scrubber)}", backend=backend)

    if stripped[:1] == b"<":
        raise refused("HTML or XML")
    try:
        value = json.loads(stripped)
    except RecursionError:
        raise malformed(where, "JSON nested too deep", expected, backend=backend) from None
    except (ValueError, UnicodeDecodeError):
        raise refused("truncated or invalid JSON") from None
    if not isinstance(value, dict):
        raise refused(f"a JSON {type(value).__name__}")
    return value
