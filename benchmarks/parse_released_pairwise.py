"""Every released pairwise judge answer read by mitigate, against the decision the release itself recorded.

LLMBar (``Dataset/**/evaluators/*/*/result.json``: GPT-4, ChatGPT, PaLM 2, LLaMA 2, Falcon ...
under every prompting strategy, on every set of the copy, FairEval's processed copy included)
and JudgeBench (its released outputs) are read with :func:`mitigate.replay._released_pairwise.parse_release`:
each raw answer in the answer format recovered from its strategy's prompt, as a live judge
would read it. For every answer that compares the two outputs, mitigate's reading is set beside
the release's own decision:

- ``agree``: both read the same verdict;
- ``contradict``: both read a verdict and they differ;
- ``only_release``: the release read a verdict, mitigate recorded a failure;
- ``only_mitigate``: mitigate read a verdict where the release read none;
- ``both_none``: neither read one.

Rating answers (one output rated alone) count as read or failed. ``--readings`` writes every
reading (one JSON line per answer, keyed by release, judge, template, item, order, stage, part)
and ``--baseline`` compares with such a file written before a change: every changed reading is
listed, grouped by (before, after) kind, with the end of its raw text.

Run: ``python benchmarks/parse_released_pairwise.py`` (the copies found by
:func:`mitigate.data._released_pairwise.release_copy`: ``$MITIGATE_LLMBAR_DIR`` and
``$MITIGATE_JUDGEBENCH_DIR``, else the data folder, else ``/work/ext/LLMBar`` and ``/work/ext/JudgeBench``;
a release that is absent is skipped). Writes ``benchmarks/results/parse_released_pairwise.json``.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from mitigate.data import read_judgebench, read_llmbar
from mitigate.data._released_pairwise import release_copy
from mitigate.replay._released_pairwise import parse_release

RESULTS = Path(__file__).resolve().parent / "results" / "parse_released_pairwise.json"
RELEASES = ("llmbar", "judgebench")


def kind(mine: str | None, theirs: str | None) -> str:
    """How mitigate's reading of one verdict answer stands to the release's decision."""
    if mine is None:
        return "both_none" if theirs is None else "only_release"
    if theirs is None:
        return "only_mitigate"
    return "agree" if mine == theirs else "contradict"


def readings(name: str, path: Path) -> list[dict[str, Any]]:
    """One row per released answer: its key, the release's decision, mitigate's reading and the raw text."""
    release = read_llmbar(path, sets="all") if name == "llmbar" else read_judgebench(path)
    parse = parse_release(release)
    rows = []
    for answer, got in zip(release.answers, parse.parsed, strict=True):
        key = "|".join(
            (
                name,
                answer.judge,
                answer.template,
                answer.item_id,
                answer.order,
                str(answer.stage),
                answer.part,
                str(answer.line),
            )
        )
        mine: str | float | None = got.verdict if answer.part == "verdict" else got.score
        rows.append(
            {
                "key": key,
                "judge": answer.judge,
                "template": answer.template,
                "part": answer.part,
                "release": answer.release_verdict,
                "mitigate": mine,
                "error": got.error,
                "kind": kind(got.verdict, answer.release_verdict)
                if answer.part == "verdict"
                else ("read" if got.score is not None else "failed"),
                "raw": answer.raw,
            }
        )
    return rows


def summary(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """Counts of each kind, overall and per template; agreement = agree / (agree + contradict)."""

    def counts(part: list[dict[str, Any]]) -> dict[str, Any]:
        c = Counter(r["kind"] for r in part)
        compared = c["agree"] + c["contradict"]
        out: dict[str, Any] = {"answers": len(part), **dict(sorted(c.items()))}
        if compared:
            out["agreement"] = round(c["agree"] / compared, 5)
        out["failures"] = c["only_release"] + c["both_none"] + c["failed"]
        return out

    by_template: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for r in rows:
        by_template[r["template"]].append(r)
    return {"all": counts(rows), "by_template": {k: counts(v) for k, v in sorted(by_template.items())}}


def changes(rows: list[dict[str, Any]], baseline: Path) -> dict[str, list[dict[str, Any]]]:
    """Every answer whose reading differs from the one in ``baseline``, grouped by "before kind -> after
    kind"."""
    before = {}
    with baseline.open(encoding="utf-8") as fh:
        for line in fh:
            row = json.loads(line)
            before[row["key"]] = row
    out: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for r in rows:
        old = before.get(r["key"])
        if old is None or old["mitigate"] == r["mitigate"]:
            continue
        out[f"{old['kind']} -> {r['kind']}"].append(
            {
                "key": r["key"],
                "release": r["release"],
                "before": old["mitigate"],
                "after": r["mitigate"],
                "error": r["error"],
                "raw_tail": r["raw"][-400:],
            }
        )
    return dict(sorted(out.items()))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", type=Path, default=RESULTS)
    ap.add_argument("--readings", type=Path, help="write every reading here (JSON lines)")
    ap.add_argument(
        "--baseline", type=Path, help="a --readings file of an earlier run: list every changed reading"
    )
    args = ap.parse_args()
    t0 = time.perf_counter()
    rows: list[dict[str, Any]] = []
    payload: dict[str, Any] = {
        "script": "parse_released_pairwise.py",
        "command": "python benchmarks/parse_released_pairwise.py",
        "releases": {},
    }
    for name in RELEASES:
        path = release_copy(name)
        if path is None:
            print(f"{name}: no copy found (set $MITIGATE_{name.upper()}_DIR); skipped")
            continue
        got = readings(name, path)
        rows += got
        payload["releases"][name] = {"path": str(path), **summary(got)}
        s = payload["releases"][name]["all"]
        print(
            f"{name}: {s['answers']} answers; agree {s.get('agree', 0)}, contradict "
            f"{s.get('contradict', 0)}, only release {s.get('only_release', 0)}, only mitigate "
            f"{s.get('only_mitigate', 0)}, neither {s.get('both_none', 0)}; ratings read "
            f"{s.get('read', 0)}, failed {s.get('failed', 0)}; agreement {s.get('agreement')}",
            flush=True,
        )
    if args.readings is not None:
        with args.readings.open("w", encoding="utf-8") as fh:
            for r in rows:
                fh.write(json.dumps(r) + "\n")
    if args.baseline is not None:
        changed = changes(rows, args.baseline)
        payload["changed"] = {k: {"n": len(v), "answers": v} for k, v in changed.items()}
        for k, v in changed.items():
            print(f"changed {k}: {len(v)}")
    payload["seconds"] = round(time.perf_counter() - t0, 1)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(payload, indent=1) + "\n", encoding="utf-8")
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
