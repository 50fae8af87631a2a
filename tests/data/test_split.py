"""The one document-level split behind compare's train/test and the search's train/dev/test."""

from __future__ import annotations

from mitigate.data import Benchmark, Item, split_items, train_test_split
from mitigate.data._split import split_by_document


def _bench(n_docs: int = 12, per_doc: int = 3) -> Benchmark:
    items = tuple(
        Item(
            id=f"S{s}/d{d}",
            output=f"output {s} {d}",
            system=f"S{s}",
            doc_id=f"d{d}",
            human={"q": float(1 + (s + d) % 5)},
        )
        for d in range(n_docs)
        for s in range(per_doc)
    )
    return Benchmark(name="b", items=items, criteria=("q",))


def _docs(items: tuple[Item, ...] | list[Item]) -> set[str]:
    return {str(it.doc_id) for it in items}


def test_compare_and_search_split_the_same_documents_the_same_way() -> None:
    bench = _bench()
    train, test = train_test_split(bench, 0.5, seed=7)
    (first, rest), groups = split_by_document(bench.items, (0.5, 0.5), seed=7)
    assert groups == 12
    assert _docs(train.items) == _docs(first) and _docs(test.items) == _docs(rest)
    split = split_items(bench, (0.5, 0.25, 0.25), seed=7)
    assert _docs(split.train) == _docs(first)  # the search's train is compare's train for the same share
    assert _docs(split.dev) | _docs(split.test) == _docs(rest)
    assert not (_docs(split.dev) & _docs(split.test))


def test_no_document_straddles_two_parts_and_the_shares_are_met() -> None:
    bench = _bench(n_docs=20, per_doc=2)
    parts, _ = split_by_document(bench.items, (0.6, 0.2, 0.2), seed=3)
    assert [len(p) for p in parts] == [24, 8, 8]
    seen = [_docs(p) for p in parts]
    assert not (seen[0] & seen[1]) and not (seen[0] & seen[2]) and not (seen[1] & seen[2])


def test_items_without_a_document_are_their_own_groups() -> None:
    items = [Item(id=f"i{k}", output="x", human={"q": 1.0}) for k in range(10)]
    parts, groups = split_by_document(items, (0.5, 0.5), seed=0)
    assert groups == 10 and sorted(len(p) for p in parts) == [5, 5]
