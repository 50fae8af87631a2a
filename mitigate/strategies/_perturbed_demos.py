"""Guideline-perturbation consistency (Ghazarian et al. 2024): the judge that measures it and the demos that
mitigate it.

:class:`PerturbedGuidelines` judges each item under the guideline and under perturbed versions (reordered
options, a lengthened description) and records every output in ``meta["perturbations"]``
(:func:`mitigate.measures.perturbation_consistency`); ``perturbed-demos`` shows each demo under N perturbed
guidelines with the same gold score.
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


def _output(judgment: Judgment) -> Any:
    """The output compared across perturbations: a verdict, a score, a tuple of scores, or None."""
    if judgment.error is not None:
        return None
    if judgment.verdict is not None:
        return judgment.verdict
    values = list(judgment.scores.values())
    if len(values) <= 1:
        return values[0] if values else None
    return None if any(v is None for v in values) else tuple(values)


class PerturbedGuidelinesJudge(CompositeJudge):
    """The fan-out :class:`PerturbedGuidelines` builds: child ``"original"`` plus one child per perturbation.

    ``judge(item)`` runs every child concurrently and returns the original child's answer and meta, with every
    child's raw texts and costs (:func:`~mitigate.judge.merge_judgments`), and:

    - ``meta["perturbations"]``: ``{"original": output, "<perturbation name>": output, ...}``, the output
      being the score, the tuple of scores in criterion order, or the verdict (None for a failure);
    - ``meta["perturbations_by_criterion"]``: ``{criterion: {name: score}}`` (several criteria only);
    - ``meta["perturbation_errors"]``: ``{name: error}`` for perturbed children that failed (a failure of the
      original fails the item).
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
        return {"perturbations": {k: p.model_dump(mode="json") for k, p in self.perturbations.items()}}

    def map_leaves(self, fn: Callable[[PromptJudge], Judge]) -> Judge:
        """Every child's leaves mapped by ``fn``; ConfigError if that made a perturbed child ask what the
        original asks (``MultiAttribute`` drops the guideline), which would make consistency 100% by
        construction."""
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
        names = list(self.children)
        results = await asyncio.gather(*(self.children[k].judge(item) for k in names), return_exceptions=True)
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
            by_name[name] = res
            outputs[name] = _output(res)
            if res.error is not None and name != ORIGINAL:
                errors[name] = res.error
        original = by_name[ORIGINAL]
        meta: dict[str, Any] = {**original.meta, "perturbations": outputs}
        if len(original.scores) > 1:
            ok = {name: j for name, j in by_name.items() if j.error is None}
            meta["perturbations_by_criterion"] = {
                c: {name: ok[name].scores.get(c) if name in ok else None for name in names}
                for c in original.scores
            }
        if errors:
            meta["perturbation_errors"] = errors
        answer: dict[str, Any] = {"scores": dict(original.scores), "samples": dict(original.samples)}
        parts = list(by_name.values())
        return merge_judgments(
            item.id, parts, verdict=original.verdict, error=original.error, meta=meta, **answer
        )


