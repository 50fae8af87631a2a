"""Highest-RS demos vs random demos on WebNLG (Ohi et al. 2024): likelihood bias and agreement with humans.

Ohi et al. ("Likelihood-based mitigation of evaluation bias in large language models", 2024)
measure likelihood bias as BiasScore = Spearman(LS, US). LS = log P(output | input, task)
under the LM. US is the judge's score minus the human score, after the judge's scores are
mapped onto the human mean and range. Their mitigation uses as few-shot demos the 8 training
items with the highest RS = |LS* + US*|, each shown with its human score. Against 8 random
demos, total BiasScore fell from .38 to .32 for GPT-3.5 and from .17 to .02 for Llama2-13B on
data-to-text.

What this script does, on the WebNLG 2020 human evaluation (``load("webnlg")``: 16 systems x
178 inputs, 0-100 ratings):

- splits the 178 inputs (``doc_id``) with ``--seed`` into disjoint halves: demos are fitted on
  the train half only, and ``--n`` test items are taken document by document from the other half;
- per criterion (``--criteria``, default fluency): fits ``RandomDemosPreset(k=8).build()`` and
  ``HighestRSDemosPreset(k=8, pool_size=--pool).build()`` (LS and the zero-shot judge's US on the pool, with
  the
  judged LM's own likelihood, conditioned on the WebNLG generation task);
- runs both through :func:`mitigate.harness._compare.compare` with likelihood on. For each entry
  it reports BiasScore and item-level Spearman with humans, with 95% bootstrap intervals.
  Highest-RS minus random is reported for Spearman (paired bootstrap interval and paired
  permutation p-value, from ``compare``) and for BiasScore (paired permutation test swapping the
  two entries' US per item, as in the paper).

The judge answers on the humans' 0-100 scale, so the demos' human scores need no mapping. They
are shown rounded to whole numbers, the grid the judge answers on; the human means of 3 raters
are not whole numbers.

Runtime on 2 cores with Qwen2.5 0.5B (~110 prompt tokens/s and ~25 generated tokens/s with 2
threads). The 8 demos (~650 tokens) form a prefix that is evaluated once per entry and then
reused. Each judged item adds ~100 tokens (triples, text, answer instruction), and the answer is
~5 tokens, so a call takes ~1.1 s. Taking items document by document shares the triples too.
An LS call is ~90 tokens, ~0.8 s. Fitting costs pool x (0.8 + 1.1) s, about 6 min for
--pool 200. Evaluation costs 2 x n x 1.1 s + n x 0.8 s, about 15 min for n = 300. That is ~21 min
per criterion, and ~1 h 45 min for all five. Smoke test:
``--backend local --n 3 --pool 10 --k 2``.

Run: ``python benchmarks/highest_rs_webnlg.py [--criteria fluency correctness ...] [--n 300] [--pool 200]``.
Writes ``benchmarks/results/highest_rs_webnlg.json``; journals go to ``runs/evidence/`` (resumable).
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
    fmt_test,
    make_lm,
    measure_json,
    perm_json,
    write_summary,
)

import mitigate.measures as M
from mitigate.data import Benchmark, Item, load, select_items
from mitigate.harness import Entry, compare
from mitigate.harness._judging import GENERATION_TASKS
from mitigate.judge import JudgeConfig, LikelihoodScorer, PromptJudge
from mitigate.measures._stats import paired_permutation_test
from mitigate.prompt import JudgePrompt
from mitigate.strategies import HighestRSDemosPreset, Pipeline, RandomDemosPreset

DEFINITIONS = {
    "correctness": "the facts the text states are those in the triples, with nothing wrong",
    "data_coverage": "the text mentions every triple",
    "fluency": "the text reads naturally, as a native speaker of English would write it",
    "relevance": "the text only says what the triples support",
    "text_structure": "the text is well organised and grammatical",
}
WEBNLG_PROMPT = """Rate the {label} of a text written from a set of RDF triples.

{Label}: {definition}.

Triples:
{{{{triples}}}}

Text:
{{{{text}}}}

