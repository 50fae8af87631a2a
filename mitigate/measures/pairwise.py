"""Position bias of a pairwise judge: verdicts on each pair in both orders (Shen et al. 2023, LLMBar).

Conventions: :mod:`mitigate.measures.base`.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from mitigate.errors import DataError
from mitigate.measures.base import Measure, batched_nanmean, resample_interval, share, undefined

__all__ = ["POSITION_VERDICTS", "position_bias"]


POSITION_VERDICTS = ("first", "second", "tie")
"""The verdicts a pairwise judge may give, by the position of the preferred text."""


def _verdict(v: str | None, where: str) -> str | None:
    if v is None:
        return None
    key = str(v).strip().lower()
    if key not in POSITION_VERDICTS:
        raise DataError(f"expected a verdict in {list(POSITION_VERDICTS)} or None in {where}; got {v!r}")
    return key


_SWAP = {"first": "second", "second": "first", "tie": "tie"}


def position_bias(
    original: Sequence[str | None], swapped: Sequence[str | None], *,
    ci: bool = False, n_boot: int = 1000, alpha: float = 0.05, seed: int = 0,
) -> Measure:
    """Position bias of a pairwise judge, from verdicts on each pair in original and swapped order.

    Verdicts are ``"first"``, ``"second"`` or ``"tie"`` (the position preferred; None for a
    parse failure). The swapped verdict is mapped back to the original order (first <->
    second); ``value`` is the share of items whose two verdicts then disagree (flips).
    ``extra["first_share"]`` is the share of all verdicts (both orders) that prefer the
    first position (0.5 = no position preference among non-ties), with ``second_share``
    and ``tie_share`` beside it. Shen et al. 2023 run their head-to-head both ways for this.

    ``value`` is of scored (items with a verdict in both orders). ``of_all`` is the flip
    rate over every pair with a failed verdict counted as a flip (not position-consistent),
    so ``1 - of_all`` is order consistency as LLMBar reports it (e.g. 323/419);
    ``extra["consistency_of_all"]`` gives that figure.
    """
    o = [_verdict(v, "original") for v in original]
    s = [_verdict(v, "swapped") for v in swapped]
    if len(o) != len(s):
        raise DataError(f"expected one swapped verdict per original verdict; got {len(o)} and {len(s)}")
    pairs = [(a, b) for a, b in zip(o, s, strict=True) if a is not None and b is not None]
    failed = len(o) - len(pairs)
    name = "position_flip_rate"
    if not pairs:
        return undefined(name, 0, failed, "no item has verdicts in both orders")
    flips = np.array([float(a != _SWAP[b]) for a, b in pairs])
    all_verdicts = [v for pair in pairs for v in pair]
    extra = {
        "n_flipped": int(flips.sum()),
        "first_share": all_verdicts.count("first") / len(all_verdicts),
        "second_share": all_verdicts.count("second") / len(all_verdicts),
        "tie_share": all_verdicts.count("tie") / len(all_verdicts),
    }
    extra["consistency_of_all"] = (len(flips) - int(flips.sum())) / len(o)
    interval = resample_interval(batched_nanmean, flips, n_boot=n_boot, alpha=alpha, seed=seed) if ci else None
    return share(name, flips, failed, failure_counts_as_hit=True, interval=interval, extra=extra)
