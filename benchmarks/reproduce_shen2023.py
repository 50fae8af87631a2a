"""Reproduce the numbers of Shen et al. (2023) from their released judge outputs alone (no LM call).

Shen et al., "Large Language Models are Not Yet Human-Level Evaluators for Abstractive
Summarization" (Findings of EMNLP 2023), judged the 1,200 SummEval summaries (12 abstractive
systems x 100 CNN/DM documents) on coherence, consistency, fluency and relevance with ChatGPT
(gpt-3.5-turbo-0301) by RTS (reason-then-score) and MCQ (A-E), and with GPT-4 (gpt-4-0314) by
RTS, and released every answer. This script parses those answers with mitigate's strict parsers
(a rejected answer is a parse failure, never a score) and computes, per dimension and judge:

- correlation with the expert means at three levels, clearly labelled:
  * ``item``: pooled over all 1,200 summaries (the level of the paper's main correlation
    table, whose released script correlates the 1,200 (judge, human) pairs directly);
  * ``document``: the SummEval convention, the correlation across the 12 systems' summaries
    of each document, averaged over the 100 documents;
  * ``system``: over the 12 system means;
- #CP, correct preferences over the 66 system pairs: for each pair, every document gives a
  point to the system whose summary scores higher (half a point each on a tie), separately for
  the judge and the experts; the pair is correct when both totals prefer the same system (or
  both tie). Also reported: the 11 adjacent "challenge" pairs the paper singles out, and, for
  contrast, the simpler rule that compares system means;
- P_i, the judge-human correlation within each system, and the meta-correlation
  M = corr(Q_i, P_i) over systems, Q_i being a system's mean expert score (the paper's
  released script uses the same coefficient for P_i and for M);
- R_i = corr(ChatGPT RTS, ChatGPT MCQ) within each system, the agreement signal the paper
  proposes for routing systems to human review, and how R_i relates to P_i across systems.

Run: ``python benchmarks/reproduce_shen2023.py`` (about a minute; ``--n-boot 0`` skips intervals).
Writes ``benchmarks/results/shen2023.json``.
"""

from __future__ import annotations

import argparse
import itertools
import json
import math
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # runs from a checkout without installing

import mitigate.measures as M
from mitigate.data import Item, load, load_released
from mitigate.errors import DataError
from mitigate.measures import correlation_function
from mitigate.measures._stats import as_float_array

DIMENSIONS = ("coherence", "consistency", "fluency", "relevance")
JUDGES = {"chatgpt-rts": "ChatGPT RTS", "chatgpt-mcq": "ChatGPT MCQ", "gpt4-rts": "GPT-4 RTS"}
METHODS = ("spearman", "pearson", "kendall")
CHALLENGE_PAIRS = (
    ("M22", "M23"),
    ("M23", "M17"),
    ("M17", "M12"),
    ("M12", "M13"),
    ("M13", "M15"),
    ("M15", "M14"),
    ("M14", "M8"),
    ("M8", "M9"),
    ("M9", "M10"),
    ("M10", "M20"),
    ("M20", "M11"),
)
"""The 11 pairs of systems adjacent in human quality that the paper uses as its hard ("challenge") set."""

PAPER = {
    "source": "Shen et al. 2023 as quoted in the project's DESIGN.md",
    "rts_cp_average_of_66": 58.5,
    "rts_cp_share": 0.886,
    "meta_correlation_sign": "negative (the judges agree with humans less on better systems)",
}

DEFAULT_OUT = Path(__file__).resolve().parent / "results" / "shen2023.json"


def _r(v: float | None, digits: int = 4) -> float | None:
    return None if v is None or not math.isfinite(v) else round(float(v), digits)


def _measure(m: M.Measure) -> dict[str, Any]:
    out: dict[str, Any] = {"value": _r(m.value), "n": m.n, "n_failed": m.n_failed}
    if m.ci_low is not None:
        out["ci95"] = [_r(m.ci_low), _r(m.ci_high)]
    if m.reason:
        out["reason"] = m.reason
    return out


def _cp_by_system_means(judge: np.ndarray, human: np.ndarray, systems: list[str]) -> tuple[int, int]:
    """#CP when each pair is decided by comparing the two systems' mean scores (not the paper's rule)."""
    names = list(dict.fromkeys(systems))
    arr = np.array(systems)
    means = {}
    for s in names:
        sel = (arr == s) & np.isfinite(judge) & np.isfinite(human)
        means[s] = (judge[sel].mean(), human[sel].mean())
    correct = 0
    for a, b in itertools.combinations(names, 2):
        jd = np.sign(round(means[a][0] - means[b][0], 9))
        hd = np.sign(round(means[a][1] - means[b][1], 9))
        correct += int(jd == hd)
    return correct, len(names) * (len(names) - 1) // 2


