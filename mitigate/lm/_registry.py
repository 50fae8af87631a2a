"""Backend spec strings turned into LMs, the retry and cache wrappers stacked, and backends as their declared
facts.

Specs: ``openai:<model>``, ``anthropic:<model>``, ``dspy:<litellm model id>``, ``local`` or
``local:<path.gguf>``, ``replay:<path>``, ``fake``; a backend module (and its SDK) is imported only when asked
for. Each kind declares its facts (:class:`BackendFacts`), so :func:`declare` can check and render requests as
the backend would with no SDK, key or model file.
"""

from __future__ import annotations

import importlib
import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any

from mitigate.errors import BackendSpecError, CapabilityError, ConfigError
from mitigate.lm._base import LM, LMRequest, LMResponse, tool_answer_fields
from mitigate.lm._cache import CachedLM, LMCache
from mitigate.lm._http import Limits, check_request_size, check_timeout, server_identity
from mitigate.lm._retry import RetryingLM, RetryPolicy
from mitigate.registry import add, registered


@dataclass(frozen=True)
class BackendFacts:
    """What a backend kind declares about the requests it takes: ``modes(model, options)`` the constraint
    modes it enforces, ``fields(request, options)`` the fields they are sent in (None: the default)."""

    supports_logprobs: bool
    supports_n: bool
    supports_stop: bool = True
    max_temperature: float = 2.0
    modes: Callable[[str, Mapping[str, Any]], frozenset[str]] = lambda model, options: frozenset()
    fields: Callable[[LMRequest, Mapping[str, Any]], dict[str, Any]] | None = None
    identity: Callable[[str, Mapping[str, Any]], str] | None = None
    """``identity(spec, options)``: the backend's identity (a server URL beside the spec); None: the spec."""
    options: tuple[str, ...] = ()
    """The constructor options the facts read (the others are ignored here: keys, timeouts, clients)."""


class DeclaredLM(LM):
    """A backend described by its :class:`BackendFacts`: it checks and renders requests, never sends one."""

    def __init__(
        self,
        provider: str,
        model: str,
        facts: BackendFacts,
        options: Mapping[str, Any] | None = None,
        *,
        limits: Any | None = None,
    ) -> None:
        self.provider = provider
        self.model = model
        self.facts = facts
        self.options = {k: v for k, v in (options or {}).items() if k in facts.options}
        self.limits = limits
        self.supports_logprobs = facts.supports_logprobs
        self.supports_n = facts.supports_n
        self.supports_stop = facts.supports_stop

    def __repr__(self) -> str:
        return f"DeclaredLM({self.spec!r})"

    def identity(self) -> str:
        """What the built backend's ``identity()`` would be (the spec, and a server URL where it has one)."""
        return self.facts.identity(self.spec, self.options) if self.facts.identity is not None else self.spec

    def constraint_modes(self) -> frozenset[str]:
        return self.facts.modes(self.model, self.options)

    def constraint_fields(self, request: LMRequest) -> dict[str, Any]:
        fields = self.facts.fields
        return super().constraint_fields(request) if fields is None else fields(request, self.options)

    def check(self, request: LMRequest) -> None:
        """The backend's refusals (constraint, logprobs, stop, temperature, request size)."""
        if self.limits is not None:
            check_request_size(request, self.limits, backend=self.spec)
        super().check(request)
        if request.temperature > self.facts.max_temperature:
            raise CapabilityError(
                f"{self.spec!r} accepts temperature between 0 and {self.facts.max_temperature:g}; got "
                f"temperature={request.temperature}",
                backend=self.spec,
            )

    async def complete(self, request: LMRequest) -> LMResponse:
        """Never sends: a declared backend only renders and checks requests."""
        raise CapabilityError(
            f"backend {self.spec!r} was declared for rendering requests only (no client was built); expected "
            "a backend from mitigate.lm.get() to send a request",
            backend=self.spec,
        )


@dataclass(frozen=True)
class Backend:
    """A backend kind of the registry: the spec forms it accepts and how it is built.

    ``build(spec, rest, has_colon, kwargs)`` gets what follows the first ``:`` and :func:`get`'s keyword
    arguments. ``network`` backends take ``timeout=``, ``base_url=`` and ``limits=``; ``needs`` names what
    must follow the ``:``; ``options``, ``batch`` and ``about`` tell the command line which options apply.
    """

    forms: tuple[str, ...]
    build: Callable[[str, str, bool, dict[str, Any]], LM]
    facts: BackendFacts | None = None
    network: bool = False
    needs: str | None = None
    options: tuple[str, ...] = ()
    batch: bool = False
    about: str = ""


_EXTRAS = {"openai": "openai", "anthropic": "anthropic", "dspy": "dspy", "llama_cpp": "local"}
"""Optional SDK -> the mitigate extra that installs it."""


def _accepted() -> str:
    return ", ".join(repr(f) for b in registered("backend").values() for f in b.forms)


