"""The judgments of a run as columns on disk (``results.sqlite``): written in batches as the run goes, read
back as arrays or a frame.

Tables: ``judgments`` (a row per judgment, ``seq`` the item order), ``scores`` (a row per criterion, or per
order of a pairwise verdict) and ``about`` (the version and what the writer was told, as JSON).
"""

from __future__ import annotations

import json
import sqlite3
import sys
from abc import abstractmethod
from collections.abc import Iterator, Mapping, Sequence
from contextlib import ExitStack
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING, Any, TypeVar

from mitigate.data import Item
from mitigate.errors import ConfigError, DataError
from mitigate.judge import FRAME_COLUMNS, Judgment, frame
from mitigate.paths import check_input_file, output_path

if TYPE_CHECKING:
    import numpy as np

COLUMNS_VERSION = 1
COLUMNS_FILE = "results.sqlite"
"""The columns file's name in a run folder (``mitigate judge --run-dir``, ``mitigate compare --out``)."""
BATCH = 1000
"""Rows written per transaction."""

JUDGMENT_COLUMNS = (
    ("seq", "INTEGER PRIMARY KEY"),
    ("entry", "TEXT"),
    ("item", "TEXT NOT NULL"),
    ("document", "TEXT"),
    ("system", "TEXT"),
    ("ok", "INTEGER NOT NULL"),
    ("error", "TEXT"),
    ("failure", "TEXT"),
    ("flags", "TEXT"),
    ("needs_human", "INTEGER NOT NULL"),
    ("raw", "TEXT"),
    ("calls", "INTEGER"),
    ("cached_calls", "INTEGER"),
    ("prompt_tokens", "INTEGER"),
    ("completion_tokens", "INTEGER"),
    ("cached_prompt_tokens", "INTEGER"),
    ("cost_usd", "REAL"),
    ("judgment", "TEXT"),
)
"""The ``judgments`` table: one row per judgment (name, SQLite type; ``judgment``: the whole judgment as
JSON, what :meth:`Columns.judgments` reads back)."""
SCORE_COLUMNS = (
    ("seq", "INTEGER NOT NULL"),
    ("criterion", "TEXT"),
    ("order", "TEXT"),
    ("score", "REAL"),
    ("verdict", "TEXT"),
    ("human", ""),
    ("samples", "TEXT"),
)
"""The ``scores`` table (``human``: a number or a gold preference; ``samples``: per-sample scores as JSON)."""
NUMERIC = frozenset(n for n, t in JUDGMENT_COLUMNS + SCORE_COLUMNS if t.startswith(("INTEGER", "REAL")))
"""Columns :meth:`Columns.column` returns as float arrays (NULL as NaN)."""
_TABLE_OF = {name: "judgments" for name, _ in JUDGMENT_COLUMNS} | {
    name: "scores" for name, _ in SCORE_COLUMNS[1:]
}

_SCHEMA = [
    "CREATE TABLE about (key TEXT PRIMARY KEY, value TEXT NOT NULL)",
    "CREATE TABLE judgments ({})".format(", ".join(f'"{n}" {t}' for n, t in JUDGMENT_COLUMNS)),
    "CREATE TABLE scores ({})".format(", ".join(f'"{n}" {t}'.rstrip() for n, t in SCORE_COLUMNS)),
]
_INDEXES = [
    "CREATE INDEX scores_seq ON scores (seq)",
    "CREATE INDEX judgments_item ON judgments (entry, item)",
]


