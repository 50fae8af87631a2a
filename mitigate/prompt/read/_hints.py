"""What a caller tells the template reader beyond the template's text: one frozen value, passed whole
(:meth:`~mitigate.prompt.JudgePrompt.from_template`, ``read_prompt``, ``describe_template``, the CLI and the
released-answer readers), so the list of overrides is declared once."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, ValidationError, field_validator

from mitigate.errors import ConfigError
from mitigate.prompt._parts import Criterion
from mitigate.prompt.answer._format import AnswerFormat
from mitigate.scale import Scale


class TemplateHints(BaseModel):
    """Overrides of what is read from a template; every field left None (or True) is read from the text.

    ``scale`` (a Scale or ``(min, max)``), ``criterion`` / ``criteria`` (names or Criterion values),
    ``output_slot``, ``slot_fields`` (slot -> item field), ``answer`` (the kind), ``parse_guideline``
    (False: no scoring options), ``constants`` (slots the same for every item, and Jinja names),
    ``labels`` / ``tie`` (a pairwise prompt's names for its outputs and a tie), ``letters`` (each lettered
    option's score) and ``answer_format``.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")
    scale: Scale | None = None
    criterion: Criterion | None = None
    criteria: tuple[Criterion, ...] | None = None
    output_slot: str | None = None
    slot_fields: dict[str, str] | None = None
    answer: Literal["score", "mcq", "pairwise"] | None = None
    parse_guideline: bool = True
    constants: dict[str, Any] | None = None
    labels: tuple[str, str] | None = None
    tie: str | None = None
    letters: dict[str, float] | None = None
    answer_format: AnswerFormat | None = None

    @field_validator("scale", mode="before")
    @classmethod
    def _scale(cls, value: Any) -> Any:
        return value if value is None or isinstance(value, Mapping) else Scale.of(value)

    @field_validator("criterion", mode="before")
    @classmethod
    def _criterion(cls, value: Any) -> Any:
        return Criterion(name=value) if isinstance(value, str) else value

    @field_validator("criteria", mode="before")
    @classmethod
    def _criteria(cls, value: Any) -> Any:
        if value is None or isinstance(value, (str, Mapping)) or not isinstance(value, Sequence):
            return value
        return tuple(Criterion(name=c) if isinstance(c, str) else c for c in value)

    @classmethod
    def of(cls, hints: TemplateHints | None = None, /, **overrides: Any) -> TemplateHints:
        """``hints`` (default: none) with ``overrides`` (keywords named after the fields) applied: a TypeError
        for a keyword that names no field, a ConfigError naming the field for a wrong value."""
        if hints is not None and not isinstance(hints, TemplateHints):
            raise TypeError(f"expected the template hints as a TemplateHints; got {type(hints).__name__}")
        unknown = sorted(set(overrides) - set(cls.model_fields))
        if unknown:
            raise TypeError(
                f"expected template hints among {', '.join(cls.model_fields)}; got {', '.join(unknown)}"
            )
        if not overrides:
            return hints if hints is not None else _NONE
        values = {**(hints.given() if hints is not None else {}), **overrides}
        try:
            return cls(**values)
        except ValidationError as exc:
            err = exc.errors()[0]
            field = ".".join(str(p) for p in err["loc"]) or "hints"
            raise ConfigError(
                f"expected the template hint {field} to be valid ({err['msg']}); got {err.get('input')!r}"
            ) from None

    def given(self) -> dict[str, Any]:
        """The hints given (the fields set), as keyword arguments."""
        return {k: getattr(self, k) for k in self.model_fields_set}


_NONE = TemplateHints()
