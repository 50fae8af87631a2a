"""What a comparison produced and how it is shown: the result values (:class:`CompareResult`), the run
folder's files (``results.json``, ``results.sqlite``, ``report.md``, ``report.html``, plots) and the
judgments files of ``mitigate judge --out``.
"""

from typing import TYPE_CHECKING

from mitigate._lazy import lazy_exports

if TYPE_CHECKING:
    from mitigate.report._files import load_results, render_report, write_report
    from mitigate.report._first_prompt import with_first_prompt
    from mitigate.report._judgments_file import JudgmentsWriter, check_out_path, is_csv, write_judgments
    from mitigate.report._markdown import render_markdown, render_summary
    from mitigate.report._plots import check_plot_path, plot_estimate, plot_search
    from mitigate.report._results import (
        DELTA_ACCURACY_INFO,
        DELTA_INFO,
        CompareResult,
        Comparison,
        EntryResult,
        ItemRecord,
        ItemRecords,
        score_of,
    )
    from mitigate.report._tables import md_table

__getattr__, __dir__, __all__ = lazy_exports(__name__)
