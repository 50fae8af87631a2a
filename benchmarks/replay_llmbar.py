"""Replay every released LLMBar judge through mitigate and set its figures beside the paper's.

Zeng et al. 2024 released, for every judge (GPT-4, ChatGPT, ChatGPT-0301, PaLM 2, LLaMA 2,
Falcon) and prompting strategy (Vanilla, Vanilla with rules, CoT, Swap, Metrics, Reference,
few-shot, rating ...), the raw answer in both output orders on every set, and the figures the
paper reports (``statistics.json``: ``correct_average``, the accuracy averaged over the two
orders; ``equal``, the share judged the same in both orders). This script reads the whole
release with :func:`mitigate.data._llmbar.read_llmbar`, parses every raw answer with mitigate's
own parser in the format recovered from the strategy's prompt
(:mod:`mitigate.replay._released_pairwise`) and reports per set, judge and strategy:

- ``paper``: the released statistics;
- ``release_rule``: the paper's rule on the release's own readings (must equal ``paper``: a check
  of the loader);
- ``mitigate_paper_rule``: the paper's rule on mitigate's readings. The paper counts an answer
  it could not read as wrong, and two unread answers as "the same in both orders"; a rating
  strategy's tie (or unreadable rating) gives one order to each output, so half credit;
- ``mitigate``: mitigate's own measures: accuracy of the first order and averaged over both
  orders (3-way: a tie is wrong, gold has no ties), position consistency (Shi et al.; failures
  dropped in ``value``, counted inconsistent in ``of_all``), with 95% bootstrap intervals;
- the gain of each strategy over Vanilla (rules, no CoT), the paper's and mitigate's (the paper's
  rule on mitigate's readings, paired per item, bootstrapped within each set, on the average over
  the four Adversarial sets as the paper averages them);
- parse rates per prompt template and judge, with the answers the two readings disagree on.

Run: ``python benchmarks/replay_llmbar.py /path/to/LLMBar`` (``--sets llmbar`` for the 5 sets of
LLMBar proper). Writes ``benchmarks/results/replay_llmbar.json``.
"""

from __future__ import annotations

import argparse
import resource
import sys
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from released_common import RESULTS_DIR, Table, boot_mean, fmt_ci, hits, pct, strip_texts, tables, write_json

from mitigate.data import read_llmbar
from mitigate.data._llmbar import LLMBAR_SETS
from mitigate.measures import position_consistency
from mitigate.replay._released_pairwise import parse_release, parse_report

ADVERSARIAL = tuple(s for s in LLMBAR_SETS if "Adversarial" in s)
BASE = "Vanilla"


def paper_rule(t: Table, orig: list[str | None], swap: list[str | None]) -> tuple[np.ndarray, np.ndarray]:
    """Per item: the paper's both-orders accuracy and its "same in both orders" (see the module docstring)."""
    # a rating strategy: one verdict; a tie or an unread rating gives each order one output
    if not t.two_orders:
        acc = np.array(
            [0.5 if v in (None, "tie") else float(v == g) for v, g in zip(orig, t.gold, strict=True)]
        )
        same = np.array([float(v not in (None, "tie")) for v in orig])
        return acc, same
    acc = (hits(orig, t.gold) + hits(swap, t.gold)) / 2
    same = np.array([float(a == b) for a, b in zip(orig, swap, strict=True)])
    return acc, same


