"""Running a judge over items: the runner and its journal, batch sessions, and sync entry points to async code.

Layout: :mod:`.runner` (``run``: concurrency, budget, progress, the journal a killed run resumes
from), :mod:`.batch_session` (the providers' batch APIs behind one session) and :mod:`.aio`
(``run_sync``).
"""
