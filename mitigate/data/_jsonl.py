"""The generic benchmark format (one JSON object per line, ``docs/data_format.md``; an optional first line
``{"benchmark": {...}}`` declares name, criteria and scales) and the file helpers every loader shares."""

from __future__ import annotations

import functools
import json
import math
import re
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import IO, Any, TypeGuard

from mitigate.data._schema import Benchmark, Item
from mitigate.errors import DataError, ScaleError
from mitigate.paths import (
    check_input_file,
    data_dir,
    loads_json,
    open_regular,
    read_file,
    read_lines,
    user_data_dir,
    write_output,
)
from mitigate.scale import Scale

_SURROGATE = re.compile("[\ud800-\udfff]")

ROW_KEYS = tuple(
    "id system doc_id inputs output output_b system_b reference human annotators preference meta".split()
)
"""The keys a generic-format row may hold; any other key is an error (it is usually a typo)."""

HEADER_KEYS = ("name", "criteria", "scale", "scales", "description")
"""The keys the optional header line ``{"benchmark": {...}}`` may hold."""

PREFERENCES = {"a": "A", "b": "B", "tie": "tie"}
"""Accepted gold preferences (case-insensitive) -> the stored value."""

ScaleSpec = Scale | tuple[float, float] | list[float]
"""A label scale as :class:`~mitigate.scale.Scale` or ``(min, max)``."""


def resolve_root(root: str | Path | None, benchmark: str = "<benchmark>") -> Path:
    """``root``, else :func:`mitigate.paths.data_dir`; DataError saying how to get one when neither is
    (``benchmark``: the name ``mitigate data fetch`` takes for what is being loaded)."""
    if root is not None:
        return Path(root)
    found = data_dir()
    if found is None:
        raise DataError(
            f"expected a data folder holding the benchmarks; found none: download this one with "
            f"'mitigate data fetch {benchmark}' (into {user_data_dir()}), or set MITIGATE_DATA_DIR to a "
            "folder that holds them"
        )
    return found


def require_files(root: Path, relpaths: Sequence[str], *, dataset: str, hint: str = "") -> list[Path]:
    """The paths of ``relpaths`` under ``root``; DataError (one line) naming the first missing ones and the
    ``hint``."""
    paths = [root / rel for rel in relpaths]
    missing = [rel for rel, path in zip(relpaths, paths, strict=True) if not path.is_file()]
    if missing:
        more = f" and {len(missing) - 3} more" if len(missing) > 3 else ""
        raise DataError(
            f"cannot load {dataset}: expected {len(relpaths)} files under the data folder {root}; "
            f"{len(missing)} of {len(relpaths)} are missing ({', '.join(missing[:3])}{more})"
            + (f". {hint}" if hint else ""),
            path=str(root / missing[0]),
        )
    return paths


def read_json_lines(path: Path, *, error: type[DataError] = DataError) -> Iterator[tuple[int, int, Any]]:
    """``(line_number, byte_offset, value)`` for every non-blank line of a JSON-lines file; ``error`` for a
    bad one."""
    for number, offset, line in read_text_lines(path, error=error):
        if line.strip():
            yield number, offset, json_value(line, path, number, error=error)


def json_value(line: str, path: Path, number: int, *, error: type[DataError] = DataError) -> Any:
    """The JSON value of one line of ``path``; ``error`` naming the file and line when it is not one."""
    try:
        value = loads_json(line)
    except json.JSONDecodeError as exc:
        message = f"expected one JSON value per line; got invalid JSON ({exc.msg} at column {exc.colno})"
        raise row_error(path, number, f"{message}: {clip(line)}", error=error) from exc
    if "\\u" in line and (bad := _lone_surrogate(value)) is not None:  # only an escape such as "\ud800"
        message = f"got the lone surrogate escape \\u{ord(bad):04x}, which no UTF-8 text can hold"
        raise row_error(path, number, f"expected text that is valid Unicode; {message}", error=error)
    return value


