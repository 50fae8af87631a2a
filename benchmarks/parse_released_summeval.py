"""Parse rate and precision of the judge's own answer path on real released judge answers (SummEval, Shen et
al. 2023).

Every answer that ChatGPT, GPT-4 and Llama-2 gave in Shen et al.'s LLM_summeval release
(``/work/shared/data/summeval_llm_summeval``: 4,800 per judge and method, plus 8,800
head-to-head verdicts) is fed to a :class:`~mitigate.judge.PromptJudge` through a scripted
:class:`~mitigate.lm._fake.FakeLM` that returns the released text, so the answer goes through
exactly the path a live judgment takes: the prompt's own :class:`~mitigate.prompt.answer.AnswerFormat`
(inferred by ``JudgePrompt.from_template`` from a template written in the method's format),
echo stripping, then the strict parsers.

The templates are ours, written in the format of each released method (Shen et al.'s prompt
file was not released with the data): reason-then-score (RTS, and the alternative RTS),
multiple choice with five lettered options each ending in "Score: <word>" (MCQ, alternative
MCQ), a star rating ("N stars"), and the head-to-head comparison answering A, B or C (tie).
RTS-style answers are read on 1-5 with half points, as the release's own loader does
(:data:`mitigate.data._released.RTS_SCALE`).

Reported per set: answers, scored, parse rate, agreement with the release loader's parse
(:mod:`mitigate.data._released`, an independent path pinned by its own tests) on answers both
parsed, the disagreements, the failures, and a seeded random sample of 20 parsed answers
with their values, for reading (precision is checked by reading that sample; see RESULTS.md).

Run: ``python benchmarks/parse_released_summeval.py`` (no model; about a minute).
Writes ``benchmarks/results/parse_released_summeval.json``.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from mitigate.data import H2H_MODEL, Item, load
from mitigate.data._released import MCQ_SCALE, RTS_SCALE, _parse, h2h_files, judge_files, released_judges
from mitigate.errors import MitigateError
from mitigate.judge import JudgeConfig, PromptJudge
from mitigate.lm import FakeLM, LMRequest
from mitigate.paths import data_dir
from mitigate.prompt import JudgePrompt
from mitigate.registry import registered

RESULTS = Path(__file__).resolve().parent / "results" / "parse_released_summeval.json"

RTS = """Read the news article and its summary, then rate the summary's {crit}.

Evaluation Criteria:
{Crit} (1-5) - how good the summary is on {crit}.

Article: {{{{document}}}}
Summary: {{{{summary}}}}

Give a brief reason first, then the score."""

STARS = """Read the news article and its summary. How many stars (1 to 5 stars) does the summary deserve for \
{crit}? Answer with the number of stars, then a short comment.

Article: {{{{document}}}}
Summary: {{{{summary}}}}"""

MCQ = """Read the news article and its summary, then choose the option that best describes the summary's {crit}.

A: The summary is very poor on {crit}. Score: One.
B: The summary is poor on {crit}. Score: Two.
C: The summary is fair on {crit}. Score: Three.
D: The summary is good on {crit}. Score: Four.
E: The summary is excellent on {crit}. Score: Five.

Article: {{{{document}}}}
Summary: {{{{summary}}}}

Answer with the letter of one option."""  # noqa: E501 - the template's own lines, kept as written

H2H = """Read the news article and two summaries of it, then compare their {crit}.

Article: {{{{document}}}}

Summary #1: {{{{summary_1}}}}

Summary #2: {{{{summary_2}}}}

Answer A if Summary #1 is better, B if Summary #2 is better, or C if they are equally good."""


def template_for(method: str, crit: str) -> tuple[str, dict[str, Any]]:
    """Our template in the released method's format, and the hints the release's own reading implies."""
    fill = {"crit": crit, "Crit": crit.capitalize()}
    if method in ("mcq", "altmcq"):
        return MCQ.format(**fill), {}
    if method == "stareval":
        return STARS.format(**fill), {"scale": RTS_SCALE}
    return RTS.format(**fill), {"scale": RTS_SCALE}


