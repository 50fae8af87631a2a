"""What a judge returns: one :class:`Judgment` per item, with its scores, raw answers and parse failures
(kept with the raw answer, never turned into a score); how a prompt judge calls its LM (:class:`JudgeConfig`,
:func:`answer_mode`) and the requests a judge would send, listed without calling it
(:class:`PlannedRequest`)."""

from __future__ import annotations

import statistics
from collections import Counter
from collections.abc import Iterable, Sequence
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from mitigate.errors import ConfigError
from mitigate.lm import LM, LMRequest, Usage
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


class JudgeConfig(BaseModel):
    """How a prompt judge calls its LM and turns answers into scores.

    - ``temperature``, ``n`` (samples), ``max_tokens``, ``stop``, ``seed``: passed to the LM.
    - ``reducer``: how ``n`` samples become one score (mean, median, majority).
    - ``scoring``: "parse" reads the score from the text; "expected" the probability-weighted score over
      the scale from the top-k token logprobs (G-Eval style; needs a backend with logprobs).
    - ``constrain``: whether the backend must enforce the answer format: "format" (the template's own, by
      grammar or regex), "json" (a JSON object with the answer), "answer" (the answer line alone, without
      reasoning: what a logprob-read answer needs), "auto" ("format" when the backend can enforce it, else
      none) or "off". The raw text is still parsed strictly, in the format the request asked for.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")
    temperature: float = 0.0
    n: int = 1
    max_tokens: int = 256
    stop: tuple[str, ...] = ()
    seed: int | None = None
    reducer: Reducer = "mean"
    scoring: Literal["parse", "expected"] = "parse"
    top_logprobs: int = 10
    constrain: Literal["auto", "format", "answer", "json", "off"] = "auto"

    @field_validator("n", "max_tokens")
    @classmethod
    def _positive(cls, v: int) -> int:
        if v < 1:
            raise ConfigError(f"expected an int >= 1; got {v}")
        return v

    @field_validator("temperature")
    @classmethod
    def _temp(cls, v: float) -> float:
        if not 0.0 <= v <= 2.0:
            raise ConfigError(f"expected a temperature between 0 and 2; got {v}")
        return v


class PlannedRequest(BaseModel):
    """One LM request a judge would send for an item, listed without calling the LM: where in the fan-out it
    comes from (``path``), how its answer is read (``reads``), the ``condition`` it is sent under, and the
    backend's one-line refusal (``refused``) when it cannot take it."""

    model_config = ConfigDict(frozen=True, extra="forbid")
    path: tuple[str, ...] = ()
    item_id: str
    swapped: bool = False
    backend: str
    request: LMRequest
    reads: str = "parse"
    condition: str | None = None
    refused: str | None = None
    backend_fields: dict[str, Any] = Field(default_factory=dict)

    @property
    def label(self) -> str:
        """The path joined with " / " ("judge" for a plain prompt judge)."""
        return " / ".join(self.path) or "judge"

    def under(
        self, name: str, *, condition: str | None = None, swapped: bool | None = None
    ) -> PlannedRequest:
        """This request placed under the fan-out child ``name`` (and its condition)."""
        conds = [c for c in (condition, self.condition) if c]
        update: dict[str, Any] = {"path": (name, *self.path), "condition": "; ".join(conds) or None}
        if swapped is not None:
            update["swapped"] = swapped != self.swapped
        return self.model_copy(update=update)


def answer_mode(lm: LM, scoring: str = "auto", constrain: str = "auto") -> dict[str, str]:
    """``JudgeConfig`` fields for how ``lm``'s answers become scores; "auto" picks what measured best: the
    embedded default model's answer is read from its logprobs at the score position (see RESULTS.md), any
    other backend's parsed from its text. Explicit values are kept."""
    if scoring == "auto":
        scoring = "expected" if lm.spec == "local" else "parse"  # "local": the embedded default model
    if constrain == "auto" and scoring == "expected" and "format" in lm.constraint_modes():
        constrain = "answer"
    return {"scoring": scoring, "constrain": constrain}
