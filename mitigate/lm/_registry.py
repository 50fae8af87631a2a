"""Turn a backend spec string into an LM, and stack the retry and cache wrappers.

Accepted specs (everything after the first ``:`` is the model, so LiteLLM ids with ``/``
and ``:`` pass through intact):

* ``openai:<model>`` — :class:`~mitigate.lm._openai.OpenAILM` (``base_url=`` for compatible servers)
* ``anthropic:<model>`` — :class:`~mitigate.lm._anthropic.AnthropicLM`
* ``dspy:<model id>`` — :class:`~mitigate.lm._dspy.DSPyLM` (a LiteLLM model id)
* ``local`` — :class:`~mitigate.lm._llamacpp.LlamaCppLM` with the embedded model
* ``local:<path.gguf>`` — :class:`~mitigate.lm._llamacpp.LlamaCppLM` with that GGUF file
* ``replay:<path>`` — :class:`~mitigate.lm._replay.ReplayLM`
* ``fake`` / ``fake:<name>`` — :class:`~mitigate.lm._fake.FakeLM` (needs ``responses=``)

:func:`declare` turns the same specs into a :class:`~mitigate.lm._declared.DeclaredLM` from the
facts each backend kind declares (:class:`~mitigate.lm._declared.BackendFacts`): the requests it
would send, rendered and checked, with no SDK, key or model file needed.

Keyword arguments of :func:`get` go to the backend's constructor
(``get("openai:my-model", base_url="http://localhost:8000/v1", timeout=30)``). ``timeout``
(the silence one attempt may wait through) applies to the network backends only; a spec with a line break or
another control character is refused (it would reach the server and every log line).

Backend modules are imported only when their spec is asked for, so an SDK that is not
installed only matters to the spec that needs it.
"""

from __future__ import annotations

import importlib
import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any

from mitigate.errors import BackendSpecError, ConfigError
from mitigate.lm._base import LM, LMRequest
from mitigate.lm._cache import CachedLM, LMCache
from mitigate.lm._constraint import tool_answer_fields
from mitigate.lm._declared import BackendFacts, DeclaredLM
from mitigate.lm._http import check_timeout
from mitigate.lm._retry import RetryingLM, RetryPolicy
from mitigate.registry import add, registered


