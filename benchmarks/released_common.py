"""Shared plumbing of the released-judge replays (``replay_llmbar.py``, ``replay_judgebench.py``,
``posthoc_released.py``).

A release on disk is read with :mod:`mitigate.data._llmbar` / :mod:`mitigate.data._judgebench`, its raw
answers parsed by :mod:`mitigate.replay._released_pairwise` and turned into recorded runs; here
each run becomes a :class:`Table`: per item the gold preference and, in each order, the verdict
by text as mitigate read it and as the release read it. Intervals are percentile bootstraps over
items (paired when two things are compared on the same items).
"""

from __future__ import annotations

import json
import math
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # runs from a checkout without installing

from mitigate.data import RELEASE_CRITERION, Item, PairwiseRelease
from mitigate.replay._released_pairwise import ReleaseParse, recorded_runs

RESULTS_DIR = Path(__file__).resolve().parent / "results"
_POS = {
    ("A", "original"): "first",
    ("B", "original"): "second",
    ("A", "swapped"): "second",
    ("B", "swapped"): "first",
    ("tie", "original"): "tie",
    ("tie", "swapped"): "tie",
}


@dataclass
class Table:
    """One released judge's verdicts by text per item: mitigate's reading (``orig``/``swap``) and the
    release's.

    ``swap`` is all None for a judge without a second order (a rating strategy). ``scores``
    holds a rating strategy's two parsed scores (or a reward model's rewards), A's first.
    """

    judge: str
    items: list[Item]
    gold: list[str]
    orig: list[str | None]
    swap: list[str | None]
    rel_orig: list[str | None]
    rel_swap: list[str | None]
    scores: list[tuple[float, float] | None] = field(default_factory=list)

    @property
    def two_orders(self) -> bool:
        """Whether the judge answered in both orders."""
        return any(v is not None for v in self.swap) or any(v is not None for v in self.rel_swap)

    def subset(self, keep: np.ndarray) -> Table:
        """The rows where ``keep`` is true."""
        idx = np.flatnonzero(keep)
        pick = lambda xs: [xs[i] for i in idx] if xs else []  # noqa: E731
        return Table(
            self.judge,
            pick(self.items),
            pick(self.gold),
            pick(self.orig),
            pick(self.swap),
            pick(self.rel_orig),
            pick(self.rel_swap),
            pick(self.scores),
        )

    def presented(self) -> tuple[list[str | None], list[str | None]]:
        """mitigate's verdicts as the position preferred in each order (for the position measures)."""
        return (
            [None if v is None else _POS[(v, "original")] for v in self.orig],
            [None if v is None else _POS[(v, "swapped")] for v in self.swap],
        )


def tables(parse: ReleaseParse) -> dict[str, Table]:
    """Every released judge of ``parse`` as a :class:`Table` over the items it judged, in benchmark order."""
    release: PairwiseRelease = parse.release
    runs = recorded_runs(parse)
    out: dict[str, Table] = {}
    for name, run in runs.items():
        items = [it for it in release.benchmark.items if run.get(it.id, RELEASE_CRITERION) is not None]
        t = Table(name, items, [it.preference[RELEASE_CRITERION] for it in items], [], [], [], [], [])
        for it in items:
            rows = {r.order: r for r in run.get(it.id, RELEASE_CRITERION).rows}  # type: ignore[union-attr]
            o, s = rows.get("original"), rows.get("swapped")
            t.orig.append(o.verdict if o else None)
            t.swap.append(s.verdict if s else None)
            t.rel_orig.append(o.meta.get("release_verdict") if o else None)
            t.rel_swap.append(s.meta.get("release_verdict") if s else None)
            sc = o.meta.get("scores") if o else None
            t.scores.append(tuple(sc) if sc and None not in sc else None)  # type: ignore[arg-type]
        out[name] = t
    return out


def hits(verdicts: list[str | None], gold: list[str]) -> np.ndarray:
    """1.0 where the verdict equals the gold preference, else 0.0 (a failure counts wrong)."""
    return np.array([float(v is not None and v == g) for v, g in zip(verdicts, gold, strict=True)])


def boot_mean(x: np.ndarray, n_boot: int, seed: int, alpha: float = 0.05) -> dict[str, Any]:
    """Mean of ``x`` with a percentile bootstrap interval over its rows."""
    x = np.asarray(x, dtype=float)
    if len(x) == 0:
        return {"value": None, "ci": None, "n": 0}
    rng = np.random.default_rng(seed)
    idx = rng.integers(0, len(x), size=(n_boot, len(x)))
    means = x[idx].mean(axis=1)
    lo, hi = np.quantile(means, [alpha / 2, 1 - alpha / 2])
    return {"value": float(x.mean()), "ci": [float(lo), float(hi)], "n": int(len(x))}


def paired_diff(x: np.ndarray, y: np.ndarray, n_boot: int, seed: int) -> dict[str, Any]:
    """Mean of ``x - y`` (per-item values on the same items) with a paired bootstrap interval."""
    return boot_mean(np.asarray(x, dtype=float) - np.asarray(y, dtype=float), n_boot, seed)


def pct(text: Any) -> float | None:
    """A figure of LLMBar's statistics.json as a fraction: "95.5%" or "95 / 100 = 95.0%" -> 0.955 / 0.95."""
    if isinstance(text, int | float):
        return float(text)
    if not isinstance(text, str) or not text.strip().endswith("%"):
        return None
    return float(text.strip().split("=")[-1].strip().rstrip("%")) / 100


def fmt_ci(d: dict[str, Any] | None, digits: int = 3, scale: float = 1.0) -> str:
    """``0.912 [0.88, 0.94]`` from a :func:`boot_mean` result."""
    if not d or d.get("value") is None:
        return "n/a"
    v = d["value"] * scale
    if not d.get("ci"):
        return f"{v:.{digits}f}"
    lo, hi = (c * scale for c in d["ci"])
    return f"{v:.{digits}f} [{lo:.{digits}f}, {hi:.{digits}f}]"


def clean(obj: Any) -> Any:
    """JSON-safe copy: NaN -> None, numpy scalars -> Python."""
    if isinstance(obj, dict):
        return {str(k): clean(v) for k, v in obj.items()}
    if isinstance(obj, list | tuple):
        return [clean(v) for v in obj]
    if isinstance(obj, np.generic):
        obj = obj.item()
    if isinstance(obj, float) and not math.isfinite(obj):
        return None
    return obj


def strip_texts(report: dict[str, dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """A parse report without the released text: examples keep item, order and both readings only.

    The results JSON is committed, and nothing a release holds (answers, instructions) may be.
    """
    keep = ("item_id", "order", "mitigate", "release")
    return {
        k: {
            **row,
            "examples": {kind: [{f: e[f] for f in keep} for e in es] for kind, es in row["examples"].items()},
        }
        for k, row in report.items()
    }


def write_json(path: Path, payload: dict[str, Any]) -> None:
    """Write ``payload`` as indented JSON (parents created)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(clean(payload), indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
