"""Each system's bias-corrected mean from a judge on every item and human labels on a few.

:func:`estimate` (``mitigate.estimate``) returns an :class:`EstimateResult`: per-group estimates with a
ranking; :func:`plan_labels` and :func:`select_for_labelling` plan and choose labels. Beneath it, arrays in
and frozen values out: one group's mean (``_mean``: ``ppi``, ``calibrated``, ``human``, ``judge``; its
calibration maps in ``_calibration``), rankings with simultaneous rank intervals (``_ranking``), label
planning and active selection (``_selection``), and the result values (``_results``).
"""

from typing import TYPE_CHECKING

from mitigate._lazy import lazy_exports

if TYPE_CHECKING:
    from mitigate.estimators._columns import columns, columns_from_items, judge_values, resolve_by
    from mitigate.estimators._contrasts import Contrast, contrasts, rank_by_contrasts
    from mitigate.estimators._estimate import (
        estimate,
        estimate_columns,
        plan_labels,
        select_for_labelling,
        write_selection,
    )
    from mitigate.estimators._mean import METHODS, TARGETS, MeanEstimate, Method, Remedies, estimate_mean
    from mitigate.estimators._ranking import Ranking, kendall_tau, rank_estimates, rank_intervals
    from mitigate.estimators._results import METHOD_TITLES, EstimateResult
    from mitigate.estimators._selection import MethodPlan, labels_needed

__getattr__, __dir__, __all__ = lazy_exports(__name__)
