"""Guideline perturbations: reordered score options and lengthened option descriptions (Ghazarian et al.
2024: a judge's answer changes with either), as frozen values naming options by their **original
position**, so a perturbation applies the same to a reordered guideline. Lengthened descriptions are never
invented silently: they come from the user or from the rewrite step (:func:`lengthen_guideline`), whose
:class:`Rewrite` records can be stored and reviewed. :func:`perturbation_set` is the strategies' entry point.
"""

from __future__ import annotations

import itertools
import math
import random
import re
from collections.abc import Mapping, Sequence
from typing import Literal, TypeVar

from pydantic import BaseModel, ConfigDict, field_validator

from mitigate.constraints import Interval, check_param
from mitigate.errors import ConfigError, ParseError, TemplateError
from mitigate.lm import LM, LMRequest, Message
from mitigate.prompt._judge_prompt import JudgePrompt
from mitigate.prompt._parts import Guideline, ScoreOption

_P = TypeVar("_P")
PerturbationKind = Literal["order", "length", "both"]
"""Which perturbations to build: option order, lengthened descriptions, or both at once."""

DEFAULT_ORDER_SAMPLE = 6
"""How many reorderings :func:`order_perturbations` samples for 4+ options when ``max_n`` is not given."""

_POSITIVE = [Interval(int, 1), None]
_PERMUTATION_ENUM_LIMIT = 8  # up to this many options, all permutations are listed before sampling


def guideline_of(
    source: Guideline | JudgePrompt | None, use: str = "guideline perturbations", instead: str = ""
) -> Guideline:
    """The guideline to perturb or show: ``source``, or a prompt's parsed guideline (TemplateError when none,
    naming the ``use`` that needs it and what to do ``instead``)."""
    if isinstance(source, Guideline):
        return source
    if isinstance(source, JudgePrompt):
        if source.guideline is None:
            raise TemplateError(
                f"{use} need the prompt's score options written one per line (such as '1: ...' or 'Score 1 "
                f"means ...'); this prompt has none (criteria={[c.name for c in source.criteria]})"
                + (f"; {instead}" if instead else "")
            )
        return source.guideline
    raise TemplateError(
        f"{use} need a prompt with score options written one per line; got {type(source).__name__}"
    )


def _normalised(guideline: Guideline) -> tuple[ScoreOption, ...]:
    """The options in their current order, each with its original position (a hand-built guideline whose
    positions are all 0 is read in its current order)."""
    n = len(guideline.options)
    positions = [o.position for o in guideline.options]
    if sorted(positions) == list(range(n)):
        return guideline.options
    if all(p == 0 for p in positions):
        return tuple(o.model_copy(update={"position": i}) for i, o in enumerate(guideline.options))
    raise TemplateError(
        f"expected the guideline's option positions to be a permutation of 0..{n - 1}; got {positions}"
    )


def original_order(guideline: Guideline) -> Guideline:
    """A copy of ``guideline`` with its options back in their original order (descriptions kept)."""
    return guideline.model_copy(
        update={"options": tuple(sorted(_normalised(guideline), key=lambda o: o.position))}
    )


class Perturbation(BaseModel):
    """A change to a scoring guideline that should not change a judge's answer; ``name`` keys
    ``Judgment.meta["perturbations"]``."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    @property
    def name(self) -> str:
        """A short, readable identifier (unique within a perturbation set)."""
        raise NotImplementedError(f"{type(self).__name__} must implement name")

    def apply(self, guideline: Guideline) -> Guideline:
        """The perturbed copy of ``guideline``."""
        raise NotImplementedError(f"{type(self).__name__} must implement apply()")

    def is_identity(self, guideline: Guideline) -> bool:
        """True when applying this perturbation leaves ``guideline``'s text unchanged."""
        return self.apply(guideline).render() == guideline.render()


