"""Several replicas of one OpenAI-compatible server as one backend (``base_url`` a list, ``--base-url`` given
more than once or ``@endpoints.txt``): each request goes to the replica with the fewest requests in flight for
its weight. A failure of the replica itself counts (``trip_after`` in a row, or one unreachable or hung past
the request's deadline, take it out until a probe after a doubling backoff brings it back) and the request
goes on to another replica in the pool (each tried once, with a deadline of its own); a failure of the request
(HTTP 400, 413, 422, 429, a missing capability) does not. With every replica out a request fails at once with
their common reason. ``identity()`` is the spec and the sorted set of the replicas' URLs."""

from __future__ import annotations

import math
import time
import warnings
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TypeVar

from mitigate.constraints import Interval, check_param
from mitigate.errors import CapabilityError, ConfigError, LMCallError, MitigateError, TransientLMError
from mitigate.lm._base import LM, LMRequest, LMResponse, WrapperLM
from mitigate.lm._http import public_url
from mitigate.lm._retry import end_request, start_request

TRIP_AFTER = 3
"""Failures of a replica in a row that take it out of the pool (one when it cannot be reached or is hung)."""
AT_ONCE = frozenset({"connection", "deadline"})
"""Causes one failure of which takes a replica out: it cannot be reached, or it held a request its whole
deadline (hung)."""
FIRST_BACKOFF = 1.0
MAX_BACKOFF = 30.0
"""Longest wait before a replica taken out is probed again (below the retry layer's default patience)."""
REQUEST_FAULTS = frozenset({400, 413, 422, 429})
"""HTTP statuses that are the request's (or the load's) doing, not the replica's."""
T = TypeVar("T")


class EndpointWarning(UserWarning):
    """A replica of a pool was taken out (it kept failing) or came back."""


@dataclass
class Endpoint:
    """One replica of a :class:`PoolLM`: its URL, weight, backend and breaker state."""

    url: str
    weight: float
    lm: LM
    outstanding: int = 0
    failures: int = 0  # in a row
    down_until: float = 0.0  # time.monotonic() until which it is out; 0 when it is in
    backoff: float = 0.0
    probing: bool = False  # a request is probing it (out, its backoff passed): no other goes to it meanwhile
    served: int = 0
    failed: int = 0
    last_reason: str | None = None
    causes: dict[str, int] = field(default_factory=dict)

    @property
    def shown(self) -> str:
        """The URL without credentials."""
        return public_url(self.url)


def parse_endpoints(lines: Sequence[str], source: str) -> list[tuple[str, float, int]]:
    """``(url, weight, line)`` from lines ``URL [WEIGHT]`` (``#`` comments); ConfigError for a bad one."""
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
        try:
            weight = float(parts[1]) if len(parts) == 2 else 1.0
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
    """The replicas ``--base-url`` values name (URLs, or ``@FILE``s of them); ConfigError for a repeat."""
    out: list[tuple[str, float]] = []
    where: dict[str, str] = {}
    for value in values:
        if value.startswith("@"):
            path = Path(value[1:])
            listed = parse_endpoints(read_file(path, "--base-url").splitlines(), str(path))
            found = [(url, weight, f"{path}:{line}") for url, weight, line in listed]
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
    if reason == "descriptors":  # this process's own limit: no replica's fault
        return None
    if reason in ("connection", "closed", "cut", "timeout", "deadline", "malformed", "redirect"):
        return str(reason)
    return "transient" if isinstance(exc, TransientLMError) else None


