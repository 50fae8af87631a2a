"""The judge writes its own reference first, then judges against it: solve-first (Krumdick et al. 2025: the
judge answers the task itself) and reference-revision (RevisEval, Zhang et al. 2025: the judge revises the
judged text into a reference).

:class:`OwnReferenceJudge` makes two calls per item: the first writes the reference (the judge's own answer,
or a revision of the judged text), the second is the judge's own request with it, in the template's reference
slot or in a section under a heading in the template's own layout (:func:`with_reference`). An empty first
answer fails the item; one reference per item.
"""

from __future__ import annotations

import re
from typing import Any, ClassVar, Literal

from mitigate.constraints import Interval, IsInstance, Options
from mitigate.data import Item
from mitigate.errors import ConfigError, DataError
from mitigate.judge import Judge, Judgment, PlannedRequest, PromptJudge, combine_costs
from mitigate.lm import LMRequest, Message
from mitigate.prompt import (
    SLOT_RE,
    JudgePrompt,
    answer_label,
    field_text,
    inline_label,
    item_layout,
    markup_only,
    slot_names,
)
from mitigate.registry import register
from mitigate.strategies._base import LeafJudge, Mitigation
from mitigate.strategies._edits import append_instruction, with_message

Mode = Literal["solve", "revise"]
Work = tuple[str, str]
Policy = Literal["fill", "refuse"]

_REFERENCE_NAME = re.compile(
    r"(?:^|_)(?:ref|reference|references|expected|ideal|gold|target|ground_?truth|"
    r"correct|answer_?key)(?:_|$)",
    re.I,
)
_NAMES: dict[Mode, str] = {"solve": "solve-first", "revise": "reference-revision"}
_LABELS: dict[Mode, str] = {
    "solve": "Your own answer to the task",
    "revise": "Reference answer (your revision)",
}
PLACEHOLDER = "<the answer to the first request>"
"""What stands in the reference slot when the requests are listed ahead."""


def reference_slots(prompt: JudgePrompt) -> list[str]:
    """The template's own reference slots: named like one, or mapped to the item's ``reference``."""
    texts = {s for s in _slots(prompt) if prompt._field_for(s) in ("output", "output_b")}
    return [
        s
        for s in _slots(prompt)
        if s not in texts and (prompt._field_for(s) == "reference" or _REFERENCE_NAME.search(s))
    ]


def task_slots(prompt: JudgePrompt) -> list[str]:
    """The template's slots showing the task (neither a judged text nor a reference)."""
    refs = set(reference_slots(prompt))
    return [s for s in _slots(prompt) if s not in refs and prompt._field_for(s) not in ("output", "output_b")]


def _slots(prompt: JudgePrompt) -> list[str]:
    return list(dict.fromkeys(s for m in prompt.messages for s in slot_names(m.template)))


# --------------------------------------------------------------------------- the reference section


_TAG = re.compile(r"^(\s*)<([A-Za-z_][\w.-]*)([^<>\n]*)>(\s*)$")
_CLOSE_TAG = re.compile(r"</([A-Za-z_][\w.-]*)>")
_START_OF = re.compile(r"(?i)\b(start|begin(?:ning)?)(\s+of\s+)(.+?)(\s*(?:\||\]|>|$))")
_END_OF = re.compile(r"(?i)\b(end)(\s+of\s+)(.+?)(\s*(?:\||\]|>|$))")
_HEADING = re.compile(
    r"^(?P<lead>\s*(?:#{1,6}\s*|\*\*\s*|__\s*|\[\s*|>\s*|[-*]\s+|(?P<num>\d+)[.)]\s*)*)"
    r"(?P<words>.*?)(?P<trail>\s*(?:\]|\*\*|__)?\s*[:：]?\s*(?:\*\*|__)?\s*)$"
)


def _snake(label: str) -> str:
    return re.sub(r"[^a-z0-9]+", "_", label.lower()).strip("_")


def _title_words(label: str) -> str:
    return re.sub(r"(^|[\s(])([a-z])", lambda m: m.group(1) + m.group(2).upper(), label)


