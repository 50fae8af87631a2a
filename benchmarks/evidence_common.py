"""Shared plumbing for the mitigation-evidence scripts (``benchmarks/*_uss.py``, ``*_webnlg.py``,
``*_summeval.py``).

Each evidence script judges real benchmark items with an LM through the harness. This module
holds what they share:

- the command-line options every script takes (:func:`add_common_args`): ``--backend``
  (default: the Qwen2.5 0.5B judge model that ``/work/shared/tools/fetch-judge-model 0.5b``
  fetches, as ``local:<path>``), ``--n`` items, ``--out`` (the summary JSON), ``--run-dir``
  (journals and full results, so a killed run resumes), ``--seed``, ``--concurrency``,
  ``--n-boot``/``--n-perm``, ``--restart`` and ``--cache``;
- building the LM from those options (:func:`make_lm`);
- formatting a :class:`~mitigate.measures.Measure` or a permutation result for the
  console and for JSON (:func:`fmt`, :func:`measure_json`, :func:`perm_json`);
- writing the summary JSON with the command, settings and timings (:func:`write_summary`).

Ordering for prefix reuse: the embedded backend keeps the KV cache of the previous call and
only evaluates the tokens after the longest shared prefix. The scripts therefore judge with
``--concurrency 1`` by default. They run one prompt variant over all items before moving to
the next variant, and they take items document by document. Consecutive calls then share the
instructions and demos, and the source text when documents repeat, and pay only for the rest.
"""

from __future__ import annotations

import argparse
import json
import math
import shlex
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # runs from a checkout without installing

from mitigate.errors import ConfigError
from mitigate.lm import LM
from mitigate.measures import Measure

FETCH_TOOL = Path("/work/shared/tools/fetch-judge-model")
RESULTS_DIR = Path(__file__).resolve().parent / "results"
RUNS_DIR = Path(__file__).resolve().parent.parent / "runs" / "evidence"


def default_backend(size: str = "0.5b") -> str:
    """``local:<path>`` of the judge model fetched by ``fetch-judge-model <size>`` (run as a subprocess)."""
    if not FETCH_TOOL.is_file():
        raise ConfigError(
            f"expected the model fetch tool at {FETCH_TOOL}; it is missing. Pass --backend explicitly"
        )
    done = subprocess.run([str(FETCH_TOOL), size], capture_output=True, text=True, check=False)
    lines = [ln.strip() for ln in done.stdout.splitlines() if ln.strip()]
    if done.returncode != 0 or not lines or not lines[-1].endswith(".gguf"):
        raise ConfigError(
            f"expected {FETCH_TOOL} {size} to print a .gguf path; got exit code {done.returncode}, "
            f"stdout {done.stdout[-200:]!r}, stderr {done.stderr[-200:]!r}"
        )
    return f"local:{lines[-1]}"


def add_common_args(ap: argparse.ArgumentParser, *, name: str, default_n: int) -> None:
    """The options every evidence script takes (``name`` sets the default ``--out`` and ``--run-dir``)."""
    ap.add_argument(
        "--backend",
        default=None,
        help="LM backend spec: local, local:<path.gguf>, openai:<model> ... (default: local:<the "
        "Qwen2.5 0.5B judge model printed by /work/shared/tools/fetch-judge-model 0.5b>)",
    )
    ap.add_argument("--base-url", default=None, help="OpenAI-compatible server URL (openai backend)")
    ap.add_argument("--n", type=int, default=default_n, help=f"test items to judge (default {default_n})")
    ap.add_argument("--out", type=Path, default=RESULTS_DIR / f"{name}.json", help="summary JSON to write")
    ap.add_argument(
        "--run-dir",
        type=Path,
        default=RUNS_DIR / name,
        help="journals and full results (a rerun resumes from them)",
    )
    ap.add_argument(
        "--seed", type=int, default=0, help="seed of item sampling, demo draws, bootstrap and tests"
    )
    ap.add_argument(
        "--concurrency",
        type=int,
        default=1,
        help="judgments in flight (1 keeps consecutive calls sharing their prefix on the local backend)",
    )
    ap.add_argument("--n-ctx", type=int, default=8192, help="context window of the local backend")
    ap.add_argument(
        "--max-tokens", type=int, default=24, help="answer budget of direct (non-reasoning) calls"
    )
    ap.add_argument("--n-boot", type=int, default=1000, help="bootstrap resamples per interval")
    ap.add_argument("--n-perm", type=int, default=5000, help="permutations per test")
    ap.add_argument("--restart", action="store_true", help="discard the journals in --run-dir")
    ap.add_argument(
        "--cache", action=argparse.BooleanOptionalAction, default=True, help="cache LM calls on disk"
    )
    ap.add_argument(
        "--progress", action=argparse.BooleanOptionalAction, default=True, help="show progress bars"
    )


def resolve_backend(args: argparse.Namespace) -> str:
    """The backend spec to use: ``--backend`` or the fetched default."""
    if args.backend is None:
        args.backend = default_backend()
    return str(args.backend)


def make_lm(args: argparse.Namespace, *, cache: bool | None = None) -> LM:
    """The LM for ``args`` (local backends get ``--n-ctx``), with the standard cache and retry wrappers."""
    from mitigate.lm import get, wrap

    spec = resolve_backend(args)
    kwargs: dict[str, Any] = {}
    if spec == "local" or spec.startswith("local:"):
        kwargs["n_ctx"] = args.n_ctx
    if args.base_url:
        kwargs["base_url"] = args.base_url
    return wrap(get(spec, **kwargs), cache=args.cache if cache is None else cache)


