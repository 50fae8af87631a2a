"""A small comparison for the report tests: entry names holding ``|``, an item text holding ``<script>``.

Twelve items on four documents and three systems. ``base | plain`` answers 6 - q (and
"unreadable" where q = 3: three parse failures); ``consistency-hint | x`` answers q; both
run through prompt judges, so their prompts are recorded. ``replayed`` is a judge that
sends no request (its prompt is "not recorded") and flags the S1 items ``needs_human``.
"""

from __future__ import annotations

import asyncio
import re
from pathlib import Path

from mitigate import Item, JudgePrompt, PromptJudge
from mitigate.data import Benchmark
from mitigate.harness import Entry, compare
from mitigate.judge import Judge, Judgment
from mitigate.lm import FakeLM, LMRequest
from mitigate.report import CompareResult
from mitigate.strategies import Pipeline

TEMPLATE = "Rate the text from 1 to 5.\nText: {{output}}\nScore:"
SCRIPT = "<script>alert('x')</script>"
SYSTEM_HTML = "S2 <img src=x onerror=alert(1)>"
"""The third system's name: HTML, which the reports show as text."""
NAMES = ("base | plain", "consistency-hint | x", "replayed")


def bench() -> Benchmark:
    items = []
    for d in range(4):
        for s in range(3):
            q = 1 + (d * 2 + s * 3) % 5
            text = f"q={q} " + "w " * (2 + d + s) + (SCRIPT if (d, s) == (0, 0) else "")
            items.append(
                Item(
                    id=f"S{s}/d{d}",
                    system=f"S{s}" if s < 2 else SYSTEM_HTML,
                    doc_id=f"d{d}",
                    output=text,
                    human={"quality": q + 0.2 * s},
                )
            )
    return Benchmark(name="toy", items=tuple(items), criteria=("quality",))


def _quality(request: LMRequest) -> int:
    return int(re.search(r"q=(\d)", request.messages[-1].content).group(1))


def reversed_answer(request: LMRequest) -> str:
    q = _quality(request)
    return "unreadable" if q == 3 else f"Score: {6 - q}"


def true_answer(request: LMRequest) -> str:
    return f"Score: {_quality(request)}"


class Replayed(Judge):
    """Answers the true quality without any request; flags system S1 for a human."""

    async def judge(self, item: Item) -> Judgment:
        q = float(item.output[2])
        return Judgment(
            item_id=item.id,
            scores={"quality": q},
            raw=(f"recorded {q:g}",),
            flags=("needs_human",) if item.system == "S1" else (),
        )

    def map_leaves(self, fn):  # pragma: no cover - not used
        return self

    def describe(self) -> dict:
        return {"kind": "replayed"}


def entries() -> list[Entry]:
    prompt = JudgePrompt.from_template(TEMPLATE, criterion="quality")
    return [
        Entry.from_pipeline(NAMES[0], PromptJudge(prompt, FakeLM(reversed_answer)), Pipeline()),
        Entry.from_pipeline(NAMES[1], PromptJudge(prompt, FakeLM(true_answer)), "consistency-hint"),
        Entry(name=NAMES[2], judge=Replayed()),
    ]


def run_compare(out: Path, **kwargs) -> CompareResult:
    """The comparison written into ``out`` (reports included unless ``report=False``)."""
    return asyncio.run(
        compare(
            benchmark=bench(),
            criterion="quality",
            entries=entries(),
            out_dir=out,
            progress=False,
            n_boot=50,
            n_perm=100,
            **kwargs,
        )
    )
