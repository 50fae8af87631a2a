"""Keep the exact prompt of each item's first request in its judgment, for the per-item report
(:func:`with_first_prompt`; a judge that sends no request adds nothing)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from mitigate.data import Item
from mitigate.judge import Judge, Judgment, PlannedRequest, PromptJudge, recording_requests

PROMPT_KEY = "prompt"
"""The judgment ``meta`` key holding the messages of the item's first request."""


class FirstPromptJudge(Judge):
    """``inner``, with the messages of each item's first request kept in ``meta["prompt"]``; otherwise the
    same judge (its description, leaves and requests), so journals resume."""

    def __init__(self, inner: Judge) -> None:
        self.inner = inner

    async def judge(self, item: Item) -> Judgment:
        """Judge with ``inner``; add the first request's messages when a request was sent."""
        with recording_requests() as sent:
            judgment = await self.inner.judge(item)
        if not sent or PROMPT_KEY in judgment.meta:
            return judgment
        messages = [m.model_dump(mode="json") for m in sent[0].messages]
        return judgment.model_copy(update={"meta": {**judgment.meta, PROMPT_KEY: messages}})

    def map_leaves(self, fn: Callable[[PromptJudge], Judge]) -> Judge:
        """The same wrapper around ``inner.map_leaves(fn)``."""
        return FirstPromptJudge(self.inner.map_leaves(fn))

    def requests(self, item: Item) -> list[PlannedRequest]:
        """``inner``'s requests: the wrapper sends nothing of its own."""
        return self.inner.requests(item)

    def score_bounds(self) -> dict[str, tuple[float, float]] | None:
        """``inner``'s: the wrapper changes no score."""
        return self.inner.score_bounds()

    def describe(self) -> dict[str, Any]:
        """``inner``'s description: the wrapper changes no judgment's scores."""
        return self.inner.describe()

    async def aclose(self) -> None:
        """Close ``inner``."""
        await self.inner.aclose()

    def __getattr__(self, name: str) -> Any:
        # attributes such as ``scale`` of a replayed judge stay visible through the wrapper
        if name == "inner":
            raise AttributeError(name)
        return getattr(self.inner, name)

    def __repr__(self) -> str:
        return f"FirstPromptJudge({self.inner!r})"


def with_first_prompt(judge: Judge) -> Judge:
    """``judge`` wrapped by :class:`FirstPromptJudge` (once)."""
    return judge if isinstance(judge, FirstPromptJudge) else FirstPromptJudge(judge)
