"""Compare judges on a benchmark, as stages: ``plan(config) -> ComparePlan`` (every check, no LM call),
``fit(plan) -> FittedPlan``, ``judge(fitted) -> Judged``, ``measure(judged) -> CompareResult``, and the
report stage (:func:`~mitigate.report.write_report`). :func:`compare` runs them; :func:`check_compare` is the
plan stage alone, and ``compare(plan)`` runs its plan without planning again.
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
    """Run every entry over the benchmark's items and measure accuracy and bias (reports in ``out_dir`` unless
    ``report=False``): ``compare(config)``, ``compare(plan)`` (a plan from :func:`check_compare`, not planned
    again), or ``compare(**fields)`` with :class:`CompareConfig`'s fields."""
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
    """The plan stage alone, called like :func:`compare`: raise what it would refuse, with no LM call and
    nothing written, and return the plan (without ``out_dir``, add it with
    :meth:`ComparePlan.with_options`)."""
    if config is None:
        return plan(CompareConfig(**fields))
    _given(config, fields, "check_compare")
    return plan(config)
