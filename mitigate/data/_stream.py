"""A benchmark read as a stream: every row checked in one pass, the chosen items read again one at a time.

:func:`scan_jsonl` checks a generic JSON-lines file as :func:`~mitigate.data._jsonl.load_jsonl` does, keeping
a few numbers per row (never the row); its :class:`StreamedBenchmark`'s ``items`` read the file again, in
:func:`~mitigate.data._split.select_items` order, and stop with a DataError if it changed meanwhile.
"""

from __future__ import annotations

import itertools
import os
from array import array
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from itertools import pairwise
from pathlib import Path
from typing import Any

from mitigate.data._jsonl import JsonlRows, duplicate_id, file_error, json_value, note_criteria, utf8_line
from mitigate.data._schema import Benchmark, Item, summary_line
from mitigate.data._split import select_items
from mitigate.errors import DataError
from mitigate.paths import open_regular, read_lines
from mitigate.scale import Scale


def _stamp(path: Path) -> tuple[int, int]:
    st = os.stat(path)
    return st.st_size, st.st_mtime_ns


class ItemStream:
    """The chosen items of a benchmark file, read from it each time they are iterated, in the order
    :func:`scan_jsonl` chose (``reorder``: the row indices in that order, their byte offsets and line numbers;
    None: the file's own order); ``unique_ids``: the ids were checked (the runner need not check again)."""

    unique_ids = True

    def __init__(
        self, rows: JsonlRows, count: int, stamp: tuple[int, int], reorder: tuple[array, array, array] | None
    ) -> None:
        self._rows, self._count, self._stamp, self._reorder = rows, count, stamp, reorder

    def __len__(self) -> int:
        return self._count

    def __repr__(self) -> str:
        return f"ItemStream({str(self._rows.path)!r}, {self._count} items)"

    def _check_unchanged(self) -> None:
        if _stamp(self._rows.path) != self._stamp:
            raise DataError(
                f"{self._rows.path} changed while it was being read; expected the benchmark file "
                "to stay as it was when its rows were checked: rerun the command",
                path=str(self._rows.path),
            )

    def __iter__(self) -> Iterator[Item]:
        self._check_unchanged()
        if self._count == 0:
            return
        if self._reorder is None:  # the file's own order: one sequential read
            yield from (item for _, _, item in itertools.islice(self._rows, self._count))
            return
        path, rows = self._rows.path, self._rows
        order, offsets, lines = self._reorder  # documents grouped: one line read at each offset
        with open_regular(path, "rb", "a data file") as fh:
            for index in order[: self._count]:
                fh.seek(offsets[index])
                raw = next(read_lines(fh, f"the data file {path}", path=path), b"")
                line = lines[index]
                yield rows.item(json_value(utf8_line(raw, path, line), path, line), line)


@dataclass(kw_only=True, eq=False, repr=False)
class StreamedBenchmark:
    """What a command needs to know of a benchmark before judging it, and its chosen ``items`` (an
    :class:`ItemStream`, else a tuple); ``count`` is the number of items in the benchmark."""

    name: str
    criteria: tuple[str, ...]
    scale: Scale
    scales: dict[str, Scale]
    description: str
    count: int
    systems: int
    documents: int
    pairwise: bool
    items: ItemStream | tuple[Item, ...]

    def __repr__(self) -> str:
        return f"StreamedBenchmark({self.name!r}, {self.count} items)"

    def scale_for(self, criterion: str) -> Scale:
        """The human label scale of ``criterion``: its own, else the common one."""
        return self.scales.get(criterion, self.scale)

    def summary(self) -> str:
        """One line with the counts and label scales, as :meth:`Benchmark.summary` gives it."""
        return summary_line(self, self.count, self.systems, self.documents)

    @classmethod
    def of(cls, bench: Benchmark, limit: int) -> StreamedBenchmark:
        """A benchmark loaded whole, its first ``limit`` items (0: all) in document-major order chosen."""
        return cls(
            name=bench.name,
            criteria=bench.criteria,
            scale=bench.scale,
            scales=dict(bench.scales),
            description=bench.description,
            count=len(bench.items),
            systems=len({i.system for i in bench.items if i.system is not None}),
            documents=len({i.doc_id for i in bench.items if i.doc_id is not None}),
            pairwise=bench.pairwise,
            items=tuple(select_items(bench.items, limit or None)),
        )


