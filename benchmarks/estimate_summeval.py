"""Bias-corrected per-system estimates on SummEval's released judges: coverage and width over repeated label
draws.

SummEval (LLM_summeval copy): 12 systems x 100 documents, every summary rated by 3 experts on
coherence, consistency, fluency and relevance (1-5). Shen et al. (2023) released every
answer ChatGPT (RTS and MCQ), GPT-4 (RTS) and Llama-2 (RTS) gave on them. Here each system's
*truth* is the mean expert rating over its 100 summaries; an experiment draws ``n`` labelled
summaries per system at random (the other labels hidden), estimates each system's mean from
the judge's score on all 100 plus the ``n`` labels, and checks whether the interval holds the
truth. Repeated over ``--draws`` draws (default 200) at n = 5, 10 and 20 labels per system.

Per judge, criterion and n the script reports, for ``ppi`` (PPI++ with power tuning, one
judge slope tuned over the 12 systems as ``mitigate estimate`` does by default), ``ppi-group``
(one slope per system), ``calibrated`` (cross-fitted isotonic calibration) and ``human`` (the
labels alone):

- coverage: the share of (system, draw) intervals holding the truth, over every (system, draw): a
  system whose n labels are all equal gets, as in ``mitigate estimate``, the exact interval that bounds
  the share of its items labelled otherwise (``all_equal`` is that share of the (system, draw) pairs;
  ``refused`` what the estimator still refused);
- mean half-width of the 95% intervals;
- Kendall tau-b between the method's ranking of the 12 systems and the truth's, averaged over draws
  (over the draws where no system was refused);

and for the judge alone (no labels, so one value): its coverage of the truth with the naive
interval, its half-width, and its ranking's tau.

Run: ``python benchmarks/estimate_summeval.py`` (about a minute; it needs the shared data
folder). Writes ``benchmarks/results/estimate_summeval.json``.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # runs from a checkout without installing

from mitigate.data import CRITERIA, load_summeval, released_recorded
from mitigate.errors import DataError
from mitigate.estimators import estimate_mean, judge_values, kendall_tau
from mitigate.estimators._regression import shared_slope

JUDGES = ("chatgpt-rts", "chatgpt-mcq", "gpt4-rts", "llama2-13b-rts")
LABEL_COUNTS = (5, 10, 20)
METHODS = ("ppi", "ppi-group", "calibrated", "human")
"""``ppi`` tunes one judge slope over the 12 systems (the command's default, ``--tune overall``);
``ppi-group`` one per
system (``--tune group``)."""
OUT = Path(__file__).resolve().parent / "results" / "estimate_summeval.json"


def _r(x: float | None, digits: int = 3) -> float | None:
    return None if x is None or not math.isfinite(x) else round(float(x), digits)


def one_setting(
    labels: dict[str, np.ndarray],
    judge: dict[str, np.ndarray],
    n: int,
    draws: int,
    seed: int,
    confidence: float,
    bounds: tuple[float, float] = (1.0, 5.0),
) -> dict[str, Any]:
    """Every method over ``draws`` draws of ``n`` labels per system; the judge alone once."""
    systems = list(labels)
    truth = {s: float(labels[s].mean()) for s in systems}
    rng = np.random.default_rng(seed)
    out: dict[str, Any] = {}
    hits = {m: [] for m in METHODS}
    widths = {m: [] for m in METHODS}
    refused = dict.fromkeys(METHODS, 0)
    all_equal = dict.fromkeys(METHODS, 0)
    taus: dict[str, list[float]] = {m: [] for m in METHODS}
    for d in range(draws):
        points: dict[str, dict[str, float]] = {m: {} for m in METHODS}
        partial: dict[str, np.ndarray] = {}
        for s in systems:
            keep = rng.choice(len(labels[s]), n, replace=False)
            partial[s] = np.full(len(labels[s]), np.nan)
            partial[s][keep] = labels[s][keep]
        slope = shared_slope([(partial[s], judge[s]) for s in systems])
        for s in systems:
            for m in METHODS:
                try:
                    e = estimate_mean(
                        partial[s],
                        judge[s],
                        method=m.split("-")[0],
                        confidence=confidence,  # type: ignore[arg-type]
                        seed=d,
                        slope=slope if m == "ppi" else None,
                        bounds=bounds,
                    )
                except DataError:
                    refused[m] += 1
                    continue
                all_equal[m] += e.constant_labels is not None
                hits[m].append(e.low <= truth[s] <= e.high)
                widths[m].append(e.half_width)
                points[m][s] = e.estimate
        for m in METHODS:
            if len(points[m]) == len(systems):
                tau = kendall_tau(points[m], truth)
                if tau is not None:
                    taus[m].append(tau)
    total = draws * len(systems)
    for m in METHODS:
        out[m] = {
            "coverage": _r(float(np.mean(hits[m])) if hits[m] else math.nan),
            "half_width": _r(float(np.mean(widths[m])) if widths[m] else math.nan),
            "refused": _r(refused[m] / total),
            "all_equal": _r(all_equal[m] / total),
            "tau": _r(float(np.mean(taus[m])) if taus[m] else math.nan),
            "tau_draws": len(taus[m]),
        }
    judge_only = {
        s: estimate_mean(np.full(len(labels[s]), np.nan), judge[s], method="judge", confidence=confidence)
        for s in systems
    }
    out["judge"] = {
        "coverage": _r(
            float(np.mean([judge_only[s].low <= truth[s] <= judge_only[s].high for s in systems]))
        ),
        "half_width": _r(float(np.mean([judge_only[s].half_width for s in systems]))),
        "tau": _r(kendall_tau({s: judge_only[s].estimate for s in systems}, truth)),
    }
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--draws", type=int, default=200)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--confidence", type=float, default=0.95)
    ap.add_argument("--judges", default=",".join(JUDGES))
    ap.add_argument("--criteria", default=",".join(CRITERIA))
    ap.add_argument("--label-counts", default=",".join(str(n) for n in LABEL_COUNTS))
    ap.add_argument("--out", type=Path, default=OUT)
    args = ap.parse_args()
    start = time.perf_counter()
    bench = load_summeval()
    results: list[dict[str, Any]] = []
    header = (
        f"{'judge':15s} {'criterion':12s} {'n':>3s} | {'ppi cov':>7s} {'±':>5s} {'tau':>5s} | "
        f"{'ppi-grp':>7s} {'±':>5s} | {'cal cov':>7s} {'±':>5s} | {'human cov':>9s} {'±':>5s} "
        f"{'tau':>5s} {'equal':>7s} | {'judge cov':>9s} {'±':>5s} {'tau':>5s}"
    )
    print(header)
    print("-" * len(header))
    for judge_name in args.judges.split(","):
        run = released_recorded(judge_name)
        for crit in args.criteria.split(","):
            values, missing = judge_values(run, bench.items, crit)
            labels: dict[str, list[float]] = {}
            scores: dict[str, list[float]] = {}
            for it, v in zip(bench.items, values, strict=True):
                labels.setdefault(str(it.system), []).append(it.human[crit])
                scores.setdefault(str(it.system), []).append(math.nan if v is None else v)
            lab = {s: np.array(v) for s, v in labels.items()}
            jud = {s: np.array(v) for s, v in scores.items()}
            for n in [int(k) for k in args.label_counts.split(",")]:
                scale = bench.scale_for(crit)
                bounds = (float(scale.min), float(scale.max))
                row = one_setting(lab, jud, n, args.draws, args.seed + n, args.confidence, bounds)
                row.update(judge_name=judge_name, criterion=crit, n=n, judge_missing=missing)
                results.append(row)
                p, g, c, h, j = row["ppi"], row["ppi-group"], row["calibrated"], row["human"], row["judge"]

                def f(x: float | None, w: int = 5, d: int = 3) -> str:
                    return f"{'-':>{w}s}" if x is None else f"{x:{w}.{d}f}"

                print(
                    f"{judge_name:15s} {crit:12s} {n:3d} | {f(p['coverage'], 7)} {f(p['half_width'])} "
                    f"{f(p['tau'], 5, 2)} | {f(g['coverage'], 7)} {f(g['half_width'])} | "
                    f"{f(c['coverage'], 7)} {f(c['half_width'])} | {f(h['coverage'], 9)} "
                    f"{f(h['half_width'])} {f(h['tau'], 5, 2)} {f(h['all_equal'], 7)} | "
                    f"{f(j['coverage'], 9)} {f(j['half_width'])} {f(j['tau'], 5, 2)}",
                    flush=True,
                )
    seconds = time.perf_counter() - start
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(
        json.dumps(
            {
                "command": " ".join(["python", *sys.argv]),
                "draws": args.draws,
                "seed": args.seed,
                "confidence": args.confidence,
                "label_counts": [int(k) for k in args.label_counts.split(",")],
                "seconds": round(seconds, 1),
                "truth": "mean expert rating over each system's 100 summaries",
                "results": results,
            },
            indent=1,
        )
        + "\n"
    )
    print(f"wrote {args.out} ({seconds:.0f} s)")


if __name__ == "__main__":
    main()
