"""The item and benchmark values every loader produces and every judge consumes."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from mitigate.errors import DataError
from mitigate.scale import Scale

Preference = Literal["A", "B", "tie"]
"""A gold pairwise preference: ``A`` (the item's ``output``), ``B`` (its ``output_b``) or a tie."""


_GIVEN: dict[frozenset[str], set[str]] = {}
"""The distinct sets of field names items were given (see :meth:`Item._check`)."""


class Item(BaseModel):
    """One generated text to judge, with what it was generated from and its human labels.

    ``id`` is unique within a benchmark; ``system`` wrote ``output``; ``doc_id`` is the source it was
    generated from (outputs on the same one are compared for #CP); ``inputs`` are named texts the prompt's
    slots may refer to. A pairwise item holds a second text ``output_b`` (by ``system_b``) and per criterion
    a gold ``preference``. ``human``: criterion -> mean human score; ``annotators``: per-annotator scores.
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
        # the names given, one set shared by every item given the same (frozen: never changed): at 100,000
        # items a set each is 70 MB
        given = self.__pydantic_fields_set__
        object.__setattr__(self, "__pydantic_fields_set__", _GIVEN.setdefault(frozenset(given), given))
        return self

    @property
    def pairwise(self) -> bool:
        """Whether the item holds two texts to compare (``output`` = A, ``output_b`` = B)."""
        return self.output_b is not None

    def texts(self) -> tuple[str, ...]:
        """Every text the item holds: what a judge's answer may quote back, never its verdict."""
        return (
            self.output,
            *([self.output_b] if self.output_b is not None else []),
            *self.inputs.values(),
            *([self.reference] if self.reference is not None else []),
        )

    def field(self, name: str) -> str:
        """The text an item holds under ``name`` (``output``, ``reference`` or an input), case-insensitive."""
        texts = {"output": self.output, "output_b": self.output_b, "reference": self.reference}
        named = {key: text for key, text in texts.items() if text is not None}
        wanted = "output" if name.lower() == "output_a" else name.lower()
        if wanted in named:
            return named[wanted]
        for key, value in self.inputs.items():
            if key.lower() == name.lower():
                return value
        raise DataError(
            f"item {self.id!r} has no field {name!r}; expected one of {[*named, *self.inputs]}",
            item_id=self.id,
        )


class Benchmark(BaseModel):
    """A named collection of items with the criteria and label scales its humans used: ``scales`` per
    criterion where they differ, ``scale`` for the others (:meth:`scale_for`)."""

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
        return summary_line(self, len(self.items), len(systems), len(docs))


def summary_line(bench: Any, items: int, systems: int, documents: int) -> str:
    """A benchmark (or a streamed one) in one line: its counts, criteria and label scales."""
    criteria, scale, scales = bench.criteria, bench.scale, bench.scales
    if scales:
        shown = ", ".join(f"{c} {scales.get(c, scale).describe()}" for c in (criteria or tuple(scales)))
        label = f"human scales {shown}"
    else:
        label = f"human scale {scale.describe()}"
    kind = "pairwise items" if bench.pairwise else "items"
    return (
        f"{bench.name}: {items} {kind}, {systems} systems, {documents} documents, "
        f"criteria={list(criteria)}, {label}"
    )
