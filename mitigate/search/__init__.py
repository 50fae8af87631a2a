"""Search for the demonstration set (and optionally the perturbation set) that maximises an objective.

:func:`search` / :func:`asearch` split the labelled data by document
(:func:`~mitigate.data._split.split_items`, the split ``compare`` uses too), let an engine
propose demo sets drawn by the selectors of :mod:`mitigate.selectors`, score each on dev with
the :class:`Objective` (agreement + λ·consistency − μ·|BiasScore|), and report the winner on
held-out test beside the zero-shot baseline (:class:`SearchResult`), within a budget of
distinct LM requests. ``SearchResult.save_pipeline`` writes the winner as a spec file that
:func:`load_pipeline` (and ``--pipeline @file.json`` on the command line) loads.

Layout: :mod:`.objective`, :mod:`.session` (the budgeted
judge and evaluation every engine shares), :mod:`.result` (results and the pipeline file),
:mod:`.run` (the entry points) and :mod:`.engines` (one engine per module, registered as
kind ``"engine"``; :data:`ENGINES` lists their names).

The package sits above :mod:`mitigate.selectors` and :mod:`mitigate.strategies`; neither
imports it.
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
