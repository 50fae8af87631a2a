"""Compare judges on a benchmark: accuracy against humans and measured bias, side by side.

:func:`compare` runs each named judge (an :class:`Entry`: a prompt judge wrapped by a
mitigation pipeline, a :class:`~mitigate.harness.recorded_judge.RecordedJudge` replaying
judgments a user already has, or a :class:`~mitigate.harness.released_judge.ReleasedJudge`
replaying a real judge's released answers) over the same items, each with its own resumable journal
(``<out_dir>/journals/<name>.jsonl``), then computes every registered reported measure
(:data:`MEASURES`, read from :mod:`mitigate.registry`: each measure in :mod:`mitigate.measures`
declares its label, direction and group beside its function), each with its ``n``, the number
of items dropped for a missing score (``n_failed``) and a percentile bootstrap interval:

- agreement with humans: pooled item-level Spearman/Kendall/Pearson; the SummEval-style
  per-document correlation (mean over documents of the correlation across systems);
  system-level correlation; per-system correlation P_i and the meta-correlation
  M = corr(Q_i, P_i) (Shen et al. 2023); correct preferences #CP over system pairs;
- score distribution (Stureborg et al. 2024): histogram, share of the scale used, excess of
  round numbers (scales with 10 or more integer points), entropy;
- length bias (Liu et al. 2024): Spearman(score, output length in words);
- inter-sample agreement: Krippendorff's alpha across samples, when judgments hold more
  than one sample;
- likelihood bias (Ohi et al. 2024): BiasScore = Spearman(LS, US) when ``likelihood`` is on;
  LS comes from :class:`~mitigate.likelihood.LikelihoodScorer` (the embedded model by
  default) and is cached per item in ``<out_dir>/likelihood.jsonl``, so it is computed once;
- consistency under guideline perturbation (Ghazarian et al. 2024), when judgments carry
  per-perturbation scores in ``meta["perturbations"]``.

Against the first entry, every other entry gets the difference of item-level Spearman
(entry minus first) with a paired bootstrap interval and a paired permutation p-value.

On a pairwise benchmark (every item holds ``output`` and ``output_b`` and a gold preference)
the judges answer verdicts and the pairwise measures are reported instead (``task="pairwise"``,
:mod:`mitigate.measures.pairwise`): accuracy against gold, position consistency, preference
fairness and repetition stability (Shi et al. 2024), the lean towards the longer text and the
gain of position swap; the comparison against the first entry is then the difference in
accuracy (paired bootstrap interval, paired sign-flip permutation p-value).

The ``meta["perturbations"]`` contract: a strategy that scores each item under several
perturbed guidelines puts ``{"<perturbation name>": score, ...}`` (score ``None`` for a
parse failure) into the judgment's ``meta["perturbations"]``; consistency is the share of
items whose score is identical under every perturbation.

A measure that cannot be computed (too few items, no system labels, no likelihood ...) is
NaN with ``reason`` saying why, never 0.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import math
import re
import warnings
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Literal

import numpy as np
from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator
from tqdm.auto import tqdm

from mitigate.data.jsonl import save_jsonl
from mitigate.data.recorded import AnswerReader, RecordedRun, load_recorded, load_recorded_runs
from mitigate.data.registry import load
from mitigate.data.schema import Benchmark, Item
from mitigate.data.split import labelled, select_items, train_test_split
from mitigate.errors import ConfigError, DataError, MitigateError, PromptConflictWarning
from mitigate.fitting import FitContext
from mitigate.harness.first_prompt import with_first_prompt
from mitigate.harness.probe import probe_entry
from mitigate.harness.recorded_judge import RecordedJudge
from mitigate.harness.released_judge import ReleasedJudge
from mitigate.harness.report import write_report
from mitigate.harness.results import (
    DELTA_ACCURACY_INFO,
    DELTA_INFO,
    CompareResult,
    Comparison,
    EntryResult,
    ItemRecord,
    score_of,
)
from mitigate.judge import Judge, Judgment
from mitigate.likelihood import LikelihoodScorer
from mitigate.lm.base import LM
from mitigate.measures import (
    MEASURES,
    EntryData,
    Measure,
    MeasureInfo,
    Task,
    abstained,
    human_scores,
    measure_table,
    per_system_correlation,
    score_histogram,
    verdicts_as_text,
    word_count,
)
from mitigate.measures.base import batched_nanmean
from mitigate.measures.stats import (
    batched,
    bootstrap_ci,
    complete_pairs,
    paired_permutation_test,
    permutation_test_mean_diff,
    spearman_rows,
)
from mitigate.paths import open_regular, read_lines
from mitigate.probes import Probe, check_rewriter
from mitigate.registry import Interval, check_param
from mitigate.run.batch_session import BatchOptions, BatchSession, session_for
from mitigate.run.runner import RunResult, run
from mitigate.scale import Scale
from mitigate.strategies import Mitigation, Pipeline, parse_pipeline

__all__ = [
    "DELTA_ACCURACY_INFO",
    "DELTA_INFO",
    "MEASURES",
    "Comparison",
    "CompareResult",
    "Entry",
    "EntryResult",
    "ItemRecord",
    "MeasureInfo",
    "check_compare",
    "compare",
    "select_items",
]

GENERATION_TASKS: dict[str, str] = {
    "summeval": "Write a short summary of the news article.",
    "uss": "Continue the dialogue with the system's next turn.",
    "webnlg": "Verbalise the RDF triples as fluent English text.",
    "tmu": "Correct the grammatical errors in the sentence.",
}
"""Default task description for the likelihood context, by benchmark family (Ohi et al. score
log P(output | input, task), where the task is the one the output was *generated* for)."""

DEFAULT_GENERATION_TASK = "Produce the output for the input."

# ---------------------------------------------------------------------------------------
# values


class Entry(BaseModel):
    """One named judge to compare: its judge, what kind it is, and the spec that built it.

    Build one with :meth:`from_pipeline` (a base judge wrapped by a mitigation pipeline),
    :meth:`from_recorded` (judgments a user already has) or :meth:`from_released` (a replayed
    released judge); ``scale`` is the judge's answer scale, found from the judge when not given.

    A pipeline entry keeps its ``pipeline`` and ``base`` judge: :func:`compare` with ``train``
    fits the pipeline on the training items (``Pipeline.afit``) before judging, and a pipeline
    that must learn from data (demos chosen from a pool) has no ``judge`` until then.
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

    @classmethod
    def from_pipeline(cls, name: str | None, base: Judge, pipeline: Mitigation | str) -> Entry:
        """``pipeline.wrap(base)`` under ``name`` (default: the pipeline text, or "baseline").

        ``pipeline`` is a :class:`~mitigate.strategies.base.Pipeline`, a single mitigation, or
        CLI text such as ``"name(k=v) | name2"`` or ``"@file.json"`` (``"baseline"``: no mitigation). A
        pipeline that still has to be fitted (its tags say it learns at fit and it is not fitted yet) is
        wrapped when :func:`compare` fits it.
        """
        text = pipeline if isinstance(pipeline, str) else None
        if isinstance(pipeline, str):
            pipe = parse_pipeline(pipeline)
        elif isinstance(pipeline, Mitigation):
            pipe = pipeline if isinstance(pipeline, Pipeline) else Pipeline([pipeline])
        else:
            raise ConfigError(f"expected a Pipeline, a Mitigation or pipeline text; got {type(pipeline).__name__}")
        label = name or (text.strip() if text and text.strip() else None) or _pipeline_label(pipe)
        judge = None if pipe.tags.needs_fitting and not pipe.is_fitted else pipe.wrap(base)
        return cls(name=label, judge=judge, kind="pipeline", spec=pipe.spec(), pipeline=pipe, base=base)

    @classmethod
    def from_released(cls, judge_name: str, criterion: str, *, name: str | None = None,
                      root: str | Path | None = None) -> Entry:
        """A :class:`~mitigate.harness.released_judge.ReleasedJudge` entry (named after the judge)."""
        judge = ReleasedJudge(judge_name, criterion, root=root)
        return cls(name=name or judge_name, judge=judge, kind="released", spec=judge.describe(), scale=judge.scale)

    @classmethod
    def from_recorded(cls, recorded: Any, criterion: str, *, judge: str | None = None,
                      name: str | None = None) -> Entry:
        """A :class:`~mitigate.harness.recorded_judge.RecordedJudge` entry (named after the recorded judge).

        ``recorded`` is a :class:`~mitigate.data.recorded.RecordedRun` or the path of a
        recorded-judgments file; ``judge`` picks one judge of a file that holds several.
        """
        run = recorded if isinstance(recorded, RecordedRun) else load_recorded(recorded, judge)
        replay = RecordedJudge(run, criterion)
        return cls(name=name or run.judge, judge=replay, kind="recorded", spec=replay.describe(), scale=replay.scale)

    @classmethod
    def all_released(cls, spec: str, criterion: str) -> list[Entry]:
        """The entries a ``--released`` value names: a built-in released judge (``"chatgpt-rts"``), or
        every judge of a released pairwise repository on disk, ``"<layout>:<path>[#<judge glob>]"``
        (``"llmbar:/data/LLMBar#GPT-4/*"``, ``"judgebench:/data/JudgeBench"``), read by mitigate's parsers
        (:mod:`mitigate.harness.released_pairwise`).
        """
        from mitigate.harness.released_pairwise import LAYOUTS, load_released_pairwise

        if spec.partition(":")[0] not in LAYOUTS:
            return [cls.from_released(spec, criterion)]
        runs = [r for r in load_released_pairwise(spec).values() if criterion in r.criteria]
        if not runs:
            raise ConfigError(f"expected released judgments on {criterion!r} in {spec}; they answer 'overall'")
        return [cls.from_recorded(run, criterion) for run in runs]

    @classmethod
    def all_recorded(cls, path: str | Path, criterion: str, read: AnswerReader | None = None) -> list[Entry]:
        """One entry per judge of a recorded-judgments file that answered ``criterion``, in file order.

        ``read`` reads rows holding only the judge's ``raw`` text (a prompt's answer format).
        ConfigError when no judge of the file answered it.
        """
        runs = [r for r in load_recorded_runs(path, read).values() if criterion in r.criteria]
        if not runs:
            raise ConfigError(f"expected judgments on {criterion!r} in {path}; its judges answered other criteria")
        return [cls.from_recorded(run, criterion) for run in runs]


