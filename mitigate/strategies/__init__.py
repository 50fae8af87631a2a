"""Mitigations: composable, frozen transformers of judges (contract in :mod:`mitigate.strategies.base`).

Importing this package registers every mitigation (kind ``"mitigation"`` in
:mod:`mitigate.registry`), so ``parse_pipeline("single-attribute | sampling(temperature=0.7, n=5)")``
and specs work.

| name | class | paper |
|---|---|---|
| ``perturbed-demos`` | preset of :class:`Demos` (:class:`PerturbedDemosPreset`) | Ghazarian et al. 2024 |
| ``perturbation-probe`` | :class:`PerturbationProbe` (measurement) | Ghazarian et al. 2024 |
| ``consistency-hint``, ``self-consistency`` | baselines of Ghazarian et al. 2024 | |
| ``highest-rs-demos``, ``random-demos`` | presets of :class:`Demos` (:class:`HighestRSDemosPreset`,
:class:`RandomDemosPreset`) | Ohi et al. 2024 |
| ``demos``; presets ``fixed-demos``, ``per-item-demos`` | :class:`Demos` (:class:`FixedDemosPreset`,
:class:`PerItemDemosPreset`) | |
| ``single-attribute``, ``multi-attribute`` | :class:`SingleAttribute`, :class:`MultiAttribute` | Stureborg et
al. 2024 |
| ``sampling``, ``expected-score``, ``granularity`` | :class:`Sampling`, :class:`ExpectedScore`,
:class:`Granularity` | Stureborg et al. 2024 |
| ``agreement-gate`` | :class:`AgreementGate` | Shen et al. 2023 |
| ``position-swap`` | :class:`PositionSwap` | pairwise position bias |
| ``contextual-calibration``, ``batch-calibration`` | :class:`ContextualCalibration`,
:class:`BatchCalibration` | Zhao et al. 2021; Zhou et al. 2024 |
| ``length-control`` | :class:`LengthControl` | Dubois et al. 2024 |
| ``style-control`` | :class:`StyleControl` | Arena-Hard style control (Li et al. 2024) |
| ``selective`` | :class:`SelectiveEvaluation` (and :class:`CascadeJudge`) | Jung et al. 2024 |
| ``panel`` | :class:`Panel` (:class:`PanelJudge` for any judges) | Verga et al. 2024 |
| ``multiple-evidence`` | :class:`MultipleEvidence` | Wang et al. 2023 |
| ``dawid-skene``, ``minority-veto`` | :class:`DawidSkene`, :class:`MinorityVeto` (panel reducers) | Dawid and
Skene 1979; Jain et al. 2025 |
| ``pairwise-distribution`` | :class:`PairwiseDistribution` | Wang et al. 2025 (TrustJudge) |
| ``solve-first``, ``reference-revision`` | :class:`SolveFirst`, :class:`ReferenceRevision` | Krumdick et al.
2025; Zhang et al. 2025 (RevisEval) |

Every demo mitigation is one class, :class:`~mitigate.strategies.demos.Demos`, that shows
what a selector of :mod:`mitigate.selectors` picks; the named demo mitigations are registered
presets of it (:class:`mitigate.registry.Preset`) whose specs build a ``Demos``. Prompt edits shared by
several mitigations live in
:mod:`mitigate.strategies.edits`.
"""

from mitigate.fitting import FitContext
from mitigate.strategies.agreement_gate import (
    AgreementGate,
    AgreementJudge,
    GateDecision,
    GateReport,
    gate_released,
)
from mitigate.strategies.base import (
    Mitigation,
    Pipeline,
    PromptMitigation,
    from_spec,
    load_pipeline,
    parse_pipeline,
    registered,
)
from mitigate.strategies.baselines import ConsistencyHint, SelfConsistency
from mitigate.strategies.calibration import BatchCalibration, CalibratedJudge, ContextualCalibration
from mitigate.strategies.demos import Demos, FixedDemosPreset, PerItemDemosJudge, PerItemDemosPreset
from mitigate.strategies.forms import mcq_form, rts_form
from mitigate.strategies.highest_rs import HighestRSDemosPreset, RandomDemosPreset
from mitigate.strategies.length_control import LengthControl, LengthControlledJudge
from mitigate.strategies.multiple_evidence import MultipleEvidence, MultipleEvidenceJudge
from mitigate.strategies.own_reference import OwnReferenceJudge
from mitigate.strategies.pairwise_distribution import DistributionJudge, PairwiseDistribution
from mitigate.strategies.panel import Panel, PanelJudge
from mitigate.strategies.panel_reducers import DawidSkene, DawidSkeneJudge, MinorityVeto, MinorityVetoJudge
from mitigate.strategies.perturbed_demos import (
    PerturbationProbe,
    PerturbationProbeJudge,
    PerturbedDemosPreset,
)
from mitigate.strategies.position_swap import PositionSwap, PositionSwapJudge
from mitigate.strategies.reference_revision import ReferenceRevision
from mitigate.strategies.sampling import ExpectedScore, Granularity, Sampling
from mitigate.strategies.selective import CascadeJudge, SelectiveEvaluation, SelectiveJudge, fit_cascade
from mitigate.strategies.single_attribute import MultiAttribute, SingleAttribute
from mitigate.strategies.solve_first import SolveFirst
from mitigate.strategies.style_control import StyleControl, StyleControlledJudge

__all__ = [
    "AgreementGate", "AgreementJudge", "BatchCalibration", "CalibratedJudge", "CascadeJudge",
    "ConsistencyHint", "ContextualCalibration", "DawidSkene", "DawidSkeneJudge", "Demos", "DistributionJudge",
    "ExpectedScore", "FitContext", "FixedDemosPreset",
    "GateDecision",
    "GateReport", "Granularity", "HighestRSDemosPreset", "LengthControl", "LengthControlledJudge",
    "MinorityVeto", "MinorityVetoJudge", "Mitigation", "MultiAttribute", "OwnReferenceJudge",
    "MultipleEvidence", "MultipleEvidenceJudge", "Panel", "PanelJudge",
    "PairwiseDistribution", "PerItemDemosJudge", "PerItemDemosPreset", "PerturbationProbe",
    "PerturbationProbeJudge",
    "PerturbedDemosPreset", "Pipeline", "PositionSwap", "PositionSwapJudge", "PromptMitigation",
    "RandomDemosPreset", "ReferenceRevision", "Sampling", "SelectiveEvaluation", "SelectiveJudge",
    "SelfConsistency",
    "SingleAttribute", "SolveFirst", "StyleControl", "StyleControlledJudge", "fit_cascade", "from_spec",
    "gate_released", "load_pipeline", "mcq_form",
    "parse_pipeline", "registered", "rts_form",
]
