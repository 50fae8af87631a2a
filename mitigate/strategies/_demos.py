"""Few-shot demonstrations: one mitigation, :class:`Demos`, that shows what a selector picks (with the *human*
score).

The named demo mitigations are registered presets of it whose spec is a ``demos`` spec; ``highest-rs-demos``
(Ohi et al. 2024) shows the items on which the judge's bias toward texts its LM finds likely is strongest,
``random-demos`` is their control.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from typing import Annotated, Any, ClassVar, Literal, Self

from pydantic import BeforeValidator, PlainSerializer, model_validator

from mitigate.constraints import Interval, IsInstance, Options, Satisfies, check_param
from mitigate.data import Benchmark, Item, labelled, labelled_items
from mitigate.errors import ConfigError, TemplateError
from mitigate.judge import CompositeJudge, FitContext, Judge, Judgment, PlannedRequest, PromptJudge
from mitigate.prompt import (
    Demo,
    JudgePrompt,
    PerturbationKind,
    guideline_of,
    original_order,
    perturbation_set,
)
from mitigate.registry import Preset, Tags, register
from mitigate.selectors import (
    KNN,
    HighestRS,
    Random,
    Selector,
    example_pool,
    resolve_criterion,
    selector_from_spec,
)
from mitigate.strategies._base import Mitigation

Placement = Literal["replace", "append"]
"""Where chosen demos go: instead of the prompt's own demos, or after them."""


def _as_selector(value: Any) -> Any:
    if isinstance(value, str):
        value = {"name": value, "params": {}}
    return value if value is None else selector_from_spec(value)


SelectorField = Annotated[Selector, BeforeValidator(_as_selector), PlainSerializer(lambda s: s.spec())]
"""A selector parameter: given as a Selector, its spec or its registered name; serialised as its spec."""


def score_for(demo: Demo, prompt: JudgePrompt) -> float | dict[str, float] | None:
    """The gold score ``demo`` shows in ``prompt``: its criterion's entry when the demo holds several."""
    if not isinstance(demo.score, dict):
        return demo.score
    names = [c.name for c in prompt.criteria] or ["score"]
    missing = [c for c in names if c not in demo.score]
    if missing:
        raise ConfigError(
            f"demo {demo.item.id!r} has gold scores for {sorted(demo.score)}; the prompt scores {names} "
            f"(missing {missing})"
        )
    return demo.score[names[0]] if len(names) == 1 else {c: demo.score[c] for c in names}


def require_lengthened(owner: str, kind: str, lengthened: dict[str, str] | None) -> None:
    """ConfigError unless ``lengthened`` descriptions are given for a perturbation ``kind`` that lengthens."""
    if kind in ("length", "both") and not lengthened:
        raise ConfigError(
            f"The 'lengthened' parameter of {owner} must map option labels to lengthened descriptions when "
            f"kind={kind!r}. Got {lengthened!r} instead. Write them in the params of a config file "
            "(--config) or in Python, or use kind=order, which needs none."
        )


def demo_criteria(train: Benchmark, judge: Judge | None, criterion: str | None) -> list[str]:
    """The human labels the demos show: ``[criterion]``; else the benchmark's one criterion; else every
    criterion the judge's prompts score that ``train`` labels; else as
    :func:`~mitigate.selectors.resolve_criterion`."""
    if criterion is None and len(train.criteria) != 1 and judge is not None:
        names = list(dict.fromkeys(c.name for leaf in judge.leaves() for c in leaf.prompt.criteria))
        known = [n for n in names if labelled_items(train.items, n)]
        if known:
            return known
    return [resolve_criterion(train, judge, criterion)]


PERTURBATION_CONSTRAINTS: dict[str, list[Any]] = {
    "kind": [Options("order", "length", "both")],
    "n": [Interval(int, 1), None],
    "lengthened": [IsInstance(dict), None],
    "seed": [Interval(int)],
    "ablation": [bool],
}
"""The constraints of the guideline-perturbation parameters (of demo display and PerturbedGuidelines)."""


def _fitted_selector(value: Any) -> bool:
    return isinstance(value, Selector) and value.is_fitted