def _module(name: str, spec: str) -> ModuleType:
    try:
        return importlib.import_module(f"mitigate.lm._{name}")
    except ModuleNotFoundError as exc:
        missing = (exc.name or "").split(".")[0]
        if missing in _EXTRAS:
            raise BackendSpecError(
                f"backend spec {spec!r} needs the {missing!r} package, which is not installed; expected it "
                f"to be importable (pip install 'mitigate[{_EXTRAS[missing]}]')",
                spec=spec,
            ) from exc
        raise


def get(spec: str, **kwargs: Any) -> LM:
    """Build the backend named by ``spec`` (``kwargs`` go to its constructor; a list of ``base_url`` makes a
    :class:`~mitigate.lm._pool.PoolLM`); BackendSpecError listing the accepted forms for a bad spec."""
    urls = kwargs.get("base_url")
    if isinstance(urls, list | tuple):
        from mitigate.lm._pool import PoolLM

        backend, kind, _, _ = _resolve(spec, {k: v for k, v in kwargs.items() if k != "base_url"})
        if not backend.network:
            raise ConfigError(f"base_url applies to the network backends; got a list of them for {spec!r}")
        pairs = [(u, 1.0) if isinstance(u, str) else (u[0], u[1]) for u in urls]
        if len(pairs) == 1:
            return get(spec, **{**kwargs, "base_url": pairs[0][0]})
        return PoolLM.of(pairs, lambda url: get(spec, **{**kwargs, "base_url": url}))
    backend, kind, rest, sep = _resolve(spec, kwargs)
    return backend.build(spec, rest, sep, kwargs)


def declare(spec: str, **kwargs: Any) -> LM:
    """The backend named by ``spec`` as a :class:`DeclaredLM`, unbuilt; of ``kwargs`` those that shape
    requests (``base_url``, ``guided``, ``limits``) are read."""
    urls = kwargs.get("base_url")
    if isinstance(urls, list | tuple) and urls:  # replicas of one server: the first's facts are every one's
        first = urls[0]
        kwargs = {**kwargs, "base_url": first if isinstance(first, str) else first[0]}
    backend, kind, rest, sep = _resolve(spec, kwargs)
    if backend.facts is None:  # nothing declared: only the built backend knows what it takes
        return get(spec, **kwargs)
    if kind == "local":
        _local_path(spec, rest, sep)
    if kind == "fake":
        rest = rest or str(kwargs.get("model") or "")
    limits = (kwargs.get("limits") or Limits()) if backend.network else None
    return DeclaredLM(kind, rest, backend.facts, kwargs, limits=limits)


def _resolve(spec: str, kwargs: dict[str, Any]) -> tuple[Backend, str, str, bool]:
    """(backend, kind, what follows the ``:``, whether there was one) of a checked spec (see :func:`get`)."""
    if not isinstance(spec, str):
        raise BackendSpecError(
            f"expected a backend spec string (one of {_accepted()}); got {type(spec).__name__}", spec=None
        )
    text = spec.strip()
    bad = next((ch for ch in text if ord(ch) < 32 or ord(ch) == 127), None)
    if bad is not None:
        raise BackendSpecError(
            f"expected a backend spec without line breaks or control characters; got {spec!r} "
            f"(contains {bad!r})",
            spec=spec,
        )
    kind, sep, rest = text.partition(":")
    kind = kind.lower()
    backends = registered("backend")
    backend = backends.get(kind)
    if backend is None:
        raise BackendSpecError(f"unknown backend spec {spec!r}; expected one of {_accepted()}", spec=spec)
    if kwargs.get("timeout") is not None:
        if not backend.network:
            network = ", ".join(name for name, b in backends.items() if b.network)
            raise BackendSpecError(
                f"a request timeout applies to the network backends ({network}); got it for backend "
                f"spec {spec!r}",
                spec=spec,
            )
        check_timeout(kwargs["timeout"], backend=text)
    if backend.needs is not None and (not sep or not rest.strip()):
        raise BackendSpecError(
            f"backend spec {spec!r} names no {backend.needs}; expected '{kind}:<{backend.needs}>' "
            f"(accepted forms: {_accepted()})",
            spec=spec,
        )
    return backend, kind, rest.strip(), bool(sep)


def _built(name: str, cls: str) -> Callable[[str, str, bool, dict[str, Any]], LM]:
    return lambda spec, rest, sep, kwargs: getattr(_module(name, spec), cls)(rest, **kwargs)


def _local_path(spec: str, rest: str, sep: bool) -> None:
    if sep and not rest:
        raise BackendSpecError(
            f"backend spec {spec!r} has an empty path; expected 'local' or 'local:<path.gguf>'", spec=spec
        )


def _local(spec: str, rest: str, sep: bool, kwargs: dict[str, Any]) -> LM:
    _local_path(spec, rest, sep)
    llamacpp = _module("llamacpp", spec)
    return llamacpp.LlamaCppLM(model_path=rest or None, **kwargs) if sep else llamacpp.LlamaCppLM(**kwargs)


