"""Guideline-perturbation consistency (Ghazarian et al. 2024): the judge that measures it and the demos that
mitigate it.

Ghazarian et al. 2024, "Assessment and mitigation of inconsistencies in LLM-based
evaluations", find that an LLM judge's answer changes when the options of its scoring
guideline are reordered or one option's description is lengthened. Their measures:
*consistency*, the share of items whose output is identical under every perturbed
guideline, and *accuracy* under each perturbation, averaged. Their mitigation: few-shot
demonstrations in which each of M demos (M=2 worked best) is shown under N perturbed
versions of the guideline, always followed by the same gold score, so the judge sees that
the perturbation must not change the answer. Their ablation shows each demo under a single
random perturbation instead.

- :class:`PerturbedGuidelines` (``"perturbed-guidelines"``) — measurement: judges each item
  under the test prompt's own guideline and under each perturbed version, keeps the
  original score, and records every version's score in ``Judgment.meta["perturbations"]``
  (read by :func:`mitigate.measures.perturbation_consistency` through the compare
  harness).
- ``perturbed-demos`` (:class:`PerturbedDemosPreset`) — the mitigation: a registered preset
  of :class:`~mitigate.strategies._demos.Demos` with ``display="perturbed"``, with the
  ablation (``ablation=True``) and the unperturbed few-shot control (``perturbed=False``,
  ``display="guideline"``) as flags.

Perturbations are built by :func:`mitigate.prompt._perturb.perturbation_set`; see that module for
how options are named and how lengthened descriptions are obtained.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from functools import partial
from typing import Any, ClassVar, Self

from pydantic import model_validator

from mitigate.constraints import Interval
from mitigate.data import Item
from mitigate.errors import ConfigError, MitigateError
from mitigate.judge import CompositeJudge, Judge, Judgment, PromptJudge, merge_judgments
from mitigate.prompt import (
    Demo,
    Guideline,
    Perturbation,
    PerturbationKind,
    apply_to_prompt,
    guideline_of,
    original_order,
    perturbation_set,
)
from mitigate.registry import Preset, register
from mitigate.scale import Scale
from mitigate.selectors import Stratified
from mitigate.strategies._base import Mitigation
from mitigate.strategies._demos import PERTURBATION_CONSTRAINTS, Demos, require_lengthened

ORIGINAL = "original"
"""The key of the unperturbed prompt's output in ``Judgment.meta["perturbations"]``."""


# --------------------------------------------------------------------------- the measurement


def _output(judgment: Judgment) -> Any:
    """The output compared across perturbations: a verdict, a score, a tuple of scores, or None."""
    if judgment.error is not None:
        return None
    if judgment.verdict is not None:
        return judgment.verdict
    if not judgment.scores:
        return None
    values = list(judgment.scores.values())
    if len(values) == 1:
        return values[0]
    return None if any(v is None for v in values) else tuple(values)


