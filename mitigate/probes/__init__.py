"""Bias probes: controlled rewrites of the judged text (or of the judge's prompt) that a fair judge should not
react to, each a registered component of kind ``"probe"`` (rule-based, LM-assisted, or of the prompt), and
the battery that measures them (:func:`run_probes`). The mitigation ``perturbed-guidelines`` is no probe:
it is a judge wrapper named in ``--pipeline``.
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