@register("mitigation", "demos")
class Demos(Mitigation):
    """Demonstrations chosen by any selector (or given), shown plain or under the prompt's guideline.

    Parameters:
        selector: picks the demos at ``fit`` (a Selector, its spec or its name; used as it is if fitted).
        k: how many demos.
        criterion: the human label shown (None: see :func:`demo_criteria`).
        demos: given demos instead of a selector (exactly ``k``).
        display: ``"plain"``, under the prompt's own ``"guideline"``, or under ``"perturbed"`` versions of it.
        kind, n, lengthened, seed, ablation: the perturbations for ``display="perturbed"``.
        placement: ``"replace"`` the prompt's own demos, or ``"append"`` after them.
        per_item: choose for each judged item (always so for a query-dependent selector).

    Demos go to the prompts that score their criterion (or the generic "score"); a prompt scoring one other
    criterion is left alone, one scoring several is refused, and so is a judge with no prompt scoring it.
    """

    selector: SelectorField | None = None
    k: int = 2
    criterion: str | None = None
    demos: tuple[Demo, ...] = ()
    display: Literal["plain", "guideline", "perturbed"] = "plain"
    kind: PerturbationKind = "order"
    n: int | None = None
    lengthened: dict[str, str] | None = None
    seed: int = 0
    ablation: bool = False
    placement: Placement = "replace"
    per_item: bool = False
    selector_: SelectorField | None = None
    demos_: tuple[Demo, ...] | None = None
    n_unlabelled_: int | None = None
    parameter_constraints: ClassVar = {
        "selector": [IsInstance(Selector, dict, str, noun="a selector, its spec or its name"), None],
        "k": [Interval(int, 1)],
        "criterion": [str, None],
        "display": [Options("plain", "guideline", "perturbed")],
        "placement": [Options("replace", "append")],
        "per_item": [bool],
        **PERTURBATION_CONSTRAINTS,
    }

    @model_validator(mode="after")
    def _check(self) -> Self:
        if (self.selector is None) == (not self.demos):
            raise ConfigError(
                f"{self.owner()} expected either a selector (demos chosen at fit: selector=random, knn ...) "
                f"or the demos to show (demos=...); got {'both' if self.demos else 'neither'}"
            )
        if self.demos and len(self.demos) != self.k:
            raise ConfigError(
                f"The 'demos' parameter of {self.owner()} must hold exactly k={self.k} demos. Got "
                f"{len(self.demos)} instead (pass k={len(self.demos)})."
            )
        if self.display == "perturbed":
            require_lengthened(self.owner(), self.kind, self.lengthened)
        if self.ablation and self.display != "perturbed":
            raise ConfigError(
                f"The 'ablation' parameter of {self.owner()} needs display=perturbed. Got "
                f"ablation=True with display={self.display!r} instead."
            )
        if self.chooses_per_item and self.display != "plain":
            why = f" with {self.selector.owner()}" if self.selector is not None else ""
            raise ConfigError(
                f"{self.owner()} chooses per item{why}; expected display=plain for per-item demos, got "
                f"display={self.display!r}"
            )
        return self

    @classmethod
    def examples(cls) -> list[Mitigation]:
        pool = example_pool()
        given = (Demo.from_item(pool[0], "score"), Demo.from_item(pool[2], "score"))
        return [
            cls(demos=given, display="perturbed", n=2, seed=1),
            cls.model_validate({"selector": "stratified", "k": 2}),
            cls(selector=KNN.examples()[0], k=2),
        ]

    @property
    def chooses_per_item(self) -> bool:
        """True when demos are chosen for each judged item (``per_item``, or a query-dependent selector)."""
        return self.per_item or (self.selector is not None and self.selector.tags.query_dependent)

    @property
    def tags(self) -> Tags:
        """Learns at fit when a selector chooses; calls the judge then when that (unfitted) selector does."""
        if self.selector is None:
            return Tags()
        sel = self.selector.tags
        return Tags(
            needs_fitting=True,
            query_dependent=self.chooses_per_item,
            calls_judge_while_fitting=sel.calls_judge_while_fitting and not self.selector.is_fitted,
        )

    @property
    def label(self) -> str:
        """``demos(<selector or given>, k=..)``, with the display and per-item choice when not the default."""
        sel = self.selector
        source = "given" if sel is None else sel.registry_name or type(sel).__name__
        extra = "" if self.display == "plain" else f", {self.display}"
        extra += ", per item" if self.chooses_per_item else ""
        return f"demos({source}, k={self.k}{extra})"

    @property
    def fitted_selector(self) -> Selector | None:
        """The fitted selector: the one ``fit`` fitted, or the one given fitted; None before."""
        if self.selector_ is not None:
            return self.selector_
        return self.selector if _fitted_selector(self.selector) else None

    @property
    def is_fitted(self) -> bool:
        if self.chooses_per_item:
            return self.fitted_selector is not None
        return self.demos_ is not None or bool(self.demos)

    def chosen_demos(self) -> tuple[Demo, ...]:
        """The demos shown (fitted or given); empty for per-item selection. ConfigError when unfitted."""
        self._require_fitted()
        if self.chooses_per_item:
            return ()
        return self.demos_ if self.demos_ is not None else self.demos

    def _require_fitted(self) -> None:
        if not self.is_fitted:
            raise ConfigError(
                "Demos is not fitted; expected `m = m.fit(train, judge)` before wrap()/apply() (or pass "
                "demos=(Demo(...), ...) to show given demos)"
            )

    async def learn(self, train: Benchmark, judge: Judge | None, ctx: FitContext) -> Self:
        """A fitted copy: the selector, fitted on the ``train`` items labelled for the criterion, picks the
        demos. ``judge`` (the judge the demos will be shown to) tells which criterion the demos show when
        neither this mitigation nor the benchmark says; given demos need no fit, and a selector given
        fitted is adopted."""
        if self.selector is None:
            return self
        if self.selector.is_fitted:
            return self._adopt([str(self.selector.criterion_)], self.selector, train)
        criteria, pool = self._training_pool(train, judge, self.criterion or ctx.criterion)
        fitted = await self.selector.afit(pool, judge, ctx.merged(criterion=criteria[0]))
        return self._adopt(criteria, fitted, train)

    def _training_pool(
        self, train: Benchmark, judge: Judge | None, criterion: str | None
    ) -> tuple[list[str], Benchmark]:
        """The criteria the demos show and the training items labelled for all of them."""
        if not isinstance(train, Benchmark):
            raise ConfigError(
                f"Demos.fit expected the training items as a Benchmark; got {type(train).__name__}"
            )
        criteria = demo_criteria(train, judge, criterion)
        items = train.items
        for c in criteria:
            items = tuple(labelled_items(items, c))
        if self.k > len(items):
            raise ConfigError(
                f"The 'k' parameter of Demos asks for {self.k} demos, but benchmark {train.name!r} has only "
                f"{len(items)} item{'' if len(items) == 1 else 's'} with a human "
                f"{' and '.join(repr(c) for c in criteria)} score."
            )
        return criteria, train.model_copy(update={"items": items, "criteria": (criteria[0],)})

    def _adopt(self, criteria: list[str], fitted: Selector, train: Benchmark | None) -> Self:
        """The fitted copy: the fitted selector and its picks (``demos_``)."""
        update: dict[str, Any] = {}
        if len(criteria) == 1:
            update["criterion"] = criteria[0]
        if isinstance(train, Benchmark):
            update["n_unlabelled_"] = sum(1 for it in train.items if not labelled(it, criteria[0]))
        if not self.chooses_per_item:
            fitted = fitted.with_choice(self.k)
            demos = fitted.select(self.k)
            if len(criteria) > 1:  # one gold score per criterion; each prompt shows its own
                demos = [Demo(item=d.item, score={c: d.item.human[c] for c in criteria}) for d in demos]
            update["demos_"] = tuple(demos)
        update["selector_"] = fitted
        return self.model_copy(update=update)

    def shown(self, demos: Sequence[Demo], prompt: JudgePrompt) -> list[Demo]:
        """``demos`` as shown in ``prompt`` (with its own score, and a guideline when not plain)."""
        scored = [
            d.model_copy(update={"score": score_for(d, prompt)}) if isinstance(d.score, dict) else d
            for d in demos
        ]
        if self.display == "plain":
            return scored
        if prompt.answer == "pairwise":
            raise ConfigError(
                f"demos shown under the prompt's scoring guideline (display {self.display!r}, e.g. "
                "perturbed-demos) show one output and its gold score under each guideline version; expected "
                "a prompt that scores one output, got a pairwise prompt (show pairwise demos plainly: "
                "display=plain)"
            )
        use = (
            f"demos shown under the prompt's scoring guideline (display={self.display}, as perturbed-demos "
            "shows them)"
        )
        base = original_order(
            guideline_of(prompt, use, "show them plainly instead (display=plain, or random-demos)")
        )
        if self.display == "guideline":
            per_demo = [[base] for _ in scored]
        else:
            perts = perturbation_set(base, self.kind, self.n, self.lengthened, self.seed)
            if self.ablation:
                choices = [p for p in perts if not p.is_identity(base)] or perts
                rng = random.Random(f"ablation:{self.seed}")
                per_demo = [[rng.choice(choices).apply(base)] for _ in scored]
            else:
                shown = [p.apply(base) for p in perts]
                per_demo = [shown for _ in scored]
        return [
            d.model_copy(update={"guideline": gl})
            for d, gls in zip(scored, per_demo, strict=True)
            for gl in gls
        ]

    def belongs(self, prompt: JudgePrompt) -> bool:
        """False when ``prompt`` scores one criterion other than the demos' (ConfigError for several)."""
        names = [c.name for c in prompt.criteria]
        if self.criterion is None or not names:
            return True
        if len(names) > 1:
            raise ConfigError(
                f"Demos shows human {self.criterion!r} scores; expected a prompt scoring one criterion, "
                f"got one scoring {names} in one answer (place SingleAttribute before it)"
            )
        return names[0] in (self.criterion, "score")

    def apply(self, prompt: JudgePrompt) -> JudgePrompt:
        """``prompt`` with the demos (see the class docstring); unchanged if it scores another criterion."""
        demos = self.chosen_demos()
        if not self.belongs(prompt):
            return prompt
        shown = self.shown(demos, prompt)
        try:
            return prompt.with_demos(shown if self.placement == "replace" else (*prompt.demos, *shown))
        except TemplateError as exc:
            raise TemplateError(f"{self.label}: {exc}") from None

    def wrap(self, judge: Judge) -> Judge:
        """``judge`` with the demos in its prompts, or a :class:`PerItemDemosJudge` for per-item choice."""
        if not isinstance(judge, Judge):
            raise ConfigError(f"Demos.wrap expected a Judge; got {type(judge).__name__}")
        self._require_fitted()
        if self.chooses_per_item:
            selector = self.fitted_selector
            assert selector is not None
            for leaf in judge.leaves():  # refused now, not when the first item is judged
                place = leaf.prompt.demo_place()
                if isinstance(place, str) and self.belongs(leaf.prompt):
                    raise TemplateError(f"{self.label}: demos cannot be shown: {place}")
            return PerItemDemosJudge(judge, selector, self.k, append=self.placement == "append")
        leaves = judge.leaves()
        if leaves and not any(self.belongs(leaf.prompt) for leaf in leaves):
            scored = sorted({c.name for leaf in leaves for c in leaf.prompt.criteria})
            raise ConfigError(
                f"Demos holds demos for criterion {self.criterion!r}; expected a judge with a prompt "
                f"scoring it, got prompts scoring {scored}"
            )
        return judge.map_prompts(self.apply)


