"""Few-shot demonstrations: one mitigation that shows what a selector picks.

:class:`DemoMitigation` is the one implementation: at ``fit`` a selector
(:mod:`mitigate.selectors`) chooses demos from the labelled training items, each shown with
its *human* score; ``apply`` puts them into every prompt that scores their criterion, plain or
each under perturbed versions of the prompt's guideline (Ghazarian et al. 2024). A
query-dependent selector (KNN) chooses per judged item instead, through a
:class:`PerItemDemosJudge`.

- :class:`Demos` (``"demos"``) exposes every option: ``Demos(selector="stratified", k=2,
  display="perturbed", n=3)``.
- The named demo mitigations are presets of it with their own parameters (the same classes,
  parameters and specs as before): ``random-demos`` and ``highest-rs-demos``
  (:mod:`mitigate.strategies.highest_rs`), ``perturbed-demos``
  (:mod:`mitigate.strategies.perturbed_demos`), and here ``fixed-demos``
  (:class:`FixedDemos`, the given demos: what a demo search saves) and ``per-item-demos``
  (:class:`PerItemDemos`, a fitted query-dependent selector). A preset only says, in
  :meth:`DemoMitigation.demo_plan`, which selector picks how many demos for which criterion
  and how they are shown.

Fitted state: ``demos_`` (the chosen demos, in display order) and ``fitted_on_`` (the ids of
the labelled training items the selector chose from). Unfitted use is a ConfigError naming
the fit call.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from typing import Annotated, Any, ClassVar, Literal, NamedTuple, Self

from pydantic import BaseModel, BeforeValidator, ConfigDict, PlainSerializer, model_validator

from mitigate.data.schema import Benchmark, Item
from mitigate.errors import ConfigError
from mitigate.judge import CompositeJudge, Judge, Judgment, PromptJudge
from mitigate.lm.base import LM
from mitigate.prompt.judge_prompt import JudgePrompt
from mitigate.prompt.parts import Demo
from mitigate.prompt.perturb import PerturbationKind, guideline_of, original_order, perturbation_set
from mitigate.registry import Interval, IsInstance, Options, Satisfies, check_param, register
from mitigate.run.aio import run_sync
from mitigate.selectors import KNN, Selector, example_pool, labelled, resolve_criterion, selector_from_spec
from mitigate.strategies.base import Mitigation

__all__ = [
    "DemoMitigation",
    "DemoPlan",
    "Demos",
    "Display",
    "FixedDemos",
    "PerItemDemos",
    "PerItemDemosJudge",
    "demo_criteria",
    "require_lengthened",
    "score_for",
]

Placement = Literal["replace", "append"]
"""Where chosen demos go: instead of the prompt's own demos, or after them."""


def _as_selector(value: Any) -> Any:
    """A selector from a Selector, its spec, or (CLI text) its registered name."""
    if value is None or isinstance(value, Selector):
        return value
    if isinstance(value, str):
        return selector_from_spec({"name": value, "params": {}})
    return selector_from_spec(value)


SelectorField = Annotated[Selector, BeforeValidator(_as_selector), PlainSerializer(lambda s: s.spec())]
"""A selector parameter: given as a Selector, its spec or its name; serialised as its spec."""


def score_for(demo: Demo, prompt: JudgePrompt) -> float | dict[str, float]:
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
    if len(names) == 1:
        return demo.score[names[0]]
    return {c: demo.score[c] for c in names}


def require_lengthened(owner: str, kind: str, lengthened: dict[str, str] | None) -> None:
    """ConfigError unless ``lengthened`` descriptions are given for a perturbation ``kind`` that lengthens."""
    if kind in ("length", "both") and not lengthened:
        raise ConfigError(
            f"The 'lengthened' parameter of {owner} must map option labels to lengthened descriptions when "
            f"kind={kind!r}. Got {lengthened!r} instead. Write them, or produce them once with "
            "mitigate.prompt.perturb.lengthen_guideline(prompt, lm) and pass the returned dict."
        )


def demo_criteria(train: Benchmark, judge: Judge | None, criterion: str | None) -> list[str]:
    """The human labels the demos show.

    ``[criterion]`` when given; else the benchmark's one declared criterion; else every
    criterion the judge's prompts score that ``train``'s items label (with several, each demo
    holds one score per criterion and each prompt shows its own); else as
    :func:`~mitigate.selectors.resolve_criterion` (which says what is missing).
    """
    if criterion is None and len(train.criteria) != 1 and judge is not None:
        names = list(dict.fromkeys(c.name for leaf in judge.leaves() for c in leaf.prompt.criteria))
        known = [n for n in names if any(n in it.human for it in train.items)]
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
"""The constraints of the guideline-perturbation parameters (demo display and the probe share them)."""


