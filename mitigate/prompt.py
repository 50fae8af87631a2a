"""The judge prompt as a structured, frozen value.

:meth:`JudgePrompt.from_template` takes a plain judge prompt (a G-Eval style text, or a
system + user pair) with ``{{field}}`` slots and recovers its structure — task
description, criterion (name, definition), scale, and the scoring guideline as separate
:class:`ScoreOption` lines — so that transforms can reorder or lengthen options and insert
demonstrations. Rendering a parsed prompt with no transforms reproduces the original text
exactly.

Slots are filled in a single pass: the judged text is inserted verbatim and never scanned
again, so braces or a "Score: 10" inside it cannot break templating.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from mitigate.data.schema import Item
from mitigate.errors import DataError, TemplateError
from mitigate.lm.base import Message, Role
from mitigate.scale import Scale

SLOT_RE = re.compile(r"\{\{\s*([A-Za-z_][A-Za-z0-9_ ]*?)\s*\}\}")
"""A template slot: ``{{name}}``."""

GUIDELINE_MARK = "\x00guideline\x00"
"""Where the guideline block stood in a parsed template (internal; never reaches an LM)."""

OUTPUT_SLOT_NAMES = ("output", "summary", "response", "answer", "hypothesis", "candidate", "text", "conversation")
"""Slot names taken to hold the judged text when ``output_slot`` is not given (case-insensitive)."""

_WORD_NUMBERS = {
    "zero": 0, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7,
    "eight": 8, "nine": 9, "ten": 10,
}

# Guideline lines: "Score 2 means ...", "Score 2: ...", "- 5: ...", "5 - ...", "A: ... Score: One."
_OPT_SCORE_WORD = re.compile(
    r"^(?P<head>\s*(?:[-*•]\s*)?(?:score|rating|point)s?\s+(?P<num>\d+(?:\.\d+)?)\s*(?:means|=|:|-|–|—|\))\s*)"
    r"(?P<desc>\S.*?)(?P<tail>\s*)$",
    re.IGNORECASE,
)
_OPT_NUMBER = re.compile(
    r"^(?P<head>\s*(?:[-*•]\s*)?\(?(?P<num>\d+(?:\.\d+)?)\)?\s*(?::|-|–|—|=|\))\s*)(?P<desc>\S.*?)(?P<tail>\s*)$"
)
_OPT_LETTER = re.compile(
    r"^(?P<head>\s*(?:[-*•]\s*)?\(?(?P<letter>[A-J])\)?\s*[:.)]\s*)(?P<desc>\S.*?)"
    r"(?P<tail>\s*(?:score|points?)\s*[:=]?\s*(?P<num>\d+|[A-Za-z]+)\s*\.?\s*)$",
    re.IGNORECASE,
)
_CRITERION_RE = re.compile(
    r"^\s*(?:[-*•]\s*)?(?P<name>[A-Z][A-Za-z /&]{1,40}?)\s*\((?P<lo>\d+)\s*(?:-|–|to)\s*(?P<hi>\d+)\)\s*"
    r"(?:-|–|—|:)\s*(?P<def>\S.*)$",
    re.MULTILINE,
)
_NO_OPTION_HEADERS = re.compile(r"\b(steps?|instructions?|procedure)\b", re.IGNORECASE)


class Criterion(BaseModel):
    """One thing a judge scores: its name, what it means, and optionally its own guideline."""

    model_config = ConfigDict(frozen=True, extra="forbid")
    name: str
    definition: str = ""

    @model_validator(mode="after")
    def _check(self) -> Criterion:
        if not self.name.strip():
            raise TemplateError("a criterion needs a non-empty name; got an empty string")
        return self


class ScoreOption(BaseModel):
    """One line of a scoring guideline: what a given score means.

    The line renders as ``head + description + tail`` so a lengthened description keeps
    the original formatting. ``position`` is the option's index in the original guideline
    (kept through reorderings so answers can be mapped back).
    """

    model_config = ConfigDict(frozen=True, extra="forbid")
    label: str
    score: float
    description: str
    head: str = ""
    tail: str = ""
    position: int = 0

    @property
    def text(self) -> str:
        """The line as it appears in the prompt."""
        return f"{self.head}{self.description}{self.tail}"

    def with_description(self, description: str) -> ScoreOption:
        """A copy whose description is replaced (e.g. lengthened); returns a new option."""
        return self.model_copy(update={"description": description})


class Guideline(BaseModel):
    """The ordered score options and the exact text that separated them in the template."""

    model_config = ConfigDict(frozen=True, extra="forbid")
    options: tuple[ScoreOption, ...]
    separators: tuple[str, ...] = ()

    @model_validator(mode="after")
    def _check(self) -> Guideline:
        if len(self.options) < 2:
            raise TemplateError(f"a guideline needs at least 2 options; got {len(self.options)}")
        if self.separators and len(self.separators) != len(self.options) - 1:
            raise TemplateError(
                f"a guideline with {len(self.options)} options needs {len(self.options) - 1} separators; "
                f"got {len(self.separators)}"
            )
        return self

    def render(self) -> str:
        """The guideline text: options in their current order, original separators in place."""
        seps = self.separators or ("\n",) * (len(self.options) - 1)
        out = [self.options[0].text]
        for sep, opt in zip(seps, self.options[1:], strict=True):
            out.append(sep)
            out.append(opt.text)
        return "".join(out)

    def reordered(self, order: Sequence[int]) -> Guideline:
        """A copy with options in ``order`` (indices into the current tuple); separators stay put."""
        if sorted(order) != list(range(len(self.options))):
            raise TemplateError(
                f"expected a permutation of 0..{len(self.options) - 1}; got {list(order)}"
            )
        return self.model_copy(update={"options": tuple(self.options[i] for i in order)})


class Demo(BaseModel):
    """A worked example shown to the judge: an item and its gold score (and optional reason).

    ``guideline`` lets a demo be shown under its own (e.g. perturbed) guideline, as in
    Ghazarian et al.'s perturbed-guideline demonstrations.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")
    item: Item
    score: float | dict[str, float]
    reason: str | None = None
    guideline: Guideline | None = None

    @classmethod
    def from_item(
        cls,
        item: Item,
        criterion: str,
        reason: str | None = None,
        *,
        human_scale: Scale | None = None,
        prompt_scale: Scale | None = None,
    ) -> Demo:
        """A demo showing ``item`` with its human score for ``criterion``.

        When both scales are given the human score is mapped linearly from ``human_scale``
        onto ``prompt_scale`` (e.g. a WebNLG 0–100 rating shown to a 1–5 judge) and rounded
        to the prompt scale's step, so the demo answers the way the judge is asked to.
        """
        if criterion not in item.human:
            raise DataError(
                f"item {item.id!r} has no human score for {criterion!r}; expected one of {sorted(item.human)}",
                item_id=item.id,
            )
        score = item.human[criterion]
        if human_scale is not None and prompt_scale is not None and human_scale != prompt_scale:
            score = prompt_scale.snap(prompt_scale.min + human_scale.normalise(score) * (prompt_scale.max - prompt_scale.min))
        return cls(item=item, score=score, reason=reason)


