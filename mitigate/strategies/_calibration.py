"""Calibration of logprob scores: contextual (Zhao et al. 2021) and batch calibration (Zhou et al. 2024).

Both divide the answer distribution by an estimate of the judge's prior, ``q(y | x) ∝ p(y | x) / p̄(y)``: the
mean distribution on *content-free* inputs, or over a batch of real ones. No labels are needed; priors are
fitted per leaf judge (``priors_``).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any, ClassVar, Self

from mitigate.constraints import Interval, IsInstance, Satisfies
from mitigate.data import Benchmark, Item
from mitigate.errors import ConfigError, ParseError
from mitigate.judge import (
    FitContext,
    Judge,
    Judgment,
    ParseFailure,
    PlannedRequest,
    PromptJudge,
    reduce_samples,
)
from mitigate.lm import LMRequest, TokenLogprob
from mitigate.parse import score_distribution
from mitigate.registry import Tags, register
from mitigate.strategies._base import LeafJudge, Mitigation
from mitigate.strategies._sampling import asks_for_reasoning

FLOOR = 1e-3
"""The smallest prior probability divided by (an answer the prior never gives is not blown up)."""

CONTENT_FREE = ("N/A", "", "[MASK]")
"""Zhao et al. (2021)'s content-free inputs."""


def _clean(token: str) -> str:
    return token.replace("Ġ", " ").replace("▁", " ").strip().strip("#([").strip(")]").strip()


def verdict_distribution(
    positions: Sequence[TokenLogprob], labels: tuple[str, str] = ("1", "2"), tie: str | None = None
) -> dict[str, float]:
    """Probability of "first", "second" (and "tie") at the first position that generated a label,
    renormalised. ``labels`` name the two outputs as the prompt does ("1"/"2", "A"/"B"), ``tie`` the tie
    option; ParseError when no generated token is a label."""
    names = {labels[0]: "first", labels[1]: "second", **({tie: "tie"} if tie else {})}
    keys = ["first", "second", *(["tie"] if tie else [])]
    for pos in positions:
        if _clean(pos.token) not in names:
            continue
        mass = dict.fromkeys(keys, 0.0)
        seen: set[str] = set()
        for tok, lp in (*pos.top, (pos.token, pos.logprob)):
            if tok in seen:
                continue
            seen.add(tok)
            key = names.get(_clean(tok))
            if key is not None:
                mass[key] += math.exp(lp)
        total = sum(mass.values())
        return {k: v / total for k, v in mass.items()}
    raw = "".join(p.token for p in positions)
    raise ParseError(f"expected a generated token naming one of {sorted(names)}; got {raw[:80]!r}", raw=raw)


def answer_support(leaf: PromptJudge, labels: tuple[str, str], tie: str | None) -> tuple[str, ...]:
    """The answers a leaf's distribution is over: its scale's integer points, or the pairwise verdicts."""
    if leaf.prompt.answer == "pairwise":
        return ("first", "second", *(("tie",) if tie else ()))
    return tuple(str(v) for v in leaf.prompt.scale.integer_points())


def calibrate(p: dict[str, float], prior: Sequence[float], support: Sequence[str]) -> dict[str, float]:
    """``q(y) ∝ p(y) / max(prior(y), FLOOR)`` over ``support``, renormalised."""
    raw = [p.get(y, 0.0) / max(w, FLOOR) for y, w in zip(support, prior, strict=True)]
    total = sum(raw)
    if total <= 0:
        raise ParseError("the answer distribution has no mass on the calibrated answers", raw="")
    return {y: r / total for y, r in zip(support, raw, strict=True)}


