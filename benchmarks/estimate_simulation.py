"""Coverage and width of the estimators with known truth: six judge qualities, 5 to 100 labels per group.

A group of 500 items with labels shaped like SummEval's expert means (thirds of 1-5) and a
judge of a given quality (rounded to 1-5): ``good`` (label + small noise), ``noisy`` (label +
large noise), ``biased`` (offset and compressed slope: 1 + 0.4 * label + noise), ``uncorrelated``,
``adversarial`` (6 - label + noise) and ``heteroscedastic`` (accurate on labels of 3 and
above, very noisy below). The truth is the mean label of the 500 items; each draw labels ``n``
of them at random. For every judge and n the script reports the empirical coverage of the 95%
intervals and their mean half-width for:

- ``ppi``: mitigate's (PPI++ with power tuning, Student-t with the fitted slope's uncertainty);
- ``ppi-clt``: the same point estimate with the paper's plain CLT interval
  (``Var(Y - lam f)/n + lam^2 Var(f)/N_u``, normal quantile), for comparison;
- ``calibrated`` (cross-fitted isotonic; fewer draws, it loops over folds);
- ``human``: the labels alone;

and the ratio of ``ppi``'s mean half-width to the labels-alone one. Draws the estimator would
refuse (no spread) are left out and counted.

Run: ``python benchmarks/estimate_simulation.py`` (about half a minute). Writes
``benchmarks/results/estimate_simulation.json``.
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

from mitigate.errors import DataError
from mitigate.estimators import estimate_mean
from mitigate.estimators._regression import human_srs, ppi_srs, t_quantile

JUDGES = ("good", "noisy", "biased", "uncorrelated", "adversarial", "heteroscedastic")
LABEL_COUNTS = (5, 10, 20, 100)
SIZE = 500
OUT = Path(__file__).resolve().parent / "results" / "estimate_simulation.json"


def population(judge: str, seed: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    y = np.clip(np.round((3.3 + 0.8 * rng.normal(size=SIZE)) * 3) / 3, 1, 5)
    e = rng.normal(size=SIZE)
    f = {
        "good": y + 0.4 * e,
        "noisy": y + 1.5 * e,
        "biased": 1.0 + 0.4 * y + 0.2 * e,
        "uncorrelated": 3.0 + e,
        "adversarial": 6.0 - y + 0.5 * e,
        "heteroscedastic": y + np.where(y < 3, 2.0, 0.2) * e,
    }[judge]
    return y, np.clip(np.round(f), 1, 5)


def summary(estimate: np.ndarray, half: np.ndarray, usable: np.ndarray, truth: float) -> dict[str, float]:
    return {
        "coverage": round(float((np.abs(estimate - truth) <= half)[usable].mean()), 4),
        "half_width": round(float(half[usable].mean()), 4),
        "refused": round(float(1 - usable.mean()), 4),
    }


def paper_clt(
    y: np.ndarray, f: np.ndarray, f_all: np.ndarray, fit_estimate: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """The PPI++ point estimate with the paper's CLT interval (normal quantile, no slope uncertainty)."""
    n = y.shape[1]
    n_u = SIZE - n
    f_unlab_mean = (SIZE * f_all.mean() - f.sum(1)) / n_u
    cov = ((y - y.mean(1, keepdims=True)) * (f - f.mean(1, keepdims=True))).sum(1) / (n - 1)
    var_f = f.var(1, ddof=1)
    lam = np.where(var_f > 0, cov / ((1 + n / n_u) * np.where(var_f > 0, var_f, 1)), 0.0)
    estimate = y.mean(1) + lam * (f_unlab_mean - f.mean(1))
    variance = (y - lam[:, None] * f).var(1, ddof=1) / n + lam**2 * f_all.var(ddof=1) / n_u
    return estimate, stats.norm.ppf(0.975) * np.sqrt(variance)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--draws", type=int, default=2000)
    ap.add_argument("--calibrated-draws", type=int, default=300)
    ap.add_argument("--out", type=Path, default=OUT)
    args = ap.parse_args()
    start = time.perf_counter()
    rows: list[dict[str, Any]] = []
    print(
        f"{'judge':16s} {'n':>3s} | {'ppi':>11s} | {'ppi-clt':>11s} | {'calibrated':>11s} | {'human':>11s} "
        f"| ppi/human width"
    )
    for k, judge in enumerate(JUDGES):
        y, f = population(judge, seed=k)
        truth = float(y.mean())
        for n in LABEL_COUNTS:
            rng = np.random.default_rng(100 * k + n)
            idx = np.argsort(rng.random((args.draws, SIZE)), axis=1)[:, :n]
            row: dict[str, Any] = {"judge": judge, "n": n, "items": SIZE, "draws": args.draws}
            for name, fit in (
                ("ppi", ppi_srs(y[idx], f[idx], f.mean(), SIZE)),
                ("human", human_srs(y[idx], SIZE)),
            ):
                half = t_quantile(0.95, fit.df) * np.sqrt(fit.variance)
                usable = np.isfinite(half) & (fit.variance > 0)
                row[name] = summary(fit.estimate, half, usable, truth)
                if name == "ppi":
                    clt_estimate, clt_half = paper_clt(y[idx], f[idx], f, fit.estimate)
                    row["ppi-clt"] = summary(clt_estimate, clt_half, usable, truth)
            hits, halves, refused = [], [], 0
            for d, picks in enumerate(idx[: args.calibrated_draws]):
                labels = np.full(SIZE, np.nan)
                labels[picks] = y[picks]
                try:
                    e = estimate_mean(labels, f, method="calibrated", seed=d)
                except DataError:
                    refused += 1
                    continue
                hits.append(e.low <= truth <= e.high)
                halves.append(e.half_width)
            row["calibrated"] = {
                "coverage": round(float(np.mean(hits)), 4),
                "half_width": round(float(np.mean(halves)), 4),
                "refused": round(refused / args.calibrated_draws, 4),
                "draws": args.calibrated_draws,
            }
            row["width_ratio_ppi_human"] = round(row["ppi"]["half_width"] / row["human"]["half_width"], 3)
            rows.append(row)

            def cell(r: dict[str, float]) -> str:
                return f"{r['coverage']:.3f} ±{r['half_width']:.2f}"

            print(
                f"{judge:16s} {n:3d} | {cell(row['ppi'])} | {cell(row['ppi-clt'])} | "
                f"{cell(row['calibrated'])} | {cell(row['human'])} | {row['width_ratio_ppi_human']:.2f}",
                flush=True,
            )
    seconds = time.perf_counter() - start
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(
        json.dumps(
            {"command": " ".join(["python", *sys.argv]), "seconds": round(seconds, 1), "results": rows},
            indent=1,
        )
        + "\n"
    )
    print(f"wrote {args.out} ({seconds:.0f} s)")


if __name__ == "__main__":
    main()
