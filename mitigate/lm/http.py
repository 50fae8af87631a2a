"""HTTP failure handling shared by the provider backends: statuses worth retrying, ``Retry-After``,
SDK exceptions mapped onto :class:`~mitigate.errors.TransientLMError` / :class:`~mitigate.errors.LMCallError`,
and URLs stripped of credentials before they appear in a message.
"""

from __future__ import annotations

import email.utils
import time
from collections.abc import Mapping
from urllib.parse import urlsplit, urlunsplit

from mitigate.errors import ConfigError, LMCallError, TransientLMError

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
    refused = network_failure(exc)
    if refused is not None:
        return TransientLMError(f"{where} connection failed (retryable): {refused}", backend=backend,
                                reason="connection")
    if isinstance(exc, timeout_error):
        return TransientLMError(f"{where} timed out after {timeout:g} s (retryable)", backend=backend,
                                reason="timeout")
    if isinstance(exc, connection_error):
        return TransientLMError(f"{where} connection failed (retryable): {detail}", backend=backend,
                                reason="connection")
    return LMCallError(f"{where} failed: {type(exc).__name__}: {detail}", backend=backend)


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
