"""Released pairwise judges (LLMBar, JudgeBench) read by mitigate's own parsers, as recorded judgments.

Each raw answer is read the way a live mitigate judge would read it: the answer format of the prompt template
it was given under (recovered with :meth:`~mitigate.prompt.JudgePrompt.from_template`) parses it. Where the
release has no prompt, a declared format is used: ``declared:output-ab`` / ``declared:output-ab-cot``
(LLMBar's "Output (a)" / "Output (b)", alone or after reasoning), ``declared:rating`` (a bare 0-9 score; the
verdict is the higher of the two ratings), ``declared:reward-scores`` (a reward model's two numbers) and
``declared:release-decision`` (the release's own decision). A text that does not parse is a recorded failure
with the parser's message, never a verdict. :func:`parse_report` compares mitigate's reading with the
release's own.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from mitigate.data import (
    RELEASE_CRITERION,
    Item,
    PairwiseRelease,
    RecordedRow,
    RecordedRun,
    ReleasedAnswer,
    TemplateSource,
    read_judgebench,
    read_llmbar,
    runs_from_rows,
    split_release_spec,
)
from mitigate.errors import ConfigError, DataError, MitigateError, ParseError
from mitigate.prompt import AnswerFormat, JudgePrompt, TemplateHints
from mitigate.scale import Scale

Text = Literal["A", "B", "tie"]

LAYOUTS: dict[str, Callable[..., PairwiseRelease]] = {"llmbar": read_llmbar, "judgebench": read_judgebench}
"""Release layout -> reader (``<layout>:<path>``)."""

_DECLARED: dict[str, tuple[AnswerFormat, Scale]] = {
    "declared:output-ab": (
        AnswerFormat(kind="pairwise", line="Output ({value})", labels=("a", "b")),
        Scale(min=1, max=5),
    ),
    "declared:output-ab-cot": (
        AnswerFormat(kind="pairwise", line="Output ({value})", labels=("a", "b"), reasoning="before"),
        Scale(min=1, max=5),
    ),
    "declared:rating": (AnswerFormat(kind="score", line="{value}"), Scale(min=0, max=9)),
}
_TO_TEXT = {
    ("first", "original"): "A",
    ("second", "original"): "B",
    ("first", "swapped"): "B",
    ("second", "swapped"): "A",
    ("tie", "original"): "tie",
    ("tie", "swapped"): "tie",
}


class ParsedAnswer(BaseModel):
    """mitigate's reading of one released answer: a ``verdict`` by text (a rating part: a ``score``), or the
    parser's ``error``; ``reader`` is the template key."""

    model_config = ConfigDict(frozen=True, extra="forbid")
    verdict: Text | None = None
    score: float | None = None
    error: str | None = None
    reader: str


class ReleaseParse(BaseModel):
    """A release with every answer read: ``parsed[i]`` reads ``release.answers[i]``; ``formats`` the format
    per template."""

    model_config = ConfigDict(frozen=True, extra="forbid")
    release: PairwiseRelease
    parsed: tuple[ParsedAnswer, ...]
    formats: dict[str, str] = Field(default_factory=dict)


@functools.lru_cache(maxsize=64)
def _prompt_format(
    text: str, system: str | None, answer: str, labels: tuple[str, str] | None
) -> tuple[AnswerFormat, Scale, tuple[str, ...]]:
    prompt = JudgePrompt.from_template(text, TemplateHints.of(answer=answer, labels=labels), system=system)
    return prompt.format, prompt.scale, prompt.echo_lines()


