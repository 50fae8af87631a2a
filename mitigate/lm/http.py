"""HTTP failure handling shared by the provider backends: statuses worth retrying, ``Retry-After``,
SDK exceptions mapped onto :class:`~mitigate.errors.TransientLMError` / :class:`~mitigate.errors.LMCallError`,
and URLs stripped of credentials before they appear in a message.
"""

from __future__ import annotations

import email.utils
import json
import time
from collections.abc import AsyncIterator, Iterable, Mapping
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from pydantic import BaseModel, ConfigDict, Field

from mitigate.errors import ConfigError, DataError, LMCallError, TransientLMError
from mitigate.lm.base import LMRequest
from mitigate.lm.defaults import (  # the defaults live apart so the command line shows them cheaply
    DEFAULT_DEADLINE,
    DEFAULT_MAX_PROMPT_CHARS,
    DEFAULT_MAX_RESPONSE_BYTES,
    DEFAULT_MAX_SAMPLES,
)

PLACEHOLDER_KEY = "sk-no-key-required"
"""The key sent to an OpenAI-compatible server when none is configured (local servers need none)."""
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
        raise ConfigError(f"expected the base URL of {backend} as a str; got {type(url).__name__}", backend=backend)
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
            f"expected the base URL of {backend} without credentials (user:password@); got {shown!r} with them: "
            "they are not sent; pass the key through the API key variable instead",
            backend=backend,
        )
    if parts.scheme.lower() not in ("http", "https") or not parts.hostname:
        raise ConfigError(
            f"expected the base URL of {backend} as http(s)://host[:port][/path], e.g. http://localhost:8000/v1; "
            f"got {shown!r}",
            backend=backend,
        )
    return url.rstrip("/")


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
    return status in RETRYABLE_STATUS or status >= 500


def http_error(
    where: str, status: int, headers: Mapping[str, str] | None, detail: str, *, api_key_env: str, backend: str
) -> LMCallError:
    """The error for a failed HTTP call: retryable statuses give TransientLMError (with the
    server's Retry-After), others LMCallError (with a hint to check the key on 401/403)."""
    if is_retryable_status(status):
        return TransientLMError(
            f"{where} failed with HTTP {status} (retryable): {detail}",
            status=status,
            retry_after=parse_retry_after(headers),
            backend=backend,
        )
    hint = f"; check the key in ${api_key_env}" if status in (401, 403) else ""
    return LMCallError(f"{where} failed with HTTP {status}{hint}: {detail}", status=status, backend=backend)


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
) -> LMCallError:
    """Map a provider SDK's exception to TransientLMError (retryable) or LMCallError.

    The SDK's own classes are passed in, so the OpenAI and Anthropic backends share one
    mapping: HTTP status errors go through :func:`http_error`; refused connections,
    timeouts and other connection errors are retryable; anything else is not.
    """
    if isinstance(exc, status_error):
        response = getattr(exc, "response", None)
        return http_error(where, exc.status_code, getattr(response, "headers", None), detail,  # type: ignore[attr-defined]
                          api_key_env=api_key_env, backend=backend)
    closed = closed_connection(exc)
    if closed is not None:
        return TransientLMError(f"{where} connection closed by the server before a whole answer (retryable): "
                                f"{closed}", backend=backend, reason="closed")
    refused = network_failure(exc)
    if refused is not None:
        return TransientLMError(f"{where} connection failed (retryable): {refused}", backend=backend,
                                reason="connection")
    if isinstance(exc, timeout_error) or "Timeout" in type(exc).__name__:
        return TransientLMError(f"{where} timed out after {timeout:g} s (retryable)", backend=backend,
                                reason="timeout")
    if isinstance(exc, connection_error):
        return TransientLMError(f"{where} connection failed (retryable): {detail}", backend=backend,
                                reason="connection")
    return LMCallError(f"{where} failed: {type(exc).__name__}: {detail}", backend=backend)


_CLOSED_NAMES = ("ServerDisconnectedError", "RemoteProtocolError", "IncompleteRead", "ClientPayloadError",
                 "ReadError", "ConnectionResetError", "BrokenPipeError", "ClientOSError")


def closed_connection(exc: BaseException) -> str | None:
    """A short reason when ``exc`` (or an error it was raised from) is the server closing the connection."""
    seen: BaseException | None = exc
    for _ in range(8):
        if seen is None:
            return None
        if type(seen).__name__ in _CLOSED_NAMES:
            return f"{type(seen).__name__}: {seen}" if str(seen) else type(seen).__name__
        seen = seen.__cause__ or seen.__context__
    return None


