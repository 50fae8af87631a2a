"""Calibration of logprob scores and length control on a real local judge, SummEval.

What this measures, on the first ``--docs`` SummEval documents (all 12 systems' summaries of
each), split by document into a calibration/training part (the first ``--train-docs``) and a
test part:

- the expected score (``ExpectedScore``, G-Eval style) of the built-in ``summeval-<criterion>``
  prompt with a direct answer, as the baseline;
- ``contextual-calibration`` (Zhao et al. 2021; prior from content-free inputs) and
  ``batch-calibration`` (Zhou et al. 2024; prior = mean distribution over the training
  documents' summaries), each fitted through ``Pipeline.fit`` on the training part;
- ``length-control`` (after Dubois et al. 2024) fitted on the training part, with
  ``reference="none"`` (the judge's whole length slope removed) and ``"human"`` (only its
  excess over the experts' slope);

and, on the test documents, for each: item-level and per-document Spearman with the expert
means (95% bootstrap intervals), Spearman with output length, the mean score, and the
length-controlled win rate against the field (every other system on the same document) per
system, raw and length-controlled, with the system-level Spearman of those win rates against
the experts' own win rates. Every variant reuses the baseline's LM calls from the cache (the
requests are identical), so the judge runs once per item plus the content-free inputs.

Runtime (Qwen2.5-Coder 1.5B, 2 threads, ~80 prompt tok/s): an article (~450 tokens) once per
document, then ~120 tokens per summary and 1-3 generated tokens: about 3 s per summary, so
24 documents (288 summaries) take about 17 minutes.

Run: ``flock /work/bench.lock python benchmarks/calibration_length_summeval.py --size 1.5b``
Writes ``benchmarks/results/calibration_length_summeval.json``.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import numpy as np
from evidence_common import RESULTS_DIR, clean, default_backend, fmt, measure_json
from sampling_grid_summeval import direct_prompt

from mitigate import measures as M
from mitigate.data import Benchmark, load
from mitigate.errors import ConfigError
from mitigate.judge import JudgeConfig, PromptJudge
from mitigate.lm import get, wrap
from mitigate.run import run
from mitigate.strategies import (
    BatchCalibration,
    ContextualCalibration,
    ExpectedScore,
    LengthControl,
    Mitigation,
    Pipeline,
)


def pick(bench: Benchmark, docs: int, train_docs: int) -> tuple[Benchmark, Benchmark]:
    """Items of the first ``docs`` documents, in document order, split by document."""
    order = list(dict.fromkeys(i.doc_id for i in bench.items))[:docs]
    by_doc = {d: [i for i in bench.items if i.doc_id == d] for d in order}
    train = [i for d in order[:train_docs] for i in by_doc[d]]
    test = [i for d in order[train_docs:] for i in by_doc[d]]
    return bench.model_copy(update={"items": tuple(train)}), bench.model_copy(update={"items": tuple(test)})


def win_rates(scores: np.ndarray, items: Any, n_boot: int, seed: int) -> dict[str, Any]:
    """Per system: raw and length-controlled win rate against the field."""
    systems = M.item_systems(items)
    docs = M.item_doc_ids(items)
    lengths = M.output_lengths(items)
    out = {}
    for s in dict.fromkeys(systems):
        pref, la, lb = M.pairs_against(scores, systems, docs, lengths, s)
        m = M.length_controlled_win_rate(pref, la, lb, ci=n_boot > 0, n_boot=max(n_boot, 1), seed=seed)
        out[str(s)] = {
            "lc": m.value,
            "lc_ci": [m.ci_low, m.ci_high],
            "raw": m.extra.get("raw_win_rate"),
            "raw_ci": m.extra.get("raw_ci"),
            "phi": m.extra.get("phi"),
            "n": m.n,
            "n_failed": m.n_failed,
        }
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--size", default="1.5b", help="judge model size for fetch-judge-model (0.5b or 1.5b)")
    ap.add_argument("--backend", default=None, help="LM backend spec (default: the fetched local judge)")
    ap.add_argument("--criterion", default="coherence")
    ap.add_argument("--docs", type=int, default=24)
    ap.add_argument("--train-docs", type=int, default=8)
    ap.add_argument("--n-boot", type=int, default=1000)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--out", type=Path, default=RESULTS_DIR / "calibration_length_summeval.json")
    args = ap.parse_args()
    spec = args.backend or default_backend(args.size)
    lm = wrap(get(spec, n_ctx=4096) if spec.startswith("local") else get(spec), cache=True)
    base = PromptJudge(direct_prompt(args.criterion), lm, JudgeConfig(max_tokens=8))
    train, test = pick(load("summeval"), args.docs, args.train_docs)
    started = time.time()
    variants: dict[str, Mitigation] = {
        "expected-score": Pipeline([ExpectedScore()]),
        "expected-score | contextual-calibration": Pipeline([ExpectedScore(), ContextualCalibration()]),
        "expected-score | batch-calibration": Pipeline([ExpectedScore(), BatchCalibration()]),
        "expected-score | length-control": Pipeline([ExpectedScore(), LengthControl()]),
        "expected-score | length-control(reference=human)": Pipeline(
            [ExpectedScore(), LengthControl(reference="human")]
        ),
    }
    # the baseline first, over train and test in document order, so the backend reuses each article's prefix
    everything = Benchmark(name="all", items=train.items + test.items, criteria=train.criteria)
    import asyncio

    asyncio.run(run(variants["expected-score"].wrap(base), everything.items, concurrency=1, desc="baseline"))
    human = M.human_scores(test.items, args.criterion)
    human_wr = win_rates(human, test.items, args.n_boot, args.seed)
    results: dict[str, Any] = {}
    for name, pipe in variants.items():
        try:
            fitted = pipe.fit(train, base, progress=False, concurrency=1)
        except ConfigError as exc:  # e.g. a judge that gives no scale number on content-free inputs
            results[name] = {"fit_error": str(exc)}
            print(f"{name:52s} could not be fitted: {exc}")
            continue
        res = asyncio.run(run(fitted.wrap(base), test.items, concurrency=1, progress=False, desc=name))
        scores = np.array(
            [
                np.nan if j.scores.get(args.criterion) is None else j.scores[args.criterion]
                for j in res.judgments
            ],
            dtype=float,
        )
        ci = {"ci": True, "n_boot": args.n_boot, "seed": args.seed}
        item = M.item_correlation(scores, human, "spearman", **ci)
        doc = M.document_correlation(scores, human, M.item_doc_ids(test.items), "spearman", **ci)
        length = M.length_correlation(scores, M.output_lengths(test.items), **ci)
        wr = win_rates(scores, test.items, args.n_boot, args.seed)
        systems = list(wr)
        raw_vs_h = M.item_correlation(
            [wr[s]["raw"] for s in systems], [human_wr[s]["raw"] for s in systems], "spearman"
        )
        lc_vs_h = M.item_correlation(
            [wr[s]["lc"] for s in systems], [human_wr[s]["raw"] for s in systems], "spearman"
        )
        step = fitted.steps[-1]
        fitted_info = step.model_dump(mode="json", include={"priors_", "slopes_", "mean_", "std_"})
        results[name] = {
            "spearman_item": measure_json(item),
            "spearman_document": measure_json(doc),
            "length_spearman": measure_json(length),
            "mean_score": float(np.nanmean(scores)),
            "parse_failures": int(np.isnan(scores).sum()),
            "fitted": fitted_info,
            "win_rates": wr,
            "system_spearman_raw_win_rate_vs_human": measure_json(raw_vs_h),
            "system_spearman_lc_win_rate_vs_human": measure_json(lc_vs_h),
        }
        print(
            f"{name:52s} item ρ {fmt(item)}  doc ρ {fmt(doc)}  length ρ {fmt(length)}  "
            f"mean {np.nanmean(scores):.2f}  WR-vs-human ρ raw {raw_vs_h.value:.3f} LC {lc_vs_h.value:.3f}"
        )
    hl = M.length_correlation(
        human, M.output_lengths(test.items), ci=True, n_boot=args.n_boot, seed=args.seed
    )
    summary = {
        "command": " ".join(["python", *sys.argv]),
        "backend": spec,
        "criterion": args.criterion,
        "train_items": len(train.items),
        "test_items": len(test.items),
        "docs": args.docs,
        "train_docs": args.train_docs,
        "seconds": round(time.time() - started, 1),
        "human_length_spearman": measure_json(hl),
        "human_win_rates": human_wr,
        "variants": results,
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    import json

    args.out.write_text(json.dumps(clean(summary), indent=1))
    print(f"human length ρ {fmt(hl)}; wrote {args.out}")


if __name__ == "__main__":
    main()