def answer_reader(src: TemplateSource) -> tuple[str, Callable[..., ParsedAnswer]]:
    """(a description of the format, a function reading one answer) for the template ``src``."""
    key = src.key
    if key == "declared:reward-scores":
        return "the higher of the two released rewards (equal: tie)", _reward
    if key == "declared:release-decision":
        return "the release's own decision (no prompt known)", _release_decision
    if src.text is not None:
        try:
            fmt, scale, echoes = _prompt_format(src.text, src.system, src.answer, src.labels)
        except MitigateError as exc:
            raise ConfigError(
                f"expected the released prompt {src.path or key!r} to be readable as a judge "
                f"template; got: {exc}"
            ) from None
    elif key in _DECLARED:
        fmt, scale = _DECLARED[key]
        echoes = ()
    else:
        raise ConfigError(
            f"expected a template text or a declared format in {sorted(_DECLARED)}; got {key!r}"
        )

    def read(answer: ReleasedAnswer, judged: tuple[str, ...] = ()) -> ParsedAnswer:
        try:
            got = fmt.read(answer.raw, scale, echoes=echoes, judged=judged)
        except ParseError as exc:
            return ParsedAnswer(error=exc.message, reader=key)
        if isinstance(got, str):
            return ParsedAnswer(verdict=_TO_TEXT[(got, answer.order)], reader=key)  # type: ignore[arg-type]
        return ParsedAnswer(score=float(got), reader=key)

    return f"{fmt.describe()} on {scale.describe()}" if fmt.kind == "score" else fmt.describe(), read


def _judged(item: Item | None, answer: ReleasedAnswer) -> tuple[str, ...]:
    """The texts an answer judged (its item's instruction and outputs; the one output a rating part rated)."""
    if item is None:
        return ()
    if answer.part == "score_a":
        return (*item.inputs.values(), item.output)
    if answer.part == "score_b":
        return (*item.inputs.values(), item.output_b or "")
    return item.texts()


def _reward(answer: ReleasedAnswer, judged: tuple[str, ...] = ()) -> ParsedAnswer:
    if answer.scores is None:
        return ParsedAnswer(
            error="the release holds no rewards for this answer", reader="declared:reward-scores"
        )
    a, b = answer.scores
    return ParsedAnswer(verdict="A" if a > b else "B" if b > a else "tie", reader="declared:reward-scores")


def _release_decision(answer: ReleasedAnswer, judged: tuple[str, ...] = ()) -> ParsedAnswer:
    if answer.release_verdict is None:
        return ParsedAnswer(error="the release recorded no decision", reader="declared:release-decision")
    return ParsedAnswer(verdict=answer.release_verdict, reader="declared:release-decision")


def parse_release(release: PairwiseRelease) -> ReleaseParse:
    """Read every answer of ``release`` with the format of its template (see the module docstring)."""
    readers = {key: answer_reader(src) for key, src in release.templates.items()}
    missing = sorted({a.template for a in release.answers} - set(readers))
    if missing:
        raise DataError(f"expected a template for every released answer; {missing} are not in the release")
    items = {it.id: it for it in release.benchmark.items}
    parsed: list[ParsedAnswer | None] = [None] * len(release.answers)
    # one item's answers together: its texts are indexed for the quotation search once, not once per answer
    for k in sorted(range(len(release.answers)), key=lambda k: release.answers[k].item_id):
        answer = release.answers[k]
        parsed[k] = readers[answer.template][1](answer, _judged(items.get(answer.item_id), answer))
    return ReleaseParse(
        release=release,
        parsed=tuple(p for p in parsed if p is not None),
        formats={k: v[0] for k, v in readers.items()},
    )


def _rating_row(
    item_id: str, judge: str, parts: dict[str, tuple[ReleasedAnswer, ParsedAnswer]]
) -> RecordedRow:
    (raw_a, got_a), (raw_b, got_b) = parts["score_a"], parts["score_b"]
    meta: dict[str, Any] = {
        "raw_score_a": raw_a.raw,
        "raw_score_b": raw_b.raw,
        "reader": got_a.reader,
        "scores": [got_a.score, got_b.score],
    }
    row: dict[str, Any] = {
        "item_id": item_id,
        "judge": judge,
        "criterion": RELEASE_CRITERION,
        "raw": f"{raw_a.raw}\n{raw_b.raw}",
        "meta": meta,
    }
    if got_a.score is None or got_b.score is None:
        which, reason = ("A", got_a.error) if got_a.score is None else ("B", got_b.error)
        return RecordedRow(error=f"the rating of output {which} did not parse: {reason}", **row)
    a, b = got_a.score, got_b.score
    return RecordedRow(verdict="A" if a > b else "B" if b > a else "tie", **row)


