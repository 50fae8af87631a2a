"""Position bias of the released ChatGPT head-to-head judgments (Shen et al. 2023), read as recorded
judgments.

Shen et al. released ChatGPT's (gpt-3.5-turbo-0301) pairwise verdicts on 11 SummEval system pairs x 100
documents x 4 dimensions, each in both presentation orders. This script replays them through the generic
recorded-judgments path (``Entry.from_released("chatgpt-h2h", ...)`` is a
:class:`~mitigate.replay._recorded.RecordedJudge` over :func:`mitigate.data._released.released_recorded`) on
the pairwise benchmark ``summeval-h2h``, whose gold preference is the higher mean expert score (a tie when the
means are equal), and runs :func:`mitigate.harness._compare.compare` per dimension. No LM is called.

Reported per dimension: accuracy against gold (3-way), position consistency and preference fairness
(Shi et al. 2024) overall and per system pair, the lean towards the longer summary (judge and gold), and
the accuracy gained by reconciling both orders (position swap, a flip becoming a tie), each with a 95%
bootstrap interval.

Run: ``python benchmarks/h2h_position_bias.py`` (about 30 s). Writes
``benchmarks/results/h2h_position_bias.json``.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import math
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # runs from a checkout without installing

from mitigate.data import CRITERIA
from mitigate.harness import Entry, compare
from mitigate.measures import Measure

DEFAULT_OUT = Path(__file__).resolve().parent / "results" / "h2h_position_bias.json"
KEYS = (
    "preference_accuracy",
    "position_consistency",
    "preference_fairness",
    "swap_gain",
    "longer_preference",
)


def _r(v: float | None, digits: int = 4) -> float | None:
    return None if v is None or not math.isfinite(v) else round(float(v), digits)


def _measure(m: Measure) -> dict[str, Any]:
    out: dict[str, Any] = {
        "value": _r(m.value),
        "ci95": [_r(m.ci_low), _r(m.ci_high)],
        "n": m.n,
        "n_failed": m.n_failed,
    }
    for key in (
        "primacy",
        "recency",
        "accuracy_decisive",
        "accuracy_one_order",
        "accuracy_swap",
        "p_value",
        "p_longer",
        "n_gold_ties",
    ):
        if key in m.extra:
            out[key] = _r(m.extra[key]) if isinstance(m.extra[key], float) else m.extra[key]
    return out


async def dimension(criterion: str, n_boot: int, folder: Path) -> dict[str, Any]:
    """Every pairwise measure of the released head-to-head on one dimension."""
    result = await compare(
        benchmark="summeval-h2h",
        criterion=criterion,
        entries=[Entry.from_released("chatgpt-h2h", criterion)],
        out_dir=folder / criterion,
        progress=False,
        n_boot=n_boot,
        n_perm=5000,
        seed=0,
    )
    entry = result.entries[0]
    gold = [it.gold for it in result.items]
    out: dict[str, Any] = {
        "n_items": len(result.items),
        "gold": {k: gold.count(k) for k in ("A", "B", "tie")},
        "verdicts_original_order": entry.histogram,
        "calls": entry.summary.calls,
        "parse_failures": entry.summary.parse_failures,
        "measures": {k: _measure(entry.measures[k.replace("_", "-")]) for k in KEYS},
        "gold_longer_preference": _measure(result.human["longer-preference"]),
        "per_pair": {},
    }
    pc = entry.measures["position-consistency"].extra["per_group"]
    pf = entry.measures["preference-fairness"].extra["per_group"]
    for pair in pc:
        out["per_pair"][pair] = {
            "n": pc[pair]["n"],
            "position_consistency": [_r(pc[pair]["value"]), _r(pc[pair]["ci_low"]), _r(pc[pair]["ci_high"])],
            "preference_fairness": [_r(pf[pair]["value"]), _r(pf[pair]["ci_low"]), _r(pf[pair]["ci_high"])],
            "primacy": pf[pair]["primacy"],
            "recency": pf[pair]["recency"],
        }
    return out


def print_tables(results: dict[str, Any]) -> None:
    """Human-readable tables on stdout."""
    print(
        f"{'dimension':<12}{'accuracy':>22}{'pos. consistency':>22}{'pref. fairness':>24}{'swap gain':>24}"
        f"{'longer lean':>22}{'gold lean':>22}"
    )
    for c, d in results["dimensions"].items():

        def cell(m: dict[str, Any]) -> str:
            return f"{m['value']:+.3f} [{m['ci95'][0]:+.3f}, {m['ci95'][1]:+.3f}]"

        m = d["measures"]
        print(
            f"{c:<12}{cell(m['preference_accuracy']):>22}{cell(m['position_consistency']):>22}"
            f"{cell(m['preference_fairness']):>24}{cell(m['swap_gain']):>24}{cell(m['longer_preference']):>22}"
            f"{cell(d['gold_longer_preference']):>22}"
        )
    print("\nPer system pair: position consistency / preference fairness")
    pairs = list(next(iter(results["dimensions"].values()))["per_pair"])
    print(f"{'pair':<12}" + "".join(f"{c:>24}" for c in results["dimensions"]))
    for pair in pairs:
        cells = [
            f"{d['per_pair'][pair]['position_consistency'][0]:.2f} / "
            f"{d['per_pair'][pair]['preference_fairness'][0]:+.2f}"
            for d in results["dimensions"].values()
        ]
        print(f"{pair:<12}" + "".join(f"{c:>24}" for c in cells))


def main() -> None:
    """Parse arguments, run every dimension, print the tables and write the JSON."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--n-boot", type=int, default=1000)
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT)
    args = parser.parse_args()
    start = time.perf_counter()
    with tempfile.TemporaryDirectory() as tmp:
        dims = {c: asyncio.run(dimension(c, args.n_boot, Path(tmp))) for c in CRITERIA}
    results = {
        "what": "ChatGPT (gpt-3.5-turbo-0301) head-to-head verdicts of Shen et al. 2023, both orders, "
        "through the recorded-judgments path; gold = higher mean of 3 expert ratings, tie when equal",
        "command": "python benchmarks/h2h_position_bias.py"
        + (f" --n-boot {args.n_boot}" if args.n_boot != 1000 else ""),
        "n_boot": args.n_boot,
        "dimensions": dims,
        "seconds": round(time.perf_counter() - start, 1),
    }
    print_tables(results)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(results, indent=1) + "\n", encoding="utf-8")
    print(f"\nwrote {args.out} ({results['seconds']} s)")


if __name__ == "__main__":
    main()
