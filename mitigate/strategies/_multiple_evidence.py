"""Pairwise judges asked in both orders: position swap (Shen et al. 2023), which keeps the verdicts that
survive the swap (``measures.position_bias`` reads the two recorded), and multiple-evidence with
balanced-position calibration (Wang et al. 2023).

:class:`MultipleEvidence` judges each item k times in each order with reasoning, averages the 2k verdicts, and
flags ``needs_human`` the items whose verdicts disagree most (entropy over both orders,
:func:`verdict_entropy`). ``meta["confidence"]`` serves :class:`~mitigate.strategies.SelectiveEvaluation`.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Sequence
from functools import partial
from typing import Any, ClassVar, Literal, Self

import numpy as np

from mitigate.constraints import Interval, Options
from mitigate.data import Benchmark, Item
from mitigate.errors import ConfigError, DataError
from mitigate.judge import (
    CompositeJudge,
    FitContext,
    Judge,
    Judgment,
    PlannedRequest,
    PromptJudge,
    merge_judgments,
)
from mitigate.parse import Verdict
from mitigate.registry import Tags, register
from mitigate.run import run
from mitigate.strategies._base import NEEDS_HUMAN, Mitigation, gather_children
from mitigate.strategies._edits import set_cot

FLIP: dict[str, Verdict] = {"first": "second", "second": "first", "tie": "tie"}
"""A verdict as seen from the other order of the two outputs."""

FLAG = "position_inconsistent"
"""Flag set when the verdict changes with the order of the two outputs."""


def swap_item(item: Item) -> Item:
    """A copy of a pairwise ``item`` with ``output`` and ``output_b`` exchanged."""
    if item.output_b is None:
        raise DataError(
            f"position swap needs a pairwise item with 'output' and 'output_b'; item {item.id!r} "
            "has no output_b",
            item_id=item.id,
        )
    return item.model_copy(update={"output": item.output_b, "output_b": item.output})


class PositionSwapJudge(CompositeJudge):
    """Runs a pairwise judge on the item (child "original") and on its swapped copy ("swapped"), and
    reconciles the verdicts.

    A flip gives "tie" (or no verdict with ``on_flip="abstain"``) and the flag ``position_inconsistent``;
    ``meta["orders"]`` holds both raw verdicts (the swapped one in swapped positions).
    """

    kind = "position-swap"

    def __init__(self, children: dict[str, Judge], *, on_flip: Literal["tie", "abstain"] = "tie") -> None:
        super().__init__(children)
        if set(children) != {"original", "swapped"}:
            raise ConfigError(f"expected children 'original' and 'swapped'; got {sorted(children)}")
        self.on_flip = on_flip

    def params(self) -> dict[str, Any]:
        return {"on_flip": self.on_flip}

    def _check_pairwise(self) -> None:
        answers = sorted({leaf.prompt.answer for leaf in self.leaves()})
        if answers != ["pairwise"]:
            raise ConfigError(
                "PositionSwap needs pairwise prompt judges (answer='pairwise'); got prompts "
                f"answering {answers}"
            )

    def requests(self, item: Item) -> list[PlannedRequest]:
        self._check_pairwise()
        return [
            *self.child_requests("original", item),
            *self.child_requests("swapped", swap_item(item), swapped=True),
        ]

    async def judge(self, item: Item) -> Judgment:
        self._check_pairwise()
        swapped = swap_item(item)
        first, second = await gather_children(
            [lambda: self.children["original"].judge(item), lambda: self.children["swapped"].judge(swapped)]
        )
        v1, v2 = first.verdict, second.verdict
        consistent = None if v1 is None or v2 is None else v1 == FLIP[v2]
        verdict: Verdict | None = v1 if consistent else None
        if consistent is False and self.on_flip == "tie":
            verdict = "tie"
        flags = [*first.flags, *second.flags, *([FLAG] if consistent is False else [])]
        meta = {"orders": {"original": v1, "swapped": v2}, "position_consistent": consistent}
        return merge_judgments(
            item.id, [first, second], verdict=verdict, flags=tuple(dict.fromkeys(flags)), meta=meta
        )


@register("mitigation", "position-swap")
class PositionSwap(Mitigation):
    """Judge each pair in both orders; keep verdicts that survive the swap.

    Parameters:
        on_flip: what a verdict that changes with the order becomes: "tie" or "abstain" (no verdict).

    The wrapped judge must be pairwise (ConfigError when judging) and items need ``output_b`` (DataError).
    """

    paper = "Shen et al. 2023"

    on_flip: Literal["tie", "abstain"] = "tie"
    parameter_constraints: ClassVar = {"on_flip": [Options("tie", "abstain")]}

    @classmethod
    def examples(cls) -> list[Mitigation]:
        return [cls(), cls(on_flip="abstain")]

    def wrap(self, judge: Judge) -> Judge:
        """A new judge running ``judge`` on the item and on its swapped copy."""
        return PositionSwapJudge({"original": judge, "swapped": judge}, on_flip=self.on_flip)


_VALUE = {"first": 1.0, "tie": 0.0, "second": -1.0}
OUTCOMES = ("first", "second", "tie", "failed")
"""What one sample can come to, for the entropy."""


def balanced_verdict(
    original: Sequence[str | None], swapped: Sequence[str | None]
) -> tuple[Verdict | None, float]:
    """The verdict averaged over both orders, and its mean (first = +1, tie = 0, second = −1)."""
    back = [FLIP[v] for v in swapped if v is not None]  # the swapped verdicts in the original order
    values = [_VALUE[v] for v in (*original, *back) if v is not None]
    if not values:
        return None, math.nan
    mean = float(np.mean(values))
    return ("first" if mean > 0 else "second" if mean < 0 else "tie"), mean


def verdict_entropy(original: Sequence[str | None], swapped: Sequence[str | None]) -> float:
    """Balanced position diversity entropy (Wang et al. 2023) of both orders' verdicts, in nats."""
    outcomes = [v if v is not None else "failed" for v in original]
    outcomes += [FLIP[v] if v is not None else "failed" for v in swapped]
    if not outcomes:
        return math.nan
    counts = np.array(list(Counter(outcomes).values()), dtype=float)
    p = counts / counts.sum()
    return float(-(p * np.log(p)).sum())


