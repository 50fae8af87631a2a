"""Judgments per second on the embedded model with and without KV prefix reuse.

A realistic judge prompt repeats a long, fixed part (instructions, scoring guideline and a
few scored demonstrations, about 1,500 tokens) before a short item that changes on every
call. With prefix reuse llama.cpp keeps the KV cache of that fixed part and evaluates only
the item; without it every call evaluates the whole prompt again.

The two arms run in the same process on the same loaded model and alternate call by call
(reuse, no-reuse, reuse, ...), so drift in machine load hits both equally. The first call of
each arm is a warm-up and is not timed.

    python benchmarks/bench_prefix_reuse.py                       # embedded SmolLM2-135M
    python benchmarks/bench_prefix_reuse.py --model <path.gguf>   # any other GGUF judge
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import statistics
import sys
import time
from pathlib import Path

from mitigate.lm import LMRequest, Message
from mitigate.lm._llamacpp import LlamaCppLM

RESULTS = Path(__file__).resolve().parent / "results" / "prefix_reuse.json"

INSTRUCTIONS = """You are an expert annotator who rates news summaries for a research study.
You will see a news article and a summary that a system wrote for it. Judge only the
COHERENCE of the summary: whether its sentences form a well-structured, well-organised
whole that builds from sentence to sentence into a clear account of the article. Ignore
spelling and grammar unless they make the text impossible to follow, and do not reward a
summary only for being long. Read the article first, then the summary, then compare them
against the guideline below and answer with a single digit from 1 to 5 and nothing else."""

GUIDELINE = """Scoring guideline:
1 - Incoherent: the sentences do not connect; the summary jumps between unrelated facts,
    repeats itself or contradicts itself, and a reader cannot tell what happened.
2 - Poor: a few sentences connect, but the order is confusing, pronouns point to nobody
    and important links between events are missing.
3 - Fair: the main point can be followed, but there are abrupt transitions, a misplaced
    detail or one sentence that does not fit with the rest.
4 - Good: the summary reads as one account with a sensible order; at most a small
    transition problem or a slightly awkward sentence.
5 - Excellent: every sentence follows from the previous one, the most important fact comes
    first and the summary reads like a short, well-edited news brief."""

ARTICLES = [
    """The town council of Millbrook voted on Tuesday evening to turn the disused railway yard
on the east side of town into a public park. The plan, which has been discussed for almost
six years, includes a playground, a community garden, a small amphitheatre for summer
concerts and a cycle path that will connect the park to the river trail. Council member
Ruth Okafor, who first proposed the idea, said the vote was a victory for residents who had
campaigned through two failed funding rounds. The project will cost an estimated 4.2 million
pounds, about half of which will come from a national regeneration grant awarded last spring.
The rest will be raised through a local bond and private donations. Some business owners
near the site had opposed the plan, arguing that the land should be sold to developers to
build housing, which the town badly needs. The council said a separate housing scheme on
the former bus depot would go ahead next year. Construction of the park is expected to start
in the autumn and to take about eighteen months.""",
    """Researchers at a university marine station have recorded the largest gathering of
basking sharks seen off the western coast in more than a decade. Using a drone, the team
counted 143 of the plankton-eating sharks in a single afternoon in a bay that usually hosts
fewer than twenty. The lead scientist, Dr Tomas Lindqvist, said the unusually warm water and
a bloom of zooplankton had probably drawn the animals closer to shore than normal. Basking
sharks are the second-largest fish in the world and can grow to more than ten metres long,
but they are harmless to people. The species is listed as endangered, and the researchers
hope that the new footage will help them estimate how many sharks pass through the area
each year. Local boat operators have been asked to keep their distance and to slow down in
the bay, and the coast guard has issued a notice to recreational sailors. The team plans to
fit several of the sharks with satellite tags later this month to follow their migration.""",
    """A regional airline has cancelled more than two hundred flights over the coming week