def read_text_lines(path: Path, *, error: type[DataError] = DataError) -> Iterator[tuple[int, int, str]]:
    """``(line_number, byte_offset, text)`` for every line of a UTF-8 text file; ``error`` naming a line
    not UTF-8."""
    check_input_file(path, "a data file", error=error)
    try:
        handle = open_regular(path, "rb", "a data file")  # checked again on the open file: never a FIFO
    except OSError as exc:
        raise error(f"cannot read {path}: {exc.strerror or exc}", path=str(path)) from exc
    with handle:
        offset = 0
        for number, raw in enumerate(read_lines(handle, f"the data file {path}", path=path), start=1):
            yield number, offset, utf8_line(raw, path, number, error=error)
            offset += len(raw)


def utf8_line(raw: bytes, path: Path, number: int, *, error: type[DataError] = DataError) -> str:
    """One line of ``path`` as text (a byte-order mark opening the file skipped); ``error`` naming the file,
    line and byte when it is not UTF-8."""
    try:
        return raw.decode("utf-8-sig" if number == 1 else "utf-8")
    except UnicodeDecodeError as exc:
        got = f"the byte {raw[exc.start]:#04x} at column {exc.start + 1}"
        raise row_error(
            path,
            number,
            f"expected UTF-8 text; got {got}, which is not UTF-8 (re-save the file as UTF-8)",
            error=error,
        ) from None


def read_text(path: Path, *, error: type[DataError] = DataError, translate_newlines: bool = True) -> str:
    """The whole of a UTF-8 text file with newlines normalised to ``\\n`` (as ``Path.read_text`` does;
    ``translate_newlines=False`` keeps them, as ``newline=""`` does for the csv module); ``error``
    naming the file and line when it cannot be read or is not UTF-8."""
    data = read_file(path, "a data file", error=error)  # a FIFO or device refused, never opened
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        got = f"the byte {data[exc.start]:#04x}, which is not UTF-8 (re-save the file as UTF-8)"
        raise row_error(
            path, data.count(b"\n", 0, exc.start) + 1, f"expected UTF-8 text; got {got}", error=error
        ) from None
    return text.replace("\r\n", "\n").replace("\r", "\n") if translate_newlines else text


def read_json(path: Path) -> Any:
    """The JSON document in a UTF-8 file; DataError naming the file and line where it is not valid JSON."""
    try:
        return loads_json(read_text(path))
    except json.JSONDecodeError as exc:
        raise row_error(path, exc.lineno, f"expected a JSON document; got invalid JSON ({exc.msg})") from None


def _lone_surrogate(value: Any) -> str | None:
    """The first lone surrogate character in a parsed JSON value (keys included), or None."""
    if isinstance(value, str):
        match = _SURROGATE.search(value)
        return None if match is None else match.group()
    parts = (*value, *value.values()) if isinstance(value, dict) else value if isinstance(value, list) else ()
    for part in parts:
        if (found := _lone_surrogate(part)) is not None:
            return found
    return None


def file_error(path: Path, message: str, where: object = None) -> DataError:
    """A DataError about ``path``: ``<where>: <message>`` (``where`` defaults to the path)."""
    return DataError(f"{path if where is None else where}: {message}", path=str(path))


def row_error(path: Path, line: int, message: str, *, error: type[DataError] = DataError) -> DataError:
    """A DataError (or ``error`` subclass) for a bad row, with ``path:line:`` in front and both in context."""
    return error(f"{path}:{line}: {message}", path=str(path), line=line)


def number(value: Any, path: Path, line: int, what: str, clipped: int = 80) -> float:
    """``value`` as a finite float, or a DataError saying ``what`` should have been a number."""
    if not is_number(value):
        got = f"{type(value).__name__} {clip(repr(value), clipped)}"
        raise row_error(path, line, f"expected a number for {what}; got {got}")
    result = float(value)
    if not math.isfinite(result):
        raise row_error(path, line, f"expected a finite number for {what}; got {value!r}")
    return result


def is_number(value: Any) -> TypeGuard[int | float]:
    """Whether ``value`` is an int or a float (a bool is not)."""
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def int_ratings(raw: str, low: int, high: int, where: str, path: Path, line: int) -> tuple[int, ...]:
    """Comma-separated integer ratings from ``low`` to ``high`` (``where``: which, as errors name them)."""
    parts = [part.strip() for part in raw.split(",")]
    if not all(part.isdigit() and low <= int(part) <= high for part in parts):
        message = f"expected comma-separated integer ratings {low}-{high} {where}; got {raw!r}"
        raise row_error(path, line, message)
    return tuple(map(int, parts))


