"""Files: where mitigate finds shared data and keeps its caches, and what a path is before it reads or writes
it. A path's kind is read without opening it (a FIFO blocks; ``/dev/zero`` never ends); a file mitigate
reads back is checked on the open file itself; :func:`write_output` (:func:`open_output`,
:func:`output_path`) is the one way an output is written: atomically for a regular or new file, a symlink
followed, a character device written through, anything else refused."""

from __future__ import annotations

import contextlib
import io
import json
import os
import re
import stat
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import IO, Any

from mitigate.errors import ConfigError, DataError

_REPO_ROOT = Path(__file__).resolve().parent.parent


def data_dir() -> Path | None:
    """The shared data folder: ``$MITIGATE_DATA_DIR``, else ``../shared/data`` beside the repo, else
    :func:`user_data_dir`, the first that holds a file; None when none does (an empty folder, such as an
    offline ``mitigate data fetch`` once left, is no data folder)."""
    env = os.environ.get("MITIGATE_DATA_DIR")
    if env:
        return Path(env)
    for candidate in (_REPO_ROOT.parent / "shared" / "data", user_data_dir()):
        if candidate.is_dir() and any(p.is_file() for p in candidate.rglob("*")):
            return candidate
    return None


def user_data_dir() -> Path:
    """Where ``mitigate data fetch`` puts benchmarks: ``$XDG_DATA_HOME/mitigate/data`` (default
    ``~/.local/share``)."""
    base = os.environ.get("XDG_DATA_HOME") or str(Path.home() / ".local" / "share")
    return Path(base) / "mitigate" / "data"


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
    """What ``path`` is (symlinks followed): "a regular file", "a directory", "a FIFO (named pipe)" ...; None
    when absent."""
    try:
        mode = os.stat(path).st_mode
    except FileNotFoundError:
        return None
    except OSError as exc:
        return f"unreadable ({exc.strerror or type(exc).__name__})"
    return next((name for test, name in _KINDS if test(mode)), "not a regular file")


def check_input_file(path: Path | str, what: str, *, error: type[ConfigError] = ConfigError) -> Path:
    """``path`` when it is a regular file (symlinks followed, checked with ``stat``, never by opening); a
    one-line ``error`` naming what it is otherwise."""
    path = Path(path)
    kind = path_kind(path)
    if kind is None:
        raise error(f"expected {what} to name a file; {path} does not exist (no such file)", path=str(path))
    if kind != "a regular file":
        raise error(f"expected {what} to name a regular file; {path} is {kind}", path=str(path))
    return path


MAX_LINE_BYTES = 256 * 2**20
"""Longest line :func:`read_lines` reads (a journal line holds a judgment's raw answers)."""

_OPEN_FLAGS = {
    "rb": os.O_RDONLY,
    "r": os.O_RDONLY,
    "ab": os.O_WRONLY | os.O_APPEND | os.O_CREAT,
    "a": os.O_WRONLY | os.O_APPEND | os.O_CREAT,
    "r+b": os.O_RDWR,
    "a+": os.O_RDWR | os.O_APPEND | os.O_CREAT,
    "a+b": os.O_RDWR | os.O_APPEND | os.O_CREAT,
}


def open_regular(path: Path | str, mode: str, what: str) -> IO[Any]:
    """``path`` opened in ``mode`` ("rb", "r", "ab", "a", "r+b", "a+", "a+b"; text is UTF-8) when it is a
    regular file, checked on the open file without blocking; a one-line ConfigError naming what it is
    otherwise (other OSErrors are raised as they are)."""
    flags = _OPEN_FLAGS[mode] | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0) | getattr(os, "O_NOCTTY", 0)
    try:
        fd = os.open(path, flags, 0o666)
    except OSError:
        kind = path_kind(path)
        if kind not in (None, "a regular file") and not kind.startswith("unreadable"):
            raise ConfigError(
                f"expected {what} {path} to be a regular file; it is {kind}", path=str(path)
            ) from None
        raise
    try:
        mode_bits = os.fstat(fd).st_mode
        if not stat.S_ISREG(mode_bits):
            kind = next((name for test, name in _KINDS if test(mode_bits)), "not a regular file")
            raise ConfigError(f"expected {what} {path} to be a regular file; it is {kind}", path=str(path))
        if hasattr(os, "set_blocking"):
            os.set_blocking(fd, True)
        binary = os.fdopen(fd, mode if "b" in mode else mode + "b")
    except BaseException:
        os.close(fd)
        raise
    if "b" in mode:
        return binary
    return io.TextIOWrapper(binary, encoding="utf-8", newline=None if mode == "r" else "")


