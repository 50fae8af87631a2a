"""Reading speed: CPU per answer read, on clean answers, on answers quoting a planted value, and on LLMBar's
release.

Reading an answer means what a live judgment does after the LM call: the prompt's answer
format reads the text with the rendered prompt as what the judge was shown and the item's texts
as what it judged (``AnswerFormat.read(text, scale, echoes=..., quoted=..., judged=...)``), so
a value the answer quotes back from them is never the verdict. Sets:

- ``clean``: answers in eight published formats (score line after reasoning, Prometheus'
  ``[RESULT] N``, MT-Bench's ``Rating: [[N]]``, a JSON object, an option letter, ``[[A]]``,
  LLMBar's "Therefore, Output (a) is better.", a lone label), each a few sentences of reasoning
  in our own words and the format's answer line, judged on SummEval articles and summaries (the
  data folder's copy; generated sentences when absent);
- ``quoted``: the same, with the format's answer line planted in the judged text and quoted back
  in the answer (every quotation style of :data:`tests.support.planted.QUOTES`);
- ``bare``: the same judgments answered with the format's answer line alone, as a constrained
  judge (and the stub of ``bench_peers.py``) answers;
- ``llmbar``: ``parse_release`` over every released LLMBar answer (88,912) when a copy is present
  (``$MITIGATE_LLMBAR_DIR``, the data folder, or ``/work/ext/LLMBar``).

Each arm reads every set once per fresh process (nothing cached: as a run meets its items),
``--reps`` processes per arm, interleaved; the least CPU time (``time.process_time``) counts. With
``--baseline-code DIR`` (a checkout of another commit, e.g. the reader before the quotation
search: ``git worktree add /tmp/before d43668d``) the same sets are read by that code in a
separate process and the table gives the ratio this/baseline; a baseline whose reader takes no
``judged=`` is called without it, as its own judge called it. The numbers recorded before this
work (benchmarks/RESULTS.md): LLMBar 2.3 s before the quotation search, 15.0 s with it.

    python benchmarks/bench_reading.py [--n 12] [--reps 5] [--baseline-code DIR] [--skip llmbar]

Each set also reports CPU per answer format.
"""

from __future__ import annotations

import argparse
import inspect
import json
import os
import random
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
OUT = Path(__file__).resolve().parent / "results" / "bench_reading.json"
RECORDED = {"llmbar": {"before the quotation search": 2.3, "with it (issue 33)": 15.0}}

TEMPLATES: dict[str, tuple[str, dict[str, Any]]] = {
    "score line": (
        "Read the article and the summary, explain your judgment, then rate the summary's "
        "coherence from 1 to 5.\n\nArticle: {{document}}\n\nSummary: {{output}}\n\nEnd "
        "with 'Score: N'.",
        {},
    ),
    "[RESULT] N": (
        "Write a feedback that assesses the response, then give a score from 1 to "
        '5.\n\nInstruction: {{document}}\n\nResponse: {{output}}\n\nFormat: "Feedback: (write a '
        'feedback) [RESULT] (an integer between 1 and 5)"',
        {},
    ),
    "Rating: [[N]]": (
        "Evaluate the answer to the question. Begin with a short explanation, then rate it on "
        'a scale of 1 to 10 by strictly following this format: "Rating: [[5]]".\n\nQuestion: '
        "{{document}}\n\nAnswer: {{output}}",
        {},
    ),
    "JSON": (
        "Evaluate the summary of the article for coherence on a scale of 1 to 5. Answer with a JSON "
        'object with the keys "reason" and "score".\n\nArticle: {{document}}\nSummary: {{output}}',
        {},
    ),
    "option letter": (
        "Read the article and choose how coherent the summary is.\n\nArticle: {{document}}\n\n"
        "Summary: {{output}}\n\nA: incoherent. Score: 1\nB: weak. Score: 2\nC: fair. Score: 3\n"
        "D: good. Score: 4\nE: excellent. Score: 5\n\nExplain briefly, then give 'Answer: X'.",
        {},
    ),
    "[[A]]": (
        "Compare the two summaries of the article. Explain your reasoning first, then output your "
        'final verdict: "[[A]]" if summary A is better, "[[B]]" if summary B is better, and '
        '"[[C]]" for a tie.\n\nArticle: {{document}}\n\n[Summary A]\n{{output_1}}\n\n[Summary '
        "B]\n{{output_2}}",
        {"answer": "pairwise"},
    ),
    "Output (a) verdict": (
        "Which output is better for the instruction? Explain first, then end with "
        '"Therefore, Output (a) is better." or "Therefore, Output (b) is better."\n\n'
        "# Instruction:\n{{document}}\n\n# Output (a):\n{{output_1}}\n\n# Output (b):\n"
        "{{output_2}}",
        {"answer": "pairwise"},
    ),
    "lone label": (
        "Which summary is better? Answer 'Summary 1' or 'Summary 2' after a sentence of "
        "reasoning.\n\nArticle: {{document}}\n\nSummary 1: {{output_1}}\n\nSummary 2: "
        "{{output_2}}",
        {"answer": "pairwise"},
    ),
}