@dataclass(frozen=True)
class Backend:
    """A backend kind of the registry: the spec forms it accepts and how it is built.

    ``build(spec, rest, has_colon, kwargs)`` gets the whole spec, what follows its first ``:``
    (stripped), whether there was a ``:`` at all, and the keyword arguments of :func:`get`.
    ``facts`` is what the backend declares about the requests it takes (logprobs, ``n``, stop,
    answer constraints), read by :func:`declare` without building it; a backend that declares none
    (a plugin written before facts existed) is built by :func:`declare` instead. ``network`` backends talk
    to a server (so ``timeout=``, ``base_url=`` and the request ``limits=`` apply); ``needs`` names what
    must follow the ``:`` ("model", "path") when something must. ``options`` are the constructor
    options it takes beyond those (``transport``, ``guided`` ...), ``batch`` whether its provider has a
    batch API, and ``about`` what it talks to, in a few words: the command line reads these to say
    which options apply to which backend.
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
    """Import ``mitigate.lm._<name>``, turning a missing optional SDK into a BackendSpecError."""
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
    """Build the backend named by ``spec``; ``kwargs`` go to the backend's constructor.

    ``base_url`` may be a list of URLs (or of ``(url, weight)`` pairs) for a network backend: one
    backend is built per URL and a :class:`~mitigate.lm._pool.PoolLM` spreads requests over them
    (replicas of one server). Raises :class:`~mitigate.errors.BackendSpecError` for an unknown or
    incomplete spec, listing the accepted forms.
    """
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
    """The backend named by ``spec`` as its declared facts (:class:`~mitigate.lm._declared.DeclaredLM`),
    unbuilt.

    It renders and checks requests as the backend would (logprobs, ``n``, answer constraints
    and their fields, request-size limits) and never sends one, so commands that make no LM
    call need neither the backend's SDK, nor its API key, nor its model file. ``kwargs`` are the
    constructor options of :func:`get`; those that shape requests (``base_url``, ``guided``,
    ``limits``) are read, the others ignored. The spec is checked as :func:`get` checks it.
    """
    urls = kwargs.get("base_url")
    if isinstance(urls, list | tuple) and urls:  # replicas of one server: the first's facts are every one's
        first = urls[0]
        kwargs = {**kwargs, "base_url": first if isinstance(first, str) else first[0]}
    backend, kind, rest, sep = _resolve(spec, kwargs)
    if backend.facts is None:  # nothing declared: only the built backend knows what it takes
        return get(spec, **kwargs)
    if kind == "local" and sep and not rest:
        raise BackendSpecError(
            f"backend spec {spec!r} has an empty path; expected 'local' or 'local:<path.gguf>'", spec=spec
        )
    if kind == "fake":
        rest = rest or str(kwargs.get("model") or "")
    limits = kwargs.get("limits") if backend.network else None
    if backend.network and limits is None:
        from mitigate.lm._http import Limits

        limits = Limits()
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


def _openai(spec: str, rest: str, sep: bool, kwargs: dict[str, Any]) -> LM:
    return _module("openai", spec).OpenAILM(rest, **kwargs)


def _anthropic(spec: str, rest: str, sep: bool, kwargs: dict[str, Any]) -> LM:
    return _module("anthropic", spec).AnthropicLM(rest, **kwargs)


def _dspy(spec: str, rest: str, sep: bool, kwargs: dict[str, Any]) -> LM:
    return _module("dspy", spec).DSPyLM(rest, **kwargs)


def _local(spec: str, rest: str, sep: bool, kwargs: dict[str, Any]) -> LM:
    if sep and not rest:
        raise BackendSpecError(
            f"backend spec {spec!r} has an empty path; expected 'local' or 'local:<path.gguf>'", spec=spec
        )
    llamacpp = _module("llamacpp", spec)
    return llamacpp.LlamaCppLM(model_path=rest or None, **kwargs) if sep else llamacpp.LlamaCppLM(**kwargs)


def _replay(spec: str, rest: str, sep: bool, kwargs: dict[str, Any]) -> LM:
    return _module("replay", spec).ReplayLM(rest, **kwargs)


def _fake(spec: str, rest: str, sep: bool, kwargs: dict[str, Any]) -> LM:
    if "responses" not in kwargs:
        raise BackendSpecError(
            "backend spec 'fake' needs scripted answers; expected get('fake', responses=[...] or a "
            "callable request -> str)",
            spec=spec,
        )
    if rest:
        kwargs.setdefault("model", rest)
    return _module("fake", spec).FakeLM(**kwargs)


def _server_identity(url_option: str, env: str | None = None) -> Callable[[str, Mapping[str, Any]], str]:
    """``identity(spec, options)``: the spec, plus ``@<server url>`` when the options (or ``env``) name a
    server."""

    def identity(spec: str, options: Mapping[str, Any]) -> str:
        url = options.get(url_option) or (os.environ.get(env) if env else None)
        if not url:
            return spec
        from mitigate.lm._http import public_url

        return f"{spec}@{public_url(str(url))}"

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
    from mitigate.lm._llamacpp import (
        grammar_fields,  # no llama-cpp-python: the module imports it only to load
    )

    return grammar_fields(request)


def _fake_modes(model: str, options: Mapping[str, Any]) -> frozenset[str]:
    return frozenset(options.get("constraint_modes") or ())


add(
    "backend",
    "openai",
    Backend(
        ("openai:<model>",),
        _openai,
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
            identity=_server_identity("base_url", "OPENAI_BASE_URL"),
            options=("base_url", "guided"),
        ),
    ),
)
add(
    "backend",
    "anthropic",
    Backend(
        ("anthropic:<model>",),
        _anthropic,
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
            identity=_server_identity("base_url"),
            options=("base_url",),
        ),
    ),
)
add(
    "backend",
    "dspy",
    Backend(
        ("dspy:<litellm model id>",),
        _dspy,
        network=True,
        needs="model",
        facts=BackendFacts(
            supports_logprobs=True,
            supports_n=True,
            identity=_server_identity("base_url"),
            options=("base_url",),
        ),
    ),
)
add(
    "backend",
    "local",
    Backend(
        ("local", "local:<path.gguf>"),
        _local,
        facts=BackendFacts(
            supports_logprobs=True,
            supports_n=True,
            modes=lambda model, options: frozenset({"format", "json"}),
            fields=_grammar_fields,
        ),
    ),
)
add(
    "backend",
    "replay",
    Backend(
        ("replay:<path.jsonl>",),
        _replay,
        needs="path",
        facts=BackendFacts(supports_logprobs=True, supports_n=True),
    ),
)
add(
    "backend",
    "fake",
    Backend(
        ("fake",),
        _fake,
        facts=BackendFacts(
            supports_logprobs=False, supports_n=True, modes=_fake_modes, options=("constraint_modes",)
        ),
    ),
)


def wrap(lm: LM, *, cache: bool | str | Path | LMCache = True, retry: RetryPolicy | bool | None = True) -> LM:
    """Stack the standard wrappers: ``CachedLM(RetryingLM(lm))``.

    ``cache``: True for the default cache file (:func:`mitigate.paths.cache_dir`), a path
    or an :class:`LMCache` for another, False for none. ``retry``: True for the default
    :class:`RetryPolicy`, a policy, or False/None for no retries. The retry layer sits
    inside the cache, so a cache hit never waits on a retry and only final answers are
    stored.
    """
    out: LM = lm
    if retry is True:
        out = RetryingLM(out, RetryPolicy())
    elif isinstance(retry, RetryPolicy):
        out = RetryingLM(out, retry)
    elif retry not in (False, None):
        raise ConfigError(
            f"expected retry to be True, False, None or a RetryPolicy; got {type(retry).__name__}"
        )
    if cache is True:
        out = CachedLM(out, LMCache())
    elif isinstance(cache, LMCache):
        out = CachedLM(out, cache)
    elif isinstance(cache, str | Path):
        out = CachedLM(out, LMCache(cache))
    elif cache is not False:
        raise ConfigError(
            f"expected cache to be True, False, a path or an LMCache; got {type(cache).__name__}"
        )
    return out