def _pipeline_label(pipe: Pipeline) -> str:
    if not pipe.steps:
        return "baseline"
    return " | ".join(s.label for s in pipe.steps)


# ---------------------------------------------------------------------------------------
# helpers


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


def judge_scale(judge: Judge) -> Scale | None:
    """The answer scale of a judge: its ``scale`` attribute, else the scale of its first inner prompt judge."""
    scale = getattr(judge, "scale", None)
    if isinstance(scale, Scale):
        return scale
    try:
        leaves = judge.leaves()
    except ConfigError:
        return None
    return leaves[0].prompt.scale if leaves else None


def scoring_of(entry: Entry) -> str:
    """How an entry's answers become scores, in words: a logprob read, a parse of the text, or replayed answers."""
    if entry.kind in ("recorded", "released"):
        return f"{entry.kind} answers, replayed"
    assert entry.judge is not None
    try:
        leaves = entry.judge.leaves()
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
        key = json.dumps(e.judge.describe(), sort_keys=True, default=str)
        if key in seen:
            out[e.name] = seen[key]
        else:
            seen[key] = e.name
    return out


def _histogram(scores: Sequence[float | None], scale: Scale) -> dict[str, int]:
    return {f"{k:g}": v for k, v in score_histogram(scores, scale).items()}


