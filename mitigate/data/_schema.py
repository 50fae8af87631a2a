"""The item and benchmark values every loader produces and every judge consumes."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from mitigate.errors import DataError
from mitigate.scale import Scale

Preference = Literal["A", "B", "tie"]
"""A gold pairwise preference: ``A`` (the item's ``output``), ``B`` (its ``output_b``) or a tie."""


class Item(BaseModel):
    """One generated text to judge, with what it was generated from and its human labels.

    - ``id``: unique within a benchmark (e.g. ``"M8/dm-test-8764..."``).
    - ``system``: the generator that wrote ``output`` (for per-system measures and self-preference).
    - ``doc_id``: the source the output was generated from; outputs of different systems on
      the same ``doc_id`` are compared for correct preferences (#CP).
    - ``inputs``: named texts the prompt's slots may refer to (``source``, ``context``, ``triples`` ...).
    - ``output``: the judged text. ``output_b`` holds the second text of a pairwise item, and
      ``system_b`` the generator that wrote it.
    - ``human``: criterion -> mean human score; ``annotators``: criterion -> per-annotator scores.
    - ``preference``: for a pairwise item, criterion -> the gold preference: ``"A"`` (``output``
      is better), ``"B"`` (``output_b`` is better) or ``"tie"``.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")
    id: str
    output: str
    inputs: dict[str, str] = Field(default_factory=dict)
    system: str | None = None
    doc_id: str | None = None
    reference: str | None = None
    output_b: str | None = None
    system_b: str | None = None
    human: dict[str, float] = Field(default_factory=dict)
    annotators: dict[str, tuple[float | None, ...]] = Field(default_factory=dict)
    preference: dict[str, Preference] = Field(default_factory=dict)
    meta: dict[str, Any] = Field(default_factory=dict)

    @model_validator(mode="after")
    def _check(self) -> Item:
        if not self.id:
            raise DataError("an item needs a non-empty 'id'; got an empty string")
        if self.preference and self.output_b is None:
            raise DataError(
                f"item {self.id!r} has a gold 'preference' but no 'output_b'; expected a pairwise item with "
                "two texts (output = A, output_b = B)",
                item_id=self.id,
            )
        return self

    @property
    def pairwise(self) -> bool:
        """Whether the item holds two texts to compare (``output`` = A, ``output_b`` = B)."""
        return self.output_b is not None

    def texts(self) -> tuple[str, ...]:
        """Every text the item holds (outputs, inputs, reference): what a judge's answer may quote back, never
        its verdict."""
        return (
            self.output,
            *([self.output_b] if self.output_b is not None else []),
            *self.inputs.values(),
            *([self.reference] if self.reference is not None else []),
        )

    def field(self, name: str) -> str:
        """The text an item holds under ``name`` (``output``, ``reference`` or an input), case-insensitive."""
        if name.lower() in ("output", "output_a"):
            return self.output
        if name.lower() == "output_b" and self.output_b is not None:
            return self.output_b
        if name.lower() == "reference" and self.reference is not None:
            return self.reference
        for key, value in self.inputs.items():
            if key.lower() == name.lower():
                return value
        available = [
            "output",
            *(["output_b"] if self.output_b is not None else []),
            *(["reference"] if self.reference is not None else []),
            *self.inputs,
        ]
        raise DataError(
            f"item {self.id!r} has no field {name!r}; expected one of {available}", item_id=self.id
        )


class Benchmark(BaseModel):
    """A named collection of items with the criteria and label scales its humans used.

    ``scale`` is the human label scale of every criterion not listed in ``scales``, which
    holds per-criterion scales for benchmarks whose criteria differ (USR Topical-Chat:
    naturalness 1-3, groundedness 0-1, overall 1-5). :meth:`scale_for` gives a criterion's.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")
    name: str
    items: tuple[Item, ...]
    criteria: tuple[str, ...] = ()
    scale: Scale = Field(default_factory=Scale)
    scales: dict[str, Scale] = Field(default_factory=dict)
    description: str = ""

    @model_validator(mode="after")
    def _check_scales(self) -> Benchmark:
        if self.criteria:
            unknown = sorted(set(self.scales) - set(self.criteria))
            if unknown:
                raise DataError(
                    f"benchmark {self.name!r} gives scales for {unknown}, which are not among its criteria "
                    f"{list(self.criteria)}"
                )
        return self

    def __len__(self) -> int:
        return len(self.items)

    def scale_for(self, criterion: str) -> Scale:
        """The human label scale of ``criterion``: its own from ``scales``, else the common ``scale``."""
        return self.scales.get(criterion, self.scale)

    @property
    def pairwise(self) -> bool:
        """Whether every item is pairwise (two texts, a preference to judge)."""
        return bool(self.items) and all(i.pairwise for i in self.items)

    def head(self, n: int) -> Benchmark:
        """The first ``n`` items, as a new benchmark."""
        return self.model_copy(update={"items": self.items[:n]})

    def summary(self) -> str:
        """One line with the counts and label scale, for CLIs and logs."""
        systems = {i.system for i in self.items if i.system is not None}
        docs = {i.doc_id for i in self.items if i.doc_id is not None}
        return summary_line(
            self.name,
            len(self.items),
            len(systems),
            len(docs),
            self.criteria,
            self.scale,
            self.scales,
            pairwise=self.pairwise,
        )


def summary_line(
    name: str,
    items: int,
    systems: int,
    documents: int,
    criteria: tuple[str, ...],
    scale: Scale,
    scales: dict[str, Scale],
    *,
    pairwise: bool,
) -> str:
    """A benchmark in one line: its counts, criteria and label scales (:meth:`Benchmark.summary`)."""
    if scales:
        shown = ", ".join(f"{c} {scales.get(c, scale).describe()}" for c in (criteria or tuple(scales)))
        label = f"human scales {shown}"
    else:
        label = f"human scale {scale.describe()}"
    kind = "pairwise items" if pairwise else "items"
    return (
        f"{name}: {items} {kind}, {systems} systems, {documents} documents, "
        f"criteria={list(criteria)}, {label}"
    )
