"""Score scales: the range a judge scores on, its granularity, and optional letter maps::

Scale(min=1, max=5)                      # integers 1..5
Scale(min=1, max=5, modifiers=True)      # "weak 3" -> 2.67, "strong 3" -> 3.33
Scale(min=1, max=5, letters={"A": 1, "B": 2, "C": 3, "D": 4, "E": 5})   # MCQ
"""

from __future__ import annotations

import math

from pydantic import BaseModel, ConfigDict, model_validator

from mitigate.errors import ScaleError

MODIFIER_STEP = 0.33
"""Size of a "weak"/"strong" word modifier (Stureborg et al.: ±0.33 of a scale point)."""


class Scale(BaseModel):
    """The scores a judge may give: ``step`` is a plain answer's granularity, ``letters`` maps MCQ letters to
    scores, ``modifiers`` accepts "weak N" / "strong N" as N ∓/± 0.33."""

    model_config = ConfigDict(frozen=True, extra="forbid")
    min: float = 1
    max: float = 5
    step: float = 1
    letters: dict[str, float] | None = None
    modifiers: bool = False

    @model_validator(mode="after")
    def _check(self) -> Scale:
        if not (math.isfinite(self.min) and math.isfinite(self.max)):
            raise ScaleError(f"a scale needs finite bounds; got min={self.min}, max={self.max}")
        if self.min >= self.max:
            raise ScaleError(f"a scale needs min < max; got min={self.min}, max={self.max}")
        if self.step <= 0:
            raise ScaleError(f"a scale step must be > 0; got step={self.step}")
        if self.letters is not None:
            if not self.letters:
                raise ScaleError("a letter map needs at least one letter; got an empty map")
            for letter, score in self.letters.items():
                if not letter.isalpha() or len(letter) != 1:
                    raise ScaleError(f"MCQ letters must be single letters; got {letter!r}")
                if not self.min <= score <= self.max:
                    raise ScaleError(
                        f"letter {letter!r} maps to {score}, outside the scale [{self.min}, {self.max}]"
                    )
        return self

    @classmethod
    def of(cls, value: Scale | tuple[float, float] | list[float] | None) -> Scale:
        """Coerce ``(min, max)`` or a Scale into a Scale (None gives the default 1–5)."""
        if value is None:
            return cls()
        if isinstance(value, Scale):
            return value
        if isinstance(value, (tuple, list)) and len(value) == 2:
            return cls(min=value[0], max=value[1])
        raise ScaleError(f"expected a Scale or a (min, max) pair; got {value!r}")

    def points(self) -> list[float]:
        """The plain answers the scale allows, from min to max in steps of ``step``."""
        count = int(round((self.max - self.min) / self.step))
        return [self._tidy(self.min + i * self.step) for i in range(count + 1)]

    def integer_points(self) -> list[int]:
        """Integer answers in [min, max] (what an expected-score reducer sums over)."""
        return list(range(math.ceil(self.min), math.floor(self.max) + 1))

    def contains(self, value: float) -> bool:
        """True when ``value`` lies within [min, max]."""
        return self.min - 1e-9 <= value <= self.max + 1e-9

    def on_grid(self, value: float) -> bool:
        """True when ``value`` is within the scale and a multiple of ``step`` from min."""
        if not self.contains(value):
            return False
        k = (value - self.min) / self.step
        return abs(k - round(k)) < 1e-6

    def snap(self, value: float) -> float:
        """The nearest allowed plain answer to ``value`` (clipped to the scale, rounded to ``step``)."""
        clipped = min(max(value, self.min), self.max)
        k = round((clipped - self.min) / self.step)
        return self._tidy(self.min + k * self.step)

    def normalise(self, value: float) -> float:
        """Map a score to [0, 1] by the scale's bounds."""
        return (value - self.min) / (self.max - self.min)

    def describe(self) -> str:
        """Short human text for prompts and errors, e.g. "1 to 5" or "A–E"."""
        if self.letters:
            return "/".join(self.letters)
        return f"{self._tidy(self.min):g} to {self._tidy(self.max):g}"

    @staticmethod
    def _tidy(x: float) -> float:
        r = round(x, 6)
        return float(int(r)) if r == int(r) else r