def per_judge(t: Table, n_boot: int, seed: int) -> dict[str, Any]:
    acc_rule, same_rule = paper_rule(t, t.orig, t.swap)
    out: dict[str, Any] = {
        "n": len(t.items),
        "mitigate_paper_rule": {"acc": float(acc_rule.mean()), "agr": float(same_rule.mean())},
        "failed_answers": sum(v is None for v in t.orig)
        + (sum(v is None for v in t.swap) if t.two_orders else 0),
    }
    if t.two_orders:
        rel_acc, rel_same = paper_rule(t, t.rel_orig, t.rel_swap)
        out["release_rule"] = {"acc": float(rel_acc.mean()), "agr": float(rel_same.mean())}
        both = (hits(t.orig, t.gold) + hits(t.swap, t.gold)) / 2
        o, s = t.presented()
        pc = position_consistency(o, s, ci=True, n_boot=n_boot, seed=seed)
        out["mitigate"] = {
            "acc_first": boot_mean(hits(t.orig, t.gold), n_boot, seed),
            "acc_both": boot_mean(both, n_boot, seed),
            "position_consistency": {
                "value": pc.value,
                "ci": [pc.ci_low, pc.ci_high],
                "n": pc.n,
                "of_all": pc.of_all,
                "n_failed": pc.n_failed,
            },
        }
    else:
        out["mitigate"] = {
            "acc_first": boot_mean(hits(t.orig, t.gold), n_boot, seed),
            "acc_both": boot_mean(hits(t.orig, t.gold), n_boot, seed),
            "ties": sum(v == "tie" for v in t.orig),
        }
    # per item, for the gains: the paper's rule, so they compare with the paper's
    out["_rule_hits"] = acc_rule
    return out


