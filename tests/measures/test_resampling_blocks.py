"""Bootstrap intervals and permutation tests drawn a block of resamples at a time give the numbers one block
gives.

The resampling statistics hold at most ``stats.CHUNK_CELLS`` resampled values at once, so their
memory stays bounded at any number of items; each test below computes the same statistic with the
blocks as large as the data (one block) and as small as one resample row, and asserts every number
is identical.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from mitigate.measures import _stats as stats
from mitigate.measures import batched_nanmean, paired_mean_difference, paired_statistic_difference


def _data(n: int = 97, seed: int = 3) -> tuple[np.ndarray, np.ndarray, np.ndarray, list[str]]:
    rng = np.random.default_rng(seed)
    human = rng.integers(1, 6, n).astype(float)
    a = np.clip(human + rng.integers(-1, 2, n), 1, 5).astype(float)
    b = np.clip(human + rng.integers(-2, 3, n), 1, 5).astype(float)
    a[::11] = np.nan
    docs = [f"d{k // 4}" for k in range(n)]
    return a, b, human, docs


def _all(a: np.ndarray, b: np.ndarray, h: np.ndarray, docs: list[str]) -> list[object]:
    return [
        stats.bootstrap_ci("spearman", a, h, n_boot=200, seed=1),
        stats.bootstrap_ci("pearson", a, h, n_boot=200, seed=1),
        stats.bootstrap_ci(lambda x: float(np.nanmean(x)), a, n_boot=50, seed=2),
        stats.bootstrap_ci(batched_nanmean, b - a, n_boot=200, seed=2),
        stats.paired_permutation_test(a, b, h, "spearman", n_perm=300, seed=4).model_dump(),
        stats.paired_permutation_test(a, b, h, "pearson", n_perm=300, seed=4, groups=docs).model_dump(),
        stats.paired_permutation_test(a, b, h, "kendall", n_perm=40, seed=4).model_dump(),
        stats.permutation_test_mean_diff(a, b, n_perm=300, seed=5).model_dump(),
        stats.permutation_test_mean_diff(a, b, n_perm=300, seed=5, paired=True, groups=docs).model_dump(),
        paired_mean_difference(b, a, n_boot=200, n_perm=300, seed=6).model_dump(),
        paired_statistic_difference(b, a, h, "spearman", n_boot=200, n_perm=300, seed=7).model_dump(),
        paired_statistic_difference(
            b, a, h, "spearman", test="bootstrap", clusters=docs, n_boot=100, n_perm=150, seed=7
        ).model_dump(),
    ]


def test_resampling_a_row_at_a_time_gives_the_numbers_of_one_block(monkeypatch: pytest.MonkeyPatch) -> None:
    a, b, h, docs = _data()
    whole = _all(a, b, h, docs)
    monkeypatch.setattr(stats, "CHUNK_CELLS", 1)  # one resample row per block
    assert stats.row_chunks(300, 97) == [1] * 300
    assert repr(_all(a, b, h, docs)) == repr(whole)  # repr: NaN compares equal to NaN
    monkeypatch.setattr(stats, "CHUNK_CELLS", 97 * 7)  # blocks of 7 rows, the last one shorter
    assert stats.row_chunks(300, 97)[-1] == 300 % 7
    assert repr(_all(a, b, h, docs)) == repr(whole)


def test_blocks_cover_every_resample_and_bound_the_values_held() -> None:
    for total, width in ((1000, 20_000), (5000, 100_000), (3, 1), (1, 10**8)):
        blocks = stats.row_chunks(total, width)
        assert sum(blocks) == total and min(blocks) >= 1
        assert max(blocks) * width <= max(stats.CHUNK_CELLS, width)


@pytest.mark.parametrize("levels", [(5, 5), (3, 9), (2, 2), (10, 4)])
def test_kendall_resampled_from_contingency_tables_equals_scipy_to_the_last_bit(
    levels: tuple[int, int], monkeypatch: pytest.MonkeyPatch
) -> None:
    rng = np.random.default_rng(sum(levels))
    n = 301
    h = rng.integers(0, levels[1], n).astype(float) / 2
    j = np.clip(h * 2 + rng.integers(-2, 3, n), 0, levels[0] - 1).astype(float)
    j[::13] = np.nan
    idx = np.random.default_rng(9).integers(0, n, size=(40, n))
    x, y = stats.complete_pairs(j, h)
    idx = idx[:, : len(x)] % len(x)
    tables = stats._kendall_on_codes(len(np.unique(x)), len(np.unique(y)))(
        np.unique(x, return_inverse=True)[1][idx], np.unique(y, return_inverse=True)[1][idx]
    )
    looped = np.array([stats.kendall(x[i], y[i]) for i in idx])
    assert repr(tables.tolist()) == repr(looped.tolist())
    fast = stats.bootstrap_ci("kendall", j, h, n_boot=300, seed=4)
    monkeypatch.setattr(stats, "KENDALL_TABLE_CELLS", 0)  # every resample through scipy
    assert stats.bootstrap_ci("kendall", j, h, n_boot=300, seed=4) == fast


def test_kendall_of_a_constant_resample_is_nan_as_scipy_says() -> None:
    stat = stats._kendall_on_codes(2, 2)
    out = stat(np.array([[0, 0, 0, 0], [0, 1, 0, 1]]), np.array([[0, 1, 1, 0], [0, 1, 0, 1]]))
    assert np.isnan(out[0]) and out[1] == 1.0


@pytest.mark.slow
def test_compare_reports_the_numbers_the_implementation_before_reported(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Measures, per-system values, comparisons, human rows and corrected estimates of three small comparisons
    equal what the code before block resampling, table-based Kendall and streamed results reported (the
    fixture), with resampling blocks as large as the data and as small as a few rows.

    Equal to 1e-12 relative: Bradley-Terry's fit moves in the last bits from one numpy/scipy build to the
    next; every other number is equal to the bit."""
    import json
    from pathlib import Path

    from tests.compare_numbers import reported

    before = json.loads((Path(__file__).parents[1] / "fixtures" / "compare_numbers.json").read_text())
    assert _differences(_known(reported(), before), before) == []
    monkeypatch.setattr(stats, "CHUNK_CELLS", 500)
    assert _differences(_known(reported(), before), before) == []