Give a score from 0 to 100, where 0 is the worst and 100 the best. Reply with "Score: " followed by a whole number from 0 to 100, and nothing else."""  # noqa: E501 - the template's own lines, kept as written
"""The judge prompt per criterion (this project's wording), on the humans' 0-100 scale."""

PAPER = {
    "measure": "total BiasScore",
    "random_8": {"GPT-3.5": 0.38, "Llama2-13B": 0.17},
    "highest_rs_8": {"GPT-3.5": 0.32, "Llama2-13B": 0.02},
}


def split_docs(bench: Benchmark, seed: int) -> tuple[list[Item], list[Item]]:
    """(train items, test items) over disjoint halves of the inputs (doc_id), seeded."""
    docs = sorted({str(it.doc_id) for it in bench.items}, key=lambda d: int(d) if d.isdigit() else d)
    random.Random(seed).shuffle(docs)
    train_docs = set(docs[: len(docs) // 2])
    train = [it for it in bench.items if str(it.doc_id) in train_docs]
    test = [it for it in bench.items if str(it.doc_id) not in train_docs]
    return train, test


def prompt_for(criterion: str) -> JudgePrompt:
    """The 0-100 judge prompt for one WebNLG criterion."""
    label = criterion.replace("_", " ")
    text = WEBNLG_PROMPT.format(label=label, Label=label.capitalize(), definition=DEFINITIONS[criterion])
    return JudgePrompt.from_template(text, criterion=criterion, scale=(0, 100), output_slot="text")


def rounded(m: Any) -> Any:
    """The fitted demo mitigation with its demos' human scores rounded to whole numbers (the judge's grid)."""
    demos = tuple(d.model_copy(update={"score": float(round(d.score))}) for d in m.demos_)
    return m.model_copy(update={"demos_": demos})


async def one_criterion(
    c: str,
    train: list[Item],
    test: list[Item],
    bench: Benchmark,
    lm: Any,
    args: argparse.Namespace,
    timer: Timer,
) -> dict[str, Any]:
    """Fit both demo sets for criterion ``c``, compare them on the test items, and test the differences."""
    base = PromptJudge(prompt_for(c), lm, JudgeConfig(temperature=0.0, max_tokens=args.max_tokens))
    train_bench = Benchmark(
        name="webnlg-train",
        items=tuple(it for it in train if c in it.human),
        criteria=(c,),
        scale=bench.scale,
    )
    task = GENERATION_TASKS["webnlg"]
    t0 = time.perf_counter()
    rnd = rounded(RandomDemosPreset(k=args.k, seed=args.seed, criterion=c).build().fit(train_bench))
    hrs_raw = (
        await HighestRSDemosPreset(k=args.k, criterion=c, pool_size=args.pool, seed=args.seed, task=task)
        .build()
        .afit(train_bench, base, lm=lm, progress=args.progress, concurrency=args.concurrency)
    )
    hrs = rounded(hrs_raw)
    timer.mark(f"{c}: fit", t0)
    test_bench = Benchmark(
        name="webnlg-test", items=tuple(select_items(test, args.n)), criteria=(c,), scale=bench.scale
    )
    entries = [
        Entry.from_pipeline(f"random-{args.k}", base, Pipeline([rnd])),
        Entry.from_pipeline(f"highest-rs-{args.k}", base, Pipeline([hrs])),
    ]
    t0 = time.perf_counter()
    result = await compare(
        benchmark=test_bench,
        criterion=c,
        entries=entries,
        out_dir=args.run_dir / c,
        concurrency=args.concurrency,
        likelihood=LikelihoodScorer(lm),
        likelihood_task=task,
        progress=args.progress,
        n_boot=args.n_boot,
        n_perm=args.n_perm,
        seed=args.seed,
        restart=args.restart,
    )
    timer.mark(f"{c}: compare", t0)
    ls = np.array([np.nan if r.ls is None else r.ls for r in result.items])
    human = M.human_scores(list(test_bench.items), c)
    us = {
        e.name: M.unfairness_scores(np.array([np.nan if s is None else s for s in e.scores(c)]), human)
        for e in result.entries
    }
    rname, hname = (e.name for e in result.entries)
    bias_test = paired_permutation_test(
        us[hname], us[rname], ls, "spearman", n_perm=args.n_perm, seed=args.seed
    )
    out = {
        "n_train_items": len(train_bench.items),
        "n_test_items": len(test_bench.items),
        "demos": {
            rname: [{"id": d.item.id, "human": d.score} for d in rnd.demos_],
            hname: [
                {"id": d.item.id, "human": d.score, "rs": (hrs_raw.selector_.rs_ or {}).get(d.item.id)}
                for d in hrs.demos_
            ],
        },
        "fit": {
            "pool": hrs_raw.selector_.n_pool_,
            "parse_failures": hrs_raw.selector_.n_parse_failures_,
            "excluded": hrs_raw.selector_.n_excluded_,
        },
        "entries": {
            e.name: {
                "bias_score": measure_json(e.measures["bias-score"]),
                "spearman_item": measure_json(e.measures["spearman-item"]),
                "kendall_item": measure_json(e.measures["kendall-item"]),
                "run": e.summary.model_dump(mode="json"),
            }
            for e in result.entries
        },
        "highest_rs_minus_random": {
            "spearman_item": result.entries[1].comparison.model_dump(mode="json")
            if result.entries[1].comparison
            else None,
            "bias_score": perm_json(bias_test),
        },
    }
    print(f"\n== {c}: n={len(test_bench.items)} test items ({len(train_bench.items)} train), k={args.k} ==")
    for e in result.entries:
        print(
            f"{e.name:<14} BiasScore {fmt(e.measures['bias-score'])}  Spearman "
            f"{fmt(e.measures['spearman-item'])}"
        )
    cmp_ = result.entries[1].comparison
    if cmp_ is not None:
        spearman = (
            f"diff {cmp_.observed:+.3f} [{cmp_.ci_low}, {cmp_.ci_high}], p={cmp_.p_value} (n={cmp_.n})"
            if cmp_.reason is None
            else f"undefined ({cmp_.reason})"
        )
        print(
            f"highest-rs - random: Spearman {spearman}; BiasScore "
            f"{fmt_test(out['highest_rs_minus_random']['bias_score'])}"
        )
    return out


async def main_async(args: argparse.Namespace) -> None:
    timer = Timer()
    bench = load("webnlg")
    train, test = split_docs(bench, args.seed)
    lm = make_lm(args)
    results: dict[str, Any] = {}
    try:
        for c in args.criteria:
            results[c] = await one_criterion(c, train, test, bench, lm, args, timer)
    finally:
        await lm.aclose()
    names = [f"random-{args.k}", f"highest-rs-{args.k}"]
    mean_bias = {
        n: float(
            np.mean(
                [
                    v if (v := results[c]["entries"][n]["bias_score"]["value"]) is not None else np.nan
                    for c in results
                ]
            )
        )
        for n in names
    }
    print(
        f"\nmean BiasScore over {list(results)}: " + ", ".join(f"{n} {v:.3f}" for n, v in mean_bias.items())
    )
    path = write_summary(
        args,
        "highest_rs_webnlg.py",
        {
            "what": "BiasScore and Spearman with humans, random vs highest-RS demos, WebNLG 2020 (Ohi "
            "et al. 2024)",
            "paper": PAPER,
            "split": "inputs (doc_id) halved with --seed; demos fitted on the train half only",
            "criteria": results,
            "mean_bias_score_over_criteria": mean_bias,
            "note": "the mean over the criteria run is our aggregate; the paper's 'total' BiasScore may be "
            "defined differently",
        },
        timer,
    )
    print(f"wrote {path}", file=sys.stderr)


def main(argv: list[str] | None = None) -> None:
    """Command-line entry (see the module docstring)."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    add_common_args(ap, name="highest_rs_webnlg", default_n=300)
    ap.add_argument(
        "--criteria",
        nargs="+",
        default=["fluency"],
        choices=sorted(DEFINITIONS),
        help="WebNLG criteria to evaluate (default fluency)",
    )
    ap.add_argument("--k", type=int, default=8, help="demos per set (the paper's 8)")
    ap.add_argument("--pool", type=int, default=200, help="training items judged and scored to rank by RS")
    args = ap.parse_args(argv)
    asyncio.run(main_async(args))


if __name__ == "__main__":
    main()
