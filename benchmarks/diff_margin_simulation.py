"""How often ``mitigate diff --margin`` passes, fails or cannot decide, when the truth is known (simulation).

A population of 50,000 items with human scores on 1-5; judge A is the human score plus Gaussian noise,
rounded onto 1-5; judge B the same with more noise, tuned by bisection so that B's population Spearman with
the humans is A's minus a chosen gap (0, the margin, twice the margin). Each draw takes ``n`` items at
random, computes the paired percentile bootstrap of B - A's Spearman (1,000 item resamples, batched with
numpy here: the diff's own loop costs about 2 s a draw) with the p at the margin by the diff's rule
(:func:`mitigate.measures._paired.threshold_p`), gates on it at level 0.05 with the diff's gate
(:func:`mitigate.diff.gate`), and counts the outcome.

What must hold: at a true gap equal to the margin the gate may pass at most 5% of the time (the false pass);
at twice the margin it should fail (B shown worse) as often as the items allow (the power).

Run: ``python benchmarks/diff_margin_simulation.py`` (a few minutes; run it under the bench lock). Writes
``benchmarks/results/diff_margin_simulation.json``.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np
from scipy import stats

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # runs from a checkout without installing

from mitigate.diff import gate
from mitigate.diff._report import DiffMeasure, DiffReport
from mitigate.measures._paired import threshold_p

OUT = Path(__file__).resolve().parent / "results" / "diff_margin_simulation.json"
POPULATION = 50_000


def judge_scores(human: np.ndarray, sd: float, rng: np.random.Generator) -> np.ndarray:
    """The human score plus N(0, sd) noise, rounded onto the 1-5 grid."""
    return np.clip(np.rint(human + rng.normal(0, sd, len(human))), 1, 5)


def tune_b(human: np.ndarray, rho_a: float, gap: float, seed: int) -> tuple[float, float]:
    """B's noise sd giving a population Spearman of ``rho_a - gap`` (bisection), and that Spearman."""
    lo, hi = 0.0, 20.0
    rho = rho_a
    for _ in range(30):
        mid = (lo + hi) / 2
        rho = float(stats.spearmanr(judge_scores(human, mid, np.random.default_rng(seed)), human).statistic)
        if rho > rho_a - gap:
            lo = mid
        else:
            hi = mid
    return (lo + hi) / 2, rho


def bootstrap_difference(
    a: np.ndarray, b: np.ndarray, h: np.ndarray, n_boot: int, seed: int, threshold: float
) -> dict[str, float]:
    """Spearman(b, h) - Spearman(a, h), its 95% percentile interval over item resamples, the two-sided
    bootstrap p of 0 and of ``threshold`` (the diff's rules)."""

    def rho(x: np.ndarray, y: np.ndarray) -> np.ndarray:
        rx, ry = stats.rankdata(x, axis=-1), stats.rankdata(y, axis=-1)
        rx, ry = rx - rx.mean(-1, keepdims=True), ry - ry.mean(-1, keepdims=True)
        return (rx * ry).sum(-1) / np.sqrt((rx * rx).sum(-1) * (ry * ry).sum(-1))

    sa, sb = float(rho(a, h)), float(rho(b, h))
    idx = np.random.default_rng(seed).integers(0, len(a), (n_boot, len(a)))
    values = rho(b[idx], h[idx]) - rho(a[idx], h[idx])
    values = values[np.isfinite(values)]
    lo, hi = np.percentile(values, [2.5, 97.5])
    tail = min(int((values <= 0).sum()), int((values >= 0).sum()))
    return {
        "a": sa,
        "b": sb,
        "delta": sb - sa,
        "low": float(lo),
        "high": float(hi),
        "p": min(1.0, 2 * (1 + tail) / (1 + len(values))),
        "p_margin": threshold_p(values, sb - sa, threshold) or 1.0,
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--n", type=int, default=200, help="items per draw")
    ap.add_argument("--margin", type=float, default=0.05)
    ap.add_argument("--draws", type=int, default=400)
    ap.add_argument("--n-boot", type=int, default=1000)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--out", type=Path, default=OUT)
    args = ap.parse_args()
    start = time.perf_counter()
    rng = np.random.default_rng(args.seed)
    human = rng.integers(1, 6, POPULATION).astype(float)
    a_all = judge_scores(human, 1.0, np.random.default_rng(args.seed + 1))
    rho_a = float(stats.spearmanr(a_all, human).statistic)
    rows: list[dict[str, Any]] = []
    print(f"A's population Spearman {rho_a:.4f}; {args.draws} draws of {args.n} items, margin {args.margin}")
    for k, gap in enumerate((0.0, args.margin, 2 * args.margin)):
        sd_b, rho_b = tune_b(human, rho_a, gap, args.seed + 2 + k)
        b_all = judge_scores(human, sd_b, np.random.default_rng(args.seed + 2 + k))
        counts = {"pass": 0, "fail": 0, "inconclusive": 0}
        needed: list[int] = []
        for d in range(args.draws):
            idx = rng.choice(POPULATION, args.n, replace=False)
            diff = bootstrap_difference(a_all[idx], b_all[idx], human[idx], args.n_boot, d, -args.margin)
            measure = DiffMeasure(name="spearman", criterion="c", **diff, n=args.n, margin=args.margin)
            rep = DiffReport(
                a="A",
                b="B",
                criteria=("c",),
                task="score",
                n_items=args.n,
                unit="items",
                n_units=args.n,
                measures=(measure,),
            )
            g = gate(rep, [("spearman", 0.05)])
            counts[g.outcome] += 1
            needed += [c.items_needed for c in g.checks if c.items_needed is not None]
        row = {
            "true_gap": gap,
            "rho_a": round(rho_a, 4),
            "rho_b": round(rho_b, 4),
            **{k: round(v / args.draws, 4) for k, v in counts.items()},
            "median_items_needed_when_inconclusive": int(np.median(needed)) if needed else None,
        }
        rows.append(row)
        print(json.dumps(row), flush=True)
    seconds = time.perf_counter() - start
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(
        json.dumps(
            {
                "command": " ".join(["python", *sys.argv]),
                "n": args.n,
                "margin": args.margin,
                "draws": args.draws,
                "level": 0.05,
                "seconds": round(seconds, 1),
                "results": rows,
            },
            indent=1,
        )
        + "\n"
    )
    print(f"wrote {args.out} ({seconds:.0f} s)")


if __name__ == "__main__":
    main()
