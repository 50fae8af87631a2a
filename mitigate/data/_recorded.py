"""Recorded judgments: answers a judge already gave, one row each (a JSON line, or a CSV row with the same
columns; ``docs/recorded_format.md``), replayed by ``mitigate compare --recorded FILE`` without any LM call::

    {"item_id": "pair-3", "judge": "gpt-4o", "criterion": "overall", "verdict": "first", "order": "swapped"}

Per judge, the *primary variant* is ``"default"`` when some row uses it, else the first in the file.
"""

from __future__ import annotations

import csv
import functools
import json
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import IO, Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from mitigate.data._csv_cells import csv_cell, csv_value
from mitigate.data._jsonl import clip, file_error, header_fields, number, read_json_lines, row_error
from mitigate.errors import DataError, ParseError
from mitigate.paths import check_input_file, loads_json, open_regular, read_lines, write_output
from mitigate.scale import Scale

RECORD_KEYS = tuple("item_id judge criterion score verdict raw sample order variant error meta".split())
"""The keys a recorded-judgment row may hold; any other key is an error (usually a typo)."""

DEFAULT_VARIANT = "default"
"""The variant name rows get when they name none, and the one preferred as primary."""

Order = Literal["original", "swapped"]
_ORDERS: dict[str, Order] = {"original": "original", "ab": "original", "swapped": "swapped", "ba": "swapped"}
_TEXT: dict[str, Literal["A", "B", "tie"]] = {"a": "A", "b": "B", "tie": "tie"}
_POSITION = {"first", "second"}
_WRITTEN = tuple("item_id judge criterion score verdict error raw sample order variant meta".split())


class RecordedRow(BaseModel):
    """One recorded answer (``verdict``: the text preferred; ``line``: 1-based, 0 when built in memory)."""

    model_config = ConfigDict(frozen=True, extra="forbid")
    item_id: str
    judge: str
    criterion: str
    score: float | None = None
    verdict: Literal["A", "B", "tie"] | None = None
    raw: str = ""
    sample: int = 0
    order: Order = "original"
    variant: str = DEFAULT_VARIANT
    error: str | None = None
    line: int = 0
    meta: dict[str, Any] = Field(default_factory=dict)

    @property
    def presented(self) -> str | None:
        """The verdict as the position preferred when presented (``"first"``, ``"second"``, ``"tie"``)."""
        if self.verdict is None:
            return None
        if self.verdict == "tie":
            return "tie"
        a_first = self.order == "original"
        return "first" if (self.verdict == "A") == a_first else "second"

    @property
    def failed(self) -> bool:
        """True when the answer held neither a score nor a verdict."""
        return self.score is None and self.verdict is None


class RecordedJudgment(BaseModel):
    """Every recorded answer of one judge for one item and criterion, in file order."""

    model_config = ConfigDict(frozen=True, extra="forbid")
    judge: str
    item_id: str
    criterion: str
    rows: tuple[RecordedRow, ...]

    @property
    def pairwise(self) -> bool:
        """Whether the answers are verdicts (some row holds one) rather than scores."""
        return any(r.verdict is not None for r in self.rows)

    def select(self, variant: str, order: Order = "original") -> list[RecordedRow]:
        """The answers under one variant and order, by sample index."""
        return sorted(
            (r for r in self.rows if r.variant == variant and r.order == order), key=lambda r: r.sample
        )

    @property
    def variants(self) -> list[str]:
        """The prompt variants answered, in order of first appearance."""
        return list(dict.fromkeys(r.variant for r in self.rows))

    @property
    def orders(self) -> list[Order]:
        """The presentation orders answered, in order of first appearance."""
        return list(dict.fromkeys(r.order for r in self.rows))


class RecordedRun(BaseModel):
    """One judge's recorded answers, item id -> criterion -> judgment; ``source`` a path or
    ``released:<name>``, ``scales`` those the file declared, ``primary_variant`` the headline's."""

    model_config = ConfigDict(frozen=True, extra="forbid")
    judge: str
    source: str
    judgments: dict[str, dict[str, RecordedJudgment]]
    scales: dict[str, Scale] = Field(default_factory=dict)
    primary_variant: str = DEFAULT_VARIANT

    @property
    def criteria(self) -> tuple[str, ...]:
        """The criteria judged, in order of first appearance."""
        return tuple(dict.fromkeys(c for per in self.judgments.values() for c in per))

    def __len__(self) -> int:
        return sum(len(per) for per in self.judgments.values())

    def get(self, item_id: str, criterion: str) -> RecordedJudgment | None:
        """The recorded judgment of one item on one criterion, or None when the judge has none."""
        return self.judgments.get(item_id, {}).get(criterion)

    def rows(self) -> list[RecordedRow]:
        """Every row, judgment by judgment."""
        return [r for per in self.judgments.values() for j in per.values() for r in j.rows]

    def summary(self) -> str:
        """One line with the counts, for logs and reports."""
        rows = self.rows()
        variants = sorted({r.variant for r in rows})
        orders = sorted({r.order for r in rows})
        return (
            f"{self.judge} ({self.source}): {len(self)} judgments over {len(self.judgments)} items, "
            f"{len(rows)} answers, {sum(r.failed for r in rows)} failures; criteria {list(self.criteria)}, "
            f"variants {variants} (primary {self.primary_variant!r}), orders {orders}"
        )


