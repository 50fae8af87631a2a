"""Benchmarks: the item schema, the generic JSONL format, and loaders for the shared datasets."""

from typing import TYPE_CHECKING

from mitigate._lazy import lazy_exports

if TYPE_CHECKING:
    from mitigate.data._csv_cells import csv_cell
    from mitigate.data._fetch import fetch
    from mitigate.data._jsonl import load_jsonl, save_jsonl
    from mitigate.data._judgebench import read_judgebench
    from mitigate.data._labels import AddedLabels, add_label_files, apply_labels, hide_labels, label_value
    from mitigate.data._llmbar import read_llmbar
    from mitigate.data._recorded import (
        AnswerReader,
        Order,
        RecordedJudgment,
        RecordedRow,
        RecordedRun,
        load_recorded,
        load_recorded_runs,
        runs_from_rows,
        save_recorded,
    )
    from mitigate.data._registry import PATH_LOADERS, benchmark_names, load
    from mitigate.data._released import (
        H2H_JUDGE,
        H2H_MODEL,
        ReleasedRun,
        load_released,
        released_names,
        released_recorded,
        run_to_recorded,
    )
    from mitigate.data._released_pairwise import (
        RELEASE_CRITERION,
        PairwiseRelease,
        ReleasedAnswer,
        TemplateSource,
        split_release_spec,
    )
    from mitigate.data._schema import Benchmark, Item
    from mitigate.data._split import (
        Split,
        labelled,
        labelled_items,
        select_items,
        split_items,
        train_test_split,
    )
    from mitigate.data._stream import ItemStream, StreamedBenchmark, open_benchmark
    from mitigate.data._summeval import CRITERIA, load_summeval

__getattr__, __dir__, __all__ = lazy_exports(__name__)