class Display(BaseModel):
    """How demos are shown.

    ``mode``: ``"plain"`` (as they are); ``"guideline"`` (each once under the prompt's own
    guideline, options in their original order: the unperturbed control of Ghazarian et al.
    2024); ``"perturbed"`` (each under every perturbed version of that guideline, always with
    the same gold score; with ``ablation`` under one perturbation drawn with ``seed``).
    ``kind``, ``n``, ``lengthened`` and ``seed`` choose the perturbations
    (:func:`mitigate.prompt.perturb.perturbation_set`).
    """

    model_config = ConfigDict(frozen=True, extra="forbid")
    mode: Literal["plain", "guideline", "perturbed"] = "plain"
    kind: PerturbationKind = "order"
    n: int | None = None
    lengthened: dict[str, str] | None = None
    seed: int = 0
    ablation: bool = False

    def show(self, demos: Sequence[Demo], prompt: JudgePrompt) -> list[Demo]:
        """``demos`` as shown in ``prompt`` (each with the prompt's own score, and a guideline when not plain)."""
        scored = [d.model_copy(update={"score": score_for(d, prompt)}) if isinstance(d.score, dict) else d
                  for d in demos]
        if self.mode == "plain":
            return scored
        if prompt.answer == "pairwise":
            raise ConfigError(
                f"demos shown under the prompt's scoring guideline (display {self.mode!r}, e.g. PerturbedGuidelineDemos) "
                "show one output and its gold score under each guideline version; expected a prompt that scores one "
                "output, got a pairwise prompt (show pairwise demos plainly: FixedDemos(demos=(Demo(item=..., "
                "verdict='first'), ...)))"
            )
        base = original_order(guideline_of(prompt))
        if self.mode == "guideline":
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
        return [d.model_copy(update={"guideline": gl}) for d, gls in zip(scored, per_demo, strict=True) for gl in gls]


class DemoPlan(NamedTuple):
    """What a demo mitigation shows: which selector picks how many demos for which criterion, and how.

    ``selector`` None means the demos are given (``demos``) and there is nothing to learn.
    ``per_item``: the selector chooses for each judged item (a :class:`PerItemDemosJudge`)
    instead of once at fit. ``count_name`` is the parameter that sets ``k`` (for messages).
    """

    selector: Selector | None
    k: int
    criterion: str | None = None
    demos: tuple[Demo, ...] = ()
    placement: Placement = "replace"
    display: Display = Display()
    per_item: bool = False
    count_name: str = "k"


