"""What a demo search found (:class:`SearchResult`, every :class:`Trial`), and the pipeline file it writes."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from mitigate.measures import MIN_DOCUMENTS, MIN_ITEMS
from mitigate.paths import write_output
from mitigate.prompt import Demo
from mitigate.search._objective import Gain, Objective, ObjectiveValue
from mitigate.strategies import Demos, Mitigation, Pipeline, from_spec

NO_WINNER = "no demo set beat the baseline on test"
"""The verdict of a search whose dev winner is not better than the baseline on held-out test."""


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

    ``baseline_*`` are the judge without demos, ``test_gain`` the paired difference on test; ``calls_search``
    is what the search spent of ``budget`` (``calls_backend`` reached the backend), ``calls_test`` the test
    evaluation's.
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
    test_documents: int | None = None
    """Distinct documents among the test items (None when the items carry no document id)."""
    meta: dict[str, Any] = Field(default_factory=dict)

    @property
    def beats_baseline(self) -> bool:
        """A test gain above 0 whose interval excludes 0, on enough test items and documents (no warning)."""
        g = self.test_gain
        return (
            self.best_index != 0
            and math.isfinite(g.value)
            and g.value > 0
            and g.ci_low is not None
            and math.isfinite(g.ci_low)
            and g.ci_low > 0
            and not self.warnings()
        )

    def verdict(self) -> str:
        """One sentence: the winner beat the baseline on test, or no demo set did, and why not."""
        if self.beats_baseline:
            return f"the winner ({self.best.label}) beat the baseline on test"
        g = self.test_gain
        if len(self.trials) == 1 and self.stopped == "budget":
            dev = len(self.split.get("dev", ()))
            why = (
                f"no demo set was tried: the budget of {self.budget} LM calls ran out on the baseline; each "
                f"set judges the {dev} dev items, so a budget of {self.calls_search + dev} or more tries one "
                "(--budget)"
            )
        elif self.best_index == 0:
            why = "the baseline itself won on dev"
        elif not math.isfinite(g.value):
            why = f"the test gain is undefined{f': {g.reason}' if g.reason else ''}"
        elif g.value <= 0:
            why = f"the test gain is {g.value:+.3f}"
        elif g.ci_low is None or g.ci_high is None:
            why = "the test gain has no interval (n_boot=0), so it is not established"
        elif g.ci_low <= 0:
            why = f"the test gain's interval [{g.ci_low:+.3f}, {g.ci_high:+.3f}] includes 0"
        else:
            why = (
                f"the test gain {g.value:+.3f} [{g.ci_low:+.3f}, {g.ci_high:+.3f}] excludes 0, but rests "
                "on too little test data to establish it (see the warnings)"
            )
        return f"{NO_WINNER} ({why})"

    def warnings(self) -> list[str]:
        """What limits the reading of the test result (too few test items or documents), one sentence each."""
        n = len(self.split.get("test", ()))
        out = []
        if n < MIN_ITEMS:
            out.append(
                f"only {n} test items: with fewer than {MIN_ITEMS} the test gain and its interval are "
                "too unstable to carry a conclusion (use more labelled data: --limit, or other --splits)"
            )
        if self.test_documents is not None and self.test_documents < MIN_DOCUMENTS:
            out.append(
                f"the test items come from {self.test_documents} document"
                f"{'s' if self.test_documents != 1 else ''}, fewer than {MIN_DOCUMENTS}: the test "
                "gain rests on too few sources"
            )
        return out

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
        return "\n".join(
            [
                f"search engine {self.engine}: objective {self.objective.describe()} on {self.criterion!r}; "
                f"{len(self.trials)} trials, {self.calls_search}/{self.budget} LM calls{backend}, stopped: "
                f"{self.stopped}",
                f"winner: {self.best.label} demos={list(self.best.demo_ids)}",
                f"dev   winner {self.dev.line()}",
                f"dev   baseline {self.baseline_dev.line()}",
                f"test  winner {self.test.line()}",
                f"test  baseline {self.baseline_test.line()}",
                f"test gain over baseline: {gain} ({self.calls_test} LM calls for the test split)",
                f"verdict: {self.verdict()}",
                *(f"warning: {w}" for w in self.warnings()),
            ]
        )

    def __repr__(self) -> str:
        def f(x: float) -> str:
            return "nan" if not math.isfinite(x) else f"{x:+.3f}" if x < 0 or x > 0 else "0.000"

        g = self.test_gain
        gain = f(g.value)
        if g.ci_low is not None and g.ci_high is not None:
            gain += f" [{f(g.ci_low)}, {f(g.ci_high)}]"
        return (
            f"SearchResult(engine={self.engine!r}, trials={len(self.trials)}, "
            f"winner={self.best.label!r}, dev={f(self.dev.value)}, test={f(self.test.value)}, "
            f"test_gain={gain}, calls={self.calls_search}/{self.budget})"
        )

    def __str__(self) -> str:
        """:meth:`summary`."""
        return self.summary()

    def save_pipeline(self, path: str | Path, *, before: Mitigation | None = None) -> Path:
        """Write ``{"verdict": ..., "pipeline": <dev winner's spec>, "search": {...}}`` as JSON;
        ``--pipeline @file.json`` loads it. When the winner did not beat the baseline the file still holds
        it, and :func:`~mitigate.strategies.load_pipeline` warns. ``before``: the mitigations the searched
        judge was already wrapped in; the saved pipeline is then ``before | winner``."""
        out = Path(path)
        out.parent.mkdir(parents=True, exist_ok=True)
        pipeline = self.best.pipeline
        if before is not None and not (isinstance(before, Pipeline) and not before.steps):
            pipeline = Pipeline([before, from_spec(pipeline)]).spec()
        payload = {
            "verdict": self.verdict(),
            "pipeline": pipeline,
            "search": {
                "beats_baseline": self.beats_baseline,
                "warnings": self.warnings(),
                "test_documents": self.test_documents,
                "engine": self.engine,
                "objective": self.objective.model_dump(mode="json"),
                "objective_formula": self.objective.describe(),
                "criterion": self.criterion,
                "winner": self.best.label,
                "demo_ids": list(self.best.demo_ids),
                **{k: getattr(self, k).model_dump(mode="json") for k in _VALUES},
                **{k: getattr(self, k) for k in ("budget", "calls_search", "calls_backend", "calls_test")},
                "stopped": self.stopped,
                "seed": self.seed,
                "split": {k: list(v) for k, v in self.split.items()},
            },
        }
        write_output(out, json.dumps(payload, indent=1, default=_json_default), "--out")
        return out


_VALUES = ("dev", "test", "baseline_dev", "baseline_test", "test_gain")


def _json_default(value: Any) -> Any:
    if isinstance(value, float) and not math.isfinite(value):
        return None
    raise TypeError(f"cannot serialise {type(value).__name__}")