def _fake(spec: str, rest: str, sep: bool, kwargs: dict[str, Any]) -> LM:
    if "responses" not in kwargs:
        raise BackendSpecError(
            "backend 'fake' answers from a script given in Python (responses=[...] or a function of the "
            "request), which the command line cannot take; to try a command without a key or a model, run "
            "the stub server (python -m mitigate.testing --port 8765) and pass --backend openai:stub "
            "--base-url http://127.0.0.1:8765/v1",
            spec=spec,
        )
    if rest:
        kwargs.setdefault("model", rest)
    return _module("fake", spec).FakeLM(**kwargs)


def _server_identity(env: str | None = None) -> Callable[[str, Mapping[str, Any]], str]:
    """``identity(spec, options)``: the spec, plus ``@<url>`` when ``base_url`` or ``env`` names one."""

    def identity(spec: str, options: Mapping[str, Any]) -> str:
        url = options.get("base_url") or (os.environ.get(env) if env else None)
        return server_identity(spec, str(url) if url else None)

    return identity


def _openai_modes(model: str, options: Mapping[str, Any]) -> frozenset[str]:
    from mitigate.lm._openai import constraint_modes_for  # no SDK: the module imports it only to send

    return constraint_modes_for(
        model, options.get("base_url") or os.environ.get("OPENAI_BASE_URL") or None, options.get("guided")
    )


def _openai_fields(request: LMRequest, options: Mapping[str, Any]) -> dict[str, Any]:
    from mitigate.lm._openai import constraint_fields

    return constraint_fields(request, options.get("guided"))


def _grammar_fields(request: LMRequest, options: Mapping[str, Any]) -> dict[str, Any]:
    from mitigate.lm._llamacpp import grammar_fields  # no llama-cpp-python: the module imports it to load

    return grammar_fields(request)


for _name, _backend in {
    "openai": Backend(
        ("openai:<model>",),
        _built("openai", "OpenAILM"),
        network=True,
        needs="model",
        options=("transport", "guided"),
        batch=True,
        about="the OpenAI API and OpenAI-compatible servers such as vLLM",
        facts=BackendFacts(
            supports_logprobs=True,
            supports_n=True,
            modes=_openai_modes,
            fields=_openai_fields,
            identity=_server_identity("OPENAI_BASE_URL"),
            options=("base_url", "guided"),
        ),
    ),
    "anthropic": Backend(
        ("anthropic:<model>",),
        _built("anthropic", "AnthropicLM"),
        network=True,
        needs="model",
        batch=True,
        about="the Anthropic API",
        facts=BackendFacts(
            supports_logprobs=False,
            supports_n=True,
            max_temperature=1.0,
            modes=lambda model, options: frozenset({"json"}),
            fields=lambda request, options: tool_answer_fields(request.constraint),
            identity=_server_identity(),
            options=("base_url",),
        ),
    ),
    "dspy": Backend(
        ("dspy:<litellm model id>",),
        _built("dspy", "DSPyLM"),
        network=True,
        needs="model",
        facts=BackendFacts(
            supports_logprobs=True, supports_n=True, identity=_server_identity(), options=("base_url",)
        ),
    ),
    "local": Backend(
        ("local", "local:<path.gguf>"),
        _local,
        facts=BackendFacts(
            supports_logprobs=True,
            supports_n=True,
            modes=lambda model, options: frozenset({"format", "json"}),
            fields=_grammar_fields,
        ),
    ),
    "replay": Backend(
        ("replay:<path.jsonl>",),
        _built("replay", "ReplayLM"),
        needs="path",
        facts=BackendFacts(supports_logprobs=True, supports_n=True),
    ),
    "fake": Backend(
        ("fake",),
        _fake,
        facts=BackendFacts(
            supports_logprobs=False,
            supports_n=True,
            modes=lambda model, options: frozenset(options.get("constraint_modes") or ()),
            options=("constraint_modes",),
        ),
    ),
}.items():
    add("backend", _name, _backend)


def wrap(lm: LM, *, cache: bool | str | Path | LMCache = True, retry: RetryPolicy | bool | None = True) -> LM:
    """Stack ``CachedLM(RetryingLM(lm))``: ``cache`` True (the default file), a path, an :class:`LMCache` or
    False; ``retry`` True, a :class:`RetryPolicy`, or False/None."""
    out: LM = lm
    if retry is True or isinstance(retry, RetryPolicy):
        out = RetryingLM(out, None if retry is True else retry)
    elif retry not in (False, None):
        raise ConfigError(
            f"expected retry to be True, False, None or a RetryPolicy; got {type(retry).__name__}"
        )
    if cache is True or isinstance(cache, LMCache | str | Path):
        out = CachedLM(out, None if cache is True else cache)
    elif cache is not False:
        raise ConfigError(
            f"expected cache to be True, False, a path or an LMCache; got {type(cache).__name__}"
        )
    return out