class PerturbedGuidelinesJudge(CompositeJudge):
    """The fan-out :class:`PerturbedGuidelines` builds: child ``"original"`` plus one child per perturbation.

    ``judge(item)`` runs every child concurrently and returns the original child's scores,
    samples and verdict, with the raw texts, parse failures, usage and cost of every child
    (:func:`~mitigate.judge.merge_judgments`) and:

    - ``meta["perturbations"]``: ``{"original": output, "<perturbation name>": output, ...}``
      where ``output`` is the score (one criterion), the tuple of scores in criterion order
      (several criteria; None when any is missing), or the verdict (pairwise); ``None`` for
      a parse failure or a failed call;
    - ``meta["perturbations_by_criterion"]``: ``{criterion: {name: score}}`` (several criteria only);
    - ``meta["perturbation_errors"]``: ``{name: error}`` for perturbed children whose call
      failed (present only then). A failure of the original child fails the item.

    Any meta the original child carried is kept. ``error`` is the original child's error only.
    """

    kind = "perturbed-guidelines"
    requests_are_children = True

    def __init__(self, children: dict[str, Judge], perturbations: dict[str, Perturbation]) -> None:
        if ORIGINAL not in children:
            raise ConfigError(
                f"a perturbed-guidelines judge needs a child named {ORIGINAL!r}; got {sorted(children)}"
            )
        super().__init__(children)
        self.perturbations = dict(perturbations)

    def params(self) -> dict[str, Any]:
        """The perturbations (by name) this judge applies."""
        return {"perturbations": {k: p.model_dump(mode="json") for k, p in self.perturbations.items()}}

    def map_leaves(self, fn: Callable[[PromptJudge], Judge]) -> Judge:
        """Every child's leaves mapped by ``fn``; ConfigError if that erased a perturbation.

        A transform placed after this judge that drops the guideline (``MultiAttribute``
        rebuilds the prompt without it) would leave a perturbed child asking exactly what the
        original asks, and consistency would be 100% by construction; that is refused.
        """
        mapped = self.with_children({k: c.map_leaves(fn) for k, c in self.children.items()})
        original = [leaf.prompt for leaf in mapped.children[ORIGINAL].leaves()]
        for name, child in mapped.children.items():
            if name != ORIGINAL and [leaf.prompt for leaf in child.leaves()] == original:
                raise ConfigError(
                    f"a mitigation placed after PerturbedGuidelines made the {name!r} prompts identical to "
                    "the original ones (e.g. MultiAttribute drops the guideline); expected the perturbed "
                    "guideline to survive: place PerturbedGuidelines after such mitigations"
                )
        return mapped

    async def judge(self, item: Item) -> Judgment:
        """Judge ``item`` under the original and every perturbed guideline; see the class docstring."""
        names = list(self.children)
        results = await asyncio.gather(*(self.children[k].judge(item) for k in names), return_exceptions=True)
        parts: list[Judgment] = []
        outputs: dict[str, Any] = {}
        errors: dict[str, str] = {}
        by_name: dict[str, Judgment] = {}
        for name, res in zip(names, results, strict=True):
            if isinstance(res, BaseException):
                if name == ORIGINAL or not isinstance(res, MitigateError):
                    raise res
                errors[name] = f"{type(res).__name__}: {res}"
                outputs[name] = None
                continue
            parts.append(res)
            by_name[name] = res
            outputs[name] = _output(res)
            if res.error is not None and name != ORIGINAL:
                errors[name] = res.error
        original = by_name[ORIGINAL]
        meta: dict[str, Any] = {**original.meta, "perturbations": outputs}
        if len(original.scores) > 1:
            meta["perturbations_by_criterion"] = {
                c: {
                    name: (
                        by_name[name].scores.get(c)
                        if name in by_name and by_name[name].error is None
                        else None
                    )
                    for name in names
                }
                for c in original.scores
            }
        if errors:
            meta["perturbation_errors"] = errors
        return merge_judgments(
            item.id,
            parts,
            scores=dict(original.scores),
            samples=dict(original.samples),
            verdict=original.verdict,
            error=original.error,
            meta=meta,
        )


def _leaves_with_guidelines(judge: Judge, owner: str) -> list[tuple[PromptJudge, Guideline]]:
    leaves = judge.leaves()
    if not leaves:
        raise ConfigError(
            f"{owner} needs a judge with at least one prompt; got {type(judge).__name__} with none"
        )
    return [(leaf, guideline_of(leaf.prompt)) for leaf in leaves]


