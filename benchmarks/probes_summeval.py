"""The bias battery on a live local judge over SummEval: every rule-based probe × a few mitigations.

What this measures. The Qwen2.5 0.5B judge model (``fetch-judge-model 0.5b``, embedded llama.cpp,
greedy, a direct "Score: N" answer under the backend's grammar) scores SummEval coherence for the
summaries of the first ``--docs`` test documents (document order, so consecutive calls share the
article prefix). For each mitigation variant it judges the items as they are, again (the rerun:
the same requests with another request seed; greedy decoding on llama.cpp is deterministic, so
the floor should be 0) and once under each rule-based probe (:mod:`mitigate.probes`), and reports
per probe: n, the robustness rate (CALM) with a bootstrap interval, the mean score shift with a
paired bootstrap interval, the share of changes in the predicted direction and the exact one-sided
McNemar p of probe flips vs rerun flips (:mod:`mitigate.measures._robustness`).

Variants (pointwise): ``baseline``; ``consistency-hint`` (an instruction that presentation must not
move the score); ``stratified-demos`` (2 demos with human scores, chosen by the stratified selector
from the ``--train-docs`` documents before the test documents); ``multi-attribute`` (the four
SummEval criteria asked in one call, coherence read) and ``single-attribute`` (Stureborg et al.'s
split of that prompt, of which only the coherence call runs: the other criteria's calls cannot
move the coherence score). With ``--pairs N`` the same battery runs on N head-to-head pairs
(``summeval-h2h``, experts not tied; ``--pairs-per-doc`` from each document after the
``--pair-train-docs`` the pairwise demos come from) with a pairwise prompt of this project's
wording, probing Summary 2 (side b), for ``--pair-variants`` (``baseline``, ``position-swap``,
``consistency-hint``, ``stratified-demos``) and the ``--pair-size`` judge.

Runtime: (2 + 8) judgments per item per variant; on 2 shared cores the 0.5B model reads about
140 prompt tokens/s, and a probed call re-reads only the summary and the closing lines (~150
tokens) after the shared article prefix.

Run: ``flock /work/bench.lock python benchmarks/probes_summeval.py`` (add ``--pairs 12`` for the
pairwise part; ``--merge`` adds variants to an earlier run's file). Writes
``benchmarks/results/probes_summeval.json`` (tables) and the rewrites to
``runs/probes_summeval/``.
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
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from evidence_common import RESULTS_DIR, clean, default_backend
from sampling_grid_summeval import direct_prompt

from mitigate import measures as M
from mitigate.data import Benchmark, Item, load
from mitigate.errors import MitigateError
from mitigate.judge import JudgeConfig, PromptJudge
from mitigate.lm import get, wrap
from mitigate.probes import render_probe_table, resolve_probes, run_probes
from mitigate.probes._battery import ProbeReport
from mitigate.prompt import JudgePrompt, get_prompt
from mitigate.run import run
from mitigate.selectors import Stratified
from mitigate.strategies import (
    ConsistencyHint,
    Demos,
    Mitigation,
    MultiAttribute,
    Pipeline,
    PositionSwap,
    SingleAttribute,
)

SUMMEVAL_CRITERIA = ("coherence", "consistency", "fluency", "relevance")

RUNS = Path(__file__).resolve().parent.parent / "runs" / "probes_summeval"

# Our own wording of a pairwise coherence prompt (the article first, so both orders share its prefix).
PAIR_PROMPT = """You compare two summaries of the same news article for coherence: whether the summary is \
well structured and well organised and builds from sentence to sentence into a coherent body of information.

Article:
{{source}}

Summary 1:
{{output}}

Summary 2:
{{output_b}}

