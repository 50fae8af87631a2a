"""Choosing which demonstrations go into a judge prompt, and searching for the best set.

Importing this package registers every selector (``selector_from_spec``) and the two
mitigations it adds to :mod:`mitigate.strategies`' registry: ``fixed-demos``
(:class:`FixedDemos`) and ``per-item-demos`` (:class:`PerItemDemos`).

| name | class | what it picks |
|---|---|---|
| ``random`` | :class:`Random` | k items at random (seeded) |
| ``stratified`` | :class:`Stratified` | k items balanced over gold labels (Ghazarian et al. 2024) |
| ``knn`` | :class:`KNN` | the k items nearest to the judged item (TF-IDF + scikit-learn) |
| ``highest-rs`` | :class:`HighestRS` | the k items with the highest RS (Ohi et al. 2024) |
| ``fixed`` | :class:`Fixed` | the items the user names |

:func:`search` / :func:`asearch` find the demo set (and optionally the perturbation set)
that maximises an :class:`Objective` on a dev split and report it on a held-out test split;
:func:`mitigate.selectors.dspy_engine.dspy_search` does the same with DSPy's optimizers.

(The package lives at ``mitigate.selectors`` because a top-level ``selectors`` would shadow
the standard library module asyncio imports.)
"""

from mitigate.selectors.base import (
    Selector,
    register_selector,
    registered_selectors,
    selector_from_spec,
)
from mitigate.selectors.fixed import Fixed, FixedDemos
from mitigate.selectors.highest_rs import HighestRS
from mitigate.selectors.knn import KNN
from mitigate.selectors.objective import Gain, Objective, ObjectiveValue
from mitigate.selectors.per_item import PerItemDemos, PerItemDemosJudge
from mitigate.selectors.random import Random
from mitigate.selectors.search import (
    ENGINES,
    BudgetExhaustedError,
    SearchResult,
    Split,
    Trial,
    asearch,
    load_pipeline,
    search,
    split_items,
)
from mitigate.selectors.stratified import Stratified

__all__ = [
    "ENGINES", "KNN", "BudgetExhaustedError", "Fixed", "FixedDemos", "Gain", "HighestRS", "Objective",
    "ObjectiveValue", "PerItemDemos", "PerItemDemosJudge", "Random", "SearchResult", "Selector", "Split",
    "Stratified", "Trial", "asearch", "load_pipeline", "register_selector", "registered_selectors", "search",
    "selector_from_spec", "split_items",
]
