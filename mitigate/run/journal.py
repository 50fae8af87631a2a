"""The run journal: an append-only JSONL record of finished judgments that a killed run resumes from, and its
lock.

The first line names the judge's fingerprint; each later line is one finished
:class:`~mitigate.judge.Judgment`, written to the OS as soon as it is known and fsync'd at
most every ``fsync_every`` seconds and at the end. Damaged or blank lines at its end (a write
cut short) are trimmed and their items redone; a line whose score lies outside the judge's
scale (or is not a finite number) is damaged wherever it stands: its item is judged again, with
one :class:`~mitigate.errors.JournalDamageWarning`. A lock file beside it (``<journal>.lock``,
``flock``) keeps a second process off the same journal (:class:`~mitigate.errors.RunBusyError`).
The journal and its lock are files mitigate reads back, so each must be a regular file (a symlink
to one is followed); a FIFO, socket or device is refused by what it is before anything is read
(:func:`mitigate.paths.open_regular`), and no line is read past :data:`mitigate.paths.MAX_LINE_BYTES`.
See :mod:`mitigate.run.runner` for how a run uses it.
"""

from __future__ import annotations

import json
import math
import os
import threading
import time
import warnings
from collections.abc import Mapping
from pathlib import Path
from types import TracebackType
from typing import Any, ClassVar

from pydantic import ValidationError

from mitigate.errors import (
    ConfigError,
    DataError,
    JournalDamageWarning,
    RunBusyError,
    RunStoppedError,
)
from mitigate.judge import Judgment
from mitigate.paths import open_regular, path_kind, read_lines

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
        """Take the lock; RunBusyError when another process holds it, ConfigError when it cannot be
        written."""
        if fcntl is None or self._key is not None:  # pragma: no cover - no locking off POSIX
            return
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            key = str(self.path.resolve())
        except OSError as exc:
            blocker = next((p for p in self.path.parents if p.exists()), None)
            reason = (f"{blocker} is a file" if blocker is not None and not blocker.is_dir()
                      else _os_reason(exc))
            raise ConfigError(f"expected a writable folder for {self.path}; {reason}",
                              path=str(self.path)) from None
        with self._guard:
            held = self._held.get(key)
            if held is not None:
                held[1] += 1
                self._key = key
                return
            try:
                # a FIFO or a device is refused, never opened
                fh = open_regular(self.path, "a+", "the lock file")
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