def read_lines(
    fh: IO[bytes], what: str, *, max_line: int | None = None, path: Path | str | None = None
) -> Iterator[bytes]:
    """The lines of an open binary file from where it stands, each with its line break; one longer than
    ``max_line`` bytes (default :data:`MAX_LINE_BYTES`) is a DataError, never read whole."""
    max_line = MAX_LINE_BYTES if max_line is None else max_line
    for number, line in enumerate(iter(lambda: fh.readline(max_line + 1), b""), 1):
        if len(line) > max_line:
            raise DataError(
                f"expected {what} to hold lines of at most {max_line:,} bytes (the JSON lines "
                f"mitigate writes); line {number} is longer",
                line=number,
                path=None if path is None else str(path),
            )
        yield line


MAX_FILE_BYTES = 256 * 2**20
"""Largest file :func:`read_file` reads whole (a config, a pipeline spec, a harness's results file ...)."""


def read_file(
    path: Path | str, what: str, *, error: type[ConfigError] = ConfigError, max_bytes: int = MAX_FILE_BYTES
) -> bytes:
    """The bytes of ``what`` at ``path`` when it is a regular file of at most ``max_bytes`` (a FIFO or device
    is refused by what it is, never opened; a longer file is refused, never read whole); one-line ``error``
    otherwise."""
    path = check_input_file(path, what, error=error)
    try:
        with open_regular(path, "rb", what) as handle:
            data = handle.read(max_bytes + 1)
    except OSError as exc:
        raise error(
            f"expected {what} to name a readable file; {path}: {exc.strerror or type(exc).__name__}",
            path=str(path),
        ) from None
    if len(data) > max_bytes:
        raise error(f"expected {what} {path} of at most {max_bytes:,} bytes; it is longer", path=str(path))
    return data


def loads_json(text: str) -> Any:
    """``json.loads(text)`` (a leading byte-order mark skipped), every way the text fails read as a
    :class:`json.JSONDecodeError` naming what was expected: also an integer longer than Python converts
    (``sys.get_int_max_str_digits()``, 4,300 digits) and nesting deeper than Python recurses, which ``json``
    raises as other errors."""
    text = text.removeprefix("\ufeff")
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        raise
    except RecursionError:
        raise json.JSONDecodeError(
            "nested too deep to read (at most a few hundred levels)", text, 0
        ) from None
    except ValueError:  # an integer past the digit limit (the one ValueError json.loads raises besides)
        limit = sys.get_int_max_str_digits()
        found = re.search(rf"\d{{{limit + 1},}}", text)
        digits = f"{len(found.group()):,}" if found else "more"
        message = f"expected numbers of at most {limit:,} digits; got an integer of {digits} digits"
        raise json.JSONDecodeError(message, text, found.start() if found else 0) from None


def output_target(path: Path | str, what: str) -> tuple[Path, bool]:
    """Where a write to ``path`` goes (a symlink followed), and whether it is written through (a character
    device); a FIFO, socket, block device or directory is a one-line ConfigError."""
    path = Path(path)
    target = Path(os.path.realpath(path)) if path.is_symlink() else path
    kind = path_kind(target)
    if kind is None or kind == "a regular file":
        return target, False
    if kind == "a character device":
        return target, True
    raise ConfigError(
        f"expected to write {what} {path} as a regular file (or a new one); {path} is {kind}", path=str(path)
    )