class DemoMitigation(Mitigation):
    """The one implementation of demonstrations; concrete classes declare their parameters and a :meth:`demo_plan`.

    Demos show human scores for one criterion (or one score per criterion), so they go to
    the prompts that score it: a prompt scoring the plan's ``criterion`` (or the generic
    "score") gets them; a prompt scoring one *other* criterion is left alone (after a
    ``SingleAttribute`` split, ``highest-rs-demos(criterion=coherence) |
    random-demos(criterion=fluency)`` gives each per-criterion call its own demos); a prompt
    scoring several criteria in one answer is refused for single-criterion demos. Wrapping a
    judge none of whose prompts scores the criterion is a ConfigError, never a silent no-op.
    """

    demos_: tuple[Demo, ...] | None = None
    fitted_on_: tuple[str, ...] | None = None

    # ------------------------------------------------------------------ what a concrete class declares
    def demo_plan(self, judge: Judge | None = None) -> DemoPlan:
        """The plan these parameters give (``judge``: the judge being fitted, when known)."""
        raise NotImplementedError(f"{type(self).__name__} must implement demo_plan()")

    def record_fit(self, selector: Selector, train: Benchmark | None) -> dict[str, Any]:
        """Extra fitted fields taken from the fitted ``selector`` (a preset's fitted statistics); default none."""
        return {}

    # ------------------------------------------------------------------ state
    @property
    def is_fitted(self) -> bool:
        """True when there are demos to show (given or chosen), or a fitted per-item selector."""
        plan = self.demo_plan()
        if plan.per_item:
            return plan.selector is not None and plan.selector.is_fitted
        return self.demos_ is not None or (plan.selector is None and bool(plan.demos))

    def chosen_demos(self) -> tuple[Demo, ...]:
        """The demos shown (fitted or given); empty for per-item selection. ConfigError when unfitted."""
        plan = self.demo_plan()
        if plan.per_item:
            self._require_fitted()
            return ()
        if self.demos_ is not None:
            return self.demos_
        if plan.selector is None and plan.demos:
            return plan.demos
        self._require_fitted()
        return ()

    def _require_fitted(self) -> None:
        if not self.is_fitted:
            given = " (or pass demos=(Demo(...), ...) to show given demos)" if "demos" in type(self).model_fields else ""
            raise ConfigError(
                f"{type(self).__name__} is not fitted; expected `m = m.fit(train, judge)` before wrap()/apply(){given}"
            )

    # ------------------------------------------------------------------ fit
    def fit(self, train: Benchmark, judge: Judge | None = None, *, progress: bool = True, concurrency: int = 8,
            lm: LM | None = None) -> Self:
        """A fitted copy: the plan's selector fitted on ``train`` (the items labelled for the criterion) picks the demos.

        ``judge`` is the judge the demos will be shown to; it tells which criterion the
        demos show when neither the mitigation nor the benchmark says, and selectors that
        judge the pool (HighestRS) run it (``progress``, ``concurrency``; ``lm`` overrides their
        likelihood backend). Those run their own event loop: call :meth:`afit` from inside a
        running one. Given demos, or a selector given already fitted, are used as they are.
        """
        plan = self.demo_plan(judge)
        if plan.selector is None:
            return self.model_copy(update={"demos_": plan.demos})
        if plan.selector.is_fitted:
            return self._adopt(plan, [str(plan.selector.criterion_)], plan.selector, train)
        if plan.selector.fits_on_judge:
            return run_sync(self.afit(train, judge, progress=progress, concurrency=concurrency, lm=lm),
                            what=f"{type(self).__name__}.fit()", instead="m.afit(train, judge)")
        criteria, pool = self._training_pool(plan, train, judge)
        return self._adopt(plan, criteria, plan.selector.fit(pool, criteria[0]), train)

    async def afit(self, train: Benchmark, judge: Judge | None = None, *, progress: bool = True,
                   concurrency: int = 8, lm: LM | None = None) -> Self:
        """:meth:`fit` for async code."""
        plan = self.demo_plan(judge)
        if plan.selector is None or plan.selector.is_fitted:
            return self.fit(train, judge, progress=progress, concurrency=concurrency, lm=lm)
        criteria, pool = self._training_pool(plan, train, judge)
        fitted = await plan.selector.afit(pool, criteria[0], judge=judge, lm=lm, progress=progress,
                                          concurrency=concurrency)
        return self._adopt(plan, criteria, fitted, train)

    def _training_pool(self, plan: DemoPlan, train: Benchmark, judge: Judge | None) -> tuple[list[str], Benchmark]:
        """The criteria the demos show and the training items labelled for all of them (what the selector fits on)."""
        name = type(self).__name__
        if not isinstance(train, Benchmark):
            raise ConfigError(f"{name}.fit expected the training items as a Benchmark; got {type(train).__name__}")
        criteria = demo_criteria(train, judge, plan.criterion)
        items = train.items
        for c in criteria:
            items = tuple(labelled(items, c))
        if plan.k > len(items):
            raise ConfigError(
                f"The {plan.count_name!r} parameter of {name} asks for {plan.k} demos, but benchmark {train.name!r} has only "
                f"{len(items)} item{'' if len(items) == 1 else 's'} with a human {' and '.join(repr(c) for c in criteria)} "
                "score."
            )
        return criteria, train.model_copy(update={"items": items, "criteria": (criteria[0],)})

    def _adopt(self, plan: DemoPlan, criteria: list[str], fitted: Selector, train: Benchmark | None) -> Self:
        """The fitted copy: the selector's picks as ``demos_`` (or the fitted per-item selector), and its pool's ids."""
        update: dict[str, Any] = {"fitted_on_": tuple(it.id for it in fitted.pool_ or ())}
        if "criterion" in type(self).model_fields and len(criteria) == 1:
            update["criterion"] = criteria[0]
        if plan.per_item:
            update["selector"] = fitted
        else:
            demos = fitted.select(plan.k)
            if len(criteria) > 1:  # one gold score per criterion; each prompt shows its own
                demos = [Demo(item=d.item, score={c: d.item.human[c] for c in criteria}) for d in demos]
            update["demos_"] = tuple(demos)
        update.update(self.record_fit(fitted, train))
        return self.model_copy(update=update)

    # ------------------------------------------------------------------ showing
    def belongs(self, prompt: JudgePrompt) -> bool:
        """False when ``prompt`` scores one criterion other than the demos' (ConfigError for several)."""
        criterion = self.demo_plan().criterion
        names = [c.name for c in prompt.criteria]
        if criterion is None or not names:
            return True
        if len(names) > 1:
            raise ConfigError(
                f"{type(self).__name__} shows human {criterion!r} scores; expected a prompt scoring one criterion, "
                f"got one scoring {names} in one answer (place SingleAttribute before it)"
            )
        return names[0] in (criterion, "score")

    def apply(self, prompt: JudgePrompt) -> JudgePrompt:
        """``prompt`` with the demos (see the module docstring); unchanged if it scores another criterion."""
        plan = self.demo_plan()
        demos = self.chosen_demos()
        if not self.belongs(prompt):
            return prompt
        shown = plan.display.show(demos, prompt)
        return prompt.with_demos(shown if plan.placement == "replace" else (*prompt.demos, *shown))

    def wrap(self, judge: Judge) -> Judge:
        """``judge`` with the demos in its prompts, or a :class:`PerItemDemosJudge` for a per-item selector.

        ConfigError when no prompt of ``judge`` scores the demos' criterion.
        """
        if not isinstance(judge, Judge):
            raise ConfigError(f"{type(self).__name__}.wrap expected a Judge; got {type(judge).__name__}")
        plan = self.demo_plan()
        self._require_fitted()
        if plan.per_item:
            assert plan.selector is not None
            return PerItemDemosJudge(judge, plan.selector, plan.k)
        leaves = judge.leaves()
        if leaves and not any(self.belongs(leaf.prompt) for leaf in leaves):
            scored = sorted({c.name for leaf in leaves for c in leaf.prompt.criteria})
            raise ConfigError(
                f"{type(self).__name__} holds demos for criterion {plan.criterion!r}; expected a judge with a prompt "
                f"scoring it, got prompts scoring {scored}"
            )
        return judge.map_prompts(self.apply)


