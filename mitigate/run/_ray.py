"""mitigate on Ray Data: a judge as a ``map_batches`` transform (:class:`JudgeBatches`) and the dataset of a
benchmark judged on a cluster (:func:`judge_dataset`).

The transform is a plain callable class, so the same object also serves Spark's ``mapInPandas`` or any other
engine that hands a worker a batch of rows: it imports nothing of Ray. Each batch is judged by the one runner
(:func:`~mitigate.run.run_stream`): every item rendered before its first call, the LM reached through the
judge's own transports, cache, retries and deadlines, answers read strictly, the circuit breaker. With a run
folder each batch keeps a journal named by its item ids (``journals/<key>.jsonl``): a batch that Ray runs
again after its worker died, or a rerun after the driver died, reads what finished and calls the LM only for
the rest.
"""

from __future__ import annotations

import asyncio
import hashlib
import logging
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

from mitigate.data import Item
from mitigate.errors import ConfigError
from mitigate.judge import Judge, Judgment
from mitigate.paths import open_output
from mitigate.run._runner import run_stream
from mitigate.run._tally import STOP_AFTER

ITEM_COLUMN = "item"
"""The input column :class:`JudgeBatches` reads by default: one :class:`~mitigate.data.Item` as JSON a row."""
OUTPUT_COLUMNS = ("id", "judgment", "score", "error", "resumed")
"""What :class:`JudgeBatches` adds to each row: the item id, the :class:`~mitigate.judge.Judgment` as JSON,
its score on the criterion (None when it failed), its error, and whether a journal already held it."""
BATCH_SIZE = 256
"""Items per batch by default: a batch is what a killed worker's retry resumes from its journal."""


def batch_key(ids: Sequence[str]) -> str:
    """The name of a batch's journal: a hash of its item ids in order (the same batch, the same journal)."""
    digest = hashlib.sha256()
    for item_id in ids:
        digest.update(item_id.encode("utf-8", "surrogatepass") + b"\0")
    return f"{digest.hexdigest()[:24]}-{len(ids)}"


class JudgeBatches:
    """A judge as a transform over batches of rows: ``ds.map_batches(JudgeBatches, fn_constructor_kwargs=
    {"judge": judge, "folder": "runs/x"}, batch_size=256, concurrency=4)`` in Ray Data, or called on a pandas
    frame per partition in Spark.

    ``judge`` is a :class:`~mitigate.judge.Judge` (shipped to the workers by pickling) or a function of no
    arguments that builds one on the worker (for an LM that cannot be pickled, such as an embedded model).
    A batch is a mapping of columns, ``item_column`` holding items as JSON; the result is the batch's columns
    with :data:`OUTPUT_COLUMNS` added, in the batch's order. ``folder``: where the batches' journals go (a
    folder every worker can write, on a shared disk when the cluster has several machines; the journals go in
    its ``journals/``); without it a
    retried batch is judged again (served by the LM cache where one is on). ``concurrency``: judgments in
    flight per worker. A run stopped by the circuit breaker raises :class:`~mitigate.errors.RunStoppedError`
    in the worker, which fails the dataset.
    """

    def __init__(
        self,
        judge: Judge | Callable[[], Judge],
        folder: str | Path | None = None,
        *,
        criterion: str | None = None,
        item_column: str = ITEM_COLUMN,
        concurrency: int = 8,
        stop_after: int = STOP_AFTER,
    ) -> None:
        built = judge if isinstance(judge, Judge) else judge()
        if not isinstance(built, Judge):
            raise ConfigError(f"expected a Judge or a function returning one; got {type(built).__name__}")
        self.judge = built
        self.folder = None if folder is None else Path(folder)
        self.criterion = criterion
        self.item_column = item_column
        self.concurrency = concurrency
        self.stop_after = stop_after
        self._loop = asyncio.new_event_loop()  # one loop per worker: the LM's connections live across batches

    def __call__(self, batch: Mapping[str, Any]) -> dict[str, list[Any]]:
        """Judge one batch; its columns come back with :data:`OUTPUT_COLUMNS` added."""
        if self.item_column not in batch:
            raise ConfigError(
                f"expected a column {self.item_column!r} of items as JSON; got columns {sorted(batch)}"
            )
        items = [Item.model_validate_json(text) for text in batch[self.item_column]]
        pairs = self._loop.run_until_complete(self._judge(items))
        out: dict[str, list[Any]] = {name: list(batch[name]) for name in batch}
        out["id"] = [it.id for it in items]
        out["judgment"] = [j.model_dump_json() for j, _ in pairs]
        out["score"] = [self._score(j) for j, _ in pairs]
        out["error"] = [j.error for j, _ in pairs]
        out["resumed"] = [resumed for _, resumed in pairs]
        return out

    def _score(self, judgment: Judgment) -> float | None:
        crit = self.criterion or next(iter(judgment.scores), None)
        return None if crit is None else judgment.scores.get(crit)

    async def _judge(self, items: list[Item]) -> list[tuple[Judgment, bool]]:
        journal = None
        if self.folder is not None and items:
            journal = self.folder / "journals" / f"{batch_key([it.id for it in items])}.jsonl"
        pairs: list[tuple[Judgment, bool]] = []
        stream = run_stream(
            self.judge,
            items,
            concurrency=self.concurrency,
            journal=journal,
            progress=False,
            stop_after=self.stop_after,
        )
        async with stream:
            async for _, judgment in stream:  # resumed: the tally's count of them went up
                pairs.append((judgment, stream.tally.resumed > sum(r for _, r in pairs)))
        return pairs


