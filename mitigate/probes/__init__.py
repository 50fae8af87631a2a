"""Bias probes: controlled rewrites of the judged text (or of the judge's prompt) that a fair judge should not
react to, and the battery that measures them.

Each probe is a registered, frozen, seedable component (kind ``"probe"``) that rewrites an item's judged text
(or one side of a pairwise item), records the rewrite for review, and declares the direction the targeted
bias predicts: rule-based (:class:`RuleProbe`), LM-assisted (:class:`LMProbe`, needing a rewriter backend),
or of the prompt (:class:`PromptProbe`). :func:`run_probes` runs a judge over the original and the probed
items, with a rerun for the noise floor; :mod:`mitigate.measures` holds the measures.

"Probe" always means a component of kind ``"probe"`` (``--probes``); the mitigation ``perturbation-probe``
is a judge wrapper that re-judges each item under perturbed scoring guidelines, named in ``--pipeline``.
"""

from typing import TYPE_CHECKING

from mitigate._lazy import lazy_exports

if TYPE_CHECKING:
    from mitigate.probes._base import (
        Direction,
        LMProbe,
        Probe,
        ProbedItem,
        ProbeRecord,
        PromptProbe,
        RuleProbe,
        Side,
        check_rewriter,
        probe_names,
        resolve_probes,
    )
    from mitigate.probes._battery import probe_entry, probe_section, render_probe_table, run_probes
    from mitigate.probes._probes import (
        Assertiveness,
        Authority,
        Bandwagon,
        Beauty,
        CriterionOrder,
        Distraction,
        FactualError,
        Fallacy,
        Format,
        Identity,
        NestedInstruction,
        OptionOrder,
        Paraphrase,
        Refinement,
        Sentiment,
        SocialPressure,
        Verbosity,
    )

__getattr__, __dir__, __all__ = lazy_exports(__name__)