def _distinct(keys: Iterable[int]) -> int:
    """How many different values ``keys`` holds (sorted once; no set of them kept)."""
    ordered = sorted(keys)
    return sum(1 for a, b in pairwise(ordered) if a != b) + 1 if ordered else 0


def scan_jsonl(
    path: str | Path,
    limit: int = 0,
    *,
    name: str | None = None,
    scale: Any = None,
    criteria: Sequence[str] | None = None,
    description: str = "",
) -> StreamedBenchmark:
    """Check every row of a generic JSON-lines file in one pass (refusing what
    :func:`~mitigate.data._jsonl.load_jsonl`, whose arguments these are, refuses) and choose its first
    ``limit`` items (0: all) as :func:`~mitigate.data._split.select_items` would."""
    rows = JsonlRows(path, scale)
    file = rows.path
    stamp = _stamp(file)
    ids, docs, offsets, lines = array("q"), array("q"), array("q"), array("q")
    systems: set[int] = set()
    seen_criteria: dict[str, None] = {}
    every_doc = pairwise = True
    runs, last_doc = 0, None
    for line, offset, item in rows:
        ids.append(hash(item.id))
        offsets.append(offset)
        lines.append(line)
        if item.system is not None:
            systems.add(hash(item.system))
        if item.doc_id is None:
            every_doc = False
        else:
            docs.append(hash(item.doc_id))
            if item.doc_id != last_doc:
                runs, last_doc = runs + 1, item.doc_id
        pairwise = pairwise and item.pairwise
        note_criteria(item, seen_criteria)
    count = len(ids)
    if count == 0 or rows.common is None:
        raise file_error(file, "expected at least one row; the file holds none")
    _check_unique(rows, ids)
    del ids
    documents = _distinct(docs)
    order = None
    # some document's items are apart: group them, in order of first appearance
    if every_doc and runs != documents:
        rank: dict[int, int] = {}
        for key in docs:
            rank.setdefault(key, len(rank))
        ranks = array("q", (rank[key] for key in docs))
        del rank
        # stable: a document's items keep their order
        order = array("q", sorted(range(count), key=ranks.__getitem__))
    chosen = count if not limit else min(limit, count)
    return StreamedBenchmark(
        name=name or rows.header.get("name") or file.stem,
        criteria=rows.criteria(criteria, seen_criteria),
        scale=rows.common,
        scales=dict(rows.per),
        description=description or rows.header.get("description", ""),
        count=count,
        systems=len(systems),
        documents=documents,
        pairwise=pairwise,
        items=ItemStream(rows, chosen, stamp, None if order is None else (order, offsets, lines)),
    )


def _check_unique(rows: JsonlRows, hashes: array) -> None:
    """DataError for the first id given twice (rows whose id hashes repeat are compared by text)."""
    repeated = {a for a, b in pairwise(sorted(hashes)) if a == b}
    if not repeated:
        return
    first_line: dict[str, int] = {}
    for line, _, item in rows:
        if hash(item.id) not in repeated:
            continue
        if item.id in first_line:
            raise duplicate_id(rows.path, line, item.id, first_line[item.id])
        first_line[item.id] = line


def open_benchmark(name: str, limit: int = 0) -> StreamedBenchmark:
    """The benchmark ``name`` with its first ``limit`` items chosen, a ``jsonl:`` one read as a stream."""
    from mitigate.data._registry import load

    prefix, sep, path = name.partition(":")
    if sep and prefix == "jsonl" and path:
        return scan_jsonl(path, limit)
    return StreamedBenchmark.of(load(name), limit)
