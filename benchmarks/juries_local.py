"""The new pairwise scoring and reference-first mitigations on a small local judge (Qwen2.5-Coder 0.5B by
default).

Two parts, each with the judge's answers cached on disk (a rerun costs nothing):

1. ``--part distribution``: a round robin of SummEval summaries. ``--docs`` articles, ``--systems``
   systems (chosen by their mean expert score on the criterion: the extremes and evenly between),
   every pair of their summaries of one article compared in both orders by a pairwise prompt of our
   own wording (answer ``[[A]]`` / ``[[B]]``, constrained), and every summary scored alone by the
   built-in G-Eval prompt of the criterion (constrained to the answer line). One call per pair and
   order gives both readings:
   - **hard**: each order's written verdict; a pair is preferred only when both orders agree
     (TrustJudge's two-pass baseline), and the text's parsed score for the single scores;
   - **distribution** (``pairwise-distribution``, logprobs): the verdict probabilities of both orders
     pooled, and the expected score (``expected-score``) for the single scores.
   Measured: accuracy against the expert preference (3-way: a tie is right only on an expert tie),
   the preference-cycle rate over each article's triples (NTR3) and 4-sets (NTR4), the
   score-vs-pair conflict (TrustJudge), and the Bradley-Terry ranking of the systems against their
   mean expert score.
2. ``--part reference``: ``--n`` LLMBar instances (Natural and Adversarial, drawn at random),
   judged by an LLMBar-style prompt of our own wording (answer "Output (a)" / "Output (b)",
   constrained) in both orders: plain, ``solve-first`` and ``reference-revision`` (the judge's own
   answer or revision written first, ``--ref-tokens`` at most). Accuracy of each order's verdict
   against the gold label (averaged over both orders, LLMBar's headline), with paired differences.

Run (under the bench lock): ``flock /work/bench.lock python benchmarks/juries_local.py --part both``.
Writes ``benchmarks/results/juries_local.json``.
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from evidence_common import RESULTS_DIR, default_backend
from released_common import boot_mean, fmt_ci, paired_diff, write_json

from mitigate.data import Item, load
from mitigate.data._llmbar import load_llmbar
from mitigate.judge import JudgeConfig, Judgment, PromptJudge
from mitigate.lm import get, wrap
from mitigate.measures import (
    both_orders_relation,
    fit_bradley_terry,
    preference_verdict,
    presented_to_text,
    score_pair_conflict,
    transitivity_violations,
    verdict_relation,
)
from mitigate.prompt import JudgePrompt, prompt_text
from mitigate.run import run
from mitigate.strategies import (
    ExpectedScore,
    PairwiseDistribution,
    PositionSwap,
    ReferenceRevision,
    SolveFirst,
)

DEFINITIONS = {
    "coherence": "how well the sentences fit together into a well-organised account of the article",
    "consistency": "whether every fact in the summary is supported by the article",
    "fluency": "how well written each sentence is",
    "relevance": "whether the summary keeps the article's important content and leaves out the rest",
}

PAIRWISE = """You compare two summaries of the same news article on {criterion}: {definition}.

Article:
{{{{source}}}}

Summary A:
{{{{output_a}}}}

Summary B:
{{{{output_b}}}}

Which summary is better on {criterion}? Answer "[[A]]" if summary A is better, "[[B]]" if summary B is \
better."""

LLMBAR_STYLE = """You judge which of two outputs follows the instruction better. Judge by whether the \
output does exactly what the instruction asks; length and style matter less.

# Instruction:
{{input}}

# Output (a):
{{output_a}}

# Output (b):
{{output_b}}

# Which is better, Output (a) or Output (b)? Answer "Output (a)" or "Output (b)":"""


def _pick_systems(items: list[Item], criterion: str, k: int) -> list[str]:
    means: dict[str, list[float]] = {}
    for it in items:
        means.setdefault(str(it.system), []).append(it.human[criterion])
    ranked = sorted(means, key=lambda s: -float(np.mean(means[s])))
    idx = np.linspace(0, len(ranked) - 1, k).round().astype(int)
    return [ranked[i] for i in idx]


