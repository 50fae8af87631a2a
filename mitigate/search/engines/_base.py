"""The engine protocol: one small interface every search engine implements.

An :class:`Engine` is a frozen component registered as kind ``"engine"`` (its parameters are its own options).
:func:`mitigate.search.asearch` asks it to :meth:`~Engine.prepare` (refusing, before any LM call, what it
cannot do), evaluates the baseline, then awaits :meth:`~Engine.run`, which scores candidates through the
:class:`~mitigate.search.Session`.
"""

from __future__ import annotations

from typing import Any, ClassVar, NamedTuple, Self

from mitigate.data import Split
from mitigate.judge import Judge
from mitigate.registry import Component, Tags
from mitigate.search._session import SearchSpace, Session


class Outcome(NamedTuple):
    """How an engine's run ended: ``stopped`` ("budget", "exhausted", "no-improvement", "max-trials" or
    "done") and what it reports in ``SearchResult.meta``."""

    stopped: str
    meta: dict[str, Any]


class Engine(Component):
    """Base of the search engines (kind ``"engine"``); tag ``uses_selectors``: it draws candidates from the
    search's selectors and perturbation templates, rather than choosing demos its own way."""

    declared_tags: ClassVar[Tags] = Tags(uses_selectors=True)

    def prepare(self, judge: Judge, split: Split, criterion: str, ks: list[int]) -> Self:
        """The engine ready to run on ``split``; ConfigError for what it cannot do, before any LM call.
        Default: itself."""
        return self

    async def run(self, session: Session, space: SearchSpace) -> Outcome:
        """Propose candidates and score them with ``session.evaluate`` until done or out of budget."""
        raise NotImplementedError(f"{type(self).__name__} must implement run()")