def mean(values: Sequence[float]) -> float:
    """The arithmetic mean of a non-empty sequence (callers check emptiness and report it)."""
    return sum(values) / len(values)


def clip(text: str, limit: int = 80) -> str:
    """``text`` stripped and cut to ``limit`` characters (``...`` ending a cut one), for error messages."""
    text = text.strip()
    return text if len(text) <= limit else text[: limit - 3] + "..."


def load_jsonl(
    path: str | Path,
    name: str | None = None,
    scale: ScaleSpec | Mapping[str, ScaleSpec] | None = None,
    *,
    criteria: Sequence[str] | None = None,
    description: str = "",
) -> Benchmark:
    """Load a benchmark in the generic JSON-lines format, checking every row (the first bad one raises
    DataError ``file:line:``).

    ``name``, ``criteria`` and ``scale`` (one, or criterion -> scale) override the header's; the defaults are
    the file's stem, the labelled criteria in order, and 1 to 5. Every human and annotator score must lie
    within its scale.
    """
    rows = JsonlRows(path, scale)
    file = rows.path
    items: list[Item] = []
    first_line: dict[str, int] = {}
    seen_criteria: dict[str, None] = {}
    for line, _, item in rows:
        if item.id in first_line:
            raise duplicate_id(file, line, item.id, first_line[item.id])
        first_line[item.id] = line
        note_criteria(item, seen_criteria)
        items.append(item)
    if not items or rows.common is None:
        raise file_error(file, "expected at least one row; the file holds none")
    return Benchmark(
        name=name or rows.header.get("name") or file.stem,
        items=tuple(items),
        criteria=rows.criteria(criteria, seen_criteria),
        scale=rows.common,
        scales=rows.per,
        description=description or rows.header.get("description", ""),
    )


def duplicate_id(path: Path, line: int, item_id: str, first: int) -> DataError:
    """The error for an id seen on an earlier line."""
    return row_error(path, line, f"expected a unique 'id'; got {item_id!r}, already used on line {first}")


def note_criteria(item: Item, seen: dict[str, None]) -> None:
    """Add the criteria ``item`` holds labels for to ``seen`` (an ordered set)."""
    seen.update(dict.fromkeys((*item.human, *item.annotators, *item.preference)))


class JsonlRows:
    """The checked items of a generic-format file, ``(line, offset, item)``, read one at a time (each
    iteration reads the file again); the header goes to ``header``, ``common`` and ``per``."""

    def __init__(self, path: str | Path, scale: ScaleSpec | Mapping[str, ScaleSpec] | None = None) -> None:
        self.path = check_input_file(Path(path), "a JSON-lines benchmark file", error=DataError)
        self.scale = scale
        self.header: dict[str, Any] = {}
        self.common: Scale | None = None
        self.per: dict[str, Scale] = {}

    def __iter__(self) -> Iterator[tuple[int, int, Item]]:
        common: Scale | None = None
        for line, offset, row in read_json_lines(self.path):
            if common is None:
                is_header = isinstance(row, dict) and set(row) == {"benchmark"}
                self.header = header_fields(row["benchmark"], self.path, line) if is_header else {}
                common, self.per = _scales(self.header, self.scale, self.path)
                self.common = common
                if is_header:
                    continue
            yield line, offset, _row_to_item(row, self.path, line, common, self.per)

    def item(self, row: Any, line: int) -> Item:
        """One row read again (at ``line``, after the file was iterated once) as its item."""
        if self.common is None:
            raise DataError(
                f"{self.path}: expected its rows read once before one is read again", path=str(self.path)
            )
        return _row_to_item(row, self.path, line, self.common, self.per)

    def criteria(self, given: Sequence[str] | None, seen: Mapping[str, None]) -> tuple[str, ...]:
        """``given``, else the header's, else those ``seen``; plus every criterion with a scale of its own."""
        chosen = tuple(given) if given is not None else tuple(self.header.get("criteria") or seen)
        return chosen + tuple(extra for extra in self.per if extra not in chosen)