def round_robin(
    criterion: str, docs: int, systems: int, seed: int
) -> tuple[list[Item], list[Item], dict[str, float]]:
    """(single items, pairwise items, each chosen system's mean expert score over the chosen articles)."""
    bench = load("summeval")
    chosen = _pick_systems(list(bench.items), criterion, systems)
    by_doc: dict[str, dict[str, Item]] = {}
    for it in bench.items:
        by_doc.setdefault(str(it.doc_id), {})[str(it.system)] = it
    rng = np.random.default_rng(seed)
    doc_ids = sorted(d for d, got in by_doc.items() if all(s in got for s in chosen))
    picked = sorted(rng.choice(doc_ids, size=docs, replace=False))
    singles = [by_doc[d][s] for d in picked for s in chosen]
    pairs = []
    for d in picked:
        for x, y in itertools.combinations(sorted(chosen), 2):
            a, b = by_doc[d][x], by_doc[d][y]
            ha, hb = a.human[criterion], b.human[criterion]
            pairs.append(
                Item(
                    id=f"{d}/{x}-{y}",
                    output=a.output,
                    output_b=b.output,
                    inputs=dict(a.inputs),
                    system=x,
                    system_b=y,
                    doc_id=d,
                    preference={criterion: "A" if ha > hb else "B" if ha < hb else "tie"},
                )
            )
    means = {s: float(np.mean([by_doc[d][s].human[criterion] for d in picked])) for s in chosen}
    return singles, pairs, means


def _relations_by_doc(pairs: list[Item], rels: list[str | None]) -> dict[tuple[Any, Any, Any], Any]:
    return {(p.doc_id, p.system, p.system_b): r for p, r in zip(pairs, rels, strict=True)}


def _accuracy(verdicts: list[str | None], gold: list[str]) -> np.ndarray:
    return np.array([float(v is not None and v == g) for v, g in zip(verdicts, gold, strict=True)])


def _cycle_rate_by_doc(pairs: list[Item], rels: list[str | None], k: int) -> np.ndarray:
    """Per article, the share of its k-sets that contradict every ranking (NaN when none is complete)."""
    out = []
    for d in sorted({p.doc_id for p in pairs}):
        idx = [i for i, p in enumerate(pairs) if p.doc_id == d]
        m = transitivity_violations(_relations_by_doc([pairs[i] for i in idx], [rels[i] for i in idx]), k=k)
        out.append(m.value)
    return np.array(out, dtype=float)


