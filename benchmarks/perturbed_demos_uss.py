"""Perturbed-guideline demos on USS SGD (Ghazarian et al. 2024): consistency and accuracy under reordered
options.

Ghazarian et al. ("Assessment and mitigation of inconsistencies in LLM-based evaluations",
2024) show that a judge changes its answer when the options of its scoring guideline are
listed in another order. Their mitigation shows each of M = 2 demos under several perturbed
guidelines, always with the same gold score. For GPT-3.5 on SGD, consistency under position
perturbation rose from 46% to 70%.

What this script measures, on dialogue-level user satisfaction in USS SGD (``load("uss-sgd")``;
gold label = ``meta["label"]``, the majority vote of the raters' OVERALL ratings, ties to the
lower score):

- three conditions: **zero-shot**, **2-shot perturbed** (each demo under ``--demo-n``
  reorderings of the guideline, ``perturbed-demos``) and **2-shot unperturbed**
  (the same two demos, each shown once under the original guideline, ``perturbed=False``);
- each condition judged under its own guideline and under ``--probe-n`` reorderings of the
  options (the children of :class:`~mitigate.strategies._perturbed_demos.PerturbedGuidelines`;
  its seed is ``--seed + 1``, so the test reorderings differ from the ones the demos show);
- **consistency**: the share of items with the same score under the original and every
  reordering (``measures.perturbation_consistency``), with the consistency expected by chance
  from each prompt's own answer distribution and the chance-corrected kappa (a judge that
  answers one score to everything is "consistent" without being stable); **accuracy**: exact match with the
  gold
  label, per reordering, averaged (``measures.accuracy_under_perturbation``); 95% bootstrap
  intervals over items. Paired permutation tests (per-item consistency indicator, per-item mean
  accuracy) compare each pair of conditions.

Data split: the 1,000 SGD dialogues are shuffled with ``--seed``. The first 200 form the demo
pool and the rest the test pool, and the first ``--n`` of the test pool are judged. The two
demos are drawn by ``stratified_pick`` (one from the lower half of the gold scores and one from
the upper half). They come from pool dialogues whose gold mean is a whole number, among the
shortest 30%, so that 2 x ``--demo-n`` demo copies fit the context.

Runtime on 2 cores with Qwen2.5 0.5B (~110 prompt tokens/s and ~25 generated tokens/s with 2
threads). A dialogue is about 350 tokens (median 267 words), and each call generates about 5
tokens. The shared instruction, guideline and demo prefix is nearly free after the first call
of each (condition, reordering) pair: the script runs one of them over all items before the
next, with ``--concurrency 1``. So a call costs about 350/110 + 5/25 = 3.4 s. Calls =
3 conditions x (1 + probe_n) x n = 1,200 for the defaults (n = 100, probe_n = 3), about 70 min.
Add the 12 prefix evaluations, at most ~2,000 tokens each for the perturbed demos (at most
~20 s), about 3 min more. Smoke test: ``--backend local --n 2 --probe-n 1 --demo-n 1``.

Run: ``python benchmarks/perturbed_demos_uss.py [--n 100] [--probe-n 3] [--demo-n 3]``.
Writes ``benchmarks/results/perturbed_demos_uss.json``; journals go to ``runs/evidence/`` (resumable).
"""

from __future__ import annotations

import argparse
import asyncio
import random
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
    fmt,
    fmt_num,
    fmt_test,
    make_lm,
    measure_json,
    perm_json,
    score_counts,
    write_summary,
)

import mitigate.measures as M
from mitigate.data import Item, load
from mitigate.judge import Judge, JudgeConfig, PromptJudge
from mitigate.measures._stats import permutation_test_mean_diff
from mitigate.prompt import Demo, JudgePrompt
from mitigate.run import run
from mitigate.selectors import stratified_pick
from mitigate.strategies import PerturbedDemosPreset, PerturbedGuidelines, PerturbedGuidelinesJudge, Pipeline
from mitigate.strategies._perturbed_demos import ORIGINAL

CRITERION = "satisfaction"
USS_PROMPT = """You will read a conversation between a user and a virtual assistant. Judge how satisfied the user is with the assistant over the whole conversation.

Scoring guideline:
Score 1 means the user is very dissatisfied.
Score 2 means the user is dissatisfied.
Score 3 means the user is neither satisfied nor dissatisfied.
Score 4 means the user is satisfied.
Score 5 means the user is very satisfied.

Conversation:
{{dialogue}}

Reply with "Score: " followed by a number from 1 to 5, and nothing else."""  # noqa: E501 - the template's own lines, kept as written
"""The judge prompt (this project's wording), with a five-option guideline to reorder."""

