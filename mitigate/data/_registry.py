"""Benchmarks by name: ``load("summeval")``, ``load("uss-sgd", level="turn")``, ``load("jsonl:my.jsonl")``,
``load("llmbar:<path>")``; each loader is the ``benchmark`` kind of the one registry."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from mitigate.data._faireval import load_faireval
from mitigate.data._jsonl import load_jsonl
from mitigate.data._judgebench import load_judgebench
from mitigate.data._llmbar import load_llmbar
from mitigate.data._released import load_head_to_head_benchmark
from mitigate.data._schema import Benchmark
from mitigate.data._summeval import load_summeval
from mitigate.data._tmu_gfm import load_tmu_gfm
from mitigate.data._uss import load_uss
from mitigate.data._webnlg import load_webnlg
from mitigate.errors import DataError
from mitigate.registry import add, names, registered

add("benchmark", "summeval", lambda **kw: load_summeval("llm_summeval", **kw))
add("benchmark", "summeval-bartscore", lambda **kw: load_summeval("bartscore", **kw))
add("benchmark", "summeval-h2h", load_head_to_head_benchmark)
add("benchmark", "uss-sgd", lambda **kw: load_uss("sgd", **kw))
add("benchmark", "uss-multiwoz", lambda **kw: load_uss("multiwoz", **kw))
add("benchmark", "uss-redial", lambda **kw: load_uss("redial", **kw))
add("benchmark", "uss-ccpe", lambda **kw: load_uss("ccpe", **kw))
add("benchmark", "webnlg", load_webnlg)
add("benchmark", "tmu-gfm", load_tmu_gfm)

PATH_LOADERS: dict[str, Callable[..., Benchmark]] = {
    "jsonl": load_jsonl,
    "llmbar": load_llmbar,
    "judgebench": load_judgebench,
    "faireval": load_faireval,
}
"""``<prefix>:<path>`` -> loader of a benchmark file or a released repository on disk."""


def benchmark_names() -> list[str]:
    """Every name :func:`load` accepts: the registered benchmarks, plus ``<prefix>:<path>`` forms."""
    return [*names("benchmark"), *(f"{prefix}:<path>" for prefix in PATH_LOADERS)]


def load(name: str, **kw: Any) -> Benchmark:
    """Load a benchmark by name or ``<prefix>:<path>``; keyword arguments go to the loader (``root=``,
    ``level="turn"``, ``scale=(0, 100)`` ...). DataError listing the names for an unknown one."""
    prefix, sep, path = name.partition(":")
    if sep and prefix in PATH_LOADERS:
        if not path:
            raise DataError(f"expected a path after '{prefix}:' (e.g. '{prefix}:data/{prefix}'); got nothing")
        return PATH_LOADERS[prefix](path, **kw)
    loader = registered("benchmark").get(name)
    if loader is None:
        raise DataError(f"expected a benchmark name, one of {benchmark_names()}; got {name!r}")
    return loader(**kw)