class PromptMessage(BaseModel):
    """One message of a prompt template (role + text with ``{{slots}}``)."""

    model_config = ConfigDict(frozen=True, extra="forbid")
    role: Role
    template: str


Layout = Literal["invariant_first", "as_written"]


class JudgePrompt(BaseModel):
    """A judge prompt: message templates plus the structure recovered from them.

    - ``messages``: the templates; a parsed guideline is replaced by an internal mark and
      rendered from ``guideline`` so transforms can change it.
    - ``task``: the task description (first paragraph of the instructions).
    - ``criteria``: what is scored (one for a G-Eval prompt; several for a multi-attribute one).
    - ``scale``: the answer scale; ``answer``: "score" (a number), "mcq" (a letter mapped by
      ``scale.letters``) or "pairwise" (a verdict between two outputs).
    - ``output_slot``: the slot holding the judged text; ``slot_fields`` maps other slot
      names to item fields when they differ (e.g. ``{"Document": "source"}``).
    - ``demos``: demonstrations, rendered with ``demo_template`` and inserted before the
      first paragraph that holds an item slot (layout "invariant_first", so instructions and
      demos form a prefix shared by every item) or right after the guideline ("as_written").
    """

    model_config = ConfigDict(frozen=True, extra="forbid")
    messages: tuple[PromptMessage, ...]
    task: str = ""
    criteria: tuple[Criterion, ...] = ()
    scale: Scale = Field(default_factory=Scale)
    answer: Literal["score", "mcq", "pairwise"] = "score"
    guideline: Guideline | None = None
    output_slot: str = "output"
    slot_fields: dict[str, str] = Field(default_factory=dict)
    demos: tuple[Demo, ...] = ()
    demo_template: str = "{inputs}{output_name}: {output}\n{guideline}{reason}{criterion}: {score}"
    demo_header: str = "Examples:\n\n"
    demo_separator: str = "\n\n"
    layout: Layout = "invariant_first"

    @model_validator(mode="after")
    def _check(self) -> JudgePrompt:
        if not self.messages:
            raise TemplateError("a judge prompt needs at least one message; got none")
        found = self.slots()
        if self.output_slot not in found:
            raise TemplateError(
                f"expected a slot {{{{{self.output_slot}}}}} for the judged text in the template; "
                f"found slots {sorted(found) or 'none'}",
            )
        marks = sum(m.template.count(GUIDELINE_MARK) for m in self.messages)
        if (self.guideline is None) != (marks == 0) or marks > 1:
            raise TemplateError(
                f"expected one guideline mark when a guideline is set and none otherwise; got {marks} mark(s) "
                f"and guideline={'set' if self.guideline else 'None'}"
            )
        return self

    # ------------------------------------------------------------------ building
    @classmethod
    def from_template(
        cls,
        text: str,
        *,
        system: str | None = None,
        scale: Scale | tuple[float, float] | None = None,
        criterion: str | Criterion | None = None,
        criteria: Sequence[str | Criterion] | None = None,
        output_slot: str | None = None,
        slot_fields: Mapping[str, str] | None = None,
        answer: Literal["score", "mcq", "pairwise"] | None = None,
        parse_guideline: bool = True,
    ) -> JudgePrompt:
        """Recover a :class:`JudgePrompt` from a plain prompt with ``{{field}}`` slots.

        ``text`` is the user message; ``system`` an optional system message. ``scale``,
        ``criterion``/``criteria`` and ``output_slot`` override what is recovered from the
        text. Guideline lines such as "Score 2 means ...", "5: ..." or
        "A: ... Score: One." become separate options when ``parse_guideline`` is True.
        """
        if not isinstance(text, str):
            raise TemplateError(f"expected the prompt template as a str; got {type(text).__name__}")
        raw_messages: list[tuple[Role, str]] = []
        if system is not None:
            raw_messages.append(("system", system))
        raw_messages.append(("user", text))

        all_slots = [s for _, t in raw_messages for s in _slot_names(t)]
        out_slot = output_slot or _guess_output_slot(all_slots)
        if out_slot is None or out_slot not in all_slots:
            raise TemplateError(
                "expected a slot for the judged text, e.g. {{output}} or {{summary}}"
                + (f" (output_slot={output_slot!r})" if output_slot else "")
                + f"; found slots {sorted(set(all_slots)) or 'none'}"
            )

        # criterion and scale from a "Name (1-5) - definition" line, when present
        found_crit: Criterion | None = None
        found_scale: Scale | None = None
        for _, t in raw_messages:
            m = _CRITERION_RE.search(t)
            if m:
                found_crit = Criterion(name=m.group("name").strip().lower(), definition=m.group("def").strip())
                lo, hi = int(m.group("lo")), int(m.group("hi"))
                if lo < hi:
                    found_scale = Scale(min=lo, max=hi)
                break

        # guideline options
        guideline: Guideline | None = None
        templates = [t for _, t in raw_messages]
        if parse_guideline:
            for idx, t in enumerate(templates):
                located = _find_guideline(t)
                if located is not None:
                    start, end, gl = located
                    guideline = gl
                    templates[idx] = t[:start] + GUIDELINE_MARK + t[end:]
                    break

        inferred_answer: Literal["score", "mcq", "pairwise"] = "score"
        final_scale = Scale.of(scale) if scale is not None else found_scale
        if guideline is not None and all(o.label.isalpha() for o in guideline.options):
            inferred_answer = "mcq"
            letters = {o.label.upper(): o.score for o in guideline.options}
            base = final_scale or Scale(
                min=min(letters.values()), max=max(letters.values())
            )
            final_scale = base.model_copy(update={"letters": letters})
            final_scale = Scale.model_validate(final_scale.model_dump())
        if final_scale is None and guideline is not None:
            scores = [o.score for o in guideline.options]
            if min(scores) < max(scores):
                final_scale = Scale(min=min(scores), max=max(scores))
        final_scale = final_scale or Scale()

        crits: tuple[Criterion, ...]
        if criteria is not None:
            crits = tuple(_as_criterion(c) for c in criteria)
        elif criterion is not None:
            crits = (_as_criterion(criterion),)
        elif found_crit is not None:
            crits = (found_crit,)
        else:
            crits = (Criterion(name="score"),)

        task = _first_paragraph(raw_messages[0][1])
        return cls(
            messages=tuple(PromptMessage(role=r, template=t) for (r, _), t in zip(raw_messages, templates, strict=True)),
            task=task,
            criteria=crits,
            scale=final_scale,
            answer=answer or inferred_answer,
            guideline=guideline,
            output_slot=out_slot,
            slot_fields=dict(slot_fields or {}),
        )

    # ------------------------------------------------------------------ transforms (each returns a copy)
    def with_guideline(self, guideline: Guideline) -> JudgePrompt:
        """A copy with another guideline (same mark); the prompt must have had one."""
        if self.guideline is None:
            raise TemplateError("this prompt has no parsed guideline to replace; expected one from from_template")
        return self.model_copy(update={"guideline": guideline})

    def with_demos(self, demos: Sequence[Demo]) -> JudgePrompt:
        """A copy with ``demos`` (replacing any demos it had)."""
        return self.model_copy(update={"demos": tuple(demos)})

    def with_layout(self, layout: Layout) -> JudgePrompt:
        """A copy with another demo layout."""
        return self.model_copy(update={"layout": layout})

    def with_criteria(self, criteria: Sequence[Criterion]) -> JudgePrompt:
        """A copy scoring ``criteria``."""
        return self.model_copy(update={"criteria": tuple(criteria)})

    def with_scale(self, scale: Scale) -> JudgePrompt:
        """A copy on another answer scale."""
        return self.model_copy(update={"scale": scale})

    def map_templates(self, fn: Callable[[PromptMessage], PromptMessage]) -> JudgePrompt:
        """A copy with every message template passed through ``fn``."""
        return self.model_copy(update={"messages": tuple(fn(m) for m in self.messages)})

    # ------------------------------------------------------------------ rendering
    def slots(self) -> set[str]:
        """Names of every ``{{slot}}`` in the templates."""
        return {s for m in self.messages for s in _slot_names(m.template)}

    def template_text(self) -> list[str]:
        """The templates with the guideline put back (slots unfilled): the text the prompt was parsed from."""
        gl = self.guideline.render() if self.guideline else ""
        return [m.template.replace(GUIDELINE_MARK, gl) for m in self.messages]

    def render(self, item: Item) -> tuple[Message, ...]:
        """Chat messages for judging ``item``: guideline, demos and slots filled in one pass."""
        guideline_text = self.guideline.render() if self.guideline else ""
        demos_text = self.render_demos()
        placed = not demos_text
        out: list[Message] = []
        for m in self.messages:
            template = m.template.replace(GUIDELINE_MARK, guideline_text)
            if not placed:
                template, placed = _insert_demos(template, demos_text, self.layout, guideline_text)
            out.append(Message(role=m.role, content=self._fill(template, item)))
        if not placed:  # no slot paragraph found anywhere: demos go before the last message's text
            last = out[-1]
            out[-1] = Message(role=last.role, content=demos_text + self.demo_separator + last.content)
        return tuple(out)

    def render_demos(self) -> str:
        """The demonstrations block (empty when there are none)."""
        if not self.demos:
            return ""
        crit_name = self.criteria[0].name if self.criteria else "score"
        score_label = "Score" if crit_name.lower() == "score" else f"{_title(crit_name)} score"
        if self.answer == "mcq" and self.scale.letters:
            score_label = "Answer"
        parts = []
        for demo in self.demos:
            inputs = "".join(
                f"{_title(s)}: {value}\n"
                for s in self._input_slots()
                if (value := _lookup(demo.item, self._field_for(s))) is not None
            )
            label = score_label
            if isinstance(demo.score, dict) and len(self.criteria) > 1 and all(
                    c.name in demo.score for c in self.criteria):
                # a multi-criterion prompt answers one line per criterion: the demo answers the same way
                names = [c.name for c in self.criteria]
                label = answer_label(names[0])
                score_text = "\n".join([self._answer_text(demo.score[names[0]]),
                                        *(f"{answer_label(n)}: {self._answer_text(demo.score[n])}" for n in names[1:])])
            elif isinstance(demo.score, dict):
                score_text = ", ".join(f"{k}: {self._answer_text(v)}" for k, v in demo.score.items())
            else:
                score_text = self._answer_text(demo.score)
            parts.append(
                self.demo_template.format(
                    inputs=inputs,
                    output_name=_title(self.output_slot),
                    output=demo.item.output,
                    guideline=(f"Scoring guideline:\n{demo.guideline.render()}\n" if demo.guideline else ""),
                    reason=(f"Reason: {demo.reason}\n" if demo.reason else ""),
                    criterion=label,
                    score=score_text,
                )
            )
        return self.demo_header + self.demo_separator.join(parts)

    def _answer_text(self, score: float) -> str:
        """How a gold score is written in a demo: the number, or for MCQ the nearest option's letter."""
        if self.answer == "mcq" and self.scale.letters:
            return min(self.scale.letters.items(), key=lambda kv: (abs(kv[1] - score), kv[0]))[0]
        return _fmt(score)

    def _input_slots(self) -> list[str]:
        """Slots other than the judged text, in order of first appearance."""
        seen: list[str] = []
        for m in self.messages:
            for name in _slot_names(m.template):
                if name != self.output_slot and name not in seen:
                    seen.append(name)
        return seen

    def _field_for(self, slot: str) -> str:
        if slot == self.output_slot:
            return "output"
        return self.slot_fields.get(slot, slot)

    def _fill(self, template: str, item: Item) -> str:
        def repl(match: re.Match[str]) -> str:
            name = match.group(1).strip()
            field = self._field_for(name)
            value = _lookup(item, field)
            if value is None:
                raise DataError(
                    f"slot {{{{{name}}}}} needs item field {field!r}; item {item.id!r} has "
                    f"{['output', *item.inputs]} (map it with slot_fields={{{name!r}: '<field>'}})",
                    item_id=item.id,
                )
            return value

        return SLOT_RE.sub(repl, template)

    def fingerprint(self) -> str:
        """A short digest of the prompt's content, for journals and replay keys."""
        import hashlib

        return hashlib.sha256(self.model_dump_json().encode()).hexdigest()[:16]