def recorded_runs(parse: ReleaseParse) -> dict[str, RecordedRun]:
    """One recorded run per released judge (criterion ``overall``): the final answer of each item in each
    order, as mitigate read it, with the release's own reading in ``meta``. A rating strategy gives one row
    per item; answers a two-stage strategy did not rest on are left out (they stay in
    :func:`parse_report`)."""
    rows: list[RecordedRow] = []
    ratings: dict[tuple[str, str], dict[str, tuple[ReleasedAnswer, ParsedAnswer]]] = {}
    for answer, got in zip(parse.release.answers, parse.parsed, strict=True):
        if not answer.final:
            continue
        if answer.part != "verdict":
            ratings.setdefault((answer.judge, answer.item_id), {})[answer.part] = (answer, got)
            continue
        rows.append(
            RecordedRow(
                item_id=answer.item_id,
                judge=answer.judge,
                criterion=RELEASE_CRITERION,
                verdict=got.verdict,
                error=got.error if got.verdict is None else None,
                raw=answer.raw,
                order=answer.order,
                line=answer.line,
                meta={
                    "release_verdict": answer.release_verdict,
                    "stage": answer.stage,
                    "reader": got.reader,
                    **({"scores": list(answer.scores)} if answer.scores is not None else {}),
                },
            )
        )
    for (judge, item_id), parts in ratings.items():
        if set(parts) != {"score_a", "score_b"}:
            raise DataError(f"expected both ratings of item {item_id!r} from {judge!r}; got {sorted(parts)}")
        rows.append(_rating_row(item_id, judge, parts))
    runs = runs_from_rows(rows, parse.release.source)
    return {j: runs[j] for j in parse.release.judges if j in runs}


def read_release(spec: str, **kw: Any) -> PairwiseRelease:
    """The release named by ``"<layout>:<path>[#<judge glob>]"`` (layouts: :data:`LAYOUTS`)."""
    layout, path, pattern = split_release_spec(spec, list(LAYOUTS))
    return LAYOUTS[layout](path, judges=pattern, **kw)


def load_released_pairwise(spec: str, **kw: Any) -> dict[str, RecordedRun]:
    """Every released judge of ``"<layout>:<path>[#<judge glob>]"`` (``"llmbar:/data/LLMBar#GPT-4/*"``) as
    recorded judgments, read by mitigate."""
    return recorded_runs(parse_release(read_release(spec, **kw)))


def parse_report(parse: ReleaseParse, *, examples: int = 3) -> dict[str, dict[str, Any]]:
    """Per released judge and template: answers, how many mitigate read, and how its verdicts compare with the
    release's own (``agree``, ``differ``, ``both_none``, ``only_release``, ``only_mitigate``, with
    examples)."""
    out: dict[str, dict[str, Any]] = {}
    for answer, got in zip(parse.release.answers, parse.parsed, strict=True):
        row = out.setdefault(
            f"{answer.judge}|{answer.template}",
            {
                "judge": answer.judge,
                "template": answer.template,
                "format": parse.formats.get(answer.template, ""),
                **dict.fromkeys(("answers", "parsed", "failed", "compared", "agree", "both_none"), 0),
                **dict.fromkeys(("only_release", "only_mitigate", "differ"), 0),
                "examples": {},
            },
        )
        row["answers"] += 1
        ok = got.verdict is not None or got.score is not None
        row["parsed" if ok else "failed"] += 1
        if answer.part != "verdict":
            continue
        mine, theirs = got.verdict, answer.release_verdict
        if mine is None or theirs is None:
            kind = (
                "only_mitigate" if mine is not None else "only_release" if theirs is not None else "both_none"
            )
        else:
            kind = "agree" if mine == theirs else "differ"
            row["compared"] += 1
        row[kind] += 1
        if kind != "agree":
            bucket = row["examples"].setdefault(kind, [])
            if len(bucket) < examples:
                bucket.append(
                    {
                        "item_id": answer.item_id,
                        "order": answer.order,
                        "mitigate": mine,
                        "release": theirs,
                        "error": got.error,
                        "raw_tail": answer.raw[-240:],
                    }
                )
    return out
