"""Selective evaluation with a guarantee, panels, and balanced-position calibration on the released SummEval
judges.

No LM is called: every judgment is one Shen et al. (2023) released (ChatGPT RTS and MCQ,
GPT-4 RTS, Llama-2-70B RTS, and ChatGPT's head-to-head verdicts in both orders), replayed
through :class:`~mitigate.replay.ReleasedJudge`. Experts: the mean of the 3
SummEval expert scores.

1. **Panel** (Verga et al. 2024): the four judges as a :class:`~mitigate.strategies.PanelJudge`
   with mean, median and strict-majority reducers, against each judge alone: item-level
   Spearman with the experts, and agreement (score within ``--tolerance`` of the expert mean),
   each with a 95% bootstrap interval, per SummEval dimension.
2. **Selective evaluation** (Jung et al. 2024): a judgment *agrees* when it is within
   ``--tolerance`` of the expert mean. Three judges with a confidence each:
   ChatGPT RTS with its RTS/MCQ agreement as confidence (``rts-mcq``), the median panel
   with the members' agreement as confidence (``samples``), and a cascade of the two (ChatGPT
   first, the panel for what it escalates, a human for the rest). Documents are split at
   random into a calibration half and a test half; the threshold is chosen on the calibration
   half by fixed-sequence testing for each of ``--targets`` agreement with probability 1 − ``--delta``,
   and coverage and realised agreement are measured on the test half. The first split goes
   through ``SelectiveEvaluation.fit`` on the judge itself (bootstrap intervals on test); then
   ``--splits`` resampled splits report how often the test agreement reached the target, and
   the spread of coverage.
3. **Balanced position calibration and the entropy rule** (Wang et al. 2023) on ChatGPT's
   head-to-head verdicts (11 system pairs x 100 documents x 4 dimensions, both orders):
   accuracy against the expert preference (pairs the experts tie are left out) of the
   original order alone and of the balanced verdict, and of the verdicts kept after sending
   the highest-entropy items to a human; and selective evaluation with both-order agreement
   as the confidence.

Run: ``python benchmarks/selective_panel_released.py`` (about a minute).
Writes ``benchmarks/results/selective_panel_released.json``.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import math
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import numpy as np
from evidence_common import RESULTS_DIR, clean

from mitigate import measures as M
from mitigate.data import CRITERIA, Item, load_summeval
from mitigate.data._released import load_head_to_head
from mitigate.judge import Judge, Judgment
from mitigate.measures import bootstrap_ci
from mitigate.replay import ReleasedJudge
from mitigate.run import run
from mitigate.strategies import PanelJudge, SelectiveEvaluation, fit_cascade
from mitigate.strategies._agreement_gate import released_gate_judgments
from mitigate.strategies._multiple_evidence import balanced_verdict, entropy_threshold, verdict_entropy
from mitigate.strategies._selective import agrees, confidence, fixed_sequence_threshold

MEMBERS = ("chatgpt-rts", "chatgpt-mcq", "gpt4-rts", "llama2-70b-rts")


def judge_all(judge: Judge, items: list[Item]) -> list[Judgment]:
    return list(asyncio.run(run(judge, items, concurrency=64, progress=False)).judgments)


def share_ci(hits: np.ndarray, n_boot: int, seed: int) -> dict[str, Any]:
    """A share with its percentile bootstrap interval."""
    if len(hits) == 0:
        return {"value": None, "ci": None, "n": 0}
    lo, hi = bootstrap_ci(lambda x: float(np.mean(x)), hits.astype(float), n_boot=n_boot, seed=seed)
    return {"value": float(hits.mean()), "ci": [lo, hi], "n": int(len(hits))}


def split_docs(items: list[Item], rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """Boolean masks of a random half of the documents (calibration) and the rest (test)."""
    docs = sorted({it.doc_id for it in items})
    cal_docs = set(rng.permutation(docs)[: len(docs) // 2])
    cal = np.array([it.doc_id in cal_docs for it in items])
    return cal, ~cal


def selective_on_test(
    conf: np.ndarray, agreed: np.ndarray, cal: np.ndarray, test: np.ndarray, args: argparse.Namespace
) -> dict[str, Any]:
    g = fixed_sequence_threshold(conf[cal], agreed[cal], target=args.target, delta=args.delta)
    accepted = (
        test & np.isfinite(conf) & (conf >= (g.threshold if g.threshold is not None else np.inf) - 1e-12)
    )
    n_acc = int(accepted.sum())
    return {
        "threshold": g.threshold,
        "coverage": n_acc / int(test.sum()),
        "agreement": float(agreed[accepted].mean()) if n_acc else math.nan,
        "n_accepted": n_acc,
        "cal_coverage": g.coverage,
        "cal_agreement": g.agreement,
    }


def resampled(conf_fn: Any, n: int, items: list[Item], args: argparse.Namespace) -> dict[str, Any]:
    """Over ``args.splits`` random document splits: how often test agreement reached the target, and
    coverage."""
    rng = np.random.default_rng(args.seed + 1)
    rows = []
    for _ in range(args.splits):
        cal, test = split_docs(items, rng)
        rows.append(conf_fn(cal, test))
    cov = np.array([r["coverage"] for r in rows])
    agr = np.array([r["agreement"] for r in rows])
    # the guarantee is about accepted items: a split that accepted nothing holds it vacuously
    held = np.array([c == 0 or a >= args.target - 1e-12 for c, a in zip(cov, agr, strict=True)])
    return {
        "splits": len(rows),
        "held_share": float(held.mean()),
        "empty_share": float(np.mean(cov == 0)),
        "coverage_mean": float(cov.mean()),
        "coverage_p05_p95": [float(np.quantile(cov, 0.05)), float(np.quantile(cov, 0.95))],
        "agreement_mean": float(np.nanmean(agr)) if np.isfinite(agr).any() else None,
        "agreement_p05_p95": (
            [float(np.nanquantile(agr, 0.05)), float(np.nanquantile(agr, 0.95))]
            if np.isfinite(agr).any()
            else None
        ),
    }


def panel_section(items: list[Item], criterion: str, args: argparse.Namespace) -> tuple[dict[str, Any], list]:
    members = {name: ReleasedJudge(name, criterion) for name in MEMBERS}
    human = M.human_scores(items, criterion)
    out: dict[str, Any] = {}
    rows: list[tuple[str, list[Judgment]]] = [(name, judge_all(j, items)) for name, j in members.items()]
    for reducer in ("mean", "median", "majority"):
        rows.append((f"panel-{reducer}", judge_all(PanelJudge(dict(members), reducer=reducer), items)))
    median_panel: list[Judgment] = []
    for name, js in rows:
        scores = np.array([np.nan if j.scores.get(criterion) is None else j.scores[criterion] for j in js])
        rho = M.item_correlation(scores, human, "spearman", ci=True, n_boot=args.n_boot, seed=args.seed)
        ok = np.isfinite(scores)
        within = np.abs(scores[ok] - human[ok]) <= args.tolerance + 1e-9
        out[name] = {
            "spearman": {"value": rho.value, "ci": [rho.ci_low, rho.ci_high], "n": rho.n},
            "agreement": share_ci(within, args.n_boot, args.seed),
            "no_score": int((~ok).sum()),
            "member_failed": sum("panel_member_failed" in j.flags for j in js),
        }
        if name == "panel-median":
            median_panel = js
    return out, median_panel


def selective_section(
    items: list[Item], criterion: str, panel: list[Judgment], args: argparse.Namespace
) -> dict[str, Any]:
    gate = released_gate_judgments(criterion, items)
    stage = SelectiveEvaluation(
        target=args.target, delta=args.delta, tolerance=args.tolerance, criterion=criterion
    )
    configs = {
        "chatgpt-rts, confidence = RTS/MCQ agreement": (gate, stage.with_params(confidence="rts-mcq")),
        "panel median, confidence = member agreement": (panel, stage.with_params(confidence="samples")),
    }
    out: dict[str, Any] = {}
    rng = np.random.default_rng(args.seed)
    cal, test = split_docs(items, rng)
    cal_items = [it for it, m in zip(items, cal, strict=True) if m]
    arrays = {}
    for name, (js, sel) in configs.items():
        conf = np.array([confidence(j, sel.confidence, criterion) for j in js])
        agreed = np.array(
            [
                bool(agrees(j, it, tolerance=args.tolerance, criterion=criterion))
                for j, it in zip(js, items, strict=True)
            ]
        )
        arrays[name] = (conf, agreed)
        # the first split through the mitigation itself
        fitted = sel.calibrate([j for j, m in zip(js, cal, strict=True) if m], cal_items)
        from mitigate.strategies._selective import decide

        g = fitted.guarantee_
        decided = [
            decide(j, g.threshold, sel.confidence, criterion, "flag")
            for j, m in zip(js, test, strict=True)
            if m
        ]
        acc = np.array([d.meta["selective"]["decision"] == "accept" for d in decided])
        agr_test = agreed[test]
        out[name] = {
            "overall_test_agreement": share_ci(agr_test, args.n_boot, args.seed),
            "threshold": g.threshold,
            "calibration": {
                "n": g.n_calibration,
                "accepted": g.n_accepted,
                "agreement": g.agreement,
                "upper_risk": g.upper_risk,
            },
            "test_coverage": share_ci(acc, args.n_boot, args.seed),
            "test_agreement_accepted": share_ci(agr_test[acc], args.n_boot, args.seed),
            "resampled": resampled(
                lambda c, t, conf=conf, agreed=agreed: selective_on_test(conf, agreed, c, t, args),
                args.splits,
                items,
                args,
            ),
        }
    # cascade: ChatGPT RTS first, then the panel, then humans
    stages = [configs[k][1] for k in configs]
    judgments = [configs[k][0] for k in configs]

    def cascade(cal_mask: np.ndarray, test_mask: np.ndarray) -> dict[str, Any]:
        fitted = fit_cascade_sources(judgments, items, cal_mask, stages)
        answered = np.zeros(len(items), dtype=bool)
        agreed_by = np.zeros(len(items), dtype=bool)
        by_stage = []
        for (conf, agreed), f in zip((arrays[k] for k in configs), fitted, strict=True):
            thr = f.guarantee_.threshold
            take = (
                test_mask
                & ~answered
                & np.isfinite(conf)
                & (conf >= (thr if thr is not None else np.inf) - 1e-12)
            )
            by_stage.append(int(take.sum()))
            agreed_by[take] = agreed[take]
            answered |= take
        n_acc = int(answered.sum())
        return {
            "coverage": n_acc / int(test_mask.sum()),
            "agreement": float(agreed_by[answered].mean()) if n_acc else math.nan,
            "by_stage": by_stage,
            "thresholds": [f.guarantee_.threshold for f in fitted],
        }

    first = cascade(cal, test)
    out["cascade: chatgpt-rts -> panel -> human"] = {
        "first_split": first,
        "resampled": resampled(cascade, args.splits, items, args),
    }
    return out


def fit_cascade_sources(
    judgments: list[list[Judgment]],
    items: list[Item],
    cal_mask: np.ndarray,
    stages: list[SelectiveEvaluation],
) -> list[SelectiveEvaluation]:
    """fit_cascade on the calibration items of ``cal_mask``, each stage with its own confidence source."""
    ci = [it for it, m in zip(items, cal_mask, strict=True) if m]
    cal_js = [[j for j, m in zip(js, cal_mask, strict=True) if m] for js in judgments]
    return fit_cascade(cal_js, ci, stages)


def h2h_section(args: argparse.Namespace) -> dict[str, Any]:
    records = load_head_to_head()
    pairs: dict[tuple[str, str, str], dict[str, Any]] = {}
    for r in records:
        key = (r.pair, r.criterion, r.doc_id)
        pairs.setdefault(key, {"gold": r.human_preferred, "s1": r.system_1})[r.order] = r.verdict
    out: dict[str, Any] = {}
    for crit in (*CRITERIA, "all"):
        rows = [(k, v) for k, v in pairs.items() if (crit == "all" or k[1] == crit) and v["gold"] != "tie"]
        gold = np.array(["first" if v["gold"] == v["s1"] else "second" for _, v in rows])
        orig = [v.get("original") for _, v in rows]
        swap = [v.get("toggled") for _, v in rows]
        balanced = [balanced_verdict([o], [s])[0] for o, s in zip(orig, swap, strict=True)]
        entropy = np.array([verdict_entropy([o], [s]) for o, s in zip(orig, swap, strict=True)])
        correct_orig = np.array([o == g for o, g in zip(orig, gold, strict=True)])
        correct_bal = np.array([b == g for b, g in zip(balanced, gold, strict=True)])
        decided = np.array([b in ("first", "second") for b in balanced])
        # Wang et al.'s human-in-the-loop rule: the top share by entropy goes to a human
        thr = entropy_threshold(entropy, args.human_share)
        keep = entropy < thr - 1e-12
        # selective evaluation with both-order agreement as the confidence (one random half calibrates)
        conf = np.array(
            [
                math.nan
                if (o is None or s is None)
                else float(o == {"first": "second", "second": "first", "tie": "tie"}[s])
                for o, s in zip(orig, swap, strict=True)
            ]
        )
        items = [Item(id=f"{k[0]}|{k[1]}|{k[2]}", output="", doc_id=k[2]) for k, _ in rows]
        sel = {}
        for tg in args.h2h_targets:
            at = argparse.Namespace(**{**vars(args), "target": tg})
            sel[f"{tg:g}"] = resampled(
                lambda c, t, conf=conf, agreed=correct_bal, at=at: selective_on_test(conf, agreed, c, t, at),
                args.splits,
                items,
                at,
            )
        out[crit] = {
            "pairs": len(rows),
            "original_order_accuracy": share_ci(correct_orig, args.n_boot, args.seed),
            "balanced_accuracy": share_ci(correct_bal, args.n_boot, args.seed),
            "balanced_tie_share": float(np.mean([b == "tie" for b in balanced])),
            "balanced_accuracy_decided": share_ci(correct_bal[decided], args.n_boot, args.seed),
            "original_accuracy_on_decided": share_ci(correct_orig[decided], args.n_boot, args.seed),
            "hitl": {
                "human_share": float(1 - keep.mean()),
                "entropy_threshold": thr,
                "accuracy_kept": share_ci(correct_bal[keep], args.n_boot, args.seed),
            },
            "selective_both_orders": sel,
        }
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument(
        "--tolerance", type=float, default=1.0, help="a score agrees within this distance of the expert mean"
    )
    ap.add_argument(
        "--targets",
        type=float,
        nargs="+",
        default=[0.7, 0.8, 0.9],
        help="target agreements with the experts (one calibration each)",
    )
    ap.add_argument(
        "--h2h-targets",
        type=float,
        nargs="+",
        default=[0.6, 0.65],
        help="target agreements for the head-to-head verdicts",
    )
    ap.add_argument("--delta", type=float, default=0.1, help="allowed failure probability of the guarantee")
    ap.add_argument("--splits", type=int, default=200, help="resampled calibration/test splits")
    ap.add_argument(
        "--human-share", type=float, default=0.2, help="share sent to a human by the entropy rule"
    )
    ap.add_argument("--n-boot", type=int, default=1000)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--out", type=Path, default=RESULTS_DIR / "selective_panel_released.json")
    args = ap.parse_args()
    started = time.time()
    items = list(load_summeval("llm_summeval").items)
    result: dict[str, Any] = {
        "command": " ".join(["python", *sys.argv]),
        "settings": vars(args) | {"out": str(args.out)},
        "members": list(MEMBERS),
        "panel": {},
        "selective": {},
    }
    for c in CRITERIA:
        panel, median_panel = panel_section(items, c, args)
        result["panel"][c] = panel
        result["selective"][c] = {
            f"{t:g}": selective_section(
                items, c, median_panel, argparse.Namespace(**{**vars(args), "target": t})
            )
            for t in args.targets
        }
        print(f"== {c}")
        for name, r in panel.items():
            print(
                f"  {name:16s} spearman {r['spearman']['value']:.3f} [{r['spearman']['ci'][0]:.3f}, "
                f"{r['spearman']['ci'][1]:.3f}]  within {args.tolerance:g}: {r['agreement']['value']:.3f} "
                f"[{r['agreement']['ci'][0]:.3f}, {r['agreement']['ci'][1]:.3f}]  no score {r['no_score']}"
            )
        for t, per in result["selective"][c].items():
            for name, r in per.items():
                rs = r["resampled"]
                if "first_split" in r:
                    f = r["first_split"]
                    print(
                        f"  target {t} {name}: test coverage {f['coverage']:.3f}, agreement "
                        f"{f['agreement']:.3f}; over {rs['splits']} splits held {rs['held_share']:.3f}, "
                        f"coverage {rs['coverage_mean']:.3f}"
                    )
                    continue
                print(
                    f"  target {t} {name}: threshold {r['threshold']}, test coverage "
                    f"{r['test_coverage']['value']:.3f}, agreement {r['test_agreement_accepted']['value']} "
                    f"(overall {r['overall_test_agreement']['value']:.3f}); over {rs['splits']} splits "
                    f"held {rs['held_share']:.3f}, coverage {rs['coverage_mean']:.3f}"
                )
    result["head_to_head"] = h2h_section(args)
    for c, r in result["head_to_head"].items():
        print(
            f"  h2h {c}: original {r['original_order_accuracy']['value']:.3f}, balanced "
            f"{r['balanced_accuracy']['value']:.3f}, kept after HITL "
            f"{r['hitl']['accuracy_kept']['value']:.3f} (human {r['hitl']['human_share']:.3f})"
        )
    result["seconds"] = round(time.time() - started, 1)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(clean(result), indent=1))
    print(f"wrote {args.out} in {result['seconds']} s")


if __name__ == "__main__":
    main()