_FIELD_ALIASES: dict[str, tuple[str, ...]] = {
    "document": ("source", "article", "text"),
    "source": ("document", "article", "context"),
    "article": ("source", "document"),
    "context": ("dialogue", "source", "history"),
    "dialogue": ("context", "history"),
    "input": ("source", "document", "context", "triples"),
    "triples": ("input", "source", "data"),
    "data": ("triples", "input", "source"),
}


def _lookup(item: Item, field: str) -> str | None:
    """The item's text for ``field``, trying common aliases (document/source/article ...); None if absent."""
    for name in (field, *_FIELD_ALIASES.get(field.lower(), ())):
        try:
            return item.field(name)
        except DataError:
            continue
    return None


def field_text(item: Item, field: str) -> str | None:
    """The item's text for ``field`` as prompts read it (aliases such as document/source are tried); None if absent."""
    return _lookup(item, field)


def answer_label(name: str) -> str:
    """A criterion name as written in answer lines ("coherence" -> "Coherence"); parsing is case-insensitive."""
    return name[:1].upper() + name[1:]


def _title(name: str) -> str:
    return name.replace("_", " ").strip().capitalize()


def _fmt(v: float) -> str:
    return str(int(v)) if float(v).is_integer() else f"{v:g}"


def _slot_names(text: str) -> list[str]:
    return [m.group(1).strip() for m in SLOT_RE.finditer(text)]


