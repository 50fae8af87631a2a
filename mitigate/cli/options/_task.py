"""What a command works on: the benchmark, the criterion, the items, the training data, and the judges it
replays."""

from dataclasses import dataclass
from typing import Annotated

from mitigate.cli.options._declare import CommandOptions, option, registered_names
from mitigate.constraints import Interval

DEFAULT_BENCHMARK = "summeval"
"""The benchmark of every command that takes one unless told otherwise."""

BENCHMARK = option(
    "benchmark",
    "--benchmark",
    "-b",
    help=f"benchmark name: {registered_names('benchmark')} (a <path> form reads a file or a release on disk)",
)
CRITERION = option(
    "criterion", "--criterion", "-c", help="criterion to score (default: the benchmark's first)"
)
LIMIT = option(
    "limit",
    "--limit",
    "-n",
    help="judge only the first N items, document by document (0 = all)",
    accepts=(Interval(int, 0, None),),
)
TRAIN = option(
    "train",
    "--train",
    help="fit on train, compare on test: a fraction such as 0.5 (the benchmark split by document with "
    "--seed) or a training benchmark sharing no document with -b; every pipeline that learns from data "
    "(random, stratified, highest-RS, perturbed demos) is fitted on it first",
)
RECORDED = option(
    "recorded",
    "--recorded",
    help="a recorded-judgments file (JSON lines or .csv, see "
    "docs/recorded_format.md): every judge in it that answered the criterion becomes an entry, "
    "replayed with no LM call; repeat for several; listed after the pipelines",
)
RELEASED = option(
    "released",
    "--released",
    help="a released judge to replay, e.g. chatgpt-rts, gpt4-rts (summeval), chatgpt-h2h (summeval-h2h), "
    "or every judge of a release on disk: llmbar:<path>, judgebench:<path> (with -b llmbar:<path> / "
    "judgebench:<path>; '#GPT-4/*' after the path picks judges); repeat for several; listed last",
)
JUDGE = option("judge", help="inspect: a name for the judge (one scorer)")
LABELS = option(
    "labels",
    "--labels",
    help="a labels file (CSV or JSON lines with id,label[,weight]; a filled --select "
    "file is one) whose labels are added to the benchmark's; repeat for several (filled --select "
    "files in the order they were selected)",
)

Benchmark = Annotated[str, BENCHMARK]
Criterion = Annotated[str | None, CRITERION]
Limit = Annotated[int, LIMIT]


@dataclass(frozen=True)
class TaskOptions(CommandOptions):
    """The benchmark, its criterion, and how many of its items (document by document)."""

    benchmark: Benchmark = DEFAULT_BENCHMARK
    criterion: Criterion = None
    limit: Limit = 0
