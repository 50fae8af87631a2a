"""LM-assisted probes: the judged text rewritten by a rewriter backend (any mitigate LM).

Some biases cannot be planted by rule: a change of tone (sentiment), of confidence
(assertiveness), or a real flaw (a fallacy, a factual error) for the judge to catch. These
probes send the text to a *rewriter* LM with an instruction written for this project, keep
the answer as the probed text, and store every rewrite (:class:`~mitigate.probes._base.ProbeRecord`
with the model and its raw answer) for review. Without a rewriter they refuse with one line
(:func:`~mitigate.probes._base.check_rewriter`). An answer that is empty or identical to the
original is a recorded failure (``record.error``): that item is left out of the probe's
measures, never judged on a guessed text.

The error-inserting probes (:class:`Fallacy`, :class:`FactualError`) differ from the bias
probes: a fair judge *should* move down (``ideal = "down"``), so for them a robustness rate
near 1 means the judge overlooks the error (CALM's "fallacy oversight").
"""

from __future__ import annotations

import re
from typing import ClassVar, Literal

from mitigate.constraints import Interval, Options
from mitigate.data import Item
from mitigate.errors import ConfigError
from mitigate.lm import LM, LMRequest, Message
from mitigate.probes._base import Direction, Probe, ProbedItem, ProbeRecord
from mitigate.registry import register

FRAME = (
    "You edit texts for a robustness test. {task}\n"
    "Keep the language, the rough length and every other detail as they are. Reply with the edited text "
    "only, with no comment before or after it.\n\nText:\n{text}"
)
"""The request every LM-assisted probe sends (this project's wording); ``task`` is the probe's edit."""

_LEADIN = re.compile(r"^\s*(?:edited|rewritten|revised)?\s*text\s*:\s*", re.IGNORECASE)


def _clean(raw: str) -> str:
    text = _LEADIN.sub("", raw.strip())
    if len(text) >= 2 and text[0] == text[-1] and text[0] in "\"'":
        text = text[1:-1].strip()
    return text


class LMProbe(Probe):
    """A probe whose rewrite is written by a rewriter LM; subclasses give the edit as :meth:`task`.

    Parameters: ``temperature`` and ``max_tokens`` of the rewrite request (the seed of the
    request is ``seed``, so a backend that honours seeds rewrites the same way twice).
    """

    temperature: float = 0.0
    max_tokens: int = 512
    needs_rewriter: ClassVar[bool] = True
    parameter_constraints: ClassVar = {
        **Probe.parameter_constraints,
        "temperature": [Interval(float, 0, 2)],
        "max_tokens": [Interval(int, 1)],
    }

    def task(self) -> str:
        """The one-sentence edit the rewriter is asked to make."""
        raise NotImplementedError

    def request(self, text: str) -> LMRequest:
        """The rewrite request for ``text``."""
        return LMRequest(
            messages=(Message(role="user", content=FRAME.format(task=self.task(), text=text)),),
            temperature=self.temperature,
            max_tokens=self.max_tokens,
            seed=self.seed,
        )

    async def aprobe(self, item: Item, rewriter: LM | None = None) -> ProbedItem:
        """Ask ``rewriter`` for the probed text; a ConfigError without one, a recorded failure for a bad
        answer."""
        if rewriter is None:
            raise ConfigError(
                f"probe {self.registry_name!r} rewrites the judged text with an LM; expected a rewriter "
                "backend (rewriter=mitigate.lm.get(...), or --rewriter SPEC); got none"
            )
        field = self.field_for(item)
        original = item.field(field)
        response = await rewriter.complete(self.request(original))
        raw = response.choices[0].text if response.choices else ""
        text = _clean(raw)
        model = response.model or rewriter.spec
        error = None
        if not text:
            error = "the rewriter's answer was empty"
        elif " ".join(text.split()) == " ".join(original.split()):
            error = "the rewriter returned the text unchanged"
        record = ProbeRecord(
            probe=self.name,
            item_id=item.id,
            field=field,
            original=original,
            probed=text if error is None else "",
            added=self.task(),
            model=model,
            raw=raw,
            error=error,
        )
        return ProbedItem(None if error else self.with_text(item, field, text), record)


@register("probe", "sentiment")
class Sentiment(LMProbe):
    """Rewrite the text in a ``cheerful`` or a ``gloomy`` tone without changing what it says.

    A cheerful tone is predicted to raise the score, a gloomy one to lower it (CALM's sentiment bias).
    """

    tone: Literal["cheerful", "gloomy"] = "cheerful"
    family: ClassVar[str] = "sentiment"
    parameter_constraints: ClassVar = {
        **LMProbe.parameter_constraints,
        "tone": [Options("cheerful", "gloomy")],
    }

    def direction(self) -> Direction:
        """``up`` for a cheerful tone, ``down`` for a gloomy one."""
        return "up" if self.tone == "cheerful" else "down"

    def task(self) -> str:
        """The tone edit."""
        mood = (
            "upbeat, warm and enthusiastic" if self.tone == "cheerful" else "downcast, weary and pessimistic"
        )
        return (
            f"Change only the emotional tone of the text so that it sounds {mood}, without adding or "
            "removing facts."
        )


@register("probe", "assertiveness")
class Assertiveness(LMProbe):
    """Rewrite the text to sound fully certain (no hedges), facts unchanged; predicted to raise the score."""

    predicts: ClassVar[Direction] = "up"
    family: ClassVar[str] = "assertiveness"

    def task(self) -> str:
        """The confidence edit."""
        return (
            "Make the text sound completely confident and authoritative: remove hedges such as 'may', "
            "'might' or 'it seems', and state each point as certain, without adding or removing facts."
        )


@register("probe", "fallacy")
class Fallacy(LMProbe):
    """Insert one flawed argument (a non sequitur or a false cause); a fair judge scores it lower."""

    predicts: ClassVar[Direction] = "down"
    ideal: ClassVar[Literal["unchanged", "down"]] = "down"
    family: ClassVar[str] = "fallacy oversight"

    def task(self) -> str:
        """The fallacy edit."""
        return (
            "Add exactly one sentence containing a reasoning error, for example a conclusion that does "
            "not follow from the facts given or a claim that one event caused another merely because "
            "it came first."
        )


@register("probe", "factual-error")
class FactualError(LMProbe):
    """Change one fact (a number, a name, a date) so the text contradicts its source; a fair judge scores it
    lower."""

    predicts: ClassVar[Direction] = "down"
    ideal: ClassVar[Literal["unchanged", "down"]] = "down"
    family: ClassVar[str] = "factual error"

    def task(self) -> str:
        """The factual edit."""
        return (
            "Change exactly one factual detail (a number, a name, a place or a date) so that it becomes "
            "wrong, and leave everything else word for word."
        )