@batched
def _spearman_diff(a: np.ndarray, b: np.ndarray, h: np.ndarray) -> np.ndarray:
    return spearman_rows(b, h) - spearman_rows(a, h)


def _comparison(first: str, a: Sequence[float | None], b: Sequence[float | None], human: np.ndarray, *,
                n_boot: int, n_perm: int, seed: int) -> Comparison:
    x, y, h = complete_pairs(a, b, human)
    if len(x) < 3:
        return Comparison(against=first, observed=math.nan, n=len(x),
                          reason=f"needs at least 3 items scored by both entries and humans; got {len(x)}")
    perm = paired_permutation_test(y, x, h, "spearman", n_perm=n_perm, seed=seed)
    if not math.isfinite(perm.observed):
        return Comparison(against=first, observed=math.nan, n=len(x), reason=perm.reason or
                          "Spearman is undefined for at least one entry (constant scores)")
    low, high = bootstrap_ci(_spearman_diff, x, y, h, n_boot=n_boot, seed=seed) if n_boot > 0 else (math.nan, math.nan)
    finite = math.isfinite(low) and math.isfinite(high)
    return Comparison(against=first, observed=perm.observed, ci_low=low if finite else None,
                      ci_high=high if finite else None, p_value=perm.p_value, n=len(x), n_perm=n_perm)


ABSTAINED = "abstain"
"""A verdict slot where the judge abstained (a majority panel without a majority): no verdict, and not correct."""


def _correct(verdicts: Sequence[str | None], gold: Sequence[str | None]) -> np.ndarray:
    """1.0 where the verdict equals gold, 0.0 where not (an abstention included), NaN where either is missing."""
    return np.array([math.nan if v is None or g is None else float(v == g) for v, g in zip(verdicts, gold, strict=True)])


def verdicts_or_abstentions(judgments: Sequence[Judgment]) -> list[str | None]:
    """Each judgment's verdict as the text it prefers, :data:`ABSTAINED` where the judge abstained, None where it
    gave none (a parse failure, an error)."""
    return [ABSTAINED if abstained(j) else v for j, v in zip(judgments, verdicts_as_text(judgments), strict=True)]


def _accuracy_comparison(first: str, a: Sequence[str | None], b: Sequence[str | None], gold: Sequence[str | None], *,
                         n_boot: int, n_perm: int, seed: int) -> Comparison:
    """Accuracy of ``b`` minus that of ``a`` against gold, paired, on the items both judged.

    An abstention (:data:`ABSTAINED`) is an outcome, counted as not correct, as the entry's
    own accuracy counts it; where either side abstained somewhere, the difference on the items
    both decided is given beside it (``decided_observed``, ``decided_n``).
    """
    x, y = complete_pairs(_correct(a, gold), _correct(b, gold))
    if len(x) < 3:
        return Comparison(against=first, measure="preference_accuracy", observed=math.nan, n=len(x),
                          reason=f"needs at least 3 items with a verdict from both entries and gold; got {len(x)}")
    test = permutation_test_mean_diff(y, x, n_perm=n_perm, seed=seed, paired=True)
    low = high = math.nan
    if n_boot > 0:
        low, high = bootstrap_ci(batched_nanmean, y - x, n_boot=n_boot, seed=seed)
    finite = math.isfinite(low) and math.isfinite(high)
    decided: dict[str, Any] = {}
    if ABSTAINED in a or ABSTAINED in b:
        keep = [i for i, (va, vb) in enumerate(zip(a, b, strict=True)) if ABSTAINED not in (va, vb)]
        dx, dy = complete_pairs(_correct([a[i] for i in keep], [gold[i] for i in keep]),
                                _correct([b[i] for i in keep], [gold[i] for i in keep]))
        decided = {"decided_observed": float(np.mean(dy - dx)) if len(dx) else None, "decided_n": len(dx)}
    return Comparison(against=first, measure="preference_accuracy", observed=test.observed,
                      ci_low=low if finite else None, ci_high=high if finite else None, p_value=test.p_value,
                      n=len(x), n_perm=n_perm, **decided)


