"""What every bias probe shares: the :class:`Probe` value and the record of its rewrite, the three ways to
rewrite (:class:`RuleProbe` by rule, :class:`LMProbe` with a rewriter LM, :class:`PromptProbe` on the judge's
prompt), and probe look-up.

A probe changes an item's judged text (or, for a prompt probe, the judge's prompt) in a way that should not
change a fair judge's verdict, and says which way the bias it targets would move the judge. The rewritten text
stays where the judged text sits, so the prompt up to that slot is byte-for-byte the one the unprobed judgment
sent (a backend with a prefix cache reuses it). Every rewrite is kept as a :class:`ProbeRecord` for review;
rewrites are deterministic for the same probe parameters (``seed`` included) and item.
"""

from __future__ import annotations

import random
import re
from collections.abc import Hashable, Iterable, Sequence
from typing import ClassVar, Literal, NamedTuple

from pydantic import BaseModel, ConfigDict

from mitigate.constraints import Interval, Options
from mitigate.data import Item
from mitigate.errors import ConfigError
from mitigate.judge import Judge
from mitigate.lm import LM, LMRequest, Message
from mitigate.measures import Task
from mitigate.prompt import JudgePrompt, PromptMessage
from mitigate.registry import Component, registered

Direction = Literal["up", "down", "any"]
"""Which way the probed bias moves a judge: ``up`` (higher score / prefers the probed side), ``down``,
``any``."""

Side = Literal["a", "b"]
"""Which text of a pairwise item a probe rewrites: ``a`` (``output``) or ``b`` (``output_b``)."""

Level = Literal["text", "prompt"]
"""What a probe perturbs: the judged ``text`` (the item), or the judge's ``prompt`` (the rubric, the user
turn)."""


class ProbeRecord(BaseModel):
    """One rewrite, kept for review.

    ``field`` is the item field rewritten (``output``, ``output_b``, or ``prompt``); ``added`` the text the
    probe inserted or the rewriter's instruction; ``model`` and ``raw`` the rewriter and its unedited answer
    (LM-assisted probes). ``error`` says why no probed text exists: such an item is left out of the probe's
    measures and counted, never judged on a made-up text.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")
    probe: str
    item_id: str
    field: str
    original: str
    probed: str
    added: str = ""
    model: str | None = None
    raw: str | None = None
    error: str | None = None

    @property
    def ok(self) -> bool:
        """True when the rewrite produced a probed text."""
        return self.error is None


class ProbedItem(NamedTuple):
    """The probed copy of an item (None when the rewrite failed) and the record of the rewrite."""

    item: Item | None
    record: ProbeRecord


class Probe(Component):
    """Base of every bias probe: a frozen, seedable value that rewrites one text of an item.

    Parameters:
        seed: varies the wording drawn for each item (a function of ``seed``, the probe and the item id).
        side: for a pairwise item, the text to rewrite: ``a`` (``output``) or ``b`` (``output_b``).

    Class attributes: ``predicts`` (:data:`Direction`), ``ideal`` (what a fair judge does: ``"unchanged"``;
    ``"down"`` for a probe that inserts a real error, where a robustness rate near 1 means the judge
    *overlooks* it), ``needs_rewriter`` and ``family`` (CALM / OffsetBias name of the bias).
    """

    seed: int = 0
    side: Side = "a"
    level: ClassVar[Level] = "text"
    predicts: ClassVar[Direction] = "up"
    ideal: ClassVar[Literal["unchanged", "down"]] = "unchanged"
    needs_rewriter: ClassVar[bool] = False
    family: ClassVar[str] = ""
    parameter_constraints: ClassVar = {"side": [Options("a", "b")], "seed": [Interval(int)]}

    @property
    def name(self) -> str:
        """The registered name, with the side when it is ``b``."""
        return self.registry_name + ("[b]" if self.side == "b" else "")

    def direction(self) -> Direction:
        """The direction this probe's bias predicts (a parameter may set it; default :attr:`predicts`)."""
        return self.predicts

    def field_for(self, item: Item) -> str:
        """The field rewritten on ``item``: ``output``, or ``output_b`` for side b of a pairwise item."""
        if self.side == "b":
            if not item.pairwise:
                raise ConfigError(
                    f"probe {self.registry_name!r} with side='b' rewrites the second text of a pairwise "
                    f"item; item {item.id!r} has only one text (use side='a')"
                )
            return "output_b"
        return "output"

    def rng(self, item: Item) -> random.Random:
        """The random source of one item's rewrite: a function of the probe name, ``seed`` and the item id."""
        return random.Random(f"{self.registry_name}|{self.seed}|{item.id}")

    async def aprobe(self, item: Item, rewriter: LM | None = None) -> ProbedItem:
        """The probed item and its record (LM-assisted probes call ``rewriter``)."""
        raise NotImplementedError


