"""A template read with the evidence for each field: what ``mitigate prompts inspect`` prints."""

from __future__ import annotations

from typing import Any

from mitigate.errors import MitigateError
from mitigate.parse import VALUE
from mitigate.prompt._judge_prompt import JudgePrompt
from mitigate.prompt._parts import format_number
from mitigate.prompt.read._fields import read_fields
from mitigate.prompt.read._hints import TemplateHints


def read_prompt(
    text: str, hints: TemplateHints | None = None, /, *, system: str | None = None, **overrides: Any
) -> tuple[JudgePrompt, list[str]]:
    """:meth:`JudgePrompt.from_template` (same arguments), also returning one line of evidence per field:
    what was found and where ("scale 1-10 from 'on a scale of 1 to 10'"), given, or defaulted."""
    fields, evidence = read_fields(text, TemplateHints.of(hints, **overrides), system=system)
    return JudgePrompt(**fields), evidence


def describe_template(
    text: str, hints: TemplateHints | None = None, /, *, system: str | None = None, **overrides: Any
) -> str:
    """A report of what :func:`read_prompt` recovers from ``text``: the evidence, the scoring options, the
    answer format and how it is asked for, how a demo answers, and the constraint a backend would enforce."""
    prompt, evidence = read_prompt(text, hints, system=system, **overrides)
    fmt = prompt.format
    lines = ["Recovered from the template:", *(f"  {e}" for e in evidence)]
    if prompt.guideline is not None:
        lines.append("Scoring options:")
        lines += [
            f"  [{o.label}] "
            + (f"score {format_number(o.score)}: " if o.score is not None else "(no score) ")
            + o.description[:90]
            for o in prompt.guideline.options
        ]
    lines.append("Answers:")
    lines.append(f"  format: {fmt.describe()}")
    try:
        lines.append(f"  asked for as: {fmt.instruction(prompt.scale)}")
        example = (
            prompt.scale.max
            if fmt.kind == "score"
            else ("first" if fmt.kind == "pairwise" else next(iter(prompt.scale.letters or {"A": 0})))
        )
        if not fmt.two_scores:
            lines.append(f"  a demo answers: {fmt.render(example, prompt.scale)}")
        if fmt.stub and fmt.reasoning != "before":
            shown = fmt.continuation.strip().replace(VALUE, fmt.value_text(example, prompt.scale))
            lines.append(f"  the judge completes {fmt.stub!r} with: {shown}")
        if fmt.kind != "mcq" or prompt.scale.letters:
            lines.append(f"  constrained decoding (regex): {fmt.constraint(prompt.scale).regex[:160]}")
    except MitigateError as exc:
        lines.append(f"  ({exc})")
    lines.append(
        f"Messages: {len(prompt.messages)} ({', '.join(m.role for m in prompt.messages)}); "
        f"task: {prompt.task[:100]!r}"
    )
    return "\n".join(lines)
