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

from mitigate.exports import lazy_exports

if TYPE_CHECKING:
    from mitigate.run.batch_session import BatchOptions, BatchSession
    from mitigate.run.journal import Journal
    from mitigate.run.render import render_judge, render_requests
    from mitigate.run.runner import RunResult, RunSummary, preflight, run, run_sync

__all__ = [
    "BatchOptions", "BatchSession", "Journal", "RunResult", "RunSummary", "preflight", "render_judge",
    "render_requests", "run", "run_sync",
]

__getattr__, __dir__ = lazy_exports(__name__, {
    **dict.fromkeys(["RunResult", "RunSummary", "preflight", "run", "run_sync"], "mitigate.run.runner"),
    **dict.fromkeys(["BatchOptions", "BatchSession"], "mitigate.run.batch_session"),
    "Journal": "mitigate.run.journal",
    **dict.fromkeys(["render_judge", "render_requests"], "mitigate.run.render"),
})