@register("mitigation", "demos")
class Demos(DemoMitigation):
    """Demonstrations chosen by any selector, shown plain or under perturbed guidelines.

    Parameters:
        selector: the selector that picks the demos at ``fit`` (a Selector, its spec, or its
            registered name such as ``"stratified"``); a query-dependent one (``"knn"``)
            picks per judged item, and must be fitted on the pool (``fit`` does it).
        k: how many demos.
        criterion: the human label shown (None: the benchmark's, or every criterion the
            judge scores; see :func:`demo_criteria`).
        demos: given demos instead of a selector (exactly ``k``; nothing to fit).
        display: ``"plain"``, ``"guideline"`` (under the prompt's own guideline) or
            ``"perturbed"`` (under perturbed guidelines, Ghazarian et al. 2024); see :class:`Display`.
        kind, n, lengthened, seed, ablation: the perturbations for ``display="perturbed"``.
        placement: ``"replace"`` the prompt's own demos, or ``"append"`` after them.
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
    parameter_constraints: ClassVar = {
        "selector": [IsInstance(Selector, dict, str, noun="a selector, its spec or its name"), None],
        "k": [Interval(int, 1)],
        "criterion": [str, None],
        "display": [Options("plain", "guideline", "perturbed")],
        "placement": [Options("replace", "append")],
        **PERTURBATION_CONSTRAINTS,
    }

    @model_validator(mode="after")
    def _check(self) -> Self:
        if (self.selector is None) == (not self.demos):
            raise ConfigError("Demos expected either selector=... (demos chosen at fit) or demos=(...) (given "
                              f"demos); got {'both' if self.demos else 'neither'}")
        if self.demos and len(self.demos) != self.k:
            raise ConfigError(f"The 'demos' parameter of Demos must hold exactly k={self.k} demos. Got "
                              f"{len(self.demos)} instead (pass k={len(self.demos)}).")
        if self.display == "perturbed":
            require_lengthened("Demos", self.kind, self.lengthened)
        if self.ablation and self.display != "perturbed":
            raise ConfigError("The 'ablation' parameter of Demos needs display='perturbed'. Got ablation=True with "
                              f"display={self.display!r} instead.")
        if self.selector is not None and self.selector.query_dependent and self.display != "plain":
            raise ConfigError(f"Demos chooses per item with {type(self.selector).__name__}; expected display='plain' "
                              f"with a query-dependent selector, got display={self.display!r}")
        return self

    @classmethod
    def examples(cls) -> list[Mitigation]:
        """Fitted demos under perturbed guidelines, an unfitted stratified choice, and per-item KNN."""
        pool = example_pool()
        given = (Demo.from_item(pool[0], "score"), Demo.from_item(pool[2], "score"))
        return [cls(demos=given, display="perturbed", n=2, seed=1), cls(selector="stratified", k=2),
                cls(selector=KNN.examples()[0], k=2)]

    def demo_plan(self, judge: Judge | None = None) -> DemoPlan:
        """The parameters as they are."""
        display = Display(mode=self.display, kind=self.kind, n=self.n, lengthened=self.lengthened, seed=self.seed,
                          ablation=self.ablation)
        return DemoPlan(selector=self.selector, k=self.k, criterion=self.criterion, demos=self.demos,
                        placement=self.placement, display=display,
                        per_item=self.selector is not None and self.selector.query_dependent)


@register("mitigation", "fixed-demos")
class FixedDemos(DemoMitigation):
    """Show exactly these demonstrations in every prompt (replacing any the prompt had).

    Parameters:
        demos: the demonstrations, in display order (each an item and its gold score;
            a dict score holds one score per criterion and each prompt shows its own).

    The winning demo set of a search is saved as this mitigation.
    """

    demos: tuple[Demo, ...]
    parameter_constraints: ClassVar = {
        "demos": [Satisfies(lambda v: isinstance(v, list | tuple) and len(v) > 0, "a non-empty list of Demo values")],
    }

    @classmethod
    def examples(cls) -> list[Mitigation]:
        """One instance with two small demos."""
        pool = example_pool()
        return [cls(demos=(Demo.from_item(pool[0], "score"), Demo.from_item(pool[2], "score")))]

    @classmethod
    def from_selector(cls, selector: Selector, k: int, **kw: Any) -> FixedDemos:
        """The demos a fitted, query-free selector picks (``selector.select(k, **kw)``)."""
        return cls(demos=tuple(selector.select(k, **kw)))

    def demo_plan(self, judge: Judge | None = None) -> DemoPlan:
        """The given demos, shown plain in place of the prompt's own."""
        return DemoPlan(selector=None, k=len(self.demos), demos=self.demos)