def _scale_value(value: Any, where: str) -> Scale:
    """A scale given as ``[min, max]``, ``{"min": .., "max": ..}`` or a Scale; DataError naming ``where``."""
    try:
        if isinstance(value, dict):
            return Scale.model_validate(value)
        if isinstance(value, (list, tuple)) and len(value) == 2 and all(map(is_number, value)):
            return Scale(min=value[0], max=value[1])
        if isinstance(value, Scale):
            return value
    except (ValueError, ScaleError) as exc:
        raise DataError(f"expected a valid scale for {where}; got {clip(repr(value))}: {exc}") from None
    raise DataError(
        f'expected a scale [min, max] or {{"min": .., "max": ..}} for {where}; got {clip(repr(value))}'
    )


def header_fields(value: Any, path: Path, line: int) -> dict[str, Any]:
    """The checked header ``{"benchmark": {...}}``: name, criteria, scale, scales, description."""
    out: dict[str, Any] = {}
    try:
        if not isinstance(value, dict):
            raise DataError(f"expected the header 'benchmark' to be an object; got {type(value).__name__}")
        unknown = [k for k in value if k not in HEADER_KEYS]
        if unknown:
            raise DataError(
                f"expected only the header keys {list(HEADER_KEYS)}; got unknown key(s) {unknown}"
            )
        for key in ("name", "description"):
            if key in value:
                if not isinstance(value[key], str):
                    raise DataError(f"expected a string header '{key}'; got {type(value[key]).__name__}")
                out[key] = value[key]
        if "criteria" in value:
            crits = value["criteria"]
            if not isinstance(crits, list) or not all(isinstance(c, str) and c for c in crits):
                raise DataError(f"expected header 'criteria' to be a list of names; got {clip(repr(crits))}")
            out["criteria"] = crits
        if "scale" in value:
            out["scale"] = _scale_value(value["scale"], "the header 'scale'")
        if "scales" in value:
            if not isinstance(value["scales"], dict):
                raise DataError(
                    f"expected header 'scales' to be an object criterion -> scale; got "
                    f"{type(value['scales']).__name__}"
                )
            out["scales"] = {c: _scale_value(v, f"criterion {c!r}") for c, v in value["scales"].items()}
    except DataError as exc:
        raise row_error(path, line, exc.message) from None
    return out


def _scales(header: dict[str, Any], scale: Any, path: Path) -> tuple[Scale, dict[str, Scale]]:
    """The common scale and the per-criterion scales: arguments over the header over 1-5."""
    common: Scale = header.get("scale", Scale())
    per: dict[str, Scale] = dict(header.get("scales", {}))
    try:
        if isinstance(scale, Mapping):
            per.update({c: _scale_value(v, f"criterion {c!r}") for c, v in scale.items()})
        elif scale is not None:
            common = Scale.of(scale)
    except ScaleError as exc:
        raise DataError(
            f"expected scale=(min, max), a Scale or a mapping criterion -> scale for {path}; {exc}"
        ) from None
    return common, per


