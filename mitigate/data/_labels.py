"""Human labels for a few items: read from a labels file, added to a benchmark, or hidden for an experiment.

A labels file (CSV with a header, or JSON lines) has the columns ``id``, ``label`` and optionally ``weight``
(other columns ignored: a filled ``estimate --select`` file is one); a file labelled on several criteria
holds a column ``label.CRITERION`` each, or in JSON a ``labels`` object criterion -> label (``mitigate label``
writes one). A label is a number on the criterion's
scale, or for a pairwise benchmark ``A``, ``B`` or ``tie`` (1, 0, 0.5); a file with weights (inverse inclusion
probabilities) must label every row. :func:`label_value` codes a preference as A's share of the win.
"""

from __future__ import annotations

import csv
import functools
import math
import random
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from mitigate.constraints import Interval, check_param
from mitigate.data._jsonl import file_error, read_json_lines, read_text, row_error
from mitigate.data._schema import Benchmark, Item
from mitigate.errors import ConfigError, DataError
from mitigate.paths import check_input_file
from mitigate.scale import Scale

PREFERENCE_VALUE = {"A": 1.0, "B": 0.0, "tie": 0.5}
"""A gold preference as a number: the share of the first text's (``output``'s) win."""

_PREFERENCE_TEXT = {
    "a": "A",
    "b": "B",
    "tie": "tie",
    "1": "A",
    "1.0": "A",
    "0": "B",
    "0.0": "B",
    "0.5": "tie",
}


def label_value(item: Item, criterion: str) -> float | None:
    """The item's label on ``criterion`` as a number (see the module docstring); None when unlabelled."""
    if item.pairwise:
        gold = item.preference.get(criterion)
        return None if gold is None else PREFERENCE_VALUE[gold]
    value = item.human.get(criterion)
    return value if value is not None and math.isfinite(value) else None


class LabelFile(BaseModel):
    """What a labels file holds: item id -> label (a number, or ``A``/``B``/``tie``), and the weights."""

    model_config = ConfigDict(frozen=True, extra="forbid")
    path: str
    labels: dict[str, float | str]
    weights: dict[str, float] = Field(default_factory=dict)

    @property
    def weighted(self) -> bool:
        """Whether the file carries selection weights (a filled selection file)."""
        return bool(self.weights)


def _rows(file: Path) -> list[tuple[int, dict[str, Any]]]:
    if file.suffix.lower() == ".csv":
        text = read_text(file, translate_newlines=False)
        reader = csv.DictReader(text.splitlines(keepends=True))
        try:
            names = reader.fieldnames or []
            if "id" not in names or not any(n == "label" or n.startswith("label.") for n in names):
                raise row_error(
                    file,
                    1,
                    "expected a header with the columns 'id' and 'label' (and optionally "
                    f"'weight'); got {str(reader.fieldnames)[:200]}",
                )
            return [(reader.line_num, {k: v for k, v in row.items() if k is not None}) for row in reader]
        except csv.Error as exc:
            raise row_error(
                file, reader.line_num + 1, f"expected CSV rows; got a row the csv reader refuses ({exc})"
            ) from None
    rows = []
    for line, _, row in read_json_lines(file):
        if not isinstance(row, dict):
            raise row_error(
                file, line, f"expected a JSON object with 'id' and 'label'; got {type(row).__name__}"
            )
        rows.append((line, row))
    return rows


def _label(
    value: Any, scale: Scale, pairwise: bool, file: Path, line: int, criterion: str
) -> float | str | None:
    if value is None or (isinstance(value, str) and not value.strip()):
        return None
    bad = functools.partial(row_error, file, line)
    if pairwise:
        key = f"{value:g}" if isinstance(value, (int, float)) and not isinstance(value, bool) else str(value)
        gold = _PREFERENCE_TEXT.get(key.strip().lower())
        if gold is None:
            raise bad(
                f"expected a pairwise label of A, B or tie (or 1, 0, 0.5) on {criterion!r}; got {value!r}"
            )
        return gold
    if isinstance(value, bool):
        raise bad(f"expected a number on {criterion!r}'s scale {scale.describe()}; got {value!r}")
    try:
        number = float(value)
    except (TypeError, ValueError):
        raise bad(
            f"expected a number on {criterion!r}'s scale {scale.describe()}; got {str(value)[:60]!r}"
        ) from None
    if not math.isfinite(number) or not scale.contains(number):
        raise bad(
            f"expected a label on {criterion!r}'s scale {scale.describe()}; got {number:g} "
            "(labels on another scale cannot be mixed with the benchmark's)"
        )
    return number


