"""What a comparison is asked to do, as one frozen value: :class:`CompareConfig`.

Everything :func:`~mitigate.harness._compare.compare` takes: the benchmark, the criterion and the
entries; the train split and the item limit; where the journals and reports go; the resamples
and the seed of the intervals and tests; likelihood, bias probes and batch mode; the estimator
of the corrected per-system values. Every parameter is checked here, once, when the value is
built (one line naming the parameter, what was expected and what came); what needs the data
(a criterion the benchmark lacks, a train split) is checked by the plan stage.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, ValidationError, model_validator

from mitigate.constraints import Interval, check_param
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
    """Everything one comparison takes, checked once (see the module docstring for the stages that read it).

    Fields:
        benchmark: a name for :func:`mitigate.data._registry.load`, or a loaded Benchmark.
        criterion: the criterion the judges score and the humans labelled.
        entries: the judges to compare (:class:`~mitigate.harness._entry.Entry`, or a
            mapping name -> judge); the first is the reference the others are compared against.
        out_dir: where the journals (``journals/<name>.jsonl``), the likelihood cache, the
            training items and the reports go (needed to run; a plan alone does not need it).
        concurrency: judge calls in flight per entry.
        limit: judge only the first ``limit`` items in document-major order (None: all).
        likelihood: True for LS with the embedded model, or a LikelihoodScorer; ``likelihood_task``
            the generation task in its context (default: by benchmark family).
        progress: show progress bars.
        n_boot: bootstrap resamples per interval (0: no intervals); ``n_perm`` permutations.
        seed: seed of the train split, the resamples and the permutations.
        restart: discard existing journals instead of resuming from them.
        command: the command line, shown in the report.
        batch: send the LM calls through the providers' batch APIs (True, BatchConfig, or a
            shared BatchSession).
        train: fit on train, compare on test: a fraction (split by document with ``seed``), or a
            training benchmark (name or loaded) sharing no item or document with the judged one.
        report: write results.json, report.md, report.html and the plots into ``out_dir``.
        probes: bias probes run over every pipeline entry; ``rewriter`` the LM that writes the
            LM-assisted probes' rewrites; ``probe_tolerance`` the score change counted as none.
        estimate: on a partly labelled benchmark, the method of each entry's corrected estimate
            per system (``ppi``, the default; ``calibrated``, ``human``, ``judge``; None: none).
        labels: labels files (CSV or JSON lines with ``id``, ``label`` and optionally ``weight``,
            :func:`mitigate.data._labels.read_labels`) whose labels are added to the benchmark's
            on the criterion before anything is split or chosen; filled selection files are
            selection rounds in the order given, their weights used by the corrected estimates.
    """

    model_config = ConfigDict(frozen=True, extra="forbid", arbitrary_types_allowed=True, strict=True)
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

    @model_validator(mode="wrap")
    @classmethod
    def _validate(cls, data: Any, handler: Callable[[Any], Any]) -> Any:
        if isinstance(data, Mapping):
            data = _normalised(dict(data))
            for name, forms in _CONSTRAINTS.items():
                if name in data:
                    check_param("compare", name, data[name], forms)
        try:
            config = handler(data)
        except ValidationError as exc:
            first = exc.errors()[0]
            name = ".".join(str(p) for p in first.get("loc", ()) if not isinstance(p, int)) or "?"
            name = name.split(".")[0]
            raise ConfigError(
                f"The {name!r} parameter of compare is not valid: {first.get('msg')}. "
                f"Got {str(first.get('input'))[:80]!r} instead."
            ) from None
        config._check()
        return config

    def _check(self) -> None:
        if self.probes:
            check_rewriter(self.probes, self.rewriter)
        if self.estimate is not None and self.estimate not in METHODS:
            raise ConfigError(
                f"The 'estimate' parameter of compare must be one of {list(METHODS)} or None. "
                f"Got {self.estimate!r} instead."
            )

    def with_options(self, **options: Any) -> CompareConfig:
        """A copy with ``options`` (field names) set, checked like a new config."""
        unknown = sorted(k for k in options if k not in type(self).model_fields)
        if unknown:
            raise ConfigError(
                f"CompareConfig has no field {', '.join(map(repr, unknown))}; expected some of "
                f"{sorted(type(self).model_fields)}"
            )
        current = {k: getattr(self, k) for k in type(self).model_fields}
        return CompareConfig.model_validate({**current, **options})


_CONSTRAINTS: dict[str, list[Any]] = {
    "criterion": [str],
    "concurrency": [Interval(int, 1)],
    "limit": [Interval(int, 1), None],
    "seed": [int],
    "n_boot": [Interval(int, 0)],
    "n_perm": [Interval(int, 1)],
    "probe_tolerance": [Interval(float, 0.0)],
    "progress": [bool],
    "restart": [bool],
    "report": [bool],
}
"""The scalar parameters, checked with one wording: "The 'concurrency' parameter of compare must be an int >=
1. Got 0
instead." """


def _normalised(data: dict[str, Any]) -> dict[str, Any]:
    """What the fields accept beyond their exact types: entries as a mapping or a list, a path as text,
    likelihood None (off), probes as a list, a whole-number probe tolerance, labels files as one path or a
    list."""
    if "entries" in data:
        data["entries"] = as_entries(data["entries"])
    if isinstance(data.get("out_dir"), str):
        data["out_dir"] = Path(data["out_dir"])
    if data.get("labels") is None:
        data.pop("labels", None)
    elif isinstance(data["labels"], str | Path):
        data["labels"] = (Path(data["labels"]),)
    elif isinstance(data["labels"], Sequence):
        data["labels"] = tuple(Path(p) if isinstance(p, str) else p for p in data["labels"])
    if "likelihood" in data and data["likelihood"] is None:
        data["likelihood"] = False
    if "likelihood" in data and not isinstance(data["likelihood"], bool | LikelihoodScorer):
        raise ConfigError(
            f"expected likelihood=True or a LikelihoodScorer; got {type(data['likelihood']).__name__}"
        )
    if data.get("probes") is None:
        data.pop("probes", None)
    elif not isinstance(data["probes"], tuple):
        data["probes"] = tuple(data["probes"])
    tol = data.get("probe_tolerance")
    if isinstance(tol, int) and not isinstance(tol, bool):
        data["probe_tolerance"] = float(tol)
    train = data.get("train")
    if isinstance(train, int) and not isinstance(train, bool):
        data["train"] = float(train)
    return data
