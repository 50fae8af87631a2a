"""Criterion order (Stureborg et al. 2024): a prompt scoring several criteria asks them in another order.

The judged text is unchanged; the criteria of a multi-criterion rating prompt (the one the
``multi-attribute`` mitigation builds, one answer line per criterion) are asked and answered in
another order, through that mitigation's own ``order`` parameter, looked up in the registry.
A prompt scoring one criterion, or a free-form template that lists its criteria in its own
words (which cannot be reordered without rewriting it), is refused in one line.
"""

from __future__ import annotations

import random
from collections.abc import Hashable
from typing import ClassVar, Literal

from mitigate.constraints import Options
from mitigate.errors import ConfigError
from mitigate.judge import Judge, PromptJudge
from mitigate.probes._base import Direction
from mitigate.probes._prompt_probe import PromptProbe
from mitigate.prompt import JudgePrompt
from mitigate.registry import register, registered


@register("probe", "criterion-order")
class CriterionOrder(PromptProbe):
    """Ask a multi-criterion prompt's criteria in another order: ``reverse`` (default) or a seeded
    ``shuffle``."""

    order: Literal["reverse", "shuffle"] = "reverse"
    predicts: ClassVar[Direction] = "any"
    family: ClassVar[str] = "criterion order"
    parameter_constraints: ClassVar = {
        **PromptProbe.parameter_constraints,
        "order": [Options("reverse", "shuffle")],
    }

    def new_order(self, names: list[str]) -> list[str]:
        """The criteria names in the probed order (never the same order)."""
        if self.order == "reverse":
            return names[::-1]
        rng = random.Random(f"criterion-order|{self.seed}|{','.join(names)}")
        while True:
            out = names[:]
            rng.shuffle(out)
            if out != names:
                return out

    def _rebuilt(self, leaf: PromptJudge, order: list[str]) -> JudgePrompt:
        multi = registered("mitigation")["multi-attribute"](order=tuple(order))
        return multi.wrap(leaf).leaves()[0].prompt

    def _leaf(self, leaf: PromptJudge) -> Judge:
        names = [c.name for c in leaf.prompt.criteria]
        if len(names) < 2:
            raise ConfigError(
                "criterion-order reorders the criteria of a prompt scoring several; expected "
                f"two or more criteria; got {names or 'none'}"
            )
        if self._rebuilt(leaf, names) != leaf.prompt:
            raise ConfigError(
                "criterion-order reorders criteria a prompt lists as separate parts (the multi-attribute "
                f"rating prompt); expected such a prompt; got a free-form template that names {names} in "
                "its own words"
            )
        return leaf.with_prompt(self._rebuilt(leaf, self.new_order(names)))

    def perturb(self, judge: Judge, target: Hashable = None) -> Judge:
        """``judge`` with every multi-criterion prompt asking its criteria in the new order."""
        return judge.map_leaves(self._leaf)

    def apply_prompt(self, prompt: JudgePrompt, target: Hashable = None) -> JudgePrompt:
        """Refused on a bare prompt: the multi-criterion prompt is rebuilt through its judge
        (:meth:`perturb`)."""
        raise ConfigError(
            "criterion-order rebuilds the multi-criterion prompt of a judge; expected probe.perturb(judge)"
        )

    def change(self, prompt: JudgePrompt, target: Hashable = None) -> tuple[str, str, str]:
        """The criteria order before and after."""
        names = [c.name for c in prompt.criteria]
        new = self.new_order(names)
        return ", ".join(names), ", ".join(new), f"criteria asked as {', '.join(new)}"