def _relabel(heading: str, label: str, number: int | None) -> str | None:
    """``heading`` with its words replaced by ``label``, markup kept; None when it is prose."""
    tag = _TAG.match(heading)
    if tag is not None:
        return f"{tag.group(1)}<{_snake(label)}>{tag.group(4)}"
    if heading.rstrip().endswith(">") and re.search(r"<[A-Za-z_][\w.-]*[^<>\n]*>\s*$", heading):
        return re.sub(
            r"<([A-Za-z_][\w.-]*)([^<>\n]*)>(\s*)$", lambda m: f"<{_snake(label)}>{m.group(3)}", heading
        )
    start = _START_OF.search(heading)
    if start is not None:
        return heading[: start.start(3)] + _title_words(label) + heading[start.end(3) :]
    m = _HEADING.match(heading)
    if (
        m is None
        or not m.group("words").strip()
        or len(heading.strip()) > 100
        or m.group("words").rstrip().endswith((".", "?", "!", ",", ";"))
    ):
        return None
    lead = m.group("lead")
    # the next number, or none where the template goes on numbering after the item
    if m.group("num") is not None:
        lead = (
            lead.replace(m.group("num"), str(number), 1)
            if number is not None
            else re.sub(r"\d+[.)]\s*", "", lead, count=1)
        )
    return lead + label + m.group("trail")


def _reclose(closer: str, label: str) -> str:
    """A closing line or suffix (``</response>``) renamed for the reference."""
    if _CLOSE_TAG.search(closer):
        return _CLOSE_TAG.sub(f"</{_snake(label)}>", closer, count=1)
    end = _END_OF.search(closer)
    return closer[: end.start(3)] + _title_words(label) + closer[end.end(3) :] if end is not None else closer


_NUMBERED = re.compile(r"(?m)^\s*(?:#{1,6}\s*|\*\*)?(\d+)[.)]")


def _next_number(section: str, template: str) -> int | None:
    """The number after the section's numbered headings, or None when the template uses it already."""
    found = [int(n) for n in _NUMBERED.findall(section)]
    if not found:
        return None
    following = max(found) + 1
    return None if following in {int(n) for n in _NUMBERED.findall(template)} else following


def reference_block(template: str, slot: str, label: str) -> tuple[int, str]:
    """Where the reference section goes in ``template`` (after the item section) and its text."""
    layout = item_layout(template)
    slots = list(SLOT_RE.finditer(template))
    if layout is None or not slots:
        raise ConfigError(
            "expected a template showing the judged item in slots; found none to put a reference after"
        )
    nl = "\r\n" if "\r\n" in template else "\n"
    section = template[layout.start : layout.end]
    last = [s for s in slots if s.start() < layout.end][-1]
    line_start = template.rfind("\n", 0, last.start()) + 1
    line_end = template.find("\n", last.end())
    line_end = len(template) if line_end < 0 else line_end
    prefix = template[line_start : last.start()]
    suffix = template[last.end() : line_end].rstrip("\r")
    slot_text = "{{" + slot + "}}"
    number = _next_number(section, template)
    spaced = re.search(r"\n[ \t]*\r?\n", section) is not None
    plain = f"{label}:{nl}{slot_text}"
    # words or markup before the slot on its line: inline label
    if prefix.strip():
        head = _relabel(prefix, label, number) if inline_label(prefix) else None
        closes = not re.search(r"[^\W_]", _CLOSE_TAG.sub("", suffix)) or _END_OF.search(suffix)
        tail = _reclose(suffix, label) if closes else None
        body = head + slot_text + tail if head is not None and tail is not None else plain
    else:
        above = template[:line_start].rstrip("\r\n")
        heading_start = above.rfind("\n") + 1
        heading = above[heading_start:].rstrip("\r")
        gap = template[heading_start + len(heading) : line_start]
        head = _relabel(heading, label, number) if heading_start >= layout.start and heading.strip() else None
        after = template[line_end : layout.end]
        closer = next((ln for ln in after.split("\n") if ln.strip()), "")
        close_gap = after[: after.find(closer)] if closer else ""
        if head is None:
            body = plain
        else:
            body = head + gap + prefix + slot_text + suffix
            if closer and markup_only(closer):
                body += close_gap.rstrip(" \t") + _reclose(closer.rstrip("\r"), label)
    return layout.end, (nl * 2 if spaced else nl) + body


