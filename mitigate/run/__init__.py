"""Running a judge over items: ``result = await run(judge, bench.items)`` (``run_sync`` from plain code), its
journal, columns on disk, batch sessions, the requests a judge would send, rendered without an LM, and the
judge as a Ray Data transform (:class:`JudgeBatches`, the ``ray`` extra)."""

from typing import TYPE_CHECKING

from mitigate._lazy import lazy_exports

if TYPE_CHECKING:
    from mitigate.run._batch_session import BatchConfig, BatchSession, session_for
    from mitigate.run._columns import COLUMNS_FILE, Columns, ColumnWriter, ReadSequence, StoredJudgments
    from mitigate.run._journal import Journal, RunLock
    from mitigate.run._ray import JudgeBatches, batch_key, items_file, judge_dataset, results_table, start_ray
    from mitigate.run._render import placeholder_item, preflight, render_judge, render_requests
    from mitigate.run._runner import RunResult, run, run_stream, run_sync
    from mitigate.run._tally import RunSummary, Tally

__getattr__, __dir__, __all__ = lazy_exports(__name__)