class ColumnWriter:
    """Appends ``(item, judgment)`` pairs to a columns file that appears at ``path`` only when its block ends
    without an error (``criterion``: the one whose human score fills ``human``)."""

    def __init__(
        self, path: Path | str, about: Mapping[str, Any] | None = None, *, criterion: str | None = None
    ) -> None:
        self.path = Path(path)
        self.about = dict(about or {})
        self.criterion = criterion
        self.rows = 0
        self._stack = ExitStack()
        self._conn: sqlite3.Connection | None = None
        self._judgments: list[tuple[Any, ...]] = []
        self._scores: list[tuple[Any, ...]] = []

    def _failed(self, exc: sqlite3.Error) -> ConfigError:
        return ConfigError(
            f"expected to write the results' columns {self.path}; got {exc}", path=str(self.path)
        )

    def __enter__(self) -> ColumnWriter:
        tmp = self._stack.enter_context(output_path(self.path, "the results' columns"))
        try:
            conn = sqlite3.connect(str(tmp), isolation_level=None)
            self._stack.callback(conn.close)
            # a file of its own under a temporary name, renamed when whole: no journal, no syncs
            for statement in ("PRAGMA journal_mode=OFF", "PRAGMA synchronous=OFF", *_SCHEMA):
                conn.execute(statement)
            conn.executemany(
                "INSERT INTO about VALUES (?, ?)",
                [(k, json.dumps(v)) for k, v in {"version": COLUMNS_VERSION, **self.about}.items()],
            )
        except sqlite3.Error as exc:
            self._stack.close()
            raise self._failed(exc) from None
        except BaseException:
            self._stack.close()
            raise
        self._conn = conn
        return self

    def append(self, item: Item | None, judgment: Judgment, *, entry: str | None = None) -> None:
        """Add one judgment (``item``, when known, gives its document, system and human labels)."""
        seq = self.rows
        self.rows += 1
        usage = judgment.usage
        rows = judgment.rows(self.criterion)
        first = (
            rows[0] if rows else {"raw": "\n\n".join(judgment.raw), "failure": judgment.error, "flags": ""}
        )
        self._judgments.append(
            (
                seq,
                entry,
                judgment.item_id,
                item.doc_id if item else None,
                item.system if item else None,
                int(judgment.ok),
                judgment.error,
                first["failure"],
                first["flags"],
                int("needs_human" in judgment.flags),
                first["raw"],
                judgment.calls,
                judgment.cached_calls,
                usage.prompt_tokens,
                usage.completion_tokens,
                usage.cached_prompt_tokens,
                judgment.cost_usd,
                judgment.model_dump_json(exclude_defaults=True),
            )
        )
        for row in rows:
            crit = row["criterion"]
            human: Any = None
            if item is not None and crit is not None:
                human = item.preference.get(crit) if item.output_b is not None else item.human.get(crit)
            samples = judgment.samples.get(crit) if crit is not None else None
            self._scores.append(
                (
                    seq,
                    crit,
                    row["order"],
                    row["score"],
                    row["verdict"],
                    human,
                    None if samples is None else json.dumps(list(samples)),
                )
            )
        if len(self._judgments) >= BATCH:
            self._flush()

    def _flush(self) -> None:
        conn = self._conn
        if conn is None or not self._judgments:
            return
        try:
            conn.execute("BEGIN")
            conn.executemany(
                f"INSERT INTO judgments VALUES ({', '.join('?' * len(JUDGMENT_COLUMNS))})", self._judgments
            )
            conn.executemany(
                f"INSERT INTO scores VALUES ({', '.join('?' * len(SCORE_COLUMNS))})", self._scores
            )
            conn.execute("COMMIT")
        except sqlite3.Error as exc:
            raise self._failed(exc) from None
        self._judgments.clear()
        self._scores.clear()

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        try:
            if exc_type is None and self._conn is not None:
                self._flush()
                try:
                    for statement in _INDEXES:
                        self._conn.execute(statement)
                except sqlite3.Error as error:
                    raise self._failed(error) from None
        except BaseException:
            self._conn = None
            self._stack.__exit__(*sys.exc_info())  # the temporary file is removed
            raise
        self._conn = None
        self._stack.__exit__(exc_type, exc, tb)