def read_lines(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


async def judge_all(
    prompt: JudgePrompt, answers: list[str], items: list[Item], *, pairwise: bool = False
) -> list[Any]:
    """Each released answer through PromptJudge (the judge's own path) on the item it judged; value or
    None."""
    queue = list(answers)

    def script(request: LMRequest) -> str:
        return queue.pop(0)

    judge = PromptJudge(prompt, FakeLM(script), JudgeConfig(constrain="off"))
    out = []
    for item in items:
        j = await judge.judge(item)
        out.append(j.verdict if pairwise else next(iter(j.scores.values())))
    return out


def summeval_texts() -> dict[str, Item]:
    """The SummEval items (article and summary per system and document) by id, to judge each answer on its own
    texts; empty when the benchmark is not in the data folder (answers are then judged on placeholder
    texts)."""
    try:
        return {it.id: it for it in load("summeval").items}
    except MitigateError:
        return {}


def pointwise_item(texts: dict[str, Item], system: str, doc_id: str) -> Item:
    """The item a pointwise answer judged: its summary (output) and article (the template's document slot)."""
    it = texts.get(f"{system}/{doc_id}")
    if it is None:
        return Item(id="x", output="S", inputs={"document": "D"})
    return Item(id=it.id, output=it.output, inputs={"document": it.inputs.get("source", "")})


async def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", type=Path, default=RESULTS)
    ap.add_argument("--sample", type=int, default=20, help="parsed answers kept per set for reading")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument(
        "--readings", type=Path, help="write every answer's reading here (JSON lines: set, index, value)"
    )
    args = ap.parse_args()
    readings: list[dict[str, Any]] = []
    texts = summeval_texts()
    t0 = time.perf_counter()
    root = data_dir()
    rng = random.Random(args.seed)
    sets: dict[str, Any] = {}
    for judge_name in released_judges():
        method = registered("released-judge")[judge_name].method
        answers: list[str] = []
        ours: list[Any] = []
        theirs: list[Any] = []
        for rel in judge_files(judge_name):
            path = root / rel
            crit = path.name.split("_")[0]
            rows = read_lines(path)
            text, hints = template_for(method, crit)
            prompt = JudgePrompt.from_template(text, **hints)
            resps = [str(r["resp"]) for r in rows]
            system = path.parent.name.removeprefix("eval_").removesuffix("_generations")
            answers += resps
            ours += await judge_all(
                prompt, resps, [pointwise_item(texts, system, str(r["id"])) for r in rows]
            )
            theirs += [_parse(r, method)[0] for r in resps]
        sets[judge_name] = summarise(
            answers, ours, theirs, rng, args.sample, prompt_format=prompt.format.describe()
        )
        readings += [
            {"set": judge_name, "index": i, "value": v, "raw": a}
            for i, (a, v) in enumerate(zip(answers, ours, strict=True))
        ]
        print(
            f"{judge_name:16s} {sets[judge_name]['scored']}/{sets[judge_name]['n']} parsed "
            f"({sets[judge_name]['parse_rate']:.4f}); agree with the release loader on "
            f"{sets[judge_name]['agreement']}",
            flush=True,
        )
    # head-to-head (pairwise, A / B / C)
    from mitigate.data._released import load_head_to_head

    records = load_head_to_head()
    answers = []
    ours = []
    by_dim: dict[str, list[Any]] = {}
    for rec in records:
        by_dim.setdefault(rec.criterion, []).append(rec)
    for crit, recs in by_dim.items():
        prompt = JudgePrompt.from_template(H2H.format(crit=crit, Crit=crit), labels=("A", "B"), tie="C")
        answers += [r.raw for r in recs]
        ours += await judge_all(
            prompt, [r.raw for r in recs], [pair_item(texts, r) for r in recs], pairwise=True
        )
    theirs = [r.verdict for by in by_dim.values() for r in by]
    sets["chatgpt-h2h"] = summarise(
        answers, ours, theirs, rng, args.sample, prompt_format=prompt.format.describe()
    )
    readings += [
        {"set": "chatgpt-h2h", "index": i, "value": v, "raw": a}
        for i, (a, v) in enumerate(zip(answers, ours, strict=True))
    ]
    if args.readings is not None:
        args.readings.write_text("".join(json.dumps(r) + "\n" for r in readings), encoding="utf-8")
    print(
        f"chatgpt-h2h      {sets['chatgpt-h2h']['scored']}/{sets['chatgpt-h2h']['n']} parsed; agree on "
        f"{sets['chatgpt-h2h']['agreement']}",
        flush=True,
    )
    payload = {
        "script": "parse_released_summeval.py",
        "command": "python benchmarks/parse_released_summeval.py",
        "data": "summeval_llm_summeval (Shen et al. 2023 release)",
        "h2h_files": len(h2h_files()),
        "h2h_model": H2H_MODEL,
        "mcq_scale": MCQ_SCALE.model_dump(),
        "sets": sets,
        "seconds": round(time.perf_counter() - t0, 1),
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(payload, indent=1) + "\n", encoding="utf-8")
    print(f"wrote {args.out}")


def pair_item(texts: dict[str, Item], rec: Any) -> Item:
    """The item a head-to-head answer judged: the two summaries in the order shown, and the article."""
    one, two = texts.get(f"{rec.system_1}/{rec.doc_id}"), texts.get(f"{rec.system_2}/{rec.doc_id}")
    if one is None or two is None:
        return Item(id="x", output="S", output_b="S2", inputs={"document": "D"})
    first, second = (one, two) if rec.order == "original" else (two, one)
    return Item(
        id=f"{rec.system_1}-{rec.system_2}/{rec.doc_id}",
        output=first.output,
        output_b=second.output,
        inputs={"document": one.inputs.get("source", "")},
    )


def summarise(
    answers: list[str], ours: list[Any], theirs: list[Any], rng: random.Random, k: int, prompt_format: str
) -> dict[str, Any]:
    n = len(answers)
    scored = sum(v is not None for v in ours)
    both = [
        (a, o, t) for a, o, t in zip(answers, ours, theirs, strict=True) if o is not None and t is not None
    ]
    agree = sum(o == t for _, o, t in both)
    disagreements = [{"raw": a[:1500], "ours": o, "release_loader": t} for a, o, t in both if o != t]
    only_ours = [
        {"raw": a[:300], "ours": o}
        for a, o, t in zip(answers, ours, theirs, strict=True)
        if o is not None and t is None
    ]
    failures = [a[:200] for a, o in zip(answers, ours, strict=True) if o is None]
    parsed = [(a, o) for a, o in zip(answers, ours, strict=True) if o is not None]
    sample = [{"raw": a[:400], "value": o} for a, o in rng.sample(parsed, min(k, len(parsed)))]
    return {
        "n": n,
        "scored": scored,
        "parse_rate": scored / n if n else None,
        "answer_format": prompt_format,
        "agreement": f"{agree}/{len(both)}",
        "disagreements": disagreements[:20],
        "n_disagreements": len(disagreements),
        "parsed_only_here": only_ours[:10],
        "n_parsed_only_here": len(only_ours),
        "failures": failures[:10],
        "n_failures": len(failures),
        "sample_for_reading": sample,
    }


if __name__ == "__main__":
    asyncio.run(main())
