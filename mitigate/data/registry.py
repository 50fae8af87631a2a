"""Benchmarks by name: ``load("summeval")``, ``load("uss-sgd", level="turn")``, ``load("jsonl:my.jsonl")``."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from mitigate.data.jsonl import load_jsonl
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


def benchmark_names() -> list[str]:
    """Every name :func:`load` accepts (plus ``jsonl:<path>``)."""
    return [*LOADERS, "jsonl:<path>"]


def load(name: str, **kw: Any) -> Benchmark:
    """Load a benchmark by name; ``jsonl:<path>`` reads a file in the generic format.

    Keyword arguments go to the loader (e.g. ``root=``, ``annotators="turker"``, ``level="turn"``,
    ``scale=(0, 100)`` for a JSONL file). An unknown name raises DataError listing the names.
    """
    if name.startswith("jsonl:"):
        path = name[len("jsonl:"):]
        if not path:
            raise DataError("expected a path after 'jsonl:' (e.g. 'jsonl:data/my_bench.jsonl'); got nothing")
        return load_jsonl(path, **kw)
    loader = LOADERS.get(name)
    if loader is None:
        raise DataError(f"expected a benchmark name, one of {benchmark_names()}; got {name!r}")
    return loader(**kw)