def part_distribution(lm: Any, args: argparse.Namespace) -> dict[str, Any]:
    crit = args.criterion
    singles, pairs, means = round_robin(crit, args.docs, args.systems, args.seed)
    prompt = JudgePrompt.from_template(PAIRWISE.format(criterion=crit, definition=DEFINITIONS[crit]))
    judge = PairwiseDistribution(source="logprobs").wrap(
        PromptJudge(prompt, lm, JudgeConfig(max_tokens=8, constrain="format"))
    )
    t0 = time.time()
    pj = asyncio.run(run(judge, pairs, concurrency=1, desc="pairs, both orders")).judgments
    single_prompt = JudgePrompt.from_template(prompt_text(f"summeval-{crit}"))
    scorer = ExpectedScore().wrap(PromptJudge(single_prompt, lm, JudgeConfig(max_tokens=8)))
    sj = asyncio.run(run(scorer, singles, concurrency=1, desc="single scores")).judgments
    seconds = time.time() - t0
    gold = [p.preference[crit] for p in pairs]
    orders = [j.meta.get("orders") or {} for j in pj]
    first_text = [presented_to_text(o.get("original"), "original") for o in orders]
    swap_text = [presented_to_text(o.get("swapped"), "swapped") for o in orders]
    hard_rel = [both_orders_relation(a, b) for a, b in zip(first_text, swap_text, strict=True)]
    hard_verdict = [{">": "A", "<": "B", "=": "tie"}.get(r or "") or None for r in hard_rel]
    pooled = [j.meta.get("preference") for j in pj]
    dist_verdict = [preference_verdict(p) if p else None for p in pooled]
    dist_rel = [verdict_relation(v) for v in dist_verdict]
    nb, seed = args.n_boot, args.seed
    acc = {
        "first order only": _accuracy(first_text, gold),
        "hard, both orders agree": _accuracy(hard_verdict, gold),
        "distribution, pooled": _accuracy(dist_verdict, gold),
    }
    out: dict[str, Any] = {
        "criterion": crit,
        "systems": list(means),
        "system_expert_mean": means,
        "articles": args.docs,
        "pairs": len(pairs),
        "singles": len(singles),
        "seconds_judging": seconds,
        "gold_ties": sum(g == "tie" for g in gold),
        "failed_pairs": sum(j.verdict is None for j in pj),
        "accuracy": {k: boot_mean(v, nb, seed) for k, v in acc.items()},
        "accuracy_distribution_minus_hard": paired_diff(
            acc["distribution, pooled"], acc["hard, both orders agree"], nb, seed
        ),
    }
    cycles: dict[str, Any] = {}
    for k in (3, 4):
        hard_k, dist_k = _cycle_rate_by_doc(pairs, hard_rel, k), _cycle_rate_by_doc(pairs, dist_rel, k)
        ok = np.isfinite(hard_k) & np.isfinite(dist_k)
        cycles[f"NTR{k}"] = {
            "hard": boot_mean(hard_k[ok], nb, seed),
            "distribution": boot_mean(dist_k[ok], nb, seed),
            "distribution_minus_hard": paired_diff(dist_k[ok], hard_k[ok], nb, seed),
            "articles": int(ok.sum()),
        }
    out["cycles"] = cycles
    score_of = {it.id: j for it, j in zip(singles, sj, strict=True)}
    fmt = single_prompt.format

    def parsed(j: Judgment) -> float | None:
        try:
            return float(fmt.read(j.raw[0], single_prompt.scale)) if j.raw else None
        except Exception:  # a failed parse is a missing score here, as everywhere
            return None

    def single(p: Item, which: str) -> Judgment:
        sid = f"{p.system if which == 'A' else p.system_b}/{p.doc_id}"
        return score_of[sid]

    parsed_a = [parsed(single(p, "A")) for p in pairs]
    parsed_b = [parsed(single(p, "B")) for p in pairs]
    exp_a = [single(p, "A").scores.get(crit) for p in pairs]
    exp_b = [single(p, "B").scores.get(crit) for p in pairs]
    conflict: dict[str, Any] = {}
    hits = {}
    for name, (xa, xb, rel) in {
        "parsed score, hard pair": (parsed_a, parsed_b, hard_rel),
        "expected score, distribution pair": (exp_a, exp_b, dist_rel),
        "expected score, hard pair": (exp_a, exp_b, hard_rel),
        "parsed score, distribution pair": (parsed_a, parsed_b, dist_rel),
    }.items():
        m = score_pair_conflict(xa, xb, rel, ci=True, n_boot=nb, seed=seed)
        conflict[name] = {
            "value": m.value,
            "ci": [m.ci_low, m.ci_high],
            "n": m.n,
            "n_failed": m.n_failed,
            "by_kind": m.extra.get("by_kind"),
        }
        from mitigate.measures._pairwise_distribution import score_relation

        hits[name] = np.array(
            [
                np.nan if score_relation(a, b) is None or r is None else float(score_relation(a, b) != r)
                for a, b, r in zip(xa, xb, rel, strict=True)
            ]
        )
    both = np.isfinite(hits["parsed score, hard pair"]) & np.isfinite(
        hits["expected score, distribution pair"]
    )
    conflict["distribution minus hard (paired)"] = paired_diff(
        hits["expected score, distribution pair"][both], hits["parsed score, hard pair"][both], nb, seed
    )
    out["score_vs_pair_conflict"] = conflict
    bt: dict[str, Any] = {}
    for name, verdicts in (("hard, each order a comparison", None), ("distribution, pooled", dist_verdict)):
        comps = []
        if verdicts is None:
            for p, a, b in zip(pairs, first_text, swap_text, strict=True):
                comps += [(p.system, p.system_b, {"A": 1.0, "B": 0.0, "tie": 0.5}[v]) for v in (a, b) if v]
        else:
            comps = [
                (p.system, p.system_b, {"A": 1.0, "B": 0.0, "tie": 0.5}[v])
                for p, v in zip(pairs, verdicts, strict=True)
                if v
            ]
        try:
            fit = fit_bradley_terry(comps, others={"expert mean": means})  # type: ignore[arg-type]
            bt[name] = {
                "order": list(fit.ranking.order),
                "kendall_vs_expert_mean": fit.ranking.kendall["expert mean"],
                "rank_intervals": {r.group: [r.low, r.high] for r in fit.ranking.ranks},
                "cycles": fit.cycles,
                "abilities": fit.abilities,
            }
        except Exception as exc:
            bt[name] = {"error": str(exc)}
    out["expert_order"] = sorted(means, key=lambda s: -means[s])
    out["bradley_terry"] = bt
    return out


