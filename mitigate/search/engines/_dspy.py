"""DSPy's few-shot optimizers as search engines (``dspy`` is optional, loaded only when one runs):
``LabeledFewShot`` (``"dspy-labeled"``), ``BootstrapFewShotWithRandomSearch`` (``"dspy-bootstrap-rs"``) and
``MIPROv2`` (``"dspy-mipro"``; needs ``optuna``). They choose demos their own way
(:mod:`mitigate.search.engines._dspy_program`)."""

from __future__ import annotations

import importlib.util
import math
from typing import Any, ClassVar, Self

from pydantic import Field

from mitigate.constraints import Interval
from mitigate.data import Split
from mitigate.errors import ConfigError
from mitigate.judge import Judge
from mitigate.registry import Tags, register
from mitigate.search._session import Engine, Outcome, SearchSpace, Session


def _require(package: str, why: str) -> None:
    if importlib.util.find_spec(package) is None:
        raise ConfigError(
            f"{why} needs the {package} package, which is not installed; expected it to be "
            "importable (pip install 'mitigate[dspy]')"
        )


class DSPyEngine(Engine):
    """Shared part of the DSPy engines: checks before any call, then the optimizer's run."""

    declared_tags: ClassVar[Tags] = Tags()
    optimizer: ClassVar[str] = ""

    def prepare(self, judge: Judge, split: Split, criterion: str, ks: list[int]) -> Self:
        """Refuse a missing dspy package, or more demos than the train split has labelled items."""
        _require("dspy", f"the {self.registry_name} engine")
        train = [it for it in split.train if criterion in it.human and math.isfinite(it.human[criterion])]
        if max(ks) > len(train):
            raise ConfigError(
                f"The 'k' parameter of search asks for {max(ks)} demos, but the train split "
                f"has only {len(train)} labelled items"
            )
        return self

    async def run(self, session: Session, space: SearchSpace) -> Outcome:
        """Compile the judge program with the optimizer, then rank every demo set it produced on dev."""
        from mitigate.search.engines._dspy_program import optimize  # imports dspy, an optional dependency

        stopped, meta = await optimize(self, session, max(space.ks))
        return Outcome(stopped, meta)


@register("engine", "dspy-labeled")
class DSPyLabeled(DSPyEngine):
    """DSPy's ``LabeledFewShot``: k labelled train examples as demos."""

    optimizer: ClassVar[str] = "labeled"


@register("engine", "dspy-bootstrap-rs")
class DSPyBootstrapRS(DSPyEngine):
    """DSPy's ``BootstrapFewShotWithRandomSearch``.

    Parameters:
        num_candidates: ``num_candidate_programs`` (default: what the budget allows).
    """

    optimizer: ClassVar[str] = "bootstrap-rs"
    num_candidates: int | None = None
    parameter_constraints: ClassVar = {"num_candidates": [Interval(int, 1), None]}


@register("engine", "dspy-mipro")
class DSPyMIPRO(DSPyEngine):
    """DSPy's ``MIPROv2`` (needs ``optuna``).

    Parameters:
        prompt_model: the instruction proposer (default: the judge's DSPyLM's ``dspy.LM``); not in the spec.
        num_candidates: MIPROv2's ``num_candidates`` (default 3).
        num_trials: MIPROv2's ``num_trials`` (default: what the budget allows).
    """

    optimizer: ClassVar[str] = "mipro"
    prompt_model: Any = Field(default=None, exclude=True)
    num_candidates: int | None = None
    num_trials: int | None = None
    parameter_constraints: ClassVar = {
        "num_candidates": [Interval(int, 1), None],
        "num_trials": [Interval(int, 1), None],
    }

    def prepare(self, judge: Judge, split: Split, criterion: str, ks: list[int]) -> Self:
        """Also needs optuna and a prompt model (borrowed from the judge's DSPyLM backend when not given)."""
        ready = super().prepare(judge, split, criterion, ks)
        _require("optuna", "the dspy-mipro engine (MIPROv2)")
        if self.prompt_model is not None:
            return ready
        from mitigate.search.engines._dspy_program import dspy_lm_of  # imports dspy, an optional dependency

        found = dspy_lm_of(judge)
        if found is None:
            raise ConfigError(
                "the dspy-mipro engine needs prompt_model=dspy.LM(...) pointed at the judge's "
                "model (MIPROv2 writes instruction proposals with it); the judge's backend is "
                "not a DSPyLM to borrow it from"
            )
        return ready.model_copy(update={"prompt_model": found})