def judge_dataset(
    dataset: Any,
    judge: Judge | Callable[[], Judge],
    folder: str | Path | None = None,
    *,
    workers: int = 2,
    batch_size: int = BATCH_SIZE,
    num_cpus: float = 0,
    **options: Any,
) -> Any:
    """``dataset`` (a Ray Dataset with a column of items as JSON) judged by ``workers`` actors, each batch of
    ``batch_size`` items by :class:`JudgeBatches` (``options``: its keyword arguments) (lazy).

    Each actor reserves ``num_cpus`` of the cluster, none by default: a judge mostly waits on its LM server,
    so ``workers`` alone bounds the actors, and the tasks that read the dataset never wait for a CPU an idle
    actor holds (on nodes of one CPU, actors reserving a part of it leave the read waiting for ever)."""
    import ray.data

    return dataset.map_batches(
        JudgeBatches,
        fn_constructor_args=(judge, None if folder is None else str(folder)),
        fn_constructor_kwargs=options,
        batch_size=batch_size,
        compute=ray.data.ActorPoolStrategy(size=workers),
        num_cpus=num_cpus,
        batch_format="numpy",
    )


def start_ray(address: str | None = None, *, progress: bool = True) -> Any:
    """The ``ray`` module, connected to the cluster at ``address`` (None: a local one started here) with Ray
    Data keeping rows in order; ConfigError naming the extra when Ray is not installed."""
    try:
        import ray
        import ray.data
    except ImportError:
        raise ConfigError(
            "expected Ray Data for --engine ray; it is not installed: pip install 'mitigate[ray]'"
        ) from None
    if not ray.is_initialized():
        settings: dict[str, Any] = {"log_to_driver": False, "logging_level": logging.WARNING}
        try:
            if address is None:
                ray.init(include_dashboard=False, **settings)
            else:
                ray.init(address=address, **settings)
        except Exception as exc:  # Ray raises bare Exceptions (a node that timed out, no cluster there)
            where = f"the Ray cluster at {address}" if address else "a local Ray cluster"
            hint = "start one with `ray start --head` and pass its address with --ray-address"
            raise ConfigError(
                f"expected to start or join {where}; got {type(exc).__name__}: {' '.join(str(exc).split())}"
                + ("" if address else f" (on a busy machine, {hint})")
            ) from None
    logging.getLogger("ray.data").setLevel(logging.INFO if progress else logging.WARNING)
    context = ray.data.DataContext.get_current()
    context.execution_options.preserve_order = True
    context.enable_progress_bars = progress
    return ray


def results_table(judgments: Sequence[Judgment] | None = None, criterion: str | None = None) -> Any:
    """Judgments as the Parquet table ``results.parquet`` holds, a row per item id (its schema alone without
    ``judgments``): ``id``, ``score`` on ``criterion`` (None when it failed), ``error``, ``judgment``."""
    import pyarrow as pa

    schema = pa.schema(
        [("id", pa.string()), ("score", pa.float64()), ("error", pa.string()), ("judgment", pa.string())]
    )
    if judgments is None:
        return schema
    columns = {
        "id": [j.item_id for j in judgments],
        "score": [j.scores.get(criterion) if criterion else None for j in judgments],
        "error": [j.error for j in judgments],
        "judgment": [j.model_dump_json() for j in judgments],
    }
    return pa.table(columns, schema=schema)


def items_file(items: Iterator[Item] | Sequence[Item], path: Path) -> int:
    """Write ``items`` to ``path`` as JSON lines (what :func:`judge_dataset` reads through
    ``ray.data.read_text``), replacing it whole; how many were written."""
    path.parent.mkdir(parents=True, exist_ok=True)
    count = 0
    with open_output(path, "the items file of --engine ray", durable=False) as fh:
        for item in items:
            fh.write(item.model_dump_json() + "\n")
            count += 1
    return count
