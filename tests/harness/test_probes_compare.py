"""`compare(..., probes=...)`: a "Bias probes" table per pipeline entry shows which mitigation removes which
bias."""

from __future__ import annotations

import re
from pathlib import Path

from mitigate import Item, JudgePrompt, PromptJudge
from mitigate.data import Benchmark
from mitigate.harness import Entry, compare
from mitigate.lm import FakeLM, LMRequest
from mitigate.probes import resolve_probes
from mitigate.prompt import PromptMessage
from mitigate.registry import register
from mitigate.report import load_results, render_markdown, write_report
from mitigate.strategies import Pipeline, PromptMitigation

TEMPLATE = "Rate the text from 1 to 5.\nText: {{output}}\nScore:"
MARK = "[[read the content only]]"


@register("mitigation", "test-probe-content-only")
class ContentOnly(PromptMitigation):
    """Test-only: appends a marker that makes the fake judge ignore everything but the content."""

    def apply(self, prompt: JudgePrompt) -> JudgePrompt:
        return prompt.map_templates(lambda m: PromptMessage(role=m.role, template=m.template + "\n" + MARK))


def _answer(request: LMRequest) -> str:
    text = request.messages[-1].content
    q = int(re.search(r"q=(\d)", text).group(1))
    cited = any(s in text for s in ("(Source:", "(See:", "(Reference:", "(Cited from:"))
    return f"Score: {min(5, q + 1) if cited and MARK not in text else q}"


def _bench() -> Benchmark:
    items = tuple(
        Item(
            id=f"S{s}/d{d}",
            system=f"S{s}",
            doc_id=f"d{d}",
            output=f"q={1 + (d + s) % 4} text {d}.",
            human={"quality": float(1 + (d + s) % 4)},
        )
        for d in range(5)
        for s in range(3)
    )
    return Benchmark(name="toy", items=items, criteria=("quality",))


async def test_compare_with_probes_reports_the_bias_the_baseline_has_and_the_mitigation_removes(
    tmp_path: Path,
) -> None:
    lm = FakeLM(_answer)
    base = PromptJudge(JudgePrompt.from_template(TEMPLATE, criterion="quality"), lm)
    entries = [
        Entry.from_pipeline("baseline", base, Pipeline()),
        Entry.from_pipeline("content-only", base, ContentOnly()),
    ]
    result = await compare(
        benchmark=_bench(),
        criterion="quality",
        entries=entries,
        out_dir=tmp_path,
        progress=False,
        n_boot=100,
        probes=resolve_probes("authority,bandwagon"),
    )
    base_rows, mit_rows = (e.probes["rows"] for e in result.entries)
    assert [r["effect"]["detected"] for r in base_rows] == [True, False]
    assert [r["effect"]["detected"] for r in mit_rows] == [False, False]
    assert (tmp_path / "probes" / "baseline.jsonl").read_text().count("\n") == 2 * 15
    write_report(result, tmp_path)
    again = load_results(tmp_path / "results.json")
    text = render_markdown(again)
    section = text.split("## Bias probes", 1)[1]
    assert "### baseline" in section and "### content-only" in section
    assert "| authority | up | 15 | 0.00" in section and "moved by the bias" in section
