"""The files and folders a command reads and writes, checked before any work with one-line errors."""

from __future__ import annotations

import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from mitigate.errors import ConfigError
from mitigate.paths import check_input_file, output_target


def read_text_file(path: Path, option: str) -> str:
    """The UTF-8 text of the file given to ``option``; one-line ConfigError when it cannot be read."""
    check_input_file(path, option)  # a folder, FIFO or device is refused by what it is, never opened
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise ConfigError(f"expected {option} to name a readable file; {path}: {exc.strerror}", path=str(path)) from None
    try:
        return data.decode("utf-8").removeprefix("\ufeff")  # a BOM is an encoding mark, not prompt text
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        raise ConfigError(f"expected {option} to be UTF-8 text; {path}:{line} holds the byte {data[exc.start]:#04x}, "
                          "which is not UTF-8 (re-save the file as UTF-8)", path=str(path), line=line) from None


def writable_dir(path: Path, option: str) -> Path:
    """Create the folder given to ``option`` when needed and check a file can be written in it."""
    if path.exists() and not path.is_dir():
        raise ConfigError(f"expected {option} to be a folder; {path} is a file", path=str(path))
    try:
        path.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile(dir=path, prefix=".write-check-"):
            pass
    except OSError as exc:
        raise ConfigError(f"expected {option} to be a folder mitigate can write in; {path}: "
                          f"{exc.strerror or type(exc).__name__}", path=str(path)) from None
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
    from mitigate.run.journal import RunLock  # lazy: the runner is not loaded for --help (issue 29)

    writable_dir(path, option)
    for name in ("journal.jsonl", "results.json"):
        if (path / name).is_dir():
            raise ConfigError(f"expected {path / name} to be a file mitigate writes; it is a directory",
                              path=str(path / name))
    with RunLock.for_journal(path / "journal.jsonl"):
        yield path
