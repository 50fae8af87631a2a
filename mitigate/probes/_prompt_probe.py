"""Probes of the prompt: what the judge is *told* changes, the judged text stays as it is.

The text probes rewrite an item; a :class:`PromptProbe` instead transforms the judge's prompt
(its scoring options, its criteria, its user turn) in a way that should not change a fair
verdict: the options listed in another order, the criteria asked in another order, a
confident stranger's opinion added to the request. :meth:`PromptProbe.perturb` returns the
perturbed judge (a new judge; the one given is unchanged, as every ``map_prompts`` is), so
:func:`mitigate.probes._battery.run_probes` measures it against the same original judgments,
rerun and noise floor as every other probe.

Some probes depend on the original verdict (social pressure argues for the other end of the
scale): :meth:`PromptProbe.target` gives, from an item's original value, what the prompt change
argues for; items with the same target share one perturbed judge. A probe that cannot be made
coherent on a prompt (no options to reorder, one criterion) raises a one-line
:class:`~mitigate.errors.ConfigError` naming what it expected, before any call.

Each item still gets a :class:`~mitigate.probes._base.ProbeRecord` (``field="prompt"``): the part
of the prompt before and after the change, and what was added, for review.
"""

from __future__ import annotations

from collections.abc import Hashable
from typing import ClassVar

from mitigate.data import Item
from mitigate.errors import ConfigError
from mitigate.judge import Judge
from mitigate.lm import LM
from mitigate.measures import Task
from mitigate.probes._base import Level, Probe, ProbedItem, ProbeRecord
from mitigate.prompt import JudgePrompt, PromptMessage


class PromptProbe(Probe):
    """A probe that perturbs the judge's prompt, not the judged text; subclasses implement
    :meth:`apply_prompt`."""

    level: ClassVar[Level] = "prompt"

    def target(self, value: float | None, prompt: JudgePrompt, task: Task) -> Hashable:
        """What the change argues for on an item whose original value is ``value`` (None: the same for all
        items).

        A probe whose change depends on the original verdict returns it here; ``value`` is the
        original score (or, pairwise, the preference for the first text: +1, 0, -1). An item
        whose original judgment has no value gets :data:`NO_TARGET` from such a probe.
        """
        return None

    def apply_prompt(self, prompt: JudgePrompt, target: Hashable = None) -> JudgePrompt:
        """The perturbed copy of ``prompt`` (ConfigError when the probe cannot apply to it)."""
        raise NotImplementedError

    def change(self, prompt: JudgePrompt, target: Hashable = None) -> tuple[str, str, str]:
        """``(the part of the prompt before, after, what was added)`` for the record."""
        before = "\n\n".join(prompt.template_text())
        after = "\n\n".join(self.apply_prompt(prompt, target).template_text())
        return before, after, self.registry_name

    def perturb(self, judge: Judge, target: Hashable = None) -> Judge:
        """``judge`` with every prompt perturbed (a new judge; ``judge`` is unchanged)."""
        return judge.map_prompts(lambda p: self.apply_prompt(p, target))

    def record(
        self, item: Item, prompt: JudgePrompt, target: Hashable = None, error: str | None = None
    ) -> ProbeRecord:
        """The review record of one item judged under the perturbed prompt."""
        if error is not None:
            return ProbeRecord(
                probe=self.name, item_id=item.id, field="prompt", original="", probed="", error=error
            )
        before, after, added = self.change(prompt, target)
        return ProbeRecord(
            probe=self.name, item_id=item.id, field="prompt", original=before, probed=after, added=added
        )

    async def aprobe(self, item: Item, rewriter: LM | None = None) -> ProbedItem:
        """Refused: a prompt probe changes the judge, not the item (:meth:`perturb`)."""
        raise ConfigError(
            f"probe {self.registry_name!r} perturbs the judge's prompt, not the judged text; "
            "expected it to be run by run_probes (or probe.perturb(judge)); got a call to "
            "rewrite an item"
        )


NO_TARGET = "<no original value>"
"""The target of an item whose original judgment gave no value, for a probe whose change depends on it."""


def add_to_user_turn(prompt: JudgePrompt, text: str) -> JudgePrompt:
    """``prompt`` with ``text`` as a paragraph at the end of its last user message, before the answer stub.

    The template's answer stub (``###Feedback: ``, ``- Coherence:``) still ends the message; the
    rest of the template is unchanged byte for byte.
    """
    users = [k for k, m in enumerate(prompt.messages) if m.role == "user"]
    if not users:
        raise ConfigError(
            f"expected a prompt with a user message to add to; got only {[m.role for m in prompt.messages]}"
        )
    idx = users[-1]
    template = prompt.messages[idx].template
    stub = prompt.answer_stub(idx)
    body = template[: len(template) - len(stub)] if stub else template
    core = body.rstrip()
    new = core + "\n\n" + text + body[len(core) :] + stub
    messages = tuple(
        PromptMessage(role=m.role, template=new) if k == idx else m for k, m in enumerate(prompt.messages)
    )
    return prompt.model_copy(update={"messages": messages})
