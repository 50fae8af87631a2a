"""Post-hoc mitigations on the released outputs of strong judges (LLMBar and JudgeBench), each beside the
plain judge.

No LM is called: every verdict is a released raw answer read by mitigate
(:mod:`mitigate.replay._released_pairwise`). Gold: LLMBar's objective label (LLMBar proper,
419 instances: Natural + the four Adversarial sets) and JudgeBench's correctness label. Accuracy
is 3-way (a tie verdict is wrong: no gold is a tie). Every interval is a 95% percentile
bootstrap over instances, paired (both arms resampled together) for a difference.

1. **Position swap**: judge both orders and keep the verdict when they agree, a tie when they
   do not (:func:`mitigate.measures._pairwise.reconcile`), against the first order alone:
   the accuracy difference (:func:`~mitigate.measures._pairwise.swap_gain`), and the accuracy
   of the verdicts kept with the share kept.
2. **Panel of judges**: the first-order verdicts of several judges, majority vote (a split vote
   is a tie) and weighted vote (weight = log-odds of the member's accuracy on the other half of
   the instances: two-fold cross-fitting, so no instance weighs its own vote), against the
   best member and the mean member.
3. **Selective evaluation with a guarantee** (Jung et al. 2024, :mod:`mitigate.strategies._selective`):
   the threshold is chosen on a random half by fixed-sequence testing for a target agreement
   with probability 1 - delta, and applied to the other half; over ``--splits`` random splits,
   the realised agreement and the coverage on the test half. Confidence: agreement of the two
   orders (one judge), the panel's vote share, or the reward margin (reward models; its
   empirical CDF on the calibration half).
4. **Calibration**: the probability a judge's verdict is right, read naively (the panel's vote
   share; a reward model's Bradley-Terry probability sigmoid(|margin|)) and after Platt scaling
   fitted on the other half (two-fold cross-fitting): Brier score and expected calibration error
   (10 bins), with the paired Brier difference. The logprob calibrations of
   :mod:`mitigate.strategies._calibration` need token probabilities, which no release holds.
5. **Bias measures** per judge and strategy: position consistency and preference fairness
   (Shi et al. 2024) over both orders, and the lean towards the longer output
   (:mod:`mitigate.measures._pairwise`), with the gold labels' own lean beside it.

Run: ``python benchmarks/posthoc_released.py --llmbar /path/to/LLMBar --judgebench /path/to/JudgeBench``.
Writes ``benchmarks/results/posthoc_released.json``.
"""

from __future__ import annotations

import argparse
import math
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from released_common import RESULTS_DIR, Table, boot_mean, fmt_ci, hits, paired_diff, tables, write_json

from mitigate.data import read_judgebench, read_llmbar
from mitigate.measures import (
    longer_preference,
    position_consistency,
    preference_fairness,
    reconcile,
    swap_gain,
    word_count,
)
from mitigate.replay._released_pairwise import parse_release
from mitigate.strategies._selective import fixed_sequence_threshold

_POS = {"A": "first", "B": "second", "tie": "tie"}


def interval(m: Any) -> dict[str, Any]:
    """A Measure as {value, ci, n, n_failed}."""
    return {"value": m.value, "ci": [m.ci_low, m.ci_high], "n": m.n, "n_failed": m.n_failed}


# --------------------------------------------------------------------------------------------- 1. swap


def swap_rows(t: Table, n_boot: int, seed: int) -> dict[str, Any]:
    o, s = t.presented()
    gain = swap_gain(o, s, t.gold, ci=True, n_boot=n_boot, seed=seed, n_perm=2000)
    kept = [reconcile(a, b) for a, b in zip(o, s, strict=True)]
    decided = np.array([k in ("A", "B") for k in kept])
    right = np.array([float(k == g) for k, g in zip(kept, t.gold, strict=True)])
    return {
        "n": len(t.items),
        "acc_first": boot_mean(hits(t.orig, t.gold), n_boot, seed),
        "acc_swap": boot_mean(right, n_boot, seed),
        "gain": {**interval(gain), "p_value": gain.extra.get("p_value")},
        "kept_share": float(decided.mean()),
        "acc_kept": boot_mean(right[decided], n_boot, seed),
    }


# --------------------------------------------------------------------------------------------- 2. panel


