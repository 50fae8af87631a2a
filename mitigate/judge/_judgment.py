"""What a judge returns: one :class:`Judgment` per item, with its scores, raw answers and parse failures
(kept with the raw answer, never turned into a score)."""

from __future__ import annotations

import statistics
from collections import Counter
from collections.abc import Iterable, Sequence
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from mitigate.errors import ConfigError
from mitigate.lm import Usage
from mitigate.parse import Verdict

Reducer = Literal["mean", "median", "majority"]


class ParseFailure(BaseModel):
    """A judge answer that held no acceptable score: kept with its raw text, never scored."""

    model_config = ConfigDict(frozen=True, extra="forbid")
    criterion: str
    raw: str
    reason: str
    sample: int = 0


class Judgment(BaseModel):
    """What a judge said about one item.

    ``scores``: the reduced score per criterion (None when every sample failed); ``samples``: every
    per-sample score; ``verdict``: a pairwise verdict; ``failures``: each parse failure; ``error``: an LM
    call that failed for good; ``flags``: decisions such as ``needs_human``; ``meta``: mitigations' details.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")
    item_id: str
    scores: dict[str, float | None] = Field(default_factory=dict)
    samples: dict[str, tuple[float | None, ...]] = Field(default_factory=dict)
    verdict: Verdict | None = None
    raw: tuple[str, ...] = ()
    failures: tuple[ParseFailure, ...] = ()
    error: str | None = None
    flags: tuple[str, ...] = ()
    usage: Usage = Field(default_factory=Usage)
    cost_usd: float | None = 0.0
    calls: int = 0
    cached_calls: int = 0
    meta: dict[str, Any] = Field(default_factory=dict)

    @property
    def ok(self) -> bool:
        """True when the call succeeded and every criterion (or the verdict) got a value."""
        if self.error is not None:
            return False
        if self.verdict is not None:
            return True
        return bool(self.scores) and all(v is not None for v in self.scores.values())

    def rows(self, criterion: str | None = None) -> list[dict[str, Any]]:
        """This judgment in long form: one row (``criterion``, ``order``, ``score``, ``verdict`` "A"/"B"/
        "tie", ``raw``, ``failure``, ``flags``) per criterion scored or per order a verdict was given in;
        ``criterion`` keeps only that criterion's rows."""
        failure = "; ".join([*(f.reason for f in self.failures), *([self.error] if self.error else [])])
        common = {"raw": "\n\n".join(self.raw), "failure": failure or None, "flags": ",".join(self.flags)}
        orders = self.meta.get("orders")
        pairwise = (
            self.verdict is not None
            or isinstance(orders, dict)
            or (not self.scores and not self.samples and bool(self.failures))  # a failed pairwise answer
        )
        if pairwise:
            crit = criterion if criterion is not None else next((f.criterion for f in self.failures), None)
            given = orders if isinstance(orders, dict) else {"original": self.verdict}
            return [
                {"criterion": crit, "order": o, "score": None, "verdict": _as_text(given.get(o), o), **common}
                for o in ("original", "swapped")
                if o in given
            ]
        crits: list[str | None] = [criterion] if criterion is not None else [*self.scores] or [None]
        only = next(iter(self.scores.values())) if len(self.scores) == 1 else None
        return [
            {
                "criterion": c,
                "order": None,
                "score": self.scores.get(c, only) if c is not None else None,
                "verdict": None,
                **common,
            }
            for c in crits
        ]

    def score(self, criterion: str | None = None) -> float | None:
        """The score for ``criterion`` (the only one when None)."""
        if criterion is None:
            if len(self.scores) != 1:
                raise ConfigError(
                    f"judgment {self.item_id!r} has scores for {sorted(self.scores)}; name the criterion"
                )
            return next(iter(self.scores.values()))
        return self.scores.get(criterion)


def _as_text(verdict: Any, order: str) -> str | None:
    """A verdict by position in ``order`` -> the text it prefers ("A", "B", "tie"); None if unreadable."""
    if verdict not in ("first", "second", "tie"):
        return None
    if verdict == "tie":
        return "tie"
    return "A" if (verdict == "first") == (order == "original") else "B"


def combine_costs(costs: Sequence[float | None]) -> float | None:
    """Sum of costs; None (unknown) when any part is unknown."""
    return None if any(c is None for c in costs) else sum((c for c in costs if c is not None), 0.0)


def reduce_samples(values: Sequence[float], reducer: Reducer) -> float:
    """Combine per-sample scores with the named reducer (majority ties go to the lower score)."""
    if not values:
        raise ConfigError("expected at least one parsed sample to reduce; got none")
    if reducer == "mean":
        return float(statistics.fmean(values))
    if reducer == "median":
        return float(statistics.median(values))
    counts = Counter(values)
    best = max(counts.values())
    return float(min(v for v, c in counts.items() if c == best))


def merge_judgments(item_id: str, parts: Sequence[Judgment], **fields: Any) -> Judgment:
    """One judgment from a fan-out's parts: usage, cost, calls, raw, failures and errors add up; ``fields``
    sets the merged judgment's own ``scores``, ``verdict``, ``meta`` ... (``error`` too)."""
    usage = sum((p.usage for p in parts), Usage())
    errors = [p.error for p in parts if p.error]
    base: dict[str, Any] = {
        "item_id": item_id,
        "raw": tuple(r for p in parts for r in p.raw),
        "failures": tuple(f for p in parts for f in p.failures),
        "error": "; ".join(errors) if errors else None,
        "usage": usage,
        "cost_usd": combine_costs([p.cost_usd for p in parts]),
        "calls": sum(p.calls for p in parts),
        "cached_calls": sum(p.cached_calls for p in parts),
        "flags": tuple(dict.fromkeys(f for p in parts for f in p.flags)),
    }
    base.update(fields)
    return Judgment(**base)


FRAME_COLUMNS = tuple(
    "entry item document system criterion order score verdict human raw failure flags".split()
)
"""The columns of the long-form tables of judge and compare results."""


def frame(rows: Iterable[dict[str, Any]], columns: Sequence[str] = FRAME_COLUMNS) -> Any:
    """``rows`` as a pandas DataFrame with ``columns`` (a ConfigError when pandas is missing)."""
    try:
        import pandas as pd
    except ImportError:
        raise ConfigError(
            "to_pandas() needs pandas; it is not installed (pip install 'mitigate[pandas]')"
        ) from None
    return pd.DataFrame(list(rows), columns=list(columns))