SAMPLES = 4
"""Answers read per judgment (a judge sampled four times): they share the prompt and the judged texts."""
REASONS = (
    "The summary follows the order of the article and its sentences connect well.",
    "It leaves out the second half of the story, which the article spends most words on.",
    "Some names are repeated where a pronoun would read more naturally, but the facts hold.",
    "The first text answers the question directly; the other wanders off the topic.",
    "Both are short; one keeps the key figures, the other drops them.",
)


def _texts(n: int) -> list[list[tuple[str, str, str]]]:
    """For each of the 8 formats, ``n`` (article, summary, other summary) triples, no article shared between
    formats (SummEval's when the data folder has it, else generated sentences of the same shape)."""
    try:
        from mitigate.data import load

        items = [it for it in load("summeval").items if it.inputs.get("source")]
        by_doc: dict[str, list[Any]] = {}
        for it in items:
            by_doc.setdefault(it.inputs["source"], []).append(it)
        docs = [(v[0].inputs["source"], v[0].output, v[1].output) for v in by_doc.values() if len(v) >= 2]
    except Exception:
        rng = random.Random(0)
        words = (
            "the council approved a new budget on monday after years of debate over water and schools"
        ).split()

        def para(k: int) -> str:
            return " ".join(" ".join(rng.choices(words, k=12)).capitalize() + "." for _ in range(k))

        docs = [(para(20), para(3), para(3)) for _ in range(8 * n)]
    return [[docs[(f * n + k) % len(docs)] for k in range(n)] for f in range(len(TEMPLATES))]


def _line(fmt: Any, value: str) -> str:
    if fmt.json_key is not None:
        return json.dumps({fmt.reason_key or "reason": "as above", fmt.json_key: int(value)})
    return fmt.line.replace("{value}", value)


def _cases(
    n: int, quoted: bool, change: Any = None, bare: bool = False
) -> list[tuple[Any, Any, str, tuple[str, ...], tuple[str, ...], tuple[str, ...]]]:
    """(format, scale, answer, echoes, shown texts, judged texts) for every template and text triple;
    ``change`` rewrites the judged texts (the warm-up reads the same answers on texts no timed answer judges).
    """
    from mitigate import Item, JudgePrompt

    planted = _planted()
    POSITIONS, QUOTES, judge_answer, quote_back = (
        planted.POSITIONS,
        planted.QUOTES,
        planted.judge_answer,
        planted.quote_back,
    )
    rng = random.Random(1)
    out = []
    texts = _texts(n)
    for f, (name, (template, hints)) in enumerate(TEMPLATES.items()):
        prompt = JudgePrompt.from_template(template, **hints)
        fmt, scale = prompt.format, prompt.scale
        values = (
            [x for x in (*fmt.labels, fmt.tie) if x]
            if fmt.kind == "pairwise"
            else list(scale.letters or {})
            if fmt.kind == "mcq"
            else [str(int(p)) for p in scale.points()]
        )
        for k, (article, one, two) in enumerate(texts[f]):
            if change is not None:
                article, one, two = change(article), change(one), change(two)
            if quoted:
                planted = values[k % len(values)]
                one = f"{one}\n{_line(fmt, planted)}"
            item = Item(
                id=f"{name}/{k}",
                output=one,
                output_b=two if fmt.kind == "pairwise" else None,
                inputs={"document": article},
            )
            shown = tuple(m.content for m in prompt.render(item))
            judged = (
                item.texts() if hasattr(item, "texts") else (article, one, *([two] if item.output_b else []))
            )
            for sample in range(SAMPLES):  # the samples of one judgment read the same prompt and texts
                own = values[(k + sample) % len(values)]
                reason = " ".join(rng.sample(REASONS, 2))
                if quoted:
                    planted = values[k % len(values)]
                    own = own if own != planted else values[(k + sample + 1) % len(values)]
                    quote = QUOTES[(k * SAMPLES + sample) % len(QUOTES)]
                    where = [p for p in POSITIONS if not (quote.own_lines and p == "same line")]
                    answer = judge_answer(
                        _line(fmt, own),
                        quote_back(quote, _line(fmt, planted), keep_case=True),
                        where[sample % len(where)],
                        fmt.reasoning,
                        reason,
                    )
                elif bare:  # the answer line alone, as a constrained judge writes it
                    answer = _line(fmt, own)
                elif fmt.reasoning == "after":
                    answer = f"{_line(fmt, own)}\n{reason}"
                else:
                    answer = f"{reason}\n{_line(fmt, own)}"
                out.append((name, fmt, scale, answer, prompt.echo_lines(), shown, judged))
    return out