# ---------------------------------------------------------------------------------------
# likelihood (LS) with a per-item cache


def _likelihood_key(scorer: Any, task: str) -> str:
    blob = json.dumps({"lm": scorer.lm, "template": scorer.template, "reduce": scorer.reduce,
                       "input_fields": list(scorer.input_fields), "task": task}, sort_keys=True)
    return hashlib.sha256(blob.encode()).hexdigest()[:16]


async def likelihood_scores(items: Sequence[Item], scorer: Any, task: str, cache: Path | None,
                            progress: bool = True) -> list[float]:
    """LS per item, reading and extending the JSONL cache ``cache`` (one line per item and scorer setting)."""
    key = _likelihood_key(scorer, task)
    known: dict[str, float] = {}
    if cache is not None and (cache.exists() or cache.is_symlink()):
        with open_regular(cache, "rb", "the likelihood cache") as fh:  # a FIFO or a device is refused unread
            lines = [raw.decode("utf-8") for raw in read_lines(fh, f"the likelihood cache {cache}", path=cache)]
        for n, line in enumerate(lines, start=1):
            if not line.strip():
                continue
            try:
                row = json.loads(line)
            except json.JSONDecodeError:
                if n == len(lines):
                    continue  # a half-written last line from a killed run
                raise DataError(f"{cache}:{n}: expected a likelihood cache line; got invalid JSON",
                                path=str(cache), line=n) from None
            if row.get("key") == key:
                known[row["id"]] = math.nan if row.get("ls") is None else float(row["ls"])
    todo = [it for it in items if it.id not in known]
    if todo:
        if cache is not None:
            cache.parent.mkdir(parents=True, exist_ok=True)
        with tqdm(total=len(items), initial=len(items) - len(todo), desc="likelihood", unit="item",
                  disable=not progress, leave=False) as bar:
            for it in todo:
                value = float(await scorer.score(it, task))
                known[it.id] = value
                if cache is not None:
                    with open_regular(cache, "a", "the likelihood cache") as fh:
                        fh.write(json.dumps({"key": key, "id": it.id,
                                             "ls": value if math.isfinite(value) else None}) + "\n")
                bar.update(1)
    return [known[it.id] for it in items]


# ---------------------------------------------------------------------------------------
# measures of one entry


def entry_measures(
    judgments: Sequence[Judgment], items: Sequence[Item], criterion: str, scale: Scale, *,
    ls: Sequence[float] | None = None, n_boot: int = 1000, seed: int = 0, task: Task = "score",
) -> tuple[dict[str, Measure], dict[str, Measure]]:
    """Every registered reported measure of ``task`` (:data:`MEASURES`) for one entry, plus P_i per system (Spearman).

    A pairwise entry (``task="pairwise"``) is measured on its verdicts; P_i is then empty.
    """
    scores = np.array([math.nan if (s := score_of(j, criterion)) is None else s for j in judgments], dtype=float)
    verdicts = verdicts_as_text(judgments) if task == "pairwise" else []
    data = EntryData(scores=scores, items=items, criterion=criterion, scale=scale, judgments=judgments,
                     ls=None if ls is None else np.asarray(ls, dtype=float), n_boot=n_boot, seed=seed,
                     verdicts=verdicts, task=task)
    out = {key: cls().compute(data) for key, cls in measure_table(task).items()}
    per_system: dict[str, Measure] = {}
    if task == "score" and data.has_systems:
        per_system = per_system_correlation(scores, data.human, data.systems, "spearman", **data.ci)
    return out, per_system


# ---------------------------------------------------------------------------------------
# compare


def _entries(entries: Sequence[Entry] | Mapping[str, Judge]) -> list[Entry]:
    if isinstance(entries, Mapping):
        out = [Entry(name=k, judge=v) for k, v in entries.items()]
    else:
        out = list(entries)
    if not out:
        raise ConfigError("expected at least one entry (a pipeline, a recorded or a released judge) to compare; got none")
    for e in out:
        if not isinstance(e, Entry):
            raise ConfigError(f"expected Entry objects (Entry.from_pipeline / from_recorded / from_released); got "
                          f"{type(e).__name__}")
    names = [e.name for e in out]
    dup = sorted({n for n in names if names.count(n) > 1})
    if dup:
        raise ConfigError(f"expected unique entry names; {dup} appear more than once (name them with name=...)")
    return out


