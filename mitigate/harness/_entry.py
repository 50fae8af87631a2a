"""One named judge of a comparison (:class:`Entry`) and what is read off entries: names, scales, how they
answer."""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from mitigate.data import AnswerReader, RecordedRun, load_recorded, load_recorded_runs
from mitigate.errors import ConfigError, MitigateError
from mitigate.judge import Judge
from mitigate.replay import RecordedJudge, ReleasedJudge
from mitigate.scale import Scale
from mitigate.strategies import Mitigation, Pipeline, parse_pipeline


class Entry(BaseModel):
    """One named judge to compare: its judge, what kind it is, and the spec that built it.

    Build one with :meth:`from_pipeline` (a base judge wrapped by a mitigation pipeline),
    :meth:`from_recorded` (judgments a user already has) or :meth:`from_released` (a replayed released judge);
    ``scale`` is the judge's answer scale, found from the judge when not given. A pipeline entry keeps its
    ``pipeline`` and ``base`` judge; one that must learn from data has no ``judge`` until it is fitted.
    """

    model_config = ConfigDict(frozen=True, extra="forbid", arbitrary_types_allowed=True)
    name: str
    judge: Judge | None = None
    kind: Literal["pipeline", "released", "recorded", "judge"] = "judge"
    spec: dict[str, Any] = Field(default_factory=dict)
    scale: Scale | None = None
    pipeline: Mitigation | None = None
    base: Judge | None = None

    @field_validator("name")
    @classmethod
    def _name(cls, v: str) -> str:
        if not v.strip():
            raise ConfigError("expected a non-empty entry name; got an empty string")
        return v

    @model_validator(mode="after")
    def _has_judge(self) -> Entry:
        if self.judge is None and (self.pipeline is None or self.base is None):
            raise ConfigError(f"entry {self.name!r} needs a judge, or a pipeline and the base judge it wraps")
        return self

    @property
    def needs_fit(self) -> bool:
        """True when the entry's pipeline must be fitted on training items before it can judge."""
        return self.judge is None

    @property
    def ready_judge(self) -> Judge:
        """The judge that judges the items; ConfigError for an entry still to be fitted."""
        if self.judge is None:
            raise ConfigError(
                f"entry {self.name!r} learns from data and has no judge until it is fitted; "
                "expected a fitted entry (the fit stage gives it one)"
            )
        return self.judge

    def fitted(self, pipeline: Mitigation) -> Entry:
        """This entry with its pipeline replaced by the fitted ``pipeline``, its spec and the judge it makes
        of ``base`` kept together (so the report shows what each judge learned)."""
        if self.base is None:
            raise ConfigError(
                f"entry {self.name!r} has no base judge to wrap; only a pipeline entry is fitted"
            )
        return self.model_copy(
            update={"judge": pipeline.wrap(self.base), "pipeline": pipeline, "spec": pipeline.spec()}
        )

    @classmethod
    def from_pipeline(cls, name: str | None, base: Judge, pipeline: Mitigation | str) -> Entry:
        """``pipeline.wrap(base)`` under ``name`` (default: the pipeline text, or "baseline").

        ``pipeline`` is a Pipeline, a single mitigation, or text such as ``"name(k=v) | name2"`` or
        ``"@file.json"`` (``"baseline"``: none); one still to be fitted is wrapped once it is fitted.
        """
        text = pipeline if isinstance(pipeline, str) else None
        if isinstance(pipeline, str):
            pipe = parse_pipeline(pipeline)
        elif isinstance(pipeline, Mitigation):
            pipe = pipeline if isinstance(pipeline, Pipeline) else Pipeline([pipeline])
        else:
            raise ConfigError(
                f"expected a Pipeline, a Mitigation or pipeline text; got {type(pipeline).__name__}"
            )
        steps = " | ".join(s.label for s in pipe.steps) if pipe.steps else "baseline"
        label = name or (text.strip() if text and text.strip() else None) or steps
        judge = None if pipe.tags.needs_fitting and not pipe.is_fitted else pipe.wrap(base)
        return cls(name=label, judge=judge, kind="pipeline", spec=pipe.spec(), pipeline=pipe, base=base)

    @classmethod
    def from_released(
        cls, judge_name: str, criterion: str, *, name: str | None = None, root: str | Path | None = None
    ) -> Entry:
        """A :class:`~mitigate.replay.ReleasedJudge` entry (named after the judge)."""
        judge = ReleasedJudge(judge_name, criterion, root=root)
        return cls(
            name=name or judge_name, judge=judge, kind="released", spec=judge.describe(), scale=judge.scale
        )

    @classmethod
    def from_recorded(
        cls, recorded: Any, criterion: str, *, judge: str | None = None, name: str | None = None
    ) -> Entry:
        """A recorded judge's entry (named after it): ``recorded`` is a RecordedRun or the path of a
        recorded-judgments file; ``judge`` picks one judge of a file that holds several."""
        run = recorded if isinstance(recorded, RecordedRun) else load_recorded(recorded, judge)
        replay = RecordedJudge(run, criterion)
        return cls(
            name=name or run.judge, judge=replay, kind="recorded", spec=replay.describe(), scale=replay.scale
        )

    @classmethod
    def all_released(cls, spec: str, criterion: str) -> list[Entry]:
        """The entries a ``--released`` value names: a built-in released judge (``"chatgpt-rts"``), or every
        judge of a released pairwise repository on disk, ``"<layout>:<path>[#<judge glob>]"``
        (``"llmbar:/data/LLMBar#GPT-4/*"``)."""
        from mitigate.replay import LAYOUTS, load_released_pairwise

        if spec.partition(":")[0] not in LAYOUTS:
            return [cls.from_released(spec, criterion)]
        runs = [r for r in load_released_pairwise(spec).values() if criterion in r.criteria]
        if not runs:
            raise ConfigError(
                f"expected released judgments on {criterion!r} in {spec}; they answer 'overall'"
            )
        return [cls.from_recorded(run, criterion) for run in runs]

    @classmethod
    def all_recorded(cls, path: str | Path, criterion: str, read: AnswerReader | None = None) -> list[Entry]:
        """One entry per judge of a recorded-judgments file that answered ``criterion``, in file order
        (``read`` reads rows holding only the judge's ``raw`` text); ConfigError when none did."""
        runs = [r for r in load_recorded_runs(path, read).values() if criterion in r.criteria]
        if not runs:
            raise ConfigError(
                f"expected judgments on {criterion!r} in {path}; its judges answered other criteria"
            )
        return [cls.from_recorded(run, criterion) for run in runs]


