"""The labels file of a labelling session: which items, in which order, with which design weights, and the
labels given so far.

The file is JSON lines, one row per item in the order the items are shown::

    {"id": "...", "labels": {"coherence": 4.0}, "weight": 12.5, "probability": 0.08, "group": "sys-a",
     "order": 0, "swap": false, "labeller": "ana", "at": "2026-12-07T05:01:02+00:00"}

``labels`` holds one value per criterion (None until given; ``A``/``B``/``tie`` for a pair, always on the
benchmark's own order of ``output`` and ``output_b``), ``swap`` whether the page showed ``output_b`` first.
``weight`` is the inverse of the item's inclusion probability, so ``mitigate estimate --labels FILE`` reads
the file as one selection round once every row is labelled. Each label rewrites the whole file atomically
(:func:`mitigate.paths.write_output`): a killed server loses at most the label in flight, and opening the
file again resumes at the first unlabelled row.
"""

from __future__ import annotations

import contextlib
import datetime
import fcntl
import json
import math
import random
import threading
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

from mitigate.data import Benchmark, Item, label_value
from mitigate.errors import DataError
from mitigate.paths import open_regular, write_output
from mitigate.scale import Scale

PAIR_CHOICES = ("A", "B", "tie")
"""A pair's labels, on the benchmark's order (A: ``output`` is better)."""

_SWAPPED = {"A": "B", "B": "A", "tie": "tie"}


class LabelConflict(DataError):
    """A label refused because the item changed since the page showed it (another tab labelled it)."""


def _group(item: Item) -> str:
    if item.pairwise:
        return " vs ".join(sorted((str(item.system), str(item.system_b))))
    return str(item.system) if item.system is not None else "all"


def draw_per_system(
    bench: Benchmark, criteria: Sequence[str], per_system: int, seed: int
) -> list[dict[str, Any]]:
    """A seeded random draw of ``per_system`` unlabelled items from each system (each system pair of a
    pairwise benchmark), shown in a random order; the rows of a new labels file.

    The pool of a system is its items with no label on any of ``criteria``; each drawn item's weight is
    pool size / items drawn. Any prefix of a system's items in the shown order is itself a uniform draw, which
    is what lets the page estimate as the labels come in.
    """
    rng = random.Random(seed)
    pools: dict[str, list[Item]] = {}
    for it in bench.items:
        if all(label_value(it, c) is None for c in criteria):
            pools.setdefault(_group(it), []).append(it)
    if not pools:
        raise DataError(
            f"expected unlabelled items to draw from; every item of {bench.name!r} is labelled on "
            f"{', '.join(criteria)}"
        )
    rows = []
    for name in sorted(pools):
        pool = pools[name]
        k = min(per_system, len(pool))
        for it in rng.sample(pool, k):
            rows.append(
                {
                    "id": it.id,
                    "group": name,
                    "probability": k / len(pool),
                    "weight": len(pool) / k,
                    "draw": "random",
                }
            )
    rng.shuffle(rows)
    return rows


def read_selection(path: Path) -> list[dict[str, Any]]:
    """The rows of an ``estimate --select`` file (CSV or JSON lines): id, group, probability and weight, in
    the file's order."""
    import csv

    text = path.read_text(encoding="utf-8")
    if path.suffix.lower() == ".csv":
        raw: list[dict[str, Any]] = list(csv.DictReader(text.splitlines()))
    else:
        raw = [json.loads(line) for line in text.splitlines() if line.strip()]
    rows = []
    for number, row in enumerate(raw, 2 if path.suffix.lower() == ".csv" else 1):
        try:
            rows.append(
                {
                    "id": str(row["id"]),
                    "group": str(row.get("group") or "all"),
                    "probability": float(row["probability"]),
                    "weight": float(row["weight"]),
                    "draw": "selection",
                }
            )
        except (KeyError, TypeError, ValueError):
            raise DataError(
                f"{path}:{number}: expected a row of an 'estimate --select' file with id, probability "
                f"and weight; got {str(row)[:120]}",
                path=str(path),
            ) from None
    if not rows:
        raise DataError(
            f"{path}: expected the items of an 'estimate --select' file; got none", path=str(path)
        )
    return rows