def runs_from_rows(
    rows: Sequence[RecordedRow],
    source: str,
    scales: Mapping[str, Scale] | None = None,
    *,
    path: Path | None = None,
) -> dict[str, RecordedRun]:
    """Group rows into one :class:`RecordedRun` per judge (in order of first appearance); two rows for the
    same judge, item, criterion, variant, order and sample are an error naming both lines."""
    grouped: dict[str, dict[str, dict[str, list[RecordedRow]]]] = {}
    seen: dict[tuple[str, str, str, str, str, int], int] = {}
    for r in rows:
        key = (r.judge, r.item_id, r.criterion, r.variant, r.order, r.sample)
        if key in seen:
            where = f"already given on line {seen[key]}" if seen[key] else "given twice"
            message = (
                "expected one answer per judge, item, criterion, variant, order and sample; got a "
                f"second for judge {r.judge!r}, item {r.item_id!r}, criterion {r.criterion!r}, "
                f"variant {r.variant!r}, order {r.order!r}, sample {r.sample} ({where})"
            )
            if path is not None and r.line:
                raise row_error(path, r.line, message)
            raise DataError(message, item_id=r.item_id)
        seen[key] = r.line
        grouped.setdefault(r.judge, {}).setdefault(r.item_id, {}).setdefault(r.criterion, []).append(r)
    out: dict[str, RecordedRun] = {}
    for judge, per_item in grouped.items():
        judge_rows = [r for per in per_item.values() for rs in per.values() for r in rs]
        variants = list(dict.fromkeys(r.variant for r in judge_rows))
        primary = DEFAULT_VARIANT if DEFAULT_VARIANT in variants else variants[0]
        judgments = {
            item_id: {
                c: RecordedJudgment(judge=judge, item_id=item_id, criterion=c, rows=tuple(rs))
                for c, rs in per.items()
            }
            for item_id, per in per_item.items()
        }
        out[judge] = RecordedRun(
            judge=judge,
            source=source,
            judgments=judgments,
            scales=dict(scales or {}),
            primary_variant=primary,
        )
    return out


def _header(value: Any, path: Path, line: int) -> tuple[Scale | None, dict[str, Scale]]:
    if not isinstance(value, dict) or set(value) - {"scale", "scales"}:
        raise row_error(
            path,
            line,
            'expected the header line {"recorded": {"scale": [min, max], "scales": '
            f"{{criterion: [min, max]}}}}; got {clip(json.dumps(value), 60)}",
        )
    header = header_fields(value, path, line)
    return header.get("scale"), header.get("scales", {})


def _text(row: Mapping[str, Any], key: str, path: Path, line: int, *, required: bool) -> str | None:
    value = row.get(key)
    if value is None or value == "":
        if required:
            raise row_error(
                path,
                line,
                f"expected a non-empty string '{key}'; got "
                f"{'nothing' if value is None else 'an empty string'}",
            )
        return None
    if not isinstance(value, str):
        raise row_error(
            path, line, f"expected a string '{key}'; got {type(value).__name__} {clip(repr(value), 60)}"
        )
    return value


AnswerReader = Callable[[str, str, str], "float | str"]
"""Reads a recorded ``raw`` answer on a criterion, for an item id: a score, or a presented verdict ("first",
"second", "tie"); raises :class:`~mitigate.errors.ParseError` when the text holds none (a recorded failure).
The item id lets the reader know the texts the answer judged (a value they hold and the answer quotes back
is never the verdict)."""


