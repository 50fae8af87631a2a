"""What a caller tells the template reader beyond the template's text: one frozen value, passed whole.

:class:`TemplateHints` holds every override of what :meth:`~mitigate.prompt.JudgePrompt.from_template`
would otherwise read from a template (the scale, the criterion or criteria, the judged slot, the
answer kind, the pairwise labels, the option letters, the answer format ...). The reader
(:func:`~mitigate.prompt.read._fields.read_fields`), ``from_template``, ``read_prompt``,
``describe_template``, the CLI's template reading and the released-answer readers all take this
one value, so the list of overrides is declared once, here.
"""

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

    - ``scale``: the score's scale (a :class:`~mitigate.scale.Scale` or ``(min, max)``);
    - ``criterion`` / ``criteria``: the criterion judged, or several (a name or a
      :class:`~mitigate.prompt._parts.Criterion`);
    - ``output_slot``: the slot holding the judged text; ``slot_fields``: slot -> item field;
    - ``answer``: the answer kind ("score", "mcq", "pairwise");
    - ``parse_guideline``: False leaves guideline lines as plain text (no scoring options);
    - ``constants``: values of slots that are the same for every item (a rubric), and of Jinja names;
    - ``labels`` / ``tie``: how a pairwise prompt names its two outputs and a tie;
    - ``letters``: the score of each lettered option ("A" -> 1 ...);
    - ``answer_format``: the whole answer format.
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
        # a spec: validated as one
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
        """``hints`` (default: none) with ``overrides`` (keyword arguments named after the fields) applied.

        A keyword that names no field is a :class:`TypeError` listing the fields; a value of the
        wrong type a :class:`~mitigate.errors.ConfigError` naming the field, what it expects and what came.
        """
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
