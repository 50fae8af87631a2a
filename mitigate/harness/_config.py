"""What a comparison is asked to do, as one frozen value: :class:`CompareConfig`. Each field is checked once,
when the value is built, by :func:`~mitigate.constraints.check_param` (one line naming the parameter, what was
expected and what came); what needs the data (a criterion the benchmark lacks) is checked by the plan stage.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Annotated, Any

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


class Forms:
    """The acceptable forms of a field's value, as :func:`~mitigate.constraints.check_param` takes them."""

    def __init__(self, *forms: ConstraintLike) -> None:
        self.forms = forms


def _all(kind: type | tuple[type, ...], noun: str) -> Satisfies:
    return Satisfies(lambda v: not isinstance(v, str) and all(isinstance(x, kind) for x in v), noun)


class CompareConfig(BaseModel):
    """Everything one comparison takes; ``compare(**fields)`` builds one from keyword arguments. Each field is
    declared once, with the forms it accepts (:class:`Forms`), and checked once when the value is built."""

    model_config = ConfigDict(frozen=True, extra="forbid", arbitrary_types_allowed=True)
    benchmark: Annotated[Benchmark | str, Forms(IsInstance(str, Benchmark))]
    """A name for :func:`mitigate.data.load`, or a loaded Benchmark."""
    criterion: Annotated[str, Forms(str)]
    """The criterion the judges score and the humans labelled."""
    entries: tuple[Entry, ...]
    """The judges to compare (Entry objects, or a mapping name -> judge); the first is the reference."""
    out_dir: Annotated[Path | None, Forms(IsInstance(str, Path), None)] = None
    """Where the journals (``journals/<name>.jsonl``, resumed by a rerun), the likelihood cache, the training
    items (``train.jsonl``) and the reports go (needed to run; a plan alone does not)."""
    concurrency: Annotated[int, Forms(Interval(int, 1))] = 4
    """Judge calls in flight per entry."""
    limit: Annotated[int | None, Forms(Interval(int, 1), None)] = None
    """Judge only the first ``limit`` items in document-major order (None: all)."""
    likelihood: Annotated[bool | LikelihoodScorer, Forms(IsInstance(bool, LikelihoodScorer), None)] = False
    """True for LS with the embedded model, or a LikelihoodScorer (None: off)."""
    likelihood_task: Annotated[str | None, Forms(str, None)] = None
    """The generation task in the likelihood context (default: by benchmark family)."""
    progress: Annotated[bool, Forms(bool)] = True
    """Show progress bars."""
    n_boot: Annotated[int, Forms(Interval(int, 0))] = 1000
    """Bootstrap resamples per interval (0: no intervals)."""
    n_perm: Annotated[int, Forms(Interval(int, 1))] = 5000
    """Permutations of each paired permutation test."""
    seed: Annotated[int, Forms(int)] = 0
    """Seed of the train split, the resamples and the permutations."""
    restart: Annotated[bool, Forms(bool)] = False
    """Discard existing journals instead of resuming from them."""
    command: Annotated[str | None, Forms(str, None)] = None
    """The command line, shown in the report."""
    batch: Annotated[
        BatchConfig | BatchSession | bool | None, Forms(IsInstance(bool, BatchConfig, BatchSession), None)
    ] = None
    """Send the LM calls through the providers' batch APIs (True, a BatchConfig, or a shared BatchSession);
    the entries then run at once, so their requests share batches."""
    train: Annotated[
        float | str | Benchmark | None,
        Forms(IsInstance(float, str, Benchmark, noun="a fraction, a benchmark name or a Benchmark"), None),
    ] = None
    """Fit on train, compare on test: a fraction (split by document with ``seed``), or a training benchmark
    sharing no item or document with the judged one; without it, an entry that must be fitted is refused."""
    report: Annotated[bool, Forms(bool)] = True
    """Write results.json, report.md, report.html and the plots into ``out_dir``."""
    probes: Annotated[tuple[Probe, ...], Forms(_all(Probe, "a list of probes"), None)] = ()
    """Bias probes run over every pipeline entry (their rewrites in ``probes/<name>.jsonl``)."""
    rewriter: Annotated[LM | None, Forms(LM, None)] = None
    """The LM that writes the LM-assisted probes' rewrites."""
    probe_tolerance: Annotated[float, Forms(Interval(float, 0.0))] = 0.0
    """Score changes up to this size count as none in the probes' measures."""
    estimate: Annotated[Method | None, Forms(Options(*METHODS), None)] = "ppi"
    """On a partly labelled benchmark, the method of each entry's corrected estimate per system (None:
    none)."""
    labels: Annotated[
        tuple[Path, ...], Forms(IsInstance(str, Path), _all((str, Path), "a list of paths"), None)
    ] = ()
    """Labels files (``id``, ``label`` and optionally ``weight``; :func:`mitigate.data.read_labels`) whose
    labels are added to the benchmark's before anything is split or chosen; filled selection files are
    selection rounds in the order given, their weights used by the corrected estimates."""

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
        for name, field in cls.model_fields.items():
            for forms in (m.forms for m in field.metadata if isinstance(m, Forms)):
                if name in data or field.is_required():
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
