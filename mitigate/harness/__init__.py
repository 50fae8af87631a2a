"""Compare judges on a benchmark, as stages: plan -> fit -> judge -> measure -> report.

``mitigate.compare`` (:func:`compare`) runs them all; each stage is a function of the one before
(:func:`plan` checks everything before any LM call, :func:`fit` fits the entries that learn on the
training items, :func:`judge` judges the planned items, :func:`measure` computes every measure and each
entry's difference from the first, and the report stage writes what :mod:`mitigate.report` renders). A
comparison is one frozen :class:`CompareConfig`; an entry is one named judge (:class:`Entry`).
"""

from typing import TYPE_CHECKING

from mitigate._lazy import lazy_exports

if TYPE_CHECKING:
    from mitigate.harness._compare import check_compare, compare
    from mitigate.harness._config import CompareConfig
    from mitigate.harness._entry import Entry
    from mitigate.harness._planning import ComparePlan

__getattr__, __dir__, __all__ = lazy_exports(__name__)