class OrderPerturbation(Perturbation):
    """List the guideline's options in another order: ``order[k]`` is the original position of the option
    shown k-th (separators stay put); ``name`` is ``"order(2,0,1)"``."""

    kind: Literal["order"] = "order"
    order: tuple[int, ...]

    @field_validator("order")
    @classmethod
    def _check_order(cls, v: tuple[int, ...]) -> tuple[int, ...]:
        if len(v) < 2 or sorted(v) != list(range(len(v))):
            raise ConfigError(
                f"The 'order' parameter of OrderPerturbation must be a permutation of 0..n-1 with n >= 2. "
                f"Got {list(v)} instead."
            )
        return v

    @property
    def name(self) -> str:
        """``"order(i,j,k)"`` with original positions."""
        return f"order({','.join(str(i) for i in self.order)})"

    def apply(self, guideline: Guideline) -> Guideline:
        """Options in ``order`` (by original position); separators unchanged."""
        by_pos = {o.position: o for o in _normalised(guideline)}
        if len(self.order) != len(by_pos):
            raise TemplateError(
                f"{self.name} reorders {len(self.order)} options; the guideline has {len(by_pos)}"
            )
        return guideline.model_copy(update={"options": tuple(by_pos[i] for i in self.order)})


class LengthenPerturbation(Perturbation):
    """Replace the description of the option at original position ``option`` with ``text``, a longer one of
    the same meaning (its ``head``/``tail`` stay); ``name`` is ``"lengthen(2)"``."""

    kind: Literal["length"] = "length"
    option: int
    text: str

    @field_validator("option")
    @classmethod
    def _check_option(cls, v: int) -> int:
        return check_param("LengthenPerturbation", "option", v, [Interval(int, 0)])

    @field_validator("text")
    @classmethod
    def _check_text(cls, v: str) -> str:
        if not v.strip():
            raise ConfigError(
                "The 'text' parameter of LengthenPerturbation must be a non-empty description. Got ''."
            )
        if "\n" in v or "\r" in v:
            raise ConfigError(
                "The 'text' parameter of LengthenPerturbation must be one line (a guideline option is one "
                f"line). Got {v[:60]!r}... with a line break instead."
            )
        return v

    @property
    def name(self) -> str:
        """``"lengthen(i)"`` with the option's original position."""
        return f"lengthen({self.option})"

    def apply(self, guideline: Guideline) -> Guideline:
        """The option at original position ``option`` gets ``text`` as its description."""
        options = _normalised(guideline)
        if not 0 <= self.option < len(options):
            raise TemplateError(
                f"{self.name} targets original position {self.option}; the guideline has positions "
                f"0..{len(options) - 1}"
            )
        changed = tuple(o.with_description(self.text) if o.position == self.option else o for o in options)
        return guideline.model_copy(update={"options": changed})


class Combined(Perturbation):
    """A reordering and a lengthened description at once (lengthened first, by original position); ``name``
    is ``"order(2,0,1)+lengthen(1)"``."""

    kind: Literal["both"] = "both"
    order: OrderPerturbation
    lengthen: LengthenPerturbation

    @property
    def name(self) -> str:
        """``"<order name>+<lengthen name>"``."""
        return f"{self.order.name}+{self.lengthen.name}"

    def apply(self, guideline: Guideline) -> Guideline:
        """Lengthen, then reorder."""
        return self.order.apply(self.lengthen.apply(guideline))


def apply_to_prompt(perturbation: Perturbation, prompt: JudgePrompt) -> JudgePrompt:
    """A copy of ``prompt`` whose guideline is perturbed (TemplateError when it has none)."""
    return prompt.with_guideline(perturbation.apply(guideline_of(prompt)))


