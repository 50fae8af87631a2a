"""compare on a partly labelled benchmark: agreement on the labelled items only, and corrected estimates per
system.

Labels are hidden on a seeded share of a fully labelled benchmark (``hide_labels``), so the
estimates can be checked against ``mitigate.estimators._estimate`` on the same labels, and the
agreement measures against the same measures on the labelled items alone.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from mitigate import Item, JudgePrompt, PromptJudge
from mitigate.data import Benchmark, hide_labels
from mitigate.estimators import columns_from_items, estimate, estimate_columns, judge_values
from mitigate.harness import CompareConfig, Entry, compare
from mitigate.harness._measuring import REMEDIES
from mitigate.lm import FakeLM, LMRequest
from mitigate.measures import item_correlation
from mitigate.paths import data_dir
from mitigate.report import load_results, render_markdown, render_summary

TEMPLATE = "Rate the text from 1 to 5.\nText: {{output}}\nScore:"


def _bench(docs: int = 15, systems: int = 3) -> Benchmark:
    items = tuple(
        Item(
            id=f"S{s}/d{d}",
            system=f"S{s}",
            doc_id=f"d{d}",
            output=f"q={1 + (d * 7 + s * 3) % 5} d{d} s{s} " + "w " * ((d + s) % 6),
            human={"q": float(min(5, 1 + (d * 7 + s * 3) % 5 + s % 2))},
        )
        for d in range(docs)
        for s in range(systems)
    )
    return Benchmark(name="toy", items=items, criteria=("q",))


def _answer(request: LMRequest) -> str:
    """One below the hidden quality; no score at all for the text of S1/d2 (a parse failure)."""
    q = int(re.search(r"q=(\d)", request.messages[-1].content).group(1))
    return "nothing" if " d2 s1 " in request.messages[-1].content else f"Score: {max(1, q - 1)}"


def _hidden(fraction: float = 0.4, seed: int = 3) -> tuple[Benchmark, dict[str, float]]:
    """The toy benchmark with a seeded share of each system's labels hidden; S1/d2 keeps its label."""
    hidden, truth = hide_labels(_bench(), "q", fraction=fraction, seed=seed, group=lambda it: str(it.system))
    items = tuple(
        it.model_copy(update={"human": {"q": truth[it.id]}}) if it.id == "S1/d2" else it
        for it in hidden.items
    )
    return hidden.model_copy(update={"items": items}), truth


async def test_agreement_is_measured_on_the_labelled_items_and_an_unlabelled_item_is_no_failure(
    tmp_path: Path,
) -> None:
    hidden, _ = _hidden()
    labelled = [it for it in hidden.items if "q" in it.human]
    assert 0 < len(labelled) < len(hidden.items)
    judge = PromptJudge(JudgePrompt.from_template(TEMPLATE, criterion="q"), FakeLM(_answer))
    result = await compare(
        benchmark=hidden,
        criterion="q",
        entries=[Entry.from_pipeline("plain", judge, "baseline")],
        out_dir=tmp_path,
        progress=False,
        n_boot=100,
        n_perm=200,
    )
    e = result.entries[0]
    assert result.settings["n_labelled"] == len(labelled)
    rho = e.measures["spearman-item"]
    scored = {j.item_id: s for j, s in zip(e.judgments, e.scores("q"), strict=True)}
    failed_labelled = sum(1 for it in labelled if scored[it.id] is None)
    assert failed_labelled == 1  # the judge fails on one labelled item: that one is a failure
    assert rho.n + rho.n_failed == len(labelled) and rho.n_failed == failed_labelled
    expected = item_correlation(
        [scored[it.id] for it in labelled], [it.human["q"] for it in labelled], "spearman"
    )
    assert rho.value == pytest.approx(expected.value)
    length = e.measures["length-spearman"]  # reads no label: every item
    assert length.n + length.n_failed == len(hidden.items)
    text = render_markdown(result)
    assert (
        f"Only {len(labelled)} of the {len(hidden.items)} items carry a human label on 'q': agreement "
        "with humans"
    ) in text
    assert "an unlabelled item is not counted as a failure" in text