def part_reference(lm: Any, args: argparse.Namespace) -> dict[str, Any]:
    bench = load_llmbar(args.llmbar)
    rng = np.random.default_rng(args.seed)
    items = [bench.items[i] for i in sorted(rng.choice(len(bench.items), size=args.n, replace=False))]
    prompt = JudgePrompt.from_template(LLMBAR_STYLE)
    base = PromptJudge(prompt, lm, JudgeConfig(max_tokens=8, constrain="format"))
    arms = {
        "plain": PositionSwap(),
        "solve-first": SolveFirst(max_tokens=args.ref_tokens) | PositionSwap(),
        "reference-revision": ReferenceRevision(max_tokens=args.ref_tokens) | PositionSwap(),
    }
    gold = [it.preference["overall"] for it in items]
    per: dict[str, np.ndarray] = {}
    out: dict[str, Any] = {"n": len(items), "ref_tokens": args.ref_tokens, "arms": {}}
    for name, pipe in arms.items():
        t0 = time.time()
        js = asyncio.run(run(pipe.wrap(base), items, concurrency=1, desc=name)).judgments
        o = [presented_to_text((j.meta.get("orders") or {}).get("original"), "original") for j in js]
        s = [presented_to_text((j.meta.get("orders") or {}).get("swapped"), "swapped") for j in js]
        both = (_accuracy(o, gold) + _accuracy(s, gold)) / 2
        per[name] = both
        out["arms"][name] = {
            "acc_both_orders": boot_mean(both, args.n_boot, args.seed),
            "acc_first_order": boot_mean(_accuracy(o, gold), args.n_boot, args.seed),
            "position_consistent": float(
                np.mean([a == b and a is not None for a, b in zip(o, s, strict=True)])
            ),
            "failed": sum(j.error is not None or bool(j.failures) for j in js),
            "calls": sum(j.calls + j.cached_calls for j in js),
            "seconds": time.time() - t0,
        }
    for name in ("solve-first", "reference-revision"):
        out["arms"][name]["minus_plain"] = paired_diff(per[name], per["plain"], args.n_boot, args.seed)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--part", choices=("distribution", "reference", "both"), default="both")
    ap.add_argument(
        "--backend", default=None, help="LM spec (default: the fetched Qwen2.5-Coder 0.5B, local)"
    )
    ap.add_argument("--size", default="0.5b")
    ap.add_argument("--criterion", default="coherence", choices=sorted(DEFINITIONS))
    ap.add_argument("--docs", type=int, default=12)
    ap.add_argument("--systems", type=int, default=4)
    ap.add_argument("--llmbar", type=Path, default=Path("/work/ext/LLMBar"))
    ap.add_argument("--n", type=int, default=50, help="LLMBar instances for the reference part")
    ap.add_argument("--ref-tokens", type=int, default=160)
    ap.add_argument("--n-boot", type=int, default=1000)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--out", type=Path, default=RESULTS_DIR / "juries_local.json")
    args = ap.parse_args()
    spec = args.backend or default_backend(args.size)
    lm = wrap(get(spec, n_ctx=4096) if spec.startswith("local") else get(spec), cache=True)
    out: dict[str, Any] = {"command": " ".join(["python", *sys.argv]), "backend": spec}
    if args.out.exists():
        import json

        out = {**json.loads(args.out.read_text()), **out}
    if args.part in ("distribution", "both"):
        out["distribution"] = part_distribution(lm, args)
        d = out["distribution"]
        for k, v in d["accuracy"].items():
            print(f"accuracy {k:28s} {fmt_ci(v)}")
        for k, v in d["cycles"].items():
            print(f"{k}: hard {fmt_ci(v['hard'])} distribution {fmt_ci(v['distribution'])}")
        for k, v in d["score_vs_pair_conflict"].items():
            print(f"conflict {k}: {v}")
        write_json(args.out, out)
    if args.part in ("reference", "both"):
        out["reference"] = part_reference(lm, args)
        for k, v in out["reference"]["arms"].items():
            print(
                f"{k:20s} both {fmt_ci(v['acc_both_orders'])} first {fmt_ci(v['acc_first_order'])} "
                f"{('minus plain ' + fmt_ci(v['minus_plain'])) if 'minus_plain' in v else ''}"
            )
    write_json(args.out, out)
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
