"""The run journal: an append-only JSONL record of finished judgments that a killed run resumes from, and its
lock.

The first line names the judge's fingerprint, each later line one finished judgment, written at once and
fsync'd at most every ``fsync_every`` seconds. Damaged lines at its end (a write cut short), or with a score
off the judge's scale, are dropped and their items redone.

Each judgment line opens with the item's content (:func:`content_key`, a hash of the texts a prompt can show),
so a judgment is read back only for the text it judged: an item rewritten under the same id is judged again
(:attr:`Journal.changed` counts them), and a line of an older journal, written without the hash, is never
taken for the item's present text (judged again, with a warning).
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import threading
import time
import warnings
from array import array
from bisect import bisect_left
from collections.abc import Mapping
from pathlib import Path
from types import TracebackType
from typing import Any, ClassVar

from pydantic import ValidationError

from mitigate.data import Item
from mitigate.errors import ConfigError, DataError, JournalDamageWarning, RunBusyError, RunStoppedError
from mitigate.judge import Judgment
from mitigate.paths import open_regular, path_kind, read_lines

try:
    import fcntl
except ImportError:  # pragma: no cover - not on POSIX: journals are not locked
    fcntl = None  # type: ignore[assignment]


JOURNAL_VERSION = 1


def id_hash(item_id: str) -> int:
    """The 64-bit key a journal's index keeps for an item id (the line read back tells two ids apart)."""
    return hash(item_id)


def content_key(item: Item) -> str:
    """A hash of every text of ``item`` a prompt can show (output, output_b, reference, inputs): 32 hex
    digits; another text under the same id gives another key."""
    texts = [item.output, item.output_b, item.reference, sorted(item.inputs.items())]
    return hashlib.blake2b(json.dumps(texts).encode("utf-8"), digest_size=16).hexdigest()


_CONTENT = b'{"content": "'
"""How a judgment line opens: its item's content key (32 hex digits), then the judgment's own fields."""
_JUDGMENT_AT = len(_CONTENT) + 32 + 3  # past the key and '", '


def _short(content: str | None) -> int:
    """The 64 bits of a content key the index keeps (0: a line without one)."""
    return 0 if content is None else int(content[:15], 16) + 1


def _os_reason(exc: OSError) -> str:
    return exc.strerror or type(exc).__name__


