"""The run journal: an append-only JSONL record of finished judgments that a killed run resumes from, and its lock.

The first line names the judge's fingerprint; each later line is one finished
:class:`~mitigate.judge.Judgment`, written to the OS as soon as it is known and fsync'd at
most every ``fsync_every`` seconds and at the end. Damaged or blank lines at its end (a write
cut short) are trimmed and their items redone. A lock file beside it (``<journal>.lock``,
``flock``) keeps a second process off the same journal (:class:`~mitigate.errors.RunBusyError`).
See :mod:`mitigate.run.runner` for how a run uses it.
"""

from __future__ import annotations

import contextlib
import json
import os
import threading
import time
from pathlib import Path
from types import TracebackType
from typing import Any, ClassVar

from pydantic import ValidationError

from mitigate.errors import (
    ConfigError,
    DataError,
    RunBusyError,
    RunStoppedError,
)
from mitigate.judge import Judgment

try:
    import fcntl
except ImportError:  # pragma: no cover - not on POSIX: journals are not locked
    fcntl = None  # type: ignore[assignment]


JOURNAL_VERSION = 1


def _os_reason(exc: OSError) -> str:
    return exc.strerror or type(exc).__name__


class RunLock:
    """An exclusive lock on a file (``flock``), re-entrant within one process.

    ``RunLock(path)`` as a context manager holds the lock; a second process asking for it gets
    :class:`~mitigate.errors.RunBusyError` at once (never a wait). The file is created when
    missing, holds the owner's pid (for the message) and is left in place (an unlocked leftover
    file is harmless). Within one process the same path may be locked again (the CLI locks a run
    folder, then the runner locks its journal): the lock is released when the last holder exits.
    Where ``fcntl`` is missing (not POSIX) the lock is a no-op.
    """

    _held: ClassVar[dict[str, list[Any]]] = {}  # resolved path -> [file, holders]
    _guard = threading.Lock()

    def __init__(self, path: Path | str) -> None:
        self.path = Path(path)
        self._key: str | None = None

    @classmethod
    def for_journal(cls, journal: Path | str) -> RunLock:
        """The lock of a journal: ``<journal>.lock`` beside it."""
        journal = Path(journal)
        return cls(journal.with_name(journal.name + ".lock"))

    def acquire(self) -> None:
        """Take the lock; RunBusyError when another process holds it, ConfigError when it cannot be written."""
        if fcntl is None or self._key is not None:  # pragma: no cover - no locking off POSIX
            return
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            key = str(self.path.resolve())
        except OSError as exc:
            blocker = next((p for p in self.path.parents if p.exists()), None)
            reason = f"{blocker} is a file" if blocker is not None and not blocker.is_dir() else _os_reason(exc)
            raise ConfigError(f"expected a writable folder for {self.path}; {reason}", path=str(self.path)) from None
        with self._guard:
            held = self._held.get(key)
            if held is not None:
                held[1] += 1
                self._key = key
                return
            try:
                fh = self.path.open("a+", encoding="utf-8")
            except OSError as exc:
                raise ConfigError(f"expected to create the lock file {self.path}; got {_os_reason(exc)}",
                                  path=str(self.path)) from None
            try:
                fcntl.flock(fh.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError:
                fh.seek(0)
                owner = fh.read().strip()
                fh.close()
                raise RunBusyError(
                    f"{self.path.parent} is in use by another mitigate process"
                    + (f" (pid {owner})" if owner.isdigit() else "")
                    + "; expected one process per run folder: wait for it to finish, or use another folder",
                    path=str(self.path),
                ) from None
            fh.seek(0)
            fh.truncate()
            fh.write(str(os.getpid()))
            fh.flush()
            self._held[key] = [fh, 1]
            self._key = key

    def release(self) -> None:
        """Give the lock back (the file stays)."""
        key, self._key = self._key, None
        if key is None:
            return
        with self._guard:
            held = self._held.get(key)
            if held is None:
                return
            held[1] -= 1
            if held[1] == 0:
                del self._held[key]
                fcntl.flock(held[0].fileno(), fcntl.LOCK_UN)
                held[0].close()

    def __enter__(self) -> RunLock:
        self.acquire()
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.release()


def write_atomic(path: Path | str, text: str) -> Path:
    """Write ``text`` to ``path`` atomically: a reader sees the old file or the new one, never a part.

    The text goes to a temporary file in the same folder, is fsync'd, and replaces ``path`` with
    ``os.replace``. An OSError becomes a ConfigError naming the file.
    """
    target = Path(path)
    tmp = target.with_name(f".{target.name}.{os.getpid()}.tmp")
    try:
        with tmp.open("w", encoding="utf-8") as fh:
            fh.write(text)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, target)
    except OSError as exc:
        with contextlib.suppress(OSError):
            tmp.unlink(missing_ok=True)
        raise ConfigError(f"expected to write {target}; got {_os_reason(exc)}", path=str(target)) from None
    return target