after a software fault grounded part of its fleet on Friday morning. The company said that
an update to its maintenance tracking system had wrongly marked dozens of aircraft as
overdue for inspection, and that safety rules required the planes to stay on the ground
until engineers had checked each record by hand. Passengers at three airports queued for
hours as staff tried to rebook them onto other flights, and some travellers said they had
received no information at all. The airline's chief executive apologised in a video message
and promised full refunds as well as compensation under the passenger rights regulation.
Aviation analysts said the incident showed how much airlines now depend on a handful of
software suppliers. The company expects to run a normal schedule again by Thursday, and an
independent review of the failed update has been ordered by the transport ministry.""",
]

DEMOS = [
    (
        0,
        "The council voted to turn the old railway yard into a park with a playground, a garden "
        "and a cycle path. About half of the 4.2 million pound cost comes from a national grant. "
        "Construction starts in the autumn.",
        5,
    ),
    (
        1,
        "Sharks were seen. The drone. Dr Lindqvist said warm water. Boat operators must slow "
        "down and basking sharks are the second-largest fish, it will be tagged.",
        1,
    ),
    (
        2,
        "A software update wrongly grounded part of an airline's fleet, so more than two hundred "
        "flights were cancelled. Passengers queued for hours. The airline apologised and a review "
        "was ordered, and the chief executive was in a video.",
        3,
    ),
    (
        0,
        "Business owners wanted housing. The park will have an amphitheatre and Ruth Okafor "
        "proposed it six years ago, the bus depot. It costs 4.2 million.",
        2,
    ),
]

ITEM_SUMMARIES = [
    "Researchers counted 143 basking sharks in one bay, far more than usual, probably because of warm water.",
    "The airline cancelled flights. Software. Refunds will be paid and Thursday normal.",
    "Millbrook will build a park on the old railway yard after a council vote on Tuesday.",
    "143 sharks, drone, endangered. Boats slow down; tags later this month for migration.",
    "A maintenance software fault grounded planes and forced over two hundred cancellations this week.",
    "The council approved a park; half the money comes from a grant and the rest from a bond.",
    "Basking sharks gathered off the coast in record numbers, and scientists will tag some of them.",
    "Flights cancelled and passengers angry, the chief executive apologised; a review was ordered.",
    "Park vote. Housing at the bus depot next year, and the cycle path goes to the river trail.",
    "A drone survey found a record gathering of harmless but endangered basking sharks near the shore.",
]


def system_prompt() -> str:
    """The fixed part of every call: instructions, guideline, then the scored demonstrations."""
    parts = [INSTRUCTIONS, GUIDELINE, "Here are rated examples."]
    for k, (article, summary, score) in enumerate(DEMOS, start=1):
        parts.append(f"Example {k}\nArticle:\n{ARTICLES[article]}\nSummary:\n{summary}\nCoherence: {score}")
    return "\n\n".join(parts)


def request(i: int, max_tokens: int) -> LMRequest:
    """Judgment call i: the fixed system prompt, then a short item that differs on every call."""
    article = i % len(ARTICLES)
    summary = ITEM_SUMMARIES[i % len(ITEM_SUMMARIES)]
    user = f"Article {article + 1} above.\nSummary #{i}:\n{summary}\nCoherence:"
    return LMRequest(
        messages=(Message(role="system", content=system_prompt()), Message(role="user", content=user)),
        max_tokens=max_tokens,
        temperature=0.0,
    )


async def run(model: str | None, n: int, max_tokens: int, n_threads: int | None) -> dict:
    load_before = os.getloadavg()
    reuse = LlamaCppLM(model, n_ctx=4096, n_threads=n_threads, prefix_reuse=True)
    fresh = LlamaCppLM(model, n_ctx=4096, n_threads=n_threads, prefix_reuse=False)
    await reuse.load()
    await fresh.load()
    arms = {"reuse": reuse, "no_reuse": fresh}
    times: dict[str, list[float]] = {name: [] for name in arms}
    cached: dict[str, list[int]] = {name: [] for name in arms}
    prompt_tokens: list[int] = []
    texts: dict[str, list[str]] = {name: [] for name in arms}
    # warm-up (not timed), then alternate the arms call by call; both arms judge the same items
    for lm in arms.values():
        await lm.complete(request(10_000, max_tokens))
    for i in range(n):
        order = ("reuse", "no_reuse") if i % 2 == 0 else ("no_reuse", "reuse")
        for name in order:
            t0 = time.perf_counter()
            response = await arms[name].complete(request(i, max_tokens))
            times[name].append(time.perf_counter() - t0)
            cached[name].append(response.usage.cached_prompt_tokens)
            texts[name].append(response.text)
            if name == "reuse":
                prompt_tokens.append(response.usage.prompt_tokens)
    same = sum(a == b for a, b in zip(texts["reuse"], texts["no_reuse"], strict=True))
    per_arm = {
        name: {
            "seconds_total": round(sum(ts), 4),
            "seconds_median": round(statistics.median(ts), 4),
            "judgments_per_second": round(n / sum(ts), 3),
            "cached_prompt_tokens_mean": round(statistics.mean(cached[name]), 1),
        }
        for name, ts in times.items()
    }
    shared = min(cached["reuse"])
    return {
        "benchmark": "prefix_reuse",
        "model": reuse.path.name,
        "spec": reuse.spec,
        "n_items_per_arm": n,
        "max_tokens": max_tokens,
        "prompt_tokens_mean": round(statistics.mean(prompt_tokens), 1),
        "shared_prefix_tokens": shared,
        "arms": per_arm,
        "speedup_reuse_over_no_reuse": round(
            per_arm["reuse"]["judgments_per_second"] / per_arm["no_reuse"]["judgments_per_second"], 2
        ),
        "identical_outputs": f"{same}/{n}",
        "environment": {
            "cpu_count": os.cpu_count(),
            "n_threads": n_threads,
            "load_average_1m_before_after": [round(load_before[0], 2), round(os.getloadavg()[0], 2)],
            "omp_wait_policy": os.environ.get("OMP_WAIT_POLICY"),
            "python": sys.version.split()[0],
            "platform": platform.platform(),
            "llama_cpp_python": _llama_version(),
        },
        "command": "python " + " ".join(sys.argv),
    }


def _llama_version() -> str:
    import llama_cpp

    return getattr(llama_cpp, "__version__", "?")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default=None, help="GGUF path (default: embedded SmolLM2-135M-Instruct)")
    parser.add_argument("--n", type=int, default=20, help="judgments per arm")
    parser.add_argument("--max-tokens", type=int, default=8)
    parser.add_argument("--threads", type=int, default=None)
    parser.add_argument("--out", type=Path, default=RESULTS)
    args = parser.parse_args()
    result = asyncio.run(run(args.model, args.n, args.max_tokens, args.threads))
    print(
        f"model {result['model']}: prompt {result['prompt_tokens_mean']} tokens, "
        f"shared prefix {result['shared_prefix_tokens']} tokens, n={args.n} per arm, "
        f"max_tokens={args.max_tokens}"
    )
    print(f"{'arm':<10} {'total s':>9} {'median s':>9} {'judg/s':>8} {'cached':>8}")
    for name, arm in result["arms"].items():
        print(
            f"{name:<10} {arm['seconds_total']:>9.2f} {arm['seconds_median']:>9.3f} "
            f"{arm['judgments_per_second']:>8.2f} {arm['cached_prompt_tokens_mean']:>8.0f}"
        )
    print(
        f"speed-up with reuse: {result['speedup_reuse_over_no_reuse']}x; identical outputs "
        f"{result['identical_outputs']}"
    )
    save_run(args.out, result)
    print(f"wrote {args.out}")


def save_run(out: Path, result: dict) -> None:
    """Store ``result`` under its model in ``out``'s ``runs``, keeping the runs of other models."""
    previous: object = {}
    if out.exists():
        try:
            previous = json.loads(out.read_text())
        except json.JSONDecodeError:
            previous = {}
    runs = previous.get("runs", {}) if isinstance(previous, dict) else {}
    runs[result["model"]] = result
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps({"runs": runs}, indent=2) + "\n")


if __name__ == "__main__":
    main()
