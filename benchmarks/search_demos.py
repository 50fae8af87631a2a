"""Searched demonstrations vs the papers' heuristics and random demos, on held-out test items (USS SGD,
WebNLG).

``mitigate.search`` looks for the demo set that maximises a declared objective on a
dev split. This script asks whether what it finds holds on a **test split it never saw**, and
how it compares with the demo heuristics of the papers and with random demos.

``--task uss`` (Ghazarian et al. 2024; user satisfaction on USS SGD, 1-5)
    Gold label = ``meta["label"]``, the majority vote of the raters (ties to the lower score),
    as in ``perturbed_demos_uss.py``. Objective: **accuracy + λ·κ(consistency)** (``--lam``,
    default 1): exact match with the gold label under the original guideline, plus the
    chance-corrected agreement of the scores under ``--probe-n`` option reorderings
    (``--consistency raw``: the paper's share of items whose score is the same, which a
    judge that answers one score to everything maximises). Items:
    the 1,000 dialogues shuffled with ``--seed`` exactly as ``perturbed_demos_uss.py`` does;
    the first 200 are the demo pool (only short dialogues whose gold mean is a whole number
    equal to the label, so demos fit the context), the next ``--n`` are the test items (the
    same items, prompt, probe and demos as that script, so its judgments are read from the LM
    cache), and the ``--dev`` after them are the dev split. The search draws 2-demo sets
    from ``Random`` and ``Stratified`` and shows each either plainly or under perturbed
    guidelines. Arms on test: zero-shot; 2 random demos; **2-shot perturbed** (the paper's
    mitigation, the demos of ``perturbed_demos_uss.py``); the searched set.

``--task webnlg`` (Ohi et al. 2024; WebNLG 2020 fluency by default, 0-100)
    Objective: **Spearman with humans − μ·|BiasScore|** (``--mu``, default 1). BiasScore =
    Spearman(LS, US), LS from the judged model conditioned on the WebNLG task. The 178
    inputs are halved with ``--seed`` (as in ``highest_rs_webnlg.py``); test items are taken
    document by document from the test half; the train half gives the dev split (``--dev``
    items, document by document) and the demo pool (the rest; human scores rounded to whole
    numbers, the grid the judge answers on). The search draws sets of ``--k`` demos from
    ``Random`` and ``Stratified(by="range")``. Arms on test: zero-shot; ``--k-heuristic``
    random demos; **highest-RS** ``--k-heuristic`` (the paper's mitigation, fitted on
    ``--pool`` train items); the searched set.

For every arm: its test measures with 95% bootstrap intervals, the objective with its
interval, and for the searched set minus each other arm a paired bootstrap interval of the
objective gain and paired permutation p-values of its terms. The search's budget counts LM
requests (cache hits count too, so a rerun retraces the same search); the winning pipeline is saved to
``--run-dir`` (it holds
benchmark text, so it is not written into the repository).

Runtime on 2 cores (Qwen2.5 0.5B: ~110 prompt tokens/s, ~25 generated tokens/s). USS: a
dialogue is ~350 tokens, so a call is ~3.5-5 s; KV snapshots (``LlamaCppLM(prefix_slots)``)
keep each guideline variant's instructions and demos when the probe alternates between them.
A candidate costs ``--dev`` x (1 + ``--probe-n``) calls: 48 for the defaults, ~3-4 min, so a
budget of 336 calls (7 trials) is ~25 min; the random-demo and searched arms add 2 x 120
calls on test (~15 min). WebNLG: a call is ~1-2 s after the demo prefix; a candidate costs
``--dev`` calls (~1 min for 40), the highest-RS fit ``--pool`` x ~2 s, LS ~0.8 s per item.
Smoke test: ``--backend local --n 3 --dev 3 --budget 30 --pool 6``.

Run: ``python benchmarks/search_demos.py --task uss|webnlg [--n ...] [--dev ...] [--budget ...]``.
Writes ``benchmarks/results/search_demos_<task>.json`` and a plot of the search beside it (``.png``);
journals go to ``runs/evidence/`` (resumable).
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import highest_rs_webnlg as HRS
import perturbed_demos_uss as PD
from evidence_common import (
    RESULTS_DIR,
    RUNS_DIR,
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
from mitigate.data import Benchmark, Item, Split, load, select_items
from mitigate.harness import Entry, compare
from mitigate.harness._judging import GENERATION_TASKS
from mitigate.judge import JudgeConfig, Judgment, LikelihoodScorer, PromptJudge
from mitigate.measures._stats import paired_permutation_test, permutation_test_mean_diff
from mitigate.prompt import JudgePrompt
from mitigate.report import plot_search
from mitigate.run import run
from mitigate.search import Objective, SearchResult, asearch
from mitigate.selectors import Random, Stratified
from mitigate.strategies import (
    FixedDemosPreset,
    HighestRSDemosPreset,
    Mitigation,
    PerturbedDemosPreset,
    PerturbedGuidelines,
    PerturbedGuidelinesJudge,
    Pipeline,
    RandomDemosPreset,
)
from mitigate.strategies._perturbed_demos import ORIGINAL

SEARCHED = "searched"


def search_json(res: SearchResult) -> dict[str, Any]:
    """The search's trials, winner and dev/test objective (demo ids only, never their text)."""
    return {
        "engine": res.engine,
        "objective": res.objective.describe(),
        "budget": res.budget,
        "calls_search": res.calls_search,
        "calls_test": res.calls_test,
        "stopped": res.stopped,
        "winner": {
            "label": res.best.label,
            "selector": res.best.selector,
            "demo_ids": list(res.best.demo_ids),
        },
        "dev": res.dev.model_dump(mode="json"),
        "baseline_dev": res.baseline_dev.model_dump(mode="json"),
        "test": res.test.model_dump(mode="json"),
        "baseline_test": res.baseline_test.model_dump(mode="json"),
        "test_gain_over_baseline": res.test_gain.model_dump(mode="json"),
        "trials": [
            {
                "label": t.label,
                "selector": t.selector,
                "demo_ids": list(t.demo_ids),
                "calls": t.calls,
                "dev": t.dev.value,
                "dev_line": t.dev.line(),
            }
            for t in res.trials
        ],
    }


