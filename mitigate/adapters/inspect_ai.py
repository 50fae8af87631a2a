"""inspect-ai: a mitigated judge as a scorer, and inspect eval logs as recorded judgments.

Needs ``inspect-ai`` (``pip install 'mitigate[inspect]'``), imported when a function here is called.
:func:`mitigated_scorer` scores the solver's completion with a mitigate judge: the score's value is the
judge's score on its own scale (``metadata``: the criterion, the scale, the score mapped to 0-1); an answer
that holds no score is :meth:`inspect_ai.scorer.Score.unscored` (reason ``"grader_failed"``, the raw answer as
explanation), which inspect's metrics skip. :func:`read_inspect_log` reads a log inspect wrote (``.eval`` or
``.json``) into recorded judgments, one judge per scorer; :func:`inspect_log_to_recorded` writes them for
``mitigate compare --recorded``.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

from mitigate.adapters._common import make_item, outcome, shown_scale
from mitigate.data import RecordedRow, RecordedRun, runs_from_rows, save_recorded
from mitigate.errors import ConfigError, DataError
from mitigate.judge import Judge
from mitigate.paths import MAX_FILE_BYTES, check_input_file
from mitigate.scale import Scale

GRADES = {"C": 1.0, "P": 0.5, "I": 0.0}
"""inspect's letter grades (CORRECT, PARTIAL, INCORRECT) as scores on 0-1, as its ``value_to_float`` reads
them; NOANSWER (``"N"``) is not among them: it becomes a recorded failure, not a zero."""


def mitigated_scorer(
    judge: Judge,
    *,
    criterion: str | None = None,
    scale: Scale | None = None,
    input_field: str = "source",
    name: str = "mitigated_judge",
) -> Any:
    """An inspect-ai scorer that scores each sample's completion with ``judge`` (mean and standard error).

    ``criterion`` names the judge's criterion when it scores several; ``scale`` defaults to the judge's prompt
    scale; ``input_field`` is the item field the sample's input goes to.
    """
    from inspect_ai.scorer import Score, Target, mean, scorer, stderr
    from inspect_ai.solver import TaskState

    shown = shown_scale(judge, scale)

    @scorer(metrics=[mean(), stderr()], name=name)
    def build() -> Any:
        async def score(state: TaskState, target: Target) -> Score:
            expected = target.text if target is not None and target.text else None
            item = make_item(
                state.output.completion,
                state.input_text,
                expected=expected,
                item_id=str(state.sample_id),
                input_field=input_field,
            )
            got = outcome(await judge.judge(item), shown, criterion)
            meta = {"criterion": got.criterion, "scale": [shown.min, shown.max], "normalized": got.normalized}
            if not got.ok or got.score is None:
                return Score.unscored(
                    reason="grader_failed",
                    answer=state.output.completion,
                    explanation=got.raw,
                    metadata={**meta, "error": got.error},
                )
            return Score(value=got.score, answer=state.output.completion, explanation=got.raw, metadata=meta)

        return score

    return build()


def _values(value: Any, criterion: str) -> dict[str, Any]:
    """A score value as criterion -> value (a dict value scores several criteria at once)."""
    return {str(k): v for k, v in value.items()} if isinstance(value, dict) else {criterion: value}


def _read_value(value: Any) -> tuple[float | None, str | None, bool]:
    """(score, error, letter-graded) of one inspect score value."""
    if isinstance(value, bool):
        return float(value), None, True
    if isinstance(value, int | float):
        if not math.isfinite(value):
            return None, "unscored (NaN)", False
        return float(value), None, False
    if isinstance(value, str) and value.strip().upper() in GRADES:
        return GRADES[value.strip().upper()], None, True
    return None, f"expected a number or a grade C, P or I; got {value!r}", False


def read_inspect_log(
    path: str | Path,
    *,
    criterion: str | None = None,
    judge: str | None = None,
    scorer: str | None = None,
    id_key: str | None = None,
) -> dict[str, RecordedRun]:
    """The judgments in an inspect eval log as recorded runs, judge name -> run (one judge per scorer; the
    mapping: docs/adapters.md). Item ids are the samples' ``id``, or ``metadata[id_key]``; ``judge=`` renames
    the one scorer read (``scorer=`` picks it). Grades C / P / I are 1 / 0.5 / 0; an unscored sample, NOANSWER
    or any other value is a recorded failure, never a score. DataError naming the file for anything else.
    """
    try:
        from inspect_ai.log import read_eval_log
    except ImportError:
        raise ConfigError(
            "reading an inspect eval log needs the inspect-ai package, which is not installed; expected it "
            "to be importable (pip install 'mitigate[inspect]')"
        ) from None
    file = check_input_file(path, "an inspect eval log", error=DataError)  # never a FIFO or device
    if file.stat().st_size > MAX_FILE_BYTES:
        raise DataError(
            f"expected an inspect eval log of at most {MAX_FILE_BYTES:,} bytes; {file} is longer",
            path=str(file),
        )
    try:
        log = read_eval_log(str(file))
    except Exception as exc:  # inspect raises several kinds for an unreadable log
        raise DataError(
            f"expected an inspect eval log (.eval or .json) at {file}; could not read it: {exc}",
            path=str(file),
        ) from exc
    rows: list[RecordedRow] = []
    scales: dict[str, Scale] = {}
    letter_graded: set[str] = set()
    chosen = [scorer] if scorer else None
    for sample in log.samples or []:
        item_id = str(sample.id) if id_key is None else (sample.metadata or {}).get(id_key)
        if item_id is None:
            raise DataError(
                f"{file}: sample {sample.id!r} has no metadata[{id_key!r}] to use as the item id",
                path=str(file),
            )
        for scorer_name, score in (sample.scores or {}).items():
            if chosen is not None and scorer_name not in chosen:
                continue
            meta = score.metadata or {}
            default_criterion = criterion or meta.get("criterion") or "overall"
            for crit, value in _values(score.value, default_criterion).items():
                number, error, graded = _read_value(value)
                if graded:
                    letter_graded.add(crit)
                bounds = meta.get("scale")
                if isinstance(bounds, list) and len(bounds) == 2:
                    scales[crit] = Scale(min=bounds[0], max=bounds[1])
                if error is not None and meta.get("error"):
                    error = str(meta["error"])
                rows.append(
                    RecordedRow(
                        item_id=str(item_id),
                        judge=judge or scorer_name,
                        criterion=crit,
                        score=number,
                        error=error,
                        raw=score.explanation or "",
                        sample=max(0, int(sample.epoch or 1) - 1),
                        meta={
                            "model": log.eval.model,
                            "task": log.eval.task,
                            **({"answer": score.answer} if score.answer else {}),
                        },
                    )
                )
    if not rows:
        raise DataError(
            f"expected scored samples in the inspect log {file}; got none"
            + (f" from scorer {scorer!r}" if scorer else ""),
            path=str(file),
        )
    if judge is not None and len({r.judge for r in rows}) > 1:
        raise DataError(f"judge= renames one scorer; {file} holds several: pass scorer= too", path=str(file))
    for crit in letter_graded:
        scales.setdefault(crit, Scale(min=0, max=1, step=0.5))
    return runs_from_rows(rows, str(file), scales)


def inspect_log_to_recorded(path: str | Path, out: str | Path, **kwargs: Any) -> Path:
    """Write the judgments of an inspect eval log as a recorded-judgments file (:func:`read_inspect_log`)."""
    return save_recorded(list(read_inspect_log(path, **kwargs).values()), out)
