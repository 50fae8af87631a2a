"""Mitigations: composable, frozen transformers of judges (contract in :mod:`mitigate.strategies._base`).

Importing this package registers every mitigation (kind ``"mitigation"``; ``mitigate list mitigations`` lists
them with their papers), so pipeline text and specs work. Every demo mitigation is one class, :class:`Demos`;
prompt edits shared by several mitigations live in :mod:`mitigate.strategies._edits`.
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
    from mitigate.strategies._calibration import BatchCalibration, CalibratedJudge, ContextualCalibration
    from mitigate.strategies._cascade_fit import (
        CascadeOutcome,
        CascadeStage,
        CheapestCascade,
        fit_cascade,
        fit_cheapest_cascade,
    )
    from mitigate.strategies._demos import (
        Demos,
        FixedDemosPreset,
        HighestRSDemosPreset,
        PerItemDemosJudge,
        PerItemDemosPreset,
        RandomDemosPreset,
    )
    from mitigate.strategies._edits import append_instruction
    from mitigate.strategies._forms import mcq_form, rts_form
    from mitigate.strategies._length_control import (
        LengthControl,
        LengthControlledJudge,
        StyleControl,
        StyleControlledJudge,
    )
    from mitigate.strategies._multiple_evidence import (
        MultipleEvidence,
        MultipleEvidenceJudge,
        PositionSwap,
        PositionSwapJudge,
    )
    from mitigate.strategies._own_reference import OwnReferenceJudge, ReferenceRevision, SolveFirst
    from mitigate.strategies._pairwise_distribution import DistributionJudge, PairwiseDistribution
    from mitigate.strategies._panel import (
        DawidSkene,
        DawidSkeneJudge,
        MinorityVeto,
        MinorityVetoJudge,
        Panel,
        PanelJudge,
    )
    from mitigate.strategies._perturbed_demos import (
        PerturbedDemosPreset,
        PerturbedGuidelines,
        PerturbedGuidelinesJudge,
    )
    from mitigate.strategies._sampling import (
        ConsistencyHint,
        ExpectedScore,
        Granularity,
        Sampling,
        SelfConsistency,
    )
    from mitigate.strategies._selective import CascadeJudge, SelectiveEvaluation, SelectiveJudge
    from mitigate.strategies._single_attribute import MultiAttribute, SingleAttribute

__getattr__, __dir__, __all__ = lazy_exports(__name__)
