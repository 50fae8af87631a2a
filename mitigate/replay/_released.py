"""A judge that replays the released outputs of a real LLM judge (Shen et al. 2023: ChatGPT, GPT-4 and Llama-2
on SummEval; :mod:`mitigate.data`) instead of calling it."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from mitigate.data import (
    H2H_JUDGE,
    H2H_MODEL,
    Item,
    ReleasedRun,
    load_released,
    released_names,
    run_to_recorded,
)
from mitigate.errors import ConfigError
from mitigate.judge import Judgment
from mitigate.registry import registered
from mitigate.replay._recorded import RecordedJudge


class ReleasedJudge(RecordedJudge):
    """Replays one released judge (e.g. ``"chatgpt-rts"``, or the pairwise ``"chatgpt-h2h"``) on one
    criterion: a :class:`~mitigate.replay.RecordedJudge` over the released recorded judgments.

    ``run`` is the score judge's ReleasedRun; every pass over a document judged more than once is kept in
    ``meta["released"]["runs"]``. ``"chatgpt-h2h"`` judges the pairwise items of ``summeval-h2h`` in both
    orders.
    """

    def __init__(self, judge_name: str, criterion: str, *, root: str | Path | None = None) -> None:
        if judge_name not in released_names():
            raise ConfigError(
                f"expected a released judge name, one of {released_names()}; got {judge_name!r}"
            )
        self.judge_name = judge_name
        self.run: ReleasedRun | None = None
        if judge_name == H2H_JUDGE:
            from mitigate.data import released_recorded

            recorded = released_recorded(judge_name, root=root)
        else:
            self.run = load_released(judge_name, root=root)
            recorded = run_to_recorded(self.run)
        if criterion not in recorded.criteria:
            raise ConfigError(
                f"expected a criterion the released judge {judge_name!r} scored, one of "
                f"{list(recorded.criteria)}; got {criterion!r}"
            )
        super().__init__(recorded, criterion)

    def __repr__(self) -> str:
        return f"ReleasedJudge({self.judge_name!r}, {self.criterion!r})"

    @property
    def model(self) -> str:
        """The model whose answers these are."""
        if self.run is not None:
            return self.run.model
        files = registered("released-judge").get(self.judge_name)
        return files.model if files is not None else H2H_MODEL

    async def judge(self, item: Item) -> Judgment:
        """The released answer for ``item`` as a :class:`Judgment` (no LM call)."""
        judgment = await super().judge(item)
        if self.run is None:
            return judgment
        released = self.run.get(item.id, self.criterion)
        sample = released.sample
        info = {
            "judge": self.judge_name,
            "model": self.run.model,
            "method": self.run.method,
            "line": sample.line,
            "primary": released.primary,
            "runs": list(released.scores),
        }
        return judgment.model_copy(update={"meta": {**judgment.meta, "released": info}})

    def describe(self) -> dict[str, Any]:
        """Which released run and criterion this judge replays."""
        scale = self.scale
        return {
            "kind": "released",
            "judge": self.judge_name,
            "model": self.model,
            "method": self.run.method if self.run is not None else "h2h",
            "criterion": self.criterion,
            "scale": None if scale is None else scale.model_dump(mode="json"),
        }
