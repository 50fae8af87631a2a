"""What every adapter shares: a harness test case as an Item, a Judgment as one outcome.

A parse failure stays a failure (an :class:`Outcome` with ``score=None`` and ``error`` set), which each
adapter reports the way its harness marks a grader failure, never as a score.
"""

from __future__ import annotations

import math

from pydantic import BaseModel, ConfigDict

from mitigate.data import Item
from mitigate.errors import ConfigError
from mitigate.judge import Judge, Judgment, judge_scale
from mitigate.scale import Scale


class Outcome(BaseModel):
    """One judgment reduced to what a harness shows: ``score`` on the judge's scale, ``normalized`` mapped to
    0-1 over it, ``raw`` the judge's first raw answer, ``error`` why there is no score (else None)."""

    model_config = ConfigDict(frozen=True)
    score: float | None
    normalized: float | None
    raw: str
    error: str | None
    scale: Scale
    criterion: str

    @property
    def ok(self) -> bool:
        """True when the judge gave a score."""
        return self.score is not None and self.error is None


def make_item(
    output: str,
    input: str | None = None,
    *,
    expected: str | None = None,
    context: str | None = None,
    item_id: str = "item",
    input_field: str = "source",
) -> Item:
    """An Item from a harness test case: ``output`` the judged text, ``input`` in ``inputs[input_field]``
    (``source`` fills the slots ``{{source}}``, ``{{document}}``, ``{{article}}``, ``{{input}}``),
    ``expected`` the reference, ``context`` ``inputs["context"]``."""
    if not isinstance(output, str):
        raise ConfigError(f"expected the judged output as text; got {type(output).__name__}")
    inputs: dict[str, str] = {}
    if input is not None:
        inputs[input_field] = input
    if context is not None:
        inputs["context"] = context
    return Item(id=item_id or "item", output=output, inputs=inputs, reference=expected)


def shown_scale(judge: Judge, scale: Scale | None = None) -> Scale:
    """``scale`` when given, else the one scale the judge answers on (:func:`mitigate.judge.judge_scale`)."""
    if scale is not None:
        return scale
    found = judge_scale(judge)
    if found is None:
        raise ConfigError(
            f"expected a judge with a prompt scale; {type(judge).__name__} shows none: pass scale="
        )
    return found


def outcome(judgment: Judgment, scale: Scale, criterion: str | None = None) -> Outcome:
    """The outcome of ``judgment`` on ``criterion`` (the only one when None)."""
    raw = judgment.raw[0] if judgment.raw else ""
    if criterion is None:
        if len(judgment.scores) > 1:
            raise ConfigError(f"the judge scores {sorted(judgment.scores)}; expected criterion= naming one")
        criterion = next(iter(judgment.scores), "score")
    crit = criterion

    def made(score: float | None, error: str | None = None) -> Outcome:
        normalized = None if score is None else scale.normalise(score)
        return Outcome(score=score, normalized=normalized, raw=raw, error=error, scale=scale, criterion=crit)

    if judgment.error is not None:
        return made(None, f"the LM call failed: {judgment.error}")
    if crit not in judgment.scores:
        raise ConfigError(f"expected a judge scoring {crit!r}; it scores {sorted(judgment.scores)}")
    score = judgment.scores[crit]
    if score is None or not math.isfinite(score):
        reasons = [f.reason for f in judgment.failures if f.criterion == crit] or ["no score"]
        return made(None, f"the judge's answer held no score: {reasons[0]}")
    if not scale.contains(score):
        return made(None, f"expected a score within {scale.min:g} to {scale.max:g}; the judge gave {score:g}")
    return made(score)
