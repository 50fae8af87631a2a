"""A judge that replays the released outputs of a real LLM judge instead of calling it.

Shen et al. (2023) released every answer ChatGPT, GPT-4 and Llama-2 gave on SummEval
(see :mod:`mitigate.data.released`). :class:`ReleasedJudge` serves those answers through the
:class:`~mitigate.judge.Judge` protocol, so the harness (runner, compare, report) measures
those judges exactly as it measures a live one, without any LM call and at no cost.

A replayed answer that the parser rejected is a recorded parse failure (``failures``), with
the raw text, never a score. An item the released run does not cover is a
:class:`~mitigate.errors.DataError`, which the runner records as that item's ``error``.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from mitigate.data.released import ReleasedRun, load_released, released_judges
from mitigate.data.schema import Item
from mitigate.errors import ConfigError
from mitigate.judge import Judge, Judgment, ParseFailure, PromptJudge
from mitigate.prompt import JudgePrompt
from mitigate.scale import Scale

__all__ = ["ReleasedJudge"]


class ReleasedJudge(Judge):
    """Replays one released judge (e.g. ``"chatgpt-rts"``) on one criterion (e.g. ``"coherence"``).

    ``judge(item)`` returns the released answer for ``item.id``: its parsed score (the
    primary sample, see :mod:`mitigate.data.released`), the raw response, and a
    :class:`~mitigate.judge.ParseFailure` when the parser rejected it. Every sample of a
    document judged more than once is kept in ``meta["released"]["runs"]``. ``calls`` and
    cost are 0: nothing is called.
    """

    def __init__(self, judge_name: str, criterion: str, *, root: str | Path | None = None) -> None:
        if judge_name not in released_judges():
            raise ConfigError(f"expected a released judge name, one of {released_judges()}; got {judge_name!r}")
        self.judge_name = judge_name
        self.criterion = criterion
        self.run: ReleasedRun = load_released(judge_name, root=root)
        if criterion not in self.run.criteria:
            raise ConfigError(
                f"expected a criterion the released judge {judge_name!r} scored, one of "
                f"{list(self.run.criteria)}; got {criterion!r}"
            )

    def __repr__(self) -> str:
        return f"ReleasedJudge({self.judge_name!r}, {self.criterion!r})"

    @property
    def scale(self) -> Scale:
        """The scale the released answers were parsed on (RTS: 1-5 with half points; MCQ: A-E -> 1-5)."""
        return self.run.scale

    async def judge(self, item: Item) -> Judgment:
        """The released answer for ``item`` as a :class:`Judgment` (no LM call)."""
        released = self.run.get(item.id, self.criterion)
        sample = released.sample
        failures: tuple[ParseFailure, ...] = ()
        if sample.score is None:
            failures = (ParseFailure(criterion=self.criterion, raw=sample.raw,
                                     reason=sample.error or "the released answer held no score"),)
        return Judgment(
            item_id=item.id,
            scores={self.criterion: sample.score},
            samples={self.criterion: (sample.score,)},
            raw=(sample.raw,),
            failures=failures,
            calls=0,
            cost_usd=0.0,
            meta={"released": {
                "judge": self.judge_name,
                "model": self.run.model,
                "method": self.run.method,
                "line": sample.line,
                "primary": released.primary,
                "runs": list(released.scores),
            }},
        )

    def _no_prompt(self) -> ConfigError:
        return ConfigError(
            f"ReleasedJudge({self.judge_name!r}) replays answers that were already given, so it has no "
            "prompt to transform and no LM settings to change; expected a PromptJudge (or a judge built "
            "on one) for mitigations. Compare released judges as they are (no pipeline)."
        )

    def map_leaves(self, fn: Callable[[PromptJudge], Judge]) -> Judge:
        """Always raises: a replayed judge has no inner prompt judge a mitigation could change."""
        raise self._no_prompt()

    def map_prompts(self, fn: Callable[[JudgePrompt], JudgePrompt]) -> Judge:
        """Always raises: a replayed judge has no prompt a prompt-level mitigation could transform."""
        raise self._no_prompt()

    def describe(self) -> dict[str, Any]:
        """Which released run and criterion this judge replays."""
        return {
            "kind": "released",
            "judge": self.judge_name,
            "model": self.run.model,
            "method": self.run.method,
            "criterion": self.criterion,
            "scale": self.run.scale.model_dump(mode="json"),
        }
