"""Mitigations: composable, frozen transformers of judges (contract in :mod:`mitigate.strategies._base`).

Importing this package registers every mitigation (kind ``"mitigation"`` in
:mod:`mitigate.registry`), so ``parse_pipeline("single-attribute | sampling(temperature=0.7, n=5)")``
and specs work.

| name | class | paper |
|---|---|---|
| ``perturbed-demos`` | preset of :class:`Demos` (:class:`PerturbedDemosPreset`) | Ghazarian et al. 2024 |
| ``perturbed-guidelines`` | :class:`PerturbedGuidelines` (measurement) | Ghazarian et al. 2024 |
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

Every demo mitigation is one class, :class:`~mitigate.strategies._demos.Demos`, that shows
what a selector of :mod:`mitigate.selectors` picks; the named demo mitigations are registered
presets of it (:class:`mitigate.registry.Preset`) whose specs build a ``Demos``. Prompt edits shared by
several mitigations live in
:mod:`mitigate.strategies._edits`.
"""

from typing import TYPE_CHECKING

from mitigate._lazy import lazy_exports

if TYPE_CHECKING:
    from mitigate.strategies._agreement_gate import (
        AgreementGate,
        AgreementJudge,
        GateDecision,
        GateReport,
        gate_released,
    )
    from mitigate.strategies._base import (
        Mitigation,
        Pipeline,
        PromptMitigation,
        from_spec,
        load_pipeline,
        parse_pipeline,
        registered,
    )
    from mitigate.strategies._baselines import ConsistencyHint, SelfConsistency
    from mitigate.strategies._calibration import BatchCalibration, CalibratedJudge, ContextualCalibration
    from mitigate.strategies._demos import Demos, FixedDemosPreset, PerItemDemosJudge, PerItemDemosPreset
    from mitigate.strategies._edits import append_instruction
    from mitigate.strategies._forms import mcq_form, rts_form
    from mitigate.strategies._highest_rs import HighestRSDemosPreset, RandomDemosPreset
    from mitigate.strategies._length_control import LengthControl, LengthControlledJudge
    from mitigate.strategies._multiple_evidence import MultipleEvidence, MultipleEvidenceJudge
    from mitigate.strategies._own_reference import OwnReferenceJudge
    from mitigate.strategies._pairwise_distribution import DistributionJudge, PairwiseDistribution
    from mitigate.strategies._panel import Panel, PanelJudge
    from mitigate.strategies._panel_reducers import (
        DawidSkene,
        DawidSkeneJudge,
        MinorityVeto,
        MinorityVetoJudge,
    )
    from mitigate.strategies._perturbed_demos import (
        PerturbedDemosPreset,
        PerturbedGuidelines,
        PerturbedGuidelinesJudge,
    )
    from mitigate.strategies._position_swap import PositionSwap, PositionSwapJudge
    from mitigate.strategies._reference_revision import ReferenceRevision
    from mitigate.strategies._sampling import ExpectedScore, Granularity, Sampling
    from mitigate.strategies._selective import CascadeJudge, SelectiveEvaluation, SelectiveJudge, fit_cascade
    from mitigate.strategies._single_attribute import MultiAttribute, SingleAttribute
    from mitigate.strategies._solve_first import SolveFirst
    from mitigate.strategies._style_control import StyleControl, StyleControlledJudge

__getattr__, __dir__, __all__ = lazy_exports(__name__)
