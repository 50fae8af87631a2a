"""The exact requests a judge sends for one item, as text a person reads: ``mitigate prompts render`` and
``--dry-run``.

:func:`render_requests` prints every :class:`~mitigate.judge.PlannedRequest` of
``judge.requests(item)`` (every call of every fan-out) with its messages, its answer
constraint in the fields the backend gets, its sampling (temperature, n, max tokens,
logprobs), how its answer is read, the condition under which it is sent (a cascade's later
stage depends on earlier answers), the backend's refusal when it cannot take it, and a
unified diff of its messages against the unmitigated prompt's for the same item (the swapped
copy for a swapped request). Nothing here calls an LM.
"""

from __future__ import annotations

import difflib
import json
from collections.abc import Sequence

from mitigate.data import Item
from mitigate.judge import Judge, PlannedRequest, PromptJudge
from mitigate.lm import Message


def placeholder_item(judge: Judge, item_id: str = "example") -> Item:
    """An item whose every slot the judge's prompts show holds ``<slot name>``: for rendering with no
    benchmark."""
    slots: set[str] = set()
    pairwise = False
    for leaf in judge.leaves():
        slots |= leaf.prompt.slots()
        pairwise = pairwise or leaf.prompt.answer == "pairwise"
    inputs = {s: f"<{s}>" for s in sorted(slots) if s not in ("output", "output_b", "reference")}
    return Item(
        id=item_id,
        output="<output>",
        output_b="<output_b>" if pairwise or "output_b" in slots else None,
        reference="<reference>" if "reference" in slots else None,
        inputs=inputs,
    )


def transcript(messages: Sequence[Message]) -> list[str]:
    """The messages as lines: a ``[role]`` line, then the content's lines, for each message."""
    lines: list[str] = []
    for m in messages:
        lines.append(f"[{m.role}]")
        lines.extend(m.content.split("\n"))
    return lines


def _swapped(item: Item) -> Item:
    if item.output_b is None:
        return item
    return item.model_copy(update={"output": item.output_b, "output_b": item.output})


def _constraint_lines(p: PlannedRequest) -> list[str]:
    c = p.request.constraint
    if c is None:
        return ["constraint: none (free text, read strictly)"]
    lines = [f"constraint: {c.summary()}, as the backend gets it:"]
    for name, value in p.backend_fields.items():
        text = value if isinstance(value, str) else json.dumps(value, indent=1, sort_keys=True)
        lines.append(f"  {name}:")
        lines.extend(f"    {line}" for line in text.rstrip("\n").split("\n"))
    return lines


def render_requests(planned: Sequence[PlannedRequest], baseline: PromptJudge | None, item: Item) -> str:
    """Every planned request as text (see the module docstring); diffs against ``baseline``'s prompt when
    given."""
    if not planned:
        return f"no LM request for item {item.id!r} (this judge replays recorded answers)"
    out: list[str] = []
    total = len(planned)
    for i, p in enumerate(planned, 1):
        r = p.request
        head = (
            f"=== request {i} of {total}: {p.label} (item "
            f"{p.item_id!r}{', outputs swapped' if p.swapped else ''})"
        )
        out.append(head)
        out.append(
            f"backend: {p.backend}   temperature: {r.temperature:g}   n: {r.n}   max tokens: "
            f"{r.max_tokens}   logprobs: "
            f"{'top-' + str(r.top_logprobs) if r.logprobs or r.top_logprobs else 'no'}"
            + (f"   seed: {r.seed}" if r.seed is not None else "")
            + (f"   stop: {list(r.stop)}" if r.stop else "")
        )
        out.append(f"answer read: {p.reads}")
        if p.condition:
            out.append(f"sent only conditionally: {p.condition}")
        if p.refused:
            out.append(f"REFUSED by the backend (this request would fail, not be sent): {p.refused}")
        out.append("--- messages")
        out.extend(transcript(r.messages))
        out.extend(_constraint_lines(p))
        if baseline is not None:
            base_item = _swapped(item) if p.swapped else item
            base = transcript(baseline.prompt.render(base_item))
            diff = list(
                difflib.unified_diff(
                    base, transcript(r.messages), "unmitigated prompt", f"request {i}", n=2, lineterm=""
                )
            )
            if diff:
                out.append("--- diff against the unmitigated prompt")
                out.extend(diff)
            else:
                out.append("--- messages identical to the unmitigated prompt's")
        out.append("")
    return "\n".join(out).rstrip("\n")


def render_judge(judge: Judge, item: Item, baseline: PromptJudge | None = None) -> str:
    """``judge.requests(item)`` rendered (no LM call); ``baseline``: the unmitigated judge to diff against."""
    return render_requests(judge.requests(item), baseline, item)