async def test_each_entry_gets_its_corrected_estimate_per_system_in_every_report(tmp_path: Path) -> None:
    pd = pytest.importorskip("pandas")
    hidden, _ = _hidden()
    base = PromptJudge(JudgePrompt.from_template(TEMPLATE, criterion="q"), FakeLM(_answer))
    entries = [
        Entry.from_pipeline("plain", base, "baseline"),
        Entry.from_pipeline("ten", base, "granularity(scale=1-10)"),
    ]
    with pytest.warns(Warning, match="ask for 1 to 10"):
        result = await compare(
            benchmark=hidden,
            criterion="q",
            entries=entries,
            out_dir=tmp_path,
            progress=False,
            n_boot=50,
            n_perm=100,
        )
    assert result.settings["estimate"] == "ppi"
    for e in result.entries:
        assert e.estimate is not None and e.estimate_note is None
        values, missing = judge_values(e.judgments, hidden.items, "q")
        cols = columns_from_items(
            list(hidden.items),
            "q",
            values,
            benchmark="toy",
            judge=e.name,
            label_scale=hidden.scale_for("q"),
            judge_scale=e.scale,
            judge_missing=missing,
        )
        # mitigate.estimators._estimate's numbers, unchanged; the notes suggest only what compare offers
        assert e.estimate == estimate_columns(cols, method="ppi", remedies=REMEDIES)
        assert [g.group for g in e.estimate.groups] == ["S0", "S1", "S2"]
        assert all(g.estimate.bias_corrected and g.judge is not None for g in e.estimate.groups)
    ten = result.entries[1].estimate
    assert ten is not None and any("1 to 10" in n for n in ten.notes)  # the raw mean is on the judge's scale
    # results.json keeps them, and reads them back
    assert load_results(tmp_path).entries[1].estimate == ten
    stored = json.loads((tmp_path / "results.json").read_text())["entries"][0]["estimate"]
    assert stored["method"] == "ppi" and len(stored["groups"]) == 3
    # markdown (the part the CLI prints too) and HTML
    summary = render_summary(result)
    assert "## Corrected estimates per system" in summary and "### ten" in summary
    g = result.entries[0].estimate.groups[0]
    row = (
        f"| S0 | {g.n} | {g.n_labelled} | {g.judge.estimate:.3f} | {g.estimate.estimate:.3f} "
        f"[{g.estimate.low:.3f}, {g.estimate.high:.3f}] |"
    )
    assert row in summary
    assert "Corrected estimates per system" in (tmp_path / "report.html").read_text()
    # to_pandas: one row per entry and system, beside the raw mean
    frame = result.to_pandas("estimates")
    assert isinstance(frame, pd.DataFrame) and len(frame) == 6
    first = frame.iloc[0]
    assert (first["entry"], first["system"], first["method"]) == ("plain", "S0", "ppi")
    assert first["estimate"] == pytest.approx(g.estimate.estimate) and first["raw_mean"] == pytest.approx(
        g.judge.estimate
    )
    assert first["n_labelled"] == g.n_labelled


