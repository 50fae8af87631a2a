"""Under the default answer constraint, does a small local judge write the reasoning a template asks for, and
parse?

Three templates of different families, each asking for reasoning before its answer:

- ``prometheus-absolute``: Prometheus' absolute grading prompt without reference (read from the
  installed ``prometheus-eval`` package; "[RESULT] N" after a feedback), filled with a
  coherence rubric of our own wording;
- ``mtbench-single-critique``: our own text in MT-Bench's single-answer format ("First write a
  short critique ... Then rate ... Rating: [[N]]", 1 to 10, ``[User request]`` / ``[Begin
  assistant reply]`` headings);
- ``mtbench-pairwise``: the MT-Bench style pairwise prompt AlpacaEval ships for its
  Self-taught evaluator (read from the installed ``alpaca-eval`` package; a short explanation,
  then "[[A]]" or "[[B]]").

Items: SummEval (coherence), taken document by document; the article is the user request,
the summary the reply. Pairwise items pair two summaries of one article whose expert
coherence differs, the better one shown first in half of them. The judge is built with
:func:`mitigate.judge.answer_mode` and ``JudgeConfig()``'s defaults (``max_tokens=256``): on a
llama.cpp model that is the template's own format enforced by a grammar, with a bounded
reasoning part before the answer line (:meth:`mitigate.prompt.answer.AnswerFormat.constraint`).

Per template it reports: the answer format and the reasoning it was read with, the share of
answers that parse (Wilson 95% interval), the share that wrote reasoning before the answer
line (at least 5 words), the share that looped (an answer marker written more than once, or
a 3-word run repeated 4 or more times), the share whose reasoning opens with 8 words copied from
the judged texts ("echoed": the small judge rewriting the summary instead of commenting on it),
the median reasoning length, and (for information) agreement with the experts. A parse failure is recorded,
never a score.

Run (under the shared lock)::

    flock /work/bench.lock python benchmarks/reasoning_constraint_parse.py --n 16

(default backend: the Qwen2.5 0.5B judge of ``/work/shared/tools/fetch-judge-model 0.5b``).
Writes ``benchmarks/results/reasoning_constraint_parse.json``; journals in ``runs/evidence/``.
"""

from __future__ import annotations

import argparse
import asyncio
import re
import statistics
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from embedded_answers_summeval import wilson
from evidence_common import (
    COHERENCE_RUBRIC,
    RESULTS_DIR,
    RUNS_DIR,
    Timer,
    clean,
    default_backend,
    dist_constant,
    dist_text,
    write_summary,
)

from mitigate.data import Item, load, select_items
from mitigate.judge import JudgeConfig, PromptJudge, answer_mode
from mitigate.lm import get, wrap
from mitigate.prompt import JudgePrompt
from mitigate.run import run

RUBRIC = COHERENCE_RUBRIC

MTBENCH_SINGLE = """You are a careful judge of how well an assistant's reply serves the user's request below.
First write a short critique of the reply (two or three sentences on its coherence: does it read as one
organised account?). Then rate the reply on a scale of 1 to 10, where 1 is useless and 10 is flawless,
on a final line in the form "Rating: [[N]]", for example "Rating: [[6]]".

[User request]
Summarise this article.
{{request}}

[Begin assistant reply]
{{reply}}
[End assistant reply]"""


def templates() -> dict[str, JudgePrompt]:
    """The three templates, read as a user would (hints only for slots the data names differently)."""
    prometheus = dist_constant("prometheus-eval", "prometheus_eval/prompts.py", "ABSOLUTE_PROMPT_WO_REF")
    pairwise = dist_text(
        "alpaca-eval", "alpaca_eval/evaluators_configs/Self-taught-llama3.1-70B-dpo/self_taught.txt"
    )
    return {
        "prometheus-absolute": JudgePrompt.from_template(
            prometheus, constants={"rubric": RUBRIC}, slot_fields={"instruction": "document"}
        ),
        "mtbench-single-critique": JudgePrompt.from_template(
            MTBENCH_SINGLE, slot_fields={"request": "document"}
        ),
        "mtbench-pairwise": JudgePrompt.from_template(pairwise, slot_fields={"instruction": "document"}),
    }


def pairs(items: list[Item], n: int) -> list[Item]:
    """Up to ``n`` pairwise items: two summaries of one article whose expert coherence differs."""
    by_doc: dict[str, list[Item]] = {}
    for it in items:
        by_doc.setdefault(str(it.inputs.get("source", ""))[:200], []).append(it)
    out: list[Item] = []
    for group in by_doc.values():
        group = sorted(group, key=lambda it: it.id)
        for a, b in zip(group[::2], group[1::2], strict=False):
            ha, hb = a.human["coherence"], b.human["coherence"]
            if abs(ha - hb) < 1:
                continue
            first, second = (a, b) if (len(out) % 2 == 0) == (ha > hb) else (b, a)
            gold = "first" if first.human["coherence"] > second.human["coherence"] else "second"
            out.append(
                Item(
                    id=f"{first.id}|{second.id}",
                    output=first.output,
                    output_b=second.output,
                    inputs=dict(first.inputs),
                    meta={"gold": gold},
                )
            )
            break
        if len(out) >= n:
            break
    return out


