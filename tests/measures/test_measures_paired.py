"""The paired difference of two judges, its interval and test, shared by compare and
diff."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest

from mitigate import Item, JudgePrompt, PromptJudge
from mitigate.data import Benchmark
from mitigate.diff import diff_judgments
from mitigate.errors import ConfigError
from mitigate.harness import Entry, compare
from mitigate.lm import FakeLM, LMRequest
from mitigate.measures import paired_mean_difference, paired_statistic_difference, spearman


def _pairs(n: int = 60, seed: int = 0) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    human = rng.integers(1, 6, n).astype(float)
    a = np.clip(human + rng.normal(0, 1.5, n), 1, 5).round()
    b = np.clip(human + rng.normal(0, 0.5, n), 1, 5).round()
    return a, b, human


def test_the_mean_difference_is_on_complete_pairs_with_an_interval_around_it() -> None:
    a = np.array([1.0, 0.0, 1.0, math.nan, 0.0, 1.0, 0.0, 1.0])
    b = np.array([1.0, 1.0, 1.0, 1.0, math.nan, 1.0, 1.0, 1.0])
    d = paired_mean_difference(b, a, n_boot=500, n_perm=500, seed=1)
    keep = np.isfinite(a) & np.isfinite(b)
    assert d.n == int(keep.sum()) == 6
    assert d.observed == pytest.approx(b[keep].mean() - a[keep].mean())
    assert d.a == pytest.approx(a[keep].mean()) and d.b == pytest.approx(b[keep].mean())
    assert d.low is not None and d.high is not None and d.low <= d.observed <= d.high
    assert 0 < d.p_value <= 1
    none = paired_mean_difference([1.0, math.nan], [math.nan, 1.0], min_n=1)
    assert not none.ok and none.n == 0 and "needs at least 1" in (none.reason or "")
    assert paired_mean_difference(b, a, n_boot=0).low is None


def test_clusters_flip_and_resample_whole_clusters() -> None:
    # two documents, each with 20 items that all moved up by one: items alone look certain, documents do not
    b = np.ones(40)
    a = np.zeros(40)
    items = paired_mean_difference(b, a, n_boot=200, n_perm=2000, seed=0)
    docs = paired_mean_difference(b, a, clusters=["d1"] * 20 + ["d2"] * 20, n_boot=200, n_perm=2000, seed=0)
    assert items.observed == docs.observed == 1.0
    assert items.p_value < 0.001
    assert docs.p_value > 0.2  # 2 documents: 4 sign patterns, half of them as extreme as the observed one


def test_the_bootstrap_test_rejects_exactly_when_zero_is_outside_the_interval() -> None:
    for seed in range(6):
        a, b, human = _pairs(seed=seed)
        d = paired_statistic_difference(
            b, a, human, spearman, test="bootstrap", n_boot=400, n_perm=400, seed=seed
        )
        assert d.ok and d.low is not None and d.high is not None
        assert (d.p_value < 0.05) == (not d.low <= 0 <= d.high)
        assert d.observed == pytest.approx(spearman(b, human) - spearman(a, human))


def test_a_statistic_difference_says_why_it_has_no_value() -> None:
    a, b, human = _pairs(n=2)
    short = paired_statistic_difference(b, a, human, "spearman", n_perm=50)
    assert not short.ok and short.n == 2 and "at least 3" in (short.reason or "")
    flat = paired_statistic_difference(
        np.full(10, 3.0), np.arange(10.0), np.arange(10.0), "spearman", n_perm=50
    )
    assert not flat.ok and flat.reason
    with pytest.raises(ConfigError, match="'test' parameter of paired_statistic_difference"):
        paired_statistic_difference(b, a, human, test="t-test")  # type: ignore[arg-type]


# ----------------------------------------------------------------------------- compare and diff share them

TEMPLATE = "Rate the text from 1 to 5.\nText: {{output}}\nScore:"


def _bench() -> Benchmark:
    items = tuple(
        Item(
            id=f"S{s}/d{d}",
            system=f"S{s}",
            doc_id=f"d{d}",
            output=f"q={1 + (d + 2 * s) % 5} {d} {s}",
            human={"q": float(1 + (d + s) % 5)},
        )
        for d in range(8)
        for s in range(4)
    )
    return Benchmark(name="toy", items=items, criteria=("q",))


def _echo(request: LMRequest) -> str:
    return "Score: " + request.messages[-1].content.split("q=")[1][0]


def _off(request: LMRequest) -> str:
    d, s = request.messages[-1].content.split("q=")[1].split()[1:3]
    return f"Score: {1 + (int(d) * 3 + int(s)) % 5}"


async def test_compare_and_diff_take_their_paired_numbers_from_the_same_functions(tmp_path: Path) -> None:
    bench = _bench()
    prompt = JudgePrompt.from_template(TEMPLATE, criterion="q")
    entries = [
        Entry.from_pipeline("off", PromptJudge(prompt, FakeLM(_off)), "baseline"),
        Entry.from_pipeline("echo", PromptJudge(prompt, FakeLM(_echo)), "baseline"),
    ]
    result = await compare(
        benchmark=bench,
        criterion="q",
        entries=entries,
        out_dir=tmp_path,
        progress=False,
        n_boot=300,
        n_perm=400,
        seed=2,
    )
    first, second = (e.scores("q") for e in result.entries)
    human = [it.human["q"] for it in bench.items]
    c = result.entries[1].comparison
    d = paired_statistic_difference(
        second, first, human, "spearman", test="permutation", n_boot=300, n_perm=400, seed=2
    )
    assert c is not None and (c.observed, c.ci_low, c.ci_high, c.p_value, c.n) == (
        d.observed,
        d.low,
        d.high,
        d.p_value,
        d.n,
    )
    report = diff_judgments(
        list(bench.items),
        result.entries[0].judgments,
        result.entries[1].judgments,
        criterion="q",
        n_boot=300,
        n_perm=400,
        seed=2,
    )
    docs = [it.doc_id for it in bench.items]
    mean = paired_mean_difference(second, first, clusters=docs, n_boot=300, n_perm=400, seed=2)
    m = report.measure("mean-score")
    assert (m.delta, m.low, m.high, m.p, m.n) == (mean.observed, mean.low, mean.high, mean.p_value, mean.n)
    rho = paired_statistic_difference(
        second, first, human, spearman, test="bootstrap", clusters=docs, n_boot=300, n_perm=400, seed=2
    )
    s = report.measure("spearman")
    assert (s.delta, s.low, s.high, s.p) == (rho.observed, rho.low, rho.high, rho.p_value)
    assert all(
        x is not None and math.isfinite(x) for x in (c.observed, c.p_value, m.delta, m.p, s.delta, s.p)
    )
