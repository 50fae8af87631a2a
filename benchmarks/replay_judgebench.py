"""Replay the released JudgeBench judges through mitigate, scored by JudgeBench's own rule and by mitigate's
measures.

Tan et al. 2024 release each judge's two judgments per response pair (the pair as given, then
swapped) with the raw text of prompted judges and the two rewards of reward models. The copy
this was run on holds the complete outputs of seven judges (the others are stored as Git LFS
pointers, absent from the snapshot): Arena-Hard prompted with Claude-3-Haiku (Claude-3.5-Sonnet
pairs) and o1-mini (GPT-4o pairs), and five reward models (GPT-4o pairs).

Per judge:

- ``release_rule``: JudgeBench's score (``utils/metrics.py``): per pair, +1 for each order whose
  decision equals the label and -1 for each equal to the opposite; the pair is correct when the
  sum is positive (a tie, an inconsistent pair or a missing decision is not), over every pair;
  also per category (knowledge, reasoning, math, coding). Computed from the released decisions;
- ``mitigate_release_rule``: the same rule on mitigate's reading of the raw answers (Arena-Hard's
  ``[[A>B]]`` format recovered from its template; rewards compared for reward models);
- ``mitigate``: accuracy of the first order and averaged over both (3-way), position
  consistency, with 95% bootstrap intervals; parse rate and agreement with the released decisions.

Run: ``python benchmarks/replay_judgebench.py /path/to/JudgeBench``.
Writes ``benchmarks/results/replay_judgebench.json``.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from released_common import RESULTS_DIR, Table, boot_mean, fmt_ci, hits, strip_texts, tables, write_json

from mitigate.data import read_judgebench
from mitigate.measures import position_consistency
from mitigate.replay._released_pairwise import parse_release, parse_report

_OPP = {"A": "B", "B": "A"}


def judgebench_correct(orig: list[str | None], swap: list[str | None], gold: list[str]) -> np.ndarray:
    """JudgeBench's per-pair correctness (both decisions by text; see the module docstring)."""
    out = []
    for a, b, g in zip(orig, swap, gold, strict=True):
        counter = sum(1 if d == g else -1 if d == _OPP[g] else 0 for d in (a, b))
        out.append(float(counter > 0))
    return np.array(out)


def per_judge(t: Table, n_boot: int, seed: int) -> dict[str, Any]:
    cats = np.array([it.meta["category"] for it in t.items])
    rel = judgebench_correct(t.rel_orig, t.rel_swap, t.gold)
    mine = judgebench_correct(t.orig, t.swap, t.gold)
    o, s = t.presented()
    pc = position_consistency(o, s, ci=True, n_boot=n_boot, seed=seed)
    return {
        "n": len(t.items),
        "release_rule": {
            "overall": float(rel.mean()),
            **{c: float(rel[cats == c].mean()) for c in sorted(set(cats))},
        },
        "mitigate_release_rule": {
            "overall": boot_mean(mine, n_boot, seed),
            **{c: float(mine[cats == c].mean()) for c in sorted(set(cats))},
        },
        "mitigate": {
            "acc_first": boot_mean(hits(t.orig, t.gold), n_boot, seed),
            "acc_both": boot_mean((hits(t.orig, t.gold) + hits(t.swap, t.gold)) / 2, n_boot, seed),
            "ties": sum(v == "tie" for v in t.orig + t.swap),
            "failed": sum(v is None for v in t.orig + t.swap),
            "position_consistency": {
                "value": pc.value,
                "ci": [pc.ci_low, pc.ci_high],
                "n": pc.n,
                "of_all": pc.of_all,
            },
        },
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument(
        "snapshot", type=Path, help="the JudgeBench repository folder (with data/, outputs/, utils/)"
    )
    ap.add_argument("--n-boot", type=int, default=1000)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--out", type=Path, default=RESULTS_DIR / "replay_judgebench.json")
    args = ap.parse_args()
    t0 = time.perf_counter()
    release = read_judgebench(args.snapshot)
    parse = parse_release(release)
    rows = {name: per_judge(t, args.n_boot, args.seed) for name, t in tables(parse).items()}
    report = strip_texts(parse_report(parse, examples=5))
    payload = {
        "command": " ".join(["python", *sys.argv]),
        "snapshot": str(args.snapshot),
        "answers": len(release.answers),
        "seconds": time.perf_counter() - t0,
        "formats": parse.formats,
        "judges": rows,
        "parse": report,
    }
    write_json(args.out, payload)
    for name, r in rows.items():
        m = r["mitigate"]
        print(
            f"{name:70s} n={r['n']} JudgeBench rule: release {r['release_rule']['overall']:.3f} "
            f"mitigate {fmt_ci(r['mitigate_release_rule']['overall'])} | acc first "
            f"{fmt_ci(m['acc_first'])} PC {m['position_consistency']['value']:.3f}"
        )
    for key, r in report.items():
        print(
            f"parse {key}: {r['parsed']}/{r['answers']} read, agree {r['agree']}, differ {r['differ']}, "
            f"only release {r['only_release']}, only mitigate {r['only_mitigate']}, both none "
            f"{r['both_none']}"
        )
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
