"""compare's Δ Spearman test: a permutation of raw scores only between entries answering in one currency.

The permutation test swaps the two entries' scores on each item. That is a valid null only when
the scores are exchangeable; an entry on 1–10 against one on 1–5, or a continuous expected score
against integer answers, are not, and the p-value then comes from the paired bootstrap. A rank
correlation does not move when an entry's scores are re-expressed by an increasing map, so a
valid test of its difference gives one p-value for every such re-expression.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest

from mitigate import Item
from mitigate.data import Benchmark
from mitigate.diff import diff_judgments, render_diff
from mitigate.harness import Entry, compare
from mitigate.judge import Judgment
from mitigate.measures import paired_statistic_difference, swap_refusal
from mitigate.report import render_markdown, render_summary
from mitigate.scale import Scale

N = 48

pytestmark = pytest.mark.filterwarnings("ignore:benchmark 'toy' labels 'q' on 1 to 5")


def _data() -> tuple[Benchmark, np.ndarray, np.ndarray, np.ndarray]:
    """Human scores, a noisy 1–5 judge A and a less noisy latent judge B (on 1–5 before any re-expression)."""
    rng = np.random.default_rng(7)
    h = rng.normal(size=N)
    a = np.clip(np.round(3 + h + rng.normal(size=N)), 1, 5)
    latent = np.clip(3 + h + 0.5 * rng.normal(size=N), 1, 5)
    human = np.clip(np.round(3 + h), 1, 5)
    items = tuple(
        Item(id=f"i{k}", system=f"S{k % 3}", doc_id=f"d{k}", output=f"text {k}", human={"q": float(v)})
        for k, v in enumerate(human)
    )
    return Benchmark(name="toy", items=items, criteria=("q",)), a, latent, human


def _recorded(
    path: Path, bench: Benchmark, judge: str, scores: np.ndarray, scale: tuple[float, float]
) -> Entry:
    rows = [{"recorded": {"scales": {"q": list(scale)}}}]
    rows += [
        {"item_id": it.id, "judge": judge, "criterion": "q", "score": float(s)}
        for it, s in zip(bench.items, scores, strict=True)
    ]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return Entry.from_recorded(path, "q")


async def _compared(tmp_path: Path) -> tuple[dict, np.ndarray, np.ndarray, np.ndarray, object]:
    bench, a, latent, human = _data()
    b5 = np.round(latent)
    entries = [
        _recorded(tmp_path / "a.jsonl", bench, "A", a, (1, 5)),
        _recorded(tmp_path / "b5.jsonl", bench, "B on 1-5", b5, (1, 5)),
        _recorded(tmp_path / "b10.jsonl", bench, "B on 1-10", 2 * b5 - 1, (1, 10)),
        _recorded(tmp_path / "b100.jsonl", bench, "B on 0-100", 25 * b5 - 25, (0, 100)),
        _recorded(tmp_path / "bexp.jsonl", bench, "B expected", latent, (1, 5)),
    ]
    result = await compare(
        benchmark=bench,
        criterion="q",
        entries=entries,
        out_dir=tmp_path / "out",
        progress=False,
        n_boot=300,
        n_perm=600,
        seed=0,
    )
    return {e.name: e.comparison for e in result.entries}, a, b5, human, result


@pytest.mark.slow
async def test_delta_spearman_p_does_not_depend_on_the_scale_an_entry_answers_on(tmp_path: Path) -> None:
    by, *_ = await _compared(tmp_path)
    ten, hundred = by["B on 1-10"], by["B on 0-100"]
    assert ten.observed == pytest.approx(hundred.observed)  # the same ranks
    assert ten.test == hundred.test == "paired bootstrap"
    assert ten.p_value == pytest.approx(hundred.p_value)  # swapping raw scores: 0.18 and 0.29 (0.063 on 1-5)
    assert (ten.ci_low, ten.ci_high) == pytest.approx((hundred.ci_low, hundred.ci_high))
    assert "different scales (1 to 5 by 1 and 1 to 10 by 1)" in ten.test_reason


@pytest.mark.slow
async def test_entries_on_one_scale_keep_the_permutation_p_and_a_continuous_entry_gets_the_bootstrap(
    tmp_path: Path,
) -> None:
    by, a, b5, human, _ = await _compared(tmp_path)
    same = by["B on 1-5"]
    direct = paired_statistic_difference(
        b5, a, human, "spearman", test="permutation", n_boot=300, n_perm=600, seed=0
    )
    assert same.test == "paired permutation" and same.test_reason is None
    assert (same.observed, same.p_value, same.ci_low, same.ci_high) == (
        direct.observed,
        direct.p_value,
        direct.low,
        direct.high,
    )
    cont = by["B expected"]
    assert cont.test == "paired bootstrap" and "between the scale's points" in cont.test_reason


@pytest.mark.slow
async def test_the_report_the_summary_and_the_comparisons_frame_name_the_test(tmp_path: Path) -> None:
    pytest.importorskip("pandas")
    *_, result = await _compared(tmp_path)
    text = render_markdown(result)
    section = text[text.index("## Against A") :]
    assert "| test |" in section and "paired permutation | 48 |" in section
    assert "paired bootstrap | 48 | bootstrap test: the entries answer on different scales" in section
    summary = render_summary(result)
    table = summary[summary.index("| entry |") :]
    # the table; the bottom lines say it too
    assert table.count("bootstrap p=") == 3 and table.count(", p=") == 1
    frame = result.to_pandas("comparisons")
    assert list(frame["entry"]) == ["B on 1-5", "B on 1-10", "B on 0-100", "B expected"]
    assert list(frame["test"]) == ["paired permutation"] + ["paired bootstrap"] * 3
    assert frame["test_reason"].isna().tolist() == [True, False, False, False]


def test_swap_refusal_accepts_one_currency_and_names_what_differs() -> None:
    five = Scale(min=1, max=5)
    assert swap_refusal([1, 2, 5], [3, 4, None], five, five) is None
    assert swap_refusal([1.5, 2.2], [3.7, 4.1], five, five) is None  # both continuous on one range
    assert "different scales" in swap_refusal([1, 2], [1, 2], five, Scale(min=1, max=5, step=0.5))
    assert "between the scale's points" in swap_refusal([1, 2], [1.5, 2], five, five)


def test_diff_names_the_test_of_each_measure() -> None:
    bench, a, latent, _ = _data()
    ja = [Judgment(item_id=it.id, scores={"q": float(s)}) for it, s in zip(bench.items, a, strict=True)]
    jb = [Judgment(item_id=it.id, scores={"q": float(s)}) for it, s in zip(bench.items, latent, strict=True)]
    report = diff_judgments(bench.items, ja, jb, criterion="q", n_boot=100, n_perm=200)
    assert report.measure("spearman").test == "paired bootstrap"
    assert report.measure("failure-rate").test == "paired sign-flip permutation"
    assert not math.isnan(report.measure("mean-score").p)
    text = render_diff(report)
    assert "(p: paired bootstrap test)" in text and "(p: paired sign-flip permutation test)" in text