@register("mitigation", "perturbed-guidelines")
class PerturbedGuidelines(Mitigation):
    """Measure consistency under guideline perturbation (Ghazarian et al. 2024); does not change scores.

    A mitigation-kind wrapper that perturbs the scoring guideline, named in ``--pipeline`` (the bias
    probes of :mod:`mitigate.probes` rewrite the judged text instead).
    Wraps a judge into a :class:`PerturbedGuidelinesJudge` that scores each item under the
    test prompt's own guideline *and* under each perturbed version of it, keeps the
    original's score as the judgment's score, and records every version's output in
    ``Judgment.meta["perturbations"]`` (key ``"original"`` plus one key per perturbation
    name, e.g. ``"order(2,0,1)"``; ``None`` for a parse failure). The compare harness's
    consistency measure (:func:`mitigate.measures.perturbation_consistency`) reads
    that key: consistency is the share of items whose output is identical under the
    original and every perturbation. Costs 1 + N calls per item.

    Parameters:
        kind: "order" (reordered options), "length" (one option's description lengthened),
            or "both" (see :func:`mitigate.prompt._perturb.perturbation_set`).
        n: how many perturbations (None: every reordering for 2–3 options, a seeded sample of
            6 for more; every lengthened option).
        lengthened: option label -> lengthened description; required for "length"/"both".
        seed: seeds the sampling of perturbations.

    Perturbations that leave the guideline unchanged (the identity ordering) are dropped,
    since the original is always judged. Every inner prompt (e.g. one per criterion after a
    single-attribute split) gets the same perturbations; their guidelines must have the same
    number of options, and for "length"/"both" the same text. Place this after
    prompt-level mitigations such as ``perturbed-demos``.
    """

    paper = "Ghazarian et al. 2024"

    kind: PerturbationKind = "order"
    n: int | None = None
    lengthened: dict[str, str] | None = None
    seed: int = 0
    parameter_constraints: ClassVar = {k: v for k, v in PERTURBATION_CONSTRAINTS.items() if k != "ablation"}

    @model_validator(mode="after")
    def _check(self) -> Self:
        require_lengthened("PerturbedGuidelines", self.kind, self.lengthened)
        return self

    def perturbations_for(self, judge: Judge) -> list[Perturbation]:
        """The perturbations this mitigation applies to ``judge``'s prompts (identity dropped)."""
        pairs = _leaves_with_guidelines(judge, "PerturbedGuidelines")
        first = pairs[0][1]
        for leaf, gl in pairs[1:]:
            if len(gl.options) != len(first.options):
                raise ConfigError(
                    "PerturbedGuidelines needs every inner prompt's guideline to have the same number of "
                    f"options; got {len(first.options)} and {len(gl.options)} ({leaf!r})"
                )
            if self.kind != "order" and original_order(gl).render() != original_order(first).render():
                raise ConfigError(
                    f"PerturbedGuidelines(kind={self.kind!r}) needs every inner prompt to share one "
                    "guideline text, since lengthened descriptions belong to one guideline; measure each "
                    "criterion's judge separately"
                )
        base = original_order(first)
        perts = [
            p
            for p in perturbation_set(base, self.kind, self.n, self.lengthened, self.seed)
            if not p.is_identity(base)
        ]
        names = [p.name for p in perts]
        if len(set(names)) != len(names) or ORIGINAL in names:
            raise ConfigError(f"expected unique perturbation names other than {ORIGINAL!r}; got {names}")
        if not perts:
            raise ConfigError(
                "PerturbedGuidelines found no perturbation that changes the guideline; nothing to measure"
            )
        return perts

    def wrap(self, judge: Judge) -> Judge:
        """A :class:`PerturbedGuidelinesJudge` over ``judge`` and one perturbed copy per perturbation."""
        perts = self.perturbations_for(judge)
        children: dict[str, Judge] = {ORIGINAL: judge}
        for p in perts:
            children[p.name] = judge.map_prompts(partial(apply_to_prompt, p))
        return PerturbedGuidelinesJudge(children, {p.name: p for p in perts})


# --------------------------------------------------------------------------- the mitigation


