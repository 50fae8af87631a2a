"""Compare judges on a benchmark: accuracy against humans and measured bias, side by side, as stages.

A comparison is a :class:`CompareConfig` (the benchmark, the criterion, the entries and every
option) run through five stages, each a function with a typed input and output:

    plan(config) -> ComparePlan        the train split, the items to judge, every check; no LM call
    await fit(plan) -> FittedPlan      entries that learn from data fitted on the training items
    await judge(fitted) -> Judged      every entry over the items (one preflight each), LS, probes
    measure(judged) -> CompareResult   measures, the difference from the first, corrected estimates
    report(result, out) -> [paths]     results.json, report.md, report.html and the plots

:func:`compare` runs them (``await compare(config)``, or the keyword form ``await
compare(benchmark, criterion, entries, out_dir=...)``); :func:`check_compare` is the plan
stage alone and returns the plan, which ``compare(plan)`` runs without planning again.

Each named judge is an :class:`Entry`: a prompt judge wrapped by a mitigation pipeline, a
:class:`~mitigate.replay._recorded.RecordedJudge` replaying judgments a user already has,
or a :class:`~mitigate.replay._released.ReleasedJudge` replaying a real judge's released
answers. Each runs over the same items with its own resumable journal
(``<out_dir>/journals/<name>.jsonl``); then every registered reported measure is computed
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
  LS comes from :class:`~mitigate.judge._likelihood.LikelihoodScorer` (the embedded model by
  default) and is cached per item in ``<out_dir>/likelihood.jsonl``, so it is computed once;
- consistency under guideline perturbation (Ghazarian et al. 2024), when judgments carry
  per-perturbation scores in ``meta["perturbations"]``.

Against the first entry, every other entry gets the difference of item-level Spearman
(entry minus first) with a paired bootstrap interval and a paired permutation p-value
(:mod:`mitigate.measures._paired`).

On a pairwise benchmark (every item holds ``output`` and ``output_b`` and a gold preference)
the judges answer verdicts and the pairwise measures are reported instead (``task="pairwise"``,
:mod:`mitigate.measures._pairwise`): accuracy against gold, position consistency, preference
fairness and repetition stability (Shi et al. 2024), the lean towards the longer text and the
gain of position swap; the comparison against the first entry is then the difference in
accuracy (paired bootstrap interval, paired sign-flip permutation p-value).

On a partly labelled benchmark (some judged items without a human label on the criterion),
the measures that read labels are computed on the labelled items only, and each entry gets its
bias-corrected estimate per system (PPI++ by default) beside the judge's raw mean
(:mod:`mitigate.harness._measuring`).

The ``meta["perturbations"]`` contract: a strategy that scores each item under several
perturbed guidelines puts ``{"<perturbation name>": score, ...}`` (score ``None`` for a
parse failure) into the judgment's ``meta["perturbations"]``; consistency is the share of
items whose score is identical under every perturbation.

A measure that cannot be computed (too few items, no system labels, no likelihood ...) is
NaN with ``reason`` saying why, never 0.
"""

from __future__ import annotations

import inspect
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from mitigate.data import Benchmark
from mitigate.errors import ConfigError
from mitigate.harness._config import CompareConfig
from mitigate.harness._entry import Entry
from mitigate.harness._fit import fit
from mitigate.harness._judging import judge
from mitigate.harness._measuring import measure
from mitigate.harness._planning import ComparePlan, plan
from mitigate.judge import Judge
from mitigate.lm import LM
from mitigate.probes import Probe
from mitigate.report import CompareResult, write_report
from mitigate.run import BatchConfig, BatchSession


def report(result: CompareResult, out: str | Path) -> list[Path]:
    """The report stage: ``results.json``, ``report.md``, ``report.html`` and the plots in ``out``; the paths
    written.

    (:func:`mitigate.report._markdown.write_report`; ``mitigate report`` re-renders them from results.json.)
    """
    return write_report(result, out)


