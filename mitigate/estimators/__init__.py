"""Each system's bias-corrected mean from a judge on every item and human labels on a few.

:func:`estimate` (``mitigate.estimate``) takes a benchmark, a criterion and a judge's values and
returns an :class:`EstimateResult`: per-group estimates with a ranking, label plans and selections.
Beneath it, arrays in and frozen values out:

- :mod:`~mitigate.estimators._mean`: one group's mean with an interval, by ``ppi`` (PPI++ with
  power tuning), ``calibrated`` (cross-fitted judge -> human calibration, isotonic or linear),
  ``human`` (the labels alone) or ``judge`` (the judge alone, not bias-corrected);
- :mod:`~mitigate.estimators._ranking`: groups ranked with simultaneous rank intervals,
  separable pairs and Kendall's tau between orderings;
- :mod:`~mitigate.estimators._planning`: labels needed for a target half-width;
- :mod:`~mitigate.estimators._selection`: which items to label next, with the inclusion
  probabilities whose inverses weight the labels.
"""

from typing import TYPE_CHECKING

from mitigate._lazy import lazy_exports

if TYPE_CHECKING:
    from mitigate.estimators._estimate import (
        columns,
        columns_from_items,
        estimate,
        estimate_columns,
        judge_values,
        plan_labels,
        resolve_by,
        select_for_labelling,
        write_selection,
    )
    from mitigate.estimators._mean import METHODS, TARGETS, MeanEstimate, Method, Remedies, estimate_mean
    from mitigate.estimators._planning import MethodPlan, labels_needed
    from mitigate.estimators._ranking import Ranking, kendall_tau, rank_estimates, rank_intervals
    from mitigate.estimators._results import METHOD_TITLES, EstimateResult

__getattr__, __dir__, __all__ = lazy_exports(__name__)
