"""Files: where mitigate finds shared data and keeps its caches, and what a path is before it reads or writes it.

* :func:`data_dir` and :func:`cache_dir` locate the shared data folder and the LM-call caches.

* :func:`path_kind` names what a path is ("a regular file", "a directory", "a FIFO", "a character
  device" ...), without opening it (opening a FIFO blocks until a writer comes; ``/dev/zero`` never
  ends).
* :func:`check_input_file` refuses, in one line, anything to be read that is not a regular file.
* :func:`write_output` writes an output file: atomically (a temporary file renamed over it) when the
  path is absent or a regular file; **a symlink is followed**: the file it points to is written and
  the link stays a link. A character device (``/dev/null``, ``/dev/stdout``) is written through, never
  replaced by a regular file; a FIFO, socket, block device or directory is refused.
* :func:`one_line` escapes newlines and other control characters, so an item id or a text printed
  in a one-row-per-line output cannot break the row.
"""

from __future__ import annotations

import contextlib
import os
import stat
from collections.abc import Callable
from pathlib import Path
from typing import TextIO

from mitigate.errors import ConfigError

_REPO_ROOT = Path(__file__).resolve().parent.parent


def data_dir() -> Path | None:
    """The shared data folder: ``$MITIGATE_DATA_DIR``, else ``../shared/data`` beside the repo when present.

    Returns None when neither exists, so tests can skip cleanly.
    """
    env = os.environ.get("MITIGATE_DATA_DIR")
    if env:
        return Path(env)
    candidate = _REPO_ROOT.parent / "shared" / "data"
    return candidate if candidate.is_dir() else None


def cache_dir() -> Path:
    """Where LM-call caches live: ``$MITIGATE_CACHE_DIR``, else ``~/.cache/mitigate``."""
    env = os.environ.get("MITIGATE_CACHE_DIR")
    if env:
        return Path(env)
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "mitigate"


_KINDS = (
    (stat.S_ISREG, "a regular file"),
    (stat.S_ISDIR, "a directory"),
    (stat.S_ISFIFO, "a FIFO (named pipe)"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISSOCK, "a socket"),
)


def path_kind(path: Path | str) -> str | None:
    """What ``path`` is (symlinks followed): "a regular file", "a directory", "a FIFO (named pipe)" ...; None when absent."""
    try:
        mode = os.stat(path).st_mode
    except FileNotFoundError:
        return None
    except OSError as exc:
        return f"unreadable ({exc.strerror or type(exc).__name__})"
    return next((name for test, name in _KINDS if test(mode)), "not a regular file")


def check_input_file(path: Path | str, what: str, *, error: type[ConfigError] = ConfigError) -> Path:
    """``path`` when it is a regular file (symlinks followed); one-line ``error`` naming what it is otherwise.

    Checked with ``stat``, never by opening: a FIFO or a device is refused before it can block a read.
    """
    path = Path(path)
    kind = path_kind(path)
    if kind is None:
        raise error(f"expected {what} to name a file; {path} does not exist (no such file)", path=str(path))
    if kind != "a regular file":
        raise error(f"expected {what} to name a regular file; {path} is {kind}", path=str(path))
    return path


def output_target(path: Path | str, what: str) -> tuple[Path, bool]:
    """Where a write to ``path`` goes, and whether it is written through (a character device).

    A symlink is followed (the target is written, the link stays); a FIFO, socket, block device or
    directory is refused with a one-line ConfigError.
    """
    path = Path(path)
    target = Path(os.path.realpath(path)) if path.is_symlink() else path
    kind = path_kind(target)
    if kind is None or kind == "a regular file":
        return target, False
    if kind == "a character device":
        return target, True
    raise ConfigError(f"expected to write {what} {path} as a regular file (or a new one); {path} is {kind}",
                      path=str(path))


def write_output(path: Path | str, write: Callable[[TextIO], None] | str, what: str = "the output file",
                 *, newline: str | None = None, durable: bool = True) -> Path:
    """Write an output file and return ``path``; see the module docstring for what each kind of path gets.

    ``write`` is the text, or a function writing to the open text file. A regular file is replaced
    atomically (a reader sees the old file or the new one, never a part); an OSError becomes a
    one-line ConfigError naming the file (``/dev/full``: "No space left on device").
    """
    path = Path(path)
    target, through = output_target(path, what)

    def fill(fh: TextIO) -> None:
        if isinstance(write, str):
            fh.write(write)
        else:
            write(fh)
        fh.flush()

    if through:
        try:
            with open(target, "w", encoding="utf-8", newline=newline) as fh:
                fill(fh)
        except OSError as exc:
            raise ConfigError(f"expected to write {what} {path}; got {exc.strerror or type(exc).__name__}",
                              path=str(path)) from None
        return path
    tmp = target.with_name(f".{target.name}.{os.getpid()}.tmp")
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        with open(tmp, "w", encoding="utf-8", newline=newline) as fh:
            fill(fh)
            if durable:
                os.fsync(fh.fileno())
        os.replace(tmp, target)
    except OSError as exc:
        with contextlib.suppress(OSError):
            tmp.unlink(missing_ok=True)
        raise ConfigError(f"expected to write {what} {path}; got {exc.strerror or type(exc).__name__}",
                          path=str(path)) from None
    return path


def one_line(text: object) -> str:
    """``text`` with newlines, tabs and other control characters escaped (``\\n``, ``\\t``, ``\\x1b`` ...)."""
    s = str(text)
    if s.isprintable():
        return s
    out = []
    for ch in s:
        if ch.isprintable():
            out.append(ch)
        elif ch in "\n\r\t":
            out.append({"\n": "\\n", "\r": "\\r", "\t": "\\t"}[ch])
        else:
            out.append(repr(ch)[1:-1] if ord(ch) < 0x10000 else ch)
    return "".join(out)