def _weight(value: Any, file: Path, line: int) -> float | None:
    if value is None or (isinstance(value, str) and not value.strip()):
        return None
    bad = functools.partial(row_error, file, line)
    try:
        number = float(value) if not isinstance(value, bool) else math.nan
    except (TypeError, ValueError):
        number = math.nan
    if not math.isfinite(number) or number < 1 - 1e-9:
        raise bad(
            f"expected 'weight' to be a number >= 1 (the inverse of an inclusion "
            f"probability); got {str(value)[:60]!r}"
        )
    return number


def read_labels(path: str | Path, criterion: str, scale: Scale, *, pairwise: bool = False) -> LabelFile:
    """Read a labels file (see the module docstring); DataError ``file:line:`` for a bad row."""
    file = check_input_file(
        Path(path), "a labels file (CSV with id,label[,weight] or JSON lines)", error=DataError
    )
    labels: dict[str, float | str] = {}
    weights: dict[str, float] = {}
    seen: dict[str, int] = {}
    unlabelled_selected: list[str] = []
    for line, row in _rows(file):
        item_id = row.get("id")
        if isinstance(item_id, int) and not isinstance(item_id, bool):
            item_id = str(item_id)
        if not isinstance(item_id, str) or not item_id:
            raise row_error(file, line, f"expected a non-empty 'id'; got {item_id!r}")
        if item_id in seen:
            raise row_error(
                file, line, f"expected each item once; got {item_id!r} again (first on line {seen[item_id]})"
            )
        seen[item_id] = line
        given = row.get("labels")
        raw = (
            given.get(criterion)
            if isinstance(given, dict)
            else row.get(f"label.{criterion}", row.get("label"))
        )
        label = _label(raw, scale, pairwise, file, line, criterion)
        weight = _weight(row.get("weight"), file, line)
        if weight is not None:
            weights[item_id] = weight
            if label is None:
                unlabelled_selected.append(item_id)
        if label is not None:
            labels[item_id] = label
    if weights and unlabelled_selected:
        raise file_error(
            file,
            f"{len(unlabelled_selected)} of {len(weights)} selected items have no label (first "
            f"{unlabelled_selected[0]!r}); expected every selected item labelled, since an unlabelled one "
            "would bias the weighted estimate",
        )
    if weights and len(weights) != len(seen):
        missing = next(i for i in seen if i not in weights)
        raise file_error(
            file, f"expected a weight on every row of a selection file; item {missing!r} has none"
        )
    return LabelFile(path=str(file), labels=labels, weights=weights)


def apply_labels(
    bench: Benchmark, criterion: str, labels: Mapping[str, float | str], *, source: str | None = None
) -> Benchmark:
    """``bench`` with ``labels`` (item id -> label) added on ``criterion``; DataError (opened by ``source``,
    the labels file) for an id the benchmark lacks or a label contradicting one the item has."""
    by_id = {it.id: it for it in bench.items}
    unknown = [i for i in labels if i not in by_id]
    if unknown:
        raise DataError(
            f"{source + ': ' if source else ''}expected labels for items of {bench.name!r}; "
            f"{len(unknown)} ids are not in it (first {unknown[0]!r})",
            path=source,
        )
    items = []
    for it in bench.items:
        if it.id not in labels:
            items.append(it)
            continue
        new = labels[it.id]
        if it.pairwise:
            old = it.preference.get(criterion)
            if old is not None and old != new:
                raise DataError(
                    f"item {it.id!r} already has the preference {old!r} on {criterion!r}; the "
                    f"labels file says {new!r}",
                    item_id=it.id,
                )
            items.append(it.model_copy(update={"preference": {**it.preference, criterion: new}}))
        else:
            old_score = it.human.get(criterion)
            if old_score is not None and math.isfinite(old_score) and abs(old_score - float(new)) > 1e-9:
                raise DataError(
                    f"item {it.id!r} already has the label {old_score:g} on {criterion!r}; the "
                    f"labels file says {float(new):g}",
                    item_id=it.id,
                )
            items.append(it.model_copy(update={"human": {**it.human, criterion: float(new)}}))
    return bench.model_copy(update={"items": tuple(items)})