def _fitted_selector(value: Any) -> bool:
    return isinstance(value, Selector) and value.is_fitted


@register("mitigation", "per-item-demos")
class PerItemDemos(DemoMitigation):
    """Show each judged item its own ``k`` demos, chosen by a fitted selector given that item.

    Parameters:
        selector: a fitted selector (any; meant for query-dependent ones such as
            :class:`~mitigate.selectors.KNN`). It serialises as its own spec.
        k: how many demos per item.

    The judged item is never among its own demos (selectors leave the query out).
    """

    selector: SelectorField
    k: int = 4
    parameter_constraints: ClassVar = {"k": [Interval(int, 1)]}

    @model_validator(mode="after")
    def _check(self) -> Self:
        check_param("PerItemDemos", "selector", self.selector,
                    [Satisfies(_fitted_selector, "a fitted selector (call .fit(pool, criterion) first)")])
        return self

    @classmethod
    def examples(cls) -> list[Mitigation]:
        """A KNN selector over the example pool, 2 demos per item."""
        return [cls(selector=KNN.examples()[0], k=2)]

    def demo_plan(self, judge: Judge | None = None) -> DemoPlan:
        """The fitted selector, choosing per item (a query-free one too), after the prompt's own demos."""
        return DemoPlan(selector=self.selector, k=self.k, placement="append", per_item=True)


INNER = "inner"


class PerItemDemosJudge(CompositeJudge):
    """Selects demos for each judged item, adds them to every inner prompt (after its own demos), then delegates.

    The chosen ids are recorded in ``Judgment.meta["demo_ids"]``. It is a composite judge, so
    a prompt mitigation placed after it still reaches every inner prompt.
    """

    kind = "per-item-demos"

    def __init__(self, inner: Judge, selector: Selector, k: int) -> None:
        super().__init__({INNER: inner})
        self.selector = selector
        self.k = k

    def params(self) -> dict[str, Any]:
        """The selector's spec and ``k``."""
        return {"selector": self.selector.spec(), "k": self.k}

    def demos_for(self, item: Item, leaf: PromptJudge) -> list[Demo]:
        """The demos shown to ``leaf`` when judging ``item`` (scores on the leaf prompt's scale)."""
        return self.selector.select(self.k, query=item, prompt_scale=leaf.prompt.scale)

    async def judge(self, item: Item) -> Judgment:
        """Judge ``item`` with its own demos added to every inner prompt."""
        chosen: list[str] = []

        def with_demos(leaf: PromptJudge) -> Judge:
            demos = self.demos_for(item, leaf)
            if not chosen:
                chosen.extend(d.item.id for d in demos)
            return leaf.with_prompt(leaf.prompt.with_demos((*leaf.prompt.demos, *demos)))

        inner = self.children[INNER].map_leaves(with_demos)
        judgment = await inner.judge(item)
        return judgment.model_copy(update={"meta": {**judgment.meta, "demo_ids": chosen}})