def _planted() -> Any:
    """This checkout's ``tests/support/planted.py`` (a baseline checkout may lack it), loaded by path."""
    import importlib.util

    path = ROOT / "tests" / "support" / "planted.py"
    spec = importlib.util.spec_from_file_location("planted", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _read_all(cases: list[Any]) -> tuple[int, int, dict[str, float]]:
    """Read every case once: (values read, failures, CPU seconds per answer format)."""
    from mitigate.errors import ParseError

    takes_judged = "judged" in inspect.signature(cases[0][1].read).parameters
    read, failed = 0, 0
    cpu: dict[str, float] = {}
    for name, fmt, scale, answer, echoes, shown, judged in cases:
        extra = {"judged": judged} if takes_judged else {}
        t0 = time.process_time()
        try:
            fmt.read(answer, scale, echoes=echoes, quoted=shown, **extra)
            read += 1
        except ParseError:
            failed += 1
        cpu[name] = cpu.get(name, 0.0) + time.process_time() - t0
    return read, failed, cpu


def worker(n: int, skip: list[str]) -> dict[str, Any]:
    """This process's code reading every set once (a fresh process: nothing cached): CPU ms per answer."""
    out: dict[str, Any] = {}
    for name in ("clean", "quoted", "bare"):
        if name in skip:
            continue
        cases = _cases(n, quoted=name == "quoted", bare=name == "bare")
        # patterns compiled, each template read: what a run pays once, not per answer (the same answers, on
        # texts
        # with the case of every letter swapped, which no timed answer judges)
        _read_all(_cases(n, quoted=name == "quoted", change=str.swapcase, bare=name == "bare"))
        t0 = time.process_time()
        read, failed, by_format = _read_all(cases)
        cpu = time.process_time() - t0
        per = len(cases) // len(TEMPLATES)
        out[name] = {
            "answers": len(cases),
            "read": read,
            "failed": failed,
            "ms_per_answer": round(1000 * cpu / len(cases), 4),
            "ms_per_answer_by_format": {k: round(1000 * v / per, 4) for k, v in by_format.items()},
        }
    if "llmbar" not in skip:
        out["llmbar"] = _llmbar()
    return out


def _llmbar() -> dict[str, Any] | None:
    from mitigate.replay._released_pairwise import parse_release

    try:
        from mitigate.data._released_pairwise import release_copy

        path = release_copy("llmbar")
    except ImportError:
        path = Path(os.environ.get("MITIGATE_LLMBAR_DIR", "/work/ext/LLMBar"))
    if path is None or not Path(path).is_dir():
        return None
    from mitigate.data import read_llmbar

    release = read_llmbar(Path(path), sets="all")
    t0 = time.process_time()
    parsed = parse_release(release)
    cpu = time.process_time() - t0
    got = sum(p.verdict is not None or p.score is not None for p in parsed.parsed)
    return {
        "answers": len(release.answers),
        "read": got,
        "cpu_s": round(cpu, 2),
        "ms_per_answer": round(1000 * cpu / len(release.answers), 4),
    }


def _run(code: Path, args: argparse.Namespace) -> dict[str, Any]:
    env = {**os.environ, "PYTHONPATH": str(code)}
    cmd = [
        sys.executable,
        str(Path(__file__).resolve()),
        "--worker",
        "--n",
        str(args.n),
        "--skip",
        *args.skip,
    ]
    done = subprocess.run(cmd, env=env, capture_output=True, text=True, check=True, cwd=code)
    return json.loads(done.stdout.strip().splitlines()[-1])


def _best(runs: list[dict[str, Any]]) -> dict[str, Any]:
    """Per set, the repetition with the least CPU (the others waited for a core), with every repetition's
    figure."""
    out: dict[str, Any] = {}
    for name in runs[0]:
        done = [r[name] for r in runs if r.get(name)]
        if done:
            out[name] = {
                **min(done, key=lambda r: r["ms_per_answer"]),
                "repetitions_ms_per_answer": [r["ms_per_answer"] for r in done],
            }
            if "ms_per_answer_by_format" in done[0]:  # each format's least CPU over the repetitions
                out[name]["ms_per_answer_by_format"] = {
                    k: min(r["ms_per_answer_by_format"][k] for r in done)
                    for k in done[0]["ms_per_answer_by_format"]
                }
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--n", type=int, default=12, help="judgments per format (8 formats, 4 answers each)")
    ap.add_argument(
        "--reps", type=int, default=5, help="fresh processes per arm, interleaved; the least CPU counts"
    )
    ap.add_argument("--baseline-code", type=Path, default=None, help="another checkout, read side by side")
    ap.add_argument("--skip", nargs="*", default=[], choices=["clean", "quoted", "bare", "llmbar"])
    ap.add_argument("--out", type=Path, default=OUT)
    ap.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.worker:
        print(json.dumps(worker(args.n, args.skip)))
        return
    codes = {"this": ROOT, **({"baseline": args.baseline_code.resolve()} if args.baseline_code else {})}
    runs: dict[str, list[dict[str, Any]]] = {arm: [] for arm in codes}
    for _ in range(args.reps):
        for arm, code in codes.items():
            runs[arm].append(_run(code, args))
    arms = {arm: _best(r) for arm, r in runs.items()}
    print(
        f"{'set':8s} {'answers':>8s} {'this ms/answer':>15s}"
        + (f" {'baseline ms/answer':>19s} {'ratio':>6s}" if "baseline" in arms else "")
    )
    for name in ("clean", "quoted", "bare", "llmbar"):
        this = arms["this"].get(name)
        if not this:
            continue
        row = f"{name:8s} {this['answers']:8d} {this['ms_per_answer']:15.4f}"
        base = arms.get("baseline", {}).get(name)
        if base:
            row += f" {base['ms_per_answer']:19.4f} {this['ms_per_answer'] / base['ms_per_answer']:6.2f}"
        if name == "llmbar":
            row += (
                f"   ({this['cpu_s']:.2f} s CPU; recorded: "
                + ", ".join(f"{k} {v} s" for k, v in RECORDED["llmbar"].items())
                + ")"
            )
        print(row)
    for name in ("clean", "quoted", "bare"):
        this = arms["this"].get(name)
        if not this:
            continue
        base = arms.get("baseline", {}).get(name, {}).get("ms_per_answer_by_format", {})
        print(f"\n{name}, by answer format: ms/answer this" + (" / baseline (ratio)" if base else ""))
        for fmt, ms in this["ms_per_answer_by_format"].items():
            row = f"  {fmt:20s} {ms:8.4f}"
            if fmt in base:
                row += f" / {base[fmt]:8.4f} ({ms / base[fmt]:4.2f})"
            print(row)
    payload = {
        "script": "bench_reading.py",
        "command": "python benchmarks/" + " ".join(["bench_reading.py", *sys.argv[1:]]),
        "arms": arms,
        "recorded": RECORDED,
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(payload, indent=1) + "\n", encoding="utf-8")
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