def _note(mode: Mode, pairwise: bool, heading: str | None, work: Work | None = None) -> str:
    wrote = (
        f"the {work[0]} you wrote yourself from the {work[1]}" if work else "the answer you wrote to the task"
    )
    where = f"The section \u201c{heading}\u201d" if heading else "The reference answer in this prompt"
    texts, them, only = (
        ("the two texts to compare", "them", "those two texts")
        if pairwise
        else ("the text to evaluate", "that text", "that text")
    )
    if mode == "solve":
        return (
            f"{where} is {wrote}{'' if work else ' yourself'}, before reading {texts}: use it as a "
            f"reference when you check {them}, but judge only {only}, as instructed."
        )
    if pairwise:
        return (
            f"{where} is a reference answer you wrote by revising the two texts to correct and complete "
            "them: use it as a reference when you check the two texts to compare, but judge the two "
            "texts as they are, as instructed."
        )
    return (
        f"{where} is your revision of the text to evaluate, correcting and completing it: use it as a "
        "reference when you check the text, but judge the text as it is, as instructed."
    )


def with_reference(
    prompt: JudgePrompt, mode: Mode, policy: Policy = "fill", work: Work | None = None
) -> tuple[JudgePrompt, list[str]]:
    """``prompt`` carrying the judge's reference, and the slots the reference fills; ``work`` is what
    solve-first asked for when the template shows no task (:func:`solved_work`)."""
    pairwise = prompt.answer == "pairwise"
    own = reference_slots(prompt)
    if own:
        if policy == "refuse":
            raise ConfigError(
                f"the template has its own reference slot {{{{{own[0]}}}}}; {_NAMES[mode]} with "
                "on_reference_slot='refuse' adds no second reference: expected on_reference_slot='fill' "
                "(the judge's reference fills that slot) or a template without one"
            )
        return append_instruction(prompt, _note(mode, pairwise, None, work)), own
    taken = prompt.slots()
    slot = "own_reference"
    while slot in taken:
        slot += "_"
    label = f"Your own {work[0]}" if work else _LABELS[mode]
    holder = next(i for i, m in enumerate(prompt.messages) if prompt.output_slot in slot_names(m.template))
    template = prompt.messages[holder].template
    at, block = reference_block(template, slot, label)
    edited = with_message(prompt, holder, template[:at] + block + template[at:])
    return append_instruction(edited, _note(mode, pairwise, label, work)), [slot]


# --------------------------------------------------------------------------- the first call


def _words(heading: str) -> str | None:
    """The words of a heading or inline label ("# Instruction:" -> "Instruction"), else None."""
    text = _CLOSE_TAG.sub("", re.sub(r"<\|([^|\n]*)\|>", r"\1", heading)).strip()
    if _TAG.match(text):
        return None
    start = _START_OF.search(text)
    if start is not None:
        return start.group(3).strip() or None
    m = _HEADING.match(text)
    words = m.group("words").strip().strip("[]<>|*_#:").strip() if m is not None else ""
    if not words or len(words.split()) > 6 or words.endswith((".", "?", "!", ",", ";")):
        return None
    return words


def slot_heading(prompt: JudgePrompt, slot: str) -> str:
    """The words the template shows above (or before) ``slot``: its heading, else the slot name as a title."""
    return _find_heading(prompt, slot) or answer_label(slot.replace("_", " ").strip())


def _find_heading(prompt: JudgePrompt, slot: str) -> str | None:
    for m in prompt.messages:
        found = next((x for x in SLOT_RE.finditer(m.template) if x.group(1).strip() == slot), None)
        if found is None:
            continue
        start = m.template.rfind("\n", 0, found.start()) + 1
        prefix = m.template[start : found.start()]
        if re.search(r"[^\W_]", prefix):
            return _words(prefix)
        for line in reversed(m.template[:start].splitlines()[-4:]):
            blank = not line.strip() or (markup_only(line) and not re.search(r"[^\W_]", line))
            if not blank and not _TAG.match(line):
                return _words(line)
    return None