def vote(verdicts: list[str | None], weights: np.ndarray | None = None) -> str | None:
    """The (weighted) majority of decisive votes; a split vote is a tie, no vote None."""
    score: Counter[str] = Counter()
    for j, v in enumerate(verdicts):
        if v in ("A", "B"):
            score[v] += 1.0 if weights is None else float(weights[j])
    if not score:
        return None
    if math.isclose(score["A"], score["B"]):
        return "tie"
    return "A" if score["A"] > score["B"] else "B"


def log_odds(acc: float, n: int) -> float:
    p = (acc * n + 0.5) / (n + 1.0)  # a half-count on each side keeps a perfect member finite
    return math.log(p / (1 - p))


def panel_rows(
    members: dict[str, Table], n_boot: int, seed: int
) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
    names = list(members)
    first = members[names[0]]
    ids = [it.id for it in first.items]
    for t in members.values():
        if [it.id for it in t.items] != ids:
            raise SystemExit("panel members must judge the same items in the same order")
    gold = first.gold
    votes = [[members[m].orig[i] for m in names] for i in range(len(ids))]
    correct = {m: hits(members[m].orig, gold) for m in names}
    majority = [vote(v) for v in votes]
    rng = np.random.default_rng(seed)
    fold = rng.permutation(len(ids)) % 2
    weighted: list[str | None] = [None] * len(ids)
    weights_used = {}
    for f in (0, 1):
        train = fold != f
        w = np.array([log_odds(float(correct[m][train].mean()), int(train.sum())) for m in names])
        weights_used[f"fold{f}"] = dict(zip(names, w.round(3).tolist(), strict=True))
        for i in np.flatnonzero(fold == f):
            weighted[i] = vote(votes[i], w)
    best = max(names, key=lambda m: correct[m].mean())
    mean_member = np.mean([correct[m] for m in names], axis=0)
    maj, wei = hits(majority, gold), hits(weighted, gold)
    out = {
        "members": names,
        "n": len(ids),
        "best_member": best,
        "member_acc": {m: float(c.mean()) for m, c in correct.items()},
        "best": boot_mean(correct[best], n_boot, seed),
        "mean_member": boot_mean(mean_member, n_boot, seed),
        "majority": boot_mean(maj, n_boot, seed),
        "weighted": boot_mean(wei, n_boot, seed),
        "majority_ties": sum(v == "tie" for v in majority),
        "majority_minus_best": paired_diff(maj, correct[best], n_boot, seed),
        "weighted_minus_best": paired_diff(wei, correct[best], n_boot, seed),
        "majority_minus_mean_member": paired_diff(maj, mean_member, n_boot, seed),
        "weights": weights_used,
    }
    share = np.array([_vote_share(v) for v in votes])
    return out, {
        "verdict": np.array(majority, dtype=object),
        "confidence": share,
        "correct": maj,
        "gold": np.array(gold, dtype=object),
    }


def _vote_share(verdicts: list[str | None]) -> float:
    decisive = [v for v in verdicts if v in ("A", "B")]
    if not decisive:
        return float("nan")
    return max(decisive.count("A"), decisive.count("B")) / len(verdicts)


# --------------------------------------------------------------------------------------------- 3. selective


