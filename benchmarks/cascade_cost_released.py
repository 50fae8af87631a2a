"""The cheapest cascade that keeps its promise (issue 50), replayed on LLMBar's released judges.

LLMBar (Zeng et al. 2024) released four priced judges' answers in both output orders on the 419 pairs of
LLMBar proper: GPT-4 (gpt-4-0613), ChatGPT (gpt-3.5-turbo-0613), PaLM 2 (text-bison-001) and LLaMA-2-70B-Chat,
each with the Vanilla prompt (with rules). Every judge gives two stages a cascade may use:

- ``<model> 1 order``: the first order's verdict, trusted wholesale or not at all (one call);
- ``<model> 2 orders``: both orders, trusted where they agree (``both-orders`` confidence; two calls).

Prices: each call's tokens (the prompt template, the instruction and both outputs; the released completion),
taken as characters / 4, priced at the providers' list prices of October 2023 (the release) through
``mitigate.lm.register_price``; a human label costs ``--human-cost`` (USD 1.00: an expert's pairwise judgment
of about a minute). Over ``--splits`` random halves (calibration / test) and each target 1 − α (δ = 0.1):

- **cheapest**: :func:`mitigate.strategies.fit_cheapest_cascade` over every ordered choice of one or two
  stages of distinct models (56 candidates), fitted on the calibration half, with ``selection`` "bonferroni"
  (56 distinct stage tests at δ/56) or "split" (chosen on half the calibration items, certified on the
  other half at δ/K); and "cheapest, 1 stage": the 8 one-stage candidates only, at δ/8 (Bonferroni);
- **GPT-4 alone**: the strongest judge, both orders, as one selective stage at δ (Jung et al.), the rest
  to humans;
- **uncosted cascade**: Jung et al.'s cascade in price order, LLaMA-2 -> ChatGPT -> PaLM 2 -> GPT-4, each with
  both orders, δ/4 per stage (``fit_cascade``), rest to humans;

each measured on the test half: agreement of the items the judges settled, the share left to humans and the
cost per 1,000 items. "held" is the share of splits whose settled test items agreed at >= the target (a split
settling nothing holds vacuously). The frontier plot is the mean test cost against the mean test agreement
over the targets.

Run: ``python benchmarks/cascade_cost_released.py --llmbar /path/to/LLMBar`` (about 10 minutes on 2 cores).
Writes ``benchmarks/results/cascade_cost_released.json`` and ``docs/images/cascade-frontier-llmbar.png``.
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

sys.path.insert(0, str(Path(__file__).resolve().parent))
from released_common import RESULTS_DIR, Table, tables, write_json

from mitigate.data import Item, read_llmbar
from mitigate.judge import Judgment
from mitigate.lm import Price, Usage, register_price
from mitigate.replay._released_pairwise import parse_release
from mitigate.strategies import CascadeStage, fit_cheapest_cascade

MODELS = {  # release name -> (price-table name, USD per 1M input tokens, per 1M output tokens)
    "LLaMA2": ("llama-2-70b-chat", 0.90, 0.90),  # Together AI, hosted Llama-2-70B-Chat, 2023
    "ChatGPT": ("gpt-3.5-turbo-0613", 1.50, 2.00),  # OpenAI, 4K context
    "PaLM2": ("text-bison-001", None, None),  # Vertex AI: USD 0.0005 per 1,000 characters in and out
    "GPT-4": ("gpt-4-0613", 30.00, 60.00),  # OpenAI, 8K context
}
PALM_USD_PER_1K_CHARS = 0.0005
CHARS_PER_TOKEN = 4.0  # OpenAI's rule of thumb for English text (no tokenizer file offline)
STRONGEST = "GPT-4"
_POSITION = {"A": "first", "B": "second", "tie": "tie", None: None}


def token_counts(release: Any, strategy: str) -> dict[str, dict[str, float]]:
    """Per model: mean prompt and completion characters of one call, and tokens at 4 characters a token."""
    items = {it.id: it for it in release.benchmark.items}
    out: dict[str, dict[str, float]] = {}
    for model in MODELS:
        prompt, completion = [], []
        for a in release.answers:
            if a.judge != f"{model}/{strategy}" or not a.final:
                continue
            it = items[a.item_id]
            template = release.templates[a.template].text or ""
            prompt.append(len(template) + len(it.inputs["input"]) + len(it.output) + len(it.output_b or ""))
            completion.append(len(a.raw))
        out[model] = {
            "prompt_chars": float(np.mean(prompt)),
            "completion_chars": float(np.mean(completion)),
            "prompt": float(np.mean(prompt)) / CHARS_PER_TOKEN,
            "completion": float(np.mean(completion)) / CHARS_PER_TOKEN,
            "calls": len(prompt),
        }
    return out


def stages_and_judgments(
    tabs: dict[str, Table], counts: dict[str, dict[str, float]], strategy: str
) -> tuple[list[CascadeStage], dict[str, list[Judgment]], list[Item], dict[str, Any]]:
    """The eight priced stages and their judgments of every item (one order, and both orders)."""
    prices: dict[str, Any] = {}
    stages: list[CascadeStage] = []
    judgments: dict[str, list[Judgment]] = {}
    items = tabs[f"{STRONGEST}/{strategy}"].items
    for model, (name, p_in, p_out) in MODELS.items():
        c = counts[model]
        if p_in is None or p_out is None:  # priced per character: the same USD at 4 characters a token
            p_in = p_out = PALM_USD_PER_1K_CHARS * 1000 * CHARS_PER_TOKEN
        register_price(name, Price(input=p_in, output=p_out))
        prices[model] = {"model": name, "input_per_1M": p_in, "output_per_1M": p_out, **c}
        usage = Usage(prompt_tokens=round(c["prompt"]), completion_tokens=round(c["completion"]))
        t = tabs[f"{model}/{strategy}"]
        if [it.id for it in t.items] != [it.id for it in items]:
            raise SystemExit(f"{model}/{strategy} did not judge every item")
        one, both = f"{model} 1 order", f"{model} 2 orders"
        stages.append(CascadeStage.priced(one, name, usage, confidence="meta", calls=1))
        stages.append(CascadeStage.priced(both, name, usage, confidence="both-orders", calls=2))
        judgments[one], judgments[both] = [], []
        for it, o, s in zip(t.items, t.orig, t.swap, strict=True):
            verdict = _POSITION[o]
            judgments[one].append(
                Judgment(item_id=it.id, verdict=verdict, meta={"confidence": 1.0 if verdict else math.nan})
            )
            consistent = None if o is None or s is None else o == s
            judgments[both].append(
                Judgment(item_id=it.id, verdict=verdict, meta={"position_consistent": consistent})
            )
    return stages, judgments, items, prices


def run(args: argparse.Namespace) -> dict[str, Any]:
    t0 = time.time()
    strategy = args.strategy
    release = read_llmbar(args.llmbar, judges=f"*/{strategy}")
    tabs = tables(parse_release(release))
    counts = token_counts(release, strategy)
    stages, judgments, items, prices = stages_and_judgments(tabs, counts, strategy)
    names = [s.name for s in stages]
    model_of = {s.name: s.name.split(" ")[0] for s in stages}
    candidates = [(a,) for a in names] + [(a, b) for a in names for b in names if model_of[a] != model_of[b]]
    methods: dict[str, tuple[list[tuple[str, ...]], str]] = {
        "cheapest, bonferroni": (candidates, "bonferroni"),
        "cheapest, split": (candidates, "split"),
        "cheapest, 1 stage": ([c for c in candidates if len(c) == 1], "bonferroni"),
        f"{STRONGEST} alone": ([(f"{STRONGEST} 2 orders",)], "bonferroni"),
        "uncosted cascade": ([tuple(f"{m} 2 orders" for m in MODELS)], "bonferroni"),
    }
    rng = np.random.default_rng(args.seed)
    n = len(items)
    rows: dict[str, dict[str, list[dict[str, Any]]]] = {
        f"{t:g}": {m: [] for m in methods} for t in args.targets
    }
    for split in range(args.splits):
        perm = rng.permutation(n)
        cal, test = np.sort(perm[: n // 2]), np.sort(perm[n // 2 :])
        cal_items, test_items = [items[i] for i in cal], [items[i] for i in test]
        cal_js = {k: [v[i] for i in cal] for k, v in judgments.items()}
        test_js = {k: [v[i] for i in test] for k, v in judgments.items()}
        for target in args.targets:
            for method, (cands, selection) in methods.items():
                fit = fit_cheapest_cascade(
                    cal_js,
                    cal_items,
                    stages,
                    human_cost=args.human_cost,
                    target=target,
                    delta=args.delta,
                    candidates=cands,
                    selection=selection,  # type: ignore[arg-type]
                    seed=split,
                )
                out = fit.outcome(test_js, test_items)
                rows[f"{target:g}"][method].append(
                    {
                        "chain": [s.name for s in fit.stages],
                        "tests": fit.tests,
                        "calibration_cost_per_1000": fit.calibration.cost_per_1000,
                        "test_cost_per_1000": out.cost_per_1000,
                        "test_agreement": out.agreement,
                        "test_settled": list(out.settled),
                        "test_escalated": out.escalated,
                        "held": out.agreement is None or out.agreement >= target,
                    }
                )
        if split % 20 == 0:
            print(f"split {split}/{args.splits} ({time.time() - t0:.0f} s)", flush=True)
    summary = {t: {m: summarise(r) for m, r in by.items()} for t, by in rows.items()}
    first_fits = {}
    for target in args.targets:  # the fits on all 419 items, to show as values
        for selection in ("bonferroni", "split"):
            fit = fit_cheapest_cascade(
                judgments,
                items,
                stages,
                human_cost=args.human_cost,
                target=target,
                delta=args.delta,
                candidates=candidates,
                selection=selection,  # type: ignore[arg-type]
            )
            first_fits[f"{target:g} {selection}"] = fit.summary()
    return {
        "command": " ".join(sys.argv),
        "n_items": n,
        "strategy": strategy,
        "delta": args.delta,
        "human_cost": args.human_cost,
        "splits": args.splits,
        "seed": args.seed,
        "candidates": len(candidates),
        "prices": prices,
        "stages": [s.model_dump() for s in stages],
        "all_items_accuracy": {
            s: float(
                np.mean(
                    [
                        j.verdict == "first" if it.preference["overall"] == "A" else j.verdict == "second"
                        for j, it in zip(judgments[s], items, strict=True)
                    ]
                )
            )
            for s in names
        },
        "summary": summary,
        "fit_on_all_items": first_fits,
        "seconds": round(time.time() - t0, 1),
    }


def summarise(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """Means and 5-95% ranges over splits; how often the guarantee held; the chains chosen."""
    agree = [r["test_agreement"] for r in rows if r["test_agreement"] is not None]
    cost = np.array([r["test_cost_per_1000"] for r in rows])
    chains: dict[str, int] = {}
    for r in rows:
        key = " -> ".join([*r["chain"], "human"])
        chains[key] = chains.get(key, 0) + 1
    return {
        "held": float(np.mean([r["held"] for r in rows])),
        "settled_nothing": float(np.mean([r["test_escalated"] == 1.0 for r in rows])),
        "agreement_mean": float(np.mean(agree)) if agree else None,
        "agreement_5_95": [float(x) for x in np.percentile(agree, [5, 95])] if agree else None,
        "cost_per_1000_mean": float(cost.mean()),
        "cost_per_1000_5_95": [float(x) for x in np.percentile(cost, [5, 95])],
        "escalated_mean": float(np.mean([r["test_escalated"] for r in rows])),
        "chains": dict(sorted(chains.items(), key=lambda kv: -kv[1])),
    }


def plot(out: dict[str, Any], path: Path) -> None:
    """The frontier: mean test cost per 1,000 items against the guaranteed agreement (the target)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6.4, 4.2))
    summary = out["summary"]
    for method, marker in zip(next(iter(summary.values())), "o^vsd", strict=False):
        targets = [float(t) for t in summary]
        ax.plot(
            targets,
            [by[method]["cost_per_1000_mean"] for by in summary.values()],
            marker=marker,
            label=method,
        )
    ax.axhline(1000 * out["human_cost"], color="grey", linestyle=":", label="humans only")
    ax.set_xlabel(f"guaranteed agreement with humans of the settled items (target, delta = {out['delta']:g})")
    ax.set_ylabel("USD per 1,000 items (test halves, mean)")
    ax.set_yscale("log")
    ax.set_title(f"LLMBar: cost of keeping the guarantee (human label ${out['human_cost']:g})", fontsize=9)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=120)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--llmbar", type=Path, required=True, help="the LLMBar repository folder")
    ap.add_argument("--strategy", default="Vanilla")
    ap.add_argument("--targets", type=float, nargs="+", default=[0.65, 0.7, 0.75, 0.8])
    ap.add_argument("--delta", type=float, default=0.1)
    ap.add_argument("--human-cost", type=float, default=1.0)
    ap.add_argument("--splits", type=int, default=200)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--out", type=Path, default=RESULTS_DIR / "cascade_cost_released.json")
    ap.add_argument("--plot-only", action="store_true", help="redraw the plot from --out without a run")
    ap.add_argument(
        "--plot",
        type=Path,
        default=Path(__file__).resolve().parent.parent / "docs/images/cascade-frontier-llmbar.png",
    )
    args = ap.parse_args()
    if args.plot_only:
        plot(json.loads(args.out.read_text(encoding="utf-8")), args.plot)
        return
    out = run(args)
    write_json(args.out, out)
    plot(out, args.plot)
    for t, by in out["summary"].items():
        for m, s in by.items():
            top = next(iter(s["chains"]))
            print(
                f"target {t} {m:>20}: held {s['held']:.3f} agreement {s['agreement_mean']} "
                f"cost/1000 {s['cost_per_1000_mean']:.2f} to humans {s['escalated_mean']:.3f} usual: {top}"
            )


if __name__ == "__main__":
    main()
