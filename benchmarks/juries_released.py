"""Juries beyond a majority vote, on released judge answers: Dawid-Skene, minority veto, effective votes,
Bradley-Terry.

No LM is called. Every verdict is a released raw answer read by mitigate
(:mod:`mitigate.replay._released_pairwise`): LLMBar (Zeng et al. 2024; LLMBar proper, 419
instances, gold = the objective label) and JudgeBench (350 GPT-4o response pairs, gold = which
response is correct). Accuracy is 3-way (a tie is wrong: no gold is a tie). Intervals are 95%
percentile bootstraps over instances, paired for a difference (both arms resampled together).

1. **Panels** (members = released judges on the same instances, each judged in both orders):
   - ``best member``: the member with the highest first-order accuracy (chosen with the gold
     labels, so an optimistic baseline);
   - ``majority, both orders pooled``: every member's verdict in both orders is a vote; the panel
     answers what more than half of all the votes say (else no verdict: counted wrong); the rule
     the issue quotes 0.504 with for four judges on Vanilla_NoRules;
   - ``majority, first order``: the members' first-order verdicts, a split vote a tie;
   - ``Dawid-Skene (EM, no gold)``: :func:`mitigate.measures._panel.fit_dawid_skene` over the
     votes of every (member, order) as its own annotator, fitted on all instances without labels
     (transductive, the setting of Dawid and Skene 1979); the verdict is the posterior's mode;
   - ``Dawid-Skene (supervised, 2 folds)``: fitted from the gold labels of one half of the
     instances and applied to the other (and the other way round);
   - ``Dawid-Skene (supervised, k labels)``: fitted from ``--labels`` random labelled instances and
     applied to the rest, over ``--draws`` draws (mean and 5-95% over draws, paired with the
     majority and the best member on the same unlabelled instances);
   - ``minority veto``: the first-order majority, vetoed into a tie when the best member voted the
     other way (:func:`mitigate.strategies._panel.veto`);
   - ``effective votes`` (Kish; :func:`mitigate.measures._panel.effective_votes`) of the members'
     first-order errors, and each member's balanced accuracy as Dawid-Skene estimates it without
     gold beside the one observed against gold.
2. **Bradley-Terry ranking** (:func:`mitigate.measures._bradley_terry.fit_bradley_terry`) of the
   SummEval systems from ChatGPT's released head-to-head verdicts (Shen et al. 2023; 11 system
   pairs x 100 documents, both orders, each verdict a comparison, ties half), per dimension,
   against Bradley-Terry on the experts' preferences and against the systems' mean expert score:
   Kendall's tau, Fisher intervals, simultaneous rank intervals, majority cycles.
3. **Score-vs-pair conflict** (TrustJudge;
:func:`mitigate.measures._pairwise_distribution.score_pair_conflict`):
   LLMBar's rating strategies (each output rated alone, 1-10) against the same model's pairwise
   verdicts in both orders (a pair counts as preferred only when both orders agree).

Run: ``python benchmarks/juries_released.py --llmbar /path/to/LLMBar --judgebench /path/to/JudgeBench``
(a JudgeBench folder holding ``utils/templates`` and the released outputs). Writes
``benchmarks/results/juries_released.json``.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from released_common import RESULTS_DIR, Table, boot_mean, fmt_ci, hits, paired_diff, tables, write_json

from mitigate.data import CRITERIA, load_summeval, read_judgebench, read_llmbar
from mitigate.data._released import load_head_to_head
from mitigate.judge import Judgment
from mitigate.measures import (
    both_orders_relation,
    dawid_skene_posterior,
    effective_votes,
    fit_bradley_terry,
    fit_dawid_skene,
    score_pair_conflict,
)
from mitigate.measures._panel import verdict_errors
from mitigate.replay._released_pairwise import parse_release
from mitigate.strategies._panel import veto

_POS = {"A": "first", "B": "second", "tie": "tie"}


def _mode(post: dict[str, float] | None) -> str | None:
    if post is None:
        return None
    ranked = sorted(post.items(), key=lambda kv: -kv[1])
    return "tie" if len(ranked) > 1 and np.isclose(ranked[0][1], ranked[1][1]) else ranked[0][0]


def _majority(votes: list[str | None], *, strict: bool) -> str | None:
    decisive = Counter(v for v in votes if v in ("A", "B"))
    if strict:
        top = [k for k in ("A", "B") if decisive[k] * 2 > len(votes)]
        return top[0] if top else None
    if not decisive:
        return None
    return "tie" if decisive["A"] == decisive["B"] else max(decisive, key=decisive.__getitem__)


def _annotators(members: dict[str, Table]) -> tuple[list[str], list[list[str | None]]]:
    """Every (member, order) as an annotator, its verdicts by text per instance; a member's second order only
    when it ever differs from its first (a reward model's two orders are one answer, and two copies are not
    two annotators)."""
    names, cols = [], []
    for m, t in members.items():
        names.append(f"{m} (original)")
        cols.append(t.orig)
        if t.two_orders and any(o != s for o, s in zip(t.orig, t.swap, strict=True)):
            names.append(f"{m} (swapped)")
            cols.append(t.swap)
    return names, [list(row) for row in zip(*cols, strict=True)]


def _ds_predict(
    votes: list[list[str | None]],
    names: list[str],
    fit_rows: np.ndarray,
    gold: list[str] | None,
    rows: np.ndarray,
) -> list[str | None]:
    model = fit_dawid_skene(
        [votes[i] for i in fit_rows], names, gold=[gold[i] for i in fit_rows] if gold is not None else None
    )
    return [_mode(dawid_skene_posterior(model, votes[i])) for i in rows]


def panel_rows(members: dict[str, Table], n_boot: int, seed: int, labels: int, draws: int) -> dict[str, Any]:
    """Every arm of section 1 for one panel."""
    names = list(members)
    first = members[names[0]]
    ids = [it.id for it in first.items]
    for t in members.values():
        if [it.id for it in t.items] != ids:
            raise SystemExit("panel members must judge the same instances in the same order")
    gold = first.gold
    n = len(ids)
    correct = {m: hits(members[m].orig, gold) for m in names}
    best = max(names, key=lambda m: correct[m].mean())
    ann, votes = _annotators(members)
    first_votes = [[members[m].orig[i] for m in names] for i in range(n)]
    pooled = [
        [*(members[m].orig[i] for m in names), *(members[m].swap[i] for m in names if members[m].two_orders)]
        for i in range(n)
    ]
    arms: dict[str, np.ndarray] = {f"best member ({best}, first order)": correct[best]}
    arms["majority, both orders pooled (strict)"] = hits([_majority(v, strict=True) for v in pooled], gold)
    arms["majority, first order (split = tie)"] = hits(
        [_majority(v, strict=False) for v in first_votes], gold
    )
    everyone = np.arange(n)
    arms["Dawid-Skene (EM, no gold)"] = hits(_ds_predict(votes, ann, everyone, None, everyone), gold)
    fold = np.random.default_rng(seed).permutation(n) % 2
    crossfit: list[str | None] = [None] * n
    for f in (0, 1):
        rows = np.flatnonzero(fold == f)
        for i, v in zip(rows, _ds_predict(votes, ann, np.flatnonzero(fold != f), gold, rows), strict=True):
            crossfit[i] = v
    arms["Dawid-Skene (supervised, 2 folds)"] = hits(crossfit, gold)
    vetoed = []
    for i in range(n):
        j = Judgment(
            item_id=ids[i],
            verdict=_POS.get(_majority(first_votes[i], strict=False) or "", None),  # type: ignore[arg-type]
            meta={"panel": {"members": {"verdict": {m: _POS.get(members[m].orig[i] or "") for m in names}}}},
        )
        vetoed.append(veto(j, (best,), 1, None))
    veto_text = [{"first": "A", "second": "B", "tie": "tie"}.get(j.verdict or "") for j in vetoed]
    arms[f"minority veto (vetoer {best}, over the first-order majority)"] = hits(veto_text, gold)
    base_key = "majority, both orders pooled (strict)"
    best_key = f"best member ({best}, first order)"
    out: dict[str, Any] = {
        "members": names,
        "n": n,
        "best_member": best,
        "member_acc": {m: float(c.mean()) for m, c in correct.items()},
        "arms": {},
    }
    for k, v in arms.items():
        out["arms"][k] = {
            "acc": boot_mean(v, n_boot, seed),
            "minus_majority": paired_diff(v, arms[base_key], n_boot, seed),
            "minus_best": paired_diff(v, arms[best_key], n_boot, seed),
        }
    out["vetoed_share"] = float(np.mean(["vetoed" in j.flags for j in vetoed]))
    out["few_labels"] = few_labels(votes, ann, gold, arms[base_key], arms[best_key], labels, draws, seed)
    neff = effective_votes(
        verdict_errors(first_votes, gold), members=names, ci=True, n_boot=n_boot, seed=seed
    )
    out["effective_votes"] = {
        "value": neff.value,
        "ci": [neff.ci_low, neff.ci_high],
        "rho": neff.extra.get("rho"),
        "n_members": len(names),
        "reason": neff.reason,
    }
    em = fit_dawid_skene(first_votes, names)
    out["member_balanced_accuracy"] = {
        m: {
            "dawid_skene_no_gold": em.balanced_accuracy(m),
            "observed": float(
                np.mean(
                    [
                        np.mean([v == g for v, g in zip(members[m].orig, gold, strict=True) if g == k])
                        for k in ("A", "B")
                    ]
                )
            ),
        }
        for m in names
    }
    out["member_confusion_no_gold"] = {m: em.member_matrix(m) for m in names}
    return out


def few_labels(
    votes: list[list[str | None]],
    ann: list[str],
    gold: list[str],
    majority: np.ndarray,
    best: np.ndarray,
    k: int,
    draws: int,
    seed: int,
) -> dict[str, Any]:
    """Supervised Dawid-Skene from ``k`` random labelled instances, applied to the rest; over ``draws``
    draws."""
    rng = np.random.default_rng(seed + 7)
    n = len(gold)
    acc, d_maj, d_best = [], [], []
    for _ in range(draws):
        lab = rng.choice(n, size=k, replace=False)
        rest = np.setdiff1d(np.arange(n), lab)
        h = hits(_ds_predict(votes, ann, lab, gold, rest), [gold[i] for i in rest])
        acc.append(h.mean())
        d_maj.append(h.mean() - majority[rest].mean())
        d_best.append(h.mean() - best[rest].mean())

    def summary(x: list[float]) -> dict[str, float]:
        a = np.array(x)
        return {
            "mean": float(a.mean()),
            "p05": float(np.quantile(a, 0.05)),
            "p95": float(np.quantile(a, 0.95)),
        }

    return {
        "labels": k,
        "draws": draws,
        "acc": summary(acc),
        "minus_majority": summary(d_maj),
        "minus_best": summary(d_best),
    }


# --------------------------------------------------------------------------------------------- 2.
# Bradley-Terry


def bradley_terry_h2h(n_boot: int, seed: int) -> dict[str, Any]:
    records = load_head_to_head()
    summeval = load_summeval("llm_summeval")
    out: dict[str, Any] = {}
    for crit in CRITERIA:
        judged, gold, docs = [], [], []
        seen_gold: set[tuple[str, str]] = set()
        for r in records:
            if r.criterion != crit:
                continue
            if r.verdict is not None:
                first_is_1 = r.order == "original"
                text = {
                    "first": "A" if first_is_1 else "B",
                    "second": "B" if first_is_1 else "A",
                    "tie": "tie",
                }[r.verdict]
                judged.append((r.system_1, r.system_2, {"A": 1.0, "B": 0.0, "tie": 0.5}[text]))
                docs.append(r.doc_id)
            key = (r.pair, r.doc_id)
            if key not in seen_gold:
                seen_gold.add(key)
                h1, h2 = r.human_score_1, r.human_score_2
                gold.append((r.system_1, r.system_2, 1.0 if h1 > h2 else 0.0 if h1 < h2 else 0.5))
        system_mean: dict[str, list[float]] = {}
        for it in summeval.items:
            system_mean.setdefault(str(it.system), []).append(it.human[crit])
        means = {s: float(np.mean(v)) for s, v in system_mean.items()}
        gold_fit = fit_bradley_terry(gold)
        fit = fit_bradley_terry(
            judged, others={"expert preferences (BT)": gold_fit.abilities, "expert mean score": means}
        )
        boot = fit_bradley_terry(judged, method="bootstrap", n_boot=n_boot, seed=seed, clusters=docs)
        out[crit] = {
            "n_comparisons": fit.n_comparisons,
            "n_ties": fit.n_ties,
            "systems": len(fit.systems),
            "order": list(fit.ranking.order),
            "gold_order": list(gold_fit.ranking.order),
            "kendall": fit.ranking.kendall,
            "gold_vs_mean_score": gold_fit.ranking.kendall if gold_fit.ranking.kendall else None,
            "separable_pairs": len(fit.ranking.separable),
            "separable_pairs_bootstrap": len(boot.ranking.separable),
            "rank_intervals": {r.group: [r.low, r.high] for r in fit.ranking.ranks},
            "abilities": fit.abilities,
            "low": fit.low,
            "high": fit.high,
            "cycles": fit.cycles,
            "fisher_vs_bootstrap_se": {s: [fit.se[s], boot.se[s]] for s in fit.systems},
        }
    return out


# --------------------------------------------------------------------------------------------- 3. score vs
# pair


def score_vs_pair(lb: dict[str, Table], n_boot: int, seed: int) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for rating, pairwise in (
        ("GPT-4/Rating", "GPT-4/Vanilla"),
        ("GPT-4/Rating_NoRules", "GPT-4/Vanilla_NoRules"),
        ("ChatGPT/Rating", "ChatGPT/Vanilla"),
        ("ChatGPT/Rating_NoRules", "ChatGPT/Vanilla_NoRules"),
    ):
        r, p = lb[rating], lb[pairwise]
        if [i.id for i in r.items] != [i.id for i in p.items]:
            raise SystemExit(f"{rating} and {pairwise} judge different instances")
        sx = [s[0] if s else None for s in r.scores]
        sy = [s[1] if s else None for s in r.scores]
        rel = [both_orders_relation(o, s) for o, s in zip(p.orig, p.swap, strict=True)]
        m = score_pair_conflict(sx, sy, rel, ci=True, n_boot=n_boot, seed=seed)
        one = score_pair_conflict(
            sx,
            sy,
            [{"A": ">", "B": "<", "tie": "="}.get(v or "") if v else None for v in p.orig],
            ci=True,
            n_boot=n_boot,
            seed=seed,
        )
        out[f"{rating} vs {pairwise}"] = {
            "both_orders": {
                "value": m.value,
                "ci": [m.ci_low, m.ci_high],
                "n": m.n,
                "n_failed": m.n_failed,
                "by_kind": m.extra["by_kind"],
            },
            "first_order": {"value": one.value, "ci": [one.ci_low, one.ci_high], "n": one.n},
        }
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--llmbar", type=Path, required=True)
    ap.add_argument("--judgebench", type=Path, required=True)
    ap.add_argument("--n-boot", type=int, default=1000)
    ap.add_argument("--labels", type=int, default=20, help="labelled instances for the few-label Dawid-Skene")
    ap.add_argument("--draws", type=int, default=200)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--out", type=Path, default=RESULTS_DIR / "juries_released.json")
    args = ap.parse_args()
    t0 = time.perf_counter()
    nb, seed = args.n_boot, args.seed
    lb = tables(parse_release(read_llmbar(args.llmbar)))
    jb = tables(parse_release(read_judgebench(args.judgebench)))
    out: dict[str, Any] = {"command": " ".join(["python", *sys.argv])}
    four = ("GPT-4", "ChatGPT", "PaLM2", "LLaMA2")
    six = ("GPT-4", "ChatGPT", "ChatGPT-0301", "PaLM2", "LLaMA2", "Falcon")
    panels: dict[str, dict[str, Table]] = {}
    for strategy in ("Vanilla_NoRules", "Vanilla"):
        panels[f"llmbar: 4 models, {strategy}"] = {m: lb[f"{m}/{strategy}"] for m in four}
        panels[f"llmbar: 6 models, {strategy}"] = {m: lb[f"{m}/{strategy}"] for m in six}
    gpt4o = {k.split("/")[1].split("@")[0]: t for k, t in jb.items() if k.endswith("@gpt-4o-2024-05-13")}
    panels["judgebench: o1-mini + 5 reward models"] = gpt4o
    panels["judgebench: 5 reward models"] = {k: t for k, t in gpt4o.items() if not k.startswith("o1")}
    out["panels"] = {k: panel_rows(v, nb, seed, args.labels, args.draws) for k, v in panels.items()}
    out["bradley_terry_summeval_h2h"] = bradley_terry_h2h(nb, seed)
    out["score_vs_pair_llmbar"] = score_vs_pair(lb, nb, seed)
    out["seconds"] = time.perf_counter() - t0
    write_json(args.out, out)
    for name, p in out["panels"].items():
        print(
            f"\n{name} (n={p['n']}; n_eff {p['effective_votes']['value']:.2f}, rho "
            f"{p['effective_votes']['rho']:.2f})"
        )
        for arm, r in p["arms"].items():
            print(
                f"  {arm:70s} {fmt_ci(r['acc'])}  -maj {fmt_ci(r['minus_majority'])}  -best "
                f"{fmt_ci(r['minus_best'])}"
            )
        f = p["few_labels"]
        print(
            f"  DS supervised, {f['labels']} labels: {f['acc']['mean']:.3f} "
            f"({f['acc']['p05']:.3f}-{f['acc']['p95']:.3f}) -maj {f['minus_majority']['mean']:+.3f} -best "
            f"{f['minus_best']['mean']:+.3f}"
        )
    for crit, r in out["bradley_terry_summeval_h2h"].items():
        print(
            f"BT {crit}: tau {r['kendall']} separable {r['separable_pairs']} cycles "
            f"{r['cycles']['cyclic_triples']}"
        )
    for k, r in out["score_vs_pair_llmbar"].items():
        print(f"conflict {k}: both {r['both_orders']['value']:.3f} first {r['first_order']['value']:.3f}")
    print(f"{out['seconds']:.1f}s; wrote {args.out}")


if __name__ == "__main__":
    main()