def _check_recorded_cover(entries: Sequence[Entry], items: Sequence[Item], benchmark: str) -> None:
    """Fail before any call when a replayed judge (recorded or released) has no answer for some items."""
    for e in entries:
        if not isinstance(e.judge, RecordedJudge):
            continue
        missing = e.judge.covers(items)
        if not missing:
            continue
        if isinstance(e.judge, ReleasedJudge):
            covered = "'summeval-h2h'" if e.judge.run is None else "the 1,200 items of 'summeval'"
            raise ConfigError(
                f"the released judge {e.judge.judge_name!r} has answers for {covered} only; {len(missing)} of "
                f"{len(items)} items here have none, e.g. {missing[:2]}"
            )
        raise ConfigError(
            f"the recorded judge {e.name!r} ({e.judge.recorded.source}) has no answer on {e.judge.criterion!r} for "
            f"{len(missing)} of the {len(items)} items of {benchmark!r}, e.g. {missing[:3]}; expected one for every "
            "item judged (check the item ids, or pass --limit)"
        )


def _benchmark(benchmark: str | Benchmark) -> Benchmark:
    if isinstance(benchmark, Benchmark):
        return benchmark
    return load(benchmark)


def _train_and_test(bench: Benchmark, train: float | str | Benchmark | None, criterion: str,
                    seed: int) -> tuple[Benchmark | None, Benchmark, dict[str, Any] | None]:
    """The training benchmark (None without ``train``), the benchmark to judge, and what the report says of them."""
    if train is None:
        return None, bench, None
    if isinstance(train, float | int) and not isinstance(train, bool):
        fit, test = train_test_split(bench, float(train), seed=seed, criterion=criterion)
        docs = {it.doc_id for it in fit.items if it.doc_id is not None}
        return fit, test, {"source": f"{bench.name}, fraction {train:g} by document (seed {seed})",
                           "n_items": len(fit), "n_documents": len(docs) or len(fit),
                           "ids": [it.id for it in fit.items]}
    fit = _benchmark(train)
    fit = fit.model_copy(update={"items": tuple(it for it in fit.items if labelled(it, criterion))})
    if not fit.items:
        raise DataError(f"training benchmark {fit.name!r} has no item labelled on {criterion!r}")
    shared_ids = sorted({it.id for it in fit.items} & {it.id for it in bench.items})
    shared_docs = sorted({it.doc_id for it in fit.items if it.doc_id} & {it.doc_id for it in bench.items if it.doc_id})
    if shared_ids or shared_docs:
        shared = shared_docs or shared_ids
        raise ConfigError(
            f"expected a training benchmark that shares no item or document with {bench.name!r}; {len(shared)} are "
            f"in both, e.g. {shared[:3]} (split one benchmark with a train fraction instead)"
        )
    docs = {it.doc_id for it in fit.items if it.doc_id is not None}
    return fit, bench, {"source": fit.name, "n_items": len(fit), "n_documents": len(docs) or len(fit),
                        "ids": [it.id for it in fit.items]}


async def _fit_entries(entries: Sequence[Entry], train: Benchmark | None, *, progress: bool,
                       concurrency: int) -> tuple[list[Entry], dict[str, dict[str, Any]]]:
    """Fit every entry whose pipeline must learn from data on ``train`` (``Pipeline.afit``); say what each was fitted on.

    Entries that are already fitted (a searched spec, a pipeline with nothing to learn) are
    used as they are. ConfigError when an entry needs fitting and there is no ``train``. An
    entry whose fit fails (e.g. Highest-RS when the judge gives every pool item the same score)
    is left out, its error kept in the returned info, so the other entries are still compared.
    """
    out: list[Entry] = []
    info: dict[str, dict[str, Any]] = {}
    for e in entries:
        if not e.needs_fit:
            info[e.name] = {"fitted": False, "why": "nothing to learn or already fitted; used as given"}
            out.append(e)
            continue
        if train is None:
            raise ConfigError(
                f"entry {e.name!r} learns from data (its demos come from a training pool) and must be fitted first; "
                "expected a train split: --train FRACTION (e.g. 0.5, split by document) or --train BENCHMARK"
            )
        assert e.pipeline is not None and e.base is not None
        try:
            ctx = FitContext(progress=progress, concurrency=concurrency)
            fitted = await e.pipeline.afit(train, e.base, ctx)
        except MitigateError as exc:  # one entry that cannot learn from this data does not stop the others
            info[e.name] = {"fitted": False, "train": train.name, "n_items": len(train),
                            "error": f"{type(exc).__name__}: {exc}"}
            continue
        # not compile(): the entry keeps the fitted pipeline and its spec beside the judge it makes
        out.append(e.model_copy(update={"judge": fitted.wrap(e.base), "pipeline": fitted, "spec": fitted.spec()}))
        info[e.name] = {"fitted": True, "train": train.name, "n_items": len(train),
                        "judged_while_fitting": e.pipeline.tags.calls_judge_while_fitting}
    if not out:
        raise ConfigError("no entry is left to compare: every one failed to fit; "
                          + "; ".join(f"{k}: {v.get('error')}" for k, v in info.items()))
    return out, info


