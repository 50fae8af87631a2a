"""Two judges on the same items: did judge B get worse than judge A, where, and should CI fail?

:func:`diff_judgments` compares the two judges' judgments measure by measure (:class:`DiffReport`),
:func:`gate` decides whether B is worse, :func:`junit_xml` and :func:`render_diff` write that for CI and
people; :func:`threshold_report` gives pass rates against a threshold when reruns straddle it.
"""

from typing import TYPE_CHECKING

from mitigate._lazy import lazy_exports

if TYPE_CHECKING:
    from mitigate.diff._diff import diff_judgments
    from mitigate.diff._gate import gate, parse_fail_on, parse_margin
    from mitigate.diff._report import DiffReport, GateResult, as_json, junit_xml, render_diff
    from mitigate.diff._slices import probe_slices
    from mitigate.diff._threshold import ThresholdReport, threshold_report, threshold_section, threshold_text

__getattr__, __dir__, __all__ = lazy_exports(__name__)