async def _run(planned: ComparePlan) -> CompareResult:
    """Fit, judge, measure and (when the config says so) report a plan."""
    out = planned.out  # a plan made without out_dir is refused before anything runs
    result = measure(await judge(await fit(planned)))
    if planned.config.report:
        report(result, out)
    return result


def _given(fn: Any, values: Mapping[str, Any]) -> list[str]:
    """The keyword options of ``fn`` whose values differ from their defaults."""
    params = inspect.signature(fn).parameters
    return [
        k
        for k, v in values.items()
        if k in params
        and params[k].default is not inspect.Parameter.empty
        and not (v is params[k].default or (type(v) is type(params[k].default) and v == params[k].default))
    ]


async def compare(
    benchmark: str | Benchmark | CompareConfig | ComparePlan,
    criterion: str | None = None,
    entries: Sequence[Entry] | Mapping[str, Judge] | None = None,
    *,
    out_dir: str | Path | None = None,
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
    batch: BatchConfig | BatchSession | bool | None = None,
    train: float | str | Benchmark | None = None,
    report: bool = True,
    probes: Sequence[Probe] | None = None,
    rewriter: LM | None = None,
    probe_tolerance: float = 0.0,
    estimate: str | None = "ppi",
    labels: Sequence[str | Path] | str | Path | None = None,
) -> CompareResult:
    """Run every entry over the benchmark's items and measure accuracy and bias (see the module docstring).

    Three call forms: ``await compare(config)`` with a :class:`CompareConfig`; ``await
    compare(plan)`` with the :class:`ComparePlan` :func:`check_compare` returned (it is not
    planned again); and the keyword form, whose arguments are the fields of
    :class:`CompareConfig` (which documents each):

    - ``benchmark``: a name for :func:`mitigate.data._registry.load` or a loaded Benchmark.
    - ``entries``: :class:`Entry` objects (or a mapping name -> judge); the first is the
      reference the others are compared against.
    - ``out_dir``: journals go to ``out_dir/journals/<name>.jsonl`` (a killed compare
      resumes from them; ``restart=True`` discards them) and LS to ``out_dir/likelihood.jsonl``.
    - ``limit``: judge only the first ``limit`` items in document-major order (see :func:`select_items`).
    - ``likelihood``: True for LS with the embedded model (``LikelihoodScorer()``), or a
      :class:`~mitigate.judge._likelihood.LikelihoodScorer` to use; ``likelihood_task`` is the
      generation task in its context (default: by benchmark family, :data:`GENERATION_TASKS`).
    - ``n_boot`` bootstrap resamples per interval (0: no intervals), ``n_perm`` permutations.
    - ``batch``: True, :class:`~mitigate.run._batch_session.BatchConfig` or a
      :class:`~mitigate.run._batch_session.BatchSession` to send the LM calls through the providers'
      batch APIs; the entries then run at once through one session (record in
      ``out_dir/batches``), so their requests share batches.
    - ``train``: fit on train, compare on test. A fraction (e.g. 0.5) splits the benchmark by
      document with ``seed`` (:func:`~mitigate.data._split.train_test_split`), or a benchmark (name or loaded)
      that
      shares no item or document with the judged one is the training set. Every entry whose
      pipeline must learn from data (random, stratified, highest-RS or perturbed demos) is
      fitted on its labelled items with ``Pipeline.afit`` before judging the test items;
      entries already fitted (a searched spec) are used as given. ``settings["train"]`` and
      each entry's ``fitted`` say which items that was; ``limit`` applies to the test items.
      Without ``train``, an entry that must be fitted is a ConfigError.
    - ``probes``: bias probes (:mod:`mitigate.probes`) run over every pipeline entry after its
      judgments (:func:`mitigate.probes._battery.run_probes`; its judgments are reused as the
      originals); each entry's ``probes`` holds the report, and its rewrites go to
      ``out_dir/probes/<name>.jsonl``. ``rewriter`` writes LM-assisted probes' rewrites;
      ``probe_tolerance``: score changes up to this size count as unchanged (0: CALM's definition;
      continuous scores, e.g. probability-weighted, need one).
    - ``estimate``: on a partly labelled benchmark, the method of each entry's corrected estimate per
      system (``ppi``, ``calibrated``, ``human``, ``judge``; None: none).
    - ``labels``: labels files (``id``, ``label`` and optionally ``weight``:
      :func:`mitigate.data._labels.read_labels`)
      whose labels are added to the benchmark's before anything is split or chosen; a partly labelled
      benchmark then
      gets the corrected estimates, a filled selection file's weights with them.
    - ``report``: write the reports into ``out_dir`` (default): ``results.json``, ``report.md``,
      ``report.html`` (self-contained, with the per-item view) and the plots, as
      :func:`mitigate.report._markdown.write_report` does; False writes only journals, the LS
      cache and, with ``train``, the training items (``out_dir/train.jsonl``, generic format,
      for ``mitigate search -b jsonl:...``).
    """
    options = {
        "out_dir": out_dir,
        "concurrency": concurrency,
        "limit": limit,
        "likelihood": likelihood,
        "likelihood_task": likelihood_task,
        "progress": progress,
        "n_boot": n_boot,
        "n_perm": n_perm,
        "seed": seed,
        "restart": restart,
        "command": command,
        "batch": batch,
        "train": train,
        "report": report,
        "probes": probes,
        "rewriter": rewriter,
        "probe_tolerance": probe_tolerance,
        "estimate": estimate,
        "labels": labels,
    }
    if isinstance(benchmark, CompareConfig | ComparePlan):
        extra = [k for k, v in (("criterion", criterion), ("entries", entries)) if v is not None]
        extra += _given(compare, options)
        if extra:
            raise ConfigError(
                f"compare({type(benchmark).__name__}) takes every option from it; got "
                f"{', '.join(extra)} beside it (set them in the CompareConfig)"
            )
        return await _run(benchmark if isinstance(benchmark, ComparePlan) else plan(benchmark))
    if out_dir is None:
        raise ConfigError("expected out_dir (the folder for journals and reports); got none")
    config = CompareConfig.model_validate(
        {"benchmark": benchmark, "criterion": criterion, "entries": entries, **options}
    )
    return await _run(plan(config))