def selective(
    conf: np.ndarray,
    correct: np.ndarray,
    *,
    target: float,
    delta: float,
    splits: int,
    seed: int,
    plain: float,
    cdf: bool = False,
) -> dict[str, Any]:
    """Fixed-sequence thresholds fitted on random halves and applied to the other half (see the module
    docstring)."""
    rng = np.random.default_rng(seed)
    n = len(conf)
    cov, agr, held = [], [], []
    for _ in range(splits):
        perm = rng.permutation(n)
        cal, test = perm[: n // 2], perm[n // 2 :]
        c = conf
        if cdf:  # the reward margin's empirical CDF on the calibration half: a confidence in [0, 1]
            ref = np.sort(conf[cal])
            c = np.searchsorted(ref, conf, side="right") / len(ref)
        g = fixed_sequence_threshold(c[cal], correct[cal].astype(bool), target=target, delta=delta)
        lam = g.threshold if g.threshold is not None else np.inf
        acc = test[np.isfinite(c[test]) & (c[test] >= lam - 1e-12)]
        cov.append(len(acc) / len(test))
        agr.append(float(correct[acc].mean()) if len(acc) else float("nan"))
        held.append(len(acc) == 0 or agr[-1] >= target - 1e-12)
    cov_a, agr_a = np.array(cov), np.array(agr)
    finite = np.isfinite(agr_a)
    return {
        "target": target,
        "delta": delta,
        "splits": splits,
        "held_share": float(np.mean(held)),
        "empty_share": float(np.mean(cov_a == 0)),
        "coverage_mean": float(cov_a.mean()),
        "coverage_p05_p95": [float(np.quantile(cov_a, 0.05)), float(np.quantile(cov_a, 0.95))],
        "agreement_mean": float(agr_a[finite].mean()) if finite.any() else None,
        "agreement_p05_p95": (
            [float(np.quantile(agr_a[finite], 0.05)), float(np.quantile(agr_a[finite], 0.95))]
            if finite.any()
            else None
        ),
        "accuracy_all_accepted": float(correct.mean()),
        "plain_accuracy": plain,
    }


# --------------------------------------------------------------------------------------------- 4. calibration


def _platt(x: np.ndarray, y: np.ndarray) -> tuple[float, float]:
    """Logistic fit p = sigmoid(a x + b) minimising the log-loss (a tiny ridge on ``a`` keeps separable data
    finite)."""
    from scipy.optimize import minimize

    def loss(theta: np.ndarray) -> tuple[float, np.ndarray]:
        z = theta[0] * x + theta[1]
        nll = np.logaddexp(0.0, z) - y * z  # -log p(y | z), stable for large |z|
        p = np.exp(-np.logaddexp(0.0, -z))
        return float(nll.sum() + 1e-3 * theta[0] ** 2), np.array(
            [np.sum((p - y) * x) + 2e-3 * theta[0], np.sum(p - y)]
        )

    fit = minimize(loss, np.array([1.0, 0.0]), jac=True, method="L-BFGS-B")
    return float(fit.x[0]), float(fit.x[1])


def _sigmoid(z: np.ndarray) -> np.ndarray:
    return np.exp(-np.logaddexp(0.0, -z))


def ece(p: np.ndarray, y: np.ndarray, bins: int = 10) -> float:
    edges = np.linspace(0, 1, bins + 1)
    idx = np.clip(np.digitize(p, edges[1:-1]), 0, bins - 1)
    return float(
        sum(
            abs(p[idx == b].mean() - y[idx == b].mean()) * (idx == b).mean()
            for b in range(bins)
            if (idx == b).any()
        )
    )


def calibration(
    raw_p: np.ndarray, feature: np.ndarray, correct: np.ndarray, n_boot: int, seed: int
) -> dict[str, Any]:
    """Naive probability vs Platt scaling of ``feature`` cross-fitted on two folds: Brier, ECE, paired Brier
    difference."""
    ok = np.isfinite(raw_p) & np.isfinite(feature)
    raw_p, feature, y = raw_p[ok], feature[ok], correct[ok].astype(float)
    fold = np.random.default_rng(seed).permutation(len(y)) % 2
    cal_p = np.zeros_like(raw_p)
    for f in (0, 1):
        a, b = _platt(feature[fold != f], y[fold != f])
        cal_p[fold == f] = _sigmoid(a * feature[fold == f] + b)
    se_raw, se_cal = (raw_p - y) ** 2, (cal_p - y) ** 2
    return {
        "n": int(len(y)),
        "accuracy": float(y.mean()),
        "brier_raw": boot_mean(se_raw, n_boot, seed),
        "brier_platt": boot_mean(se_cal, n_boot, seed),
        "brier_diff": paired_diff(se_cal, se_raw, n_boot, seed),
        "ece_raw": ece(raw_p, y),
        "ece_platt": ece(cal_p, y),
        "mean_raw_p": float(raw_p.mean()),
    }


# --------------------------------------------------------------------------------------------- 5. bias


def bias_rows(t: Table, n_boot: int, seed: int) -> dict[str, Any]:
    la = [word_count(it.output) for it in t.items]
    lb = [word_count(it.output_b or "") for it in t.items]
    out: dict[str, Any] = {
        "n": len(t.items),
        "longer_first_order": interval(longer_preference(t.orig, la, lb, ci=True, n_boot=n_boot, seed=seed)),
        "longer_gold": interval(longer_preference(t.gold, la, lb, ci=True, n_boot=n_boot, seed=seed)),
    }
    if t.two_orders:
        o, s = t.presented()
        pc = position_consistency(o, s, ci=True, n_boot=n_boot, seed=seed)
        pf = preference_fairness(o, s, ci=True, n_boot=n_boot, seed=seed)
        out["position_consistency"] = {
            **interval(pc),
            "of_all": pc.of_all,
            "primacy": pc.extra["primacy"],
            "recency": pc.extra["recency"],
        }
        out["preference_fairness"] = interval(pf)
        if any(v is not None for v in t.rel_orig):  # the same measure on the release's own readings, beside
            rel = Table(t.judge, t.items, t.gold, t.rel_orig, t.rel_swap, [], [])
            ro, rs = rel.presented()
            rpc = position_consistency(ro, rs, ci=True, n_boot=n_boot, seed=seed)
            out["position_consistency_release_reading"] = {
                **interval(rpc),
                "primacy": rpc.extra["primacy"],
                "recency": rpc.extra["recency"],
            }
    return out


# --------------------------------------------------------------------------------------------- driver


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--llmbar", type=Path, required=True, help="the LLMBar repository folder")
    ap.add_argument("--judgebench", type=Path, required=True, help="the JudgeBench repository folder")
    ap.add_argument("--n-boot", type=int, default=1000)
    ap.add_argument("--splits", type=int, default=200)
    ap.add_argument("--delta", type=float, default=0.1)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--out", type=Path, default=RESULTS_DIR / "posthoc_released.json")
    args = ap.parse_args()
    t0 = time.perf_counter()
    nb, seed = args.n_boot, args.seed
    lb = tables(parse_release(read_llmbar(args.llmbar)))
    jb_all = tables(parse_release(read_judgebench(args.judgebench)))
    out: dict[str, Any] = {"command": " ".join(["python", *sys.argv])}

    # 1. swap, 5. bias: every judge with two orders
    out["swap"] = {
        "llmbar": {k: swap_rows(t, nb, seed) for k, t in lb.items() if t.two_orders},
        "judgebench": {k: swap_rows(t, nb, seed) for k, t in jb_all.items() if k.startswith("arena_hard")},
    }
    out["bias"] = {
        "llmbar": {k: bias_rows(t, nb, seed) for k, t in lb.items()},
        "judgebench": {k: bias_rows(t, nb, seed) for k, t in jb_all.items()},
    }

    # 2. panels
    models = ("GPT-4", "ChatGPT", "ChatGPT-0301", "PaLM2", "LLaMA2", "Falcon")
    panels: dict[str, Any] = {}
    extras: dict[str, dict[str, np.ndarray]] = {}
    for strategy in ("Vanilla", "Vanilla_NoRules", "Metrics_Reference"):
        members = {m: lb[f"{m}/{strategy}"] for m in models if f"{m}/{strategy}" in lb}
        panels[f"llmbar: 6 models, {strategy}"], extras[f"llmbar-{strategy}"] = panel_rows(members, nb, seed)
    gpt4 = {
        s: lb[f"GPT-4/{s}"]
        for s in (
            "Vanilla",
            "Metrics",
            "Reference",
            "Metrics_Reference",
            "Vanilla_1shot",
            "Vanilla_2shot",
            "Vanilla_NoRules",
        )
    }
    panels["llmbar: GPT-4, 7 prompts"], extras["llmbar-gpt4-prompts"] = panel_rows(gpt4, nb, seed)
    gpt4o = {k: t for k, t in jb_all.items() if k.endswith("@gpt-4o-2024-05-13")}
    panels["judgebench: o1-mini + 5 reward models"], extras["judgebench"] = panel_rows(gpt4o, nb, seed)
    rms = {k: t for k, t in gpt4o.items() if k.startswith("reward_model")}
    panels["judgebench: 5 reward models"], extras["judgebench-rm"] = panel_rows(rms, nb, seed)
    out["panel"] = panels

    # 3. selective evaluation
    sel: dict[str, Any] = {}
    for name, t in [
        ("llmbar GPT-4/Vanilla", lb["GPT-4/Vanilla"]),
        ("llmbar ChatGPT/Vanilla", lb["ChatGPT/Vanilla"]),
        ("llmbar PaLM2/Vanilla", lb["PaLM2/Vanilla"]),
        ("judgebench arena_hard o1-mini", jb_all["arena_hard/o1-mini-2024-09-12@gpt-4o-2024-05-13"]),
    ]:
        o, s = t.presented()
        kept = [reconcile(a, b) for a, b in zip(o, s, strict=True)]
        conf = np.array([1.0 if k in ("A", "B") else 0.0 for k in kept])
        correct = np.array([float(k == g) for k, g in zip(kept, t.gold, strict=True)])
        sel[f"{name}, confidence = both orders agree"] = [
            selective(
                conf,
                correct,
                target=tg,
                delta=args.delta,
                splits=args.splits,
                seed=seed,
                plain=float(hits(t.orig, t.gold).mean()),
            )
            for tg in (0.8, 0.9)
        ]
    for key, label, best in (
        ("llmbar-Vanilla", "llmbar panel of 6 models (Vanilla)", "llmbar: 6 models, Vanilla"),
        ("llmbar-gpt4-prompts", "llmbar GPT-4 over 7 prompts", "llmbar: GPT-4, 7 prompts"),
        ("judgebench", "judgebench panel o1-mini + 5 reward models", "judgebench: o1-mini + 5 reward models"),
    ):
        e = extras[key]
        sel[f"{label}, confidence = vote share"] = [
            selective(
                e["confidence"],
                e["correct"],
                target=tg,
                delta=args.delta,
                splits=args.splits,
                seed=seed,
                plain=panels[best]["best"]["value"],
            )
            for tg in (0.8, 0.9)
        ]
    margins: dict[str, tuple[np.ndarray, np.ndarray]] = {}
    for k, t in rms.items():
        margin = np.array([abs(sc[0] - sc[1]) if sc else np.nan for sc in t.scores])
        margins[k] = (margin, hits(t.orig, t.gold))
        sel[f"judgebench {k.split('/')[1].split('@')[0]}, confidence = reward margin"] = [
            selective(
                margin,
                hits(t.orig, t.gold),
                target=tg,
                delta=args.delta,
                splits=args.splits,
                seed=seed,
                plain=float(hits(t.orig, t.gold).mean()),
                cdf=True,
            )
            for tg in (0.7, 0.8)
        ]
    out["selective"] = sel

    # 4. calibration
    cal: dict[str, Any] = {}
    for key, label in (
        ("llmbar-Vanilla", "llmbar panel of 6 models (Vanilla): vote share"),
        ("llmbar-gpt4-prompts", "llmbar GPT-4 over 7 prompts: vote share"),
        ("judgebench", "judgebench panel o1-mini + 5 reward models: vote share"),
    ):
        e = extras[key]
        decisive = np.array([v in ("A", "B") for v in e["verdict"]])
        cal[label] = calibration(
            np.where(decisive, e["confidence"], np.nan), e["confidence"], e["correct"], nb, seed
        )
    for k, (margin, correct) in margins.items():
        cal[f"judgebench {k.split('/')[1].split('@')[0]}: sigmoid(reward margin)"] = calibration(
            _sigmoid(margin), margin, correct, nb, seed
        )
    out["calibration"] = cal
    out["seconds"] = time.perf_counter() - t0
    write_json(args.out, out)

    for k, r in out["swap"]["llmbar"].items():
        if k.endswith(("/Vanilla", "/Vanilla_NoRules")):
            print(
                f"swap {k:28s} first {fmt_ci(r['acc_first'])} swap {fmt_ci(r['acc_swap'])} kept "
                f"{r['kept_share']:.2f} acc kept {fmt_ci(r['acc_kept'])}"
            )
    for k, r in out["swap"]["judgebench"].items():
        print(
            f"swap {k[:40]:40s} first {fmt_ci(r['acc_first'])} swap {fmt_ci(r['acc_swap'])} kept "
            f"{r['kept_share']:.2f} acc kept {fmt_ci(r['acc_kept'])}"
        )
    for k, r in panels.items():
        print(
            f"panel {k}: best {r['best_member']} {fmt_ci(r['best'])} majority {fmt_ci(r['majority'])} "
            f"weighted {fmt_ci(r['weighted'])} maj-best {fmt_ci(r['majority_minus_best'])}"
        )
    for k, rows in sel.items():
        for r in rows:
            print(
                f"selective {k} target {r['target']}: agreement {r['agreement_mean']} coverage "
                f"{r['coverage_mean']:.2f} held {r['held_share']:.2f} (plain {r['plain_accuracy']:.3f})"
            )
    for k, r in cal.items():
        print(
            f"calibration {k}: brier raw {fmt_ci(r['brier_raw'])} platt {fmt_ci(r['brier_platt'])} "
            f"ece {r['ece_raw']:.3f} -> {r['ece_platt']:.3f}"
        )
    print(f"{out['seconds']:.1f}s; wrote {args.out}")


if __name__ == "__main__":
    main()
