"""Judges that replay answers instead of calling a model: recorded judgments (:class:`RecordedJudge`) and the
released outputs of real LLM judges (:class:`ReleasedJudge`: Shen et al. 2023's ChatGPT, GPT-4 and Llama-2 on
SummEval).

A recorded judge serves one judge's answers on one criterion (a RecordedRun, from a user's file or the
built-in releases) through the Judge protocol, so the runner, compare and the report measure them as they
measure a live judge, with no LM call. A replayed score judgment holds the primary variant's samples
(``samples``) and their reduction (``scores``), and the score under every variant (``meta["perturbations"]``)
when there are several; a pairwise one the majority verdict of the original order, the verdict in each order
(``meta["orders"]``) and every sample (``meta["verdict_samples"]``). An answer without a score or verdict is a
ParseFailure with its raw text; an item without an answer is a DataError, which the runner records as that
item's error."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any, get_args

from mitigate.data import (
    H2H_JUDGE,
    H2H_MODEL,
    Item,
    Order,
    RecordedJudgment,
    RecordedRow,
    RecordedRun,
    ReleasedRun,
    load_released,
    released_names,
    run_to_recorded,
)
from mitigate.errors import ConfigError, DataError
from mitigate.judge import Judge, Judgment, ParseFailure, PlannedRequest, PromptJudge, Reducer, reduce_samples
from mitigate.prompt import JudgePrompt
from mitigate.registry import registered
from mitigate.scale import Scale

_TO_POSITION = {"A": "first", "B": "second", "tie": "tie"}


def _majority(values: Sequence[str]) -> str | None:
    if not values:
        return None
    counts = Counter(values)
    top = max(counts.values())
    winners = [v for v, c in counts.items() if c == top]
    return winners[0] if len(winners) == 1 else "tie"


class RecordedJudge(Judge):
    """Replays one recorded judge (a :class:`RecordedRun`) on one criterion, with no call; ``reducer``
    combines several samples of a score (mean, median or majority)."""

    def __init__(self, run: RecordedRun, criterion: str, *, reducer: Reducer = "mean") -> None:
        if not isinstance(run, RecordedRun):
            raise ConfigError(
                f"expected a RecordedRun (mitigate.data._recorded.load_recorded); got {type(run).__name__}"
            )
        if criterion not in run.criteria:
            raise ConfigError(
                f"expected a criterion the recorded judge {run.judge!r} answered, one of "
                f"{list(run.criteria)}; got {criterion!r}"
            )
        self.recorded = run
        self.criterion = criterion
        self.reducer: Reducer = reducer

    @property
    def name(self) -> str:
        """The recorded judge's name."""
        return self.recorded.judge

    def __repr__(self) -> str:
        return f"RecordedJudge({self.recorded.judge!r}, {self.criterion!r})"

    @property
    def scale(self) -> Scale | None:
        """The answer scale the file declared for the criterion (None: use the benchmark's)."""
        return self.recorded.scales.get(self.criterion)

    def covers(self, items: Sequence[Item]) -> list[str]:
        """The ids of ``items`` this judge has no recorded answer for."""
        return [it.id for it in items if self.recorded.get(it.id, self.criterion) is None]

    def requests(self, item: Item) -> list[PlannedRequest]:
        """None: a recorded judge replays answers and sends no request."""
        return []

    async def judge(self, item: Item) -> Judgment:
        """The recorded answers for ``item`` as a :class:`Judgment` (no LM call)."""
        recorded = self.recorded.get(item.id, self.criterion)
        if recorded is None:
            raise DataError(
                f"expected a recorded answer of {self.recorded.judge!r} on {self.criterion!r} for item "
                f"{item.id!r} ({self.recorded.source}); it has none",
                item_id=item.id,
                criterion=self.criterion,
            )
        return self.to_judgment(recorded)

    def _primary(self, recorded: RecordedJudgment) -> tuple[list[RecordedRow], Order]:
        order: Order
        for order in get_args(Order):
            rows = recorded.select(self.recorded.primary_variant, order)
            if rows:
                return rows, order
        first = recorded.variants[0]
        return recorded.select(first, recorded.orders[0]) or list(recorded.rows), recorded.orders[0]

    def _score(self, rows: Sequence[RecordedRow]) -> float | None:
        good = [r.score for r in rows if r.score is not None]
        return reduce_samples(good, self.reducer) if good else None

    def to_judgment(self, recorded: RecordedJudgment) -> Judgment:
        """One item's recorded answers as a Judgment (see the module docstring)."""
        rows, order = self._primary(recorded)
        crit = self.criterion

        def failed(rs: Iterable[RecordedRow], held: str) -> tuple[ParseFailure, ...]:
            reason = f"the recorded answer held no {held}"
            return tuple(
                ParseFailure(criterion=crit, raw=r.raw, reason=r.error or reason, sample=r.sample) for r in rs
            )

        failures = failed((r for r in rows if r.failed), "score or verdict")
        meta: dict[str, Any] = {
            "recorded": {
                "judge": self.recorded.judge,
                "source": self.recorded.source,
                "lines": [r.line for r in rows],
                "variant": rows[0].variant if rows else None,
                "order": order,
            }
        }
        variants = recorded.variants
        answered: dict[str, Any] = {
            "item_id": recorded.item_id,
            "raw": tuple(r.raw for r in rows),
            "calls": 0,
            "cost_usd": 0.0,
            "meta": meta,
        }
        if recorded.pairwise:
            variant = rows[0].variant if rows else self.recorded.primary_variant
            by_order = {o: recorded.select(variant, o) for o in ("original", "swapped")}
            verdict_text = _majority([r.verdict for r in rows if r.verdict is not None])
            meta["verdict_samples"] = {o: [r.presented for r in rs] for o, rs in by_order.items() if rs}
            # every unparsed answer counts, the swapped order's too (the headline verdict reads one order)
            counted = {id(r) for r in rows}
            failures += failed(
                (r for rs in by_order.values() for r in rs if r.failed and id(r) not in counted), "verdict"
            )
            if by_order["original"] and by_order["swapped"]:
                meta["orders"] = {
                    o: _majority([r.presented for r in rs if r.presented is not None])
                    for o, rs in by_order.items()
                }
            if len(variants) > 1:
                meta["perturbations"] = {
                    v: _majority([r.verdict for r in recorded.select(v, order) if r.verdict is not None])
                    for v in variants
                }
            verdict = _TO_POSITION[verdict_text] if verdict_text else None
            return Judgment(verdict=verdict, failures=failures, **answered)  # type: ignore[arg-type]
        if len(variants) > 1:
            meta["perturbations"] = {v: self._score(recorded.select(v, order)) for v in variants}
        scores, samples = {crit: self._score(rows)}, {crit: tuple(r.score for r in rows)}
        return Judgment(scores=scores, samples=samples, failures=failures, **answered)

    def _no_prompt(self) -> ConfigError:
        return ConfigError(
            f"{self!r} replays answers that were already given, so it has no prompt to transform and no LM "
            "settings to change; expected a PromptJudge (or a judge built on one) for mitigations. Compare "
            "recorded judges as they are (no pipeline)."
        )

    def map_leaves(self, fn: Callable[[PromptJudge], Judge]) -> Judge:
        """Always raises: a replayed judge has no inner prompt judge a mitigation could change."""
        raise self._no_prompt()

    def map_prompts(self, fn: Callable[[JudgePrompt], JudgePrompt]) -> Judge:
        """Always raises: a replayed judge has no prompt a prompt-level mitigation could transform."""
        raise self._no_prompt()

    def describe(self) -> dict[str, Any]:
        """Which recorded judge, source and criterion this judge replays."""
        scale = self.scale
        return {
            "kind": "recorded",
            "judge": self.recorded.judge,
            "source": self.recorded.source,
            "criterion": self.criterion,
            "primary_variant": self.recorded.primary_variant,
            "reducer": self.reducer,
            "scale": None if scale is None else scale.model_dump(mode="json"),
        }


class ReleasedJudge(RecordedJudge):
    """Replays one released judge (``"chatgpt-rts"``; ``"chatgpt-h2h"`` judges ``summeval-h2h``'s pairs in
    both orders) on one criterion; ``run`` is a score judge's ReleasedRun, every pass over a document kept in
    ``meta["released"]["runs"]``."""

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
        info = {
            "judge": self.judge_name,
            "model": self.run.model,
            "method": self.run.method,
            "line": released.sample.line,
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