def _plan(full: Benchmark, criterion: str, todo: Sequence[Entry], *, train: float | str | Benchmark | None,
          limit: int | None, seed: int) -> tuple[Benchmark | None, Benchmark, dict[str, Any] | None, list[Item]]:
    """The train split, the benchmark to judge, what the report says of the split, and the items to judge.

    Raises what :func:`compare` would refuse before its first LM call: a bad train split, an
    entry that must be fitted without one, no items, a replayed judge missing some items, a
    pairwise benchmark without gold preferences on the criterion.
    """
    if full.criteria and criterion not in full.criteria:
        raise ConfigError(f"expected a criterion of {full.name} {list(full.criteria)}; got {criterion!r}")
    fit_on, bench, train_info = _train_and_test(full, train, criterion, seed)
    unfitted = [e.name for e in todo if e.needs_fit]
    if unfitted and fit_on is None:
        raise ConfigError(
            f"entry {unfitted[0]!r} learns from data (its demos come from a training pool) and must be fitted first; "
            "expected a train split: --train FRACTION (e.g. 0.5, split by document) or --train BENCHMARK"
        )
    items = select_items(bench.items, limit)
    if not items:
        raise DataError(f"benchmark {bench.name!r} has no items to judge")
    _check_recorded_cover(todo, items, bench.name)
    _warn_scale_mismatch(full, criterion, todo)
    if bench.pairwise and not any(criterion in it.preference for it in items):
        raise DataError(f"benchmark {bench.name!r} is pairwise but none of its items has a gold preference on "
                        f"{criterion!r}")
    return fit_on, bench, train_info, items


def recorded_outside(benchmark: Benchmark, criterion: str, entries: Sequence[Entry]) -> str | None:
    """One warning line counting recorded answers on ``criterion`` for items the benchmark does not hold; None if none.

    Such rows are not compared (there is no item to compare them on); saying how many keeps a
    mismatched file from passing unseen.
    """
    ids = {it.id for it in benchmark.items}
    parts = []
    for entry in entries:
        run = getattr(entry.judge, "recorded", None)
        if not isinstance(run, RecordedRun):
            continue
        rows = [r for r in run.rows() if r.criterion == criterion and r.item_id not in ids]
        if rows:
            n_items = len({r.item_id for r in rows})
            parts.append(f"{entry.name}: {len(rows)} rows on {n_items} items")
    if not parts:
        return None
    return (f"warning: recorded answers for items not in benchmark {benchmark.name!r} are not compared ("
            + "; ".join(parts) + ")")


def _warn_scale_mismatch(bench: Benchmark, criterion: str, entries: Sequence[Entry]) -> None:
    """Warn once per prompt scale that differs from the benchmark's label scale for ``criterion``.

    Demos drawn from the benchmark are shown on the prompt's scale by a linear rescale
    (:func:`~mitigate.prompt.parts.rescale_score`); agreement measures then compare scores on
    two scales (rank correlations are unaffected, absolute differences are not).
    """
    if bench.pairwise:
        return
    human = bench.scale_for(criterion)
    seen: dict[tuple[float, float], list[str]] = {}
    for e in entries:
        judge = e.judge if e.judge is not None else e.base
        scale = e.scale or (judge_scale(judge) if judge is not None else None)
        if scale is None or scale.letters or (scale.min, scale.max) == (human.min, human.max):
            continue
        seen.setdefault((scale.min, scale.max), []).append(e.name)
    for (lo, hi), names in seen.items():
        warnings.warn(
            f"benchmark {bench.name!r} labels {criterion!r} on {human.describe()}, but entries {names} ask for "
            f"{lo:g} to {hi:g}: demos from it are mapped linearly onto the prompt's scale, and absolute differences "
            "from the human scores compare two scales (rank correlations do not)",
            PromptConflictWarning, stacklevel=3,
        )


def check_compare(benchmark: str | Benchmark, criterion: str, entries: Sequence[Entry] | Mapping[str, Judge], *,
                  limit: int | None = None, seed: int = 0, train: float | str | Benchmark | None = None) -> None:
    """Raise what :func:`compare` with these arguments would refuse, with no LM call and nothing written.

    The CLI calls it before it prints anything, so a bad ``--train``, an entry that needs a
    train split, or a recorded file that misses items is one error line.
    """
    _plan(_benchmark(benchmark), criterion, _entries(entries), train=train, limit=limit, seed=seed)


def _task_for(benchmark: str) -> str:
    family = benchmark.split("-")[0].split(":")[0].lower()
    return GENERATION_TASKS.get(family, DEFAULT_GENERATION_TASK)