@register("mitigation", "perturbed-guidelines")
class PerturbedGuidelines(Mitigation):
    """Measure consistency under guideline perturbation (Ghazarian et al. 2024); does not change scores.

    A mitigation-kind wrapper (the bias probes of :mod:`mitigate.probes` rewrite the judged text instead)
    making a :class:`PerturbedGuidelinesJudge`: 1 + N calls per item. Every inner prompt gets the same
    perturbations, so their guidelines must have as many options (and for "length"/"both" the same text);
    place it after prompt-level mitigations such as ``perturbed-demos``.

    Parameters:
        kind: "order" (reordered options), "length" (one description lengthened) or "both".
        n: how many perturbations (None: all reorderings of 2–3 options or 6; every lengthened option).
        lengthened: option label -> lengthened description; required for "length"/"both".
        seed: seeds the sampling of perturbations.
    """

    paper = "Ghazarian et al. 2024"

    kind: PerturbationKind = "order"
    n: int | None = None
    lengthened: dict[str, str] | None = None
    seed: int = 0
    parameter_constraints: ClassVar = {k: v for k, v in PERTURBATION_CONSTRAINTS.items() if k != "ablation"}

    @model_validator(mode="after")
    def _check(self) -> Self:
        require_lengthened(self.owner(), self.kind, self.lengthened)
        return self

    def perturbations_for(self, judge: Judge) -> list[Perturbation]:
        """The perturbations applied to ``judge``'s prompts (identity dropped)."""
        leaves = judge.leaves()
        if not leaves:
            raise ConfigError(
                f"{self.owner()} needs a judge with at least one prompt; got {type(judge).__name__} with none"
            )
        pairs = [(leaf, guideline_of(leaf.prompt)) for leaf in leaves]
        first = pairs[0][1]
        for leaf, gl in pairs[1:]:
            if len(gl.options) != len(first.options):
                raise ConfigError(
                    f"{self.owner()} needs every inner prompt's guideline to have the same number of "
                    f"options; got {len(first.options)} and {len(gl.options)} ({leaf!r})"
                )
            if self.kind != "order" and original_order(gl).render() != original_order(first).render():
                raise ConfigError(
                    f"{self.owner()} with kind={self.kind} needs every inner prompt to share one "
                    "guideline text, since lengthened descriptions belong to one guideline; measure each "
                    "criterion's judge separately"
                )
        base = original_order(first)
        perts = perturbation_set(base, self.kind, self.n, self.lengthened, self.seed)
        perts = [p for p in perts if not p.is_identity(base)]
        names = [p.name for p in perts]
        if len(set(names)) != len(names) or ORIGINAL in names:
            raise ConfigError(f"expected unique perturbation names other than {ORIGINAL!r}; got {names}")
        if not perts:
            raise ConfigError(
                f"{self.owner()} found no perturbation that changes the guideline; nothing to measure"
            )
        return perts

    def wrap(self, judge: Judge) -> Judge:
        """A :class:`PerturbedGuidelinesJudge` over ``judge`` and one perturbed copy per perturbation."""
        perts = self.perturbations_for(judge)
        children = {ORIGINAL: judge} | {p.name: judge.map_prompts(partial(apply_to_prompt, p)) for p in perts}
        return PerturbedGuidelinesJudge(children, {p.name: p for p in perts})


@register("mitigation", "perturbed-demos")
class PerturbedDemosPreset(Preset):
    """Few-shot demos shown under perturbed guidelines, each with the same gold score (Ghazarian et al. 2024).

    Each of the ``m`` demos is repeated under every perturbed version of the prompt's guideline (in its
    original order first, so the demos stay the same across :class:`PerturbedGuidelines`' reorderings), after
    the prompt's own demos; the item itself is judged under the unperturbed guideline. The paper found ``m=2``
    best.

    Parameters:
        demos: the demonstrations (exactly ``m``; None: ``fit`` draws them with ``Stratified(by="range")``).
        m: how many demos.
        n: how many perturbed guidelines per demo, as for :class:`PerturbedGuidelines`.
        kind: "order", "length" or "both".
        lengthened: option label -> lengthened description (for "length"/"both").
        seed: seeds perturbation sampling, the ablation's choice and ``fit``'s pick.
        ablation: the paper's ablation: each demo under ONE non-identity perturbation drawn at random.
        perturbed: False gives the unperturbed control (each demo once under the original guideline).
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
        owner = self.owner()
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
        return Demos(
            selector=None if self.demos else Stratified(by="range", seed=self.seed),
            demos=self.demos,
            k=self.m,
            display="perturbed" if self.perturbed else "guideline",
            placement="append",
            **self.model_dump(include={"kind", "n", "lengthened", "seed", "ablation"}),
        )