Which summary is more coherent? Answer 'Summary 1' or 'Summary 2'."""


def docs_in_order(items: tuple[Item, ...]) -> list[str]:
    """Document ids in benchmark order."""
    return list(dict.fromkeys(str(i.doc_id) for i in items))


def pointwise_judge(
    name: str, base: PromptJudge, variants: dict[str, Mitigation], train: list[Item], bench: Benchmark
) -> Any:
    """The judge of one pointwise variant over ``base`` (fitted on ``train`` when it learns from data).

    ``multi-attribute`` asks for all four SummEval criteria in one call (its coherence line is
    read); ``single-attribute`` is Stureborg et al.'s remedy applied to that prompt, of which only
    the coherence call is run: each criterion has its own call, so the other three cannot move
    the coherence score, and running them would only cost time.
    """
    if name in ("multi-attribute", "single-attribute"):
        criteria = tuple(get_prompt(f"summeval-{c}").criteria[0] for c in SUMMEVAL_CRITERIA)
        multi = MultiAttribute(criteria=criteria).wrap(base.with_config(max_tokens=48))
        if name == "multi-attribute":
            return multi
        wanted = base.prompt.criteria[0].name.lower()
        for leaf in SingleAttribute().wrap(multi).leaves():  # one leaf per criterion after the split
            if [c.name.lower() for c in leaf.prompt.criteria] == [wanted]:
                return leaf
        raise MitigateError(f"expected a single-attribute call for {wanted!r}; found none")
    pipe = variants[name]
    if not pipe.is_fitted:
        pipe = pipe.fit(
            Benchmark(name="train", items=tuple(train), criteria=bench.criteria), base, progress=False
        )
    return pipe.wrap(base)


def h2h_split(criterion: str, n: int, per_doc: int, train_docs: int) -> tuple[list[Item], list[Item]]:
    """Train and test head-to-head pairs the experts do not tie, from different documents.

    The first ``train_docs`` documents (in benchmark order) give the demo pool; the test pairs are
    the first ``per_doc`` pairs of each following document until there are ``n``, so the test set
    spreads over ``ceil(n / per_doc)`` articles rather than one.
    """
    h2h = load("summeval-h2h")
    pairs = [it for it in h2h.items if it.preference.get(criterion) in ("A", "B")]
    docs = docs_in_order(tuple(pairs))
    train = [p for p in pairs if str(p.doc_id) in docs[:train_docs]]
    test: list[Item] = []
    for d in docs[train_docs:]:
        test += [p for p in pairs if str(p.doc_id) == d][:per_doc]
        if len(test) >= n:
            break
    return train, test[:n]


def summary_rows(report: ProbeReport) -> list[dict[str, Any]]:
    """The table rows as plain JSON."""
    rows = []
    for r in report.rows:
        e = r.effect
        rows.append(
            {
                "probe": r.probe,
                "predicts": e.direction,
                "n": e.robustness.n,
                "n_failed": e.robustness.n_failed,
                "robustness": e.robustness.value,
                "robustness_ci": [e.robustness.ci_low, e.robustness.ci_high],
                "shift": e.shift.value,
                "shift_ci": [e.shift.ci_low, e.shift.ci_high],
                "directional": e.directional.value if e.directional.ok else None,
                "flip_probe": e.test.extra.get("flip_probe"),
                "flip_rerun": e.test.extra.get("flip_rerun"),
                "p_value": e.test.extra.get("p_value"),
                "detected": e.detected,
                "reading": e.reading,
                "calls": r.calls,
            }
        )
    return rows


async def battery(
    name: str, judge: Any, items: list[Item], criterion: str, probes: list[Any], args: argparse.Namespace
) -> dict[str, Any]:
    """One variant's battery: the report as JSON, its rewrites written to the runs folder."""
    started = time.time()
    first = await run(judge, items, concurrency=1, progress=args.progress, desc=f"{name}: original")
    ci = {"ci": args.n_boot > 0, "n_boot": max(args.n_boot, 1), "seed": args.seed}
    if items and items[0].pairwise:
        agreement = M.preference_accuracy(
            M.verdicts_as_text(first.judgments), [it.preference.get(criterion) for it in items], **ci
        )
    else:
        agreement = M.item_correlation(
            [j.scores.get(criterion) for j in first.judgments],
            M.human_scores(items, criterion),
            "spearman",
            **ci,
        )
    report = await run_probes(
        judge,
        items,
        probes,
        criterion=criterion,
        concurrency=1,
        progress=args.progress,
        n_boot=args.n_boot,
        seed=args.seed,
        label=name,
        original=first.judgments,
    )
    RUNS.mkdir(parents=True, exist_ok=True)
    (RUNS / f"{name}.rewrites.jsonl").write_text("".join(r.model_dump_json() + "\n" for r in report.records))
    table = render_probe_table(report)
    print(f"\n### {name} ({time.time() - started:.0f} s)\n\n{table}\n", flush=True)
    return {
        "agreement": {
            "measure": agreement.name,
            "value": agreement.value,
            "ci": [agreement.ci_low, agreement.ci_high],
            "n": agreement.n,
            "n_failed": agreement.n_failed,
        },
        "noise_floor": report.noise.value,
        "noise_n": report.noise.n,
        "floor_note": report.floor_note,
        "calls": report.calls,
        "rows": summary_rows(report),
        "table": table,
        "seconds": round(time.time() - started, 1),
    }