def order_perturbations(
    guideline: Guideline | JudgePrompt, max_n: int | None = None, seed: int = 0
) -> list[OrderPerturbation]:
    """Reorderings of a guideline's options: every permutation in lexicographic order (2-3 options, or
    ``max_n`` that many), else a seeded sample of ``max_n`` (default 6) without the identity."""
    check_param("order_perturbations", "max_n", max_n, _POSITIVE)
    n_opts = len(guideline_of(guideline).options)
    total = math.factorial(n_opts)
    if (max_n is None and n_opts <= 3) or (max_n is not None and max_n >= total):
        return [OrderPerturbation(order=p) for p in itertools.permutations(range(n_opts))]
    want = max_n if max_n is not None else DEFAULT_ORDER_SAMPLE
    want = min(want, total - 1)
    identity = tuple(range(n_opts))
    rng = random.Random(seed)
    if n_opts <= _PERMUTATION_ENUM_LIMIT:
        pool = [p for p in itertools.permutations(range(n_opts)) if p != identity]
        picked = rng.sample(pool, want)
    else:
        seen: set[tuple[int, ...]] = set()
        picked = []
        while len(picked) < want:
            perm = list(identity)
            rng.shuffle(perm)
            t = tuple(perm)
            if t != identity and t not in seen:
                seen.add(t)
                picked.append(t)
    return [OrderPerturbation(order=p) for p in picked]


def lengthen_perturbations(
    guideline: Guideline | JudgePrompt,
    lengthened: Mapping[str, str] | None,
    max_n: int | None = None,
    seed: int = 0,
) -> list[LengthenPerturbation]:
    """One :class:`LengthenPerturbation` per option label in ``lengthened`` (label -> longer description),
    in guideline order; with ``max_n`` smaller than that, a seeded sample of ``max_n``."""
    check_param("lengthen_perturbations", "max_n", max_n, _POSITIVE)
    gl = guideline_of(guideline)
    if not lengthened:
        raise ConfigError(
            "length perturbations need lengthened option descriptions: pass lengthened={label: text} "
            "(write them, or produce them once with mitigate.prompt._perturb.lengthen_guideline(guideline, "
            "lm) and store them)"
        )
    options = original_order(gl).options
    labels = [o.label for o in options]
    unknown = [k for k in lengthened if k not in labels]
    if unknown:
        raise ConfigError(
            f"lengthened descriptions were given for option labels {unknown} that the guideline does not "
            f"have; the labels available are {labels}"
        )
    out = [
        LengthenPerturbation(option=o.position, text=lengthened[o.label])
        for o in options
        if o.label in lengthened
    ]
    return _sample(out, max_n, seed)


def _sample(items: list[_P], n: int | None, seed: int) -> list[_P]:
    """At most ``n`` of ``items``: a seeded sample, kept in order."""
    if n is None or n >= len(items):
        return items
    return [items[i] for i in sorted(random.Random(seed).sample(range(len(items)), n))]


def perturbation_set(
    guideline: Guideline | JudgePrompt,
    kind: PerturbationKind = "order",
    n: int | None = None,
    lengthened: Mapping[str, str] | None = None,
    seed: int = 0,
) -> list[Perturbation]:
    """At most ``n`` perturbations of ``guideline`` (or a prompt's), uniquely named: reorderings ("order"),
    lengthened options ("length"), or every pair of a reordering and a lengthened option ("both")."""
    check_param("perturbation_set", "n", n, _POSITIVE)
    if kind not in ("order", "length", "both"):
        raise ConfigError(
            f"The 'kind' parameter of perturbation_set must be 'order', 'length' or 'both'. Got {kind!r}."
        )
    gl = guideline_of(guideline)
    if kind == "order":
        return list(order_perturbations(gl, max_n=n, seed=seed))
    if kind == "length":
        return list(lengthen_perturbations(gl, lengthened, max_n=n, seed=seed))
    lengthens = lengthen_perturbations(gl, lengthened)
    orders = order_perturbations(gl, seed=seed)
    combos: list[Perturbation] = [Combined(order=o, lengthen=ln) for o in orders for ln in lengthens]
    return _sample(combos, n, seed)


