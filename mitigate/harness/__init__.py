"""Compare, estimate, diff and report: judges measured against humans and against each other.

The public names, imported on first use (so ``import mitigate.harness.tables`` stays light)::

    from mitigate.harness import CompareConfig, Entry, check_compare   # judges side by side on a benchmark
    from mitigate.harness import EstimateResult, ThresholdReport       # the results, as values
    from mitigate.harness import diff_judgments, gate                  # two runs item by item, as a CI gate
    from mitigate.harness import threshold_report                      # pass rates against a threshold
    from mitigate.harness import write_judgments, render_report        # judgments files and report folders

``mitigate.harness.compare`` and ``mitigate.harness.estimate`` are modules, so their functions are
imported from them: ``from mitigate.harness.compare import compare``, and ``mitigate.estimate``.

Layout: :mod:`.compare` (the comparison's stages), :mod:`.estimate` (corrected estimates and label
plans), :mod:`.diff` and :mod:`.diff_gate` (two runs compared, and the CI gate), :mod:`.threshold`,
:mod:`.probe` (probe runs), :mod:`.report` / :mod:`.html_report` / :mod:`.plots` (what a run folder
shows), :mod:`.judgments_file`, and the replayed judges (:mod:`.recorded_judge`, :mod:`.released_judge`,
:mod:`.released_pairwise`).
"""

from typing import TYPE_CHECKING

from mitigate.exports import lazy_exports

if TYPE_CHECKING:
    from mitigate.harness.compare import CompareConfig, ComparePlan, CompareResult, Entry, check_compare
    from mitigate.harness.diff import DiffReport, diff_judgments
    from mitigate.harness.diff_gate import GateResult, gate
    from mitigate.harness.estimate_results import EstimateResult
    from mitigate.harness.judgments_file import write_judgments
    from mitigate.harness.recorded_judge import RecordedJudge
    from mitigate.harness.released_judge import ReleasedJudge
    from mitigate.harness.released_pairwise import load_released_pairwise
    from mitigate.harness.report import load_results, render_report, write_report
    from mitigate.harness.threshold import ThresholdReport, threshold_report

__all__ = [
    "CompareConfig", "ComparePlan", "CompareResult", "DiffReport", "Entry", "EstimateResult", "GateResult",
    "RecordedJudge", "ReleasedJudge", "ThresholdReport", "check_compare", "diff_judgments", "gate",
    "load_released_pairwise", "load_results", "render_report", "threshold_report", "write_judgments",
    "write_report",
]

__getattr__, __dir__ = lazy_exports(__name__, {
    **dict.fromkeys(["CompareConfig", "ComparePlan", "CompareResult", "Entry", "check_compare"],
                    "mitigate.harness.compare"),
    **dict.fromkeys(["DiffReport", "diff_judgments"], "mitigate.harness.diff"),
    **dict.fromkeys(["GateResult", "gate"], "mitigate.harness.diff_gate"),
    "EstimateResult": "mitigate.harness.estimate_results",
    "write_judgments": "mitigate.harness.judgments_file", "RecordedJudge": "mitigate.harness.recorded_judge",
    "ReleasedJudge": "mitigate.harness.released_judge",
    "load_released_pairwise": "mitigate.harness.released_pairwise",
    **dict.fromkeys(["load_results", "render_report", "write_report"], "mitigate.harness.report"),
    **dict.fromkeys(["ThresholdReport", "threshold_report"], "mitigate.harness.threshold"),
})
