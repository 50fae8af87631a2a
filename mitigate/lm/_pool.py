"""Several replicas of one OpenAI-compatible server as one backend: least outstanding requests, health, a
breaker each.

``get("openai:my-model", base_url=["http://a:8000/v1", "http://b:8000/v1"])`` (on the command line
``--base-url`` given more than once, or ``--base-url @endpoints.txt``) builds one backend per URL
and a :class:`PoolLM` over them. Each request goes to the replica with the fewest requests in
flight relative to its weight (``(outstanding + 1) / weight``, ties taken in turn), so a replica
twice as large (weight 2) carries twice the load, and a slow replica gets fewer.

Health
    Each replica has a breaker. A failure of the replica itself (it cannot be reached, closes the
    connection, times out or goes past the request's deadline, answers 5xx, sends what is not an
    answer, redirects, refuses the key or does not know the model) counts; ``trip_after`` in a row
    (one when it cannot be reached at all) take it out of the pool, and a success resets the count.
    A replica taken out is probed again after a backoff (1 s, doubling on each failed probe, at most
    ``max_backoff``): the next request goes to it alone, and its outcome puts the replica back or
    keeps it out for longer. A failure of the request (HTTP 400, 413, 422, a capability the server
    lacks, a 429 asking it to slow down) is not the replica's: it neither counts nor resets. When every
    replica is out, a request fails at once with a :class:`~mitigate.errors.TransientLMError` (the
    retry layer waits and tries again, when a probe is due), whose reason is "connection" when no
    replica could be reached, so a pool of dead servers stops a run as one dead server does.

Per replica
    Each replica is its own backend object: its transport and connection pool, its rate limiter, its
    request budget (``limits``: deadline, response and prompt caps; a request's attempts share one
    deadline whichever replica they go to) and the scrubber that takes its key out of everything it
    returns or raises. The pool counts what each replica served and how it failed
    (:meth:`PoolLM.stats`).

Cache key
    What the pool answers does not depend on which replica answered: its ``identity()`` is the
    model's spec and the sorted set of its replicas' URLs (credentials stripped), the same whichever
    replica served a request and in whatever order the URLs were given. A run over another set of
    replicas keeps its cache apart (they may serve another model under the same name); a cluster
    whose replicas come and go is best put behind one router URL (vLLM's production stack, Ray
    Serve, a LiteLLM proxy), which is one base URL.
"""

from __future__ import annotations

import math
import time
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from mitigate.errors import CapabilityError, ConfigError, LMCallError, MitigateError, TransientLMError
from mitigate.lm._base import LM, LMRequest, LMResponse
from mitigate.lm._http import public_url
from mitigate.lm._wrapper import WrapperLM

TRIP_AFTER = 3
"""Failures of a replica in a row that take it out of the pool (one when it cannot be reached)."""
FIRST_BACKOFF = 1.0
MAX_BACKOFF = 30.0
"""Longest wait before a replica taken out is probed again (below the retry layer's default patience)."""
REQUEST_FAULTS = frozenset({400, 413, 422, 429})
"""HTTP statuses that are the request's (or the load's) doing, not the replica's: they do not count against
it."""


class EndpointWarning(UserWarning):
    """A replica of a pool was taken out (it kept failing) or came back."""


@dataclass
class Endpoint:
    """One replica of a :class:`PoolLM`: its URL, weight, backend and breaker state."""

    url: str
    weight: float
    lm: LM
    outstanding: int = 0
    failures: int = 0
    """Failures of the replica in a row."""
    down_until: float = 0.0
    """``time.monotonic()`` until which it is out; 0 when it is in."""
    backoff: float = 0.0
    probing: bool = False
    """A request is probing it (it was out, its backoff has passed): no other goes to it until that one
    ends."""
    served: int = 0
    failed: int = 0
    last_reason: str | None = None
    causes: dict[str, int] = field(default_factory=dict)

    @property
    def shown(self) -> str:
        """The URL without credentials."""
        return public_url(self.url)


def parse_endpoints(lines: Sequence[str], source: str) -> list[tuple[str, float, int]]:
    """``(url, weight, line)`` from lines ``URL [WEIGHT]`` (weight 1 when absent); blank lines and ``#``
    comments are skipped. A weight that is not a positive number is a one-line ConfigError naming ``source``
    and the line."""
    out: list[tuple[str, float, int]] = []
    for number, raw in enumerate(lines, start=1):
        text = raw.split("#", 1)[0].strip()
        if not text:
            continue
        parts = text.split()
        if len(parts) > 2:
            raise ConfigError(
                f"{source}:{number}: expected 'URL' or 'URL WEIGHT'; got {len(parts)} words: {text[:80]!r}"
            )
        weight = 1.0
        if len(parts) == 2:
            try:
                weight = float(parts[1])
            except ValueError:
                weight = math.nan
            if not (math.isfinite(weight) and weight > 0):
                raise ConfigError(
                    f"{source}:{number}: expected a weight that is a positive number after the "
                    f"URL; got {parts[1]!r}"
                )
        out.append((parts[0], weight, number))
    return out


