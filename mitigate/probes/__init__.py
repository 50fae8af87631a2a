"""Bias probes: controlled rewrites of the judged text that a fair judge should not react to.

Each probe is a registered, frozen, seedable component (kind ``"probe"``) that rewrites an
item's judged text (or one side of a pairwise item), records the rewrite for review, and
declares the direction the targeted bias predicts. One family per module:

- rule-based (no LM): :class:`Authority` (a made-up citation), :class:`Bandwagon` (a stated
  majority opinion), :class:`Distraction` (an irrelevant sentence), :class:`Verbosity`
  (content-free padding), :class:`Beauty` (markdown, bold, bullets, emoji),
  :class:`Refinement` (a "refined revision" tag), :class:`Identity` (a model-name or author
  tag), :class:`NestedInstruction` (an instruction to the grader hidden in the text);
  :class:`Format` (markdown <-> plain text, bullets <-> prose);
- LM-assisted (need a rewriter backend): :class:`Sentiment`, :class:`Assertiveness`,
  :class:`Fallacy`, :class:`FactualError`, :class:`Paraphrase`;
- of the prompt (:class:`PromptProbe`: the judged text unchanged, the judge's prompt perturbed):
  :class:`OptionOrder` (score options reordered), :class:`CriterionOrder` (criteria asked in
  another order), :class:`SocialPressure` (a claimed expert's verdict in the user turn).

:mod:`mitigate.probes._battery` runs a judge over the original and the probed items, with a
rerun for the noise floor; :mod:`mitigate.measures._robustness` holds the measures.

"Probe" here always means a component of kind ``"probe"`` (``--probes`` on the command line). The
mitigation ``perturbed-guidelines`` (:class:`mitigate.strategies._perturbed_demos.PerturbedGuidelines`)
is not one: it is a judge wrapper that re-judges each item under perturbed scoring guidelines to
measure consistency (Ghazarian et al. 2024), named in ``--pipeline`` like any mitigation.
"""

from typing import TYPE_CHECKING

from mitigate._lazy import lazy_exports

if TYPE_CHECKING:
    from mitigate.probes._authority import Authority
    from mitigate.probes._bandwagon import Bandwagon
    from mitigate.probes._base import (
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
    from mitigate.probes._battery import probe_entry, probe_section, render_probe_table, run_probes
    from mitigate.probes._beauty import Beauty
    from mitigate.probes._criterion_order import CriterionOrder
    from mitigate.probes._distraction import Distraction
    from mitigate.probes._format import Format
    from mitigate.probes._identity import Identity
    from mitigate.probes._injection import NestedInstruction
    from mitigate.probes._option_order import OptionOrder
    from mitigate.probes._paraphrase import Paraphrase
    from mitigate.probes._prompt_probe import PromptProbe
    from mitigate.probes._refinement import Refinement
    from mitigate.probes._rewrite import Assertiveness, FactualError, Fallacy, LMProbe, Sentiment
    from mitigate.probes._social_pressure import SocialPressure
    from mitigate.probes._verbosity import Verbosity

__getattr__, __dir__, __all__ = lazy_exports(__name__)