# --------------------------------------------------------------------------- presets


@register("mitigation", "fixed-demos")
class FixedDemosPreset(Preset):
    """``fixed-demos``: show exactly these demonstrations in every prompt, in place of its own.

    Parameters:
        demos: the demonstrations, in display order (a dict score holds one score per criterion).
    """

    demos: tuple[Demo, ...]
    parameter_constraints: ClassVar = {
        "demos": [
            Satisfies(lambda v: isinstance(v, list | tuple) and len(v) > 0, "a non-empty list of Demo values")
        ]
    }

    @classmethod
    def examples(cls) -> list[Any]:
        pool = example_pool()
        return [cls(demos=(Demo.from_item(pool[0], "score"), Demo.from_item(pool[2], "score"))).build()]

    def build(self) -> Demos:
        return Demos(demos=self.demos, k=len(self.demos))


@register("mitigation", "per-item-demos")
class PerItemDemosPreset(Preset):
    """``per-item-demos``: show each judged item its own ``k`` demos, chosen by a fitted selector given
    that item.

    Parameters:
        selector: a fitted selector (meant for query-dependent ones such as :class:`~mitigate.selectors.KNN`).
        k: how many demos per item (never the item itself), after the prompt's own.
    """

    selector: SelectorField
    k: int = 4
    parameter_constraints: ClassVar = {"k": [Interval(int, 1)]}

    @model_validator(mode="after")
    def _check(self) -> Self:
        fitted = Satisfies(_fitted_selector, "a fitted selector (call .fit(pool, criterion=...) first)")
        check_param(self.owner(), "selector", self.selector, [fitted])
        return self

    @classmethod
    def examples(cls) -> list[Any]:
        return [cls(selector=KNN.examples()[0], k=2).build()]

    def build(self) -> Demos:
        return Demos(selector=self.selector, k=self.k, per_item=True, placement="append")


