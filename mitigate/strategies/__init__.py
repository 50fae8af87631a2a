"""Mitigations: composable, frozen transformers of judges (contract in :mod:`mitigate.strategies.base`).

Importing this package registers every strategy under its name, so
``parse_pipeline("single-attribute | sampling(temperature=0.7, n=5)")`` and specs work.

| name | class | paper |
|---|---|---|
| ``perturbed-demos`` | :class:`PerturbedGuidelineDemos` | Ghazarian et al. 2024 |
| ``perturbation-probe`` | :class:`PerturbationProbe` (measurement) | Ghazarian et al. 2024 |
| ``consistency-hint``, ``self-consistency`` | baselines of Ghazarian et al. 2024 | |
| ``highest-rs-demos``, ``random-demos`` | :class:`HighestRSDemos`, :class:`RandomDemos` | Ohi et al. 2024 |
| ``single-attribute``, ``multi-attribute`` | :class:`SingleAttribute`, :class:`MultiAttribute` | Stureborg et al. 2024 |
| ``sampling``, ``expected-score``, ``granularity`` | :class:`Sampling`, :class:`ExpectedScore`, :class:`Granularity` | Stureborg et al. 2024 |
| ``agreement-gate`` | :class:`AgreementGate` | Shen et al. 2023 |
| ``position-swap`` | :class:`PositionSwap` | pairwise position bias |
"""

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
    parse_pipeline,
    register,
    registered,
)
from mitigate.strategies.baselines import ConsistencyHint, SelfConsistency
from mitigate.strategies.forms import mcq_form, rts_form
from mitigate.strategies.highest_rs import HighestRSDemos, RandomDemos, rank_by_rs
from mitigate.strategies.perturbed_demos import (
    PerturbationProbe,
    PerturbationProbeJudge,
    PerturbedGuidelineDemos,
)
from mitigate.strategies.position_swap import PositionSwap, PositionSwapJudge
from mitigate.strategies.sampling import ExpectedScore, Granularity, Sampling
from mitigate.strategies.single_attribute import MultiAttribute, SingleAttribute

__all__ = [
    "AgreementGate", "AgreementJudge", "ConsistencyHint", "ExpectedScore", "GateDecision", "GateReport",
    "Granularity", "HighestRSDemos", "Mitigation", "MultiAttribute", "PerturbationProbe", "PerturbationProbeJudge",
    "PerturbedGuidelineDemos", "Pipeline", "PositionSwap", "PositionSwapJudge", "PromptMitigation", "RandomDemos",
    "Sampling", "SelfConsistency", "SingleAttribute", "from_spec", "gate_released", "mcq_form", "parse_pipeline",
    "rank_by_rs", "register", "registered", "rts_form",
]
