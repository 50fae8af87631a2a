"""What a demo search found, and the pipeline file it writes.

:class:`SearchResult` holds every :class:`Trial`, the winner's dev and test objective with
intervals, the baseline's, the paired test gain, the calls spent, and why the search
stopped. :meth:`SearchResult.save_pipeline` writes the winning pipeline as a spec file that
``--pipeline @file.json`` (and :func:`load_pipeline`) loads.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from mitigate.paths import write_output
from mitigate.prompt.parts import Demo
from mitigate.search.objective import Gain, Objective, ObjectiveValue
from mitigate.strategies import Demos, Mitigation, Pipeline, from_spec, load_pipeline

__all__ = ["SearchResult", "Trial", "load_pipeline", "rank_key"]


def rank_key(value: float) -> float:
    """How trials are ranked: the dev objective, with NaN below every number (a NaN never wins)."""
    return value if math.isfinite(value) else -math.inf


class Trial(BaseModel):
    """One evaluated candidate: its pipeline spec, demo ids, dev objective and the calls it cost."""

    model_config = ConfigDict(frozen=True, extra="forbid")
    index: int
    label: str
    selector: str | None = None
    demo_ids: tuple[str, ...] = ()
    pipeline: dict[str, Any]
    dev: ObjectiveValue
    calls: int
    meta: dict[str, Any] = Field(default_factory=dict)


class SearchResult(BaseModel):
    """What a search found: every trial, the winner on dev and on the held-out test split.

    ``dev``/``test`` are the winner's objective with bootstrap intervals; ``baseline_dev``
    and ``baseline_test`` the judge without demos; ``test_gain`` the paired difference
    winner − baseline on test. ``calls_search`` is what the search spent of ``budget``
    (distinct requests, answered by the cache or the backend); ``calls_backend`` how many
    of those reached the backend; ``calls_test`` the test evaluation's requests.
    ``stopped`` says why the search ended.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")
    engine: str
    objective: Objective
    criterion: str
    budget: int
    seed: int
    split: dict[str, tuple[str, ...]]
    trials: tuple[Trial, ...]
    best_index: int
    dev: ObjectiveValue
    test: ObjectiveValue
    baseline_dev: ObjectiveValue
    baseline_test: ObjectiveValue
    test_gain: Gain
    calls_search: int
    calls_test: int
    stopped: str
    calls_backend: int | None = None
    meta: dict[str, Any] = Field(default_factory=dict)

    @property
    def best(self) -> Trial:
        """The winning trial (highest dev objective; the earliest on ties; NaN never wins)."""
        return self.trials[self.best_index]

    def pipeline(self) -> Mitigation:
        """The winning pipeline as a mitigation (an empty :class:`Pipeline` when no demos won)."""
        return from_spec(self.best.pipeline)

    def demos(self) -> list[Demo]:
        """The winning demos (empty for the baseline or a per-item selector)."""
        p = self.pipeline()
        return list(p.chosen_demos()) if isinstance(p, Demos) else []

    def summary(self) -> str:
        """A few lines: engine, objective, winner, dev vs test against the baseline, calls."""
        g = self.test_gain
        gain = "nan" if not math.isfinite(g.value) else f"{g.value:+.3f}"
        if g.ci_low is not None and g.ci_high is not None:
            gain += f" [{g.ci_low:+.3f}, {g.ci_high:+.3f}]"
        backend = "" if self.calls_backend is None else f" ({self.calls_backend} reached the backend)"
        return "\n".join([
            f"search engine {self.engine}: objective {self.objective.describe()} on {self.criterion!r}; "
            f"{len(self.trials)} trials, {self.calls_search}/{self.budget} LM calls{backend}, stopped: {self.stopped}",
            f"winner: {self.best.label} demos={list(self.best.demo_ids)}",
            f"dev   winner {self.dev.line()}",
            f"dev   baseline {self.baseline_dev.line()}",
            f"test  winner {self.test.line()}",
            f"test  baseline {self.baseline_test.line()}",
            f"test gain over baseline: {gain} ({self.calls_test} LM calls for the test split)",
        ])

    def save_pipeline(self, path: str | Path, *, before: Mitigation | None = None) -> Path:
        """Write ``{"pipeline": <winning spec>, "search": {...}}`` as JSON; ``--pipeline @file.json`` loads it.

        ``before``: the mitigations the searched judge was already wrapped in (``mitigate
        search --pipeline``); the saved pipeline is then ``before | winner``, so loading it
        reproduces the searched judge from the base one. (Plot the search with
        :func:`mitigate.harness.plots.plot_search`.)
        """
        out = Path(path)
        out.parent.mkdir(parents=True, exist_ok=True)
        pipeline = self.best.pipeline
        if before is not None and not (isinstance(before, Pipeline) and not before.steps):
            pipeline = Pipeline([before, from_spec(pipeline)]).spec()
        payload = {
            "pipeline": pipeline,
            "search": {
                "engine": self.engine, "objective": self.objective.model_dump(mode="json"),
                "objective_formula": self.objective.describe(), "criterion": self.criterion,
                "winner": self.best.label, "demo_ids": list(self.best.demo_ids),
                "dev": self.dev.model_dump(mode="json"), "test": self.test.model_dump(mode="json"),
                "baseline_dev": self.baseline_dev.model_dump(mode="json"),
                "baseline_test": self.baseline_test.model_dump(mode="json"),
                "test_gain": self.test_gain.model_dump(mode="json"), "budget": self.budget,
                "calls_search": self.calls_search, "calls_backend": self.calls_backend,
                "calls_test": self.calls_test, "stopped": self.stopped, "seed": self.seed, "split": {k: list(v) for k, v in self.split.items()},
            },
        }
        write_output(out, json.dumps(payload, indent=1, default=_json_default), "--out")
        return out


def _json_default(value: Any) -> Any:
    if isinstance(value, float) and not math.isfinite(value):
        return None
    raise TypeError(f"cannot serialise {type(value).__name__}")