class Journal:
    """Append-only, fsync'd record of finished judgments for one judge configuration.

    Opening a journal takes its :class:`RunLock` (released by :meth:`close`). Damaged or blank
    lines at the end (a write cut short) are trimmed and their items judged again; an unreadable
    line followed by good ones is a :class:`~mitigate.errors.DataError` naming it (the file was
    edited or damaged, not cut short).
    """

    def __init__(
        self, path: Path | str, fingerprint: str, *, restart: bool = False, fsync_every: float = 1.0
    ) -> None:
        self.path = Path(path)
        self.fingerprint = fingerprint
        self.fsync_every = fsync_every
        self.done: dict[str, Judgment] = {}
        self.trimmed = 0  # damaged or blank trailing lines removed on load
        self._fh: Any = None
        self._last_sync = time.monotonic()
        if self.path.is_dir():
            raise ConfigError(f"expected a journal file at {self.path}; got a directory", path=str(self.path))
        self._lock = RunLock.for_journal(self.path)
        self._lock.acquire()
        try:
            if restart and self.path.exists():
                self.path.unlink()
            if self.path.exists():
                self._load()
            else:
                self._write_line({"journal": JOURNAL_VERSION, "judge": fingerprint})
        except OSError as exc:
            self._lock.release()
            raise ConfigError(f"expected a readable and writable journal at {self.path}; got {_os_reason(exc)}",
                              path=str(self.path)) from None
        except BaseException:
            self._lock.release()
            raise

    def _load(self) -> None:
        data = self.path.read_bytes()
        # every complete line with its end offset; a SIGKILL can leave a partial last line (no newline)
        lines: list[tuple[int, bytes]] = []
        start = 0
        while (end := data.find(b"\n", start)) >= 0:
            lines.append((end + 1, data[start:end]))
            start = end + 1
        parsed: list[tuple[int, int, Any]] = []  # (line number, end offset, header dict | Judgment | error)
        for number, (end, raw) in enumerate(lines, start=1):
            if not raw.strip():
                continue
            parsed.append((number, end, self._parse(raw, first=not parsed)))
        good = [i for i, (_, _, v) in enumerate(parsed) if not isinstance(v, str)]
        keep_end = parsed[good[-1]][1] if good else 0
        if keep_end < len(data):  # damaged, blank or partial lines at the end: a write cut short
            self.trimmed = sum(1 for _, end, _ in parsed if end > keep_end) + (start < len(data))
            with self.path.open("r+b") as fh:
                fh.truncate(keep_end)
            parsed = parsed[: good[-1] + 1] if good else []
        if not parsed:
            self._write_line({"journal": JOURNAL_VERSION, "judge": self.fingerprint})
            return
        for number, _, value in parsed:
            if isinstance(value, str):
                raise DataError(
                    f"{self.path}:{number}: expected {'a journal header' if number == parsed[0][0] else 'a judgment'}; "
                    f"got an unreadable line ({value}) followed by good ones; delete that line to judge its item "
                    "again, or rerun with --restart",
                    path=str(self.path), line=number,
                )
        header = parsed[0][2]
        if not isinstance(header, dict):
            raise DataError(f"{self.path}:{parsed[0][0]}: expected a journal header line first; got a judgment",
                            path=str(self.path), line=parsed[0][0])
        if header.get("judge") != self.fingerprint:
            raise ConfigError(
                f"journal {self.path} was written by another judge configuration (fingerprint "
                f"{header.get('judge')!r}); this judge is {self.fingerprint!r}. Use another run folder or restart.",
                path=str(self.path),
            )
        for _, _, j in parsed[1:]:
            if not isinstance(j, Judgment):
                continue
            if j.error is None:
                self.done[j.item_id] = j
            else:
                self.done.pop(j.item_id, None)

    @staticmethod
    def _parse(raw: bytes, *, first: bool) -> dict[str, Any] | Judgment | str:
        """The header (first line) or a judgment; a short reason string when the line is unreadable."""
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError:
            return "not UTF-8"
        if first:
            try:
                header = json.loads(text)
            except json.JSONDecodeError as exc:
                return f"invalid JSON: {exc.msg}"
            if not isinstance(header, dict) or "judge" not in header:
                return "not a journal header"
            return header
        try:
            return Judgment.model_validate_json(text)
        except ValidationError as exc:
            return f"not a judgment: {exc.errors()[0].get('msg', 'invalid') if exc.errors() else 'invalid'}"

    def _write_line(self, obj: dict[str, Any] | str) -> None:
        text = obj if isinstance(obj, str) else json.dumps(obj)
        try:
            if self._fh is None:
                self._fh = self.path.open("a", encoding="utf-8")
            self._fh.write(text + "\n")
            self._fh.flush()  # in the kernel now: survives SIGKILL of this process
            now = time.monotonic()
            if now - self._last_sync >= self.fsync_every:
                os.fsync(self._fh.fileno())
                self._last_sync = now
        except OSError as exc:
            raise RunStoppedError(
                f"could not write to the journal {self.path}: {_os_reason(exc)}; the judgments written before "
                "are kept, rerun the same command to resume once the disk is writable",
                path=str(self.path),
            ) from None

    def close(self) -> None:
        """Flush to disk, close the file and release the lock."""
        try:
            if self._fh is not None:
                fh, self._fh = self._fh, None
                try:
                    fh.flush()
                    os.fsync(fh.fileno())
                finally:
                    fh.close()
        except OSError as exc:
            raise RunStoppedError(f"could not flush the journal {self.path}: {_os_reason(exc)}",
                                  path=str(self.path)) from None
        finally:
            self._lock.release()

    def record(self, judgment: Judgment) -> None:
        """Append one judgment (durably) and remember it."""
        self._write_line(judgment.model_dump_json())
        if judgment.error is None:
            self.done[judgment.item_id] = judgment
