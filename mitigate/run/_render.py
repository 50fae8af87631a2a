"""What a judge sends for each item, rendered without calling an LM: checked for every item before a run
(:func:`preflight`), and shown as text (``mitigate prompts render``, ``--dry-run``): each planned request's
messages, constraint fields, sampling, reading, condition, refusal and diff against the unmitigated prompt."""

from __future__ import annotations

import difflib
import json
from collections.abc import Iterable, Sequence
from typing import Any

from mitigate.data import Item
from mitigate.errors import DataError, MitigateError
from mitigate.judge import Judge, PlannedRequest, PromptJudge
from mitigate.lm import Message


def _max_prompt_chars(lm: Any) -> int | None:
    for _ in range(8):  # the backend under its wrappers
        cap = getattr(getattr(lm, "limits", None), "max_prompt_chars", None)
        if isinstance(cap, int):
            return int(cap)
        lm = getattr(lm, "inner", None)
    return None


def clip(text: str, limit: int = 300) -> str:
    flat = " ".join(str(text).split())
    return flat if len(flat) <= limit else flat[: limit - 3] + "..."


def preflight(judge: Judge, items: Iterable[Item]) -> None:
    """Render every item with every prompt of ``judge``; one DataError when some cannot be rendered, or give a
    prompt over the backend's ``max_prompt_chars``."""
    try:
        leaves = judge.leaves()
    except MitigateError:  # a judge without prompts (a replayed released judge): nothing to render
        return
    caps = [_max_prompt_chars(leaf.lm) for leaf in leaves]
    count = bad = too_long = 0
    first_bad: tuple[Item, MitigateError] | None = None
    first_long: tuple[Item, int, int] | None = None
    for item in items:
        count += 1
        for leaf, cap in zip(leaves, caps, strict=True):
            try:
                messages = leaf.prompt.render(item)
            except MitigateError as exc:
                bad += 1
                first_bad = first_bad or (item, exc)
                break
            if cap is not None:
                chars = sum(len(m.content) for m in messages)
                if chars > cap:
                    too_long += 1
                    first_long = first_long or (item, chars, cap)
                    break
    if first_long is not None:
        item, chars, cap = first_long
        raise DataError(
            f"{too_long} of {count} items give a prompt longer than max_prompt_chars={cap:,} "
            f"(--max-prompt-chars), so no LM call was made; the first, {item.id!r}, gives {chars:,} "
            f"characters (about {chars // 4:,} tokens)",
            item_id=item.id,
        )
    if first_bad is not None:
        item, cause = first_bad
        raise DataError(
            f"{bad} of {count} items cannot be put into the judge's prompt, so no LM call was made; "
            f"the first, {item.id!r}: {clip(cause.message, 400)}",
            item_id=item.id,
        )


def placeholder_item(judge: Judge, item_id: str = "example") -> Item:
    """An item whose every slot the judge's prompts show holds ``<slot name>``."""
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
    return [line for m in messages for line in (f"[{m.role}]", *m.content.split("\n"))]


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
    """Every planned request as text, diffed against ``baseline``'s prompt when given."""
    if not planned:
        return f"no LM request for item {item.id!r} (this judge replays recorded answers)"
    out: list[str] = []
    total = len(planned)
    for i, p in enumerate(planned, 1):
        r = p.request
        swapped = ", outputs swapped" if p.swapped else ""
        out.append(f"=== request {i} of {total}: {p.label} (item {p.item_id!r}{swapped})")
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