_MARKERS = {
    "prometheus-absolute": r"\[RESULT\]",
    "mtbench-single-critique": r"\[\[\s*\d+\s*\]\]",
    "mtbench-pairwise": r"\[\[\s*[AB]\s*\]\]",
}


def looped(name: str, text: str) -> bool:
    """An answer marker written more than once, or a 3-word run repeated 4 or more times."""
    if len(re.findall(_MARKERS[name], text)) > 1:
        return True
    words = text.split()
    runs = Counter(tuple(words[i : i + 3]) for i in range(len(words) - 2))
    return bool(runs) and max(runs.values()) >= 4


def echoed(name: str, text: str, item: Item) -> bool:
    """The reasoning opens with 8 words copied from the judged texts (the small judge rewriting the summary or
    article instead of commenting on it)."""
    m = re.search(_MARKERS[name], text)
    words = re.findall(r"\w+", text[: m.start() if m else len(text)].lower())[:8]
    if len(words) < 8:
        return False
    source = " ".join(
        re.findall(
            r"\w+", " ".join([item.output, item.output_b or "", *map(str, item.inputs.values())]).lower()
        )
    )
    return " ".join(words) in source


def reasoning_words(name: str, text: str) -> int:
    """Words written before the answer marker (all of them when there is none)."""
    m = re.search(_MARKERS[name], text)
    return len(text[: m.start() if m else len(text)].split())


async def one(
    name: str, prompt: JudgePrompt, items: list[Item], spec: str, args: argparse.Namespace
) -> dict[str, Any]:
    lm = wrap(get(spec, n_ctx=args.n_ctx), cache=True)
    judge = PromptJudge(prompt, lm, JudgeConfig(**answer_mode(lm)))  # every other setting at its default
    constraint = judge.constraint()
    t0 = time.perf_counter()
    result = await run(
        judge, items, concurrency=1, journal=args.run_dir / f"{name}.jsonl", progress=False, desc=name
    )
    seconds = time.perf_counter() - t0
    await lm.aclose()
    judged = {j.item_id: j for j in result.judgments}
    n = len(items)
    parsed = agree = reasoned = loops = copies = 0
    lengths: list[int] = []
    for it in items:
        j = judged.get(it.id)
        if j is None:
            continue
        raw = j.raw[0] if j.raw else ""
        words = reasoning_words(name, raw)
        lengths.append(words)
        reasoned += words >= 5
        copies += echoed(name, raw, it)
        loops += looped(name, raw)
        if prompt.answer == "pairwise":
            if j.verdict is not None:
                parsed += 1
                agree += j.verdict == it.meta["gold"]
        elif j.score() is not None:
            parsed += 1
    lo, hi = wilson(parsed, n)
    row = {
        "format": prompt.format.describe(),
        "reasoning_read": prompt.format.reasoning,
        "constraint": constraint.describe if constraint else None,
        "n": n,
        "parsed": parsed,
        "parsed_share": parsed / n,
        "parsed_ci": [lo, hi],
        "reasoned": reasoned,
        "looped": loops,
        "echoed": copies,
        "median_reasoning_words": statistics.median(lengths) if lengths else None,
        "seconds": round(seconds, 1),
    }
    if prompt.answer == "pairwise":
        row["agree_with_experts"] = agree
    print(
        f"{name:24s} parsed {parsed}/{n} [{lo:.2f}, {hi:.2f}]  reasoning {reasoned}/{n}  looped "
        f"{loops}/{n}  echoed {copies}/{n}  median words {row['median_reasoning_words']}  {seconds:.0f}s",
        flush=True,
    )
    return row


async def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--n", type=int, default=16, help="items per template")
    ap.add_argument("--backend", default=None, help="LM spec (default: the Qwen2.5 0.5B judge model)")
    ap.add_argument("--n-ctx", type=int, default=8192)
    ap.add_argument("--templates", default=None, help="comma-separated names (default: all three)")
    ap.add_argument("--out", type=Path, default=RESULTS_DIR / "reasoning_constraint_parse.json")
    ap.add_argument("--run-dir", type=Path, default=RUNS_DIR / "reasoning_constraint_parse")
    args = ap.parse_args()
    spec = args.backend or default_backend("0.5b")
    args.backend, args.seed = spec, 0
    timer = Timer()
    bench = load("summeval")
    scored = [it for it in bench.items if "coherence" in it.human]
    singles = select_items(scored, args.n)
    pairwise = pairs(scored, args.n)
    results: dict[str, Any] = {}
    for name, prompt in templates().items():
        if args.templates and name not in args.templates.split(","):
            continue
        t0 = time.perf_counter()
        results[name] = await one(
            name, prompt, pairwise if prompt.answer == "pairwise" else singles, spec, args
        )
        timer.mark(name, t0)
    path = write_summary(
        args,
        "reasoning_constraint_parse.py",
        {
            "benchmark": "summeval",
            "criterion": "coherence",
            "config": "JudgeConfig(**answer_mode(lm)) defaults",
            "results": clean(results),
        },
        timer,
    )
    print(f"wrote {path}")


if __name__ == "__main__":
    asyncio.run(main())