class RuleProbe(Probe):
    """A probe that rewrites by rule (no LM): subclasses implement :meth:`rewrite`."""

    def rewrite(self, text: str, rng: random.Random) -> tuple[str, str]:
        """``(probed text, the text added)`` for ``text``, drawing any choice from ``rng``."""
        raise NotImplementedError

    def apply(self, item: Item) -> ProbedItem:
        """The probed copy of ``item`` and the record of the rewrite."""
        field = self.field_for(item)
        original = item.field(field)
        probed, added = self.rewrite(original, self.rng(item))
        record = ProbeRecord(
            probe=self.name, item_id=item.id, field=field, original=original, probed=probed, added=added
        )
        return ProbedItem(item.model_copy(update={field: probed}), record)

    async def aprobe(self, item: Item, rewriter: LM | None = None) -> ProbedItem:
        """:meth:`apply` (a rule-based probe ignores ``rewriter``)."""
        return self.apply(item)


Where = Literal["start", "end"]
"""Where an insertion goes: before the text or after it."""

_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=\S)")


def sentences(text: str) -> list[str]:
    """``text`` split into sentences at ``.``, ``!`` or ``?`` followed by white space (line breaks too)."""
    return [s for s in _SENTENCE_END.split(" ".join(text.split())) if s]


def join(text: str, added: str, where: Where, sep: str = " ") -> str:
    """``added`` placed before (``start``) or after (``end``) ``text``, separated by ``sep``."""
    body = text.rstrip() if where == "end" else text.lstrip()
    return f"{added}{sep}{body}" if where == "start" else f"{body}{sep}{added}"


_HEADER = re.compile(r"^[ \t]{0,3}#{1,6}[ \t]+", re.MULTILINE)
_ITEM = re.compile(r"^[ \t]*(?:[-*+•]|\d{1,3}[.)])[ \t]+", re.MULTILINE)
_EMPHASIS = re.compile(r"(\*\*|__)(?=\S)(.+?)(?<=\S)\1|(?<![\w*])\*(?=\S)([^*\n]+?)(?<=\S)\*(?![\w*])")
_CODE = re.compile(r"`([^`\n]+)`")


def has_markdown(text: str) -> bool:
    """Whether ``text`` holds markdown marks: headers, list items, bold or italic spans, inline code."""
    return bool(_HEADER.search(text) or _ITEM.search(text) or _EMPHASIS.search(text) or _CODE.search(text))


def _unmark(line: str) -> str:
    line = _EMPHASIS.sub(lambda m: m.group(2) or m.group(3), line)
    return _CODE.sub(r"\1", line)


def to_plain(text: str) -> str:
    """Markdown as plain running text: marks removed, each header, list item or line one sentence, in
    order."""
    parts = []
    for raw in text.splitlines():
        line = _unmark(_ITEM.sub("", _HEADER.sub("", raw))).strip()
        if not line:
            continue
        parts.append(line if line[-1] in ".!?:;" else line + ".")
    return " ".join(parts)


def has_list(text: str) -> bool:
    """Whether ``text`` holds markdown list items (bullets or numbered)."""
    return bool(_ITEM.search(text))


def to_bullets(text: str) -> str:
    """Running text as a markdown bullet list, one sentence per item (words unchanged)."""
    return "\n".join(f"- {s}" for s in sentences(text) or [text.strip()])


FRAME = (
    "You edit texts for a robustness test. {task}\n"
    "Keep the language, the rough length and every other detail as they are. Reply with the edited text "
    "only, with no comment before or after it.\n\nText:\n{text}"
)
"""The request every LM-assisted probe sends (this project's wording); ``task`` is the probe's edit."""

_LEADIN = re.compile(r"^\s*(?:edited|rewritten|revised)?\s*text\s*:\s*", re.IGNORECASE)


def _clean(raw: str) -> str:
    text = _LEADIN.sub("", raw.strip())
    if len(text) >= 2 and text[0] == text[-1] and text[0] in "\"'":
        text = text[1:-1].strip()
    return text