INNER = "inner"


class PerItemDemosJudge(CompositeJudge):
    """Adds demos chosen for each judged item to every inner prompt; their ids go to ``meta["demo_ids"]``."""

    kind = "per-item-demos"

    def __init__(self, inner: Judge, selector: Selector, k: int, *, append: bool = True) -> None:
        super().__init__({INNER: inner})
        self.selector, self.k, self.append = selector, k, append

    def params(self) -> dict[str, Any]:
        return {"selector": self.selector.spec(), "k": self.k, "append": self.append}

    def demos_for(self, item: Item, leaf: PromptJudge) -> list[Demo]:
        """The demos shown to ``leaf`` when judging ``item`` (scores on the leaf prompt's scale)."""
        return self.selector.select(self.k, query=item, prompt_scale=leaf.prompt.scale)

    def for_item(self, item: Item) -> tuple[Judge, list[str]]:
        """The inner judge with ``item``'s demos added to every prompt, and the chosen demo ids."""
        chosen: list[str] = []

        def with_demos(leaf: PromptJudge) -> Judge:
            demos = self.demos_for(item, leaf)
            if not chosen:
                chosen.extend(d.item.id for d in demos)
            own = leaf.prompt.demos if self.append else ()
            return leaf.with_prompt(leaf.prompt.with_demos((*own, *demos)))

        return self.children[INNER].map_leaves(with_demos), chosen

    def requests(self, item: Item) -> list[PlannedRequest]:
        inner, _ = self.for_item(item)
        return [r.under(INNER) for r in inner.requests(item)]

    async def judge(self, item: Item) -> Judgment:
        inner, chosen = self.for_item(item)
        judgment = await inner.judge(item)
        return judgment.model_copy(update={"meta": {**judgment.meta, "demo_ids": chosen}})


