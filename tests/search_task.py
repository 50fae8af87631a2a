"""A scripted demo-search task shared by the search and DSPy-engine tests.

Items carry their id in the text (``ID:<id>``) so a scripted judge can tell which demos a
prompt holds; the demos ``g1`` and ``g2`` are the "good" ones a search should find.
"""

from __future__ import annotations

import re

from mitigate import Item
from mitigate.data import Split

PROMPT = """Rate the coherence of the text.

Score 1 means incoherent.
Score 2 means mostly incoherent.
Score 3 means partly coherent.
Score 4 means mostly coherent.
Score 5 means fully coherent.

Text: {{output}}

Score:"""

GOOD = {"g1", "g2"}
ID_RE = re.compile(r"ID:(\w+)")


def _items(prefix: str, n: int, offset: int = 0) -> list[Item]:
    return [
        Item(
            id=f"{prefix}{i}",
            output=f"Text number {i + offset} about topic {prefix}. ID:{prefix}{i}",
            human={"coherence": float(1 + (i + offset) % 5)},
        )
        for i in range(n)
    ]


def _split() -> Split:
    train = [
        Item(id="g1", output="A good example. ID:g1", human={"coherence": 2.0}),
        Item(id="g2", output="Another good one. ID:g2", human={"coherence": 5.0}),
        *_items("t", 4),
    ]
    return Split(train=tuple(train), dev=tuple(_items("d", 10)), test=tuple(_items("e", 10, offset=2)))


def _human(split: Split) -> dict[str, float]:
    return {it.id: it.human["coherence"] for it in (*split.train, *split.dev, *split.test)}