_TASK = re.compile(r"(?i)question|instruction|task|prompt|query|request|problem|conversation|dialog|input")


def solved_work(prompt: JudgePrompt) -> Work | None:
    """What solve-first asks for when the template's inputs show no task or question: the judged text's
    name and the inputs' ("summary", "article"); None when they show a task. A judged text with no plain
    name is refused."""
    slots = task_slots(prompt)
    heads = [slot_heading(prompt, s) for s in slots]
    if any(_TASK.search(x) for x in (*slots, *heads)):
        return None
    heading = _text_heading(prompt, "output", slot_heading(prompt, prompt.output_slot))
    noun = re.sub(r"\s*(?:\(\s*\w\s*\)|\b[A-Za-z0-9]\b)$", "", heading).lower()  # "Summary 1" -> "summary"
    if not re.fullmatch(r"[a-z]+(?: [a-z]+)?", noun):
        raise ConfigError(
            f"solve-first asks the judge to answer the task first, but the template shows no task or "
            f"question (only {', '.join(heads)}) and no plain name for the judged text; expected a slot "
            "such as {{question}}, or solve-first(task='...') saying what to write"
        )
    return noun, " and ".join(h.lower() for h in heads)


def _inputs(prompt: JudgePrompt, item: Item) -> list[tuple[str, str]]:
    out = []
    for s in task_slots(prompt):
        value = field_text(item, prompt._field_for(s))
        if value is None:
            raise DataError(
                f"slot {{{{{s}}}}} needs item field {prompt._field_for(s)!r}; item {item.id!r} has "
                f"{['output', *item.inputs]}",
                item_id=item.id,
            )
        out.append((slot_heading(prompt, s), value))
    return out


def _text_heading(prompt: JudgePrompt, field: str, fallback: str) -> str:
    """The heading the template shows above the judged text ``field``, else ``fallback``."""
    slots = (s for m in prompt.messages for s in slot_names(m.template) if prompt._field_for(s) == field)
    slot = next(slots, None)
    return (_find_heading(prompt, slot) if slot is not None else None) or fallback


def first_request(
    leaf: PromptJudge, item: Item, mode: Mode, *, task: str | None, max_tokens: int, work: Work | None = None
) -> LMRequest:
    """The request that writes the reference for ``item`` (``work``: see :func:`solved_work`)."""
    prompt = leaf.prompt
    pairwise = prompt.answer == "pairwise"
    shown = _inputs(prompt, item)
    blocks = [f"{h}:\n{v}" for h, v in shown]
    what = [c.name for c in prompt.criteria if c.name.lower() != "score"]
    on = f" on {', '.join(what)}" if what else ""
    if mode == "solve":
        evaluated = (
            "two responses to the same task are compared"
            if pairwise
            else "a response to the same task is evaluated"
        )
        intro = (
            "Write your own answer to the task below, as well as you can. It will serve as a reference "
            f"answer when {evaluated}, so make it correct and complete."
        )
        if task:
            intro += f"\n\nThe task: {task}"
        closing = "Write only your answer."
        if work:
            others = "two others are compared" if pairwise else "another one is evaluated"
            intro = (
                f"Write your own {work[0]} of the {work[1]} below, as well as you can. It will serve as a "
                f"reference when {others}, so make it correct and complete."
            )
            closing = f"Write only your {work[0]}."
    elif pairwise:
        if item.output_b is None:
            raise DataError(
                f"reference-revision of a pairwise prompt needs both texts; item {item.id!r} has no output_b",
                item_id=item.id,
            )
        a = _text_heading(prompt, "output", "Response A")
        b = _text_heading(prompt, "output_b", "Response B")
        if a == b:
            a, b = "Response A", "Response B"
        them = "the two responses" if shown else "them"
        intro = (
            ("Below are a task and two responses to it." if shown else "Below are two responses.")
            + " Write a reference answer by revising them: keep what either does well, correct their "
            f"mistakes and add what both miss. The reference will be used to compare {them}{on}."
        )
        blocks += [f"{a}:\n{item.output}", f"{b}:\n{item.output_b}"]
        closing = "Write only the reference answer."
    else:
        intro = (
            (
                "Below are a task and a response to it. Revise the response"
                if shown
                else "Below is a response. Revise it"
            )
            + " into a reference answer: correct its mistakes and add what it misses, and keep what it "
            f"already does well. The reference will be used to evaluate the response{on}."
        )
        blocks.append(f"{_text_heading(prompt, 'output', 'Response')}:\n{item.output}")
        closing = "Write only the revised response."
    message = Message(role="user", content="\n\n".join([intro, *blocks, closing]))
    return LMRequest(messages=(message,), temperature=0.0, n=1, max_tokens=max_tokens, seed=leaf.config.seed)


