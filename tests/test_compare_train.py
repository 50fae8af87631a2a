"""Fit on train, compare on test: the split by document and what compare refuses."""

from __future__ import annotations

from pathlib import Path

import pytest

from mitigate.data.schema import Benchmark, Item
from mitigate.errors import ConfigError, DataError
from mitigate.harness.compare import _train_and_test, train_test_split


def _bench(n_docs: int = 10, per_doc: int = 3) -> Benchmark:
    items = tuple(Item(id=f"S{s}/d{d}", output=f"output {s} {d}", system=f"S{s}", doc_id=f"d{d}",
                       human={"q": float(1 + (s + d) % 5)} if d != 0 else {})
                  for d in range(n_docs) for s in range(per_doc))
    return Benchmark(name="b", items=items, criteria=("q",))


def test_the_split_keeps_documents_whole_is_seeded_and_labelled() -> None:
    bench = _bench()
    train, test = train_test_split(bench, 0.5, seed=3, criterion="q")
    train_docs = {it.doc_id for it in train.items}
    test_docs = {it.doc_id for it in test.items}
    assert not train_docs & test_docs
    assert len(train_docs) + len(test_docs) in (9, 10)  # d0 has no label: it never trains
    assert all("q" in it.human for it in train.items)
    assert {it.id for it in train.items} | {it.id for it in test.items} <= {it.id for it in bench.items}
    assert train_test_split(bench, 0.5, seed=3, criterion="q") == (train, test)
    assert train_test_split(bench, 0.5, seed=4, criterion="q") != (train, test)
    # half of the 30 items by document (5 documents of 3), less d0's 3 unlabelled items if it was drawn
    assert len(train) in (12, 15)


def test_bad_fractions_and_overlapping_training_benchmarks_are_refused(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="strictly between 0 and 1"):
        train_test_split(_bench(), 1.5)
    with pytest.raises(DataError, match="expected both to be non-empty"):
        train_test_split(_bench(n_docs=1), 0.5)
    bench = _bench()
    with pytest.raises(ConfigError, match="shares no item or document"):
        _train_and_test(bench, bench, "q", 0)
    other = Benchmark(name="other", items=(Item(id="x", output="o", doc_id="elsewhere", human={"q": 3.0}),),
                      criteria=("q",))
    fit, test, info = _train_and_test(bench, other, "q", 0)
    assert fit is not None and test is bench and info is not None and info["ids"] == ["x"]