def _differences(now: object, before: object, path: str = "") -> list[str]:
    """Where ``now`` differs from ``before``: floats beyond 1e-12 relative, anything else at all."""
    if isinstance(now, dict) and isinstance(before, dict):
        return [
            d
            for k in sorted(set(now) | set(before), key=str)
            for d in _differences(now.get(k), before.get(k), f"{path}/{k}")
        ]
    if isinstance(now, list) and isinstance(before, list) and len(now) == len(before):
        return [
            d
            for i, (a, b) in enumerate(zip(now, before, strict=True))
            for d in _differences(a, b, f"{path}[{i}]")
        ]
    if isinstance(now, float) and isinstance(before, float):
        same = math.isclose(now, before, rel_tol=1e-12, abs_tol=1e-15) or (
            math.isnan(now) and math.isnan(before)
        )
        return [] if same else [f"{path}: {now!r} != {before!r}"]
    return [] if now == before else [f"{path}: {now!r} != {before!r}"]


def _known(now: dict, before: dict) -> dict:
    """``now`` with only the measures ``before`` holds (another test module may register a measure of its
    own); a measure ``before`` holds and ``now`` lacks stays missing, so the comparison fails."""
    out = {}
    for name, run in now.items():
        entries = {}
        for entry, numbers in run["entries"].items():
            known = before.get(name, {}).get("entries", {}).get(entry, {}).get("measures", {})
            entries[entry] = {
                **numbers,
                "measures": {k: v for k, v in numbers["measures"].items() if k in known},
            }
        known_human = before.get(name, {}).get("human", {})
        out[name] = {
            **run,
            "entries": entries,
            "human": {k: v for k, v in run["human"].items() if k in known_human},
        }
    return out