class Columns:
    """A columns file read back (see the module docstring); nothing is read until asked for."""

    def __init__(self, path: Path | str) -> None:
        self.path = check_input_file(Path(path), "a results' columns file (results.sqlite)")
        try:
            self._conn = sqlite3.connect(f"file:{self.path}?mode=ro", uri=True)
            about = dict(self._conn.execute("SELECT key, value FROM about").fetchall())
        except sqlite3.Error as exc:
            raise DataError(
                f"expected {self.path} to be a results' columns file (SQLite, written by "
                f"mitigate); got {exc}",
                path=str(self.path),
            ) from None
        self.about: dict[str, Any] = {k: json.loads(v) for k, v in about.items()}
        if self.about.get("version") != COLUMNS_VERSION:
            raise DataError(
                f"expected a results' columns file of version {COLUMNS_VERSION}; {self.path} is "
                f"version {self.about.get('version')!r}",
                path=str(self.path),
            )

    def close(self) -> None:
        self._conn.close()

    def __enter__(self) -> Columns:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __len__(self) -> int:
        return int(self._conn.execute("SELECT COUNT(*) FROM judgments").fetchone()[0])

    def _where(self, entry: str | None, criterion: str | None, table: str) -> tuple[str, list[Any]]:
        pairs = [("j.entry = ?", entry), ("s.criterion = ?", criterion if table == "scores" else None)]
        clauses = [(clause, arg) for clause, arg in pairs if arg is not None]
        where = " WHERE " + " AND ".join(c for c, _ in clauses) if clauses else ""
        return where, [arg for _, arg in clauses]

    def column(self, name: str, *, entry: str | None = None, criterion: str | None = None) -> np.ndarray:
        """One column in order: a float array (NULL as NaN) for a numeric one, else an object array."""
        table = _TABLE_OF.get(name)
        if table is None:
            raise ConfigError(f"expected a column of {sorted(_TABLE_OF)}; got {name!r}")
        where, args = self._where(entry, criterion, table)
        if table == "judgments":
            sql = f'SELECT j."{name}" FROM judgments j{where} ORDER BY j.seq'
        else:
            sql = (
                f'SELECT s."{name}" FROM scores s JOIN judgments j ON j.seq = s.seq{where} '
                "ORDER BY s.seq, s.rowid"
            )
        import numpy as np  # the reader's: a run that only writes columns does not load it

        cursor = self._conn.execute(sql, args)
        if name in NUMERIC:
            return np.fromiter((np.nan if v is None else v for (v,) in cursor), dtype=float)
        return np.array([v for (v,) in cursor], dtype=object)

    def judgments(self, entry: str | None = None) -> StoredJudgments:
        """Every judgment (of ``entry``) in order, read back a block at a time as it is indexed or
        iterated."""
        where, args = self._where(entry, None, "judgments")
        import numpy as np

        cursor = self._conn.execute(f"SELECT j.seq FROM judgments j{where} ORDER BY j.seq", args)
        return StoredJudgments(self, np.fromiter((s for (s,) in cursor), dtype=np.int64))

    def rows(
        self, columns: Sequence[str] | None = None, *, entry: str | None = None, criterion: str | None = None
    ) -> Iterator[dict[str, Any]]:
        """The long-form rows, one per score row, in order (``columns`` default to ``FRAME_COLUMNS``)."""
        wanted = list(columns or FRAME_COLUMNS)
        selected = []
        for name in wanted:
            table = _TABLE_OF.get(name)
            if table is None:
                raise ConfigError(f"expected columns among {sorted(_TABLE_OF)}; got {name!r}")
            selected.append(f'{"j" if table == "judgments" else "s"}."{name}"')
        where, args = self._where(entry, criterion, "scores")
        sql = (
            f"SELECT {', '.join(selected)} FROM judgments j JOIN scores s ON s.seq = j.seq{where} "
            "ORDER BY j.seq, s.rowid"
        )
        for values in self._conn.execute(sql, args):
            yield dict(zip(wanted, values, strict=True))

    def to_pandas(
        self, columns: Sequence[str] | None = None, *, entry: str | None = None, criterion: str | None = None
    ) -> Any:
        """:meth:`rows` as a pandas DataFrame (needs the ``pandas`` extra)."""
        return frame(self.rows(columns, entry=entry, criterion=criterion), list(columns or FRAME_COLUMNS))


_T = TypeVar("_T")


class ReadSequence(Sequence[_T]):
    """A sequence whose values are made as they are read (:meth:`at`), not held: a model field holds it as it
    is (never copied into a tuple) and writes it as the list of its values."""

    @abstractmethod
    def at(self, k: int) -> _T:
        """The value at index ``k`` (0 <= k < len)."""

    def __getitem__(self, index: Any) -> Any:
        if isinstance(index, slice):
            return [self[k] for k in range(len(self))[index]]
        return self.at(range(len(self))[index])  # IndexError past the end, negative from the end

    @classmethod
    def __get_pydantic_core_schema__(cls, source: Any, handler: Any) -> Any:
        from pydantic_core import core_schema

        return core_schema.is_instance_schema(
            cls, serialization=core_schema.plain_serializer_function_ser_schema(list)
        )


class StoredJudgments(ReadSequence[Judgment]):
    """The judgments of a columns file at ``seqs`` (their ``seq`` in order), as a sequence holding one block
    of :data:`BATCH` in memory: what a comparison's entries hold instead of every judgment."""

    def __init__(self, columns: Columns, seqs: np.ndarray) -> None:
        self.columns, self.seqs = columns, seqs
        self._block: tuple[int, list[Judgment]] = (-1, [])

    def __len__(self) -> int:
        return len(self.seqs)

    def _load(self, block: int) -> list[Judgment]:
        if self._block[0] != block:
            seqs = self.seqs[block * BATCH : (block + 1) * BATCH]
            cursor = self.columns._conn.execute(
                "SELECT seq, judgment FROM judgments WHERE seq BETWEEN ? AND ?", (int(seqs[0]), int(seqs[-1]))
            )
            text = dict(cursor.fetchall())
            self._block = (block, [Judgment.model_validate_json(text[int(s)]) for s in seqs])
        return self._block[1]

    def at(self, k: int) -> Judgment:
        return self._load(k // BATCH)[k % BATCH]

    def __iter__(self) -> Iterator[Judgment]:
        for block in range(0, -(-len(self) // BATCH)):
            yield from self._load(block)