def stratified_gain(
    a: dict[str, np.ndarray], b: dict[str, np.ndarray], n_boot: int, seed: int
) -> dict[str, Any]:
    """Mean over sets of the per-set mean of ``a - b`` (paired per item), bootstrapped within each set."""
    sets = [s for s in a if s in b and len(a[s]) == len(b[s])]
    if not sets:
        return {"value": None, "ci": None, "n": 0}
    diffs = [a[s] - b[s] for s in sets]
    rng = np.random.default_rng(seed)
    boots = np.zeros(n_boot)
    for d in diffs:
        boots += d[rng.integers(0, len(d), size=(n_boot, len(d)))].mean(axis=1)
    boots /= len(diffs)
    value = float(np.mean([d.mean() for d in diffs]))
    lo, hi = np.quantile(boots, [0.025, 0.975])
    return {
        "value": value,
        "ci": [float(lo), float(hi)],
        "n": int(sum(len(d) for d in diffs)),
        "sets": len(sets),
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument(
        "snapshot", type=Path, help="the LLMBar repository folder (with Dataset/ and LLMEvaluator/)"
    )
    ap.add_argument("--sets", default="all", help="'all' (every set of the copy) or 'llmbar' (LLMBar proper)")
    ap.add_argument("--n-boot", type=int, default=1000)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--out", type=Path, default=RESULTS_DIR / "replay_llmbar.json")
    args = ap.parse_args()
    t0 = time.perf_counter()
    release = read_llmbar(args.snapshot, sets="all" if args.sets == "all" else None)
    t_read = time.perf_counter()
    parse = parse_release(release)
    t_parse = time.perf_counter()
    by_set: dict[str, dict[str, Table]] = defaultdict(dict)
    for judge, table in tables(parse).items():
        for s in dict.fromkeys(it.meta["set"] for it in table.items):
            by_set[s][judge] = table.subset(np.array([it.meta["set"] == s for it in table.items]))
    t_tables = time.perf_counter()
    rows: dict[str, dict[str, Any]] = {}
    both_hits: dict[str, dict[str, np.ndarray]] = defaultdict(dict)
    for s, judges in by_set.items():
        for judge, t in judges.items():
            r = per_judge(t, args.n_boot, args.seed)
            both_hits[judge][s] = r.pop("_rule_hits")
            stats = release.release_stats.get(f"{s}|{judge}", {})
            r["paper"] = {"acc": pct(stats.get("correct_average")), "agr": pct(stats.get("equal"))}
            rows[f"{s}|{judge}"] = r
    # the paper's Adversarial figure is the mean of the four subsets' figures
    summary: dict[str, Any] = {}
    for judge in release.judges:
        info = release.judge_info[judge]
        entry: dict[str, Any] = {"model": info["model"], "strategy": info["strategy"]}
        for label, sets in (("natural", ("LLMBar/Natural",)), ("adversarial", ADVERSARIAL)):
            keys = [f"{s}|{judge}" for s in sets if f"{s}|{judge}" in rows]
            if len(keys) != len(sets):
                continue
            block = {}
            for src in ("paper", "mitigate_paper_rule", "release_rule"):
                vals = [rows[k].get(src) for k in keys]
                if all(v and v.get("acc") is not None for v in vals):
                    block[src] = {m: float(np.mean([v[m] for v in vals])) for m in ("acc", "agr")}
            block["mitigate_paper_rule_ci"] = stratified_gain(
                {s: both_hits[judge][s] for s in sets},
                {s: np.zeros_like(both_hits[judge][s]) for s in sets},
                args.n_boot,
                args.seed,
            )
            pcs = [rows[k]["mitigate"].get("position_consistency", {}) for k in keys]
            if all(p.get("of_all") is not None for p in pcs):
                block["mitigate_pc_of_all"] = float(np.mean([p["of_all"] for p in pcs]))
            base = f"{info['model']}/{BASE}"
            if judge != base and base in both_hits:
                block["gain_vs_vanilla"] = stratified_gain(
                    {s: both_hits[judge][s] for s in sets},
                    {s: both_hits[base][s] for s in sets},
                    args.n_boot,
                    args.seed,
                )
                pb = [rows.get(f"{s}|{base}", {}).get("paper") for s in sets]
                if "paper" in block and all(p and p.get("acc") is not None for p in pb):
                    block["paper_gain_vs_vanilla"] = block["paper"]["acc"] - float(
                        np.mean([p["acc"] for p in pb])
                    )
            entry[label] = block
        summary[judge] = entry
    report = strip_texts(parse_report(parse, examples=4))
    by_template: dict[str, dict[str, int]] = defaultdict(lambda: defaultdict(int))
    for r in report.values():
        for k in (
            "answers",
            "parsed",
            "failed",
            "compared",
            "agree",
            "both_none",
            "only_release",
            "only_mitigate",
            "differ",
        ):
            by_template[r["template"]][k] += r[k]
    t_done = time.perf_counter()
    n_answers = len(release.answers)
    timing = {
        "read_s": t_read - t0,
        "parse_s": t_parse - t_read,
        "tables_s": t_tables - t_parse,
        "measures_s": t_done - t_tables,
        "total_s": t_done - t0,
        "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
    }
    mismatched = {
        k: {"paper": v["paper"], "release_rule": v.get("release_rule")}
        for k, v in rows.items()
        if v.get("release_rule")
        and v["paper"]["acc"] is not None
        and (
            abs(v["release_rule"]["acc"] - v["paper"]["acc"]) > 1e-9
            or abs(v["release_rule"]["agr"] - v["paper"]["agr"]) > 1e-9
        )
    }
    payload = {
        "command": " ".join(["python", *sys.argv]),
        "snapshot": str(args.snapshot),
        "answers": n_answers,
        "judges": len(release.judges),
        "sets": len(by_set),
        "answers_by_kind": {
            "final_verdicts": sum(a.final and a.part == "verdict" for a in release.answers),
            "swap_first_calls": sum(not a.final for a in release.answers),
            "ratings": sum(a.part != "verdict" for a in release.answers),
        },
        "timing": timing,
        "release_rule_mismatches": mismatched,
        "formats": parse.formats,
        "parse_by_template": by_template,
        "parse_by_judge": report,
        "summary": summary,
        "per_set": rows,
    }
    write_json(args.out, payload)
    print(
        f"{n_answers} raw answers, {len(release.judges)} judges, {len(by_set)} sets; "
        f"read {timing['read_s']:.1f}s parse {timing['parse_s']:.1f}s measures {timing['measures_s']:.1f}s "
        f"total {timing['total_s']:.1f}s, peak RSS {timing['peak_rss_mb']:.0f} MB"
    )
    print(f"paper rule on the release's readings differs from statistics.json in {len(mismatched)} cases")
    for judge, e in summary.items():
        nat, adv = e.get("natural", {}), e.get("adversarial", {})
        print(
            f"{judge:32s} natural paper {nat.get('paper', {}).get('acc', float('nan')):.3f} "
            f"mitigate {nat.get('mitigate_paper_rule', {}).get('acc', float('nan')):.3f} | adversarial "
            f"paper {adv.get('paper', {}).get('acc', float('nan')):.3f} mitigate "
            f"{adv.get('mitigate_paper_rule', {}).get('acc', float('nan')):.3f} "
            f"gain {fmt_ci(adv.get('gain_vs_vanilla'))}"
        )
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
