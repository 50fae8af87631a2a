"""Search for the demonstration set (and optionally the perturbation set) that maximises an objective.

:func:`search` / :func:`asearch` split the labelled data by document (the split ``compare`` uses too), let an
engine propose demo sets drawn by the selectors of :mod:`mitigate.selectors`, score each on dev with the
:class:`Objective` (agreement + λ·consistency − μ·|BiasScore|), and report the winner on held-out test beside
the zero-shot baseline (:class:`SearchResult`), within a budget of distinct LM requests.
``SearchResult.save_pipeline`` writes the winner as a spec file :func:`~mitigate.strategies.load_pipeline`
(and ``--pipeline @file.json``) loads. Engines are registered as kind ``"engine"`` (:mod:`.engines`).
"""

from typing import TYPE_CHECKING

from mitigate._lazy import lazy_exports

if TYPE_CHECKING:
    from mitigate.search._objective import Gain, Objective, ObjectiveValue, judgment_score
    from mitigate.search._result import SearchResult, Trial
    from mitigate.search._run import asearch, dspy_search, engine_from, search
    from mitigate.search._session import SearchSpace, Session, instrument
    from mitigate.search.engines._base import Engine, Outcome

__getattr__, __dir__, __all__ = lazy_exports(__name__)
