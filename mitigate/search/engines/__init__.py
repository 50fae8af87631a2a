"""The search engines, one per module, behind one small protocol
(:class:`~mitigate.search.engines.base.Engine`).

Importing this package registers every engine (kind ``"engine"`` in :mod:`mitigate.registry`):
``random`` (:mod:`.random`), ``greedy`` (:mod:`.greedy`), and DSPy's ``dspy-labeled``,
``dspy-bootstrap-rs`` and ``dspy-mipro`` (:mod:`.dspy`; ``dspy`` itself is imported only
when one of them runs).
"""

# registration order is the order ENGINES lists: ours first, then DSPy's
# isort: off
from mitigate.search.engines.base import Engine, Outcome
from mitigate.search.engines.random import RandomEngine
from mitigate.search.engines.greedy import GreedyEngine
from mitigate.search.engines.dspy import OPTIMIZERS, DSPyBootstrapRS, DSPyEngine, DSPyLabeled, DSPyMIPRO
# isort: on

__all__ = ["OPTIMIZERS", "DSPyBootstrapRS", "DSPyEngine", "DSPyLabeled", "DSPyMIPRO", "Engine",
           "GreedyEngine",
           "Outcome", "RandomEngine"]
