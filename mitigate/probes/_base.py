"""What every bias probe shares: the :class:`Probe` value, the record of its rewrite, and probe look-up.

A probe rewrites the *judged text* of an item (its ``output``, or one side of a pairwise
item) in a way that should not change a fair judge's verdict — a fake citation, a claim that
most readers liked it, a markdown make-over — and says which way the bias it targets would
move the judge (:attr:`Probe.predicts`: ``"up"`` = a higher score, or a preference for the
probed side; ``"down"``; ``"any"`` when the literature predicts no direction). The rewritten
text stays where the judged text sits, so the prompt up to that slot (instructions, demos, the
source document) is byte-for-byte the one the unprobed judgment sent, and a backend with a
prefix cache reuses it.

Every rewrite is kept as a :class:`ProbeRecord` (the original text, the probed text, what was
added, and for an LM-assisted probe the model and its raw answer) so a reviewer can read what
the judge saw. Rewrites are deterministic: the same probe parameters (``seed`` included) and
item give the same text.

Rule-based probes (:class:`RuleProbe`) need nothing but the item; LM-assisted ones
(:class:`~mitigate.probes._rewrite.LMProbe`) need a rewriter backend, and refuse with one line
without one.
"""

from __future__ import annotations

import random
from collections.abc import Iterable, Sequence
from typing import ClassVar, Literal, NamedTuple

from pydantic import BaseModel, ConfigDict

from mitigate.constraints import Interval, Options
from mitigate.data import Item
from mitigate.errors import ConfigError
from mitigate.lm import LM
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

    ``field`` is the item field rewritten (``output`` or ``output_b``); ``added`` the text the
    probe inserted (for a rule-based probe) or the rewriter's instruction summary; ``model``
    and ``raw`` the rewriter and its unedited answer (LM-assisted probes only). ``error`` says
    why no probed text exists (an LM rewrite that came back empty or unchanged): such an item
    is left out of the probe's measures and counted, never judged on a made-up text.
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
        seed: varies the wording drawn for each item (a probe has several phrasings of its
            insertion; which one an item gets is a function of ``seed``, the probe and the item id).
        side: for a pairwise item, the text to rewrite: ``a`` (``output``) or ``b``
            (``output_b``). A pointwise item always has its ``output`` rewritten.

    Class attributes: ``predicts`` (:data:`Direction`), ``ideal`` (what a fair judge does:
    ``"unchanged"`` for a bias probe; ``"down"`` for a probe that inserts a real error, where
    a robustness rate near 1 means the judge *overlooks* the error), ``needs_rewriter`` and
    ``family`` (CALM / OffsetBias name of the bias).
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

    def with_text(self, item: Item, field: str, text: str) -> Item:
        """A copy of ``item`` with ``field`` replaced by ``text`` (every other field unchanged)."""
        return item.model_copy(update={field: text})

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
        return ProbedItem(self.with_text(item, field, probed), record)

    async def aprobe(self, item: Item, rewriter: LM | None = None) -> ProbedItem:
        """:meth:`apply` (a rule-based probe ignores ``rewriter``)."""
        return self.apply(item)


# --------------------------------------------------------------------------- look-up


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
