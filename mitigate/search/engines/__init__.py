"""The search engines, one per module, behind one small protocol (:class:`mitigate.search.Engine`).

Importing this package registers every engine (kind ``"engine"`` in :mod:`mitigate.registry`), in the
order ``mitigate list engines`` shows them: ``random``, ``greedy``, and DSPy's ``dspy-labeled``,
``dspy-bootstrap-rs`` and ``dspy-mipro`` (``dspy`` itself is imported only when one of them runs).
"""

# isort: off
from mitigate.search.engines import _random, _greedy, _dspy
# isort: on
