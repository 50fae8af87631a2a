"""Running a judge over items: the runner and its journal, batch sessions, and the requests a judge would
send.

The public names, imported on first use::

    from mitigate.run import run, run_sync
    result = await run(judge, bench.items)      # or run_sync(judge, bench.items) from plain code

Layout: :mod:`.runner` (``run``: concurrency, budget, progress, preflight, the circuit breaker),
:mod:`.journal` (the journal a killed run resumes from), :mod:`.batch_session` (the providers'
batch APIs behind one session) and :mod:`.render` (the exact requests, without calling the LM).
"""

from typing import TYPE_CHECKING

from mitigate._lazy import lazy_exports

if TYPE_CHECKING:
    from mitigate.run._batch_session import BatchConfig, BatchSession, session_for
    from mitigate.run._columns import Columns, ColumnWriter
    from mitigate.run._journal import Journal, RunLock
    from mitigate.run._render import placeholder_item, render_judge, render_requests
    from mitigate.run._runner import RunResult, preflight, run, run_stream, run_sync
    from mitigate.run._tally import RunSummary, Tally

__getattr__, __dir__, __all__ = lazy_exports(__name__)