def as_entries(entries: Sequence[Entry] | Mapping[str, Judge]) -> tuple[Entry, ...]:
    """``entries`` as a tuple of :class:`Entry` (a mapping name -> judge becomes plain judge entries);
    ConfigError for no entry, an object that is not an Entry, or a name given twice."""
    if isinstance(entries, Mapping):
        out = [Entry(name=k, judge=v) for k, v in entries.items()]
    else:
        out = list(entries)
    if not out:
        raise ConfigError(
            "expected at least one entry (a pipeline, a recorded or a released judge) to compare; got none"
        )
    for e in out:
        if not isinstance(e, Entry):
            raise ConfigError(
                "expected Entry objects (Entry.from_pipeline / from_recorded / "
                f"from_released); got {type(e).__name__}"
            )
    names = [e.name for e in out]
    dup = sorted({n for n in names if names.count(n) > 1})
    if dup:
        raise ConfigError(
            f"expected unique entry names; {dup} appear more than once (name them with name=...)"
        )
    return tuple(out)


def _slug(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9._=-]+", "_", name).strip("_") or "entry"


def journal_names(names: Sequence[str]) -> dict[str, str]:
    """Entry name -> journal file stem: filesystem-safe and unique."""
    out: dict[str, str] = {}
    used: set[str] = set()
    for name in names:
        base = _slug(name)[:80]
        stem = base
        k = 2
        while stem in used:
            stem = f"{base}-{k}"
            k += 1
        used.add(stem)
        out[name] = stem
    return out


def scoring_of(entry: Entry) -> str:
    """How an entry's answers become scores, in words: a logprob read, a parse of the text, or replayed
    answers."""
    if entry.kind in ("recorded", "released"):
        return f"{entry.kind} answers, replayed"
    try:
        leaves = entry.ready_judge.leaves()
    except MitigateError:
        return "as its judge reads them"
    modes = sorted({leaf.config.scoring for leaf in leaves})
    words = {"expected": "expected score from logprobs", "parse": "parsed from the text"}
    return " and ".join(words.get(m, m) for m in modes) or "no prompt judge"


def identical_entries(entries: Sequence[Entry]) -> dict[str, str]:
    """Entry name -> the earlier entry it is identical to by construction (same judge description: same
    prompts, backend, config and fan-out, so the same requests read the same way)."""
    seen: dict[str, str] = {}
    out: dict[str, str] = {}
    for e in entries:
        if e.judge is None or e.kind not in ("pipeline", "judge"):
            continue
        first = seen.setdefault(json.dumps(e.judge.describe(), sort_keys=True, default=str), e.name)
        if first != e.name:
            out[e.name] = first
    return out
