"""Search for the demonstration set (and optionally the perturbation set) that maximises an objective.

:func:`search` / :func:`asearch` split the labelled data by document
(:func:`~mitigate.data.split.split_items`, the split ``compare`` uses too), let an engine
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

from mitigate.data.split import Split, split_items
from mitigate.lm.budget import BudgetedLM, BudgetExhaustedError, CallBudget
from mitigate.registry import registered
from mitigate.search.engines import Engine, Outcome
from mitigate.search.objective import Gain, Objective, ObjectiveValue, judgment_score
from mitigate.search.result import SearchResult, Trial, load_pipeline
from mitigate.search.run import asearch, dspy_search, engine_from, search
from mitigate.search.session import SearchSpace, Session, instrument

ENGINES: tuple[str, ...] = tuple(registered("engine"))
"""The registered search engine names :func:`search` accepts."""

__all__ = [
    "ENGINES", "BudgetExhaustedError", "BudgetedLM", "CallBudget", "Engine", "Gain", "Objective",
    "ObjectiveValue",
    "Outcome", "SearchResult", "SearchSpace", "Session", "Split", "Trial", "asearch", "dspy_search",
    "engine_from",
    "instrument", "judgment_score", "load_pipeline", "search", "split_items",
]
