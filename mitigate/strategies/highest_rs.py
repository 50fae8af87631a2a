"""Highest-RS demonstrations (Ohi et al. 2024) and their random-demonstration control.

Ohi et al. ("Likelihood-based mitigation of evaluation bias in large language models", 2024)
found that LLM judges overrate texts their own LM finds likely. Their mitigation shows the
judge, as few-shot demonstrations, the training items on which this bias is strongest,
each with its *human* score, so the judge sees likely texts that deserve low scores (and
unlikely ones that deserve high scores). The ranking, RS = |LS* + US*|, is the
:class:`~mitigate.selectors.HighestRS` selector's (:func:`mitigate.selectors.rank_by_rs`).

- :class:`HighestRSDemos` (``"highest-rs-demos"``): the k training items with the highest RS
  (the paper uses k = 8).
- :class:`RandomDemos` (``"random-demos"``): the paper's control, k random training items.

Both are presets of :class:`~mitigate.strategies.demos.DemoMitigation`: ``fit(train, judge)``
returns a fitted copy (state in fields ending in ``_``, which serialise with :meth:`spec`);
``apply(prompt)`` puts the demonstrations into a prompt, replacing any it had.
"""

from __future__ import annotations

from typing import Any, ClassVar, Literal, Self

from pydantic import model_validator

from mitigate.data.schema import Benchmark, Item
from mitigate.judge import Judge
from mitigate.prompt import Demo
from mitigate.registry import Interval, Options, check_param, register
from mitigate.selectors import HighestRS, Random, Selector
from mitigate.strategies.base import Mitigation
from mitigate.strategies.demos import DemoMitigation, DemoPlan

__all__ = ["HighestRSDemos", "RandomDemos"]

_DEMO_CONSTRAINTS: dict[str, list[Any]] = {"k": [Interval(int, 1)], "criterion": [str, None],
                                           "seed": [Interval(int)]}


@register("mitigation", "highest-rs-demos")
class HighestRSDemos(DemoMitigation):
    """Ohi et al. (2024): demonstrations = the k training items with the highest RS, shown with human scores.

    Parameters:
        k: how many demonstrations (the paper uses 8).
        likelihood: backend spec of the causal LM that computes LS (default ``"local"``,
            the embedded model; any backend with ``loglikelihood``).
        criterion: the human label the demos show and US is computed against (None: the
            benchmark's only criterion, or the judge's; see
            :func:`~mitigate.selectors.resolve_criterion`).
        pool_size: judge and score only this many training items, drawn at random with
            ``seed`` (None: every labelled training item). Both LS and US are computed on
            the pool, so this bounds the cost of fitting.
        seed: the random seed of the pool draw.
        task: the generation task's description, the condition of LS (None: the judge
            prompt's task paragraph).
        scaling: how US normalises judge and human scores, ``"range"`` (the paper's text) or
            ``"max-deviation"`` (the released code's); see :class:`~mitigate.selectors.HighestRS`.

    ``fit(train, judge, lm=None)``: ``judge`` is the base judge (no demos), run over the pool;
    ``lm`` overrides the ``likelihood`` spec with a backend object (the fitted copy records
    its spec). Fitted state: ``demos_`` (highest RS first), ``rs_``/``ls_``/``us_`` (item id
    -> value, for the pool items that have one), ``n_parse_failures_`` (pool items whose
    judge score failed to parse: excluded from the ranking, never scored), ``excluded_``
    (item id -> why it has no RS) and ``n_unlabelled_`` (training items without the human
    label, left out of the pool).
    """

    k: int = 8
    likelihood: str = "local"
    criterion: str | None = None
    pool_size: int | None = None
    seed: int = 0
    task: str | None = None
    scaling: Literal["range", "max-deviation"] = "range"
    rs_: dict[str, float] | None = None
    ls_: dict[str, float] | None = None
    us_: dict[str, float] | None = None
    n_parse_failures_: int | None = None
    excluded_: dict[str, str] | None = None
    n_unlabelled_: int | None = None
    parameter_constraints: ClassVar = {**_DEMO_CONSTRAINTS, "likelihood": [str], "task": [str, None],
                                       "pool_size": [Interval(int, 1), None],
                                       "scaling": [Options("range", "max-deviation")]}

    @model_validator(mode="after")
    def _check_pool_size(self) -> Self:
        if self.pool_size is not None:  # the pool must hold the k demos
            check_param("HighestRSDemos", "pool_size", self.pool_size, [Interval(int, self.k), None])
        return self

    @classmethod
    def examples(cls) -> list[Mitigation]:
        """A fitted instance (unfitted ones cannot wrap)."""
        item = Item(id="ex-1", output="A short summary.", inputs={"source": "A source text."}, human={"score": 2.0})
        return [cls(k=1, criterion="score", demos_=(Demo.from_item(item, "score"),), rs_={"ex-1": 1.0},
                    ls_={"ex-1": -3.5}, us_={"ex-1": 0.5}, n_parse_failures_=0, excluded_={}, n_unlabelled_=0,
                    fitted_on_=("ex-1",))]

    def demo_plan(self, judge: Judge | None = None) -> DemoPlan:
        """A :class:`~mitigate.selectors.HighestRS` selector with these LS settings picks the top k."""
        selector = HighestRS(likelihood=self.likelihood, task=self.task, pool_size=self.pool_size, seed=self.seed,
                             scaling=self.scaling)
        return DemoPlan(selector=selector, k=self.k, criterion=self.criterion)

    def record_fit(self, selector: Selector, train: Benchmark | None) -> dict[str, Any]:
        """The selector's RS statistics, its LS backend, and how many training items lacked the label."""
        assert isinstance(selector, HighestRS) and selector.criterion_ is not None
        unlabelled = None if train is None else sum(1 for it in train.items if selector.criterion_ not in it.human)
        return {"rs_": selector.rs_, "ls_": selector.ls_, "us_": selector.us_,
                "n_parse_failures_": selector.n_parse_failures_, "excluded_": selector.excluded_,
                "n_unlabelled_": unlabelled, "likelihood": selector.likelihood}


@register("mitigation", "random-demos")
class RandomDemos(DemoMitigation):
    """The control of Ohi et al. (2024): k random training items as demonstrations, with human scores.

    Parameters:
        k: how many demonstrations.
        seed: the random seed of the draw (the same seed and benchmark give the same demos).
        criterion: the human label shown (None: as :func:`~mitigate.selectors.resolve_criterion`).

    ``fit(train, judge=None)``: ``judge`` only tells the criterion when the benchmark has
    several. Fitted state: ``demos_`` in the order drawn.
    """

    k: int = 8
    seed: int = 0
    criterion: str | None = None
    parameter_constraints: ClassVar = _DEMO_CONSTRAINTS

    @classmethod
    def examples(cls) -> list[Mitigation]:
        """A fitted instance (unfitted ones cannot wrap)."""
        item = Item(id="ex-1", output="A short summary.", inputs={"source": "A source text."}, human={"score": 4.0})
        return [cls(k=1, criterion="score", demos_=(Demo.from_item(item, "score"),), fitted_on_=("ex-1",))]

    def demo_plan(self, judge: Judge | None = None) -> DemoPlan:
        """A seeded :class:`~mitigate.selectors.Random` selector draws k items."""
        return DemoPlan(selector=Random(seed=self.seed), k=self.k, criterion=self.criterion)
