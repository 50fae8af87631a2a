"""Highest-RS demonstrations (Ohi et al. 2024) and their random-demonstration control.

LLM judges overrate texts their own LM finds likely; Ohi et al. show the judge, as demonstrations with their
*human* scores, the training items on which this bias is strongest (highest RS = |LS* + US*|,
:func:`mitigate.selectors.rank_by_rs`). Both mitigations here are registered presets of
:class:`~mitigate.strategies._demos.Demos`.
"""

from __future__ import annotations

from typing import Any, ClassVar, Literal, Self

from pydantic import model_validator

from mitigate.constraints import Interval, Options, check_param
from mitigate.data import Benchmark
from mitigate.registry import Preset, register
from mitigate.selectors import HighestRS, Random, example_pool
from mitigate.strategies._demos import Demos

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
        criterion: the human label the demos show and US is computed against (None:
            :func:`~mitigate.selectors.resolve_criterion`).
        pool_size: judge and score only this many training items, drawn with ``seed`` (None: all); bounds the
            cost of fitting.
        seed: the random seed of the pool draw.
        task: the generation task's description, the condition of LS (None: the judge prompt's task
            paragraph).
        scaling: how US normalises judge and human scores (see :class:`~mitigate.selectors.HighestRS`).

    Builds ``Demos(selector=HighestRS(likelihood, task, pool_size, seed, scaling), k, criterion)``.
    ``fit(train, judge, lm=None)`` runs the base judge over the pool; ``lm`` overrides the ``likelihood`` spec
    with a backend object.
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
            check_param("HighestRSDemosPreset", "pool_size", self.pool_size, [Interval(int, self.k), None])
        return self

    @classmethod
    def examples(cls) -> list[Any]:
        """The unfitted Demos, and one fitted with given LS and judge scores (no LM call)."""
        unfitted = cls(k=1, criterion="score").build()
        fitted = HighestRS.examples()[0].with_choice(1)
        return [
            unfitted,
            unfitted.model_copy(
                update={"selector_": fitted, "demos_": tuple(fitted.select(1)), "n_unlabelled_": 0}
            ),
        ]

    def build(self) -> Demos:
        """``Demos(selector=HighestRS(...), k=k, criterion=criterion)``."""
        selector = HighestRS(
            **self.model_dump(include={"likelihood", "task", "pool_size", "seed", "scaling"})
        )
        return Demos(selector=selector, k=self.k, criterion=self.criterion)


@register("mitigation", "random-demos")
class RandomDemosPreset(Preset):
    """``random-demos``, the control of Ohi et al. (2024): k random training items as demonstrations.

    Builds ``Demos(selector=Random(seed=seed), k=k, criterion=criterion)``.
    """

    paper = "Ohi et al. 2024 (control)"

    k: int = 8
    seed: int = 0
    criterion: str | None = None
    parameter_constraints: ClassVar = _DEMO_CONSTRAINTS

    @classmethod
    def examples(cls) -> list[Any]:
        """The unfitted Demos, and one fitted on the example pool."""
        unfitted = cls(k=1, criterion="score").build()
        return [
            unfitted,
            unfitted.fit(Benchmark(name="ex", items=tuple(example_pool()), criteria=("score",))),
        ]

    def build(self) -> Demos:
        """``Demos(selector=Random(seed=seed), k=k, criterion=criterion)``."""
        return Demos(selector=Random(seed=self.seed), k=self.k, criterion=self.criterion)