class MultipleEvidenceJudge(CompositeJudge):
    """k seeded reasoning samples of a pairwise judge in each order (children ``o*``, ``s*``), balanced."""

    kind = "multiple-evidence"

    def __init__(self, children: dict[str, Judge], *, entropy_threshold: float | None) -> None:
        super().__init__(children)
        self.entropy_threshold = entropy_threshold

    def params(self) -> dict[str, Any]:
        return {"entropy_threshold": self.entropy_threshold}

    def _check_pairwise(self) -> None:
        for leaf in self.leaves():
            if leaf.prompt.answer != "pairwise":
                raise ConfigError(
                    "MultipleEvidence needs pairwise prompt judges (answer='pairwise'); got a "
                    f"prompt answering {leaf.prompt.answer!r}"
                )

    def requests(self, item: Item) -> list[PlannedRequest]:
        self._check_pairwise()
        swapped = swap_item(item)
        return [
            r
            for n in self.children
            for r in (
                self.child_requests(n, swapped, swapped=True) if n[0] == "s" else self.child_requests(n, item)
            )
        ]

    async def judge(self, item: Item) -> Judgment:
        self._check_pairwise()
        swapped = swap_item(item)
        names = list(self.children)
        parts = await gather_children(
            [partial(self.children[n].judge, swapped if n[0] == "s" else item) for n in names]
        )
        verdicts = [(n[0], p.verdict if p.error is None else None) for n, p in zip(names, parts, strict=True)]
        orig = [v for order, v in verdicts if order == "o"]
        swap = [v for order, v in verdicts if order == "s"]
        verdict, mean = balanced_verdict(orig, swap)
        entropy = verdict_entropy(orig, swap)
        flags = [f for p in parts for f in p.flags]
        if self.entropy_threshold is not None and entropy >= self.entropy_threshold - 1e-12:
            flags.append(NEEDS_HUMAN)
        evidence = {"original": orig, "swapped": swap, "mean": None if math.isnan(mean) else mean}
        meta = {
            "evidence": {**evidence, "entropy": entropy, "threshold": self.entropy_threshold},
            "confidence": 1.0 - entropy / math.log(len(OUTCOMES)),
            "orders": {"original": orig[0] if orig else None, "swapped": swap[0] if swap else None},
        }
        return merge_judgments(item.id, parts, verdict=verdict, flags=tuple(dict.fromkeys(flags)), meta=meta)