class OwnReferenceJudge(LeafJudge):
    """One prompt judge that first writes its own reference, then judges with it."""

    def __init__(
        self,
        leaf: PromptJudge,
        *,
        mode: Mode,
        task: str | None = None,
        max_tokens: int = 512,
        policy: Policy = "fill",
    ) -> None:
        if not isinstance(leaf, PromptJudge):
            raise ConfigError(f"expected a prompt judge to give its own reference; got {type(leaf).__name__}")
        if mode == "solve" and not task_slots(leaf.prompt):
            raise ConfigError(
                "solve-first asks the judge to answer the task first, but the template shows "
                "no task input besides the judged text(s); expected a slot such as "
                "{{instruction}}, {{question}} or {{source}}"
            )
        if leaf.prompt.demos:
            raise ConfigError(
                f"{_NAMES[mode]} adds the judge's own reference to the judged item, which demonstrations "
                "cannot show (each would need a reference of its own); expected a prompt without demos"
            )
        self.leaf, self.mode, self.task, self.max_tokens, self.policy = leaf, mode, task, max_tokens, policy
        self.name = _NAMES[mode]
        self.work = solved_work(leaf.prompt) if mode == "solve" and not task else None
        self.prompt, self.slots = with_reference(leaf.prompt, mode, policy, self.work)

    def around(self, leaf: PromptJudge) -> Judge:
        return own_reference(leaf, self.mode, self.task, self.max_tokens, self.policy)

    def refusal(self, new: Judge) -> str:
        if isinstance(new, OwnReferenceJudge):
            return (
                f"{self.name} and {new.name} would each show the judge a reference of its own; "
                "expected one of them (one reference per judged item)"
            )
        return super().refusal(new)

    def describe(self) -> dict[str, Any]:
        settings = {"task": self.task, "max_tokens": self.max_tokens, "policy": self.policy}
        return {"kind": self.name, **settings, "leaf": self.leaf.describe()}

    def score_bounds(self) -> dict[str, tuple[float, float]] | None:
        return self.leaf.score_bounds()

    def _with_answer(self, item: Item, answer: str, *, check: bool = True) -> Item:
        inputs = dict(item.inputs)
        update: dict[str, Any] = {}
        for s in self.slots:
            field = self.prompt._field_for(s)
            if check and s in reference_slots(self.leaf.prompt) and field_text(item, field) is not None:
                raise DataError(
                    f"item {item.id!r} brings its own reference for the template's {{{{{s}}}}}; "
                    f"{self.name} would replace it with the judge's: expected items without one "
                    f"(or leave {self.name} out)",
                    item_id=item.id,
                )
            if field == "reference":
                update["reference"] = answer
            else:
                inputs[field] = answer
        return item.model_copy(update={**update, "inputs": inputs})

    def _first(self, item: Item) -> LMRequest:
        return first_request(
            self.leaf, item, self.mode, task=self.task, max_tokens=self.max_tokens, work=self.work
        )

    def requests(self, item: Item) -> list[PlannedRequest]:
        what = (
            "the judge's own answer to the task"
            if self.mode == "solve"
            else "the judge's revision into a reference"
        )
        first = self.leaf.plan(
            self._first(item), item, f"free text: {what}, shown as the reference in the next request"
        ).under(self.mode)
        judge = PromptJudge(self.prompt, self.leaf.lm, self.leaf.config)
        # an item's own reference is refused when judging
        shown = self._with_answer(item, PLACEHOLDER, check=False)
        cond = f"sent after the {self.mode} request; its answer stands where {PLACEHOLDER!r} is shown"
        return [
            first,
            *(
                r.model_copy(update={"item_id": item.id}).under("judge", condition=cond)
                for r in judge.requests(shown)
            ),
        ]

    async def judge(self, item: Item) -> Judgment:
        response = await self.leaf.lm.complete(self._first(item))
        answer = response.text.strip() if response.choices else ""
        cost = 0.0 if response.cached else response.cost_usd
        calls, cached = (0, 1) if response.cached else (1, 0)
        if not answer:
            return Judgment(
                item_id=item.id,
                error=f"{self.name}: the judge's {self.mode} call returned no text",
                usage=response.usage,
                cost_usd=cost,
                calls=calls,
                cached_calls=cached,
            )
        judge = PromptJudge(self.prompt, self.leaf.lm, self.leaf.config)
        j = await judge.judge(self._with_answer(item, answer))
        return j.model_copy(
            update={
                "usage": j.usage + response.usage,
                "cost_usd": combine_costs([j.cost_usd, cost]),
                "calls": j.calls + calls,
                "cached_calls": j.cached_calls + cached,
                "meta": {**j.meta, "own_reference": {"mode": self.mode, "text": answer, "slots": self.slots}},
            }
        )