def _challenge(cp: M.Measure) -> dict[str, Any]:
    wanted = {frozenset(p) for p in CHALLENGE_PAIRS}
    rows = [r for r in cp.extra.get("pairs", []) if frozenset((r["a"], r["b"])) in wanted]
    correct = sum(1 for r in rows if r["correct"])
    return {"correct": correct, "pairs": len(rows), "share": _r(correct / len(rows)) if rows else None}


def judge_dimension(scores: list[float | None], items: list[Item], dim: str, n_boot: int) -> dict[str, Any]:
    """Every measure of one judge on one dimension."""
    judge = as_float_array(scores, "judge")
    human = M.human_scores(items, dim)
    systems = [str(s) for s in M.item_systems(items)]
    docs = [str(d) for d in M.item_doc_ids(items)]
    ci = {"ci": n_boot > 0, "n_boot": max(n_boot, 1), "seed": 0}
    out: dict[str, Any] = {
        "n_items": len(items),
        "parse_failures": int(np.isnan(judge).sum()),
        "item": {m: _measure(M.item_correlation(judge, human, m, **ci)) for m in METHODS},
        "document": {m: _measure(M.document_correlation(judge, human, docs, m)) for m in METHODS},
        "system": {
            m: _measure(M.system_correlation(judge, human, systems, m, doc_ids=docs)) for m in METHODS
        },
    }
    cp = M.correct_preferences(judge, human, systems, docs, **ci)
    out["cp"] = {**_measure(cp), "pairs": cp.extra.get("n_pairs"), "share": _r(cp.extra.get("share"))}
    out["cp_challenge"] = _challenge(cp)
    correct, pairs = _cp_by_system_means(judge, human, systems)
    out["cp_system_means"] = {"correct": correct, "pairs": pairs}
    per_system: dict[str, dict[str, float | None]] = {}
    for m in METHODS:
        for s, pm in M.per_system_correlation(judge, human, systems, m).items():
            per_system.setdefault(s, {})[m] = _r(pm.value)
    out["per_system_P"] = per_system
    out["quality_Q"] = {s: _r(float(np.mean(human[np.array(systems) == s]))) for s in dict.fromkeys(systems)}
    out["meta_M"] = {m: _measure(M.meta_correlation(judge, human, systems, m, doc_ids=docs)) for m in METHODS}
    return out


def rts_mcq_agreement(
    rts: list[float | None],
    mcq: list[float | None],
    items: list[Item],
    dim: str,
    p_rts: dict[str, dict[str, float | None]],
) -> dict[str, Any]:
    """R_i = corr(RTS, MCQ) within each system, and how R_i tracks P_i (RTS) across systems."""
    systems = [str(s) for s in M.item_systems(items)]
    a = np.array([math.nan if v is None else v for v in rts], dtype=float)
    b = np.array([math.nan if v is None else v for v in mcq], dtype=float)
    r_i: dict[str, dict[str, float | None]] = {}
    for s in dict.fromkeys(systems):
        sel = np.array(systems) == s
        r_i[s] = {m: _r(correlation_function(m)(a[sel], b[sel])) for m in METHODS}
    names = list(r_i)
    link = {}
    for m in METHODS:
        x = [r_i[s][m] for s in names]
        y = [p_rts[s][m] for s in names]
        link[m] = _r(
            correlation_function("spearman")(
                [math.nan if v is None else v for v in x], [math.nan if v is None else v for v in y]
            )
        )
    return {"R_i": r_i, "spearman_R_vs_P_rts": link}


def _fmt(v: Any) -> str:
    if v is None:
        return "  n/a"
    return f"{v:+.3f}" if isinstance(v, float) else str(v)


