"""How many ranks each system's simultaneous rank set holds: from every pairwise contrast (what ``mitigate
estimate`` now does) against per-group Bonferroni intervals (what it did), on SummEval's released ChatGPT RTS
judge with 10 expert labels kept per system (20 seeded draws per criterion).

Run: ``python benchmarks/estimate_rank_sets.py`` (about 15 s; needs the shared data folder).
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # runs from a checkout without installing

from mitigate.data import hide_labels, load_summeval, released_recorded
from mitigate.estimators import estimate, rank_estimates


def main() -> None:
    bench = load_summeval()
    run = released_recorded("chatgpt-rts")
    for crit in ("coherence", "consistency", "fluency", "relevance"):
        by_contrasts, by_groups = [], []
        for seed in range(20):
            hidden, _ = hide_labels(bench, crit, per_group=10, seed=seed, group=lambda it: str(it.system))
            result = estimate(hidden, crit, run)
            assert result.ranking is not None
            groups = rank_estimates({g.group: g.estimate for g in result.groups}, 0.95)
            by_contrasts.append(np.mean([r.high - r.low + 1 for r in result.ranking.ranks]))
            by_groups.append(np.mean([r.high - r.low + 1 for r in groups.ranks]))
        print(
            f"{crit:12s} ranks per set: contrasts {np.mean(by_contrasts):.2f}, "
            f"per-group Bonferroni {np.mean(by_groups):.2f} (of 12)"
        )


if __name__ == "__main__":
    main()
