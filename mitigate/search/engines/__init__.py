"""The search engines, one per module, behind the :class:`mitigate.search.Engine` protocol; importing this
package registers them (kind ``"engine"``) in the order ``mitigate list engines`` shows."""

# isort: off
from mitigate.search.engines import _random, _greedy, _dspy
# isort: on