def check_compare(
    benchmark: str | Benchmark | CompareConfig,
    criterion: str | None = None,
    entries: Sequence[Entry] | Mapping[str, Judge] | None = None,
    *,
    limit: int | None = None,
    seed: int = 0,
    train: float | str | Benchmark | None = None,
) -> ComparePlan:
    """The plan stage alone: raise what :func:`compare` would refuse, with no LM call and nothing written.

    Returns the :class:`ComparePlan`; ``compare(plan)`` runs it without planning again. Given a
    :class:`CompareConfig` (with its ``out_dir`` and run options) the plan is ready to run; the
    keyword form plans with the default run options (set them with :meth:`ComparePlan.with_options`).
    The CLI calls it before it prints anything, so a bad ``--train``, an entry that needs a
    train split, or a recorded file that misses items is one error line.
    """
    if isinstance(benchmark, CompareConfig):
        extra = [k for k, v in (("criterion", criterion), ("entries", entries)) if v is not None]
        extra += _given(check_compare, {"limit": limit, "seed": seed, "train": train})
        if extra:
            raise ConfigError(
                f"check_compare(CompareConfig) takes every option from it; got {', '.join(extra)} beside it"
            )
        return plan(benchmark)
    config = CompareConfig.model_validate(
        {
            "benchmark": benchmark,
            "criterion": criterion,
            "entries": entries,
            "limit": limit,
            "seed": seed,
            "train": train,
        }
    )
    return plan(config)
