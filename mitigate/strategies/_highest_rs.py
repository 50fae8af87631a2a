"""Highest-RS demonstrations (Ohi et al. 2024) and their random-demonstration control.

Ohi et al. ("Likelihood-based mitigation of evaluation bias in large language models", 2024)
found that LLM judges overrate texts their own LM finds likely. Their mitigation shows the
judge, as few-shot demonstrations, the training items on which this bias is strongest,
each with its *human* score, so the judge sees likely texts that deserve low scores (and
unlikely ones that deserve high scores). The ranking, RS = |LS* + US*|, is the
:class:`~mitigate.selectors.HighestRS` selector's (:func:`mitigate.selectors.rank_by_rs`).

- ``highest-rs-demos`` (:class:`HighestRSDemosPreset`): the k training items with the
  highest RS (the paper uses k = 8).
- ``random-demos`` (:class:`RandomDemosPreset`): the paper's control, k random training items.

Both are registered presets of :class:`~mitigate.strategies._demos.Demos`: they build
``Demos(selector=HighestRS(...), k=..., criterion=...)`` and ``Demos(selector=Random(seed),
...)``, equal to what the equivalent ``demos(...)`` spec builds. ``afit(train, judge)``
returns a fitted copy whose ``selector_`` is the fitted selector keeping the chosen items
(for HighestRS: their ``rs_``, ``ls_``, ``us_``, and ``n_parse_failures_``, ``n_excluded_``),
all kept by its spec.
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

    Builds ``Demos(selector=HighestRS(likelihood, task, pool_size, seed), k, criterion)``.
    ``fit(train, judge, lm=None)``: ``judge`` is the base judge (no demos), run over the pool;
    ``lm`` overrides the ``likelihood`` spec with a backend object (the fitted selector
    records its spec). Fitted state: ``demos_`` (highest RS first) and ``selector_`` holding
    the top k items with their ``rs_``/``ls_``/``us_`` (item id -> value), ``n_pool_`` (pool
    items scored), ``n_parse_failures_`` (pool items whose judge score failed to parse:
    excluded from the ranking, never scored) and ``n_excluded_`` (pool items without an RS;
    the reasons are in ``excluded_`` of a selector fitted on its own); ``n_unlabelled_``
    (training items without the human label, left out of the pool).
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
            likelihood=self.likelihood,
            task=self.task,
            pool_size=self.pool_size,
            seed=self.seed,
            scaling=self.scaling,
        )
        return Demos(selector=selector, k=self.k, criterion=self.criterion)


@register("mitigation", "random-demos")
class RandomDemosPreset(Preset):
    """``random-demos``, the control of Ohi et al. (2024): k random training items as demonstrations.

    Parameters:
        k: how many demonstrations.
        seed: the random seed of the draw (the same seed and benchmark give the same demos).
        criterion: the human label shown (None: as :func:`~mitigate.selectors.resolve_criterion`).

    Builds ``Demos(selector=Random(seed=seed), k=k, criterion=criterion)``; ``judge`` only
    tells the criterion at fit when the benchmark has several. Fitted state: ``demos_`` in
    the order drawn.
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