def parse_row(
    row: Any,
    path: Path,
    line: int,
    scale_of: Mapping[str, Scale] | None = None,
    common: Scale | None = None,
    *,
    from_csv: bool = False,
    read: AnswerReader | None = None,
) -> RecordedRow:
    """Check one recorded-judgment row (a JSON object, or a CSV row of strings) and build it; DataError
    ``file:line:`` for a bad one. A row holding only the judge's ``raw`` text is read with ``read`` (a
    prompt's answer format): its score or verdict, or its parse failure as the row's ``error``."""
    bad = functools.partial(row_error, path, line)
    if not isinstance(row, dict):
        raise bad(f"expected a JSON object with {list(RECORD_KEYS[:3])} ...; got {type(row).__name__}")
    unknown = [k for k in row if k not in RECORD_KEYS]
    if unknown:
        raise bad(f"expected only the keys {list(RECORD_KEYS)}; got unknown key(s) {unknown}")
    item_id = _text(row, "item_id", path, line, required=True)
    judge = _text(row, "judge", path, line, required=True)
    criterion = _text(row, "criterion", path, line, required=True)
    assert item_id is not None and judge is not None and criterion is not None
    score = _score(row.get("score"), path, line, from_csv=from_csv)
    order_text = _text(row, "order", path, line, required=False) or "original"
    order = _ORDERS.get(order_text.lower())
    if order is None:
        raise bad(f'expected \'order\' to be "original" or "swapped"; got {order_text!r}')
    verdict = _verdict(_text(row, "verdict", path, line, required=False), order, path, line)
    error = _text(row, "error", path, line, required=False)
    if score is not None and verdict is not None:
        raise bad(f"expected a 'score' or a 'verdict', not both; got score {score:g} and verdict {verdict!r}")
    if (score is not None or verdict is not None) and error is not None:
        raise bad(
            f"expected an 'error' only on a row without a score or verdict; got {error!r} beside an answer"
        )
    raw_text = row.get("raw")
    if score is None and verdict is None and error is None and isinstance(raw_text, str) and raw_text.strip():
        if read is None:
            raise bad(
                f"expected a 'score', a 'verdict' or an 'error' for item {item_id!r}; got only "
                "'raw' (give the prompt whose answer format reads it: "
                "compare --prompt)"
            )
        try:
            got = read(raw_text, criterion, item_id)
        except ParseError as exc:
            error = exc.message
        else:
            if isinstance(got, str):
                verdict = _verdict(got, order, path, line)
            else:
                score = float(got)
    if score is None and verdict is None and error is None:
        raise bad(
            f"expected a 'score', a 'verdict' or an 'error' (an answer that held none) for "
            f"item {item_id!r}; got none of them"
        )
    scale = (scale_of or {}).get(criterion, common)
    if score is not None and scale is not None and not scale.contains(score):
        raise bad(
            f"expected {criterion!r} scores within the declared scale {scale.describe()}; got {score:g}"
        )
    sample = _sample(row.get("sample"), path, line)
    variant = _text(row, "variant", path, line, required=False) or DEFAULT_VARIANT
    raw = row.get("raw") or ""
    if not isinstance(raw, str):
        raise bad(f"expected a string 'raw' (the judge's text); got {type(raw).__name__}")
    meta = row.get("meta") or {}
    if from_csv and isinstance(meta, str):
        try:
            meta = loads_json(meta)
        except json.JSONDecodeError:
            raise bad(f"expected 'meta' to hold a JSON object; got {clip(meta, 60)}") from None
    if not isinstance(meta, dict):
        raise bad(f"expected 'meta' to be an object; got {type(meta).__name__}")
    return RecordedRow(
        item_id=item_id,
        judge=judge,
        criterion=criterion,
        score=score,
        verdict=verdict,
        raw=raw,
        sample=sample,
        order=order,
        variant=variant,
        error=error,
        line=line,
        meta=meta,
    )


def _score(value: Any, path: Path, line: int, *, from_csv: bool) -> float | None:
    if value is None or value == "":
        return None
    if from_csv and isinstance(value, str):
        try:
            value = float(value)
        except ValueError:
            raise row_error(
                path, line, f"expected a number for 'score'; got {clip(repr(value), 60)}"
            ) from None
    return number(value, path, line, "'score'", 60)


def _sample(value: Any, path: Path, line: int) -> int:
    if value is None or value == "":
        return 0
    if isinstance(value, str) and value.strip().isdigit():
        return int(value)
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise row_error(path, line, f"expected 'sample' to be an integer >= 0; got {clip(repr(value), 60)}")
    return value


def _verdict(value: str | None, order: str, path: Path, line: int) -> Literal["A", "B", "tie"] | None:
    if value is None:
        return None
    key = value.strip().lower()
    if key in _TEXT:
        return _TEXT[key]
    if key in _POSITION:
        a_first = order == "original"
        return "A" if (key == "first") == a_first else "B"
    raise row_error(
        path,
        line,
        'expected a \'verdict\' of "A", "B" or "tie" (the text preferred) or "first"/'
        f'"second" (the position preferred as presented); got {value!r}',
    )