def _num(v: Any, digits: int = 2) -> str:
    return "-" if v is None else f"{v:.{digits}f}"


def _interval(value: Any, ci: list[Any]) -> str:
    if value is None:
        return "-"
    if not ci or ci[0] is None:
        return _num(value)
    return f"{_num(value)} [{_num(ci[0])}, {_num(ci[1])}]"


def _pv(v: Any) -> str:
    return "-" if v is None else ("<0.001" if v < 0.001 else f"{v:.3f}")


def render(out: dict[str, Any]) -> str:
    """The RESULTS.md tables from a written JSON: one row per probe, one column block per variant."""
    lines: list[str] = []
    for part, label in (("pointwise", "score"), ("pairwise", "preference for the probed text")):
        runs = {k: v for k, v in out.get(part, {}).items() if "rows" in v}
        if not runs:
            continue
        names = list(runs)
        lines += [
            "Noise floor (rerun flip rate): "
            + "; ".join(f"{n} {_num(runs[n]['noise_floor'])} over {runs[n]['noise_n']}" for n in names)
            + ".",
            "",
            "Agreement with the experts (original texts): "
            + "; ".join(
                f"{n} {runs[n]['agreement']['measure']} "
                f"{_interval(runs[n]['agreement']['value'], runs[n]['agreement']['ci'])} "
                f"(n={runs[n]['agreement']['n']})"
                for n in names
                if "agreement" in runs[n]
            )
            + ".",
            "",
            "| probe | predicts | "
            + " | ".join(f"{n}: RR [95% CI] / shift ({label}) [95% CI] / p" for n in names)
            + " |",
            "|---|---|" + "---|" * len(names),
        ]
        for i, row in enumerate(runs[names[0]]["rows"]):
            cells = []
            for n in names:
                r = runs[n]["rows"][i]
                mark = " **detected**" if r["detected"] else ""
                cells.append(
                    f"{_interval(r['robustness'], r['robustness_ci'])} / "
                    f"{_interval(r['shift'], r['shift_ci'])} / {_pv(r['p_value'])}{mark}"
                )
            lines.append(f"| {row['probe']} | {row['predicts']} | " + " | ".join(cells) + " |")
        lines.append("")
    return "\n".join(lines)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--size", default="0.5b")
    ap.add_argument("--backend", default=None, help="LM backend spec (default: the fetched local judge)")
    ap.add_argument("--criterion", default="coherence")
    ap.add_argument("--train-docs", type=int, default=1, help="documents the demos are chosen from")
    ap.add_argument("--docs", type=int, default=2, help="test documents (all their summaries are judged)")
    ap.add_argument("--per-doc", type=int, default=10, help="summaries per test document")
    ap.add_argument("--pairs", type=int, default=0, help="head-to-head pairs for the pairwise part (0: skip)")
    ap.add_argument("--variants", default="baseline,consistency-hint,stratified-demos")
    ap.add_argument("--pair-variants", default="baseline,position-swap,consistency-hint,stratified-demos")
    ap.add_argument("--pair-size", default="1.5b", help="judge model size for the pairwise part")
    ap.add_argument("--pair-backend", default=None, help="LM backend spec for the pairwise part")
    ap.add_argument(
        "--pairs-per-doc", type=int, default=2, help="test pairs taken from each head-to-head document"
    )
    ap.add_argument(
        "--pair-train-docs", type=int, default=1, help="head-to-head documents the pairwise demos come from"
    )
    ap.add_argument("--n-boot", type=int, default=1000)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--progress", action=argparse.BooleanOptionalAction, default=False)
    ap.add_argument("--out", type=Path, default=RESULTS_DIR / "probes_summeval.json")
    ap.add_argument("--merge", action="store_true", help="add this run's variants to those already in --out")
    ap.add_argument("--render", action="store_true", help="print the RESULTS.md tables of --out and stop")
    args = ap.parse_args()
    if args.render:
        print(render(json.loads(args.out.read_text())))
        return
    spec = args.backend or default_backend(args.size)
    lm = wrap(get(spec, n_ctx=4096) if spec.startswith("local") else get(spec), cache=True)
    probes = resolve_probes("all")
    bench = load("summeval")
    docs = docs_in_order(bench.items)
    train_docs, test_docs = docs[: args.train_docs], docs[args.train_docs : args.train_docs + args.docs]
    train = [i for i in bench.items if i.doc_id in train_docs]
    test = [i for d in test_docs for i in [x for x in bench.items if x.doc_id == d][: args.per_doc]]
    base = PromptJudge(direct_prompt(args.criterion), lm, JudgeConfig(max_tokens=8))
    variants: dict[str, Mitigation] = {
        "baseline": Pipeline(),
        "consistency-hint": ConsistencyHint(),
        "stratified-demos": Demos(selector=Stratified(seed=args.seed), k=2),
    }
    out: dict[str, Any] = {
        "command": " ".join(["python", *sys.argv]),
        "backend": spec,
        "criterion": args.criterion,
        "test_docs": test_docs,
        "train_docs": train_docs,
        "n_items": len(test),
        "probes": [p.spec() for p in probes],
        "pointwise": {},
        "pairwise": {},
    }
    # keep the variants an earlier run wrote; this run adds or replaces its own
    if args.merge and args.out.is_file():
        earlier = json.loads(args.out.read_text())
        out = {**earlier, "commands": [*earlier.get("commands", [earlier.get("command")]), out["command"]]}
    started = time.time()
    for name in [v.strip() for v in args.variants.split(",") if v.strip()]:
        try:
            judge = pointwise_judge(name, base, variants, train, bench)
        except MitigateError as exc:
            out["pointwise"][name] = {"error": str(exc)}
            print(f"{name}: not run: {exc}", flush=True)
            continue
        out["pointwise"][name] = asyncio.run(battery(name, judge, test, args.criterion, probes, args))
        args.out.write_text(json.dumps(clean(out), indent=1))
    if args.pairs:
        out["pairwise_backend"] = pair_spec = args.pair_backend or default_backend(args.pair_size)
        plm = (
            lm
            if pair_spec == spec
            else wrap(
                get(pair_spec, n_ctx=4096) if pair_spec.startswith("local") else get(pair_spec), cache=True
            )
        )
        train_pairs, pairs = h2h_split(args.criterion, args.pairs, args.pairs_per_doc, args.pair_train_docs)
        pjudge = PromptJudge(
            JudgePrompt.from_template(PAIR_PROMPT, answer="pairwise", criterion=args.criterion),
            plm,
            JudgeConfig(max_tokens=16),
        )
        side_b = [p.with_params(side="b") for p in probes]
        out["pairs"] = len(pairs)
        out["pair_docs"] = docs_in_order(tuple(pairs))
        out["pair_train_docs"] = docs_in_order(tuple(train_pairs))
        pair_variants: dict[str, Mitigation] = {
            "baseline": Pipeline(),
            "position-swap": PositionSwap(),
            "consistency-hint": ConsistencyHint(),
            "stratified-demos": Demos(selector=Stratified(seed=args.seed), k=2),
        }
        h2h_criteria = load("summeval-h2h").criteria
        for short in [v.strip() for v in args.pair_variants.split(",") if v.strip()]:
            name = f"pairwise {short}"
            pipe = pair_variants[short]
            try:
                if not pipe.is_fitted:
                    pipe = pipe.fit(
                        Benchmark(name="train", items=tuple(train_pairs), criteria=h2h_criteria),
                        pjudge,
                        progress=False,
                    )
                judge = pipe.wrap(pjudge)
            except MitigateError as exc:
                out["pairwise"][name] = {"error": str(exc)}
                print(f"{name}: not run: {exc}", flush=True)
                continue
            out["pairwise"][name] = asyncio.run(
                battery(name.replace(" ", "-"), judge, pairs, args.criterion, side_b, args)
            )
            args.out.write_text(json.dumps(clean(out), indent=1))
    out["seconds"] = round(time.time() - started, 1)
    args.out.write_text(json.dumps(clean(out), indent=1))
    print(render(out))
    print(f"wrote {args.out} in {out['seconds']} s")


if __name__ == "__main__":
    main()
