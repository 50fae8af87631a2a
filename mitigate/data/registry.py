"""Benchmarks by name: ``load("summeval")``, ``load("uss-sgd", level="turn")``, ``load("jsonl:my.jsonl")``.

Each benchmark's loader is the ``benchmark`` kind of the one registry (:mod:`mitigate.registry`).
"""

from __future__ import annotations

from typing import Any

from mitigate.data.jsonl import load_jsonl
from mitigate.data.released import load_head_to_head_benchmark
from mitigate.data.schema import Benchmark
from mitigate.data.summeval import load_summeval
from mitigate.data.tmu_gfm import load_tmu_gfm
from mitigate.data.uss import load_uss
from mitigate.data.webnlg import load_webnlg
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


def benchmark_names() -> list[str]:
    """Every name :func:`load` accepts (the registered benchmarks, plus ``jsonl:<path>``)."""
    return [*names("benchmark"), "jsonl:<path>"]


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
    loader = registered("benchmark").get(name)
    if loader is None:
        raise DataError(f"expected a benchmark name, one of {benchmark_names()}; got {name!r}")
    return loader(**kw)