class PoolLM(WrapperLM):
    """Replicas of one model, ``(url, weight, backend)`` (the first's facts the pool's), as one backend."""

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
        check_param("PoolLM", "trip_after", trip_after, [Interval(int, 1)])
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

    def _pick(self, tried: Sequence[Endpoint]) -> Endpoint | None:
        """The replica for a request (not one of ``tried``), None when none is in; one whose backoff has
        passed is probed by this request alone (``probing`` set)."""
        now = self._clock()
        best: Endpoint | None = None
        best_load = math.inf
        n = len(self.endpoints)
        for k in range(n):
            e = self.endpoints[(self._turn + k) % n]
            if e.down_until > now or e.probing or e in tried:
                continue
            if e.down_until:  # out, and its backoff has passed: this request probes it, alone
                e.probing = True
                self._turn = (self._turn + k + 1) % n
                return e
            load = (e.outstanding + 1) / e.weight
            if load < best_load:
                best, best_load = e, load
        if best is not None:
            self._turn = (self.endpoints.index(best) + 1) % n
        return best

    def _all_out(self, now: float) -> TransientLMError:
        """The error when every replica is out: their common cause, else reason "unavailable"."""
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

    def _alive(self, e: Endpoint) -> None:
        back = bool(e.down_until)
        e.failures, e.down_until, e.backoff, e.probing, e.last_reason = 0, 0.0, 0.0, False, None
        if back:
            warnings.warn(
                f"replica {e.shown} of {self.inner.spec} answered again: back in the pool",
                EndpointWarning,
                stacklevel=4,
            )

    def _failed(self, e: Endpoint, exc: MitigateError, probe: bool) -> bool:
        """Count a failure of a request sent to ``e`` (``probe``: the one probing it); whether it was the
        replica's (then the request may go to another)."""
        cause = _cause(exc)
        if cause is None:  # the request's fault, not the replica's: it answered, so it is alive
            self._alive(e)
            return False
        e.failed += 1
        e.causes[cause] = e.causes.get(cause, 0) + 1
        e.last_reason = cause
        if probe:
            e.probing = False
        elif e.down_until:  # sent before it was taken out: it is out already
            return True
        e.failures += 1
        if probe or e.failures >= self.trip_after or cause in AT_ONCE:
            e.backoff = min(self.max_backoff, max(FIRST_BACKOFF, 2 * e.backoff)) if probe else FIRST_BACKOFF
            e.down_until = self._clock() + e.backoff
            if not probe:
                warnings.warn(
                    f"replica {e.shown} of {self.inner.spec} taken out of the pool after "
                    f"{e.failures} failure{'s' if e.failures != 1 else ''} in a row ({cause}: "
                    f"{str(exc)[:160]}); probed again in {e.backoff:g} s",
                    EndpointWarning,
                    stacklevel=5,
                )
        return True

    async def _on_one(self, call: Callable[[LM], Awaitable[T]]) -> T:
        """``call`` on the replica with the fewest requests in flight for its weight, keeping its score; after
        a failure of the replica's own, on the next replica in (each tried once)."""
        tried: list[Endpoint] = []
        failure: MitigateError | None = None
        while True:
            e = self._pick(tried)
            if e is None:
                raise failure if failure is not None else self._all_out(self._clock())
            probe = e.probing
            e.outstanding += 1
            clock = start_request() if tried else None  # another server: a deadline of its own
            try:
                result = await call(e.lm)
            except MitigateError as exc:
                e.outstanding -= 1
                if not self._failed(e, exc, probe):
                    raise
                tried.append(e)
                failure = exc
                continue
            except BaseException:  # cancelled: says nothing about the replica
                e.outstanding -= 1
                if probe:
                    e.probing = False
                raise
            finally:
                if clock is not None:
                    end_request(clock)
            e.outstanding -= 1
            e.served += 1
            self._alive(e)
            return result

    async def complete(self, request: LMRequest) -> LMResponse:
        """The answer of one replica (see the module docstring)."""
        self.check(request)
        return await self._on_one(lambda lm: lm.complete(request))

    async def loglikelihood(self, context: str, continuation: str) -> float:
        """The log-likelihood from one replica."""
        return await self._on_one(lambda lm: lm.loglikelihood(context, continuation))

    def stats(self) -> list[dict[str, object]]:
        """Per replica: URL, weight, requests served and failed, failures by cause, and whether it is in."""
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
        for e in self.endpoints:
            await e.lm.aclose()
