"""``report.html``: the comparison as one self-contained page (nothing fetched: plots inline as base64 PNGs,
style and script inline), with a per-item view.

The page holds the markdown report's sections and, for every judged item, its label, each entry's score or
verdict (both orders), samples, raw answers, parse failures, error, flags and the exact prompt of its first
request. The view sorts and filters without a server; the address carries the view
(``report.html#filter=failures&sort=disagreement``; ``q=`` searches, ``open=1`` / ``open=<item id>`` opens
items, ``prompt=1`` their prompts, ``view=items`` shows the view alone, ``page=N`` its N-th page). Above
:data:`INLINE_ITEMS` items the view travels as gzip-compressed blocks the page unpacks a page at a time.
Everything from the user is HTML-escaped; the script reads only attributes this module writes.

Size: over 600 lines because the page's style sheet and script (JavaScript and CSS that must travel inside
the one file) live beside the Python that writes the markup they read.
"""

from __future__ import annotations

import base64
import html
import json
import math
import re
import zlib
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from mitigate.errors import MitigateError
from mitigate.judge import Judgment
from mitigate.measures import presented_to_text
from mitigate.report._first_prompt import PROMPT_KEY
from mitigate.report._results import CompareResult, EntryResult, ItemRecord, score_of
from mitigate.report._tables import split_row

HTML_FILE = "report.html"

FILTERS = {
    "all": "all items",
    "disagree": "entries disagree",
    "flips": "order flips",
    "failures": "parse failures or errors",
    "flagged": "flagged (e.g. needs_human)",
}
"""The per-item view's filters: URL value -> label."""

_SORTS = {"item": "benchmark order", "disagreement": "disagreement, most first", "human": "human label"}


def _e(value: Any) -> str:
    return html.escape(str(value), quote=True)


def _inline(text: str, images: dict[str, str]) -> str:
    """Escape ``text`` and render the inline markdown render_markdown emits: bold, italics, code, images."""
    out: list[str] = []
    for k, part in enumerate(re.split(r"(`[^`]*`)", text)):
        part = html.unescape(part)  # the markdown's entities (md_escape), escaped again below
        if k % 2:
            out.append(f"<code>{_e(part[1:-1])}</code>")
            continue
        s = _e(part)
        s = re.sub(r"!\[([^\]]*)\]\(([^)\s]+)\)", lambda m: _image(m.group(2), m.group(1), images), s)
        s = re.sub(r"\*\*(.+?)\*\*", r"<strong>\1</strong>", s)
        s = re.sub(r"(?<![\w*])\*([^*\s][^*]*?)\*(?![\w*])", r"<em>\1</em>", s)
        out.append(s)
    return "".join(out)


def _image(name: str, alt: str, images: dict[str, str]) -> str:
    data = images.get(html.unescape(name))
    return "" if data is None else f'<img alt="{alt}" src="data:image/png;base64,{data}">'


