"""DeepEval: a mitigated judge as a DeepEval metric (``pip install 'mitigate[deepeval]'``).

:func:`mitigated_metric` returns a :class:`deepeval.metrics.BaseMetric` whose ``measure`` / ``a_measure``
judge a test case with a mitigate :class:`~mitigate.judge.Judge`: ``score`` is the judge's score mapped to 0-1
over its scale (``raw_score`` on the judge's own), ``reason`` its raw answer, ``success`` ``score >=
threshold``. An answer that holds no score (or a failed LM call) is a metric error: ``error`` set, ``score``
None, ``success`` False, and ``measure`` raises :class:`~mitigate.errors.ParseError` (DeepEval reports an
errored metric), never a score. The test case's ``actual_output`` is the judged text, ``input`` the item's
``source`` (or ``input_field``), ``expected_output`` the reference, ``context`` ``inputs["context"]``.
"""

from __future__ import annotations

from typing import Any

from mitigate.adapters._common import Outcome, make_item, outcome, shown_scale
from mitigate.errors import ConfigError, ParseError
from mitigate.judge import Judge
from mitigate.registry import run_coroutine
from mitigate.scale import Scale


def mitigated_metric(
    judge: Judge,
    *,
    threshold: float = 0.5,
    criterion: str | None = None,
    scale: Scale | None = None,
    input_field: str = "source",
    name: str = "Mitigated judge",
) -> Any:
    """A DeepEval metric scoring test cases with ``judge``; ``threshold`` is on 0-1 (the normalised score)."""
    from deepeval.metrics import BaseMetric

    if not 0.0 <= threshold <= 1.0:
        raise ConfigError(
            f"expected a threshold between 0 and 1 (the score mapped over the judge's scale); got {threshold}"
        )
    shown = shown_scale(judge, scale)

    class MitigatedJudgeMetric(BaseMetric):
        """A mitigate judge as a DeepEval metric (see :mod:`mitigate.adapters.deepeval`)."""

        def __init__(self) -> None:
            self.threshold = threshold
            self.include_reason = True
            self.async_mode = True
            self.strict_mode = False
            self.evaluation_model = repr(judge)
            self.judge = judge
            self.raw_score: float | None = None

        def _item(self, test_case: Any) -> Any:
            context = getattr(test_case, "context", None)
            return make_item(
                test_case.actual_output or "",
                test_case.input,
                expected=test_case.expected_output,
                context="\n".join(context) if context else None,
                input_field=input_field,
                item_id=str(getattr(test_case, "name", None) or "test_case"),
            )

        def _record(self, got: Outcome) -> float:
            self.reason = got.raw
            self.evaluation_cost = 0.0
            if not got.ok:
                self.score, self.raw_score, self.success = None, None, False
                self.error = got.error
                raise ParseError(f"{name}: {got.error}", raw=got.raw, criterion=got.criterion)
            assert got.normalized is not None
            self.error = None
            self.raw_score = got.score
            self.score = got.normalized
            self.success = self.score >= threshold
            return self.score

        def measure(self, test_case: Any, *args: Any, **kwargs: Any) -> float:
            """Judge ``test_case`` (synchronously); the 0-1 score, or ParseError when the judge gave none."""
            judgment = run_coroutine(
                judge.judge(self._item(test_case)),
                what=f"{name}.measure()",
                instead="metric.a_measure(test_case)",
            )
            return self._record(outcome(judgment, shown, criterion))

        async def a_measure(self, test_case: Any, *args: Any, **kwargs: Any) -> float:
            """Judge ``test_case``; the 0-1 score, or ParseError when the judge gave none."""
            return self._record(outcome(await judge.judge(self._item(test_case)), shown, criterion))

        def is_successful(self) -> bool:
            """True when the last measure gave a score at or above the threshold."""
            return bool(self.error is None and self.score is not None and self.score >= threshold)

        @property
        def __name__(self) -> str:  # DeepEval names metrics by this property
            return name

    return MitigatedJudgeMetric()