@contextlib.contextmanager
def one_server(path: Path) -> Iterator[None]:
    """Hold ``path``'s lock file (``FILE.lock``) while the block runs: DataError when another ``mitigate
    label`` holds it, so two servers never write one labels file."""
    lock = path.with_name(path.name + ".lock")
    path.parent.mkdir(parents=True, exist_ok=True)
    with open_regular(lock, "a+", "the labels file's lock") as handle:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise DataError(
                f"{path} is open in another 'mitigate label'; expected one server per labels file (two "
                "tabs of one server are fine)",
                path=str(path),
            ) from None
        yield


def _now() -> str:
    return datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds")


class LabelSession:
    """A labels file open for labelling: its rows, read and written under one lock (two tabs or two
    requests never overwrite each other's labels), each label checked against the benchmark's scale."""

    def __init__(self, path: Path, bench: Benchmark, criteria: Sequence[str], rows: list[dict[str, Any]]):
        self.path = path
        self.bench = bench
        self.criteria = tuple(criteria)
        self.rows = rows
        self.items = {it.id: it for it in bench.items}
        self.lock = threading.Lock()

    @classmethod
    def open(
        cls,
        path: Path,
        bench: Benchmark,
        criteria: Sequence[str],
        plan: list[dict[str, Any]] | None = None,
        *,
        seed: int = 0,
    ) -> LabelSession:
        """The session of ``path``: resumed when the file exists (``plan``, if given, must name the same items
        in the same order), else created from ``plan`` (pairs get a seeded random shown order)."""
        if path.exists():
            rows = [
                json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()
            ]
            if plan is not None and [r["id"] for r in plan] != [r["id"] for r in rows]:
                raise DataError(
                    f"{path} holds another selection of items than the one given; expected the same items "
                    "in the same order (or a new labels file)",
                    path=str(path),
                )
            session = cls(path, bench, criteria, rows)
            session._check_rows()
            return session
        if plan is None:
            raise DataError(
                f"{path} does not exist; expected --selection FILE or --per-system N to choose the items"
            )
        rng = random.Random(seed)
        rows = []
        for order, row in enumerate(plan):
            new = {"id": row["id"], "labels": dict.fromkeys(criteria)}
            new |= {k: row[k] for k in ("weight", "probability", "group")} | {
                "draw": row.get("draw", "selection")
            }
            new |= {"order": order, "labeller": None, "at": None}
            if bench.pairwise:
                new["swap"] = rng.random() < 0.5
            rows.append(new)
        session = cls(path, bench, criteria, rows)
        session._check_rows()
        session._write()
        return session

    def _check_rows(self) -> None:
        unknown = [r["id"] for r in self.rows if r["id"] not in self.items]
        if unknown:
            raise DataError(
                f"{self.path}: expected items of {self.bench.name!r}; {len(unknown)} ids are not in it "
                f"(first {unknown[0]!r})",
                path=str(self.path),
            )
        for row in self.rows:
            missing = [c for c in self.criteria if c not in row.get("labels", {})]
            if missing:
                raise DataError(
                    f"{self.path}: item {row['id']!r} has no place for a label on {missing[0]!r}; expected "
                    f"the criteria {list(self.criteria)} the file was made with",
                    path=str(self.path),
                )

    def _write(self) -> None:
        text = "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in self.rows)
        write_output(self.path, text, "the labels file")

    def scale(self, criterion: str) -> Scale:
        """The label scale of ``criterion``."""
        return self.bench.scale_for(criterion)

    def done(self, row: Mapping[str, Any]) -> bool:
        """Whether ``row`` has a label on every criterion."""
        return all(row["labels"].get(c) is not None for c in self.criteria)

    def first_open(self) -> int:
        """The position of the first row without every label (the number of rows when all are done)."""
        return next((i for i, r in enumerate(self.rows) if not self.done(r)), len(self.rows))

    def check_label(self, criterion: str, value: Any) -> float | str | None:
        """``value`` as a label on ``criterion`` (a pair's is on the order shown; None clears it): DataError
        naming the scale for a value off it."""
        if criterion not in self.criteria:
            raise DataError(f"expected a label on one of {list(self.criteria)}; got one on {criterion!r}")
        if value is None:
            return None
        if self.bench.pairwise:
            if value not in PAIR_CHOICES:
                raise DataError(f"expected a label of A, B or tie on {criterion!r}; got {str(value)[:40]!r}")
            return str(value)
        scale = self.scale(criterion)
        number = value if isinstance(value, (int, float)) and not isinstance(value, bool) else math.nan
        if not math.isfinite(number) or not scale.on_grid(float(number)):
            raise DataError(
                f"expected a label on {criterion!r}'s scale {scale.describe()} (step {scale.step:g}); got "
                f"{str(value)[:40]!r}"
            )
        return float(number)

    def label(
        self,
        position: int,
        values: Mapping[str, Any],
        *,
        expect: Mapping[str, Any] | None = None,
        labeller: str | None = None,
    ) -> dict[str, Any]:
        """Set (a value) or clear (None) the labels of the row at ``position`` as the page showed it,
        and write the file; LabelConflict when ``expect`` (what the page showed) is no longer what the row
        holds."""
        if not isinstance(position, int) or not 0 <= position < len(self.rows):
            raise DataError(f"expected an item position from 0 to {len(self.rows) - 1}; got {position!r}")
        with self.lock:
            row = self.rows[position]
            shown = self.shown(row)
            if expect is not None and any(shown.get(c) != expect.get(c) for c in values):
                raise LabelConflict(
                    f"item {position + 1} was labelled in another tab since this one showed it; reload it"
                )
            new = dict(row["labels"])
            for criterion, value in values.items():
                checked = self.check_label(criterion, value)
                new[criterion] = (
                    _SWAPPED[str(checked)] if row.get("swap") and checked is not None else checked
                )
            row.update(labels=new, labeller=labeller, at=_now())
            self._write()
            return dict(row)

    def shown(self, row: Mapping[str, Any]) -> dict[str, Any]:
        """A row's labels as the page shows them (a swapped pair's A and B exchanged)."""
        return {
            c: (_SWAPPED[v] if row.get("swap") and v is not None else v) for c, v in row["labels"].items()
        }

    def groups(self) -> list[str]:
        """The groups of the rows in order of first appearance."""
        return list(dict.fromkeys(r["group"] for r in self.rows))

    def progress(self, *, blind: bool) -> dict[str, Any]:
        """How many rows are labelled and left, overall and per group (blind: groups named "group 1" ... in
        the order they first appear, which says nothing of the system)."""
        names = {g: (f"group {i + 1}" if blind else g) for i, g in enumerate(self.groups())}
        per: dict[str, dict[str, int]] = {n: {"done": 0, "left": 0} for n in names.values()}
        for row in self.rows:
            per[names[row["group"]]]["done" if self.done(row) else "left"] += 1
        done = sum(p["done"] for p in per.values())
        return {"done": done, "left": len(self.rows) - done, "total": len(self.rows), "groups": per}

    def view(self, position: int, *, blind: bool, judge: Mapping[str, Any] | None = None) -> dict[str, Any]:
        """What the page shows of the row at ``position``: the texts (a pair in its shown order), the scales
        and the labels given; blind, nothing else (no id, system, document or judge value)."""
        if not 0 <= position < len(self.rows):
            raise DataError(f"expected an item position from 0 to {len(self.rows) - 1}; got {position}")
        row = self.rows[position]
        it = self.items[row["id"]]
        outputs = [it.output, it.output_b] if it.pairwise else [it.output]
        if row.get("swap"):
            outputs.reverse()
        criteria = []
        for c in self.criteria:
            scale = self.scale(c)
            choices: list[Any] = list(PAIR_CHOICES) if it.pairwise else scale.points()
            criteria.append(
                {"name": c, "choices": choices if len(choices) <= 10 else [], "scale": scale.describe()}
            )
        out: dict[str, Any] = {
            "position": position,
            "task": self.bench.description,
            "inputs": dict(it.inputs),
            "outputs": outputs,
            "criteria": criteria,
            "labels": self.shown(row),
            "progress": self.progress(blind=blind),
        }
        if not blind:
            systems = [it.system, it.system_b] if it.pairwise else [it.system]
            out["shown"] = {
                "id": it.id,
                "systems": systems[::-1] if row.get("swap") else systems,
                "doc_id": it.doc_id,
                "group": row["group"],
                "judge": dict(judge or {}),
            }
        return out