# --------------------------------------------------------------------------- Ohi et al. 2024

_DEMO_CONSTRAINTS: dict[str, list[Any]] = {
    "k": [Interval(int, 1)],
    "criterion": [str, None],
    "seed": [Interval(int)],
}


@register("mitigation", "highest-rs-demos")
class HighestRSDemosPreset(Preset):
    """``highest-rs-demos`` (Ohi et al. 2024): demonstrations = the k training items with the highest RS.

    Parameters:
        k: how many demonstrations (the paper uses 8).
        likelihood: backend spec of the causal LM that computes LS (any backend with ``loglikelihood``).
        task: the generation task's description, the condition of LS (None: the judge prompt's task).
        pool_size: judge and score only this many training items, drawn with ``seed`` (None: all).
        seed: the random seed of the pool draw.
        scaling: how US normalises judge and human scores (see :class:`~mitigate.selectors.HighestRS`).
        criterion: the human label the demos show and US is computed against.

    ``fit(train, judge, lm=None)`` runs the base judge over the pool; ``lm`` overrides ``likelihood`` with a
    backend object.
    """

    paper = "Ohi et al. 2024"

    k: int = 8
    likelihood: str = "local"
    criterion: str | None = None
    pool_size: int | None = None
    seed: int = 0
    task: str | None = None
    scaling: Literal["range", "max-deviation"] = "range"
    parameter_constraints: ClassVar = {
        **_DEMO_CONSTRAINTS,
        "likelihood": [str],
        "task": [str, None],
        "pool_size": [Interval(int, 1), None],
        "scaling": [Options("range", "max-deviation")],
    }

    @model_validator(mode="after")
    def _check_pool_size(self) -> Self:
        if self.pool_size is not None:  # the pool must hold the k demos
            check_param(self.owner(), "pool_size", self.pool_size, [Interval(int, self.k), None])
        return self

    @classmethod
    def examples(cls) -> list[Any]:
        unfitted = cls(k=1, criterion="score").build()
        fitted = HighestRS.examples()[0].with_choice(1)
        update = {"selector_": fitted, "demos_": tuple(fitted.select(1)), "n_unlabelled_": 0}
        return [unfitted, unfitted.model_copy(update=update)]

    def build(self) -> Demos:
        params = self.model_dump(include={"likelihood", "task", "pool_size", "seed", "scaling"})
        return Demos(selector=HighestRS(**params), k=self.k, criterion=self.criterion)


@register("mitigation", "random-demos")
class RandomDemosPreset(Preset):
    """``random-demos``, the control of Ohi et al. (2024): k random training items as demonstrations.

    Parameters:
        k: how many demonstrations.
        seed: the random seed of the draw.
        criterion: the human label shown (None: as :func:`~mitigate.selectors.resolve_criterion`).
    """

    paper = "Ohi et al. 2024 (control)"

    k: int = 8
    seed: int = 0
    criterion: str | None = None
    parameter_constraints: ClassVar = _DEMO_CONSTRAINTS

    @classmethod
    def examples(cls) -> list[Any]:
        unfitted = cls(k=1, criterion="score").build()
        pool = Benchmark(name="ex", items=tuple(example_pool()), criteria=("score",))
        return [unfitted, unfitted.fit(pool)]

    def build(self) -> Demos:
        return Demos(selector=Random(seed=self.seed), k=self.k, criterion=self.criterion)