def network_failure(exc: BaseException) -> str | None:
    """A short reason when ``exc`` (or an error it was raised from) is a refused/reset connection.

    SDK transports sometimes report a refused connection as a timeout; this finds the
    socket-level cause so the message says what happened. None when there is no such cause.
    """
    seen: BaseException | None = exc
    for _ in range(8):
        if seen is None:
            return None
        if isinstance(seen, ConnectionError) or (isinstance(seen, OSError) and not isinstance(seen, TimeoutError)):
            return f"{type(seen).__name__}: {seen}"
        seen = seen.__cause__ or seen.__context__
    return None


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
            return max(0.0, float(ms) / 1000.0)
        except ValueError:
            pass
    value = lowered.get("retry-after")
    if value is None:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(0.0, when.timestamp() - time.time())


# --------------------------------------------------------------------------- bounds on one request



class Limits(BaseModel):
    """Bounds on every request of a network backend, each refused or cut in one line.

    ``deadline``: seconds for the whole request (connect + the whole body), separate from the
    read timeout; a server that never answers or trickles its answer fails with
    ``reason="deadline"`` after that long, once (a retry would hang just the same).
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
        raise ConfigError(f"expected limits= of {backend} as a mitigate.lm.http.Limits; got {type(limits).__name__}",
                          backend=backend)
    return limits


def check_request_size(request: LMRequest, limits: Limits, *, backend: str) -> None:
    """Refuse, before sending, a request asking for more samples or holding a longer prompt than ``limits`` allow."""
    if request.n > limits.max_samples:
        raise ConfigError(
            f"{backend} was asked for n={request.n} samples in one request; expected at most "
            f"max_samples={limits.max_samples} (--max-samples)", backend=backend)
    chars = sum(len(m.content) for m in request.messages)
    if chars > limits.max_prompt_chars:
        raise DataError(
            f"the prompt for {backend} is {chars:,} characters (about {chars // 4:,} tokens); expected at most "
            f"max_prompt_chars={limits.max_prompt_chars:,} (--max-prompt-chars); it was not sent", backend=backend)


def deadline_error(where: str, deadline: float, *, backend: str, got: int = 0) -> LMCallError:
    """The error of a request that did not finish within its deadline (not retried: a hung server stays hung)."""
    so_far = f"; {got:,} bytes of the answer had come" if got else "; no answer had come"
    return LMCallError(
        f"{where} did not finish answering within the deadline of {deadline:g} s (connect + whole answer){so_far}: "
        "the server is hung or trickling its answer (--deadline sets the limit)",
        backend=backend, reason="deadline")


def malformed(where: str, kind: str, detail: str, *, backend: str) -> LMCallError:
    """The error of an HTTP 200 whose body is not a usable answer; ``kind`` groups repeats for the circuit breaker."""
    return LMCallError(f"{where} answered HTTP 200 with {kind}; expected {detail}", backend=backend,
                       reason="malformed", kind=kind)


def _looks(data: bytes) -> str:
    text = data[:120].decode("utf-8", "replace")
    return repr(" ".join(text.split()))


async def read_capped(chunks: AsyncIterator[bytes], cap: int, *, where: str, backend: str) -> bytes:
    """The body from ``chunks``; reading stops, with a non-retryable LMCallError, once it passes ``cap`` bytes."""
    parts: list[bytes] = []
    size = 0
    async for chunk in chunks:
        size += len(chunk)
        if size > cap:
            raise LMCallError(
                f"{where} answered with a body of more than {cap:,} bytes; expected at most max_response_bytes="
                f"{cap:,} (--max-response-bytes); reading stopped there", backend=backend, reason="malformed",
                kind="an answer body over the size cap")
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
        raise malformed(where, "truncated or invalid JSON", f"{expected}; got {_looks(stripped)}",
                        backend=backend) from None
    if not isinstance(value, dict):
        raise malformed(where, f"a JSON {type(value).__name__}", f"{expected}; got {_looks(stripped)}",
                        backend=backend)
    return value


def scrub(text: str, secrets: Iterable[str]) -> str:
    """``text`` with every secret (an API key in use) replaced by ``***``."""
    for secret in secrets:
        if secret and secret != PLACEHOLDER_KEY and len(secret) >= 4:
            text = text.replace(secret, "***")
    return text