class LMProbe(Probe):
    """A probe whose rewrite a rewriter LM writes; subclasses give the edit as ``edit`` (or :meth:`task`).

    ``temperature`` and ``max_tokens`` are the rewrite request's (its seed is ``seed``). An answer that is
    empty or identical to the original is a recorded failure (``record.error``), never judged.
    """

    temperature: float = 0.0
    max_tokens: int = 512
    needs_rewriter: ClassVar[bool] = True
    parameter_constraints: ClassVar = {
        **Probe.parameter_constraints,
        "temperature": [Interval(float, 0, 2)],
        "max_tokens": [Interval(int, 1)],
    }

    edit: ClassVar[str] = ""
    """The edit the rewriter is asked to make (what :meth:`task` returns unless a subclass words it)."""

    def task(self) -> str:
        """The one-sentence edit the rewriter is asked to make."""
        return self.edit

    def request(self, text: str) -> LMRequest:
        """The rewrite request for ``text``."""
        return LMRequest(
            messages=(Message(role="user", content=FRAME.format(task=self.task(), text=text)),),
            temperature=self.temperature,
            max_tokens=self.max_tokens,
            seed=self.seed,
        )

    async def aprobe(self, item: Item, rewriter: LM | None = None) -> ProbedItem:
        """Ask ``rewriter`` for the probed text; a ConfigError without one, a recorded failure for a bad
        answer."""
        if rewriter is None:
            raise ConfigError(
                f"probe {self.registry_name!r} rewrites the judged text with an LM; expected a rewriter "
                "backend (rewriter=mitigate.lm.get(...), or --rewriter SPEC); got none"
            )
        field = self.field_for(item)
        original = item.field(field)
        response = await rewriter.complete(self.request(original))
        raw = response.choices[0].text if response.choices else ""
        text = _clean(raw)
        error = None
        if not text:
            error = "the rewriter's answer was empty"
        elif " ".join(text.split()) == " ".join(original.split()):
            error = "the rewriter returned the text unchanged"
        record = ProbeRecord(
            probe=self.name,
            item_id=item.id,
            field=field,
            original=original,
            probed=text if error is None else "",
            added=self.task(),
            model=response.model or rewriter.spec,
            raw=raw,
            error=error,
        )
        return ProbedItem(None if error else item.model_copy(update={field: text}), record)


NO_TARGET = "<no original value>"
"""The target of an item whose original judgment gave no value, for a probe whose change depends on it."""


class PromptProbe(Probe):
    """A probe that perturbs the judge's prompt (its options, its criteria, its user turn), not the judged
    text; subclasses implement :meth:`apply_prompt`.

    :meth:`perturb` returns the perturbed judge (a new one), measured by :func:`~mitigate.probes.run_probes`
    against the same original judgments and rerun as every other probe. A probe whose change depends on the
    original verdict gives it by :meth:`target`; items with the same target share one perturbed judge. A
    prompt the probe cannot apply to is one ConfigError line, before any call.
    """

    level: ClassVar[Level] = "prompt"

    def target(self, value: float | None, prompt: JudgePrompt, task: Task) -> Hashable:
        """What the change argues for on an item whose original value is ``value`` (the score, or pairwise
        the preference for the first text): None when the same for every item, :data:`NO_TARGET` when it
        needs a value and there is none."""
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


def add_to_user_turn(prompt: JudgePrompt, text: str) -> JudgePrompt:
    """``prompt`` with ``text`` as a paragraph at the end of its last user message, before the template's
    answer stub (the rest of the template unchanged byte for byte)."""
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


def probe_names(*, rule_only: bool = False, level: Level | None = None) -> list[str]:
    """The registered probe names, sorted: with ``rule_only`` the rule-based probes of the judged text; with
    ``level`` those perturbing the text or the prompt."""
    out = []
    for name, cls in sorted(registered("probe").items()):
        if name.startswith("test-") or not (isinstance(cls, type) and issubclass(cls, Probe)):
            continue
        if rule_only and (cls.needs_rewriter or cls.level != "text"):
            continue
        if level is not None and cls.level != level:
            continue
        out.append(name)
    return out


def resolve_probes(spec: str | Sequence[str | Probe], *, rewriter: bool = False) -> list[Probe]:
    """Probes from ``"all"``, ``"authority,bandwagon"`` or a list of names / probes.

    ``"all"`` is every registered rule-based probe of the judged text, plus the LM-assisted ones
    when ``rewriter`` is True (a rewriter backend was given); probes of the prompt (option order,
    criterion order, social pressure) apply to some templates only and are named explicitly. A
    name that is not registered is a ConfigError listing the names.
    """
    items: Iterable[str | Probe]
    if isinstance(spec, str):
        parts = [p.strip() for p in spec.split(",") if p.strip()]
        if parts == ["all"]:
            return [registered("probe")[n]() for n in probe_names(rule_only=not rewriter, level="text")]
        items = parts
    else:
        items = spec
    out: list[Probe] = []
    known = probe_names()
    for p in items:
        if isinstance(p, Probe):
            out.append(p)
            continue
        if p == "all":
            raise ConfigError(
                "expected 'all' on its own or a comma-separated list of probe names; got 'all' in a list"
            )
        if p not in known:
            raise ConfigError(f"unknown probe {p!r}; expected 'all' or some of {known}")
        out.append(registered("probe")[p]())
    if not out:
        raise ConfigError(f"expected at least one probe ('all' or some of {known}); got none")
    names = [p.name for p in out]
    dup = sorted({n for n in names if names.count(n) > 1})
    if dup:
        raise ConfigError(f"expected each probe once; got {dup} more than once")
    return out


def check_rewriter(probes: Sequence[Probe], rewriter: LM | None) -> None:
    """Refuse, before any call, LM-assisted probes without a rewriter backend (one line naming them)."""
    needing = [p.name for p in probes if p.needs_rewriter]
    if needing and rewriter is None:
        raise ConfigError(
            f"probes {needing} rewrite the judged text with an LM; expected a rewriter backend "
            "(rewriter=mitigate.lm.get(...), or --rewriter SPEC on the command line); got none"
        )
