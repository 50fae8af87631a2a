"""A judge that replays the released outputs of a real LLM judge instead of calling it.

Shen et al. (2023) released every answer ChatGPT, GPT-4 and Llama-2 gave on SummEval
(see :mod:`mitigate.data._released`). :class:`ReleasedJudge` serves those answers through the
:class:`~mitigate.judge.Judge` protocol, so the harness (runner, compare, report) measures
those judges exactly as it measures a live one, without any LM call and at no cost.

A replayed answer that the parser rejected is a recorded parse failure (``failures``), with
the raw text, never a score. An item the released run does not cover is a
:class:`~mitigate.errors.DataError`, which the runner records as that item's ``error``.
"""

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
    criterion.

    The releases are recorded judgments (:func:`mitigate.data._released.released_recorded`), so
    this is a :class:`~mitigate.replay._recorded.RecordedJudge` over them. For a score
    judge, ``judge(item)`` returns the released answer for ``item.id``: its parsed score (the
    primary sample, see :mod:`mitigate.data._released`), the raw response, and a
    :class:`~mitigate.judge.ParseFailure` when the parser rejected it; ``run`` is the
    :class:`~mitigate.data._released.ReleasedRun`, and every pass over a document judged more
    than once is kept in ``meta["released"]["runs"]`` (the other passes also as prompt
    variants). ``"chatgpt-h2h"`` judges the pairwise items of ``summeval-h2h`` in both orders.
    ``calls`` and cost are 0: nothing is called.
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
