"""Reading a judge template as published into the fields of a judge prompt, with the evidence for each
(:func:`read_fields`; the notation is :mod:`._syntax`'s, the clues in the words :mod:`._clues`'), and what a
caller tells the reader beyond the text (:class:`TemplateHints`, one value passed whole)."""

from __future__ import annotations

import itertools
import re
from collections.abc import Mapping, Sequence
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, ValidationError, field_validator

from mitigate.errors import ConfigError, TemplateError
from mitigate.prompt._parts import (
    GUIDELINE_MARK,
    SLOT_RE,
    Criterion,
    Guideline,
    PromptMessage,
    ScoreOption,
    format_number,
    slot_names,
)
from mitigate.prompt.answer._format import AnswerFormat
from mitigate.prompt.answer._infer import infer_answer_format
from mitigate.prompt.read._clues import (
    choose_scale,
    find_criterion,
    find_pair,
    find_scales,
    guess_output_slot,
    pair_labels,
)
from mitigate.prompt.read._syntax import placeholder_hint, read_template
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


_WORD_NUMBERS = {w: i for i, w in enumerate("zero one two three four five six seven eight nine ten".split())}

# Guideline lines: "Score 2 means ...", "- A score of 1 (no) means ...", "score2_description: ...",
# "- 5: ...", "5 - ...", "A: ... Score: One.", "(A) ..."
_OPT_SCORE_WORD = re.compile(
    r"^(?P<head>\s*(?:[-*•]\s*)?(?:(?:an?\s+)?(?:score|rating|point)s?\s+(?:of\s+)?(?P<num>\d+(?:\.\d+)?)"
    r"(?:\s*\([^()\n]{1,24}\))?\s*(?:means|indicates|=|:|-|–|—|\))|\"?score(?P<num2>\d+)_description\"?\s*:)\s*)"
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
_OPT_LETTER_PLAIN = re.compile(
    r"^(?P<head>\s*(?:[-*•]\s*)?\((?P<letter>[A-J])\)\s+)(?P<desc>\S.*?)(?P<tail>\s*)$"
)
_NO_OPTION_HEADERS = re.compile(
    r"\b(steps?|instructions?|procedure|rules?|requirements?|notes?)\b", re.IGNORECASE
)


def _option_from_line(line: str, pattern: re.Pattern[str]) -> ScoreOption | None:
    m = pattern.match(line)
    if m is None:
        return None
    gd = m.groupdict()
    score: float | None
    if gd.get("letter"):
        num, label = gd.get("num"), gd["letter"]  # "(A) ..." states no score
        score = None if num is None else float(num) if num.isdigit() else _WORD_NUMBERS.get(num.lower())
        if num is not None and score is None:
            return None
    else:
        label = gd.get("num") or gd.get("num2")
        if label is None:
            return None
        score = float(label)
    return ScoreOption(label=label, score=score, description=gd["desc"], head=gd["head"], tail=gd["tail"])


def _find_guideline(
    text: str, scale_hint: tuple[float, float] | None = None, *, numbered: bool = True
) -> tuple[int, int, Guideline] | None:
    """(start, end, guideline) of the first block of >= 2 guideline lines; plainly numbered lines ("1: ...")
    only when they run over ``scale_hint``, and never with ``numbered=False``."""
    lines = text.splitlines(keepends=True)
    bodies = [ln.rstrip("\r\n") for ln in lines]
    offsets = [0, *itertools.accumulate(len(ln) for ln in lines)]
    ends = [offsets[i] + len(body) for i, body in enumerate(bodies)]
    for pattern in (_OPT_SCORE_WORD, _OPT_LETTER, _OPT_LETTER_PLAIN, *((_OPT_NUMBER,) if numbered else ())):
        i = 0
        while i < len(lines):
            opt = _option_from_line(bodies[i], pattern)
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
                    if k < len(lines) and _option_from_line(bodies[k], pattern):
                        j = k
                        continue
                    break
                nxt = _option_from_line(bodies[j], pattern)
                if nxt is None:
                    break
                block.append((j, nxt))
                j += 1
            if len(block) >= 2 and _plausible(block, pattern, lines, i, scale_hint):
                at = [n for n, _ in block]
                options = tuple(o.model_copy(update={"position": n}) for n, (_, o) in enumerate(block))
                separators = tuple(text[ends[a] : offsets[b]] for a, b in zip(at, at[1:], strict=False))
                return offsets[at[0]], ends[at[-1]], Guideline(options=options, separators=separators)
            i = j
    return None


def _plausible(
    block: list[tuple[int, ScoreOption]],
    pattern: re.Pattern[str],
    lines: list[str],
    first: int,
    scale_hint: tuple[float, float] | None = None,
) -> bool:
    """Guard against numbered instruction steps being read as score options."""
    if pattern is _OPT_LETTER_PLAIN:
        letters = [o.label for _, o in block]
        return letters == [chr(ord("A") + k) for k in range(len(letters))]
    scores = [o.score for _, o in block]
    if len(set(scores)) != len(scores) or any(s is None for s in scores):
        return False
    values = [float(s) for s in scores if s is not None]
    if pattern is _OPT_NUMBER:
        header = "".join(lines[max(0, first - 2) : first])
        if _NO_OPTION_HEADERS.search(header):
            return False
        # plain "N: ..." lines must cover a contiguous integer range
        ints = sorted(values)
        if any(s != int(s) for s in ints) or ints != list(range(int(ints[0]), int(ints[0]) + len(ints))):
            return False
        if scale_hint is not None and (min(ints), max(ints)) != tuple(scale_hint):
            return False
    elif scale_hint is not None and pattern is _OPT_SCORE_WORD:
        lo, hi = scale_hint
        if any(not lo <= v <= hi for v in values):
            return False
    return True


_CHOICE = re.compile(
    r"\b(?:print|output|answer|respond|reply|write|return|select|choose|give)\b[^.\n]{0,60}?"
    r"\b(?:character|letter|choice)s?\b[^.\n]{0,30}?"
    r"(?P<letters>[\"'“‘`(]?[A-Z][\"'”’`)]?(?:\s*,\s*[\"'“‘`(]?[A-Z][\"'”’`)]?)*\s*,?\s*(?:or|and)\s*"
    r"[\"'“‘`(]?[A-Z][\"'”’`)]?)(?![A-Za-z])"
)
_CHOICE_SCORES: dict[tuple[str, ...], dict[str, float]] = {("N", "Y"): {"Y": 1.0, "N": 0.0}}
"""Scores of choice letters (sorted) that carry their own meaning: Y (yes) = 1, N (no) = 0."""


def choice_text(text: str) -> str:
    """The words of ``text`` asking for a choice letter ("print only the single character Y or N"), or ""."""
    m = _CHOICE.search(text)
    return m.group(0) if m else ""


def _choice_letters(text: str) -> list[str] | None:
    """The letters a template asks the judge to answer with ("... Y or N" -> [Y, N]), or None."""
    m = _CHOICE.search(text)
    if m is None:
        return None
    letters = list(dict.fromkeys(re.findall(r"[A-Z]", re.sub(r"\b(?:or|and)\b", " ", m.group("letters")))))
    return letters if len(letters) >= 2 else None


def _guess_labels(text: str) -> tuple[str, str] | None:
    """Pairwise labels named by the instructions when no heading labels the slots ("[[A]]", "Output (a)")."""
    for pattern, pair in (
        (r"\[\[\s*A\s*\]\]", ("A", "B")),
        (r"\bOutput\s*\(\s*a\s*\)", ("a", "b")),
        (r"(?<![\w`])`?m`?\s+or\s+`?M`?(?![\w`])", ("m", "M")),
        (r"\b(?:Response|Assistant|Output|Answer|Summary)\s+A\b", ("A", "B")),
        (r"\b(?:Response|Assistant|Output|Answer|Summary)\s*#?\s*1\b", ("1", "2")),
    ):
        if re.search(pattern, text):
            return pair
    return None


def read_fields(
    text: str, hints: TemplateHints | None = None, *, system: str | None = None
) -> tuple[dict[str, Any], list[str]]:
    """The fields of the judge prompt read from ``text`` (and ``system``), ``hints`` overriding what is read,
    and the evidence: one line per field saying what was found and where, given, or defaulted."""
    given = hints if hints is not None else TemplateHints()
    scale, criterion, criteria = given.scale, given.criterion, given.criteria
    output_slot, slot_fields, answer = given.output_slot, given.slot_fields, given.answer
    constants, labels, tie, letters = given.constants, given.labels, given.tie, given.letters
    parse_guideline, answer_format = given.parse_guideline, given.answer_format
    if not isinstance(text, str):
        raise TemplateError(f"expected the prompt template as a str; got {type(text).__name__}")
    read = read_template(text, system, constants)
    source = read.source
    texts = [t for _, t in read.messages]
    joined = "\n\n".join(texts)
    all_slots = [s for t in texts for s in slot_names(t)]
    fields = dict(slot_fields or {})
    evidence: list[str] = []
    roles = ", ".join(r for r, _ in read.messages)
    evidence.append(
        f"template: {source.syntax} placeholders"
        + (f", {source.markup} chat markup" if source.markup else "")
        + f"; messages: {roles}"
        + (f"; constants filled: {', '.join(source.constants)}" if source.constants else "")
    )

    # the judged text (and the second one of a pairwise template)
    pair = find_pair(all_slots) if answer in (None, "pairwise") and output_slot is None else None
    second_given = bool(output_slot) and "output_b" in fields.values()
    if answer == "pairwise" and pair is None and not second_given:
        raise TemplateError(
            "a pairwise prompt needs two slots for the judged texts (e.g. {{output_1}} and {{output_2}}, or "
            f"{{{{output}}}} and {{{{output_b}}}}); found slots {sorted(set(all_slots)) or 'none'}"
        )
    out_slot = output_slot or (pair[0] if pair else guess_output_slot(all_slots))
    if out_slot is None or out_slot not in all_slots:
        seen = sorted(set(all_slots))
        raise TemplateError(
            "expected a slot for the judged text, e.g. {{output}}, {{summary}} or {response}"
            + (f" (the judged-text slot given: {output_slot!r})" if output_slot else "")
            + (
                f"; found slots {seen}, none of them a known judged-text name (name it with --output-slot "
                "NAME; output_slot= in Python)"
                if seen
                else f"; found no {{{{slot}}}} or {{slot}} placeholder (placeholder-like text seen: "
                f"{placeholder_hint(text)})"
            )
        )
    if pair is not None:
        fields.setdefault(pair[1], "output_b")
    other_slots = [s for s in dict.fromkeys(all_slots) if s != out_slot and not (pair and s == pair[1])]
    evidence.append(
        f"judged text: {{{{{out_slot}}}}}"
        + (f"; second judged text: {{{{{pair[1]}}}}} (item field output_b)" if pair else "")
        + (f"; other slots: {', '.join('{{' + s + '}}' for s in other_slots)}" if other_slots else "")
    )

    # scale statements and criterion
    statements = find_scales(joined)
    found_crit = find_criterion(joined)
    stated = choose_scale(statements)
    hint = (scale.min, scale.max) if scale is not None else stated

    # guideline options
    guideline: Guideline | None = None
    templates = list(texts)
    if parse_guideline:
        for idx, t in enumerate(templates):
            # a pairwise template's plainly numbered lines are its rules, not score options
            located = _find_guideline(t, hint, numbered=pair is None or answer == "score")
            if located is not None:
                start, end, gl = located
                guideline = gl
                templates[idx] = t[:start] + GUIDELINE_MARK + t[end:]
                break

    # what kind of answer
    letter_options = guideline is not None and all(o.label.isalpha() for o in guideline.options)
    choice = None if guideline is not None or pair is not None else _choice_letters(joined)
    kind: Literal["score", "mcq", "pairwise"] = answer or (
        "pairwise" if pair is not None else "mcq" if letter_options or choice else "score"
    )
    if kind == "mcq" and choice is not None and letters is None and scale is None:
        letters = _CHOICE_SCORES.get(tuple(sorted(choice)))
        evidence.append(
            f"answer letters {'/'.join(choice)} from {choice_text(joined)!r}"
            + (
                ", scored " + ", ".join(f"{k}={format_number(v)}" for k, v in letters.items())
                if letters is not None
                else ": pass letters={...} to score them"
            )
        )
    if answer_format is not None:
        kind = answer_format.kind

    # the scale
    final_scale: Scale | None = scale
    how_scale = "given" if scale is not None else ""
    if final_scale is None and stated is not None:
        final_scale = Scale(min=stated[0], max=stated[1])
        used = next(s for s in statements if (s.lo, s.hi) == stated)
        how_scale = f"from {used.text.strip()!r}"
        others = sorted({(s.lo, s.hi) for s in statements} - {stated})
        if others:
            how_scale += "; other ranges stated: " + ", ".join(f"{lo:g}-{hi:g}" for lo, hi in others)
    if kind == "mcq" and guideline is not None:
        scored = [(o.label.upper(), o.score) for o in guideline.options]
        letter_map: dict[str, float] | None = None
        if letters is not None:
            letter_map = dict(letters)
        elif all(score is not None for _, score in scored):
            letter_map = {label: float(score) for label, score in scored if score is not None}
        if letter_map:
            lo, hi = min(letter_map.values()), max(letter_map.values())
            base = (final_scale or Scale(min=lo, max=hi)) if lo < hi else Scale(min=0, max=1)
            final_scale = Scale.model_validate({**base.model_dump(), "letters": letter_map})
            how_scale = how_scale or (
                "letter scores given" if letters is not None else "from the options' scores"
            )
        else:
            evidence.append(
                f"options {', '.join(o.label for o in guideline.options)} state no scores: pass "
                "letters={...} to score them (answers are read, but cannot become scores)"
            )
    elif letters is not None and kind == "mcq" and guideline is None and choice is not None and scale is None:
        final_scale = Scale(min=min(letters.values()), max=max(letters.values()), letters=dict(letters))
        how_scale = "from the answer letters"
    elif letters is not None and kind == "mcq":
        base = final_scale or Scale(min=min(letters.values()), max=max(letters.values()))
        final_scale = Scale.model_validate({**base.model_dump(), "letters": dict(letters)})
        how_scale = how_scale or "letter scores given"
    if final_scale is None and guideline is not None:
        scores = [o.score for o in guideline.options if o.score is not None]
        if scores and min(scores) < max(scores):
            final_scale = Scale(min=min(scores), max=max(scores))
            how_scale = "from the options' scores"
    if final_scale is None:
        final_scale = Scale()
        how_scale = "default 1-5: the template states no scale"
    if kind == "mcq" and not final_scale.letters:
        evidence.append("scale: none (the options state no scores)")
    elif kind != "pairwise" or statements:
        evidence.append(f"scale: {final_scale.describe()} ({how_scale})")

    # the criterion
    crits: tuple[Criterion, ...]
    if criteria is not None:
        crits = tuple(criteria)
        evidence.append(f"criteria: {', '.join(c.name for c in crits)} (given)")
    elif criterion is not None:
        crits = (criterion,)
        evidence.append(f"criterion: {crits[0].name} (given)")
    elif found_crit is not None:
        crits = (Criterion(name=found_crit.name, definition=found_crit.definition),)
        evidence.append(f"criterion: {found_crit.name} (from the {found_crit.how})")
    else:
        crits = (Criterion(name="score"),)
        evidence.append("criterion: none named ('score')")

    if guideline is not None:
        shown = ", ".join(
            o.label
            if o.score is None or o.label == format_number(o.score)
            else f"{o.label}={format_number(o.score)}"
            for o in guideline.options
        )
        evidence.append(
            f"options: {len(guideline.options)} ({shown}), first {guideline.options[0].text.strip()[:60]!r}"
        )
    else:
        evidence.append("options: none found")

    # pairwise labels and the answer format
    pair_names: tuple[str, str] | None = None
    if kind == "pairwise":
        if labels is not None:
            pair_names, how_labels = labels, "given"
        elif pair is not None and (found := pair_labels(joined, pair[0], pair[1])) is not None:
            pair_names, how_labels = found, "from the headings before the two texts"
        elif (guessed := _guess_labels(joined)) is not None:
            pair_names, how_labels = guessed, "from the instructions"
        else:
            pair_names, how_labels = ("1", "2"), "default"
        evidence.append(f"pairwise: outputs named {pair_names[0]!r} and {pair_names[1]!r} ({how_labels})")
    if answer_format is None:
        fmt = infer_answer_format(
            templates, kind=kind, labels=pair_names or (), tie=tie, criterion=crits[0].name
        )
        evidence.append(f"answer: {kind}, format {fmt.describe()}")
    else:
        fmt = answer_format
        evidence.append(f"answer: {kind}, format {fmt.describe()} (given)")

    task = re.split(r"\n\s*\n", read.messages[0][1].strip(), maxsplit=1)[0].strip()
    return {
        "messages": tuple(
            PromptMessage(role=r, template=t) for (r, _), t in zip(read.messages, templates, strict=True)
        ),
        "task": "" if SLOT_RE.search(task) else task,
        "criteria": crits,
        "scale": final_scale,
        "answer_format": fmt,
        "guideline": guideline,
        "output_slot": out_slot,
        "slot_fields": fields,
        "source": source,
    }, evidence
