"""Search for the demonstration set (and optionally the perturbation set) that maximises an objective.

:func:`search` / :func:`asearch` let an engine (kind ``"engine"``) propose demo sets, score each on dev with
the :class:`Objective` within a budget of distinct LM requests, and report the winner on held-out test beside
the zero-shot baseline (:class:`SearchResult`, whose ``save_pipeline`` writes a file ``--pipeline @file.json``
loads).
"""

from typing import TYPE_CHECKING

from mitigate._lazy import lazy_exports

if TYPE_CHECKING:
    from mitigate.search._objective import Gain, Objective, ObjectiveValue, judgment_score
    from mitigate.search._result import SearchResult, Trial
    from mitigate.search._run import asearch, engine_from, search
    from mitigate.search._session import Engine, Outcome, SearchSpace, Session, instrument

__getattr__, __dir__, __all__ = lazy_exports(__name__)
