"""The labels file out and labels back in: the benchmark's JSONL format and CSV (out), and the task and
annotation formats of Label Studio and Argilla (tasks out, annotations back in).

Tasks sent to another tool are blind as the page is: each is keyed by its position in the labels file
(``key``), holds only the texts (a pair in the order the page shows it) and no id, system or judge value; the
annotations that come back are mapped through the labels file, checked against the scale, and written to it
as the page writes them.

- Label Studio: a JSON list of tasks ``{"data": {"key": ..., "output": ...}}`` and a labelling config (XML,
  one ``Choices`` per criterion, named after it) to import them with; back, its JSON export: each task's
  ``data.key`` and the last annotation not cancelled, whose ``result`` regions (``from_name`` the criterion)
  hold ``{"choices": [...]}``, ``{"rating": n}`` or ``{"number": n}``.
- Argilla (2.x): a JSON list of records ``{"id": key, "fields": {...}}`` for ``dataset.records.log``, with a
  ``RatingQuestion`` or ``LabelQuestion`` per criterion; back, ``dataset.records.to_list()`` (``responses``:
  criterion -> ``[{"value": ..., "user_id": ...}]``) or its ``flatten=True`` form (``CRITERION.responses``).
"""

from __future__ import annotations

import csv
import json
import re
from pathlib import Path
from typing import Any, Literal
from xml.sax.saxutils import quoteattr

from mitigate.errors import DataError
from mitigate.label._session import LabelSession
from mitigate.paths import write_output

EXPORT_FORMATS: tuple[str, ...] = ("jsonl", "csv", "label-studio", "argilla")


def _field(name: str) -> str:
    return "input_" + re.sub(r"\W+", "_", name)


def _fields(session: LabelSession, position: int) -> dict[str, str]:
    view = session.view(position, blind=True)
    fields = {_field(k): v for k, v in view["inputs"].items()}
    if len(view["outputs"]) == 2:
        fields |= {"output_a": view["outputs"][0], "output_b": view["outputs"][1]}
    else:
        fields["output"] = view["outputs"][0]
    return fields


def label_studio_config(session: LabelSession) -> str:
    """The Label Studio labelling config for the exported tasks."""
    first = _fields(session, 0)
    parts = ["<View>"]
    parts += [
        f"  <Header value={quoteattr(k)}/>\n  <Text name={quoteattr(k)} value={quoteattr('$' + k)}/>"
        for k in first
    ]
    target = next(iter(first))
    for c in session.criteria:
        choices = session.view(0, blind=True)["criteria"][session.criteria.index(c)]["choices"]
        parts.append(f"  <Header value={quoteattr(c)}/>")
        parts.append(
            f'  <Choices name={quoteattr(c)} toName={quoteattr(target)} choice="single" required="true">'
        )
        parts += [
            f"    <Choice value={quoteattr(f'{v:g}' if isinstance(v, float) else str(v))}/>" for v in choices
        ]
        parts.append("  </Choices>")
    return "\n".join([*parts, "</View>"]) + "\n"


def export_labels(session: LabelSession, fmt: str, path: Path) -> list[Path]:
    """Write the session in ``fmt`` to ``path`` (Label Studio: its config beside, ``.xml``); the paths
    written."""
    rows = session.rows
    if fmt == "jsonl":
        from mitigate.data import apply_labels, save_jsonl

        bench = session.bench
        ids = {r["id"] for r in rows}
        bench = bench.model_copy(update={"items": tuple(it for it in bench.items if it.id in ids)})
        for c in session.criteria:
            bench = apply_labels(
                bench, c, {r["id"]: r["labels"][c] for r in rows if r["labels"][c] is not None}
            )
        return [save_jsonl(bench, path)]
    if fmt == "csv":
        one = len(session.criteria) == 1
        names = ["label"] if one else [f"label.{c}" for c in session.criteria]
        head = ["id", *names, "weight", "probability", "group", "order", "labeller", "at"]

        def write(handle: Any) -> None:
            w = csv.writer(handle)
            w.writerow(head)
            for r in rows:
                values = ["" if r["labels"][c] is None else r["labels"][c] for c in session.criteria]
                kept = [r[k] for k in ("weight", "probability", "group", "order")]
                w.writerow([r["id"], *values, *kept, r["labeller"] or "", r["at"] or ""])

        return [write_output(path, write, "the labels CSV", newline="")]
    if fmt == "label-studio":
        tasks = [{"data": {"key": str(i), **_fields(session, i)}} for i in range(len(rows))]
        config = path.with_suffix(".xml")
        write_output(config, label_studio_config(session), "the Label Studio config")
        return [
            write_output(path, json.dumps(tasks, ensure_ascii=False, indent=1) + "\n", "the tasks"),
            config,
        ]
    if fmt == "argilla":
        records = [{"id": str(i), "fields": _fields(session, i)} for i in range(len(rows))]
        return [write_output(path, json.dumps(records, ensure_ascii=False, indent=1) + "\n", "the records")]
    raise DataError(f"expected an export format, one of {list(EXPORT_FORMATS)}; got {fmt!r}")