def print_search(res: SearchResult) -> None:
    print(res.summary())
    for t in res.trials:
        print(f"  trial {t.index}: {t.label} {list(t.demo_ids)} -> dev {t.dev.line()}")


# --------------------------------------------------------------------------- USS SGD


def uss_items(args: argparse.Namespace) -> tuple[list[Item], list[Item], list[Item], list[Item], Benchmark]:
    """(search pool, dev, test, the raw 200-item demo pool) in ``perturbed_demos_uss.py``'s order.

    Search pool, dev and test are relabelled with the majority-vote label; the raw pool is what
    the heuristic arm's demos are picked from, exactly as in that script.
    """
    bench = load("uss-sgd")
    order = PD.shuffled(list(bench.items), args.seed)
    raw_pool, test = order[:200], order[200 : 200 + args.n]
    dev = order[200 + args.n : 200 + args.n + args.dev]

    def relabel(items: list[Item]) -> list[Item]:
        return [it.model_copy(update={"human": {PD.CRITERION: float(it.meta["label"])}}) for it in items]

    return relabel(PD.short_whole(raw_pool, label_only=True)), relabel(dev), relabel(test), raw_pool, bench


async def judge_children(
    probe_judge: PerturbedGuidelinesJudge, items: list[Item], args: argparse.Namespace, arm: str
) -> dict[str, dict[str, float | None]]:
    """Run each guideline variant over all items in turn (prefix reuse); variant -> item id -> score."""
    outputs: dict[str, dict[str, float | None]] = {}
    for child_name, child in probe_judge.children.items():
        slug = f"{arm}__{child_name}".replace(" ", "_").replace("/", "_")
        res = await run(
            child,
            items,
            concurrency=args.concurrency,
            journal=args.run_dir / "journals" / f"{slug}.jsonl",
            restart=args.restart,
            progress=args.progress,
            desc=f"{arm} / {child_name}",
        )
        outputs[child_name] = PD.outputs_of(res.judgments)
        print(f"  {arm} / {child_name}: {res.summary.line()}", file=sys.stderr)
    return outputs