PAPER = {
    "model": "GPT-3.5",
    "dataset": "SGD",
    "perturbation": "option position",
    "consistency_zero_shot": 0.46,
    "consistency_perturbed_demos": 0.70,
}


def shuffled(items: list[Item], seed: int) -> list[Item]:
    """The items in a seeded order: the first 200 are the demo pool, the test items come after them."""
    order = list(items)
    random.Random(seed).shuffle(order)
    return order


def split(items: list[Item], n: int, seed: int) -> tuple[list[Item], list[Item]]:
    """(demo pool, test items): a seeded shuffle, the first 200 for demos, ``n`` test items after them."""
    order = shuffled(items, seed)
    return order[:200], order[200 : 200 + n]


def short_whole(pool: list[Item], *, label_only: bool = False) -> list[Item]:
    """Pool items whose gold mean is a whole number (equal to the majority label with ``label_only``),
    among the shortest 30% of those, so that several demo copies fit the context."""
    whole = [
        it
        for it in pool
        if float(it.human[CRITERION]).is_integer()
        and (not label_only or int(it.human[CRITERION]) == int(it.meta["label"]))
    ]
    cutoff = float(np.percentile([len(it.output.split()) for it in whole], 30))
    return [it for it in whole if len(it.output.split()) <= cutoff]


def pick_demos(pool: list[Item], seed: int) -> tuple[Demo, ...]:
    """Two short demos with whole-number gold scores, one from each half of the gold range."""
    picked = stratified_pick(short_whole(pool), [CRITERION], 2, None, seed)
    return tuple(Demo(item=it, score=float(it.human[CRITERION])) for it in picked)


def outputs_of(judgments: Any) -> dict[str, float | None]:
    """Item id -> score (None for a parse failure or a failed call)."""
    return {j.item_id: (None if j.error is not None else j.scores.get(CRITERION)) for j in judgments}


def per_item(
    outputs: dict[str, dict[str, float | None]], gold: dict[str, int], ids: list[str]
) -> tuple[np.ndarray, np.ndarray]:
    """Per item: consistent (1/0, NaN when a score is missing) and mean accuracy over prompts (NaN if any
    missing)."""
    cons, acc = [], []
    for i in ids:
        row = [outputs[p].get(i) for p in outputs]
        if any(v is None for v in row):
            cons.append(np.nan)
            acc.append(np.nan)
            continue
        cons.append(float(all(abs(v - row[0]) < 1e-9 for v in row)))
        acc.append(float(np.mean([abs(v - gold[i]) < 1e-9 for v in row])))
    return np.array(cons), np.array(acc)