def _slug(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-") or "section"


def markdown_to_html(md: str, images: dict[str, str] | None = None) -> str:
    """The markdown subset :func:`~mitigate.report.render_markdown` writes (headings, paragraphs, bullet
    lists, tables, bold, italics, code, images), as escaped HTML; an image is inlined from ``images`` (file
    name -> base64 PNG) or dropped when it was not written."""
    pics = images or {}
    out: list[str] = []
    lines = md.splitlines()
    i = 0
    while i < len(lines):
        line = lines[i]
        if not line.strip():
            i += 1
            continue
        if heading := re.match(r"^(#{1,4}) (.*)$", line):
            level, text = len(heading.group(1)), heading.group(2)
            out.append(f'<h{level} id="{_slug(text)}">{_inline(text, pics)}</h{level}>')
            i += 1
            continue
        if line.startswith("|"):
            block = []
            while i < len(lines) and lines[i].startswith("|"):
                block.append(lines[i])
                i += 1
            out.append(_table_html(block, pics))
            continue
        if line.startswith("- "):
            items: list[str] = []
            while i < len(lines) and (lines[i].startswith("- ") or lines[i].startswith("  - ")):
                if lines[i].startswith("  - ") and items:
                    items[-1] += f"<ul><li>{_inline(lines[i][4:], pics)}</li></ul>"
                else:
                    items.append(_inline(lines[i][2:], pics))
                i += 1
            out.append("<ul>" + "".join(f"<li>{x}</li>" for x in items).replace("</ul><ul>", "") + "</ul>")
            continue
        para = []
        while i < len(lines) and lines[i].strip() and not re.match(r"^(#{1,4} |\||- )", lines[i]):
            para.append(lines[i])
            i += 1
        out.append(f"<p>{_inline(' '.join(para), pics)}</p>")
    return "\n".join(out)


def _table_html(block: list[str], images: dict[str, str]) -> str:
    rows = [split_row(ln) for ln in block]
    aligns = ["right" if c.endswith(":") else "left" for c in rows[1]] if len(rows) > 1 else []
    body = rows[2:] if len(rows) > 1 and all(set(c) <= set("-: ") for c in rows[1]) else rows[1:]

    def cell(tag: str, text: str, k: int) -> str:
        align = ' class="num"' if k < len(aligns) and aligns[k] == "right" else ""
        return f"<{tag}{align}>{_inline(text, images)}</{tag}>"

    head = "".join(cell("th", c, k) for k, c in enumerate(rows[0]))
    trs = "".join("<tr>" + "".join(cell("td", c, k) for k, c in enumerate(r)) + "</tr>" for r in body)
    return (
        '<div class="scroll"><table '
        f'class="summary"><thead><tr>{head}</tr></thead><tbody>{trs}</tbody></table></div>'
    )


def _num(v: float | None, digits: int = 3) -> str:
    if v is None or not math.isfinite(v):
        return "–"
    return f"{v:.{digits}f}".rstrip("0").rstrip(".") if not float(v).is_integer() else f"{v:g}"


def _orders(j: Judgment) -> dict[str, str | None]:
    """Order -> the text (A, B, tie) the verdict given in that order prefers; empty when not judged in both
    orders."""
    orders = j.meta.get("orders")
    if not isinstance(orders, dict):
        return {}
    out: dict[str, str | None] = {}
    for order in ("original", "swapped"):
        if order in orders:
            try:
                out[order] = presented_to_text(orders[order], order)
            except MitigateError:  # an unreadable recorded verdict is shown as none
                out[order] = None
    return out


def _flipped(j: Judgment) -> bool:
    o = _orders(j)
    return len(o) == 2 and None not in o.values() and o["original"] != o["swapped"]


def _failed(j: Judgment) -> bool:
    return bool(j.failures) or j.error is not None


def _normalised(v: float | None, e: EntryResult) -> float | None:
    if v is None or not math.isfinite(v):
        return None
    span = e.scale.max - e.scale.min
    return (v - e.scale.min) / span if span else None


def item_view(result: CompareResult) -> list[dict[str, Any]]:
    """One dict per item: its ``index`` and the keys the view sorts and filters by (its record and
    judgments are read by index as each item is written, never held together).

    ``disagreement``: the spread of the entries' scores, each scaled to [0, 1] by its own scale (one entry:
    its distance from the human label), or the number of distinct verdicts minus 1 (one entry: 1 when it
    differs from gold); ``flip``: some entry's verdicts differ between the two orders.
    """
    rows = []
    hs = result.human_scale
    for i, rec in enumerate(result.items):
        judgments = [e.judgments[i] for e in result.entries]
        if result.task == "pairwise":
            given = [v for j in judgments if (v := presented_to_text(j.verdict, "original")) is not None]
            if len(result.entries) > 1:
                disagreement = float(len(set(given)) - 1) if given else 0.0
            else:
                disagreement = float(bool(given) and rec.gold is not None and given[0] != rec.gold)
        else:
            normed = [
                _normalised(score_of(j, result.criterion), e)
                for j, e in zip(judgments, result.entries, strict=True)
            ]
            vals = [v for v in normed if v is not None]
            if len(result.entries) > 1:
                disagreement = max(vals) - min(vals) if len(vals) > 1 else 0.0
            else:
                span = hs.max - hs.min
                disagreement = (
                    abs(vals[0] - (rec.human - hs.min) / span)
                    if vals and rec.human is not None and span
                    else 0.0
                )
        rows.append(
            {
                "index": i,
                "disagreement": disagreement,
                "flip": any(_flipped(j) for j in judgments),
                "failure": any(_failed(j) for j in judgments),
                "flagged": any(j.flags for j in judgments),
            }
        )
    return rows


def _answer_cell(result: CompareResult, j: Judgment) -> str:
    marks = []
    if result.task == "pairwise":
        v = presented_to_text(j.verdict, "original")
        text = _e(v) if v is not None else '<span class="bad">none</span>'
        o = _orders(j)
        if o:
            text += (
                f' <span class="orders{" flip" if _flipped(j) else ""}">('
                f"{_e(o.get('original') or '–')} / {_e(o.get('swapped') or '–')})</span>"
            )
    else:
        s = score_of(j, result.criterion)
        text = _e(_num(s)) if s is not None else '<span class="bad">none</span>'
    if j.failures:
        marks.append(f'<span class="bad" title="parse failures">✗{len(j.failures)}</span>')
    if j.error:
        marks.append('<span class="bad" title="error">error</span>')
    marks += [f'<span class="flag">{_e(f)}</span>' for f in j.flags]
    return text + (" " + " ".join(marks) if marks else "")


def _prompt_html(j: Judgment) -> str:
    messages = j.meta.get(PROMPT_KEY)
    if not messages:
        return '<p class="muted">prompt not recorded</p>'
    parts = []
    for m in messages:
        role = m.get("role", "?") if isinstance(m, dict) else "?"
        content = m.get("content", "") if isinstance(m, dict) else str(m)
        parts.append(f'<div class="msg"><span class="role">{_e(role)}</span><pre>{_e(content)}</pre></div>')
    return "".join(parts)


def _reads_probabilities(describe: Any) -> bool:
    """True when some prompt judge of the entry reads its score from token probabilities
    (``scoring="expected"``)."""
    if isinstance(describe, dict):
        config = describe.get("config")
        if isinstance(config, dict) and config.get("scoring") == "expected":
            return True
        return any(_reads_probabilities(v) for v in describe.values())
    if isinstance(describe, list):
        return any(_reads_probabilities(v) for v in describe)
    return False


def _details_html(result: CompareResult, e: EntryResult, j: Judgment) -> str:
    rows: list[tuple[str, str]] = []
    if _reads_probabilities(e.describe) and result.task != "pairwise":
        how = "the probability-weighted score over the scale, read from the token probabilities at the score "
        rows.append(("how scored", how + "position; the raw answer is the text generated"))
    if o := _orders(j):
        by_order = "; ".join(f"{k}: prefers {v or 'none'}" for k, v in o.items())
        rows.append(("verdict by order", by_order + (" (flip)" if _flipped(j) else "")))
    rows += [
        (f"samples ({crit})", ", ".join(_num(s) for s in samples))
        for crit, samples in j.samples.items()
        if len(samples) > 1 or crit != result.criterion
    ]
    if isinstance(vs := j.meta.get("verdict_samples"), dict):
        rows.append(("verdict samples", "; ".join(f"{k}: {', '.join(map(str, v))}" for k, v in vs.items())))
    if isinstance(per := j.meta.get("perturbations"), dict):
        by_version = ", ".join(f"{k}: {v if v is not None else 'none'}" for k, v in per.items())
        rows.append(("under perturbed guidelines", by_version))
    rows += [("flags", ", ".join(j.flags))] if j.flags else []
    rows += [("error", j.error)] if j.error else []
    table = "".join(f"<tr><th>{_e(k)}</th><td>{_e(v)}</td></tr>" for k, v in rows)
    failures = "".join(
        f'<li><span class="bad">parse failure</span> (sample {f.sample}, {_e(f.criterion)}): '
        f"{_e(f.reason)}<pre>{_e(f.raw)}</pre></li>"
        for f in j.failures
    )
    raws = "".join(f"<pre>{_e(r)}</pre>" for r in j.raw) or '<p class="muted">no raw answer</p>'
    return (
        f'<div class="entry"><h4>{_e(e.name)}</h4>'
        + (f"<table class='kv'>{table}</table>" if table else "")
        + (f"<ul class='failures'>{failures}</ul>" if failures else "")
        + f"<details open><summary>raw answer{'s' if len(j.raw) != 1 else ''} "
        f"({len(j.raw)})</summary>{raws}</details>" + '<details class="prompt"><summary>prompt of the first '
        f"request</summary>{_prompt_html(j)}</details></div>"
    )


def _label(result: CompareResult, rec: ItemRecord) -> str:
    return (rec.gold or "–") if result.task == "pairwise" else _num(rec.human)


def _item_text(rec: ItemRecord) -> str:
    texts = (("output" if rec.output_b is None else "A", rec.output), ("B", rec.output_b))
    return "".join(
        f'<div class="msg"><span class="role">{_e(k)}</span><pre>{_e(v)}</pre></div>'
        for k, v in texts
        if v is not None
    )


INLINE_ITEMS = 1000
"""Up to this many items the per-item view is plain HTML in the page; above it, compressed blocks the page's
script unpacks a page at a time (so a report of 100,000 items stays a few MB)."""

BLOCK_ITEMS = 100
"""Items per compressed block of a large report's per-item view."""

PAGE_ITEMS = 100
"""Items the per-item view shows per page."""


def _item_body(result: CompareResult, r: dict[str, Any], ncols: int) -> str:
    """One item's ``<tbody>``: its row (labels, each entry's answer, disagreement) and its hidden detail
    row."""
    rec, judged = result.items[r["index"]], [(e, e.judgments[r["index"]]) for e in result.entries]
    keys = _keys(result, r)
    cells = "".join(f"<td>{_answer_cell(result, j)}</td>" for _, j in judged)
    details = "".join(_details_html(result, e, j) for e, j in judged)
    return (
        f'<tbody class="item" data-index="{r["index"]}" data-disagreement="{r["disagreement"]:.6f}" '
        f'data-human="{keys[2]}" data-flip="{int(r["flip"])}" '
        f'data-failure="{int(r["failure"])}" data-flagged="{int(r["flagged"])}" '
        f'data-search="{_e(keys[6])}"><tr class="row"><td class="idc"><button class="toggle" '
        f'type="button" aria-expanded="false">▸</button> <span class="id">{_e(rec.id)}</span></td><td '
        f'class="doc">{_e(rec.doc_id or "–")}</td><td>{_e(_system(rec, result.task == "pairwise"))}</td><td '
        f'class="num">{_e(_label(result, rec))}</td>{cells}<td '
        f'class="num">{r["disagreement"]:.2f}</td></tr><tr class="detail" hidden><td '
        f'colspan="{ncols}">{_item_text(rec)}{details}</td></tr></tbody>'
    )


def _system(rec: ItemRecord, pairwise: bool) -> str:
    if pairwise and (rec.system or rec.system_b):
        return f"{rec.system or '?'} vs {rec.system_b or '?'}"
    return rec.system or "–"


def _keys(result: CompareResult, r: dict[str, Any]) -> list[Any]:
    """What the view sorts, filters and searches an item by, without its HTML (a large report's index)."""
    rec = result.items[r["index"]]
    human = 0 if result.task == "pairwise" else rec.human if rec.human is not None else -1e9
    search = " ".join([rec.id, rec.doc_id or "", _system(rec, result.task == "pairwise")]).lower()
    flags = [int(r["flip"]), int(r["failure"]), int(r["flagged"])]
    return [r["index"], round(r["disagreement"], 6), human, *flags, search, rec.id]


def _packed(parts: Iterable[str]) -> str:
    """The texts as one JSON array, gzip-compressed and base64-encoded (the page unpacks it with
    DecompressionStream), compressed as it is written so the uncompressed text is never held whole."""
    z = zlib.compressobj(9, zlib.DEFLATED, 31)
    chunks = [z.compress(b"[")]
    for k, part in enumerate(parts):
        chunks.append(
            z.compress(((", " if k else "") + json.dumps(part, ensure_ascii=False)).encode("utf-8"))
        )
    chunks.append(z.compress(b"]"))
    chunks.append(z.flush())
    return base64.b64encode(b"".join(chunks)).decode("ascii")


def _per_item_data(result: CompareResult, rows: list[dict[str, Any]], ncols: int, block: int) -> str:
    """A large report's per-item view as script data: the index of every item and its HTML in compressed
    blocks."""
    keys = _packed(json.dumps(_keys(result, r)) for r in rows)
    blocks = [
        _packed(_item_body(result, r, ncols) for r in rows[k : k + block]) for k in range(0, len(rows), block)
    ]
    return json.dumps({"keys": keys, "block": block, "blocks": blocks})


def _per_item_html(
    result: CompareResult, *, inline_items: int = INLINE_ITEMS, block_items: int = BLOCK_ITEMS
) -> tuple[str, str]:
    """The per-item view's section and its script data (``null`` when the items are plain HTML in the
    section)."""
    rows = item_view(result)
    pairwise = result.task == "pairwise"
    counts = {"all": len(rows), "disagree": sum(r["disagreement"] > 0 for r in rows)}
    keys = {"flips": "flip", "failures": "failure", "flagged": "flagged"}  # filter -> item_view's key
    counts |= {f: sum(r[key] for r in rows) for f, key in keys.items()}
    options = "".join(f'<option value="{k}">{_e(v)} ({counts[k]})</option>' for k, v in FILTERS.items())
    sorts = "".join(f'<option value="{k}">{_e(v)}</option>' for k, v in _SORTS.items())
    label = "gold" if pairwise else "human"
    head = (
        f'<th data-sort="item">item</th><th>document</th><th>system{"s" if pairwise else ""}</th>'
        f'<th class="num" data-sort="human">{label}</th>'
        + "".join(f"<th>{_e(e.name)}</th>" for e in result.entries)
        + '<th class="num" data-sort="disagreement">disagreement</th>'
    )
    ncols = 5 + len(result.entries)
    packed = len(rows) > inline_items
    bodies = "" if packed else "".join(_item_body(result, r, ncols) for r in rows)
    data = _per_item_data(result, rows, ncols, block_items) if packed else "null"
    scale_note = (
        "Verdicts are the text preferred (A, B or tie); in brackets the verdict of each order "
        "(original / swapped) where the judge saw both."
        if pairwise
        else "Scores on each entry's own scale; disagreement is the spread of the entries' scores, each "
        "scaled to 0–1 by its own scale (with one entry: its distance from the human label)."
    )
    search_note = (
        f" With more than {inline_items:,} items the search looks in the item, document and system names."
        if packed
        else ""
    )
    section = (
        '<section id="per-item"><h2>Per item</h2>'
        f"<p>{_e(scale_note)} ✗n: parse failures. Click a row for samples, raw answers, failures and the "
        f"exact prompt. {PAGE_ITEMS} items a page.{_e(search_note)} The address keeps the view (e.g. "
        "<code>#filter=failures&amp;sort=disagreement</code>).</p>"
        '<div class="controls">'
        f'<label>show <select id="filter">{options}</select></label> '
        f'<label>sort by <select id="sort">{sorts}</select></label> '
        '<label>search <input id="search" type="search" placeholder="item, document, system"></label> '
        f'<span id="shown">{len(rows)} of {len(rows)} items shown</span>'
        '<span class="pager"><button id="prev" type="button">◂ previous</button> <span id="page"></span> '
        '<button id="next" type="button">next ▸</button></span></div>'
        f'<div class="scroll"><table id="items"><thead><tr>{head}</tr></thead>{bodies}</table></div>'
        "</section>"
    )
    return section, data


_STYLE = """
body{font:14px/1.45 system-ui,-apple-system,Segoe UI,Roboto,sans-serif;margin:0 auto;max-width:1200px;
  padding:0 16px 48px;color:#1d1d1f}
h1{font-size:22px;margin:18px 0 6px}h2{font-size:18px;margin:26px 0 8px;border-bottom:1px solid #ddd;
  padding-bottom:3px}
h3{font-size:15px;margin:18px 0 6px}h4{margin:8px 0 4px}
table{border-collapse:collapse;margin:6px 0}th,td{border:1px solid #d6d6d6;padding:3px 7px;
  vertical-align:top;text-align:left}
#items{width:100%}#items td{overflow-wrap:anywhere}#items td.doc,#items td.idc{max-width:230px}
th{background:#f3f4f6}td.num,th.num{text-align:right}.scroll{overflow-x:auto}
table.summary strong{color:#0b5d1e}
#warnings+ul li{background:#fff4e5;border-left:4px solid #e67e22;padding:3px 8px;margin:3px 0;list-style:none}
#bottom-line+ul li{background:#eef6ff;border-left:4px solid #3b6ea8;padding:3px 8px;margin:3px 0;
  list-style:none}
#warnings+ul,#bottom-line+ul{padding-left:0}
img{max-width:100%;border:1px solid #eee;margin:6px 0}
.controls{display:flex;gap:14px;flex-wrap:wrap;align-items:center;margin:8px 0;padding:6px 8px;
  background:#f7f7f9;border:1px solid #e3e3e8}
#shown{color:#555}#items th[data-sort]{cursor:pointer;text-decoration:underline dotted}
#items tr.row:hover{background:#fafbff}.toggle{border:0;background:none;cursor:pointer;padding:0 2px}
.bad{color:#b42318;font-weight:600}.flag{background:#fde68a;border-radius:3px;padding:0 4px;font-size:12px}
.orders{color:#666;font-size:12px}.orders.flip{color:#b42318;font-weight:600}.muted{color:#777}
pre{white-space:pre-wrap;word-break:break-word;background:#f6f8fa;padding:6px 8px;margin:4px 0;
  max-height:320px;overflow:auto;font-size:12px}
.entry{border-left:3px solid #3b6ea8;padding-left:8px;margin:8px 0}.msg .role{font-size:11px;color:#555;
  text-transform:uppercase}
table.kv th{width:190px;font-weight:500}
body.only-items>:not(#per-item){display:none}
"""

_SCRIPT = """
(function(){
  var table=document.getElementById('items');if(!table){return;}
  var PAGE=PAGE_ITEMS,packed=ITEMS;
  var filter=document.getElementById('filter'),sort=document.getElementById('sort'),
    search=document.getElementById('search');
  var shown=document.getElementById('shown'),pageText=document.getElementById('page');
  var prev=document.getElementById('prev'),next=document.getElementById('next');
  var recs=[],blocks={},page=0,ready;
  function unpack(b64){var bin=atob(b64),u=new Uint8Array(bin.length);for(var i=0;i<bin.length;i++){
    u[i]=bin.charCodeAt(i);}
    return new Response(new Blob([u]).stream().pipeThrough(new DecompressionStream('gzip')))
      .text().then(JSON.parse);}
  function wire(r,el){r.el=el;el.querySelector('tr.row').addEventListener('click',function(){toggle(el);});}
  if(packed){
    ready=(typeof DecompressionStream==='undefined')?Promise.reject(new Error('no DecompressionStream')):
      unpack(packed.keys).then(function(keys){
      recs=keys.map(function(k){k=JSON.parse(k);return {i:k[0],d:k[1],h:k[2],flip:k[3],fail:k[4],flag:k[5],
        s:k[6],id:k[7],el:null};});});
  }else{
    Array.prototype.forEach.call(table.querySelectorAll('tbody.item'),function(b){
      var r={i:+b.dataset.index,d:parseFloat(b.dataset.disagreement),h:parseFloat(b.dataset.human),
        flip:+b.dataset.flip,
        fail:+b.dataset.failure,flag:+b.dataset.flagged,s:b.dataset.search,
          id:b.querySelector('.id').textContent};
      wire(r,b);recs.push(r);});
    ready=Promise.resolve();}
  function fill(list){
    var need={};list.forEach(function(r){if(!r.el){need[Math.floor(r.i/packed.block)]=1;}});
    return Promise.all(Object.keys(need).map(function(k){
      if(blocks[k]){return blocks[k];}
      blocks[k]=unpack(packed.blocks[k]).then(function(html){var tpl=document.createElement('template');
        html.forEach(function(h,j){var r=recs[k*packed.block+j];if(!r.el){tpl.innerHTML=h;wire(r,
          tpl.content.firstElementChild);}});});
      return blocks[k];}));}
  function params(){var out={};var h=(location.hash||'').replace(/^#/,'');
    var q=(location.search||'').replace(/^\\?/,'');
    [q,h].forEach(function(s){s.split('&').forEach(function(kv){if(!kv){return;}var p=kv.split('=');
      out[decodeURIComponent(p[0])]=decodeURIComponent((p[1]||'').replace(/\\+/g,' '));});});return out;}
  function keep(r,f,q){
    var need={flips:'flip',failures:'fail',flagged:'flag'}[f];
    if((f==='disagree'&&!(r.d>0))||(need&&r[need]!==1)){return false;}
    if(q&&r.s.indexOf(q)<0&&!(r.el&&!packed&&r.el.textContent.toLowerCase().indexOf(q)>=0)){return false;}
    return true;}
  function apply(){
    var f=filter.value,s=sort.value,q=search.value.trim().toLowerCase();
    var order=recs.slice();
    if(s==='disagreement'){order.sort(function(a,b){return b.d-a.d||a.i-b.i;});}
    else if(s==='human'){order.sort(function(a,b){return a.h-b.h||a.i-b.i;});}
    else{order.sort(function(a,b){return a.i-b.i;});}
    var kept=order.filter(function(r){return keep(r,f,q);});
    var pages=Math.max(1,Math.ceil(kept.length/PAGE));page=Math.min(Math.max(page,0),pages-1);
    var slice=kept.slice(page*PAGE,(page+1)*PAGE),on={};slice.forEach(function(r){on[r.i]=1;});
    return fill(slice).then(function(){
      order.forEach(function(r){if(!r.el){return;}
        if(on[r.i]||!packed){table.appendChild(r.el);r.el.hidden=!on[r.i];}
        else if(r.el.parentNode){r.el.parentNode.removeChild(r.el);}});
      shown.textContent=kept.length+' of '+recs.length+' items shown';
      pageText.textContent='page '+(page+1)+' of '+pages;prev.disabled=page===0;next.disabled=page>=pages-1;
      table.setAttribute('data-filter',f);table.setAttribute('data-sort',s);table.setAttribute('data-page',
        page+1);
      var h='filter='+encodeURIComponent(f)+'&sort='+encodeURIComponent(s)+
        (q?'&q='+encodeURIComponent(q):'')+(page?'&page='+(page+1):'');
      try{if(history.replaceState&&location.hash!=='#'+h){history.replaceState(null,'','#'+h);}}catch(err){}
      return slice;});}
  function load(){var p=params();
    if(p.filter&&filter.querySelector('option[value="'+p.filter.replace(/"/g,'')+'"]')){
      filter.value=p.filter;}
    if(p.sort&&sort.querySelector('option[value="'+p.sort.replace(/"/g,'')+'"]')){sort.value=p.sort;}
    if(p.q!==undefined){search.value=p.q;}
    page=(parseInt(p.page,10)||1)-1;
    document.body.classList.toggle('only-items',p.view==='items');
    return ready.then(apply).then(function(slice){
      if(p.open){slice.forEach(function(r){if(p.open==='1'||r.id===p.open){toggle(r.el,true);
        if(p.prompt==='1'){Array.prototype.forEach.call(r.el.querySelectorAll('details.prompt'),function(d){
        d.open=true;});}}});}
    },function(err){
      shown.textContent='the per-item view could not be unpacked in this browser ('+err.message+')';});}
  function toggle(b,open){var d=b.querySelector('tr.detail');var btn=b.querySelector('.toggle');
    var o=open===undefined?d.hidden:open;d.hidden=!o;btn.textContent=o?'\\u25be':'\\u25b8';
      btn.setAttribute('aria-expanded',o?'true':'false');}
  function again(){page=0;apply();}
  filter.addEventListener('change',again);sort.addEventListener('change',again);
    search.addEventListener('input',again);
  prev.addEventListener('click',function(){page--;apply();});next.addEventListener('click',function(){page++;
    apply();});
  Array.prototype.forEach.call(table.querySelectorAll('th[data-sort]'),function(th){
    th.addEventListener('click',function(){sort.value=th.getAttribute('data-sort');again();});});
  window.addEventListener('hashchange',function(){var p=params();
    if(p.filter!==filter.value||p.sort!==sort.value||(parseInt(p.page,10)||1)!==page+1){load();}});
  load();
})();
""".replace("PAGE_ITEMS", str(PAGE_ITEMS))


def render_html(
    result: CompareResult,
    markdown: str,
    plots: Sequence[str | Path] = (),
    *,
    inline_items: int = INLINE_ITEMS,
    block_items: int = BLOCK_ITEMS,
) -> str:
    """The self-contained HTML page of a comparison: ``markdown`` (the report.md text) and the per-item view.

    ``plots`` are the PNG files written beside it (each one the markdown links is inlined; a link to another
    is dropped). Above ``inline_items`` items the per-item view travels as blocks of ``block_items`` items.
    """
    files = [Path(p) for p in plots]
    images = {p.name: base64.b64encode(p.read_bytes()).decode("ascii") for p in files if p.is_file()}
    head, sep, rest = markdown.partition("\n## Every measure")
    items, data = _per_item_html(result, inline_items=inline_items, block_items=block_items)
    body = markdown_to_html(head, images) + "\n" + items
    if sep:
        body += "\n" + markdown_to_html("## Every measure" + rest, images)
    title = f"Comparison: {result.benchmark} / {result.criterion}"
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        '<meta http-equiv="Content-Security-Policy" content="default-src \'none\'; img-src data:; '
        "style-src 'unsafe-inline'; script-src 'unsafe-inline'\">"
        f"<title>{_e(title)}</title><style>{_STYLE}</style></head><body>\n{body}\n"
        f"<script>var ITEMS={data};{_SCRIPT}</script>\n</body></html>\n"
    )