def read_endpoints(values: Sequence[str], read_file: Callable[[Path, str], str]) -> list[tuple[str, float]]:
    """The replicas that ``--base-url`` values name: each a URL, or ``@FILE`` of lines ``URL [WEIGHT]``.

    ``read_file(path, option)`` reads a file's text (the command line's checked reader). A URL named
    twice, in a file or across values, is a one-line ConfigError naming both places.
    """
    out: list[tuple[str, float]] = []
    where: dict[str, str] = {}
    for value in values:
        if value.startswith("@"):
            path = Path(value[1:])
            found = [
                (url, weight, f"{path}:{line}")
                for url, weight, line in parse_endpoints(
                    read_file(path, "--base-url").splitlines(), str(path)
                )
            ]
            if not found:
                raise ConfigError(f"expected --base-url {value} to list at least one URL; it lists none")
        else:
            found = [(value, 1.0, "--base-url")]
        for url, weight, place in found:
            if url in where:
                raise ConfigError(
                    f"expected each replica once; {public_url(url)} is given at {where[url]} and at {place}"
                )
            where[url] = place
            out.append((url, weight))
    return out


def _cause(exc: MitigateError) -> str | None:
    """Why a failure is the replica's (a short word), or None when it is the request's."""
    if isinstance(exc, CapabilityError) or not isinstance(exc, LMCallError):
        return None
    status = exc.status if isinstance(exc, TransientLMError) else exc.context.get("status")
    if isinstance(status, int):
        return None if status in REQUEST_FAULTS else f"http-{status}"
    reason = exc.context.get("reason")
    if reason in ("connection", "closed", "cut", "timeout", "deadline", "malformed", "redirect"):
        return str(reason)
    return "transient" if isinstance(exc, TransientLMError) else None