def as_judgments(outputs: dict[str, dict[str, float | None]], ids: list[str]) -> list[Judgment]:
    """Probe-style judgments (score under the original guideline, every variant in meta) for the objective."""
    out = []
    for i in ids:
        per = {name: outputs[name].get(i) for name in outputs}
        out.append(Judgment(item_id=i, scores={PD.CRITERION: per[ORIGINAL]}, meta={"perturbations": per}))
    return out


async def run_uss(args: argparse.Namespace, timer: Timer) -> dict[str, Any]:
    pool, dev, test, raw_pool, bench = uss_items(args)
    lm = make_lm(args)
    prompt = JudgePrompt.from_template(
        PD.USS_PROMPT, criterion=PD.CRITERION, scale=(1, 5), output_slot="dialogue"
    )
    base = PromptJudge(prompt, lm, JudgeConfig(temperature=0.0, max_tokens=args.max_tokens))
    probe = PerturbedGuidelines(kind="order", n=args.probe_n, seed=args.seed + 1)
    objective = Objective(agreement="accuracy", consistency_weight=args.lam, consistency=args.consistency)
    template = PerturbedDemosPreset(m=2, n=args.demo_n, seed=args.seed).build()
    print(
        f"USS SGD: pool {len(pool)}, dev {len(dev)}, test {len(test)}; objective {objective.describe()}",
        file=sys.stderr,
    )
    try:
        t0 = time.perf_counter()
        res = await asearch(
            base,
            Split(train=tuple(pool), dev=tuple(dev), test=tuple(test), scale=bench.scale),
            criterion=PD.CRITERION,
            objective=objective,
            k=2,
            selectors=[Random(seed=args.seed), Stratified(seed=args.seed)],
            engine="random",
            budget=args.budget,
            perturbations=[None, template],
            probe=probe,
            concurrency=1,
            progress=args.progress,
            n_boot=args.n_boot,
            seed=args.seed,
        )
        timer.mark("search", t0)
        print_search(res)
        res.save_pipeline(args.run_dir / "searched_pipeline.json")
        print(f"wrote {plot_search(res, args.out.with_suffix('.png'))}", file=sys.stderr)
        heuristic = PD.pick_demos(raw_pool, args.seed)
        arms: dict[str, Mitigation] = {
            "zero-shot": Pipeline(),
            "random 2": FixedDemosPreset(
                demos=tuple(Random(seed=args.seed).fit(pool, criterion=PD.CRITERION).select(2))
            ).build(),
            "2-shot perturbed (Ghazarian)": PerturbedDemosPreset(
                demos=heuristic, m=2, n=args.demo_n, seed=args.seed
            ).build(),
            SEARCHED: res.pipeline(),
        }
        ids = [it.id for it in test]
        gold = {it.id: int(it.human[PD.CRITERION]) for it in test}
        results: dict[str, Any] = {}
        judgments: dict[str, list[Judgment]] = {}
        indicators: dict[str, tuple[np.ndarray, np.ndarray]] = {}
        t0 = time.perf_counter()
        for name, mit in arms.items():
            pj = probe.wrap(mit.wrap(base))
            assert isinstance(pj, PerturbedGuidelinesJudge)
            outputs = await judge_children(pj, test, args, name)
            ci = {"ci": True, "n_boot": args.n_boot, "seed": args.seed}
            judgments[name] = as_judgments(outputs, ids)
            indicators[name] = PD.per_item(outputs, gold, ids)
            value = objective.evaluate(
                judgments[name], test, PD.CRITERION, ci=True, n_boot=args.n_boot, seed=args.seed
            )
            results[name] = {
                "consistency": measure_json(M.perturbation_consistency(outputs, **ci)),
                "accuracy_original_guideline": measure_json(
                    M.accuracy([outputs[ORIGINAL].get(i) for i in ids], [gold[i] for i in ids], **ci)
                ),
                "accuracy_averaged": measure_json(M.accuracy_under_perturbation(outputs, gold, **ci)),
                "objective": value.model_dump(mode="json"),
                "score_counts": score_counts([outputs[ORIGINAL].get(i) for i in ids]),
                "parse_failures": {k: sum(v is None for v in o.values()) for k, o in outputs.items()},
            }
        timer.mark("test arms", t0)
    finally:
        await lm.aclose()
    tests: dict[str, Any] = {}
    for name in arms:
        if name == SEARCHED:
            continue
        gain = objective.gain(
            judgments[SEARCHED], judgments[name], test, PD.CRITERION, n_boot=args.n_boot, seed=args.seed
        )
        tests[f"{SEARCHED} vs {name}"] = {
            "objective_gain": gain.model_dump(mode="json"),
            "consistency": perm_json(
                permutation_test_mean_diff(
                    indicators[SEARCHED][0],
                    indicators[name][0],
                    n_perm=args.n_perm,
                    seed=args.seed,
                    paired=True,
                )
            ),
            "accuracy_averaged": perm_json(
                permutation_test_mean_diff(
                    indicators[SEARCHED][1],
                    indicators[name][1],
                    n_perm=args.n_perm,
                    seed=args.seed,
                    paired=True,
                )
            ),
        }
    print(f"\nUSS SGD test split, n={len(test)}; objective {objective.describe()}")
    for name, r in results.items():
        kappa = r["consistency"].get("extra", {}).get("kappa")
        print(
            f"{name:<30} objective {fmt(_objective_measure(r['objective']))}  consistency "
            f"{fmt(r['consistency'])} (kappa {fmt_num(kappa)})  accuracy(original) "
            f"{fmt(r['accuracy_original_guideline'])}  scores {r['score_counts']}"
        )
    for key, t in tests.items():
        g = t["objective_gain"]
        print(
            f"{key:<44} objective gain {_gain_text(g)}; consistency {fmt_test(t['consistency'])}; "
            f"accuracy {fmt_test(t['accuracy_averaged'])}"
        )
    return {
        "task": "uss-sgd",
        "criterion": PD.CRITERION,
        "n_pool": len(pool),
        "n_dev": len(dev),
        "n_test": len(test),
        "objective": objective.describe(),
        "search": search_json(res),
        "heuristic_demos": [{"id": d.item.id, "gold": d.score} for d in heuristic],
        "gold_label_counts": score_counts(list(gold.values())),
        "arms": results,
        "tests": tests,
    }