def _value(session: LabelSession, raw: Any) -> Any:
    """A tool's answer as the page's: a pair's choice as it is, a score as a number."""
    if isinstance(raw, list):
        raw = raw[0] if len(raw) == 1 else raw
    if session.bench.pairwise or not isinstance(raw, str):
        return raw
    try:
        return float(raw)
    except ValueError:
        return raw


def _label_studio(task: dict[str, Any]) -> tuple[Any, dict[str, Any], str | None]:
    kept = [a for a in task.get("annotations") or [] if not a.get("was_cancelled")]
    if not kept:
        return task.get("data", {}).get("key"), {}, None
    last = kept[-1]
    values: dict[str, Any] = {}
    for region in last.get("result") or []:
        value = region.get("value") or {}
        for kind in ("choices", "rating", "number"):
            if kind in value:
                values[region.get("from_name")] = value[kind]
    who = last.get("completed_by")
    return task.get("data", {}).get("key"), values, None if who is None else str(who)


def _argilla(record: dict[str, Any], criteria: tuple[str, ...]) -> tuple[Any, dict[str, Any], str | None]:
    values: dict[str, Any] = {}
    who = None
    for c in criteria:
        nested = (record.get("responses") or {}).get(c)
        if nested:
            values[c], who = nested[-1].get("value"), nested[-1].get("user_id") or who
        elif record.get(f"{c}.responses"):
            values[c] = record[f"{c}.responses"][-1]
            users = record.get(f"{c}.responses.users") or []
            who = users[-1] if users else who
    return record.get("id"), values, None if who is None else str(who)


def import_labels(session: LabelSession, path: Path, fmt: Literal["label-studio", "argilla"]) -> int:
    """Add the labels of a Label Studio export or Argilla records to the session (its file rewritten); the
    number of items labelled. DataError naming the file and the task for a key not in the labels file or a
    label off the scale."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise DataError(f"{path}: expected a JSON list of {fmt} tasks; got {exc}", path=str(path)) from None
    if isinstance(data, dict):
        data = data.get("records", data.get("tasks"))
    if not isinstance(data, list):
        raise DataError(
            f"{path}: expected a JSON list of {fmt} tasks; got {type(data).__name__}", path=str(path)
        )
    count = 0
    for number, entry in enumerate(data, 1):
        if not isinstance(entry, dict):
            raise DataError(
                f"{path}: task {number}: expected an object; got {type(entry).__name__}", path=str(path)
            )
        key, values, who = (
            _label_studio(entry) if fmt == "label-studio" else _argilla(entry, session.criteria)
        )
        try:
            position = int(str(key))
            if not 0 <= position < len(session.rows):
                raise ValueError
        except ValueError:
            raise DataError(
                f"{path}: task {number}: expected a key from 0 to {len(session.rows) - 1} (the exported "
                f"tasks'); got {str(key)[:40]!r}",
                path=str(path),
            ) from None
        values = {c: _value(session, v) for c, v in values.items() if c in session.criteria and v is not None}
        if not values:
            continue
        try:
            session.label(position, values, labeller=who)
        except DataError as exc:
            raise DataError(f"{path}: task {number} (key {position}): {exc}", path=str(path)) from None
        count += 1
    return count
