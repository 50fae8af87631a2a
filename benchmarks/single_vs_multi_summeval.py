"""Single-attribute vs multi-attribute scoring on SummEval (Stureborg et al. 2024): anchoring between
criteria.

Stureborg et al. ("Large language models are inconsistent and biased evaluators", 2024) found
that when one answer scores several criteria, the later scores anchor on the earlier ones. Their
GPT-4 scores for the SummEval criteria correlated at r = 0.979 with one another, against
r = 0.315 for the human scores. Agreement with humans also depended on where a criterion sat in
the answer. Their remedy is one call per criterion.

What this script measures, on the first ``--n`` SummEval summaries taken document by document
(``load("summeval")``: 12 systems x 100 CNN/DM articles, 4 criteria, mean of 3 expert ratings):

- **multi**: one call that scores coherence, consistency, fluency and relevance in that order
  (:class:`~mitigate.strategies._single_attribute.MultiAttribute`); **multi-reversed**: the same
  with the order reversed, so that position and criterion are not confounded;
- **single**: the same built-in template split into one call per criterion
  (``MultiAttribute | SingleAttribute``, the leaves run one criterion at a time);
- the inter-criterion correlation: the mean pairwise Pearson r between the 4 criteria, for
  each judge setting and for the humans, with 95% bootstrap intervals. ``anchoring`` is the
  judge's value minus the humans' (``measures.anchoring``). Single minus multi is tested with a
  paired permutation test that swaps an item's 4 scores between the two settings;
- item-level Spearman with humans for each criterion and setting, and single minus multi with a
  paired permutation p-value;
- correlation by position: Kendall tau with humans at each position 0-3. It comes from the multi
  and multi-reversed runs stacked, so every criterion is seen at two positions.
  ``measures.correlation_by_position`` reports first minus last, with an interval.

Runtime on 2 cores with Qwen2.5 0.5B (~110 prompt tokens/s and ~25 generated tokens/s with 2
threads). An article is ~450 tokens (median 320 words), and the instructions and criteria come
before it. The 12 summaries of a document follow one another, and each variant (multi,
multi-reversed, and each of the 4 single-criterion prompts) runs over all items before the next.
So the article is evaluated once per document and variant: 6 x (n/12) x ~5 s. Each item then
costs only its summary and answer instruction (~120 tokens, ~1.1 s) plus the answer: ~20 tokens
(0.8 s) for multi, ~5 (0.2 s) for single. For n = 120: 6 x 10 x 5 s + 2 x 120 x 1.9 s +
4 x 120 x 1.3 s ~ 5 + 8 + 10 = ~23 min. Smoke test: ``--backend local --n 2``.

Run: ``python benchmarks/single_vs_multi_summeval.py [--n 120]``.
Writes ``benchmarks/results/single_vs_multi_summeval.json``; journals go to ``runs/evidence/`` (resumable).
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import math
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from evidence_common import (
    Timer,
    add_common_args,
    clean,
    fmt,
    fmt_test,
    make_lm,
    measure_json,
    perm_json,
    write_summary,
)

import mitigate.measures as M
from mitigate.data import Item, load, select_items
from mitigate.judge import Judge, JudgeConfig, Judgment, PromptJudge
from mitigate.measures._stats import PermutationResult, paired_permutation_test, pearson
from mitigate.prompt import get_prompt
from mitigate.run import run
from mitigate.strategies import MultiAttribute, Pipeline, SingleAttribute

CRITERIA = ("coherence", "consistency", "fluency", "relevance")
PAPER = {"judge": "GPT-4", "inter_criterion_r_judge": 0.979, "inter_criterion_r_human": 0.315}


def mean_pairwise_r(mat: np.ndarray) -> float:
    """Mean Pearson r over the pairs of columns (criteria) of an items x criteria matrix."""
    values = [pearson(mat[:, a], mat[:, b]) for a, b in itertools.combinations(range(mat.shape[1]), 2)]
    finite = [v for v in values if math.isfinite(v)]
    return float(np.mean(finite)) if finite else math.nan


def swap_test(a: np.ndarray, b: np.ndarray, n_perm: int, seed: int) -> PermutationResult:
    """Paired permutation test of mean_pairwise_r(a) - mean_pairwise_r(b): each item's row swapped with p =
    1/2."""
    keep = np.isfinite(a).all(axis=1) & np.isfinite(b).all(axis=1)
    a, b = a[keep], b[keep]
    observed = mean_pairwise_r(a) - mean_pairwise_r(b)
    if len(a) < 3 or not math.isfinite(observed):
        return PermutationResult(
            observed=math.nan,
            p_value=math.nan,
            n=len(a),
            n_perm=n_perm,
            reason="fewer than 3 complete items or an undefined correlation",
        )
    rng = np.random.default_rng(seed)
    null = np.empty(n_perm)
    for k in range(n_perm):
        swap = rng.random(len(a)) < 0.5
        null[k] = mean_pairwise_r(np.where(swap[:, None], b, a)) - mean_pairwise_r(
            np.where(swap[:, None], a, b)
        )
    null = null[np.isfinite(null)]
    p_value = (1 + int(np.sum(np.abs(null) >= abs(observed) - 1e-12))) / (1 + len(null))
    return PermutationResult(
        observed=observed,
        p_value=p_value,
        n=len(a),
        n_perm=n_perm,
        observed_a=mean_pairwise_r(a),
        observed_b=mean_pairwise_r(b),
    )


def matrix(judgments: list[Judgment]) -> np.ndarray:
    """Items x criteria scores (NaN for a parse failure or a failed call)."""
    return np.array(
        [
            [np.nan if j.error is not None or j.scores.get(c) is None else j.scores[c] for c in CRITERIA]
            for j in judgments
        ],
        dtype=float,
    )


async def _run(judge: Judge, items: list[Item], args: argparse.Namespace, name: str) -> Any:
    res = await run(
        judge,
        items,
        concurrency=args.concurrency,
        journal=args.run_dir / "journals" / f"{name}.jsonl",
        restart=args.restart,
        progress=args.progress,
        desc=name,
    )
    print(f"  {name}: {res.summary.line()}", file=sys.stderr)
    return res


async def main_async(args: argparse.Namespace) -> None:
    timer = Timer()
    bench = load("summeval")
    items = select_items(bench.items, args.n)
    criteria = tuple(get_prompt(f"summeval-{c}").criteria[0] for c in CRITERIA)
    lm = make_lm(args)
    base = PromptJudge(
        get_prompt("summeval-coherence"), lm, JudgeConfig(temperature=0.0, max_tokens=args.max_tokens)
    )
    multi_cfg = {"max_tokens": args.multi_max_tokens}
    settings = {
        "multi": MultiAttribute(criteria=criteria),
        "multi-reversed": MultiAttribute(criteria=criteria, order=tuple(reversed(CRITERIA))),
    }
    runs: dict[str, list[Judgment]] = {}
    summaries: dict[str, Any] = {}
    try:
        for name, m in settings.items():
            t0 = time.perf_counter()
            judge = m.wrap(base.with_config(**multi_cfg))
            res = await _run(judge, items, args, name)
            runs[name] = list(res.judgments)
            summaries[name] = res.summary.model_dump(mode="json")
            positions = {
                tuple(sorted(j.meta.get("positions", {}).items())) for j in res.judgments if j.error is None
            }
            if len(positions) > 1:
                raise RuntimeError(
                    f"expected one fixed criteria order per setting; {name} recorded {positions}"
                )
            timer.mark(name, t0)
        single = Pipeline([MultiAttribute(criteria=criteria), SingleAttribute()]).wrap(base)
        per_crit: dict[str, dict[str, Judgment]] = {}
        t0 = time.perf_counter()
        # one criterion over all items at a time: consecutive calls share the prefix
        for leaf in single.leaves():
            crit = leaf.prompt.criteria[0].name
            res = await _run(leaf, items, args, f"single-{crit}")
            per_crit[crit] = res.by_id()
            summaries[f"single-{crit}"] = res.summary.model_dump(mode="json")
        timer.mark("single", t0)
    finally:
        await lm.aclose()
    runs["single"] = [
        Judgment(
            item_id=it.id,
            scores={c: per_crit[c][it.id].scores.get(c) for c in CRITERIA},
            error="; ".join(e for c in CRITERIA if (e := per_crit[c][it.id].error)) or None,
        )
        for it in items
    ]
    human = np.column_stack([M.human_scores(items, c) for c in CRITERIA])
    hdict = {c: human[:, k] for k, c in enumerate(CRITERIA)}
    ci = {"ci": args.n_boot > 0, "n_boot": max(args.n_boot, 1), "seed": args.seed}
    out: dict[str, Any] = {
        "human": {
            "inter_criterion_pearson": measure_json(M.inter_criterion_correlation(hdict, "pearson", **ci))
        }
    }
    mats = {name: matrix(js) for name, js in runs.items()}
    for name, mat in mats.items():
        jdict = {c: mat[:, k] for k, c in enumerate(CRITERIA)}
        out[name] = {
            "inter_criterion_pearson": measure_json(M.inter_criterion_correlation(jdict, "pearson", **ci)),
            "anchoring_pearson": measure_json(M.anchoring(jdict, hdict, "pearson", **ci)),
            "spearman_with_humans": {
                c: measure_json(M.item_correlation(jdict[c], hdict[c], "spearman", **ci)) for c in CRITERIA
            },
        }
    stacked_j = np.vstack([mats["multi"], mats["multi-reversed"]])
    stacked_h = np.vstack([human, human])
    pos = {
        c: [float(k)] * len(items) + [float(len(CRITERIA) - 1 - k)] * len(items)
        for k, c in enumerate(CRITERIA)
    }
    by_pos = M.correlation_by_position(
        {c: stacked_j[:, k] for k, c in enumerate(CRITERIA)},
        {c: stacked_h[:, k] for k, c in enumerate(CRITERIA)},
        pos,
        "kendall",
        **ci,
    )
    out["correlation_by_position_kendall"] = measure_json(by_pos)
    tests = {
        "inter_criterion_single_minus_multi": perm_json(
            swap_test(mats["single"], mats["multi"], args.n_perm, args.seed)
        ),
        "spearman_single_minus_multi": {
            c: perm_json(
                paired_permutation_test(
                    mats["single"][:, k],
                    mats["multi"][:, k],
                    human[:, k],
                    "spearman",
                    n_perm=args.n_perm,
                    seed=args.seed,
                )
            )
            for k, c in enumerate(CRITERIA)
        },
    }
    print(f"\nSummEval, n={len(items)} summaries ({len({it.doc_id for it in items})} documents)")
    print(f"{'setting':<16} inter-criterion Pearson r (mean of 6 pairs)")
    print(f"{'humans':<16} {fmt(out['human']['inter_criterion_pearson'])}")
    for name in mats:
        print(f"{name:<16} {fmt(out[name]['inter_criterion_pearson'])}")
    print("single - multi: " + fmt_test(tests["inter_criterion_single_minus_multi"]))
    for c in CRITERIA:
        print(
            f"Spearman {c:<12} single {fmt(out['single']['spearman_with_humans'][c])}  multi "
            f"{fmt(out['multi']['spearman_with_humans'][c])}  "
            f"{fmt_test(tests['spearman_single_minus_multi'][c])}"
        )
    print(
        f"Kendall by position (multi + reversed): {clean(by_pos.extra.get('by_position'))}; first - last "
        f"{fmt(by_pos)}"
    )
    path = write_summary(
        args,
        "single_vs_multi_summeval.py",
        {
            "what": "inter-criterion correlation and correlation by position, single vs multi-attribute "
            "(Stureborg et al. 2024)",
            "n_items": len(items),
            "n_documents": len({it.doc_id for it in items}),
            "paper": PAPER,
            "results": out,
            "tests": tests,
            "runs": summaries,
        },
        timer,
    )
    print(f"wrote {path}", file=sys.stderr)


def main(argv: list[str] | None = None) -> None:
    """Command-line entry (see the module docstring)."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    add_common_args(ap, name="single_vs_multi_summeval", default_n=120)
    ap.add_argument("--multi-max-tokens", type=int, default=48, help="answer budget of the 4-criterion calls")
    args = ap.parse_args(argv)
    asyncio.run(main_async(args))


if __name__ == "__main__":
    main()
