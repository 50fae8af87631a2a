"""Compare judges on a benchmark: accuracy against humans and measured bias, side by side, as stages.

A comparison is a :class:`~mitigate.harness.CompareConfig` run through five stages, each a function with a
typed input and output:

    plan(config) -> ComparePlan        the train split, the items to judge, every check; no LM call
    await fit(plan) -> FittedPlan      entries that learn from data fitted on the training items
    await judge(fitted) -> Judged      every entry over the items (one preflight each), LS, probes
    measure(judged) -> CompareResult   measures, the difference from the first, corrected estimates
    write_report(result, out)          results.json, report.md, report.html and the plots

:func:`compare` runs them; :func:`check_compare` is the plan stage alone and returns the plan, which
``compare(plan)`` runs without planning again. What is measured and how is in docs/tutorials/compare.md and
:mod:`mitigate.harness._measuring`; a measure that cannot be computed is NaN with ``reason`` saying why.
"""

from __future__ import annotations

from typing import Any

from mitigate.errors import ConfigError
from mitigate.harness._config import CompareConfig
from mitigate.harness._judging import fit, judge
from mitigate.harness._measuring import measure
from mitigate.harness._planning import ComparePlan, plan
from mitigate.report import CompareResult, write_report


def _given(config: object, fields: dict[str, Any], owner: str) -> None:
    if fields:
        raise ConfigError(
            f"{owner}({type(config).__name__}) takes every option from it; got {', '.join(fields)} beside it "
            "(set them in the CompareConfig)"
        )


async def compare(config: CompareConfig | ComparePlan | None = None, /, **fields: Any) -> CompareResult:
    """Run every entry over the benchmark's items and measure accuracy and bias; the reports are written into
    ``out_dir`` unless ``report=False``.

    ``compare(config)`` with a :class:`CompareConfig`, ``compare(plan)`` with the :class:`ComparePlan`
    :func:`check_compare` returned (not planned again), or ``compare(**fields)`` with the fields of
    :class:`CompareConfig` (which documents each) as keyword arguments.
    """
    if config is None:
        planned = plan(CompareConfig(**fields))
    else:
        _given(config, fields, "compare")
        planned = config if isinstance(config, ComparePlan) else plan(config)
    out = planned.out  # a plan made without out_dir is refused before anything runs
    result = measure(await judge(await fit(planned)))
    if planned.config.report:
        write_report(result, out)
    return result


def check_compare(config: CompareConfig | None = None, /, **fields: Any) -> ComparePlan:
    """The plan stage alone: raise what :func:`compare` would refuse, with no LM call and nothing written.

    Called like :func:`compare`; returns the :class:`ComparePlan`, which ``compare(plan)`` runs without
    planning again (a plan made without ``out_dir`` gets it with :meth:`ComparePlan.with_options`).
    """
    if config is None:
        return plan(CompareConfig(**fields))
    _given(config, fields, "check_compare")
    return plan(config)
