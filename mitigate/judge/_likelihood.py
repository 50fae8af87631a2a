"""Likelihood scores (Ohi et al. 2024): LS(item) = log P(output | input, task description), from a causal LM's
token logprobs (by default the embedded model). Judges overrate high-likelihood texts; the bias measure and
the demo selection built on it start from these numbers. A backend that cannot score a text raises
:class:`~mitigate.errors.CapabilityError`; there is no fallback.
"""

from __future__ import annotations

import math
import string
from collections.abc import Sequence
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, PrivateAttr, field_validator
from tqdm.auto import tqdm

from mitigate.data import Item
from mitigate.errors import CapabilityError, TemplateError
from mitigate.lm import LM

DEFAULT_LIKELIHOOD_TEMPLATE = "Task: {task}\n\nInput:\n{input}\n\nOutput:\n"
"""The context the output is scored after: the task description, then the item's input."""

_SLOTS = {"task", "input"}


class LikelihoodScorer(BaseModel):
    """Computes LS = log P(item.output | item input, task description) with a causal LM.

    ``lm`` is the backend's spec (or an :class:`LM`, kept and its spec recorded), resolved on first use.
    ``template`` is the context before the output, with the slots ``{task}`` and ``{input}`` (required);
    ``input_fields`` the item inputs making up ``{input}`` (empty: all, as ``Name:`` blocks when several).
    ``reduce`` is ``"sum"`` (the whole output) or ``"mean"`` (per token, removing most of the length
    dependence; NaN for an empty output).
    """

    model_config = ConfigDict(frozen=True, extra="forbid")
    lm: str = "local"
    template: str = DEFAULT_LIKELIHOOD_TEMPLATE
    reduce: Literal["sum", "mean"] = "sum"
    input_fields: tuple[str, ...] = ()
    _backend: LM | None = PrivateAttr(default=None)

    def __init__(self, lm: LM | str | None = None, /, **data: Any) -> None:
        if lm is not None:
            data["lm"] = lm.spec if isinstance(lm, LM) else lm
        super().__init__(**data)
        self._backend = lm if isinstance(lm, LM) else None

    def __eq__(self, other: object) -> bool:
        """Equal when the fields are: the resolved backend object does not take part."""
        if not isinstance(other, LikelihoodScorer):
            return NotImplemented
        return type(self) is type(other) and self.model_dump() == other.model_dump()

    def __hash__(self) -> int:
        return hash((type(self), self.lm, self.template, self.reduce, self.input_fields))

    @field_validator("template")
    @classmethod
    def _check_template(cls, v: str) -> str:
        try:
            names = {name for _, name, _, _ in string.Formatter().parse(v) if name is not None}
        except ValueError as exc:
            raise TemplateError(
                f"the likelihood template is not a valid format string: {exc}; got {v!r}"
            ) from exc
        unknown = names - _SLOTS
        if unknown:
            raise TemplateError(
                f"the likelihood template may only use the slots {{task}} and {{input}}; got "
                f"{sorted(unknown)} in {v!r}"
            )
        if "input" not in names:
            raise TemplateError(f"the likelihood template needs an {{input}} slot; got {v!r}")
        return v

    @property
    def backend(self) -> LM:
        """The LM that scores, resolved from ``lm`` on first access."""
        if self._backend is None:
            from mitigate.lm import get  # on first use: building a backend loads its module

            self._backend = get(self.lm)
        return self._backend

    def input_text(self, item: Item) -> str:
        """The text that fills ``{input}`` for ``item``."""
        names = self.input_fields or tuple(item.inputs)
        if len(names) == 1:
            return item.field(names[0])
        return "\n\n".join(f"{name[:1].upper()}{name[1:]}:\n{item.field(name)}" for name in names)

    def context(self, item: Item, task: str) -> str:
        """The text the output is scored after: the template filled with ``task`` and the item's input."""
        return self.template.format(task=task, input=self.input_text(item))

    async def score(self, item: Item, task: str) -> float:
        """LS of one item: the summed (or per-token mean) log-probability of ``item.output``."""
        lm = self.backend
        context = self.context(item, task)
        if self.reduce == "sum":
            return float(await lm.loglikelihood(context, item.output))
        token_logprobs = getattr(lm, "token_logprobs", None)
        if token_logprobs is None:
            raise CapabilityError(
                f"reduce='mean' needs per-token logprobs; expected a backend with token_logprobs(), got "
                f"{lm.spec!r}, which has only loglikelihood(); use reduce='sum'",
                backend=lm.spec,
            )
        values: list[float] = await token_logprobs(context, item.output)
        if not values:
            return math.nan
        return float(sum(values) / len(values))

    async def score_many(self, items: Sequence[Item], task: str, progress: bool = True) -> list[float]:
        """LS of each item, in order, one at a time (local backends serialise calls anyway)."""
        out: list[float] = []
        with tqdm(total=len(items), desc="likelihood", unit="item", disable=not progress) as bar:
            for item in items:
                out.append(await self.score(item, task))
                bar.update(1)
        return out
