"""Temperature x chain-of-thought grid with averaging, and the expected score, on SummEval (Stureborg et al.
2024).

Stureborg et al. ("Large language models are inconsistent and biased evaluators", 2024)
report that a judge's sampling setup changes how well it agrees with humans. A direct score
(no chain of thought) is best read at temperature 0. Chain-of-thought (CoT) answers need
temperature > 0 and an average over several samples. A probability-weighted (expected) score
over the scale, as in G-Eval, helps.

What this script measures, on the first ``--n`` SummEval summaries taken document by document,
for one criterion (``--criterion``, default coherence):

- the grid: temperature in ``--temperatures`` (default 0, 0.5, 1) x CoT off/on. Above
  temperature 0, ``--samples`` samples (default 3) are averaged (mean); at 0, one sample
  (``Sampling`` refuses identical copies). The expected score (``ExpectedScore``) is added at
  temperature 0 without CoT;
- through :func:`mitigate.harness._compare.compare`: for each cell, item-level and per-document
  Spearman with the expert means (95% bootstrap intervals), Krippendorff's alpha across samples
  where n > 1, and parse failures. Each cell minus the reference cell (temperature 0, no CoT)
  gets a paired bootstrap interval and a paired permutation p-value;
- ``--scale 1-10`` applies ``Granularity("1-10")`` to every cell (the scale Stureborg et al. found best).

The judge prompt is the built-in ``summeval-<criterion>`` prompt with its closing line
replaced by a direct request (``DIRECT_ASK``: the score "and nothing else"). The built-in line
asks for a sentence of justification, which would turn every cell into a reasoning cell. The
CoT cells end instead with ``COT_ASK``, which lets text come before the score line: with the
direct request plus the chain-of-thought paragraph, the 0.5B judge obeyed "nothing else" and
wrote only "Score: N" on every item, so those cells were not reasoning at all.

Runtime on 2 cores with Qwen2.5 0.5B (~110 prompt tokens/s and ~25 generated tokens/s with 2
threads). Cells run one after another over items taken document by document. An article
(~450 tokens, ~4 s) is evaluated once per document and cell. Each item then adds ~120 tokens
(~1.1 s) plus its answers: a direct answer is ~5 tokens (0.2 s per sample), and a CoT answer
is ~150 tokens (~6 s per sample, capped by ``--cot-max-tokens``). For n = 48 (4 documents) and
3 samples: direct cells take 48 x 1.3 s = 1 min at temperature 0 and 48 x 1.7 s = 1.4 min with
3 samples, and the expected score takes ~1 min. CoT cells take 48 x 7 s = 6 min at temperature 0
and 48 x 19 s = 15 min with 3 samples. Seven cells then total ~45 min, plus 7 x 4 x 4 s for the
articles. CoT dominates: halve ``--samples`` or ``--cot-max-tokens`` to halve it. Smoke test:
``--backend local --n 2 --temperatures 0 1 --samples 2 --cot-max-tokens 32``.

Run: ``python benchmarks/sampling_grid_summeval.py [--n 48] [--criterion coherence] [--scale 1-5]``.
Writes ``benchmarks/results/sampling_grid_summeval.json``; journals go to ``runs/evidence/`` (resumable).
"""

from __future__ import annotations

import argparse
import asyncio
import re
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from evidence_common import Timer, add_common_args, clean, fmt, make_lm, measure_json, write_summary

from mitigate.data import load
from mitigate.harness import Entry, compare
from mitigate.judge import JudgeConfig, PromptJudge
from mitigate.prompt import JudgePrompt, prompt_text
from mitigate.strategies import ExpectedScore, Granularity, Mitigation, Pipeline, Sampling

DIRECT_ASK = 'Reply with "Score: " followed by 1, 2, 3, 4 or 5, and nothing else.'
COT_ASK = 'End your answer with a line "Score: " followed by 1, 2, 3, 4 or 5.'
"""Closing line of the CoT cells' prompt: it allows text before the score, which "nothing else" forbids."""
CRITERIA = ("coherence", "consistency", "fluency", "relevance")


def direct_prompt(criterion: str, ask: str = DIRECT_ASK) -> JudgePrompt:
    """The built-in SummEval prompt for ``criterion`` with its closing line replaced by ``ask``."""
    text = prompt_text(f"summeval-{criterion}").rstrip()
    head, _, last = text.rpartition("\n\n")
    if not re.search(r"(?i)score", last):
        raise RuntimeError(f"expected the built-in prompt to end with its answer instruction; got {last!r}")
    return JudgePrompt.from_template(f"{head}\n\n{ask}", criterion=criterion)


