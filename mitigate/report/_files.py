"""A comparison on disk: the report stage (:func:`write_report`), ``results.json`` (strict JSON, written an
item at a time), and reading ``results.json`` back."""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import IO, Any

from pydantic import BaseModel

from mitigate.errors import DataError
from mitigate.paths import loads_json, open_regular, write_output
from mitigate.report._html import HTML_FILE, render_html
from mitigate.report._markdown import render_markdown
from mitigate.report._plots import render_plots
from mitigate.report._results import CompareResult, EntryResult
from mitigate.report._tables import md_escape

RESULTS_FILE = "results.json"
REPORT_FILE = "report.md"


def _strict(value: Any) -> Any:
    """NaN/inf -> None, recursively, so the file is strict JSON."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {k: _strict(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_strict(v) for v in value]
    return value


def dump_results(result: CompareResult) -> str:
    """``result`` as strict JSON text (undefined values as null)."""
    return (
        json.dumps(_strict(result.model_dump(mode="json")), indent=1, allow_nan=False, ensure_ascii=False)
        + "\n"
    )


_STREAMED = frozenset({"items", "entries", "judgments"})
"""The long fields of a result (one element per item, or per entry) that :func:`write_results` writes one
element at a time."""


def _dumps(value: Any, depth: int) -> str:
    """``value`` as ``json.dumps(..., indent=1)`` writes it nested ``depth`` levels deep."""
    text = json.dumps(_strict(value), indent=1, allow_nan=False, ensure_ascii=False)
    return text.replace("\n", "\n" + " " * depth)  # JSON strings hold no raw newline: only the layout's


def _write_model(write: Callable[[str], Any], model: BaseModel, depth: int) -> None:
    names = list(type(model).model_fields)
    long = [n for n in names if n in _STREAMED]
    rest = model.model_dump(mode="json", exclude=set(long))
    pad = " " * (depth + 1)
    write("{")
    for k, name in enumerate(names):
        write(("," if k else "") + "\n" + pad + json.dumps(name, ensure_ascii=False) + ": ")
        if name in long:
            _write_list(write, getattr(model, name), depth + 1)
        else:
            write(_dumps(rest[name], depth + 1))
    write("\n" + " " * depth + "}")


def _write_list(write: Callable[[str], Any], values: Sequence[Any], depth: int) -> None:
    if not values:
        write("[]")
        return
    pad = " " * (depth + 1)
    write("[")
    for k, value in enumerate(values):
        write(("," if k else "") + "\n" + pad)
        if isinstance(value, EntryResult):
            _write_model(write, value, depth + 1)
        else:
            write(_dumps(value.model_dump(mode="json") if isinstance(value, BaseModel) else value, depth + 1))
    write("\n" + " " * depth + "]")


def write_results(result: CompareResult, fh: IO[str]) -> None:
    """Write ``result`` into ``fh`` as :func:`dump_results` gives it, one item and one judgment at a time, so
    the text (tens of MB at tens of thousands of items) is never held whole."""
    _write_model(fh.write, result, 0)
    fh.write("\n")


def load_results(path: str | Path) -> CompareResult:
    """Read a ``results.json`` (or the folder holding one) back into a :class:`CompareResult`."""
    p = Path(path)
    if p.is_dir():
        p = p / RESULTS_FILE
    if not (p.exists() or p.is_symlink()):
        raise DataError(
            f"expected a {RESULTS_FILE} written by 'mitigate compare' at {p}; found none", path=str(p)
        )
    try:
        with open_regular(p, "r", f"the {RESULTS_FILE}") as fh:  # a FIFO or a device is refused, never read
            data = loads_json(fh.read())
    except OSError as exc:
        raise DataError(
            f"expected a readable {RESULTS_FILE} at {p}; got {exc.strerror or type(exc).__name__}",
            path=str(p),
        ) from None
    except json.JSONDecodeError as exc:
        raise DataError(
            f"{p}: expected JSON written by 'mitigate compare'; got invalid JSON ({exc})", path=str(p)
        ) from None
    try:
        return CompareResult.model_validate(data)
    except ValueError as exc:
        raise DataError(
            f"{p}: expected the results of 'mitigate compare'; the file does not match ({exc})", path=str(p)
        ) from None


def write_report(result: CompareResult, folder: str | Path) -> list[Path]:
    """The report stage: ``results.json``, ``report.md``, ``report.html`` and the plots written into
    ``folder``, each once; the paths written (``results.sqlite``, the judgments as columns, is the judge
    stage's)."""
    out = Path(folder)
    out.mkdir(parents=True, exist_ok=True)
    path = out / RESULTS_FILE
    write_output(path, lambda fh: write_results(result, fh), "the results file")
    written = render_report(out, html=True, result=result)
    return [path, *written]


def render_report(
    folder: str | Path, *, html: bool = False, result: CompareResult | None = None
) -> list[Path]:
    """Re-render ``report.md`` and the plots (and with ``html``, ``report.html``) in ``folder`` from
    ``results.json`` (or from ``result``, when the caller holds it: a results.json written through a device
    cannot be read back); the plots first, so the reports hold only the plots that were written."""
    out = Path(folder)
    result = load_results(out) if result is None else result
    plots = render_plots(result, out)
    md = out / REPORT_FILE
    text = render_markdown(result, plots=[p.name for p in plots]) + (
        f"\n{md_escape(result.appendix)}\n" if result.appendix else ""
    )
    write_output(md, text, "the report")
    written = [md, *plots]
    if html:
        page = out / HTML_FILE
        write_output(page, render_html(result, text, plots), "the HTML report")
        written.insert(1, page)
    return written
