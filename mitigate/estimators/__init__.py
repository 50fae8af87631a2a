"""Estimates of a group's mean human label from a judge on every item and human labels on a few.

Arrays in, frozen values out; nothing here knows benchmarks or judges (that is
:mod:`mitigate.harness.estimate`):

- :mod:`~mitigate.estimators.mean`: one group's mean with an interval, by ``ppi`` (PPI++ with
  power tuning), ``calibrated`` (cross-fitted judge -> human calibration), ``human`` (the
  labels alone) or ``judge`` (the judge alone, not bias-corrected);
- :mod:`~mitigate.estimators.calibration`: the isotonic and linear calibration maps;
- :mod:`~mitigate.estimators.ranking`: groups ranked with simultaneous rank intervals,
  separable pairs and Kendall's tau between orderings;
- :mod:`~mitigate.estimators.planning`: labels needed for a target half-width;
- :mod:`~mitigate.estimators.selection`: which items to label next, with the inclusion
  probabilities whose inverses weight the labels.
"""

from mitigate.estimators.mean import METHODS, TARGETS, MeanEstimate, estimate_mean
from mitigate.estimators.planning import MethodPlan, labels_needed
from mitigate.estimators.ranking import Ranking, kendall_tau, rank_estimates

__all__ = ["METHODS", "TARGETS", "MeanEstimate", "MethodPlan", "Ranking", "estimate_mean", "kendall_tau",
           "labels_needed", "rank_estimates"]
