"""The files and folders a command reads and writes, checked before any work with one-line errors."""

from __future__ import annotations

import contextlib
import json
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from mitigate.cli._errors import say_error
from mitigate.errors import ConfigError, MitigateError, RunStoppedError
from mitigate.paths import output_target, path_kind, read_file


def read_text_file(path: Path, option: str) -> str:
    """The UTF-8 text of the file given to ``option``; one-line ConfigError when it cannot be read."""
    data = read_file(path, option)  # a folder, FIFO or device is refused by what it is, never opened
    try:
        return data.decode("utf-8").removeprefix("\ufeff")  # a BOM is an encoding mark, not prompt text
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        raise ConfigError(
            f"expected {option} to be UTF-8 text; {path}:{line} holds the byte {data[exc.start]:#04x}, "
            "which is not UTF-8 (re-save the file as UTF-8)",
            path=str(path),
            line=line,
        ) from None


def writable_dir(path: Path, option: str) -> Path:
    """Create the folder given to ``option`` when needed and check a file can be written in it."""
    if path.exists() and not path.is_dir():
        raise ConfigError(f"expected {option} to be a folder; {path} is a file", path=str(path))
    try:
        path.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile(dir=path, prefix=".write-check-"):
            pass
    except OSError as exc:
        raise ConfigError(
            f"expected {option} to be a folder mitigate can write in; {path}: "
            f"{exc.strerror or type(exc).__name__}",
            path=str(path),
        ) from None
    return path


def writable_file(path: Path, option: str) -> Path:
    """Check the file given to ``option`` can be written (its folder is created when needed)."""
    if path.is_dir():
        raise ConfigError(f"expected {option} to name a file; {path} is a directory", path=str(path))
    target, through = output_target(path, option)  # a FIFO, socket or block device is refused here
    if not through:
        writable_dir(target.parent, f"the folder of {option}")
    return path


@contextmanager
def run_dir(path: Path | None, option: str = "--run-dir") -> Iterator[Path | None]:
    """Check the run folder and hold its lock for the whole command (None: no folder)."""
    if path is None:
        yield None
        return
    from mitigate.run import RunLock  # lazy: the runner is not loaded for --help

    writable_dir(path, option)
    check_run_folder(path)
    with RunLock.for_journal(path / "journal.jsonl"):
        try:
            yield path
        except KeyboardInterrupt:
            say_interrupted(path, option)
            raise


INTERRUPTED = {"said": False}
"""Whether the one line after Ctrl-C was printed (the command line's main prints a generic one otherwise)."""


def say_interrupted(path: Path, option: str) -> None:
    """The one line after Ctrl-C in a run with a folder: the judgments and LM calls its journals keep, and
    how to resume."""
    items = calls = 0
    for journal in [path / "journal.jsonl", *sorted(path.glob("journals/*.jsonl"))]:
        with contextlib.suppress(OSError), journal.open(encoding="utf-8", errors="replace") as handle:
            for line in handle:
                with contextlib.suppress(ValueError):
                    row = json.loads(line)
                    if isinstance(row, dict) and "item_id" in row:
                        items += 1
                        calls += int(row.get("calls") or 0)
    say_error(
        f"interrupted: {items} judgments ({calls} LM calls) are kept in {path}; run the same command again "
        f"(with {option} {path}) to resume from there"
    )
    INTERRUPTED["said"] = True


READ_BACK = (
    "journal.jsonl",
    "journal.jsonl.lock",
    "journals/*.jsonl",
    "journals/*.lock",
    "likelihood.jsonl",
    "batches/*.jsonl",
)
"""Files of a run folder mitigate reads back (journals, their locks, caches, batch logs): regular files
only."""
OUTPUTS = (
    "results.json",
    "results.sqlite",
    "report.md",
    "report.html",
    "*.png",
    "train.jsonl",
    "probes/*.jsonl",
)
"""Files of a run folder mitigate only writes: written as outputs are (a link followed, a device written
through)."""


def check_run_folder(folder: Path) -> None:
    """Refuse, before any work, a file of ``folder`` that mitigate would block on, fill the memory with, or
    replace: anything but a regular file (or a link to one) it reads back, or a FIFO, socket, block device
    or folder where it writes an output."""
    for pattern in (*READ_BACK, *OUTPUTS):
        for found in sorted(folder.glob(pattern)):
            if pattern in READ_BACK:
                kind = path_kind(found)
                if kind != "a regular file":
                    raise ConfigError(
                        f"expected {found} to be a regular file mitigate reads back; it is {kind} "
                        "(remove it, or use another folder)",
                        path=str(found),
                    )
            else:
                output_target(found, "the output")


@contextmanager
def writing_after_run(kept: str | None) -> Iterator[None]:
    """Around the outputs a command writes after its LM calls: a failure there exits 1, not 2 (the work was
    done), in one line saying where the judgments are kept and how to get the files without new LM calls."""
    try:
        yield
    except (MitigateError, OSError) as exc:
        reason = exc.message if isinstance(exc, MitigateError) else f"{exc.strerror or type(exc).__name__}"
        keep = (
            f"the judgments are kept in {kept}: fix that (free the space, change the path) and rerun the "
            "same command to write the files without new LM calls"
            if kept
            else "the judgments were kept nowhere (--no-cache and no --run-dir): rerun the command once the "
            "files can be written"
        )
        raise RunStoppedError(f"{reason}; the run finished and {keep}") from None