def _guess_output_slot(slots: Sequence[str]) -> str | None:
    lowered = {s.lower(): s for s in slots}
    for name in OUTPUT_SLOT_NAMES:
        if name in lowered:
            return lowered[name]
    return None


def _as_criterion(c: str | Criterion) -> Criterion:
    return c if isinstance(c, Criterion) else Criterion(name=c)


def _first_paragraph(text: str) -> str:
    para = re.split(r"\n\s*\n", text.strip(), maxsplit=1)[0].strip()
    return "" if SLOT_RE.search(para) else para


def _insert_demos(template: str, demos: str, layout: Layout, guideline_text: str) -> tuple[str, bool]:
    """Place the demos block in one message template; returns (template, placed)."""
    if layout == "as_written" and guideline_text and guideline_text in template:
        i = template.index(guideline_text) + len(guideline_text)
        return template[:i] + "\n\n" + demos + template[i:], True
    m = SLOT_RE.search(template)
    if m is None:
        return template, False
    # start of the paragraph holding the first slot
    para_start = max(template.rfind("\n\n", 0, m.start()), -2) + 2
    if para_start < 0:
        para_start = 0
    return template[:para_start] + demos + "\n\n" + template[para_start:], True


def _option_from_line(line: str, pattern: re.Pattern[str]) -> ScoreOption | None:
    m = pattern.match(line)
    if m is None:
        return None
    gd = m.groupdict()
    if "letter" in gd and gd.get("letter"):
        num = gd["num"]
        score = float(num) if num.isdigit() else _WORD_NUMBERS.get(num.lower())
        if score is None:
            return None
        label = gd["letter"]
    else:
        score = float(gd["num"])
        label = gd["num"]
    return ScoreOption(label=label, score=score, description=gd["desc"], head=gd["head"], tail=gd["tail"])


