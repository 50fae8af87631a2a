"""The RTS/MCQ agreement gate (Shen et al. 2023) on the released ChatGPT outputs: does R_i predict P_i?

Shen et al. ("Large language models are not yet human-level evaluators for abstractive
summarization", Findings of EMNLP 2023) propose that, for each summarisation system i, the
agreement R_i between a judge's reason-then-score (RTS) and multiple-choice (MCQ) answers
should flag the systems on which the judge is unreliable, with no human label needed. The
judge's reliability on system i is P_i, the correlation of its scores with the experts' over
that system's summaries. They report that R_i significantly predicts P_i for RTS on
consistency and fluency, and for MCQ on coherence and consistency.

This script uses the answers ChatGPT (gpt-3.5-turbo-0301) gave in both forms for the 1,200
SummEval summaries (12 systems x 100 documents). No LM is called. For each dimension it reports:

- R_i per system: the ``--method`` correlation (default Spearman) of RTS and MCQ scores over
  the system's 100 summaries, computed by :func:`mitigate.strategies._agreement_gate.gate_released`;
- the gate's decision per system at tolerance r (``--tolerance``, default 0.5), and the sweep
  r in {0.3, 0.5, 0.7}: which systems go to human review, and the mean P_i of accepted and
  flagged systems;
- P_i of RTS and of MCQ per system (same correlation, against the mean of the 3 experts);
- how well R_i predicts P_i across the 12 systems: Spearman and Pearson with two-sided
  p-values (scipy), for RTS and for MCQ. With n = 12 a correlation needs about |rho| >= 0.59
  (Spearman) to reach p < 0.05.

Run: ``python benchmarks/agreement_gate_released.py`` (a few seconds; it needs the shared data
folder). Writes ``benchmarks/results/agreement_gate_released.json``.
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
from scipy import stats

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # runs from a checkout without installing

import mitigate.measures as M
from mitigate.data import CRITERIA, load_summeval
from mitigate.strategies import AgreementGate, gate_released

SWEEP = (0.3, 0.5, 0.7)
PAPER_SIGNIFICANT = {"rts": ("consistency", "fluency"), "mcq": ("coherence", "consistency")}
"""Where Shen et al. report that R_i significantly predicts P_i."""


def _clean(x: float) -> float | None:
    return None if x is None or not math.isfinite(x) else round(float(x), 4)


def predict(r: dict[str, float], p: dict[str, float]) -> dict[str, Any]:
    """Spearman and Pearson of R_i vs P_i across the systems that have both, with two-sided p-values."""
    systems = [s for s in r if math.isfinite(r[s]) and math.isfinite(p.get(s, math.nan))]
    x = np.array([r[s] for s in systems])
    y = np.array([p[s] for s in systems])
    if len(systems) < 3:
        return {"n": len(systems), "reason": "fewer than 3 systems with both R_i and P_i"}
    rho, p_rho = stats.spearmanr(x, y)
    pr, p_pr = stats.pearsonr(x, y)
    return {
        "n": len(systems),
        "spearman": _clean(rho),
        "spearman_p": _clean(p_rho),
        "pearson": _clean(pr),
        "pearson_p": _clean(p_pr),
    }


def mcq_p(report_judgments: Any, items: list[Any], criterion: str, method: str) -> dict[str, float]:
    """P_i of the MCQ answers: per system, corr(MCQ score, expert mean)."""
    mcq = [j.meta["mcq"][criterion] for j in report_judgments]
    scores = [math.nan if v is None else v for v in mcq]
    per = M.per_system_correlation(scores, M.human_scores(items, criterion), M.item_systems(items), method)
    return {s: float(m.value) for s, m in per.items()}


def analyse(method: str, tolerance: float, min_items: int) -> dict[str, Any]:
    """Every number of the module docstring, per dimension, with R_i and P_i by ``method``."""
    items = list(load_summeval("llm_summeval").items)
    out: dict[str, Any] = {}
    for c in CRITERIA:
        per_r: dict[float, Any] = {}
        for r in sorted({*SWEEP, tolerance}):
            gate = AgreementGate(tolerance=r, method=method, min_items=min_items)
            per_r[r] = gate_released(c, gate=gate, p_method=method, predict_method="spearman")[c]
        main = per_r[tolerance]
        r_i = main.gate.r_by_system()
        p_rts = dict(main.p)
        p_mcq = mcq_p(main.gate.judgments, items, c, method)
        sweep = {}
        for r, rep in per_r.items():
            flagged = rep.gate.flagged_systems()
            accepted = [s for s in r_i if s not in flagged]
            sweep[f"{r:g}"] = {
                "flagged": flagged,
                "n_flagged": len(flagged),
                "mean_p_rts_accepted": _clean(np.mean([p_rts[s] for s in accepted])) if accepted else None,
                "mean_p_rts_flagged": _clean(np.mean([p_rts[s] for s in flagged])) if flagged else None,
                "mean_p_mcq_accepted": _clean(np.mean([p_mcq[s] for s in accepted])) if accepted else None,
                "mean_p_mcq_flagged": _clean(np.mean([p_mcq[s] for s in flagged])) if flagged else None,
            }
        out[c] = {
            "systems": {
                s: {
                    "r": _clean(r_i[s]),
                    "n": main.gate.decision(s).n,
                    "decision": main.gate.decision(s).decision,
                    "p_rts": _clean(p_rts.get(s, math.nan)),
                    "p_mcq": _clean(p_mcq.get(s, math.nan)),
                }
                for s in r_i
            },
            "sweep": sweep,
            "r_predicts_p_rts": predict(r_i, p_rts),
            "r_predicts_p_mcq": predict(r_i, p_mcq),
            "parse_failures": main.parse_failures,
        }
    return out


def verdict(results: dict[str, Any], alpha: float = 0.05) -> dict[str, dict[str, bool]]:
    """Per form and dimension: is Spearman(R_i, P_i) positive with p < alpha?"""
    return {
        form: {
            c: bool(
                (v := results[c][f"r_predicts_p_{form}"]).get("spearman") is not None
                and v["spearman"] > 0
                and v["spearman_p"] < alpha
            )
            for c in results
        }
        for form in ("rts", "mcq")
    }


def main(argv: list[str] | None = None) -> None:
    """Command-line entry: compute, print a summary table, write the JSON."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument(
        "--method",
        default="spearman",
        choices=("spearman", "pearson", "kendall"),
        help="correlation for R_i and P_i within a system (default spearman)",
    )
    ap.add_argument("--tolerance", type=float, default=0.5, help="the gate's tolerance r (default 0.5)")
    ap.add_argument("--min-items", type=int, default=5, help="fewest items with both scores for an R_i")
    ap.add_argument(
        "--also-pearson",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="also report R_i and P_i computed with Pearson (robustness check)",
    )
    ap.add_argument(
        "--out",
        type=Path,
        default=Path(__file__).resolve().parent / "results" / "agreement_gate_released.json",
    )
    args = ap.parse_args(argv)
    t0 = time.perf_counter()
    results = {args.method: analyse(args.method, args.tolerance, args.min_items)}
    if args.also_pearson and args.method != "pearson":
        results["pearson"] = analyse("pearson", args.tolerance, args.min_items)
    main_res = results[args.method]
    for c, res in main_res.items():
        print(f"\n== {c} (R_i, P_i by {args.method}; gate r={args.tolerance:g}) ==")
        print(f"{'system':<6} {'R_i':>7} {'decision':<18} {'P_i RTS':>8} {'P_i MCQ':>8}")
        for s, v in res["systems"].items():
            print(f"{s:<6} {v['r']:>7.3f} {v['decision']:<18} {v['p_rts']:>8.3f} {v['p_mcq']:>8.3f}")
        for form in ("rts", "mcq"):
            pr = res[f"r_predicts_p_{form}"]
            print(
                f"R_i vs P_i {form.upper()} (n={pr['n']} systems): Spearman {pr['spearman']:+.3f} "
                f"(p={pr['spearman_p']:.3f}), Pearson {pr['pearson']:+.3f} (p={pr['pearson_p']:.3f})"
            )
        for r, sw in res["sweep"].items():
            print(
                f"  r={r}: {sw['n_flagged']} flagged {sw['flagged']}; mean P_i RTS accepted "
                f"{sw['mean_p_rts_accepted']} vs flagged {sw['mean_p_rts_flagged']}"
            )
    found = verdict(main_res)
    print("\nSpearman(R_i, P_i) > 0 with p < 0.05:")
    for form, per in found.items():
        print(
            f"  {form.upper()}: ours {[c for c, ok in per.items() if ok]}; paper "
            f"{list(PAPER_SIGNIFICANT[form])}"
        )
    payload = {
        "what": "RTS/MCQ agreement gate on Shen et al.'s released ChatGPT outputs (SummEval, 12 "
        "systems x 100 docs)",
        "command": "python benchmarks/agreement_gate_released.py "
        + " ".join(argv if argv is not None else sys.argv[1:]),
        "settings": {
            "method": args.method,
            "tolerance": args.tolerance,
            "sweep": list(SWEEP),
            "min_items": args.min_items,
            "human": "mean of the 3 expert ratings",
        },
        "paper_significant": {k: list(v) for k, v in PAPER_SIGNIFICANT.items()},
        "significant_spearman_p05": found,
        "results": results,
        "seconds": round(time.perf_counter() - t0, 2),
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(payload, indent=1) + "\n", encoding="utf-8")
    print(f"\nwrote {args.out} ({payload['seconds']} s)")


if __name__ == "__main__":
    main()
