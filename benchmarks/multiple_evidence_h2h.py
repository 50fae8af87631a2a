"""Multiple evidence with k > 1 samples per order on a live local judge (Wang et al. 2023), SummEval
head-to-head.

The released ChatGPT head-to-head verdicts hold one sample per order, so their balanced
position diversity entropy takes only two values. This script runs a live pairwise judge on
the head-to-head pairs of ``summeval-h2h`` (gold: the summary with the higher expert mean;
pairs the experts tie are left out) and compares, on the same test pairs:

- one greedy verdict in the original order;
- ``position-swap`` (both orders greedily; a flip is a tie);
- ``multiple-evidence(k)``: k sampled rationales before the verdict in each order, verdicts
  averaged over both orders, and the entropy rule fitted on the training pairs, sending the
  ``--human-share`` most uncertain test pairs to a human.

It prints accuracy against the expert preference (ties count as wrong), the share of pairs whose
verdict holds in both orders, how many distinct entropy values the test pairs take, and the
accuracy of the pairs the entropy rule keeps. Train and test pairs come from different
documents (the first ``--train-docs`` documents, then the next ``--test-docs``).

Runtime (Qwen2.5-Coder 0.5B, 2 threads): about 35 s per pair for k = 3 (six sampled
rationales), a few seconds for the greedy arms.

Run: ``flock /work/bench.lock python benchmarks/multiple_evidence_h2h.py --size 0.5b``
Writes ``benchmarks/results/multiple_evidence_h2h.json``.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import numpy as np
from evidence_common import RESULTS_DIR, clean, default_backend

from mitigate.data import Benchmark, Item, load
from mitigate.judge import JudgeConfig, PromptJudge
from mitigate.lm import get, wrap
from mitigate.prompt import JudgePrompt
from mitigate.run import run
from mitigate.strategies import MultipleEvidence, PositionSwap

# Our own wording of a pairwise coherence prompt (the article first, so both orders share its prefix).
PROMPT = """You compare two summaries of the same news article for coherence: the collective quality of \
all sentences, that is, whether the summary is well structured and well organised and builds from \
sentence to sentence into a coherent body of information about the topic.

Article:
{{source}}

Summary 1:
{{output}}

Summary 2:
{{output_b}}

Which summary is more coherent? Answer 'Summary 1' or 'Summary 2'."""

GOLD = {"A": "first", "B": "second"}


def pick(bench: Benchmark, criterion: str, train_docs: int, test_docs: int) -> tuple[list[Item], list[Item]]:
    """Pairs the experts do not tie, from the first ``train_docs`` documents and the next ``test_docs``."""
    docs: list[str] = []
    for it in bench.items:
        if it.doc_id not in docs:
            docs.append(it.doc_id)
    decided = [it for it in bench.items if it.preference.get(criterion) in GOLD]
    train = [it for it in decided if it.doc_id in docs[:train_docs]]
    test = [it for it in decided if it.doc_id in docs[train_docs : train_docs + test_docs]]
    return train, test


def share(flags: list[bool]) -> float | None:
    """Mean of booleans, None when empty."""
    return float(np.mean(flags)) if flags else None


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--size", default="0.5b", help="judge model size for fetch-judge-model (0.5b or 1.5b)")
    ap.add_argument("--backend", default=None, help="LM backend spec (default: the fetched local judge)")
    ap.add_argument("--criterion", default="coherence")
    ap.add_argument("--train-docs", type=int, default=1)
    ap.add_argument("--test-docs", type=int, default=2)
    ap.add_argument("--k", type=int, default=3)
    ap.add_argument("--human-share", type=float, default=0.2)
    ap.add_argument("--max-tokens", type=int, default=200)
    ap.add_argument("--out", type=Path, default=RESULTS_DIR / "multiple_evidence_h2h.json")
    args = ap.parse_args()
    spec = args.backend or default_backend(args.size)
    lm = wrap(get(spec, n_ctx=4096) if spec.startswith("local") else get(spec), cache=True)
    prompt = JudgePrompt.from_template(PROMPT, answer="pairwise", criterion=args.criterion)
    base = PromptJudge(prompt, lm, JudgeConfig(max_tokens=16))
    train, test = pick(load("summeval-h2h"), args.criterion, args.train_docs, args.test_docs)
    gold = [GOLD[it.preference[args.criterion]] for it in test]
    started = time.time()
    out: dict[str, Any] = {
        "command": " ".join(["python", *sys.argv]),
        "backend": spec,
        "criterion": args.criterion,
        "format_line": prompt.format.line,
        "train_pairs": len(train),
        "test_pairs": len(test),
    }

    single = asyncio.run(run(base, test, concurrency=1, desc="original order"))
    swap = asyncio.run(run(PositionSwap(on_flip="tie").wrap(base), test, concurrency=1, desc="both orders"))
    evidence = MultipleEvidence(k=args.k, human_share=args.human_share, max_tokens=args.max_tokens)
    fitted = evidence.fit(Benchmark(name="train", items=tuple(train)), base, concurrency=1)
    mec = asyncio.run(run(fitted.wrap(base), test, concurrency=1, desc=f"multiple evidence k={args.k}"))

    def arm(res: Any) -> dict[str, Any]:
        verdicts = [j.verdict for j in res.judgments]
        return {
            "accuracy": share([v == g for v, g in zip(verdicts, gold, strict=True)]),
            "no_verdict": sum(v is None for v in verdicts),
            "verdicts": {v: verdicts.count(v) for v in ("first", "second", "tie", None)},
        }

    out["original_order"] = arm(single)
    out["position_swap"] = {
        **arm(swap),
        "position_consistent": share([bool(j.meta.get("position_consistent")) for j in swap.judgments]),
    }
    ev = [j.meta.get("evidence", {}) for j in mec.judgments]
    entropies = [round(float(e.get("entropy", np.nan)), 6) for e in ev]
    kept = [("needs_human" not in j.flags) for j in mec.judgments]
    correct = [j.verdict == g for j, g in zip(mec.judgments, gold, strict=True)]
    out["multiple_evidence"] = {
        **arm(mec),
        "k": args.k,
        "entropy_threshold": fitted.entropy_threshold_,
        "distinct_entropies": len(set(entropies)),
        "entropies": entropies,
        "sent_to_human": int(len(kept) - sum(kept)),
        "accuracy_kept": share([c for c, k in zip(correct, kept, strict=True) if k]),
        "all_samples_agree": share([e == 0.0 for e in entropies]),
    }
    out["seconds"] = round(time.time() - started, 1)
    for name in ("original_order", "position_swap", "multiple_evidence"):
        print(name, {k: v for k, v in out[name].items() if k != "entropies"})
    args.out.parent.mkdir(parents=True, exist_ok=True)
    import json

    args.out.write_text(json.dumps(clean(out), indent=1))
    print(f"wrote {args.out} in {out['seconds']} s")


if __name__ == "__main__":
    main()