class CalibratedJudge(LeafJudge):
    """A prompt judge read through its answer distribution, divided by a prior (None: uncalibrated). Scores
    the expected value (score prompts) or the most probable verdict (pairwise); ``meta["calibration"]``
    holds the method and the first sample's distributions before and after. A sample without a readable
    distribution is a recorded parse failure."""

    def __init__(
        self,
        leaf: PromptJudge,
        prior: tuple[float, ...] | None,
        *,
        method: str,
        top_logprobs: int,
        labels: tuple[str, str],
        tie: str | None,
    ) -> None:
        why = asks_for_reasoning(leaf.prompt)
        if why is not None:
            raise ConfigError(
                f"{method} calibration reads the probabilities of the judge's first answer token, so it "
                f"needs a direct answer; got a prompt that asks for {why}"
            )
        self.leaf, self.prior, self.method, self.name = leaf, prior, method, f"{method} calibration"
        self.top_logprobs, self.labels, self.tie = top_logprobs, labels, tie
        self._settings: dict[str, Any] = dict(
            method=method, top_logprobs=top_logprobs, labels=labels, tie=tie
        )
        self.support = answer_support(leaf, labels, tie)
        if prior is not None and len(prior) != len(self.support):
            raise ConfigError(
                f"expected a prior over the {len(self.support)} answers {list(self.support)}; got "
                f"{len(prior)} values (was the calibration fitted on another prompt?)"
            )

    def around(self, leaf: PromptJudge) -> Judge:
        return CalibratedJudge(leaf, self.prior, **self._settings)

    def describe(self) -> dict[str, Any]:
        return {"kind": "calibrated", "prior": self.prior, **self._settings, "leaf": self.leaf.describe()}

    def distribution(self, positions: Sequence[TokenLogprob] | None) -> dict[str, float]:
        """The uncalibrated answer distribution of one sample (ParseError when unreadable)."""
        if positions is None:
            raise ParseError("expected token logprobs in the response; the backend returned none", raw="")
        if self.leaf.prompt.answer == "pairwise":
            return verdict_distribution(positions, self.labels, self.tie)
        dist = score_distribution(positions, self.leaf.prompt.scale)
        return {y: dist.get(int(y), 0.0) for y in self.support}

    def request(self, item: Item) -> LMRequest:
        """The leaf's request for ``item`` with token logprobs asked for."""
        return self.leaf.request(item).model_copy(
            update={"logprobs": True, "top_logprobs": self.top_logprobs}
        )

    def requests(self, item: Item) -> list[PlannedRequest]:
        how = (
            f"{self.method} calibration of the answer distribution over {list(self.support)} (top-"
            f"{self.top_logprobs} logprobs)"
            if self.prior is not None
            else f"the answer distribution over {list(self.support)} (uncalibrated)"
        )
        return [self.leaf.plan(self.request(item), item, how)]

    async def judge(self, item: Item) -> Judgment:
        request = self.request(item)
        response = await self.leaf.lm.complete(request)
        name = self.leaf.prompt.criteria[0].name if self.leaf.prompt.criteria else "score"
        failures: list[ParseFailure] = []
        raw_dists: list[dict[str, float]] = []
        cal_dists: list[dict[str, float]] = []
        for idx, choice in enumerate(response.choices):
            try:
                p = self.distribution(choice.logprobs)
                q = calibrate(p, self.prior, self.support) if self.prior is not None else p
            except ParseError as exc:
                failures.append(ParseFailure(criterion=name, raw=choice.text, reason=exc.message, sample=idx))
                continue
            raw_dists.append(p)
            cal_dists.append(q)
        method = self.method if self.prior is not None else "none"
        first = {"p": raw_dists[0], "q": cal_dists[0]} if raw_dists else {"p": None, "q": None}
        meta: dict[str, Any] = {"calibration": {"method": method, **first}}
        common: dict[str, Any] = {
            "item_id": item.id,
            "raw": tuple(c.text for c in response.choices),
            "failures": tuple(failures),
            "usage": response.usage,
            "cost_usd": 0.0 if response.cached else response.cost_usd,
            "calls": 0 if response.cached else 1,
            "cached_calls": 1 if response.cached else 0,
        }
        if self.leaf.prompt.answer == "pairwise":
            mean_q = (
                {y: sum(q[y] for q in cal_dists) / len(cal_dists) for y in self.support} if cal_dists else {}
            )
            verdict = _most_probable(mean_q) if mean_q else None
            meta["calibration"]["mean_q"] = mean_q or None
            return Judgment(verdict=verdict, meta=meta, **common)  # type: ignore[arg-type]
        scores = [_expected(q) for q in cal_dists]
        meta["calibration"]["uncalibrated"] = [_expected(p) for p in raw_dists]
        score = reduce_samples(scores, self.leaf.config.reducer) if scores else None
        samples = tuple(scores) + (None,) * len(failures)
        return Judgment(scores={name: score}, samples={name: samples}, meta=meta, **common)


def _expected(dist: dict[str, float]) -> float:
    return sum(float(y) * p for y, p in dist.items())


def _most_probable(dist: dict[str, float]) -> str:
    """The verdict with the highest probability; an exact tie between first and second is "tie"."""
    top = max(dist.values())
    best = [y for y, p in dist.items() if p == top]
    return best[0] if len(best) == 1 else "tie"


_LABELS = Satisfies(
    lambda v: (
        isinstance(v, (tuple, list))
        and len(v) == 2
        and all(isinstance(x, str) and x for x in v)
        and v[0] != v[1]
    ),
    "a pair of two different non-empty strings",
)
_PRIORS = Satisfies(
    lambda v: (
        isinstance(v, (tuple, list))
        and all(
            isinstance(p, (tuple, list)) and p and all(isinstance(x, (int, float)) and x >= 0 for x in p)
            for p in v
        )
    ),
    "a tuple of prior distributions (one tuple of non-negative floats per leaf judge)",
)