# --------------------------------------------------------------------------- WebNLG


async def run_webnlg(args: argparse.Namespace, timer: Timer) -> dict[str, Any]:
    c = args.criterion
    bench = load("webnlg")
    train, test_all = HRS.split_docs(bench, args.seed)
    train = [it for it in train if c in it.human]
    dev = select_items(train, args.dev)
    dev_docs = {it.doc_id for it in dev}
    pool = [
        it.model_copy(update={"human": {**it.human, c: float(round(it.human[c]))}})
        for it in train
        if it.doc_id not in dev_docs
    ]
    test = select_items([it for it in test_all if c in it.human], args.n)
    lm = make_lm(args)
    base = PromptJudge(HRS.prompt_for(c), lm, JudgeConfig(temperature=0.0, max_tokens=args.max_tokens))
    task = GENERATION_TASKS["webnlg"]
    objective = Objective(agreement="spearman", bias_weight=args.mu)
    print(
        f"WebNLG {c}: pool {len(pool)}, dev {len(dev)}, test {len(test)}; objective {objective.describe()}",
        file=sys.stderr,
    )
    try:
        t0 = time.perf_counter()
        scorer = LikelihoodScorer(lm)
        ls_values = await scorer.score_many([*dev, *test], task, progress=args.progress)
        ls = {it.id: float(v) for it, v in zip([*dev, *test], ls_values, strict=True)}
        timer.mark("LS of dev and test", t0)
        t0 = time.perf_counter()
        res = await asearch(
            base,
            Split(train=tuple(pool), dev=tuple(dev), test=tuple(test), scale=bench.scale),
            criterion=c,
            objective=objective,
            k=args.k,
            selectors=[Random(seed=args.seed), Stratified(seed=args.seed, by="range")],
            engine="random",
            budget=args.budget,
            ls=ls,
            concurrency=1,
            progress=args.progress,
            n_boot=args.n_boot,
            seed=args.seed,
        )
        timer.mark("search", t0)
        print_search(res)
        res.save_pipeline(args.run_dir / "searched_pipeline.json")
        print(f"wrote {plot_search(res, args.out.with_suffix('.png'))}", file=sys.stderr)
        pool_bench = Benchmark(name="webnlg-pool", items=tuple(pool), criteria=(c,), scale=bench.scale)
        t0 = time.perf_counter()
        rnd = HRS.rounded(
            RandomDemosPreset(k=args.k_heuristic, seed=args.seed, criterion=c).build().fit(pool_bench)
        )
        hrs_raw = (
            await HighestRSDemosPreset(
                k=args.k_heuristic, criterion=c, pool_size=args.pool, seed=args.seed, task=task
            )
            .build()
            .afit(pool_bench, base, lm=lm, progress=args.progress, concurrency=1)
        )
        hrs = HRS.rounded(hrs_raw)
        timer.mark("highest-RS fit", t0)
        kh = args.k_heuristic
        entries = [
            Entry.from_pipeline(SEARCHED, base, res.pipeline()),
            Entry.from_pipeline("zero-shot", base, Pipeline()),
            Entry.from_pipeline(f"random {kh}", base, Pipeline([rnd])),
            Entry.from_pipeline(f"highest-RS {kh} (Ohi)", base, Pipeline([hrs])),
        ]
        test_bench = Benchmark(name="webnlg-test", items=tuple(test), criteria=(c,), scale=bench.scale)
        t0 = time.perf_counter()
        result = await compare(
            benchmark=test_bench,
            criterion=c,
            entries=entries,
            out_dir=args.run_dir / "compare",
            concurrency=1,
            likelihood=scorer,
            likelihood_task=task,
            progress=args.progress,
            n_boot=args.n_boot,
            n_perm=args.n_perm,
            seed=args.seed,
            restart=args.restart,
        )
        timer.mark("test arms", t0)
    finally:
        await lm.aclose()
    human = M.human_scores(test, c)
    ls_test = np.array([np.nan if r.ls is None else r.ls for r in result.items])
    arms: dict[str, Any] = {}
    scores: dict[str, np.ndarray] = {}
    for e in result.entries:
        scores[e.name] = np.array([np.nan if s is None else s for s in e.scores(c)])
        value = objective.evaluate(
            list(e.judgments), test, c, ls=ls_test, ci=True, n_boot=args.n_boot, seed=args.seed
        )
        arms[e.name] = {
            "bias_score": measure_json(e.measures["bias-score"]),
            "spearman_item": measure_json(e.measures["spearman-item"]),
            "objective": value.model_dump(mode="json"),
            "distinct_scores": len(set(scores[e.name][np.isfinite(scores[e.name])].tolist())),
            "run": e.summary.model_dump(mode="json"),
        }
    tests: dict[str, Any] = {}
    by_name = {e.name: e for e in result.entries}
    for name in by_name:
        if name == SEARCHED:
            continue
        gain = objective.gain(
            list(by_name[SEARCHED].judgments),
            list(by_name[name].judgments),
            test,
            c,
            ls=ls_test,
            n_boot=args.n_boot,
            seed=args.seed,
        )
        us_a = M.unfairness_scores(scores[SEARCHED], human)
        us_b = M.unfairness_scores(scores[name], human)
        tests[f"{SEARCHED} vs {name}"] = {
            "objective_gain": gain.model_dump(mode="json"),
            "spearman": perm_json(
                paired_permutation_test(
                    scores[SEARCHED], scores[name], human, "spearman", n_perm=args.n_perm, seed=args.seed
                )
            ),
            "bias_score": perm_json(
                paired_permutation_test(us_a, us_b, ls_test, "spearman", n_perm=args.n_perm, seed=args.seed)
            ),
        }
    print(f"\nWebNLG {c} test split, n={len(test)}; objective {objective.describe()}")
    for name, r in arms.items():
        print(
            f"{name:<24} objective {fmt(_objective_measure(r['objective']))}  BiasScore "
            f"{fmt(r['bias_score'])}  Spearman {fmt(r['spearman_item'])}  distinct scores "
            f"{r['distinct_scores']}"
        )
    for key, t in tests.items():
        print(
            f"{key:<36} objective gain {_gain_text(t['objective_gain'])}; Spearman "
            f"{fmt_test(t['spearman'])}; BiasScore {fmt_test(t['bias_score'])}"
        )
    return {
        "task": "webnlg",
        "criterion": c,
        "n_pool": len(pool),
        "n_dev": len(dev),
        "n_test": len(test),
        "objective": objective.describe(),
        "search": search_json(res),
        "heuristic_demos": {
            f"random {kh}": [d.item.id for d in rnd.demos_],
            f"highest-RS {kh} (Ohi)": [d.item.id for d in hrs.demos_],
        },
        "arms": arms,
        "tests": tests,
    }


