"""Pairwise scoring that keeps the distribution: both orders' verdict probabilities pooled into one preference
(TrustJudge, Wang et al. 2025).

``P(A) = (P_original(first) + P_swapped(second)) / 2``, ``P(B)`` the other way, ``P(tie)`` the mean of both; a
tie when most probable or ``|P(A) - P(B)| <= tie_margin``. Probabilities come from logprobs at the verdict
label or from sampled verdicts; ``meta`` records them per order (``orders``, as a position swap does).
"""

from __future__ import annotations

import asyncio
from collections import Counter
from typing import Any, ClassVar, Literal

from mitigate.constraints import Interval, Options
from mitigate.data import Item
from mitigate.errors import ConfigError, MitigateError, ParseError
from mitigate.judge import Judge, Judgment, ParseFailure, PlannedRequest, PromptJudge, combine_costs
from mitigate.lm import LMRequest, LMResponse, Usage
from mitigate.measures import preference_verdict
from mitigate.parse import Verdict, verdict_probabilities
from mitigate.prompt import AnswerFormat
from mitigate.registry import Tags, register
from mitigate.selectors import GOLD_VERDICT
from mitigate.strategies._base import LeafJudge, Mitigation
from mitigate.strategies._multiple_evidence import FLIP, swap_item

Source = Literal["logprobs", "samples"]


def pool_orders(
    original: dict[str, float], swapped: dict[str, float], tie_margin: float = 0.0
) -> tuple[dict[str, float], Verdict]:
    """The preference by text (A, B, tie) pooled from both orders' probabilities, and its verdict."""
    p = {
        "A": (original.get("first", 0.0) + swapped.get("second", 0.0)) / 2,
        "B": (original.get("second", 0.0) + swapped.get("first", 0.0)) / 2,
        "tie": (original.get("tie", 0.0) + swapped.get("tie", 0.0)) / 2,
    }
    return p, GOLD_VERDICT[preference_verdict(p, tie_margin)]


def check_readable(fmt: AnswerFormat) -> None:
    """ConfigError unless ``fmt`` names its verdict by a label whose probability logprobs can give."""
    reasons = {
        "relations such as A>>B": fmt.relations,
        "two scores": fmt.two_scores,
        "a JSON object": fmt.json_key is not None,
    }
    why = next((why for why, found in reasons.items() if found), None)
    if why is not None:
        raise ConfigError(
            f"verdict logprobs are read at the label the judge writes; this format answers with {why} "
            f"({fmt.describe()}): expected a label format such as [[A]] / [[B]], or source='samples'"
        )


def read_verdict(positions: Any, fmt: AnswerFormat) -> Any:
    """:func:`~mitigate.parse.verdict_probabilities` told the format's labels, tie and answer line."""
    lead = fmt.line.split("{value}", 1)[0] if "{value}" in fmt.line else ""
    labels, first = (fmt.labels[0], fmt.labels[1]), fmt.reasoning == "after"
    return verdict_probabilities(
        positions, labels, fmt.tie, lead=lead, case_sensitive=fmt.case_sensitive, answer_first=first
    )


def _most_common(verdicts: list[str]) -> str | None:
    if not verdicts:
        return None
    counts = Counter(verdicts).most_common()
    return counts[0][0] if len(counts) == 1 or counts[0][1] > counts[1][1] else "tie"


