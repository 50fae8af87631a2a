"""Rubric-option order (Ghazarian et al. 2024): the template's score options listed in another order.

The judged text is unchanged; the prompt's scoring guideline is reordered with the guideline perturbation
machinery of :mod:`mitigate.prompt._perturb` (:class:`~mitigate.prompt._perturb.OrderPerturbation`). Each
option moves as a whole, its score label ("Score 2: ", "B: ... Score: Two") with its description, so every
option still means what it meant; only the order the judge reads them in changes. A prompt without a parsed
guideline (no options) is refused in one line.
"""

from __future__ import annotations

from collections.abc import Hashable
from typing import ClassVar, Literal

from mitigate.constraints import Options
from mitigate.errors import ConfigError, TemplateError
from mitigate.probes._base import Direction
from mitigate.probes._prompt_probe import PromptProbe
from mitigate.prompt import JudgePrompt, OrderPerturbation, apply_to_prompt, guideline_of, order_perturbations
from mitigate.registry import register


@register("probe", "option-order")
class OptionOrder(PromptProbe):
    """List the template's score options in another order: ``reverse`` (default) or a seeded ``shuffle``."""

    order: Literal["reverse", "shuffle"] = "reverse"
    predicts: ClassVar[Direction] = "any"
    family: ClassVar[str] = "option order"
    parameter_constraints: ClassVar = {
        **PromptProbe.parameter_constraints,
        "order": [Options("reverse", "shuffle")],
    }

    def perturbation(self, prompt: JudgePrompt) -> OrderPerturbation:
        """The reordering applied to ``prompt``'s guideline (by original option position)."""
        try:
            n = len(guideline_of(prompt).options)
        except TemplateError:
            raise ConfigError(
                "option-order reorders the template's score options; expected a template whose options were "
                "read ('Score 1: ...', 'A: ...'; see mitigate prompts inspect); got one "
                "with no options"
            ) from None
        if self.order == "reverse":
            return OrderPerturbation(order=tuple(range(n - 1, -1, -1)))
        return order_perturbations(prompt, max_n=1, seed=self.seed)[0]

    def apply_prompt(self, prompt: JudgePrompt, target: Hashable = None) -> JudgePrompt:
        """``prompt`` with its options reordered (ConfigError for a prompt without options)."""
        return apply_to_prompt(self.perturbation(prompt), prompt)

    def change(self, prompt: JudgePrompt, target: Hashable = None) -> tuple[str, str, str]:
        """The guideline before and after, and the reordering's name."""
        assert prompt.guideline is not None
        after = self.apply_prompt(prompt)
        assert after.guideline is not None
        return prompt.guideline.render(), after.guideline.render(), self.perturbation(prompt).name
