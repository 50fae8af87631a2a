"""Single-attribute decomposition and its multi-attribute control (Stureborg et al. 2024).

Scoring several criteria in one output anchors the later scores on the earlier ones: :class:`SingleAttribute`
scores one criterion per call (a free-form template gets a "For this request, rate only <criterion> ..."
paragraph), :class:`MultiAttribute` scores them together in a set order, recording positions.
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from functools import partial
from typing import Any, ClassVar, Literal

from pydantic import model_validator

from mitigate.constraints import Options, Satisfies
from mitigate.data import Item
from mitigate.errors import ConfigError
from mitigate.judge import CompositeJudge, Judge, Judgment, PromptJudge, merge_judgments
from mitigate.prompt import Criterion, JudgePrompt
from mitigate.registry import register
from mitigate.strategies._base import Mitigation, gather_children
from mitigate.strategies._edits import (
    ONLY_LEAD,
    is_multi_criterion_template,
    multi_criterion_prompt,
    only_paragraph,
    refresh_addenda,
    set_addendum,
)


class SingleAttributeJudge(CompositeJudge):
    """One child judge per criterion; their scores are merged into one judgment. ``meta["criteria"]`` lists
    the criteria, a child's own meta goes under ``meta["children"][<criterion>]``; an LM error of a child
    is re-raised once every child finished."""

    kind = "single-attribute"
    requests_are_children = True

    def __init__(self, children: dict[str, Judge], *, concurrent: bool = True) -> None:
        super().__init__(children)
        self.concurrent = concurrent

    def params(self) -> dict[str, Any]:
        return {"criteria": list(self.children), "concurrent": self.concurrent}

    async def judge(self, item: Item) -> Judgment:
        names = list(self.children)
        calls = [partial(self.children[n].judge, item) for n in names]
        parts = await gather_children(calls, concurrent=self.concurrent)
        scores = {c: v for part in parts for c, v in part.scores.items()}
        samples = {c: v for part in parts for c, v in part.samples.items()}
        meta: dict[str, Any] = {"criteria": names}
        child_meta = {n: p.meta for n, p in zip(names, parts, strict=True) if p.meta}
        if child_meta:
            meta["children"] = child_meta
        return merge_judgments(item.id, parts, scores=scores, samples=samples, meta=meta)


@register("mitigation", "single-attribute")
class SingleAttribute(Mitigation):
    """Score each criterion in its own call (Stureborg et al. 2024's remedy for anchoring).

    Every prompt judge scoring several criteria becomes a :class:`SingleAttributeJudge`; leaves with one
    criterion, and pairwise ones, are left as they are.

    Parameters:
        concurrent: run the per-criterion calls concurrently (True) or one after another.
        on_free_form: a free-form template gets a "rate only <criterion>" paragraph ("append") or an error.
    """

    paper = "Stureborg et al. 2024"

    concurrent: bool = True
    on_free_form: Literal["append", "error"] = "append"
    parameter_constraints: ClassVar = {"concurrent": [bool], "on_free_form": [Options("append", "error")]}

    @classmethod
    def examples(cls) -> list[Mitigation]:
        return [cls(), cls(concurrent=False, on_free_form="error")]

    def wrap(self, judge: Judge) -> Judge:
        """A new judge with every multi-criterion leaf split into one call per criterion (a warning when no
        leaf scores several criteria: then it changes nothing)."""
        leaves = judge.leaves()
        if leaves and all(len(lf.prompt.criteria) < 2 or lf.prompt.answer == "pairwise" for lf in leaves):
            scored = sorted(
                {c.name for lf in leaves if lf.prompt.answer != "pairwise" for c in lf.prompt.criteria}
            )
            what = f"scores only {scored}" if scored else "gives a pairwise verdict"
            warnings.warn(
                f"{self.owner()} changes nothing here: it splits a prompt scoring several criteria into one "
                f"call per criterion, and this judge's prompt {what}",
                UserWarning,
                stacklevel=2,
            )
        return judge.map_leaves(self._split)

    def _split(self, leaf: PromptJudge) -> Judge:
        prompt = leaf.prompt
        if len(prompt.criteria) < 2 or prompt.answer == "pairwise":
            return leaf.with_prompt(prompt)
        children = {c.name: leaf.with_prompt(self.child_prompt(prompt, c)) for c in prompt.criteria}
        return SingleAttributeJudge(dict(children), concurrent=self.concurrent)

    def child_prompt(self, prompt: JudgePrompt, criterion: Criterion) -> JudgePrompt:
        """The prompt that scores only ``criterion`` of the multi-criterion ``prompt``."""
        if is_multi_criterion_template(prompt):
            return multi_criterion_prompt(prompt, [criterion])
        if self.on_free_form == "error":
            raise ConfigError(
                "SingleAttribute(on_free_form='error') expected a prompt built by multi_criterion_prompt; "
                f"got a free-form template scoring {[c.name for c in prompt.criteria]}"
            )
        child = prompt.with_criteria([criterion])
        fmt = prompt.format.for_criterion(criterion.name, [c.name for c in prompt.criteria])
        child = child.with_answer_format(fmt)
        return refresh_addenda(set_addendum(child, ONLY_LEAD, only_paragraph(child)))


class MultiAttributeJudge(CompositeJudge):
    """Wraps the one multi-criterion call and records each criterion's position in the answer.
    ``meta["positions"]`` maps criterion -> position (0 = first), ``meta["order"]`` lists them; none once a
    later mitigation split the call."""

    kind = "multi-attribute"
    requests_are_children = True

    def __init__(self, child: Judge, order: Sequence[str]) -> None:
        super().__init__({"multi": child})
        self.order = tuple(order)

    def params(self) -> dict[str, Any]:
        return {"order": list(self.order)}

    async def judge(self, item: Item) -> Judgment:
        part = await self.children["multi"].judge(item)
        leaves = self.children["multi"].leaves()
        if len(leaves) != 1:  # a later mitigation split the call: no shared output
            return part
        order = [c.name for c in leaves[0].prompt.criteria]
        meta = {**part.meta, "order": order, "positions": {n: i for i, n in enumerate(order)}}
        return part.model_copy(update={"meta": meta})


def _split(judge: Judge) -> bool:
    """Whether single-attribute split ``judge`` (or a judge inside it) into one call per criterion."""
    if isinstance(judge, SingleAttributeJudge):
        return True
    return isinstance(judge, CompositeJudge) and any(_split(c) for c in judge.children.values())


def _distinct_names(values: Any) -> bool:
    names = [v if isinstance(v, str) else (v.name if isinstance(v, Criterion) else v["name"]) for v in values]
    return len(set(names)) == len(names)


MIN_TOKENS_PER_LINE = 3
"""The fewest tokens one "<criterion>: N" answer line takes (a floor under ``max_tokens``)."""


@register("mitigation", "multi-attribute")
class MultiAttribute(Mitigation):
    """The control for :class:`SingleAttribute`: one call scoring all criteria, in a set order.

    Every score-answering leaf gets the built-in :func:`multi_criterion_prompt`, read with ``parse_criteria``.

    Parameters:
        criteria: the criteria to score; empty = the prompt's own criteria.
        order: criterion names in the order they are asked and answered; empty = the order of ``criteria``.
    """

    paper = "Stureborg et al. 2024 (control)"

    criteria: tuple[Criterion, ...] = ()
    order: tuple[str, ...] = ()
    parameter_constraints: ClassVar = {
        "criteria": [
            Satisfies(
                lambda v: isinstance(v, list | tuple) and _distinct_names(v),
                "a list of criteria with distinct names",
            )
        ],
        "order": [
            Satisfies(
                lambda v: (
                    isinstance(v, list | tuple) and all(isinstance(n, str) for n in v) and _distinct_names(v)
                ),
                "a list of distinct names",
            )
        ],
    }

    @model_validator(mode="after")
    def _check(self) -> MultiAttribute:
        names = [c.name for c in self.criteria]
        if self.criteria and self.order and sorted(self.order) != sorted(names):
            raise ConfigError(
                f"The 'order' parameter of MultiAttribute must list exactly the criteria {names}. "
                f"Got {list(self.order)} instead."
            )
        return self

    @classmethod
    def examples(cls) -> list[Mitigation]:
        crits = (
            Criterion(name="coherence", definition="how well organised it is"),
            Criterion(name="fluency"),
        )
        return [cls(), cls(criteria=crits, order=("fluency", "coherence"))]

    def wrap(self, judge: Judge) -> Judge:
        """A new judge whose every leaf scores all criteria in one call; refused after single-attribute."""
        if _split(judge):
            raise ConfigError(
                "multi-attribute after single-attribute would undo the split: each one-criterion call would "
                "be rebuilt to score the criteria together; expected one of them, or multi-attribute first "
                "(single-attribute then splits its template into one call per criterion)"
            )
        return judge.map_leaves(self._leaf)

    def _leaf(self, leaf: PromptJudge) -> Judge:
        crits = list(self.criteria or leaf.prompt.criteria)
        names = [c.name for c in crits]
        if self.order and sorted(self.order) != sorted(names):
            raise ConfigError(
                f"The 'order' parameter of MultiAttribute must list exactly the judge's criteria {names}. "
                f"Got {list(self.order)} instead."
            )
        least = MIN_TOKENS_PER_LINE * len(crits)
        if leaf.config.max_tokens is not None and leaf.config.max_tokens < least:
            raise ConfigError(
                f"multi-attribute asks for {len(crits)} answer lines ('{names[0]}: N' and so on), at least "
                f"{least} tokens; the judge's max_tokens is {leaf.config.max_tokens}: raise max_tokens (e.g. "
                f"to {max(48, 12 * len(crits))}) or score the criteria one per call"
            )
        prompt = multi_criterion_prompt(leaf.prompt, crits, self.order or None)
        return MultiAttributeJudge(leaf.with_prompt(prompt), [c.name for c in prompt.criteria])