@register("mitigation", "multiple-evidence")
class MultipleEvidence(Mitigation):
    """Multiple-evidence + balanced-position calibration, with the entropy human-in-the-loop rule (Wang et al.
    2023).

    Parameters:
        k: reasoning samples per order (2k calls per item).
        temperature: sampling temperature of the samples (> 0, so the rationales differ).
        max_tokens: the answer budget per sample.
        human_share: the share of training items with the highest entropy sent to humans (0: never).
    """

    paper = "Wang et al. 2023"

    declared_tags: ClassVar[Tags] = Tags(
        needs_fitting=True,
        calls_judge_while_fitting=True,
        needs_judge=True,
        pairwise_only=True,
        adds_reasoning=True,
    )
    k: int = 3
    temperature: float = 0.7
    max_tokens: int = 256
    human_share: float = 0.2
    seed: int = 0
    entropy_threshold_: float | None = None
    parameter_constraints: ClassVar = {
        "k": [Interval(int, 1)],
        "temperature": [Interval(float, 0, 2, closed="right")],
        "max_tokens": [Interval(int, 1)],
        "human_share": [Interval(float, 0, 1, closed="left")],
        "seed": [Interval(int, 0)],
        "entropy_threshold_": [Interval(float, 0), None],
    }

    @classmethod
    def examples(cls) -> list[Mitigation]:
        return [cls(), cls(k=1, human_share=0.0), cls(k=2, entropy_threshold_=0.5)]

    @property
    def tags(self) -> Tags:
        """As declared, except that nothing is learned when nothing goes to a human (``human_share=0``)."""
        return self.declared_tags if self.human_share > 0 else Tags(pairwise_only=True, adds_reasoning=True)

    @property
    def is_fitted(self) -> bool:
        return self.human_share == 0 or self.entropy_threshold_ is not None

    def _sample(self, judge: Judge, i: int) -> Judge:
        def leaf_fn(leaf: PromptJudge) -> Judge:
            prompt = set_cot(leaf.prompt, True, who="MultipleEvidence")
            return leaf.with_prompt(prompt).with_config(
                temperature=self.temperature, n=1, seed=self.seed + i, max_tokens=self.max_tokens
            )

        return judge.map_leaves(leaf_fn)

    def _judge(self, judge: Judge, threshold: float | None) -> MultipleEvidenceJudge:
        children = {f"{order}{i}": self._sample(judge, i) for order in "os" for i in range(self.k)}
        return MultipleEvidenceJudge(children, entropy_threshold=threshold)

    def wrap(self, judge: Judge) -> Judge:
        """A judge running k reasoning samples per order and balancing them."""
        if not self.is_fitted:
            raise ConfigError(
                "MultipleEvidence is not fitted; expected `m = m.fit(train, judge)` first (it "
                "sets the entropy threshold for human review), or human_share=0"
            )
        return self._judge(judge, self.entropy_threshold_ if self.human_share > 0 else None)

    async def learn(self, train: Benchmark, judge: Judge, ctx: FitContext) -> Self:
        """A fitted copy: the entropy at or above which the top ``human_share`` of training items lie."""
        if self.human_share == 0:
            return self
        desc = "fitting the multiple-evidence entropy threshold"
        judging = self._judge(judge, None)
        result = await run(
            judging, train.items, concurrency=ctx.concurrency, progress=ctx.progress, desc=desc
        )
        entropies = [j.meta["evidence"]["entropy"] for j in result.judgments if "evidence" in j.meta]
        if not entropies:
            raise ConfigError("MultipleEvidence.fit got no judgment to set the entropy threshold from")
        return self.model_copy(update={"entropy_threshold_": entropy_threshold(entropies, self.human_share)})


def entropy_threshold(entropies: Sequence[float], human_share: float) -> float:
    """The entropy at or above which the top ``human_share`` of ``entropies`` lie (Wang et al.'s top-β
    rule). Items tied with the cut are all flagged; when ``human_share`` rounds to no item, the threshold
    is above every entropy seen."""
    values = np.sort(np.asarray(entropies, dtype=float))[::-1]
    m = int(math.floor(human_share * len(values)))
    return float(values[0]) + 1.0 if m == 0 else float(values[m - 1])