@register("mitigation", "perturbed-demos")
class PerturbedDemosPreset(Preset):
    """Few-shot demos shown under perturbed guidelines, each with the same gold score (Ghazarian et al. 2024).

    Each of the ``m`` demos is repeated once per perturbed version of the prompt's own
    guideline (reordered options, a lengthened description, or both; built by
    :func:`mitigate.prompt._perturb.perturbation_set`), each copy showing that guideline and then the
    same gold score. The copies are placed before the item (demo 1 under every perturbation,
    then demo 2 ...), after any demos the prompt already had; the item itself is judged
    under the prompt's guideline, unperturbed. The paper found ``m=2`` best.

    Builds ``Demos(demos=demos or selector=Stratified(by="range", seed=seed), k=m,
    display="perturbed" (perturbed=False: "guideline"), placement="append", kind, n,
    lengthened, seed, ablation)``.

    Parameters:
        demos: the demonstrations (an item and its gold score; a dict score holds one
            score per criterion and the prompt's criterion is picked). Exactly ``m`` when given.
        m: how many demos; ``fit`` picks this many.
        n: how many perturbed guidelines per demo (None: every reordering for 2–3 options,
            which includes the original order, or a seeded sample of 6 reorderings without
            it for larger scales; every lengthened option).
        kind: "order", "length" or "both".
        lengthened: option label -> lengthened description (for "length"/"both").
        seed: seeds perturbation sampling, the ablation's choice and ``fit``'s pick.
        ablation: the paper's ablation: each demo shown under ONE perturbation drawn at
            random (seeded) from the non-identity perturbations, instead of under all N.
        perturbed: False gives the unperturbed few-shot control: the same demos, each shown
            once under the original guideline (same layout, no perturbation).

    ``fit(train, judge)``: with ``demos=`` given there is nothing to learn. Otherwise a
    :class:`~mitigate.selectors.Stratified` selector (``by="range"``,
    :func:`~mitigate.selectors.stratified_pick`) draws ``m`` items over the gold-score range
    of the judge's criterion, preferring gold scores that are points of the judge's scale
    (seeded; the scale is taken from the judge's prompt at fit). When the judge scores several criteria (e.g.
    after a single-attribute split)
    each demo holds every criterion's human score and each inner prompt shows its own.

    The guideline the demos are shown under is the prompt's guideline with its options put
    back in their original order, so placing a :class:`PerturbedGuidelines` after (or before)
    this mitigation keeps the demos identical across its reorderings.
    """

    paper = "Ghazarian et al. 2024"

    demos: tuple[Demo, ...] = ()
    m: int = 2
    n: int | None = None
    kind: PerturbationKind = "order"
    lengthened: dict[str, str] | None = None
    seed: int = 0
    ablation: bool = False
    perturbed: bool = True
    parameter_constraints: ClassVar = {
        "m": [Interval(int, 1)],
        "perturbed": [bool],
        **PERTURBATION_CONSTRAINTS,
    }

    @model_validator(mode="after")
    def _check(self) -> Self:
        owner = "PerturbedDemosPreset"
        if self.perturbed:
            require_lengthened(owner, self.kind, self.lengthened)
        if self.ablation and not self.perturbed:
            raise ConfigError(
                f"The 'ablation' parameter of {owner} needs perturbed=True (one random perturbation per "
                "demo). Got ablation=True with perturbed=False instead."
            )
        if self.demos and len(self.demos) != self.m:
            raise ConfigError(
                f"The 'demos' parameter of {owner} must hold exactly m={self.m} demos. Got {len(self.demos)} "
                f"instead (pass m={len(self.demos)})."
            )
        return self

    @classmethod
    def examples(cls) -> list[Any]:
        """The Demos of two small given demos: perturbed, ablation, and the unperturbed control; and
        unfitted."""
        demos = (
            Demo(item=Item(id="demo-low", output="A muddled text."), score=1.0, scale=Scale(min=1, max=5)),
            Demo(item=Item(id="demo-high", output="A clear text."), score=5.0, scale=Scale(min=1, max=5)),
        )
        return [
            cls(demos=demos).build(),
            cls(demos=demos, ablation=True, seed=3).build(),
            cls(demos=demos, perturbed=False).build(),
            cls(m=2, n=2).build(),
        ]

    def build(self) -> Demos:
        """The :class:`Demos` these parameters stand for (see the class docstring)."""
        selector = None if self.demos else Stratified(by="range", seed=self.seed)
        return Demos(
            selector=selector,
            demos=self.demos,
            k=self.m,
            display="perturbed" if self.perturbed else "guideline",
            placement="append",
            kind=self.kind,
            n=self.n,
            lengthened=self.lengthened,
            seed=self.seed,
            ablation=self.ablation,
        )