class _Calibration(Mitigation):
    """What both calibrations share: read logprobs, divide by a fitted prior per leaf judge."""

    declared_tags: ClassVar[Tags] = Tags(needs_fitting=True, calls_judge_while_fitting=True, needs_judge=True)
    method: ClassVar[str] = ""
    top_logprobs: int = 10
    labels: tuple[str, str] = ("1", "2")
    tie: str | None = None
    priors_: tuple[tuple[float, ...], ...] | None = None
    parameter_constraints: ClassVar = {
        "top_logprobs": [Interval(int, 1, 20)],
        "labels": [_LABELS],
        "tie": [IsInstance(str), None],
        "priors_": [_PRIORS, None],
    }

    @property
    def is_fitted(self) -> bool:
        return self.priors_ is not None

    def _leaf_judge(self, leaf: PromptJudge, prior: tuple[float, ...] | None) -> CalibratedJudge:
        return CalibratedJudge(
            leaf, prior, method=self.method, top_logprobs=self.top_logprobs, labels=self.labels, tie=self.tie
        )

    def wrap(self, judge: Judge) -> Judge:
        """The judge with every leaf read through its calibrated answer distribution."""
        if self.priors_ is None:
            raise ConfigError(
                f"{type(self).__name__} is not fitted; expected `m = m.fit(train, judge)` first (it "
                "estimates the judge's answer prior)"
            )
        n_leaves = len(judge.leaves())
        if n_leaves != len(self.priors_):
            raise ConfigError(
                f"{type(self).__name__} was fitted on a judge with {len(self.priors_)} prompt judges; this "
                f"one has {n_leaves} (fit it on the judge it wraps)"
            )
        priors = iter(self.priors_)
        return judge.map_leaves(lambda leaf: self._leaf_judge(leaf, tuple(next(priors))))

    def fit_items(self, train: Benchmark) -> list[Item]:
        """The inputs whose mean answer distribution is the prior."""
        raise NotImplementedError

    async def learn(self, train: Benchmark, judge: Judge, ctx: FitContext) -> Self:
        """A fitted copy: the mean answer distribution of each leaf judge over :meth:`fit_items`."""
        from mitigate.run import run

        items = self.fit_items(train)
        priors: list[tuple[float, ...]] = []
        for leaf in judge.leaves():
            reader = self._leaf_judge(leaf, None)
            desc = f"fitting {self.method} calibration"
            result = await run(reader, items, concurrency=ctx.concurrency, progress=ctx.progress, desc=desc)
            dists = [d for j in result.judgments if (d := j.meta.get("calibration", {}).get("p"))]
            if not dists:
                reasons = {f.reason for j in result.judgments for f in j.failures} | {
                    j.error for j in result.judgments if j.error
                }
                raise ConfigError(
                    f"{type(self).__name__}.fit read no answer distribution from the judge on {len(items)} "
                    "inputs; expected token logprobs at a direct answer (got: "
                    f"{sorted(str(r) for r in reasons)[:2]})"
                )
            priors.append(tuple(sum(d[y] for d in dists) / len(dists) for y in reader.support))
        return self.model_copy(update={"priors_": tuple(priors)})


@register("mitigation", "contextual-calibration")
class ContextualCalibration(_Calibration):
    """Contextual calibration (Zhao et al. 2021): divide by the answer distribution on content-free inputs.

    Parameters:
        content_free: the texts put in every slot of copies of the first training item.
        top_logprobs: alternatives per position to request (1 to 20; the whole scale should fit).
        labels, tie: how a pairwise prompt names the two outputs and the tie option.
    """

    paper = "Zhao et al. 2021"

    method: ClassVar[str] = "contextual"
    content_free: tuple[str, ...] = CONTENT_FREE
    parameter_constraints: ClassVar = {
        **_Calibration.parameter_constraints,
        "content_free": [
            Satisfies(
                lambda v: isinstance(v, (tuple, list)) and len(v) > 0 and all(isinstance(x, str) for x in v),
                "a non-empty tuple of strings",
            )
        ],
    }

    @classmethod
    def examples(cls) -> list[Mitigation]:
        return [cls(), cls(priors_=((0.1, 0.1, 0.2, 0.3, 0.3),), content_free=("N/A",))]

    def fit_items(self, train: Benchmark) -> list[Item]:
        if not train.items:
            raise ConfigError(
                "ContextualCalibration.fit needs one training item to copy the fields of; got none"
            )
        first = train.items[0]
        return [
            Item(
                id=f"content-free-{i}",
                output=text,
                inputs=dict.fromkeys(first.inputs, text),
                output_b=text if first.output_b is not None else None,
                reference=text if first.reference is not None else None,
            )
            for i, text in enumerate(self.content_free)
        ]


@register("mitigation", "batch-calibration")
class BatchCalibration(_Calibration):
    """Batch calibration (Zhou et al. 2024): divide by the mean answer distribution over a calibration batch.

    Parameters:
        max_items: the most training items averaged over (the first ones; None: all; labels unused).
        top_logprobs, labels, tie: as for :class:`ContextualCalibration`.
    """

    paper = "Zhou et al. 2024"

    method: ClassVar[str] = "batch"
    max_items: int | None = None
    parameter_constraints: ClassVar = {
        **_Calibration.parameter_constraints,
        "max_items": [Interval(int, 1), None],
    }

    @classmethod
    def examples(cls) -> list[Mitigation]:
        return [cls(max_items=50), cls(priors_=((0.05, 0.15, 0.2, 0.3, 0.3),))]

    def fit_items(self, train: Benchmark) -> list[Item]:
        items = list(train.items[: self.max_items] if self.max_items else train.items)
        if not items:
            raise ConfigError("BatchCalibration.fit needs training items to average over; got none")
        return items