class PoolLM(WrapperLM):
    """Replicas of one model behind one backend (see the module docstring).

    ``endpoints`` are ``(url, weight, backend)`` triples, the backends built alike but for their
    URL; the pool's facts (spec, model, capabilities, limits) are the first's. ``trip_after`` and
    ``max_backoff`` set the breakers; ``clock`` is injectable for tests.
    """

    def __init__(
        self,
        endpoints: Sequence[tuple[str, float, LM]],
        *,
        trip_after: int = TRIP_AFTER,
        max_backoff: float = MAX_BACKOFF,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        if not endpoints:
            raise ConfigError("expected at least one replica for a pool; got none")
        if isinstance(trip_after, bool) or not isinstance(trip_after, int) or trip_after < 1:
            raise ConfigError(
                f"The 'trip_after' parameter of PoolLM must be an int >= 1. Got {trip_after!r} instead."
            )
        specs = {lm.spec for _, _, lm in endpoints}
        if len(specs) != 1:
            raise ConfigError(f"expected replicas of one model; got backends {sorted(specs)}")
        super().__init__(endpoints[0][2])
        self.endpoints = [Endpoint(url, float(weight), lm) for url, weight, lm in endpoints]
        self.trip_after = trip_after
        self.max_backoff = max_backoff
        self._clock = clock
        self._turn = 0
        self._identity = f"{self.inner.spec}@" + ",".join(sorted({e.shown for e in self.endpoints}))

    @classmethod
    def of(
        cls, endpoints: Sequence[tuple[str, float]], build: Callable[[str], LM], **options: object
    ) -> PoolLM:
        """A pool of ``(url, weight)`` replicas, each backend built by ``build(url)``."""
        return cls([(url, weight, build(url)) for url, weight in endpoints], **options)  # type: ignore[arg-type]

    def identity(self) -> str:
        """The model's spec and the sorted set of the replicas' URLs: the same whichever replica answers."""
        return self._identity

    def __repr__(self) -> str:
        return f"PoolLM({[e.shown for e in self.endpoints]!r}, {self.inner!r})"

    # -- choosing and keeping score

    def _pick(self) -> Endpoint:
        now = self._clock()
        best: Endpoint | None = None
        best_load = math.inf
        n = len(self.endpoints)
        for k in range(n):
            e = self.endpoints[(self._turn + k) % n]
            if e.down_until > now or e.probing:
                continue
            if e.down_until:  # out, and its backoff has passed: this request probes it, alone
                e.probing = True
                self._turn = (self._turn + k + 1) % n
                return e
            load = (e.outstanding + 1) / e.weight
            if load < best_load:
                best, best_load = e, load
        if best is None:
            raise self._all_out(now)
        self._turn = (self.endpoints.index(best) + 1) % n
        return best

    def _all_out(self, now: float) -> TransientLMError:
        """The error of a request that finds every replica out: with their common cause when they share one
        (so the run's breaker reads a pool of dead servers as one dead server), else reason "unavailable"."""
        waits = [max(0.0, e.down_until - now) for e in self.endpoints if not e.probing]
        shown = ", ".join(f"{e.shown} ({e.last_reason or 'probing'})" for e in self.endpoints)
        next_in = f"; the next is probed in {min(waits):.1f} s" if waits else ""
        message = f"every replica of {self.inner.spec} is out of the pool: {shown}{next_in}"
        causes = {e.last_reason for e in self.endpoints}
        cause = causes.pop() if len(causes) == 1 else None
        if cause is not None and cause.startswith("http-"):
            return TransientLMError(message, status=int(cause[5:]), backend=self.inner.spec)
        return TransientLMError(
            message,
            reason=cause if cause in ("connection", "closed", "cut", "timeout") else "unavailable",
            backend=self.inner.spec,
        )

    def _succeeded(self, e: Endpoint) -> None:
        e.served += 1
        self._alive(e)

    def _alive(self, e: Endpoint) -> None:
        back = bool(e.down_until)
        e.failures, e.down_until, e.backoff, e.probing, e.last_reason = 0, 0.0, 0.0, False, None
        if back:
            warnings.warn(
                f"replica {e.shown} of {self.inner.spec} answered again: back in the pool",
                EndpointWarning,
                stacklevel=4,
            )

    def _failed(self, e: Endpoint, exc: MitigateError) -> None:
        cause = _cause(exc)
        if cause is None:  # the request's fault, not the replica's: it answered, so it is alive
            self._alive(e)
            return
        e.failed += 1
        e.causes[cause] = e.causes.get(cause, 0) + 1
        e.failures += 1
        e.last_reason = cause
        was_probe, e.probing = e.probing or bool(e.down_until), False
        if was_probe or e.failures >= self.trip_after or cause == "connection":
            e.backoff = (
                FIRST_BACKOFF if not was_probe else min(self.max_backoff, max(FIRST_BACKOFF, 2 * e.backoff))
            )
            e.down_until = self._clock() + e.backoff
            if not was_probe:
                warnings.warn(
                    f"replica {e.shown} of {self.inner.spec} taken out of the pool after "
                    f"{e.failures} failure{'s' if e.failures != 1 else ''} in a row ({cause}: "
                    f"{str(exc)[:160]}); probed again in {e.backoff:g} s",
                    EndpointWarning,
                    stacklevel=4,
                )

    # -- the LM interface

    async def complete(self, request: LMRequest) -> LMResponse:
        """Send ``request`` to the replica with the fewest requests in flight for its weight (see the module
        docstring)."""
        self.check(request)
        e = self._pick()
        e.outstanding += 1
        try:
            response = await e.lm.complete(request)
        except MitigateError as exc:
            self._failed(e, exc)
            raise
        except BaseException:  # cancelled: says nothing about the replica
            e.probing = False
            raise
        finally:
            e.outstanding -= 1
        self._succeeded(e)
        return response

    async def loglikelihood(self, context: str, continuation: str) -> float:
        """The log-likelihood from one replica, chosen as :meth:`complete` chooses."""
        e = self._pick()
        e.outstanding += 1
        try:
            value = await e.lm.loglikelihood(context, continuation)
        except MitigateError as exc:
            self._failed(e, exc)
            raise
        except BaseException:
            e.probing = False
            raise
        finally:
            e.outstanding -= 1
        self._succeeded(e)
        return value

    def stats(self) -> list[dict[str, object]]:
        """Per replica: its URL (no credentials), weight, requests served and failed, failures by cause, and
        whether it is in the pool now."""
        now = self._clock()
        return [
            {
                "url": e.shown,
                "weight": e.weight,
                "served": e.served,
                "failed": e.failed,
                "causes": dict(e.causes),
                "in": e.down_until <= now,
            }
            for e in self.endpoints
        ]

    async def aclose(self) -> None:
        """Close every replica's backend."""
        for e in self.endpoints:
            await e.lm.aclose()