async def main_async(args: argparse.Namespace) -> None:
    timer = Timer()
    bench = load("uss-sgd")
    pool, test = split(list(bench.items), args.n, args.seed)
    demos = pick_demos(pool, args.seed)
    gold = {it.id: int(it.meta["label"]) for it in test}
    lm = make_lm(args)
    prompt = JudgePrompt.from_template(USS_PROMPT, criterion=CRITERION, scale=(1, 5), output_slot="dialogue")
    base = PromptJudge(prompt, lm, JudgeConfig(temperature=0.0, max_tokens=args.max_tokens))
    conditions: dict[str, Pipeline] = {
        "zero-shot": Pipeline(),
        "2-shot perturbed": Pipeline(
            [PerturbedDemosPreset(demos=demos, m=2, n=args.demo_n, seed=args.seed).build()]
        ),
        "2-shot unperturbed": Pipeline([PerturbedDemosPreset(demos=demos, m=2, perturbed=False).build()]),
    }
    probe = PerturbedGuidelines(kind="order", n=args.probe_n, seed=args.seed + 1)
    print(
        f"USS SGD: {len(test)} test items (gold label counts {score_counts(gold.values())}); demos "
        f"{[(d.item.id, d.score, len(d.item.output.split())) for d in demos]} (id, gold, words); backend "
        f"{args.backend}",
        file=sys.stderr,
    )
    results: dict[str, Any] = {}
    indicators: dict[str, tuple[np.ndarray, np.ndarray]] = {}
    ids = [it.id for it in test]
    try:
        for cname, pipe in conditions.items():
            probe_judge = probe.wrap(pipe.wrap(base))
            assert isinstance(probe_judge, PerturbedGuidelinesJudge)
            outputs: dict[str, dict[str, float | None]] = {}
            summaries = {}
            t0 = time.perf_counter()
            # one prompt variant over all items at a time
            for child_name, child in probe_judge.children.items():
                res = await _run(child, test, args, f"{cname}__{child_name}")
                outputs[child_name] = outputs_of(res.judgments)
                summaries[child_name] = res.summary.model_dump(mode="json")
                print(f"  {cname} / {child_name}: {res.summary.line()}", file=sys.stderr)
            timer.mark(cname, t0)
            ci = {"ci": args.n_boot > 0, "n_boot": max(args.n_boot, 1), "seed": args.seed}
            cons = M.perturbation_consistency(outputs, **ci)
            acc = M.accuracy_under_perturbation(outputs, gold, **ci)
            acc0 = M.accuracy([outputs[ORIGINAL].get(i) for i in ids], [gold[i] for i in ids], **ci)
            indicators[cname] = per_item(outputs, gold, ids)
            results[cname] = {
                "consistency": measure_json(cons),
                "accuracy_averaged": measure_json(acc),
                "accuracy_original_guideline": measure_json(acc0),
                "parse_failures": {k: v["parse_failures"] for k, v in summaries.items()},
                "score_counts": {k: score_counts(o.values()) for k, o in outputs.items()},
                "runs": summaries,
            }
    finally:
        await lm.aclose()
    tests: dict[str, Any] = {}
    for a, b in (
        ("2-shot perturbed", "zero-shot"),
        ("2-shot unperturbed", "zero-shot"),
        ("2-shot perturbed", "2-shot unperturbed"),
    ):
        key = f"{a} vs {b}"
        tests[key] = {
            "consistency": perm_json(
                permutation_test_mean_diff(
                    indicators[a][0], indicators[b][0], n_perm=args.n_perm, seed=args.seed, paired=True
                )
            ),
            "accuracy": perm_json(
                permutation_test_mean_diff(
                    indicators[a][1], indicators[b][1], n_perm=args.n_perm, seed=args.seed, paired=True
                )
            ),
        }
    print(
        f"\nUSS SGD, n={len(test)} items, {len(probe.perturbations_for(base))} reorderings + original "
        f"(probe seed {args.seed + 1}); demos shown under {args.demo_n} reorderings"
    )
    for cname, r in results.items():
        extra = r["consistency"].get("extra", {})
        print(
            f"{cname:<20} consistency {fmt(r['consistency'])} (chance {fmt_num(extra.get('chance'))}, "
            f"kappa {fmt_num(extra.get('kappa'))})  accuracy {fmt(r['accuracy_averaged'])}  scores "
            f"{r['score_counts']}"
        )
    for key, t in tests.items():
        print(f"{key:<42} consistency {fmt_test(t['consistency'])}; accuracy {fmt_test(t['accuracy'])}")
    path = write_summary(
        args,
        "perturbed_demos_uss.py",
        {
            "what": "consistency and accuracy under option-order perturbation on USS SGD (Ghazarian et al. "
            "2024)",
            "n_items": len(test),
            "paper": PAPER,
            "demos": [{"id": d.item.id, "gold": d.score, "words": len(d.item.output.split())} for d in demos],
            "perturbations": [p.name for p in probe.perturbations_for(base)],
            "gold_label_counts": score_counts(gold.values()),
            "conditions": results,
            "tests": tests,
        },
        timer,
    )
    print(f"wrote {path}", file=sys.stderr)


async def _run(judge: Judge, items: list[Item], args: argparse.Namespace, name: str) -> Any:
    slug = name.replace(" ", "_").replace("/", "_")
    return await run(
        judge,
        items,
        concurrency=args.concurrency,
        journal=args.run_dir / "journals" / f"{slug}.jsonl",
        restart=args.restart,
        progress=args.progress,
        desc=name,
    )


def main(argv: list[str] | None = None) -> None:
    """Command-line entry (see the module docstring)."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    add_common_args(ap, name="perturbed_demos_uss", default_n=100)
    ap.add_argument(
        "--probe-n", type=int, default=3, help="reorderings the items are judged under (besides the original)"
    )
    ap.add_argument("--demo-n", type=int, default=3, help="reorderings each demo is shown under")
    args = ap.parse_args(argv)
    asyncio.run(main_async(args))


if __name__ == "__main__":
    main()