def _csv_rows(path: Path) -> Iterator[tuple[int, dict[str, Any]]]:
    try:
        # a FIFO or a device is refused unread
        handle = open_regular(path, "rb", "the recorded-judgments file")
    except OSError as exc:
        raise DataError(f"cannot read {path}: {exc}", path=str(path)) from exc
    with handle:  # lines read one at a time, none past MAX_LINE_BYTES; a quoted field may span several
        reader = csv.DictReader(
            line.decode("utf-8") for line in read_lines(handle, f"the CSV file {path}", path=path)
        )
        if reader.fieldnames is None:
            return
        unknown = [k for k in reader.fieldnames if k not in RECORD_KEYS]
        if unknown:
            raise row_error(
                path, 1, f"expected only the columns {list(RECORD_KEYS)}; got unknown column(s) {unknown}"
            )
        start = 2
        for row in reader:
            if any(v not in (None, "") for v in row.values()):
                extra = row.pop(None, None)
                if extra:
                    raise row_error(
                        path,
                        start,
                        f"expected {len(reader.fieldnames)} columns; got more: {clip(repr(extra), 60)}",
                    )
                yield start, {k: csv_value(v) for k, v in row.items() if v not in (None, "")}
            start = reader.line_num + 1


class RecordedRows:
    """The checked rows of a recorded-judgments file, read one at a time (each iteration reads the file
    again); a JSON-lines header's answer scales go to ``common`` and ``per``."""

    def __init__(self, path: str | Path, read: AnswerReader | None = None) -> None:
        self.path = check_input_file(path, "a recorded-judgments file (JSON lines or .csv)", error=DataError)
        self.read = read
        self.common: Scale | None = None
        self.per: dict[str, Scale] = {}

    def __iter__(self) -> Iterator[RecordedRow]:
        file, read = self.path, self.read
        self.common, self.per = None, {}
        if file.suffix.lower() == ".csv":
            for line, row in _csv_rows(file):
                yield parse_row(row, file, line, self.per, self.common, from_csv=True, read=read)
            return
        for k, (line, _, row) in enumerate(read_json_lines(file)):
            if k == 0 and isinstance(row, dict) and set(row) == {"recorded"}:
                self.common, self.per = _header(row["recorded"], file, line)
            else:
                yield parse_row(row, file, line, self.per, self.common, read=read)


def load_recorded_runs(path: str | Path, read: AnswerReader | None = None) -> dict[str, RecordedRun]:
    """Every judge in a recorded-judgments file, judge name -> run (``read`` as for :func:`parse_row`)."""
    reader = RecordedRows(path, read)
    file = reader.path
    rows = list(reader)
    if not rows:
        raise file_error(file, "expected at least one recorded judgment; the file holds none")
    scales = dict(reader.per)
    if reader.common is not None:
        for c in dict.fromkeys(r.criterion for r in rows):
            scales.setdefault(c, reader.common)
    return runs_from_rows(rows, str(file), scales, path=file)


def load_recorded(path: str | Path, judge: str | None = None) -> RecordedRun:
    """One judge's recorded judgments from a file: ``judge``, or the only one it holds."""
    runs = load_recorded_runs(path)
    if judge is None:
        if len(runs) > 1:
            raise DataError(f"{path} holds judgments of several judges {list(runs)}; name one")
        return next(iter(runs.values()))
    if judge not in runs:
        raise DataError(f"expected a judge of {path}, one of {list(runs)}; got {judge!r}")
    return runs[judge]


def row_to_dict(row: RecordedRow) -> dict[str, Any]:
    """One row in the file format (defaults left out; the verdict as the text preferred)."""
    given = row.model_dump(exclude_defaults=True, exclude={"line"})
    return {key: given[key] for key in _WRITTEN if key in given}


def save_recorded(runs: RecordedRun | Sequence[RecordedRun], path: str | Path) -> Path:
    """Write runs in the recorded-judgments format (JSON lines, or CSV for a ``.csv`` path); return the
    path."""
    todo = [runs] if isinstance(runs, RecordedRun) else list(runs)
    file = Path(path)
    rows = [row_to_dict(r) for run in todo for r in run.rows()]
    if file.suffix.lower() == ".csv":

        def fill_csv(handle: IO[str]) -> None:
            writer = csv.DictWriter(handle, fieldnames=list(RECORD_KEYS))
            writer.writeheader()
            for row in rows:
                if "meta" in row:
                    row = {**row, "meta": json.dumps(row["meta"], ensure_ascii=False)}
                writer.writerow({k: csv_cell(v) for k, v in row.items()})

        write_output(file, fill_csv, "the recorded-judgments file", newline="")
        return file
    scales = {c: s.model_dump(mode="json") for run in todo for c, s in run.scales.items()}

    def fill(handle: IO[str]) -> None:
        if scales:
            handle.write(json.dumps({"recorded": {"scales": scales}}) + "\n")
        for row in rows:
            handle.write(json.dumps(row, ensure_ascii=False) + "\n")

    write_output(file, fill, "the recorded-judgments file")
    return file
