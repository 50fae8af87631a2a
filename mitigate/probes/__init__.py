"""Bias probes: controlled rewrites of the judged text that a fair judge should not react to.

Each probe is a registered, frozen, seedable component (kind ``"probe"``) that rewrites an
item's judged text (or one side of a pairwise item), records the rewrite for review, and
declares the direction the targeted bias predicts. One family per module:

- rule-based (no LM): :class:`Authority` (a made-up citation), :class:`Bandwagon` (a stated
  majority opinion), :class:`Distraction` (an irrelevant sentence), :class:`Verbosity`
  (content-free padding), :class:`Beauty` (markdown, bold, bullets, emoji),
  :class:`Refinement` (a "refined revision" tag), :class:`Identity` (a model-name or author
  tag), :class:`NestedInstruction` (an instruction to the grader hidden in the text);
- LM-assisted (need a rewriter backend): :class:`Sentiment`, :class:`Assertiveness`,
  :class:`Fallacy`, :class:`FactualError`.

:mod:`mitigate.harness.probe` runs a judge over the original and the probed items, with a
rerun for the noise floor; :mod:`mitigate.measures.robustness` holds the measures.
"""

from mitigate.probes.authority import Authority
from mitigate.probes.bandwagon import Bandwagon
from mitigate.probes.base import (
    Direction,
    Probe,
    ProbedItem,
    ProbeRecord,
    RuleProbe,
    Side,
    check_rewriter,
    probe_names,
    resolve_probes,
)
from mitigate.probes.beauty import Beauty
from mitigate.probes.distraction import Distraction
from mitigate.probes.identity import Identity
from mitigate.probes.injection import NestedInstruction
from mitigate.probes.refinement import Refinement
from mitigate.probes.rewrite import Assertiveness, FactualError, Fallacy, LMProbe, Sentiment
from mitigate.probes.verbosity import Verbosity

__all__ = [
    "Assertiveness",
    "Authority",
    "Bandwagon",
    "Beauty",
    "Direction",
    "Distraction",
    "FactualError",
    "Fallacy",
    "Identity",
    "LMProbe",
    "NestedInstruction",
    "Probe",
    "ProbeRecord",
    "ProbedItem",
    "Refinement",
    "RuleProbe",
    "Sentiment",
    "Side",
    "Verbosity",
    "check_rewriter",
    "probe_names",
    "resolve_probes",
]