async def test_a_system_that_cannot_be_estimated_is_said_so_and_a_fully_labelled_one_gets_none(
    tmp_path: Path,
) -> None:
    bench = _bench()
    sparse, _ = hide_labels(bench, "q", per_group=1, seed=0, group=lambda it: str(it.system))
    judge = PromptJudge(JudgePrompt.from_template(TEMPLATE, criterion="q"), FakeLM(_answer))
    result = await compare(
        benchmark=sparse,
        criterion="q",
        entries=[Entry.from_pipeline("plain", judge, "baseline")],
        out_dir=tmp_path / "a",
        progress=False,
        n_boot=0,
        n_perm=50,
    )
    e = result.entries[0]
    assert e.estimate is None and e.estimate_note and "S0" in e.estimate_note
    assert f"No corrected estimate: {e.estimate_note}" in render_summary(result)
    full = await compare(
        benchmark=bench,
        criterion="q",
        entries=[Entry.from_pipeline("plain", judge, "baseline")],
        out_dir=tmp_path / "b",
        progress=False,
        n_boot=0,
        n_perm=50,
    )
    assert full.entries[0].estimate is None and "estimate" not in full.settings
    shown = render_markdown(full)
    assert "Corrected estimates" not in shown and "items carry a human label" not in shown
    off = await compare(
        CompareConfig(
            benchmark=sparse,
            criterion="q",
            entries=(Entry.from_pipeline("plain", judge, "baseline"),),
            out_dir=tmp_path / "c",
            progress=False,
            n_boot=0,
            n_perm=50,
            estimate=None,
        )
    )
    assert off.entries[0].estimate is None and "Corrected estimates" not in render_markdown(off)


async def test_no_label_at_all_says_agreement_cannot_be_measured(tmp_path: Path) -> None:
    bench = _bench(docs=4)
    bare = bench.model_copy(
        update={"items": tuple(it.model_copy(update={"human": {}}) for it in bench.items)}
    )
    judge = PromptJudge(JudgePrompt.from_template(TEMPLATE, criterion="q"), FakeLM(_answer))
    result = await compare(
        benchmark=bare,
        criterion="q",
        entries=[Entry.from_pipeline("plain", judge, "baseline")],
        out_dir=tmp_path,
        progress=False,
        n_boot=0,
        n_perm=50,
    )
    assert result.settings["n_labelled"] == 0 and not result.entries[0].measures["spearman-item"].ok
    assert "No judged item carries a human label on 'q': agreement with humans cannot be measured" in (
        render_markdown(result)
    )


@pytest.mark.slow
@pytest.mark.skipif(
    not (data_dir() / "summeval_llm_summeval").is_dir(), reason="released SummEval judges absent"
)
async def test_released_judges_on_summeval_with_hidden_labels_match_mitigate_estimate(tmp_path: Path) -> None:
    from mitigate.data import load
    from mitigate.replay import ReleasedJudge

    bench = load("summeval")
    hidden, truth = hide_labels(bench, "coherence", per_group=10, seed=1, group=lambda it: str(it.system))
    names = ("chatgpt-rts", "gpt4-rts")
    result = await compare(
        benchmark=hidden,
        criterion="coherence",
        entries=[Entry.from_released(n, "coherence") for n in names],
        out_dir=tmp_path,
        progress=False,
        n_boot=0,
        n_perm=50,
    )
    assert result.settings["n_labelled"] == 120
    for name, e in zip(names, result.entries, strict=True):
        # the recorded run, read again
        alone = estimate(hidden, "coherence", ReleasedJudge(name, "coherence").recorded)
        assert e.estimate is not None
        assert [
            (g.group, g.estimate.estimate, g.estimate.low, g.estimate.high) for g in e.estimate.groups
        ] == [(g.group, g.estimate.estimate, g.estimate.low, g.estimate.high) for g in alone.groups]
        assert e.measures["spearman-item"].n == 120 and e.measures["spearman-item"].n_failed == 0
    # the corrected estimates cover more of the systems' mean expert labels than the judges' raw means
    for e in result.entries:
        assert e.estimate is not None
        means = {
            g.group: sum(truth[it.id] for it in bench.items if it.system == g.group) / g.n
            for g in e.estimate.groups
        }
        covered = sum(g.estimate.low <= means[g.group] <= g.estimate.high for g in e.estimate.groups)
        raw = sum(
            g.judge.low <= means[g.group] <= g.judge.high for g in e.estimate.groups if g.judge is not None
        )
        assert covered >= 10 and covered > raw
