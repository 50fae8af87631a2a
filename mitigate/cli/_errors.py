"""How the command line reports a problem: one ``error: <what was expected; what came>`` line on stderr and
an exit code (:data:`EXIT_REFUSED`, :data:`EXIT_FAILED`); warnings are one ``warning:`` line each."""

from __future__ import annotations

import contextlib
import os
import sys
from typing import Any, TextIO

import typer

from mitigate.errors import MitigateError, RunStoppedError

EXIT_REFUSED = 2
"""Exit code when the input was refused (bad option, file, data or spec) before any work."""
EXIT_FAILED = 1
"""Exit code when a run could not finish (circuit breaker, every item failed, unexpected failure)."""
EXIT_INCONCLUSIVE = 3
"""Exit code of a gate that could not decide (``mitigate diff --margin``: B neither shown worse nor shown no
worse than the margin)."""
EXIT_INTERRUPTED = 130
"""Exit code after Ctrl-C (the shell's convention for SIGINT)."""

DEBUG_ENV = "MITIGATE_DEBUG"
"""The environment variable that, set to anything but "" or "0", shows tracebacks (as ``--debug`` does)."""


def flat_message(text: str) -> str:
    """A message on one line: its lines joined by " ; ", its runs of spaces collapsed, and a word over
    :data:`LONGEST_WORD` characters (a value the user pasted, echoed back) cut to its ends and its length."""
    words = str(text).replace("\n", " ; ").split()
    return " ".join(_cut(word) for word in words).replace(" ; ;", " ;")


LONGEST_WORD = 200
"""The longest word an error line shows whole."""


def _cut(word: str) -> str:
    if len(word) <= LONGEST_WORD:
        return word
    return f"{word[:60]}...({len(word):,} characters)...{word[-20:]}"


def say_error(message: str) -> None:
    """Print ``error: <message>`` on one line of stderr."""
    typer.secho(f"error: {flat_message(message)}", fg=typer.colors.RED, err=True)


def show_warning(
    message: Warning | str,
    category: type[Warning],
    filename: str,
    lineno: int,
    file: TextIO | None = None,
    line: str | None = None,
) -> None:
    """Warnings as one line, ``warning: <message>`` (no source line, no file:line of our code)."""
    typer.secho(f"warning: {flat_message(str(message))}", fg=typer.colors.YELLOW, err=True)


def report_error(exc: BaseException) -> int:
    """Print one line for ``exc``; its exit code."""
    if isinstance(exc, MitigateError):  # with the notes a caller added (add_note), never left unsaid
        say_error("; ".join([str(exc), *getattr(exc, "__notes__", ())]))
        return EXIT_FAILED if isinstance(exc, RunStoppedError) else EXIT_REFUSED
    # imported here: a command that fails before loading pydantic need not load it for this check
    from pydantic import ValidationError

    if isinstance(exc, ValidationError):
        errors = exc.errors()
        first: Any = errors[0] if errors else {}
        where = ".".join(str(x) for x in first.get("loc", ())) or exc.title
        say_error(f"invalid value for {where}: {first.get('msg', exc)}; got {first.get('input')!r}")
        return EXIT_REFUSED
    if isinstance(exc, RecursionError):
        say_error(
            "expected input nested at most a few hundred levels deep; got input nested too deep to "
            "read (a JSON value nested thousands of levels?)"
        )
        return EXIT_REFUSED
    if isinstance(exc, UnicodeError):
        say_error(f"expected UTF-8 text; got {exc}")
        return EXIT_REFUSED
    if isinstance(exc, BrokenPipeError):  # the reader of our output went away (| head): nothing to say
        # nor to flush at exit (the Python docs' SIGPIPE recipe)
        with contextlib.suppress(OSError, ValueError):
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return EXIT_FAILED
    if isinstance(exc, OSError):
        where = f": {exc.filename}" if exc.filename else ""
        say_error(f"{exc.strerror or type(exc).__name__}{where}")
        return EXIT_FAILED
    say_error(
        f"unexpected {type(exc).__name__}: {exc} (a bug in mitigate; rerun with --debug for the "
        "traceback and report it)"
    )
    return EXIT_FAILED


def fail_when_all_failed(result: Any) -> None:
    """Exit :data:`EXIT_FAILED` with one line when every item of a run (a RunResult, or a finished RunStream
    and its tally) ended in an LM error, or none could be scored."""
    from mitigate.run import Tally

    tally = getattr(result, "tally", None)
    if tally is None:
        tally = Tally()
        for j in result.judgments:
            tally.add(j)
    items = tally.items
    if items and tally.errors == items:
        say_error(f"all {items} items failed; the first: {tally.first_error or ''}")
        raise typer.Exit(code=EXIT_FAILED)
    if items and tally.ok == 0 and tally.errors + tally.with_failures >= items:
        failure = tally.first_failure
        raw = " ".join(str(failure.raw).split())[:120] if failure is not None else ""
        looked = "" if failure is None else f"; the first answer ({failure.reason}): {raw!r}"
        say_error(
            f"no item could be scored: all {items} answers failed to parse ({tally.errors} items ended "
            f"in an LM error){looked}"
        )
        raise typer.Exit(code=EXIT_FAILED)