# --------------------------------------------------------------------------- shared


def _objective_measure(value: dict[str, Any]) -> dict[str, Any]:
    return {
        "value": value["value"] if np.isfinite(value["value"]) else None,
        "ci_low": value.get("ci_low"),
        "ci_high": value.get("ci_high"),
        "n": value["n"],
        "n_failed": value["n_failed"],
        "reason": value.get("reason"),
    }


def _gain_text(g: dict[str, Any]) -> str:
    if g.get("value") is None or not np.isfinite(g["value"]):
        return f"undefined ({g.get('reason')})"
    ci = f" [{g['ci_low']:+.3f}, {g['ci_high']:+.3f}]" if g.get("ci_low") is not None else ""
    return f"{g['value']:+.3f}{ci} (n={g['n']})"


async def main_async(args: argparse.Namespace) -> None:
    timer = Timer()
    payload = await (run_uss(args, timer) if args.task == "uss" else run_webnlg(args, timer))
    path = write_summary(
        args,
        "search_demos.py",
        {
            "what": "searched demos vs the papers' heuristic demos and random demos on a held-out test split",
            **payload,
        },
        timer,
    )
    print(f"wrote {path}", file=sys.stderr)


def main(argv: list[str] | None = None) -> None:
    """Command-line entry (see the module docstring)."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--task", choices=("uss", "webnlg"), required=True)
    add_common_args(ap, name="search_demos", default_n=40)
    ap.add_argument(
        "--dev",
        type=int,
        default=None,
        help="dev items the search scores candidates on (default 16 for uss, 40 for webnlg)",
    )
    ap.add_argument(
        "--budget",
        type=int,
        default=None,
        help="LM calls the search may make (default 336 for uss, 400 for webnlg)",
    )
    ap.add_argument("--probe-n", type=int, default=2, help="uss: reorderings the items are judged under")
    ap.add_argument(
        "--demo-n", type=int, default=3, help="uss: reorderings each perturbed demo is shown under"
    )
    ap.add_argument("--lam", type=float, default=1.0, help="uss: weight of consistency in the objective")
    ap.add_argument(
        "--consistency",
        choices=("kappa", "raw"),
        default="kappa",
        help="uss: consistency term, chance-corrected (kappa) or the paper's raw share",
    )
    ap.add_argument(
        "--criterion", default="fluency", choices=sorted(HRS.DEFINITIONS), help="webnlg criterion"
    )
    ap.add_argument("--mu", type=float, default=1.0, help="webnlg: weight of |BiasScore| in the objective")
    ap.add_argument(
        "--k", type=int, nargs="+", default=[4, 8], help="webnlg: demo set sizes the search draws"
    )
    ap.add_argument(
        "--k-heuristic", type=int, default=8, help="webnlg: demos of the random and highest-RS arms"
    )
    ap.add_argument("--pool", type=int, default=100, help="webnlg: train items judged to rank by RS")
    args = ap.parse_args(argv)
    if args.dev is None:
        args.dev = 16 if args.task == "uss" else 40
    if args.budget is None:
        args.budget = 336 if args.task == "uss" else 400
    if args.out == RESULTS_DIR / "search_demos.json":
        args.out = RESULTS_DIR / f"search_demos_{args.task}.json"
    if args.run_dir == RUNS_DIR / "search_demos":
        args.run_dir = RUNS_DIR / f"search_demos_{args.task}"
    asyncio.run(main_async(args))


if __name__ == "__main__":
    main()