async def compare(
    benchmark: str | Benchmark,
    criterion: str,
    entries: Sequence[Entry] | Mapping[str, Judge],
    *,
    out_dir: str | Path,
    concurrency: int = 4,
    limit: int | None = None,
    likelihood: bool | Any = False,
    likelihood_task: str | None = None,
    progress: bool = True,
    n_boot: int = 1000,
    n_perm: int = 5000,
    seed: int = 0,
    restart: bool = False,
    command: str | None = None,
    batch: BatchOptions | BatchSession | bool | None = None,
    train: float | str | Benchmark | None = None,
    report: bool = True,
    probes: Sequence[Probe] | None = None,
    rewriter: LM | None = None,
    probe_tolerance: float = 0.0,
) -> CompareResult:
    """Run every entry over the benchmark's items and measure accuracy and bias (see the module docstring).

    - ``benchmark``: a name for :func:`mitigate.data.registry.load` or a loaded Benchmark.
    - ``entries``: :class:`Entry` objects (or a mapping name -> judge); the first is the
      reference the others are compared against.
    - ``out_dir``: journals go to ``out_dir/journals/<name>.jsonl`` (a killed compare
      resumes from them; ``restart=True`` discards them) and LS to ``out_dir/likelihood.jsonl``.
    - ``limit``: judge only the first ``limit`` items in document-major order (see :func:`select_items`).
    - ``likelihood``: True for LS with the embedded model (``LikelihoodScorer()``), or a
      :class:`~mitigate.likelihood.LikelihoodScorer` to use; ``likelihood_task`` is the
      generation task in its context (default: by benchmark family, :data:`GENERATION_TASKS`).
    - ``n_boot`` bootstrap resamples per interval (0: no intervals), ``n_perm`` permutations.
    - ``batch``: True, :class:`~mitigate.run.batch_session.BatchOptions` or a
      :class:`~mitigate.run.batch_session.BatchSession` to send the LM calls through the providers'
      batch APIs; the entries then run at once through one session (record in
      ``out_dir/batches``), so their requests share batches.
    - ``train``: fit on train, compare on test. A fraction (e.g. 0.5) splits the benchmark by
      document with ``seed`` (:func:`train_test_split`), or a benchmark (name or loaded) that
      shares no item or document with the judged one is the training set. Every entry whose
      pipeline must learn from data (random, stratified, highest-RS or perturbed demos) is
      fitted on its labelled items with ``Pipeline.afit`` before judging the test items;
      entries already fitted (a searched spec) are used as given. ``settings["train"]`` and
      each entry's ``fitted`` say which items that was; ``limit`` applies to the test items.
      Without ``train``, an entry that must be fitted is a ConfigError.
    - ``probes``: bias probes (:mod:`mitigate.probes`) run over every pipeline entry after its
      judgments (:func:`mitigate.harness.probe.run_probes`; its judgments are reused as the
      originals); each entry's ``probes`` holds the report, and its rewrites go to
      ``out_dir/probes/<name>.jsonl``. ``rewriter`` writes LM-assisted probes' rewrites;
      ``probe_tolerance``: score changes up to this size count as unchanged (0: CALM's definition;
      continuous scores, e.g. probability-weighted, need one).

    - ``report``: write the reports into ``out_dir`` (default): ``results.json``, ``report.md``,
      ``report.html`` (self-contained, with the per-item view) and the plots, as
      :func:`mitigate.harness.report.write_report` does; False writes only journals, the LS
      cache and, with ``train``, the training items (``out_dir/train.jsonl``, generic format,
      for ``mitigate search -b jsonl:...``).
    """
    full = _benchmark(benchmark)
    check_param("compare", "concurrency", concurrency, [Interval(int, 1)])
    if n_boot < 0 or n_perm < 1:
        raise ConfigError(f"expected n_boot >= 0 and n_perm >= 1; got n_boot={n_boot}, n_perm={n_perm}")
    todo = _entries(entries)
    check_param("compare", "probe_tolerance", probe_tolerance, [Interval(float, 0.0)])
    if probes:
        check_rewriter(probes, rewriter)
    fit_on, bench, train_info, items = _plan(full, criterion, todo, train=train, limit=limit, seed=seed)
    task: Task = "pairwise" if bench.pairwise else "score"
    out = Path(out_dir)
    fit_info: dict[str, dict[str, Any]] = {}
    if fit_on is not None:
        save_jsonl(fit_on, out / "train.jsonl")
        todo, fit_info = await _fit_entries(todo, fit_on, progress=progress, concurrency=concurrency)
        train_info = {**(train_info or {}), "file": "train.jsonl"}
    stems = journal_names([e.name for e in todo])
    runs: list[RunResult] = []
    if batch:
        runs = await _run_batched(todo, items, out, stems, batch, restart=restart, progress=progress)
    else:
        for e in todo:
            result = await run(with_first_prompt(e.judge), items, concurrency=concurrency,
                               journal=out / "journals" / f"{stems[e.name]}.jsonl",
                               restart=restart, progress=progress, desc=e.name)
            runs.append(result)
    ls: list[float] | None = None
    ls_info: dict[str, Any] | None = None
    if likelihood is not False and likelihood is not None:
        scorer = LikelihoodScorer() if likelihood is True else likelihood
        if not isinstance(scorer, LikelihoodScorer):
            raise ConfigError(f"expected likelihood=True or a LikelihoodScorer; got {type(likelihood).__name__}")
        gen_task = likelihood_task or _task_for(bench.name)
        ls = await likelihood_scores(items, scorer, gen_task, out / "likelihood.jsonl", progress=progress)
        ls_info = {"lm": scorer.lm, "template": scorer.template, "reduce": scorer.reduce, "task": gen_task,
                   "cache": "likelihood.jsonl"}
    same = identical_entries(todo)
    human = human_scores(items, criterion)
    gold = [it.preference.get(criterion) for it in items]
    human_scale = bench.scale_for(criterion)
    results: list[EntryResult] = []
    for k, (e, result) in enumerate(zip(todo, runs, strict=True)):
        scale = e.scale or judge_scale(e.judge) or human_scale
        measures, per_system = entry_measures(result.judgments, items, criterion, scale, ls=ls,
                                              n_boot=n_boot, seed=seed, task=task)
        comparison = None
        if task == "pairwise":
            verdicts = verdicts_as_text(result.judgments)
            histogram = _counts(verdicts)
            if k > 0:
                comparison = _accuracy_comparison(todo[0].name, verdicts_or_abstentions(runs[0].judgments),
                                                  verdicts_or_abstentions(result.judgments), gold,
                                                  n_boot=n_boot, n_perm=n_perm, seed=seed)
        else:
            scores = [score_of(j, criterion) for j in result.judgments]
            histogram = _histogram(scores, scale)
            if k > 0:
                first = [score_of(j, criterion) for j in runs[0].judgments]
                comparison = _comparison(todo[0].name, first, scores, human, n_boot=n_boot, n_perm=n_perm,
                                         seed=seed)
        probed = None
        if probes and e.kind == "pipeline":
            probed = await probe_entry(e.judge, items, probes, criterion=criterion, original=result.judgments,
                                       out=out / "probes" / f"{stems[e.name]}.jsonl", rewriter=rewriter,
                                       concurrency=concurrency, progress=progress, n_boot=n_boot, seed=seed,
                                       label=e.name, tolerance=probe_tolerance)
        results.append(EntryResult(
            name=e.name, kind=e.kind, spec=e.spec, describe=e.judge.describe(), scale=scale,
            summary=result.summary, judgments=result.judgments, measures=measures, per_system=per_system,
            histogram=histogram, comparison=comparison, fitted=fit_info.get(e.name), scoring=scoring_of(e),
            identical_to=same.get(e.name), probes=probed,
        ))
    human_ref = _human_reference(items, criterion, human_scale, n_boot=n_boot, seed=seed, task=task)
    records = tuple(
        ItemRecord(id=it.id, system=it.system, doc_id=it.doc_id,
                   human=None if not math.isfinite(h) else float(h), words=word_count(it.output),
                   ls=None if ls is None or not math.isfinite(ls[i]) else float(ls[i]),
                   system_b=it.system_b, words_b=None if it.output_b is None else word_count(it.output_b),
                   gold=gold[i], output=it.output, output_b=it.output_b)
        for i, (it, h) in enumerate(zip(items, human, strict=True))
    )
    result = CompareResult(
        benchmark=bench.name, criterion=criterion, human_scale=human_scale, task=task, items=records,
        entries=tuple(results), human=human_ref,
        human_histogram=_counts(gold) if task == "pairwise" else _histogram(list(human), human_scale),
        likelihood=ls_info,
        settings={"limit": limit, "n_items": len(items), "concurrency": concurrency, "n_boot": n_boot,
                  "n_perm": n_perm, "seed": seed, "command": command, "train": train_info,
                  "not_fitted": {k: v["error"] for k, v in fit_info.items() if v.get("error")},
                  "journals": {e.name: f"journals/{stems[e.name]}.jsonl" for e in todo}},
    )
    if report:
        write_report(result, out)
    return result


