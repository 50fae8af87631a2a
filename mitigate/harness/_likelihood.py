"""LS for a comparison's items (Ohi et al. 2024's likelihood of each output), cached per item on disk.

:func:`likelihood_scores` computes LS = log P(output | input, task) with a
:class:`~mitigate.judge._likelihood.LikelihoodScorer` for every item, reading and extending a JSONL
cache (one line per item and scorer setting), so a rerun computes nothing twice. The task in the
context is the one the outputs were *generated* for: by benchmark family
(:data:`GENERATION_TASKS`), unless given.
"""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from tqdm.auto import tqdm

from mitigate.data import Item
from mitigate.errors import DataError
from mitigate.paths import open_regular, read_lines

GENERATION_TASKS: dict[str, str] = {
    "summeval": "Write a short summary of the news article.",
    "uss": "Continue the dialogue with the system's next turn.",
    "webnlg": "Verbalise the RDF triples as fluent English text.",
    "tmu": "Correct the grammatical errors in the sentence.",
}
"""Default task description for the likelihood context, by benchmark family (Ohi et al. score
log P(output | input, task), where the task is the one the output was *generated* for)."""

DEFAULT_GENERATION_TASK = "Produce the output for the input."


def generation_task(benchmark: str) -> str:
    """The generation task of a benchmark's family (:data:`GENERATION_TASKS`), or the generic one."""
    family = benchmark.split("-")[0].split(":")[0].lower()
    return GENERATION_TASKS.get(family, DEFAULT_GENERATION_TASK)


def _likelihood_key(scorer: Any, task: str) -> str:
    blob = json.dumps(
        {
            "lm": scorer.lm,
            "template": scorer.template,
            "reduce": scorer.reduce,
            "input_fields": list(scorer.input_fields),
            "task": task,
        },
        sort_keys=True,
    )
    return hashlib.sha256(blob.encode()).hexdigest()[:16]


async def likelihood_scores(
    items: Sequence[Item], scorer: Any, task: str, cache: Path | None, progress: bool = True
) -> list[float]:
    """LS per item, reading and extending the JSONL cache ``cache`` (one line per item and scorer setting)."""
    key = _likelihood_key(scorer, task)
    known: dict[str, float] = {}
    if cache is not None and (cache.exists() or cache.is_symlink()):
        with open_regular(cache, "rb", "the likelihood cache") as fh:  # a FIFO or a device is refused unread
            lines = [
                raw.decode("utf-8") for raw in read_lines(fh, f"the likelihood cache {cache}", path=cache)
            ]
        for n, line in enumerate(lines, start=1):
            if not line.strip():
                continue
            try:
                row = json.loads(line)
            except json.JSONDecodeError:
                if n == len(lines):
                    continue  # a half-written last line from a killed run
                raise DataError(
                    f"{cache}:{n}: expected a likelihood cache line; got invalid JSON",
                    path=str(cache),
                    line=n,
                ) from None
            if row.get("key") == key:
                known[row["id"]] = math.nan if row.get("ls") is None else float(row["ls"])
    todo = [it for it in items if it.id not in known]
    if todo:
        if cache is not None:
            cache.parent.mkdir(parents=True, exist_ok=True)
        with tqdm(
            total=len(items),
            initial=len(items) - len(todo),
            desc="likelihood",
            unit="item",
            disable=not progress,
            leave=False,
        ) as bar:
            for it in todo:
                value = float(await scorer.score(it, task))
                known[it.id] = value
                if cache is not None:
                    with open_regular(cache, "a", "the likelihood cache") as fh:
                        fh.write(
                            json.dumps(
                                {"key": key, "id": it.id, "ls": value if math.isfinite(value) else None}
                            )
                            + "\n"
                        )
                bar.update(1)
    return [known[it.id] for it in items]
