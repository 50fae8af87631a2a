"""Turn a backend spec string into an LM, and stack the retry and cache wrappers.

Accepted specs (everything after the first ``:`` is the model, so LiteLLM ids with ``/``
and ``:`` pass through intact):

* ``openai:<model>`` — :class:`~mitigate.lm.openai.OpenAILM` (``base_url=`` for compatible servers)
* ``anthropic:<model>`` — :class:`~mitigate.lm.anthropic.AnthropicLM`
* ``dspy:<model id>`` — :class:`~mitigate.lm.dspy.DSPyLM` (a LiteLLM model id)
* ``local`` — :class:`~mitigate.lm.llamacpp.LlamaCppLM` with the embedded model
* ``local:<path.gguf>`` — :class:`~mitigate.lm.llamacpp.LlamaCppLM` with that GGUF file
* ``replay:<path>`` — :class:`~mitigate.lm.replay.ReplayLM`
* ``fake`` / ``fake:<name>`` — :class:`~mitigate.lm.fake.FakeLM` (needs ``responses=``)

Keyword arguments of :func:`get` go to the backend's constructor
(``get("openai:my-model", base_url="http://localhost:8000/v1", timeout=30)``). ``timeout``
(the silence one attempt may wait through) applies to the network backends only; a spec with a line break or
another control character is refused (it would reach the server and every log line).

Backend modules are imported only when their spec is asked for, so an SDK that is not
installed only matters to the spec that needs it.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any

from mitigate.errors import BackendSpecError, ConfigError
from mitigate.lm.base import LM
from mitigate.lm.cache import CachedLM, LMCache
from mitigate.lm.http import check_timeout
from mitigate.lm.retry import RetryingLM, RetryPolicy
from mitigate.registry import add, registered


@dataclass(frozen=True)
class Backend:
    """A backend kind of the registry: the spec forms it accepts and how it is built.

    ``build(spec, rest, has_colon, kwargs)`` gets the whole spec, what follows its first ``:``
    (stripped), whether there was a ``:`` at all, and the keyword arguments of :func:`get`.
    ``network`` backends talk to a server (so ``timeout=`` and ``base_url=`` apply);
    ``needs`` names what must follow the ``:`` ("model", "path") when something must.
    """

    forms: tuple[str, ...]
    build: Callable[[str, str, bool, dict[str, Any]], LM]
    network: bool = False
    needs: str | None = None


_EXTRAS = {"openai": "openai", "anthropic": "anthropic", "dspy": "dspy", "llama_cpp": "local"}
"""Optional SDK -> the mitigate extra that installs it."""


def _accepted() -> str:
    return ", ".join(repr(f) for b in registered("backend").values() for f in b.forms)


def _module(name: str, spec: str) -> ModuleType:
    """Import ``mitigate.lm.<name>``, turning a missing optional SDK into a BackendSpecError."""
    try:
        return importlib.import_module(f"mitigate.lm.{name}")
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

    Raises :class:`~mitigate.errors.BackendSpecError` for an unknown or incomplete spec,
    listing the accepted forms.
    """
    if not isinstance(spec, str):
        raise BackendSpecError(
            f"expected a backend spec string (one of {_accepted()}); got {type(spec).__name__}", spec=None
        )
    text = spec.strip()
    bad = next((ch for ch in text if ord(ch) < 32 or ord(ch) == 127), None)
    if bad is not None:
        raise BackendSpecError(
            f"expected a backend spec without line breaks or control characters; got {spec!r} (contains {bad!r})",
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
                f"a request timeout applies to the network backends ({network}); got it for backend spec {spec!r}",
                spec=spec,
            )
        check_timeout(kwargs["timeout"], backend=text)
    if backend.needs is not None and (not sep or not rest.strip()):
        raise BackendSpecError(
            f"backend spec {spec!r} names no {backend.needs}; expected '{kind}:<{backend.needs}>' "
            f"(accepted forms: {_accepted()})",
            spec=spec,
        )
    return backend.build(spec, rest.strip(), bool(sep), kwargs)


def _openai(spec: str, rest: str, sep: bool, kwargs: dict[str, Any]) -> LM:
    return _module("openai", spec).OpenAILM(rest, **kwargs)


def _anthropic(spec: str, rest: str, sep: bool, kwargs: dict[str, Any]) -> LM:
    return _module("anthropic", spec).AnthropicLM(rest, **kwargs)


def _dspy(spec: str, rest: str, sep: bool, kwargs: dict[str, Any]) -> LM:
    return _module("dspy", spec).DSPyLM(rest, **kwargs)


def _local(spec: str, rest: str, sep: bool, kwargs: dict[str, Any]) -> LM:
    if sep and not rest:
        raise BackendSpecError(f"backend spec {spec!r} has an empty path; expected 'local' or 'local:<path.gguf>'",
                               spec=spec)
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


add("backend", "openai", Backend(("openai:<model>",), _openai, network=True, needs="model"))
add("backend", "anthropic", Backend(("anthropic:<model>",), _anthropic, network=True, needs="model"))
add("backend", "dspy", Backend(("dspy:<litellm model id>",), _dspy, network=True, needs="model"))
add("backend", "local", Backend(("local", "local:<path.gguf>"), _local))
add("backend", "replay", Backend(("replay:<path.jsonl>",), _replay, needs="path"))
add("backend", "fake", Backend(("fake",), _fake))


def wrap(
    lm: LM,
    *,
    cache: bool | str | Path | LMCache = True,
    retry: RetryPolicy | bool | None = True,
) -> LM:
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
        raise ConfigError(f"expected retry to be True, False, None or a RetryPolicy; got {type(retry).__name__}")
    if cache is True:
        out = CachedLM(out, LMCache())
    elif isinstance(cache, LMCache):
        out = CachedLM(out, cache)
    elif isinstance(cache, str | Path):
        out = CachedLM(out, LMCache(cache))
    elif cache is not False:
        raise ConfigError(f"expected cache to be True, False, a path or an LMCache; got {type(cache).__name__}")
    return out