def print_tables(results: dict[str, Any]) -> None:
    """Human-readable tables on stdout."""
    judges = results["judges"]
    for level, title in (
        ("item", "pooled over all 1,200 summaries (paper's level)"),
        ("document", "per document, mean over 100 documents (SummEval convention)"),
        ("system", "over the 12 system means"),
    ):
        print(f"\nCorrelation with expert means, {title}: Spearman / Pearson / Kendall")
        print(f"{'judge':<13}" + "".join(f"{d:>24}" for d in DIMENSIONS))
        for j, label in JUDGES.items():
            cells = []
            for d in DIMENSIONS:
                v = judges[j][d][level]
                cells.append(" ".join(f"{_fmt(v[m]['value']):>7}" for m in METHODS))
            print(f"{label:<13}" + "".join(f"{c:>24}" for c in cells))
    print("\n#CP, correct preferences over 66 system pairs (per-document points, the paper's rule)")
    print(
        f"{'judge':<13}"
        + "".join(f"{d:>13}" for d in DIMENSIONS)
        + f"{'average':>10}{'share':>8}"
        + f"{'challenge 11':>14}{'by means':>10}"
    )
    for j, label in JUDGES.items():
        cps = [judges[j][d]["cp"]["value"] for d in DIMENSIONS]
        avg = float(np.mean(cps))
        ch = sum(judges[j][d]["cp_challenge"]["correct"] for d in DIMENSIONS) / 4
        means = sum(judges[j][d]["cp_system_means"]["correct"] for d in DIMENSIONS) / 4
        print(
            f"{label:<13}"
            + "".join(f"{c:>13g}" for c in cps)
            + f"{avg:>10.2f}{avg / 66:>8.1%}"
            + f"{ch:>11.2f}/11{means:>10.2f}"
        )
    print("\nMeta-correlation M = corr(Q_i, P_i) over 12 systems: Spearman / Pearson / Kendall")
    print(f"{'judge':<13}" + "".join(f"{d:>24}" for d in DIMENSIONS))
    for j, label in JUDGES.items():
        cells = [
            " ".join(f"{_fmt(judges[j][d]['meta_M'][m]['value']):>7}" for m in METHODS) for d in DIMENSIONS
        ]
        print(f"{label:<13}" + "".join(f"{c:>24}" for c in cells))
    print(
        "\nR_i = Spearman(ChatGPT RTS, ChatGPT MCQ) within each system; last row: Spearman(R_i, P_i of RTS)"
    )
    agree = results["rts_mcq_agreement"]
    systems = list(agree[DIMENSIONS[0]]["R_i"])
    print(f"{'system':<8}" + "".join(f"{d:>13}" for d in DIMENSIONS))
    for s in systems:
        print(f"{s:<8}" + "".join(f"{_fmt(agree[d]['R_i'][s]['spearman']):>13}" for d in DIMENSIONS))
    print(
        f"{'R vs P':<8}"
        + "".join(f"{_fmt(agree[d]['spearman_R_vs_P_rts']['spearman']):>13}" for d in DIMENSIONS)
    )
    print(
        "\nParse failures (of 1,200 per dimension): "
        + ", ".join(
            f"{label} " + "/".join(str(judges[j][d]["parse_failures"]) for d in DIMENSIONS)
            for j, label in JUDGES.items()
        )
    )


def main(argv: list[str] | None = None) -> int:
    """Compute, print and write the reproduction."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--n-boot", type=int, default=1000, help="bootstrap resamples for the intervals (0: none)"
    )
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT, help="where to write the JSON results")
    args = parser.parse_args(argv)
    start = time.perf_counter()
    try:
        bench = load("summeval")
        runs = {j: load_released(j, bench) for j in JUDGES}
    except DataError as exc:
        print(f"error: the shared SummEval data is needed: {exc}", file=sys.stderr)
        return 2
    items = list(bench.items)
    judges: dict[str, dict[str, Any]] = {}
    scores: dict[str, dict[str, list[float | None]]] = {}
    for j, run in runs.items():
        judges[j] = {"model": run.model, "method": run.method}
        scores[j] = {}
        for d in DIMENSIONS:
            s = run.scores(d)
            scores[j][d] = [s.get(it.id) for it in items]
            judges[j][d] = judge_dimension(scores[j][d], items, d, args.n_boot)
    agreement = {
        d: rts_mcq_agreement(
            scores["chatgpt-rts"][d],
            scores["chatgpt-mcq"][d],
            items,
            d,
            judges["chatgpt-rts"][d]["per_system_P"],
        )
        for d in DIMENSIONS
    }
    results = {
        "command": "python benchmarks/reproduce_shen2023.py"
        + (f" --n-boot {args.n_boot}" if args.n_boot != 1000 else ""),
        "data": {
            "benchmark": bench.name,
            "items": len(items),
            "systems": len({i.system for i in items}),
            "documents": len({i.doc_id for i in items}),
            "human": "mean of the 3 expert ratings (1-5)",
        },
        "bootstrap": {
            "n_boot": args.n_boot,
            "seed": 0,
            "level": "95% percentile; items resampled (#CP: documents resampled)",
        },
        "judges": judges,
        "rts_mcq_agreement": agreement,
        "summary": {
            j: {
                "cp_average": float(np.mean([judges[j][d]["cp"]["value"] for d in DIMENSIONS])),
                "cp_share": float(np.mean([judges[j][d]["cp"]["value"] for d in DIMENSIONS])) / 66,
                "cp_system_means_average": float(
                    np.mean([judges[j][d]["cp_system_means"]["correct"] for d in DIMENSIONS])
                ),
                "cp_challenge_average": float(
                    np.mean([judges[j][d]["cp_challenge"]["correct"] for d in DIMENSIONS])
                ),
            }
            for j in JUDGES
        },
        "paper": PAPER,
        "seconds": round(time.perf_counter() - start, 1),
    }
    print_tables(results)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(results, indent=1) + "\n", encoding="utf-8")
    print(f"\nwrote {args.out} in {results['seconds']}s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