def _row_to_item(row: Any, path: Path, line: int, common: Scale, per: Mapping[str, Scale]) -> Item:
    bad = functools.partial(row_error, path, line)
    if not isinstance(row, dict):
        raise bad(f"expected a JSON object; got {type(row).__name__}")
    unknown = [key for key in row if key not in ROW_KEYS]
    if unknown:
        raise bad(f"expected only the keys {list(ROW_KEYS)}; got unknown key(s) {unknown}")
    item_id = row.get("id")
    if not isinstance(item_id, str) or not item_id:
        got = "no 'id'" if "id" not in row else f"{type(item_id).__name__} {item_id!r}"
        raise bad(f"expected a non-empty string 'id'; got {got}")
    if "output" not in row:
        raise bad(f"expected an 'output' text in row {item_id!r}; got no 'output'")
    fields: dict[str, Any] = {"id": item_id}
    for key in ("output", "output_b", "system", "system_b", "doc_id", "reference"):
        value = row.get(key)
        if value is None and key != "output":
            continue
        if not isinstance(value, str):
            raise bad(f"expected a string for '{key}' in row {item_id!r}; got {type(value).__name__}")
        fields[key] = value
    inputs = row.get("inputs", {})
    if not isinstance(inputs, dict) or not all(isinstance(v, str) for v in inputs.values()):
        raise bad(
            f"expected 'inputs' to be an object of named texts in row {item_id!r}; got {clip(repr(inputs))}"
        )
    fields["inputs"] = inputs

    def score(value: Any, criterion: str, what: str) -> float:
        return _in_scale(number(value, path, line, what), per.get(criterion, common), path, line, criterion)

    def mapping(key: str, what: str) -> dict[str, Any]:
        value = row.get(key, {})
        if not isinstance(value, dict):
            raise bad(f"expected '{key}' to be {what} in row {item_id!r}; got {type(value).__name__}")
        return value

    human = mapping("human", "an object criterion -> score")
    fields["human"] = {c: score(v, c, f"human score {c!r}") for c, v in human.items()}
    parsed: dict[str, tuple[float | None, ...]] = {}
    for criterion, scores in mapping("annotators", "an object criterion -> list of scores").items():
        if not isinstance(scores, list):
            raise bad(f"expected a list of scores for annotators {criterion!r}; got {type(scores).__name__}")
        parsed[criterion] = tuple(
            None if s is None else score(s, criterion, f"annotator score {criterion!r}") for s in scores
        )
    fields["annotators"] = parsed
    preference = mapping("preference", 'an object criterion -> "A", "B" or "tie"')
    if preference and "output_b" not in fields:
        raise bad(
            f"expected an 'output_b' in row {item_id!r}, which has a gold 'preference' "
            "(a pairwise item compares output = A with output_b = B); got none"
        )
    prefs: dict[str, str] = {}
    for criterion, value in preference.items():
        gold = PREFERENCES.get(value.lower()) if isinstance(value, str) else None
        if gold is None:
            raise bad(
                f'expected the preference for {criterion!r} to be "A", "B" or "tie"; got {clip(repr(value))}'
            )
        prefs[criterion] = gold
    fields["preference"] = prefs
    fields["meta"] = mapping("meta", "an object")
    return Item(**fields)


def _in_scale(value: float, scale: Scale, path: Path, line: int, criterion: str) -> float:
    if not scale.contains(value):
        raise row_error(
            path,
            line,
            f"expected {criterion!r} scores within the human scale {scale.describe()} (declare the scale in "
            f"the header line or pass scale= to load_jsonl for another); got {value:g}",
        )
    return value


def item_to_row(item: Item) -> dict[str, Any]:
    """One item as a generic-format row (empty optional fields left out)."""
    given = item.model_dump(exclude_defaults=True)
    return {key: given[key] for key in ROW_KEYS if key in given}


def header_row(benchmark: Benchmark) -> dict[str, Any]:
    """The header line ``{"benchmark": {...}}`` keeping name, criteria and scales."""
    head: dict[str, Any] = {
        "name": benchmark.name,
        "criteria": list(benchmark.criteria),
        "scale": benchmark.scale.model_dump(mode="json"),
    }
    if benchmark.scales:
        head["scales"] = {c: s.model_dump(mode="json") for c, s in benchmark.scales.items()}
    if benchmark.description:
        head["description"] = benchmark.description
    return {"benchmark": head}


def save_jsonl(benchmark: Benchmark, path: str | Path) -> Path:
    """Write ``benchmark`` in the generic format (a header line, then one row per item); return the path."""
    file = Path(path)

    def fill(handle: IO[str]) -> None:
        handle.write(json.dumps(header_row(benchmark), ensure_ascii=False) + "\n")
        for item in benchmark.items:
            try:
                text = json.dumps(item_to_row(item), ensure_ascii=False)
            except (TypeError, ValueError) as exc:
                raise DataError(
                    f"expected JSON-serialisable values in item {item.id!r}; got {exc}", item_id=item.id
                ) from exc
            handle.write(text + "\n")

    write_output(file, fill, "the benchmark file")
    return file