class AddedLabels(BaseModel):
    """A benchmark with some files' labels added, their selection weights and rounds, the ids labelled."""

    model_config = ConfigDict(frozen=True, extra="forbid", arbitrary_types_allowed=True)
    benchmark: Benchmark
    weights: dict[str, float] = Field(default_factory=dict)
    """Item id -> selection weight (the inverse inclusion probability), for the items of weighted files."""
    rounds: dict[str, int] = Field(default_factory=dict)
    """Item id -> selection round: the weighted files in the order given are rounds 1, 2 ..."""
    labelled: tuple[str, ...] = ()
    """The ids the files gave a label, in file order."""


def add_label_files(bench: Benchmark, criterion: str, paths: Sequence[str | Path]) -> AddedLabels:
    """``bench`` with the labels of every file in ``paths`` added on ``criterion`` (:func:`read_labels`,
    :func:`apply_labels`); the weighted files (filled selection files) are selection rounds in the order
    given, and an item selected in two of them is a DataError."""
    weights: dict[str, float] = {}
    rounds: dict[str, int] = {}
    labelled: dict[str, None] = {}
    scale = bench.scale_for(criterion)
    for path in paths:
        found = read_labels(path, criterion, scale, pairwise=bench.pairwise)
        bench = apply_labels(bench, criterion, found.labels, source=found.path)
        labelled.update(dict.fromkeys(found.labels))
        if found.weighted:
            again = next((i for i in found.weights if i in weights), None)
            if again is not None:
                raise DataError(
                    f"item {again!r} is in two selection files; expected each selected item in one round"
                )
            number = max(rounds.values(), default=0) + 1
            weights.update(found.weights)
            rounds.update(dict.fromkeys(found.weights, number))
    return AddedLabels(benchmark=bench, weights=weights, rounds=rounds, labelled=tuple(labelled))


def _without_label(item: Item, criterion: str) -> Item:
    if item.pairwise:
        return item.model_copy(
            update={"preference": {k: v for k, v in item.preference.items() if k != criterion}}
        )
    return item.model_copy(
        update={
            "human": {k: v for k, v in item.human.items() if k != criterion},
            "annotators": {k: v for k, v in item.annotators.items() if k != criterion},
        }
    )


def hide_labels(
    bench: Benchmark,
    criterion: str,
    *,
    per_group: int | None = None,
    fraction: float | None = None,
    seed: int = 0,
    group: Callable[[Item], str] | None = None,
) -> tuple[Benchmark, dict[str, float]]:
    """Keep a seeded random draw of the labels on ``criterion`` (``per_group`` per group, or a ``fraction``
    of each, at least 1) and hide the rest; return it and every label it had (the truth)."""
    if (per_group is None) == (fraction is None):
        raise ConfigError(
            "expected exactly one of per_group (labels kept per group) and fraction (share "
            f"kept); got per_group={per_group!r}, fraction={fraction!r}"
        )
    if per_group is not None:
        check_param("hide_labels", "per_group", per_group, [Interval(int, 0)])
    if fraction is not None:
        check_param("hide_labels", "fraction", fraction, [Interval(float, 0, 1, closed="right")])
    key = group or (lambda it: "all")
    truth: dict[str, float] = {}
    groups: dict[str, list[str]] = {}
    for it in bench.items:
        value = label_value(it, criterion)
        if value is not None:
            truth[it.id] = value
            groups.setdefault(key(it), []).append(it.id)
    rng = random.Random(seed)
    keep: set[str] = set()
    for name in sorted(groups):
        ids = groups[name]
        count = per_group if per_group is not None else max(1, round(len(ids) * float(fraction)))  # type: ignore[arg-type]
        keep.update(rng.sample(ids, min(count, len(ids))))
    items = tuple(
        it if it.id in keep or it.id not in truth else _without_label(it, criterion) for it in bench.items
    )
    return bench.model_copy(update={"items": items}), truth