def clean(x: Any) -> Any:
    """JSON-safe value: NaN/inf become None, floats are rounded to 4 places, containers recurse."""
    if isinstance(x, float):
        return None if not math.isfinite(x) else round(x, 4)
    if isinstance(x, dict):
        return {str(k): clean(v) for k, v in x.items()}
    if isinstance(x, list | tuple):
        return [clean(v) for v in x]
    return x


def measure_json(m: Measure) -> dict[str, Any]:
    """A measure's value, interval, n, n_failed and reason (extra tables left out unless small)."""
    out = {"value": m.value, "ci_low": m.ci_low, "ci_high": m.ci_high, "n": m.n, "n_failed": m.n_failed}
    if m.reason:
        out["reason"] = m.reason
    small = {k: v for k, v in m.extra.items() if len(json.dumps(v, default=str)) < 2000}
    if small:
        out["extra"] = small
    return clean(out)


def perm_json(result: Any) -> dict[str, Any]:
    """A :class:`~mitigate.measures._stats.PermutationResult` as JSON."""
    return clean(
        {
            "observed": result.observed,
            "p_value": result.p_value,
            "n": result.n,
            "n_perm": result.n_perm,
            "a": getattr(result, "observed_a", None),
            "b": getattr(result, "observed_b", None),
            "reason": getattr(result, "reason", None),
        }
    )


def fmt(m: Measure | dict[str, Any], digits: int = 3) -> str:
    """``0.512 [0.410, 0.600] (n=100)``, or ``NaN (reason)``."""
    d = measure_json(m) if isinstance(m, Measure) else m
    if d.get("value") is None:
        return f"NaN ({d.get('reason', 'undefined')}; n={d.get('n')})"
    ci = f" [{d['ci_low']:.{digits}f}, {d['ci_high']:.{digits}f}]" if d.get("ci_low") is not None else ""
    return (
        f"{d['value']:.{digits}f}{ci} "
        f"(n={d['n']}{', failed ' + str(d['n_failed']) if d.get('n_failed') else ''})"
    )


def fmt_num(x: float | None, digits: int = 3) -> str:
    """A number to ``digits`` places, or "NaN" for None (a JSON-cleaned NaN)."""
    return "NaN" if x is None else f"{x:.{digits}f}"


def score_counts(values: Any) -> dict[str, int]:
    """How often each score was given ("failed" for a missing one), keys sorted."""
    out: dict[str, int] = {}
    for v in values:
        key = "failed" if v is None else f"{v:g}"
        out[key] = out.get(key, 0) + 1
    return dict(sorted(out.items()))


def fmt_test(t: dict[str, Any]) -> str:
    """``diff +0.120, p=0.031 (n=100)``."""
    if t.get("observed") is None:
        return f"undefined ({t.get('reason')})"
    return f"diff {t['observed']:+.3f}, p={t['p_value']:.4f} (n={t['n']})"


class Timer:
    """Wall-clock sections for the summary JSON."""

    def __init__(self) -> None:
        self.start = time.perf_counter()
        self.sections: dict[str, float] = {}

    def mark(self, name: str, since: float) -> None:
        """Record the seconds since ``since`` under ``name``."""
        self.sections[name] = round(time.perf_counter() - since, 1)

    def total(self) -> float:
        """Seconds since the timer was made."""
        return round(time.perf_counter() - self.start, 1)


def write_summary(args: argparse.Namespace, script: str, payload: dict[str, Any], timer: Timer) -> Path:
    """Write ``payload`` with the command, backend, settings and timings to ``args.out``; returns the path."""
    settings = {k: (str(v) if isinstance(v, Path) else v) for k, v in vars(args).items()}
    full = {
        "script": script,
        "command": "python " + " ".join(shlex.quote(a) for a in [f"benchmarks/{script}", *sys.argv[1:]]),
        "backend": args.backend,
        "settings": settings,
        **payload,
        "seconds": {"total": timer.total(), **timer.sections},
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(clean(full), indent=1) + "\n", encoding="utf-8")
    return args.out


COHERENCE_RUBRIC = (  # our wording, in Prometheus' rubric layout
    "[Is the summary coherent: do its sentences follow one another and form one clear account?]\n"
    "Score 1: The sentences are disconnected.\nScore 2: Only a few sentences connect.\n"
    "Score 3: Partly organised, with noticeable jumps.\nScore 4: Well organised with minor lapses.\n"
    "Score 5: One logically ordered, well-connected account."
)
"""A SummEval coherence rubric of our own, filled into published templates that take a rubric."""


def dist_text(dist: str, rel: str) -> str:
    """The text of a file shipped by an installed distribution (read at run time, never copied)."""
    import importlib.metadata as md

    return md.distribution(dist).locate_file(rel).read_text(encoding="utf-8")  # type: ignore[union-attr]


def dist_constant(dist: str, rel: str, name: str) -> str:
    """A module-level string constant of a file shipped by an installed distribution (read, not imported)."""
    import ast

    tree = ast.parse(dist_text(dist, rel))
    for node in tree.body:
        if isinstance(node, ast.Assign) and getattr(node.targets[0], "id", None) == name:
            return str(ast.literal_eval(node.value))
    raise SystemExit(f"{dist} ships no constant {name} in {rel}")