def write_output(
    path: Path | str,
    write: Callable[[IO[Any]], None] | str | bytes,
    what: str = "the output file",
    *,
    newline: str | None = None,
    durable: bool = True,
    binary: bool = False,
) -> Path:
    """Write an output file (the text, bytes, or a function writing to the open file) and return ``path``:
    atomically, a failed write leaving the old file (an OSError is a one-line ConfigError)."""
    binary = binary or isinstance(write, bytes)
    with open_output(path, what, newline=newline, durable=durable, binary=binary) as fh:
        if isinstance(write, str | bytes):
            fh.write(write)
        else:
            write(fh)
    return Path(path)


@contextlib.contextmanager
def open_output(
    path: Path | str,
    what: str = "the output file",
    *,
    newline: str | None = None,
    durable: bool = True,
    binary: bool = False,
) -> Iterator[IO[Any]]:
    """An output file open for writing (text, or binary with ``binary=True``), written as :func:`write_output`
    writes: a regular or new file is replaced when the block ends without an error."""
    path = Path(path)
    target, through = output_target(path, what)

    def opened(fd: int) -> IO[Any]:
        return os.fdopen(fd, "wb") if binary else os.fdopen(fd, "w", encoding="utf-8", newline=newline)

    if through:
        try:  # opened without blocking and checked again on the open file: still the device it was
            fd = os.open(target, os.O_WRONLY | os.O_NONBLOCK | getattr(os, "O_NOCTTY", 0))
            if not stat.S_ISCHR(os.fstat(fd).st_mode):
                os.close(fd)
                raise ConfigError(
                    f"expected to write {what} {path} through a character device; it changed "
                    f"into {path_kind(target)}",
                    path=str(path),
                )
            os.set_blocking(fd, True)
            device = opened(fd)
        except OSError as exc:
            raise _write_failed(path, what, exc) from None
        try:
            with device:
                yield device
                device.flush()
        except OSError as exc:
            raise _write_failed(path, what, exc) from None
        return
    with _replaced(target, path, what) as tmp:
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | getattr(os, "O_NOFOLLOW", 0), 0o666)
        with opened(fd) as fh:
            yield fh
            fh.flush()
            if durable:
                os.fsync(fh.fileno())


@contextlib.contextmanager
def output_path(path: Path | str, what: str = "the output file") -> Iterator[Path]:
    """A temporary path beside ``path`` for a writer that needs a file name (SQLite), renamed over it as
    :func:`open_output` does (a character device at ``path`` is refused)."""
    path = Path(path)
    target, through = output_target(path, what)
    if through:
        raise ConfigError(
            f"expected to write {what} {path} as a regular file (or a new one); {path} is "
            f"{path_kind(target)}",
            path=str(path),
        )
    with _replaced(target, path, what) as tmp:
        tmp.unlink(missing_ok=True)  # a leftover of a killed run
        yield tmp
        with open(tmp, "rb") as fh:
            os.fsync(fh.fileno())


@contextlib.contextmanager
def _replaced(target: Path, path: Path, what: str) -> Iterator[Path]:
    """A temporary path beside ``target``, renamed over it when the block ends without an error and removed
    otherwise (an OSError becomes a one-line ConfigError)."""
    tmp = target.with_name(f".{target.name}.{os.getpid()}.tmp")
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        yield tmp
        os.replace(tmp, target)
    except BaseException as exc:
        with contextlib.suppress(OSError):
            tmp.unlink(missing_ok=True)
        if isinstance(exc, OSError):
            raise _write_failed(path, what, exc) from None
        raise


def _write_failed(path: Path, what: str, exc: OSError) -> ConfigError:
    return ConfigError(
        f"expected to write {what} {path}; got {exc.strerror or type(exc).__name__}", path=str(path)
    )


def one_line(text: object) -> str:
    """``text`` with newlines, tabs and other control characters escaped (``\\n``, ``\\t``, ``\\x1b`` ...)."""
    s = str(text)
    if s.isprintable():
        return s
    # repr writes "\\n", "\\t", "\\x1b", "\\u2028" ...; a character beyond the BMP is kept as it is
    return "".join(ch if ch.isprintable() or ord(ch) >= 0x10000 else repr(ch)[1:-1] for ch in s)