def own_reference(judge: Judge, mode: Mode, task: str | None, max_tokens: int, policy: Policy) -> Judge:
    """``judge`` with every prompt judge writing its own reference first (:class:`OwnReferenceJudge`)."""
    return judge.map_leaves(
        lambda leaf: OwnReferenceJudge(leaf, mode=mode, task=task, max_tokens=max_tokens, policy=policy)
    )


@register("mitigation", "solve-first")
class SolveFirst(Mitigation):
    """The judge answers the task first, then judges with its own answer as the reference (Krumdick et al.
    2025).

    Parameters:
        task: one sentence saying what the task is, shown above the task inputs in the first call.
        max_tokens: the budget of the judge's own answer.
        on_reference_slot: for a template with its own reference slot, "fill" it or "refuse" the template.

    Two calls per judged item; a template showing no task input besides the judged text(s) is refused.
    """

    paper = "Krumdick et al. 2025; Zheng et al. 2023"

    task: str | None = None
    max_tokens: int = 512
    on_reference_slot: Literal["fill", "refuse"] = "fill"
    parameter_constraints: ClassVar = {
        "task": [IsInstance(str), None],
        "max_tokens": [Interval(int, 1)],
        "on_reference_slot": [Options("fill", "refuse")],
    }

    @classmethod
    def examples(cls) -> list[Mitigation]:
        return [cls(), cls(task="Summarise the article.", max_tokens=200, on_reference_slot="refuse")]

    def wrap(self, judge: Judge) -> Judge:
        """Every prompt judge of ``judge`` writing its own reference first."""
        return own_reference(judge, "solve", self.task, self.max_tokens, self.on_reference_slot)


@register("mitigation", "reference-revision")
class ReferenceRevision(Mitigation):
    """The judge revises the judged text into a reference, then judges against it (Zhang et al. 2025,
    RevisEval).

    Parameters:
        max_tokens: the budget of the revision.
        on_reference_slot: for a template with its own reference slot, "fill" it or "refuse" the template.

    Two calls per judged item; for a pairwise prompt the reviser sees both texts, in the judge's order.
    """

    paper = "Zhang et al. 2025 (RevisEval)"

    max_tokens: int = 512
    on_reference_slot: Literal["fill", "refuse"] = "fill"
    parameter_constraints: ClassVar = {
        "max_tokens": [Interval(int, 1)],
        "on_reference_slot": [Options("fill", "refuse")],
    }

    @classmethod
    def examples(cls) -> list[Mitigation]:
        return [cls(), cls(max_tokens=200, on_reference_slot="refuse")]

    def wrap(self, judge: Judge) -> Judge:
        """Every prompt judge of ``judge`` writing its own reference first."""
        return own_reference(judge, "revise", None, self.max_tokens, self.on_reference_slot)