class Journal:
    """Append-only, fsync'd record of finished judgments for one judge configuration.

    Opening a journal takes its :class:`RunLock` (released by :meth:`close`). Damaged or blank
    lines at the end (a write cut short) are trimmed and their items judged again; an unreadable
    line followed by good ones is a :class:`~mitigate.errors.DataError` naming it (the file was
    edited or damaged, not cut short).
    """

    def __init__(
        self, path: Path | str, fingerprint: str, *, restart: bool = False, fsync_every: float = 1.0,
        bounds: Mapping[str, tuple[float, float]] | None = None,
    ) -> None:
        self.path = Path(path)
        self.fingerprint = fingerprint
        self.fsync_every = fsync_every
        self.bounds = dict(bounds or {})
        self.done: dict[str, Judgment] = {}
        self.trimmed = 0  # damaged or blank trailing lines removed on load
        self.rejected: dict[str, str] = {}  # item id -> why its last line was damaged (judged again)
        self._fh: Any = None
        self._last_sync = time.monotonic()
        if self.path.is_dir():
            raise ConfigError(f"expected a journal file at {self.path}; got a directory", path=str(self.path))
        kind = path_kind(self.path)
        # unreadable: said below
        if kind not in (None, "a regular file") and not kind.startswith("unreadable"):
            raise ConfigError(f"expected the journal {self.path} to be a regular file; it is {kind}",
                              path=str(self.path))
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
            raise ConfigError(f"expected a readable and writable journal at {self.path}; got "
                              f"{_os_reason(exc)}",
                              path=str(self.path)) from None
        except BaseException:
            self._lock.release()
            raise

    def _load(self) -> None:
        # every complete line with its end offset; a SIGKILL can leave a partial last line (no newline)
        parsed: list[tuple[int, int, Any]] = []  # (line number, end offset, header dict | Judgment | error)
        size = complete = 0
        with open_regular(self.path, "rb", "the journal") as fh:
            for number, raw in enumerate(read_lines(fh, f"the journal {self.path}", path=self.path), start=1):
                size += len(raw)
                if not raw.endswith(b"\n"):
                    break
                complete = size
                if raw.strip():
                    parsed.append((number, size, self._parse(raw[:-1], first=not parsed)))
        good = [i for i, (_, _, v) in enumerate(parsed) if not isinstance(v, str)]
        keep_end = parsed[good[-1]][1] if good else 0
        if keep_end < size:  # damaged, blank or partial lines at the end: a write cut short
            self.trimmed = sum(1 for _, end, _ in parsed if end > keep_end) + (complete < size)
            with open_regular(self.path, "r+b", "the journal") as fh:
                fh.truncate(keep_end)
            parsed = parsed[: good[-1] + 1] if good else []
        if not parsed:
            self._write_line({"journal": JOURNAL_VERSION, "judge": self.fingerprint})
            return
        for number, _, value in parsed:
            if isinstance(value, str):
                raise DataError(
                    f"{self.path}:{number}: expected "
                    f"{'a journal header' if number == parsed[0][0] else 'a judgment'}; got an unreadable "
                    f"line ({value}) followed by good ones; delete that line to judge its item "
                    "again, or rerun with --restart",
                    path=str(self.path), line=number,
                )
        header = parsed[0][2]
        if not isinstance(header, dict):
            raise DataError(f"{self.path}:{parsed[0][0]}: expected a journal header line first; "
                            "got a judgment",
                            path=str(self.path), line=parsed[0][0])
        if header.get("judge") != self.fingerprint:
            raise ConfigError(
                f"journal {self.path} was written by another judge configuration (fingerprint "
                f"{header.get('judge')!r}); this judge is {self.fingerprint!r}. Use another run "
                "folder or restart.",
                path=str(self.path),
            )
        for number, _, j in parsed[1:]:
            if not isinstance(j, Judgment):
                continue
            damage = self._out_of_bounds(j)
            if damage is not None:
                self.done.pop(j.item_id, None)
                self.rejected[j.item_id] = f"line {number}: {damage}"
            elif j.error is None:
                self.done[j.item_id] = j
                self.rejected.pop(j.item_id, None)
            else:
                self.done.pop(j.item_id, None)
        if self.rejected:
            first = next(iter(self.rejected.values()))
            warnings.warn(
                f"journal {self.path}: {len(self.rejected)} judgment line(s) hold a score that is not on the "
                f"judge's scale ({first}); read as damaged, their items are judged again",
                JournalDamageWarning, stacklevel=3,
            )

    def _out_of_bounds(self, judgment: Judgment) -> str | None:
        """Why a journalled judgment cannot be one this judge gave (a score off its scale, not finite); None
        if none."""
        values = [(name, v) for name, v in judgment.scores.items()]
        values += [(name, v) for name, samples in judgment.samples.items() for v in samples]
        for name, value in values:
            if value is None:
                continue
            if not math.isfinite(value):
                return f"{name!r} is {value}"
            lo, hi = self.bounds.get(name, (-math.inf, math.inf))
            if not lo - 1e-9 <= value <= hi + 1e-9:
                return f"{name!r} is {value:g}, outside the scale {lo:g} to {hi:g}"
        return None

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
                self._fh = open_regular(self.path, "a", "the journal")
            self._fh.write(text + "\n")
            self._fh.flush()  # in the kernel now: survives SIGKILL of this process
            now = time.monotonic()
            if now - self._last_sync >= self.fsync_every:
                os.fsync(self._fh.fileno())
                self._last_sync = now
        except OSError as exc:
            raise RunStoppedError(
                f"could not write to the journal {self.path}: {_os_reason(exc)}; the judgments written "
                "before are kept, rerun the same command to resume once the disk is writable",
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