REWRITE_INSTRUCTION = (
    "Below is one option from a scoring guideline that a grader uses to rate {criterion}. "
    "Rewrite the option's description so that it is about {factor} times as long, adding detail "
    "and wording but keeping exactly the same meaning and the same quality level: a text that "
    "fits the original description must fit the rewritten one, and no other. Do not mention "
    "the score number or any other option.\n\n"
    "Option {label}: {description}\n\n"
    "Reply with the rewritten description only, on a single line."
)
"""The request :func:`rewrite_lengthen` sends (this project's own wording)."""

_LEADIN = re.compile(r"^\s*(?:rewritten\s+description|description|option\s+\w+)\s*:\s*", re.IGNORECASE)


class Rewrite(BaseModel):
    """What the rewrite step produced for one option: ``text`` (to pass back as ``lengthened[label]``), the
    ``original`` it replaces, the ``model`` that wrote it and its ``raw`` answer."""

    model_config = ConfigDict(frozen=True, extra="forbid")
    label: str
    position: int
    original: str
    text: str
    model: str
    raw: str


def _clean_rewrite(raw: str) -> str:
    text = " ".join(raw.split())
    text = _LEADIN.sub("", text)
    if len(text) >= 2 and text[0] == text[-1] and text[0] in "\"'":
        text = text[1:-1].strip()
    return text


async def rewrite_lengthen(
    option: ScoreOption,
    lm: LM,
    *,
    criterion: str = "the text",
    factor: float = 2.0,
    temperature: float = 0.0,
    max_tokens: int = 256,
) -> Rewrite:
    """Ask ``lm`` (:data:`REWRITE_INSTRUCTION`) to lengthen ``option``'s description, flattened to one line;
    an answer empty or not longer than the original is a ParseError (a description is never made up)."""
    if factor <= 1:
        raise ConfigError(f"The 'factor' parameter of rewrite_lengthen must be > 1. Got {factor} instead.")
    prompt = REWRITE_INSTRUCTION.format(
        criterion=criterion, factor=f"{factor:g}", label=option.label, description=option.description
    )
    request = LMRequest(
        messages=(Message(role="user", content=prompt),), temperature=temperature, max_tokens=max_tokens
    )
    response = await lm.complete(request)
    raw = response.choices[0].text if response.choices else ""
    text = _clean_rewrite(raw)
    if not text:
        raise ParseError(
            f"expected a lengthened description for option {option.label!r}; got an empty answer", raw=raw
        )
    if len(text) <= len(option.description):
        raise ParseError(
            f"expected a description longer than the original ({len(option.description)} characters) for "
            f"option {option.label!r}; got {len(text)} characters: {text[:80]!r}",
            raw=raw,
        )
    return Rewrite(
        label=option.label,
        position=option.position,
        original=option.description,
        text=text,
        model=response.model or lm.spec,
        raw=raw,
    )


async def lengthen_guideline(
    guideline: Guideline | JudgePrompt,
    lm: LM,
    labels: Sequence[str] | None = None,
    *,
    factor: float = 2.0,
    temperature: float = 0.0,
) -> tuple[dict[str, str], list[Rewrite]]:
    """Lengthen the options named by ``labels`` (all when None) with :func:`rewrite_lengthen`: label -> text
    (to store and pass as ``lengthened=``) and every :class:`Rewrite` for review."""
    gl = guideline_of(guideline)
    criterion = "the text"
    if isinstance(guideline, JudgePrompt) and guideline.criteria:
        criterion = guideline.criteria[0].name
    options = original_order(gl).options
    available = [o.label for o in options]
    wanted = list(labels) if labels is not None else available
    unknown = [x for x in wanted if x not in available]
    if unknown:
        raise ConfigError(f"cannot lengthen option labels {unknown}; the labels available are {available}")
    records = [
        await rewrite_lengthen(o, lm, criterion=criterion, factor=factor, temperature=temperature)
        for o in options
        if o.label in wanted
    ]
    return {r.label: r.text for r in records}, records