def grid(args: argparse.Namespace) -> dict[str, list[Mitigation]]:
    """Cell name -> its mitigation steps (before the optional granularity step)."""
    cells: dict[str, list[Mitigation]] = {}
    for cot in (False, True):
        for t in args.temperatures:
            n = 1 if t == 0 else args.samples
            name = f"T={t:g}" + (f" n={n}" if n > 1 else "") + (" CoT" if cot else "")
            cells[name] = [
                Sampling(
                    temperature=t,
                    n=n,
                    cot=cot,
                    reducer="mean",
                    max_tokens=args.cot_max_tokens if cot else args.max_tokens,
                )
            ]
    cells["expected score"] = [Sampling(temperature=0.0, max_tokens=args.max_tokens), ExpectedScore()]
    return cells


async def main_async(args: argparse.Namespace) -> None:
    timer = Timer()
    bench = load("summeval")
    lm = make_lm(args)
    config = JudgeConfig(temperature=0.0, max_tokens=args.max_tokens)
    base = PromptJudge(direct_prompt(args.criterion), lm, config)
    cot_base = PromptJudge(direct_prompt(args.criterion, COT_ASK), lm, config)
    scale_step: list[Mitigation] = [Granularity(scale="1-10")] if args.scale == "1-10" else []
    entries = [
        Entry.from_pipeline(name, cot_base if "CoT" in name else base, Pipeline([*scale_step, *steps]))
        for name, steps in grid(args).items()
    ]
    t0 = time.perf_counter()
    try:
        result = await compare(
            benchmark=bench,
            criterion=args.criterion,
            entries=entries,
            out_dir=args.run_dir,
            concurrency=args.concurrency,
            limit=args.n,
            progress=args.progress,
            n_boot=args.n_boot,
            n_perm=args.n_perm,
            seed=args.seed,
            restart=args.restart,
        )
    finally:
        await lm.aclose()
    timer.mark("compare", t0)
    cells: dict[str, Any] = {}
    for e in result.entries:
        cmp_ = e.comparison
        cells[e.name] = {
            "spec": e.spec,
            "spearman_item": measure_json(e.measures["spearman-item"]),
            "spearman_document": measure_json(e.measures["spearman-document"]),
            "kendall_item": measure_json(e.measures["kendall-item"]),
            "alpha_across_samples": measure_json(e.measures["alpha-across-samples"]),
            "histogram": e.histogram,
            "run": e.summary.model_dump(mode="json"),
            "minus_reference": clean(cmp_.model_dump(mode="json")) if cmp_ is not None else None,
        }
    n_docs = len({r.doc_id for r in result.items})
    print(
        f"\nSummEval {args.criterion}, n={len(result.items)} summaries ({n_docs} documents), scale "
        f"{args.scale}; reference cell: {result.entries[0].name}"
    )
    for name, c in cells.items():
        d = c["minus_reference"]
        diff = (
            ""
            if d is None
            else (
                f"  vs ref {d['observed']:+.3f} [{d['ci_low']}, {d['ci_high']}] p={d['p_value']}"
                if d.get("observed") is not None
                else f"  vs ref undefined ({d.get('reason')})"
            )
        )
        print(
            f"{name:<16} Spearman {fmt(c['spearman_item'])}  alpha {fmt(c['alpha_across_samples'])}  "
            f"parse failures {c['run']['parse_failures']}{diff}"
        )
    path = write_summary(
        args,
        "sampling_grid_summeval.py",
        {
            "what": "temperature x CoT grid with averaging, and the expected score, on SummEval (Stureborg "
            "et al. 2024)",
            "n_items": len(result.items),
            "n_documents": n_docs,
            "criterion": args.criterion,
            "reference": result.entries[0].name,
            "cells": cells,
        },
        timer,
    )
    print(f"wrote {path}", file=sys.stderr)


def main(argv: list[str] | None = None) -> None:
    """Command-line entry (see the module docstring)."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    add_common_args(ap, name="sampling_grid_summeval", default_n=48)
    ap.add_argument("--criterion", default="coherence", choices=CRITERIA)
    ap.add_argument("--temperatures", type=float, nargs="+", default=[0.0, 0.5, 1.0])
    ap.add_argument("--samples", type=int, default=3, help="samples averaged per item above temperature 0")
    ap.add_argument("--cot-max-tokens", type=int, default=256, help="answer budget of chain-of-thought calls")
    ap.add_argument("--scale", choices=("1-5", "1-10"), default="1-5")
    args = ap.parse_args(argv)
    if 0.0 not in args.temperatures:
        ap.error("--temperatures must include 0 (the reference cell is temperature 0 without CoT)")
    args.temperatures = sorted(set(args.temperatures))
    asyncio.run(main_async(args))


if __name__ == "__main__":
    main()