class DistributionJudge(LeafJudge):
    """One pairwise prompt judge asked in both orders, its verdict probabilities pooled."""

    name = "pairwise-distribution"

    def __init__(self, leaf: PromptJudge, *, source: Source, top_logprobs: int, tie_margin: float) -> None:
        if leaf.prompt.answer != "pairwise":
            raise ConfigError(
                "pairwise-distribution pools the verdicts of a pairwise judge; got a prompt "
                f"answering {leaf.prompt.answer!r}"
            )
        if source == "logprobs":
            check_readable(leaf.prompt.format)
        self.leaf, self.source, self.top_logprobs, self.tie_margin = leaf, source, top_logprobs, tie_margin

    def around(self, leaf: PromptJudge) -> Judge:
        return DistributionJudge(
            leaf, source=self.source, top_logprobs=self.top_logprobs, tie_margin=self.tie_margin
        )

    def describe(self) -> dict[str, Any]:
        settings = {"source": self.source, "top_logprobs": self.top_logprobs, "tie_margin": self.tie_margin}
        return {"kind": "pairwise-distribution", **settings, "leaf": self.leaf.describe()}

    def score_bounds(self) -> dict[str, tuple[float, float]] | None:
        return {}

    def request(self, item: Item) -> LMRequest:
        """The leaf's request for ``item``, with token logprobs asked for when the source is logprobs."""
        req = self.leaf.request(item)
        if self.source != "logprobs":
            return req
        return req.model_copy(update={"logprobs": True, "top_logprobs": self.top_logprobs})

    def _reads(self) -> str:
        if self.source == "logprobs":
            how = f"from the top-{self.top_logprobs} logprobs at the verdict label"
        else:
            how = f"as the shares of {self.leaf.config.n} sampled verdicts"
        return f"verdict probabilities {how}; pooled with the other order's (swap undone)"

    def requests(self, item: Item) -> list[PlannedRequest]:
        self._check_samples()
        swapped = swap_item(item)
        return [
            self.leaf.plan(self.request(item), item, self._reads()).under("original"),
            self.leaf.plan(self.request(swapped), swapped, self._reads()).under("swapped", swapped=True),
        ]

    def _check_samples(self) -> None:
        if self.source == "samples" and (self.leaf.config.n < 2 or self.leaf.config.temperature <= 0):
            raise ConfigError(
                "pairwise-distribution with samples needs several samples at a temperature above 0; the "
                f"judge asks n={self.leaf.config.n} at temperature {self.leaf.config.temperature:g} (a later "
                "sampling step changed them?): expected n >= 2 and temperature > 0"
            )

    async def _order(
        self, item: Item, name: str
    ) -> tuple[LMResponse, dict[str, float] | None, str | None, list[ParseFailure]]:
        """One order's response, verdict distribution by position (or None), hard verdict and failures."""
        request = self.request(item)
        response = await self.leaf.lm.complete(request)
        fmt, scale = self.leaf.prompt.format, self.leaf.prompt.scale
        as_json = request.constraint is not None and request.constraint.mode == "json"
        crit = self.leaf.prompt.criteria[0].name if self.leaf.prompt.criteria else "score"
        failures: list[ParseFailure] = []
        parsed: list[str] = []
        dists: list[dict[str, float]] = []
        for idx, choice in enumerate(response.choices):
            try:
                verdict = str(fmt.read_json(choice.text, scale) if as_json else fmt.read(choice.text, scale))
                if self.source == "logprobs":
                    if choice.logprobs is None:
                        raise ParseError(
                            "expected token logprobs in the response; the backend returned none",
                            raw=choice.text,
                        )
                    read = read_verdict(choice.logprobs, fmt)
                    if read.generated != verdict:
                        raise ParseError(
                            f"the label at the verdict position ({read.generated!r}) is not the "
                            f"verdict the answer's text gives ({verdict!r})",
                            raw=choice.text,
                        )
                    dists.append(read.probabilities)
            except ParseError as exc:
                failures.append(
                    ParseFailure(criterion=crit, raw=choice.text, reason=f"{name}: {exc.message}", sample=idx)
                )
                continue
            parsed.append(verdict)
        keys = ["first", "second", "tie"]
        if self.source == "logprobs":
            dist = {k: sum(d.get(k, 0.0) for d in dists) / len(dists) for k in keys} if dists else None
        else:
            counts = Counter(parsed)
            dist = {k: counts.get(k, 0) / len(parsed) for k in keys} if parsed else None
        return response, dist, _most_common(parsed), failures

    async def judge(self, item: Item) -> Judgment:
        self._check_samples()
        swapped = swap_item(item)
        results = await asyncio.gather(
            self._order(item, "original"), self._order(swapped, "swapped"), return_exceptions=True
        )
        errors = [r for r in results if isinstance(r, BaseException)]
        for r in errors:
            if not isinstance(r, MitigateError):
                raise r
        if errors:  # a failed call fails the pair
            return Judgment(item_id=item.id, error="; ".join(f"{type(e).__name__}: {e}" for e in errors))
        (r1, d1, v1, f1), (r2, d2, v2, f2) = results  # type: ignore[misc]
        meta: dict[str, Any] = {
            "orders": {"original": v1, "swapped": v2},
            "order_probabilities": {"original": d1, "swapped": d2},
            "source": self.source,
            "position_consistent": None if v1 is None or v2 is None else v1 == FLIP[v2],
        }
        verdict: Verdict | None = None
        if d1 is not None and d2 is not None:
            pooled, verdict = pool_orders(d1, d2, self.tie_margin)
            meta["preference"] = pooled
        both = (r1, r2)
        return Judgment(
            item_id=item.id,
            verdict=verdict,
            raw=tuple(c.text for r in both for c in r.choices),
            failures=tuple(f1 + f2),
            usage=Usage() + r1.usage + r2.usage,
            cost_usd=combine_costs([0.0 if r.cached else r.cost_usd for r in both]),
            calls=sum(not r.cached for r in both),
            cached_calls=sum(r.cached for r in both),
            meta=meta,
        )


@register("mitigation", "pairwise-distribution")
class PairwiseDistribution(Mitigation):
    """Judge each pair in both orders and pool the verdict probabilities into one preference (Wang et al.
    2025, TrustJudge).

    Parameters:
        source: "logprobs", "samples" (sampled verdicts) or "auto" (logprobs when the backend gives them).
        samples: verdicts sampled per order with ``source="samples"`` (sets the judge's n).
        temperature: sampling temperature with ``source="samples"``.
        top_logprobs: alternatives read at the verdict token with ``source="logprobs"``.
        tie_margin: the verdict is a tie when the two texts' pooled probabilities differ by no more than this.
    """

    paper = "Wang et al. 2025 (TrustJudge)"

    declared_tags: ClassVar[Tags] = Tags(pairwise_only=True)
    source: Literal["auto", "logprobs", "samples"] = "auto"
    samples: int = 5
    temperature: float = 0.7
    top_logprobs: int = 10
    tie_margin: float = 0.0
    parameter_constraints: ClassVar = {
        "source": [Options("auto", "logprobs", "samples")],
        "samples": [Interval(int, 2)],
        "temperature": [Interval(float, 0, 2, closed="right")],
        "top_logprobs": [Interval(int, 1, 20)],
        "tie_margin": [Interval(float, 0, 1)],
    }

    @classmethod
    def examples(cls) -> list[Mitigation]:
        return [cls(), cls(source="samples", samples=4, temperature=1.0, tie_margin=0.1)]

    def wrap(self, judge: Judge) -> Judge:
        """Every prompt judge of ``judge`` asked in both orders, its verdict probabilities pooled."""
        return judge.map_leaves(self._leaf)

    def _leaf(self, leaf: PromptJudge) -> Judge:
        source: Source = (
            self.source if self.source != "auto" else ("logprobs" if leaf.lm.supports_logprobs else "samples")
        )
        if source == "samples":
            leaf = leaf.with_config(n=self.samples, temperature=self.temperature)
        return DistributionJudge(
            leaf, source=source, top_logprobs=self.top_logprobs, tie_margin=self.tie_margin
        )
