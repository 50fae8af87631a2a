"""Benchmarks by name: ``load("summeval")``, ``load("uss-sgd", level="turn")``, ``load("jsonl:my.jsonl")``.

Released pairwise benchmarks are read from a copy of their repository on disk:
``load("llmbar:<path>")``, ``load("judgebench:<path>")``, ``load("faireval:<path>")``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from mitigate.data.faireval import load_faireval
from mitigate.data.jsonl import load_jsonl
from mitigate.data.judgebench import load_judgebench
from mitigate.data.llmbar import load_llmbar
from mitigate.data.released import load_head_to_head_benchmark
from mitigate.data.schema import Benchmark
from mitigate.data.summeval import load_summeval
from mitigate.data.tmu_gfm import load_tmu_gfm
from mitigate.data.uss import load_uss
from mitigate.data.webnlg import load_webnlg
from mitigate.errors import DataError

LOADERS: dict[str, Callable[..., Benchmark]] = {
    "summeval": lambda **kw: load_summeval("llm_summeval", **kw),
    "summeval-bartscore": lambda **kw: load_summeval("bartscore", **kw),
    "summeval-h2h": load_head_to_head_benchmark,
    "uss-sgd": lambda **kw: load_uss("sgd", **kw),
    "uss-multiwoz": lambda **kw: load_uss("multiwoz", **kw),
    "uss-redial": lambda **kw: load_uss("redial", **kw),
    "uss-ccpe": lambda **kw: load_uss("ccpe", **kw),
    "webnlg": load_webnlg,
    "tmu-gfm": load_tmu_gfm,
}
"""Benchmark name -> loader; keyword arguments of :func:`load` are passed on."""

PATH_LOADERS: dict[str, Callable[..., Benchmark]] = {
    "jsonl": load_jsonl,
    "llmbar": load_llmbar,
    "judgebench": load_judgebench,
    "faireval": load_faireval,
}
"""``<prefix>:<path>`` -> loader of a benchmark file or a released repository on disk (``sets=`` for LLMBar,
``response_model=`` for JudgeBench)."""


def benchmark_names() -> list[str]:
    """Every name :func:`load` accepts (plus ``jsonl:<path>``)."""
    return [*LOADERS, *(f"{prefix}:<path>" for prefix in PATH_LOADERS)]


def load(name: str, **kw: Any) -> Benchmark:
    """Load a benchmark by name; ``jsonl:<path>`` reads a file in the generic format.

    ``llmbar:<path>``, ``judgebench:<path>`` and ``faireval:<path>`` read a released pairwise
    benchmark from a copy of its repository. Keyword arguments go to the loader (e.g. ``root=``,
    ``annotators="turker"``, ``level="turn"``, ``scale=(0, 100)`` for a JSONL file, ``sets="all"``
    for LLMBar). An unknown name raises DataError listing the names.
    """
    prefix, sep, path = name.partition(":")
    if sep and prefix in PATH_LOADERS:
        if not path:
            raise DataError(f"expected a path after '{prefix}:' (e.g. '{prefix}:data/{prefix}'); got nothing")
        return PATH_LOADERS[prefix](path, **kw)
    loader = LOADERS.get(name)
    if loader is None:
        raise DataError(f"expected a benchmark name, one of {benchmark_names()}; got {name!r}")
    return loader(**kw)