def _find_guideline(text: str) -> tuple[int, int, Guideline] | None:
    """Locate a block of >= 2 consecutive guideline lines; returns (start, end, guideline)."""
    lines = text.splitlines(keepends=True)
    offsets = [0]
    for ln in lines:
        offsets.append(offsets[-1] + len(ln))
    for pattern in (_OPT_SCORE_WORD, _OPT_LETTER, _OPT_NUMBER):
        i = 0
        while i < len(lines):
            opt = _option_from_line(lines[i].rstrip("\r\n"), pattern)
            if opt is None:
                i += 1
                continue
            block: list[tuple[int, ScoreOption]] = [(i, opt)]
            j = i + 1
            while j < len(lines):
                if not lines[j].strip():  # allow blank lines between options
                    k = j
                    while k < len(lines) and not lines[k].strip():
                        k += 1
                    if k < len(lines) and _option_from_line(lines[k].rstrip("\r\n"), pattern):
                        j = k
                        continue
                    break
                nxt = _option_from_line(lines[j].rstrip("\r\n"), pattern)
                if nxt is None:
                    break
                block.append((j, nxt))
                j += 1
            if len(block) >= 2 and _plausible(block, pattern, lines, i):
                start = offsets[block[0][0]]
                last_line = lines[block[-1][0]]
                end = offsets[block[-1][0]] + len(last_line.rstrip("\r\n"))
                options = []
                separators = []
                for n, (ln_idx, o) in enumerate(block):
                    options.append(o.model_copy(update={"position": n}))
                    if n:
                        prev_idx = block[n - 1][0]
                        prev_end = offsets[prev_idx] + len(lines[prev_idx].rstrip("\r\n"))
                        separators.append(text[prev_end : offsets[ln_idx]])
                gl = Guideline(options=tuple(options), separators=tuple(separators))
                return start, end, gl
            i = j
    return None


def _plausible(
    block: list[tuple[int, ScoreOption]], pattern: re.Pattern[str], lines: list[str], first: int
) -> bool:
    """Guard against numbered instruction steps being read as score options."""
    scores = [o.score for _, o in block]
    if len(set(scores)) != len(scores):
        return False
    if pattern is _OPT_NUMBER:
        header = "".join(lines[max(0, first - 2) : first])
        if _NO_OPTION_HEADERS.search(header):
            return False
        # plain "N: ..." lines must cover a contiguous integer range
        ints = sorted(scores)
        if any(s != int(s) for s in ints) or ints != list(range(int(ints[0]), int(ints[0]) + len(ints))):
            return False
    return True


def demo_field_names(prompt: JudgePrompt) -> list[str]:
    """The item fields a demo for ``prompt`` must carry (its non-output slots)."""
    return [prompt._field_for(s) for s in prompt._input_slots()]


def prompt_from_spec(spec: Mapping[str, Any]) -> JudgePrompt:
    """Rebuild a prompt from ``model_dump()`` output."""
    return JudgePrompt.model_validate(dict(spec))