class RunLock:
    """An exclusive ``flock`` on a file holding the owner's pid, re-entrant within one process; another
    process gets :class:`~mitigate.errors.RunBusyError` at once (a no-op off POSIX)."""

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
        """Take the lock; RunBusyError when another process holds it."""
        if fcntl is None or self._key is not None:  # pragma: no cover - no locking off POSIX
            return
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            key = str(self.path.resolve())
        except OSError as exc:
            blocker = next((p for p in self.path.parents if p.exists()), None)
            file = blocker is not None and not blocker.is_dir()
            reason = f"{blocker} is a file" if file else _os_reason(exc)
            raise ConfigError(
                f"expected a writable folder for {self.path}; {reason}", path=str(self.path)
            ) from None
        with self._guard:
            held = self._held.get(key)
            if held is not None:
                held[1] += 1
                self._key = key
                return
            try:  # a FIFO or a device is refused, never opened
                fh = open_regular(self.path, "a+", "the lock file")
            except OSError as exc:
                raise ConfigError(
                    f"expected to create the lock file {self.path}; got {_os_reason(exc)}",
                    path=str(self.path),
                ) from None
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
    """Append-only, fsync'd record of finished judgments for one judge configuration, holding its
    :class:`RunLock` until :meth:`close`.

    An unreadable line followed by good ones is a :class:`~mitigate.errors.DataError`. Loading keeps only, per
    item whose last line is a good judgment, a hash of its id and where the line starts; :meth:`get` reads it.
    """

    def __init__(
        self,
        path: Path | str,
        fingerprint: str,
        *,
        restart: bool = False,
        fsync_every: float = 1.0,
        bounds: Mapping[str, tuple[float, float]] | None = None,
    ) -> None:
        self.path = Path(path)
        self.fingerprint = fingerprint
        self.fsync_every = fsync_every
        self.bounds = dict(bounds or {})
        self.rejected: dict[str, str] = {}  # item id -> why its last line was damaged (judged again)
        self._keys = array("q")  # sorted keys (id_hash) of the ids whose last line is a good judgment
        self._offsets = array("q")  # where each of those lines starts
        self._contents = array("q")  # the content key each of those lines holds (see _short)
        self.changed = 0  # items read back whose text changed since their line was written (judged again)
        self.unkeyed = 0  # good lines written without a content key (an older journal): judged again
        self._fh: Any = None
        self._reader: Any = None
        self._last_sync = time.monotonic()
        if self.path.is_dir():
            raise ConfigError(f"expected a journal file at {self.path}; got a directory", path=str(self.path))
        kind = path_kind(self.path)
        if kind not in (None, "a regular file") and not kind.startswith("unreadable"):
            raise ConfigError(
                f"expected the journal {self.path} to be a regular file; it is {kind}", path=str(self.path)
            )
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
            raise ConfigError(
                f"expected a readable and writable journal at {self.path}; got {_os_reason(exc)}",
                path=str(self.path),
            ) from None
        except BaseException:
            self._lock.release()
            raise

    def __len__(self) -> int:
        """How many items the journal holds a good judgment for (what a resumed run need not judge again)."""
        return len(self._keys)

    def _load(self) -> None:
        # one pass, nothing kept per line but its id's hash, where it starts and how it ended
        hashes, starts, states = array("q"), array("q"), array("b")  # state: 0 good, 1 failed call, 2 damaged
        contents = array("q")
        size = keep_end = 0
        header: dict[str, Any] | None = None
        first_bad: tuple[int, str, bool] | None = None
        seen = 0
        with open_regular(self.path, "rb", "the journal") as fh:
            for number, raw in enumerate(read_lines(fh, f"the journal {self.path}", path=self.path), start=1):
                start = size
                size += len(raw)
                if not raw.endswith(b"\n"):
                    break
                if not raw.strip():
                    continue
                content, value = self._parse(raw[:-1], first=seen == 0)
                seen += 1
                if isinstance(value, str):
                    first_bad = first_bad or (number, value, seen == 1)
                    continue
                if first_bad is not None:
                    line, reason, was_first = first_bad
                    raise DataError(
                        f"{self.path}:{line}: expected {'a journal header' if was_first else 'a judgment'}; "
                        f"got an unreadable line ({reason}) followed by good ones; delete that line to judge "
                        "its item again, or rerun with --restart",
                        path=str(self.path),
                        line=line,
                    )
                keep_end = size
                if isinstance(value, dict):
                    header = value
                    continue
                damage = self._out_of_bounds(value)
                if damage is not None:
                    self.rejected[value.item_id] = f"line {number}: {damage}"
                elif value.error is None and self.rejected:
                    self.rejected.pop(value.item_id, None)
                hashes.append(id_hash(value.item_id))
                starts.append(start)
                states.append(2 if damage is not None else 1 if value.error is not None else 0)
                contents.append(_short(content))
        if keep_end < size:  # damaged, blank or partial lines at the end: a write cut short
            with open_regular(self.path, "r+b", "the journal") as fh:
                fh.truncate(keep_end)
        if header is None:
            self._write_line({"journal": JOURNAL_VERSION, "judge": self.fingerprint})
            return
        if header.get("judge") != self.fingerprint:
            raise ConfigError(
                f"journal {self.path} was written by another judge configuration (fingerprint "
                f"{header.get('judge')!r}); this judge is {self.fingerprint!r}. Use another run "
                "folder or restart.",
                path=str(self.path),
            )
        self._index(hashes, starts, states, contents)
        self.unkeyed = self._contents.count(0)
        if self.unkeyed:
            warnings.warn(
                f"journal {self.path} holds {self.unkeyed} judgment(s) written without the content of the "
                "item they judged (by an older mitigate): a text may have changed under its id since, so "
                "these items are judged again",
                JournalDamageWarning,
                stacklevel=3,
            )
        if self.rejected:
            first = next(iter(self.rejected.values()))
            warnings.warn(
                f"journal {self.path}: {len(self.rejected)} judgment line(s) hold a score that is not on the "
                f"judge's scale ({first}); read as damaged, their items are judged again",
                JournalDamageWarning,
                stacklevel=3,
            )

    def _index(self, hashes: array, starts: array, states: array, contents: array) -> None:
        """Keep, per id key, where its last line starts when that line is a good judgment (sorted by key)."""
        lines = sorted(range(len(hashes)), key=hashes.__getitem__)  # stable: a key's lines stay in file order
        for at, line in enumerate(lines):
            key = hashes[line]
            if at + 1 < len(lines) and hashes[lines[at + 1]] == key:
                continue  # a later line of the same key decides
            if states[line] == 0:
                self._keys.append(key)
                self._offsets.append(starts[line])
                self._contents.append(contents[line])

    def _find(self, item: Item) -> int | None:
        """Where ``item``'s id is in the index, or None."""
        if not self._keys:
            return None
        key = id_hash(item.id)
        at = bisect_left(self._keys, key)
        return at if at < len(self._keys) and self._keys[at] == key else None

    def __contains__(self, item: object) -> bool:
        """Whether the journal may hold a good judgment of ``item``'s present texts (:meth:`get` reads it)."""
        if not isinstance(item, Item):
            return False
        at = self._find(item)
        return at is not None and self._contents[at] == _short(content_key(item))

    def get(self, item: Item) -> Judgment | None:
        """The good judgment the journal holds for ``item`` as it is now, or None (then it is to be judged:
        never judged, its judgment failed, or its texts changed since, which :attr:`changed` counts)."""
        at = self._find(item)
        if at is None or self._contents[at] == 0:
            return None
        content = content_key(item)
        if self._contents[at] != _short(content):
            self.changed += 1
            return None
        if self._reader is None:
            self._reader = open_regular(self.path, "rb", "the journal")
        self._reader.seek(self._offsets[at])
        stored, found = self._parse(self._reader.readline()[:-1], first=False)
        return (
            found if isinstance(found, Judgment) and found.item_id == item.id and stored == content else None
        )

    def _out_of_bounds(self, judgment: Judgment) -> str | None:
        """Why a journalled judgment cannot be this judge's (a score off its scale), or None."""
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
    def _parse(raw: bytes, *, first: bool) -> tuple[str | None, dict[str, Any] | Judgment | str]:
        """The content key a judgment line opens with (None when it has none) and the header (first line)
        or the judgment; a short reason string when the line is unreadable."""
        content = None
        if not first and raw.startswith(_CONTENT) and raw[_JUDGMENT_AT - 3 : _JUDGMENT_AT] == b'", ':
            key = raw[len(_CONTENT) : _JUDGMENT_AT - 3]
            if key.strip(b"0123456789abcdef"):
                return None, "a content key that is not 32 hexadecimal digits"
            content, raw = key.decode("ascii"), b"{" + raw[_JUDGMENT_AT:]
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError:
            return content, "not UTF-8"
        if first:
            try:
                header = json.loads(text)
            except json.JSONDecodeError as exc:
                return content, f"invalid JSON: {exc.msg}"
            if not isinstance(header, dict) or "judge" not in header:
                return content, "not a journal header"
            return content, header
        try:
            return content, Judgment.model_validate_json(text)
        except ValidationError as exc:
            why = exc.errors()[0].get("msg", "invalid") if exc.errors() else "invalid"
            return content, f"not a judgment: {why}"

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
        if self._reader is not None:
            reader, self._reader = self._reader, None
            reader.close()
        try:
            if self._fh is not None:
                fh, self._fh = self._fh, None
                try:
                    fh.flush()
                    os.fsync(fh.fileno())
                finally:
                    fh.close()
        except OSError as exc:
            raise RunStoppedError(
                f"could not flush the journal {self.path}: {_os_reason(exc)}", path=str(self.path)
            ) from None
        finally:
            self._lock.release()

    def record(self, item: Item, judgment: Judgment) -> None:
        """Append ``judgment`` of ``item``, keyed by the item's content."""
        self._write_line(_CONTENT.decode() + content_key(item) + '", ' + judgment.model_dump_json()[1:])