async def _run_batched(todo: Sequence[Entry], items: Sequence[Item], out: Path, stems: Mapping[str, str],
                       batch: BatchOptions | BatchSession | bool, *, restart: bool,
                       progress: bool) -> list[RunResult]:
    """Every entry at once through one batch session, so their requests share batches."""
    session, owned = session_for(batch, out / "batches", progress=progress)
    try:
        return list(await asyncio.gather(*(
            run(with_first_prompt(e.judge), items, journal=out / "journals" / f"{stems[e.name]}.jsonl", restart=restart,
                progress=progress, desc=e.name, batch=session)
            for e in todo)))
    finally:
        if owned:
            await session.aclose()


def _counts(labels: Sequence[str | None]) -> dict[str, int]:
    """How often each pairwise verdict (or gold preference) occurs; failures are not counted."""
    return {k: sum(1 for v in labels if v == k) for k in ("A", "B", "tie")}


def _human_reference(items: Sequence[Item], criterion: str, scale: Scale, *, n_boot: int,
                     seed: int, task: Task = "score") -> dict[str, Measure]:
    """The reported measures marked ``on_humans`` (distribution, length) of the human scores, as a reference row.

    On a pairwise benchmark they are computed on the gold preferences.
    """
    gold = [it.preference.get(criterion) for it in items] if task == "pairwise" else []
    data = EntryData(scores=human_scores(items, criterion), items=items, criterion=criterion, scale=scale,
                     n_boot=n_boot, seed=seed, verdicts=gold, task=task)
    return {key: cls().compute(data) for key, cls in measure_table(task).items() if cls.on_humans}
