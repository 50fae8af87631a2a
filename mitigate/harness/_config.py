"""What a comparison is asked to do, as one frozen value: :class:`CompareConfig`.

Every field is checked once, when the value is built, by :func:`~mitigate.constraints.check_param` against
:data:`_CHECKS` (one line naming the parameter, what was expected and what came); what needs the data (a
criterion the benchmark lacks, a train split) is checked by the plan stage.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, model_validator

from mitigate.constraints import ConstraintLike, Interval, IsInstance, Options, Satisfies, check_param
from mitigate.data import Benchmark
from mitigate.errors import ConfigError
from mitigate.estimators import METHODS, Method
from mitigate.harness._entry import Entry, as_entries
from mitigate.judge import LikelihoodScorer
from mitigate.lm import LM
from mitigate.probes import Probe, check_rewriter
from mitigate.run import BatchConfig, BatchSession

PLANNING_FIELDS: tuple[str, ...] = ("benchmark", "criterion", "entries", "train", "limit", "seed", "labels")
"""The fields a plan is made from: changing one of them needs a new plan."""


class CompareConfig(BaseModel):
    """Everything one comparison takes; ``compare(**fields)`` builds one from keyword arguments.

    Fields:
        benchmark: a name for :func:`mitigate.data.load`, or a loaded Benchmark.
        criterion: the criterion the judges score and the humans labelled.
        entries: the judges to compare (:class:`~mitigate.harness.Entry`, or a mapping name -> judge); the
            first is the reference the others are compared against.
        out_dir: where the journals (``journals/<name>.jsonl``, resumed by a rerun), the likelihood cache,
            the training items (``train.jsonl``) and the reports go (needed to run; a plan alone does not).
        concurrency: judge calls in flight per entry.
        limit: judge only the first ``limit`` items in document-major order (None: all).
        likelihood: True for LS with the embedded model, or a LikelihoodScorer; ``likelihood_task`` the
            generation task in its context (default: by benchmark family).
        progress: show progress bars.
        n_boot: bootstrap resamples per interval (0: no intervals); ``n_perm`` permutations.
        seed: seed of the train split, the resamples and the permutations.
        restart: discard existing journals instead of resuming from them.
        command: the command line, shown in the report.
        batch: send the LM calls through the providers' batch APIs (True, BatchConfig, or a shared
            BatchSession); the entries then run at once, so their requests share batches.
        train: fit on train, compare on test: a fraction (split by document with ``seed``), or a training
            benchmark (name or loaded) sharing no item or document with the judged one. Without it, an entry
            that must be fitted is refused.
        report: write results.json, report.md, report.html and the plots into ``out_dir``.
        probes: bias probes run over every pipeline entry (rewrites in ``probes/<name>.jsonl``);
            ``rewriter`` the LM that writes the LM-assisted probes' rewrites; ``probe_tolerance`` the score
            change counted as none.
        estimate: on a partly labelled benchmark, the method of each entry's corrected estimate per system
            (``ppi``, the default; ``calibrated``, ``human``, ``judge``; None: none).
        labels: labels files (CSV or JSON lines with ``id``, ``label`` and optionally ``weight``,
            :func:`mitigate.data.read_labels`) whose labels are added to the benchmark's on the criterion
            before anything is split or chosen; filled selection files are selection rounds in the order
            given, their weights used by the corrected estimates.
    """

    model_config = ConfigDict(frozen=True, extra="forbid", arbitrary_types_allowed=True)
    benchmark: Benchmark | str
    criterion: str
    entries: tuple[Entry, ...]
    out_dir: Path | None = None
    concurrency: int = 4
    limit: int | None = None
    likelihood: bool | LikelihoodScorer = False
    likelihood_task: str | None = None
    progress: bool = True
    n_boot: int = 1000
    n_perm: int = 5000
    seed: int = 0
    restart: bool = False
    command: str | None = None
    batch: BatchConfig | BatchSession | bool | None = None
    train: float | str | Benchmark | None = None
    report: bool = True
    probes: tuple[Probe, ...] = ()
    rewriter: LM | None = None
    probe_tolerance: float = 0.0
    estimate: Method | None = "ppi"
    labels: tuple[Path, ...] = ()

    @model_validator(mode="before")
    @classmethod
    def _checked(cls, data: Any) -> Any:
        if not isinstance(data, Mapping):
            return data
        unknown = sorted(str(k) for k in data if k not in cls.model_fields)
        if unknown:
            raise ConfigError(
                f"CompareConfig has no field {', '.join(map(repr, unknown))}; expected some of "
                f"{sorted(cls.model_fields)}"
            )
        data = {**data, "entries": as_entries(data.get("entries") or ())}
        for name, forms in _CHECKS.items():
            if name in data or name in ("benchmark", "criterion"):
                check_param("compare", name, data.get(name), forms)
        for name in ("likelihood", "probes", "labels"):  # None: the default (off, none)
            if name in data and data[name] is None:
                del data[name]
        if isinstance(data.get("labels"), str | Path):
            data["labels"] = (data["labels"],)
        if data.get("probes"):
            check_rewriter(data["probes"], data.get("rewriter"))
        return data

    def with_options(self, **options: Any) -> CompareConfig:
        """A copy with ``options`` (field names) set, checked like a new config."""
        return CompareConfig.model_validate({**dict(self), **options})


def _all(kind: type | tuple[type, ...]) -> Satisfies:
    return Satisfies(lambda v: not isinstance(v, str) and all(isinstance(x, kind) for x in v), "a list")


_CHECKS: dict[str, list[ConstraintLike]] = {
    "benchmark": [IsInstance(str, Benchmark)],
    "criterion": [str],
    "out_dir": [IsInstance(str, Path), None],
    "concurrency": [Interval(int, 1)],
    "limit": [Interval(int, 1), None],
    "likelihood": [IsInstance(bool, LikelihoodScorer), None],
    "likelihood_task": [str, None],
    "progress": [bool],
    "n_boot": [Interval(int, 0)],
    "n_perm": [Interval(int, 1)],
    "seed": [int],
    "restart": [bool],
    "command": [str, None],
    "batch": [IsInstance(bool, BatchConfig, BatchSession), None],
    "train": [IsInstance(float, str, Benchmark, noun="a fraction, a benchmark name or a Benchmark"), None],
    "report": [bool],
    "probes": [_all(Probe), None],
    "rewriter": [LM, None],
    "probe_tolerance": [Interval(float, 0.0)],
    "estimate": [Options(*METHODS), None],
    "labels": [IsInstance(str, Path), _all((str, Path)), None],
}
"""Each field's acceptable forms (``entries`` is checked by :func:`~mitigate.harness._entry.as_entries`)."""
