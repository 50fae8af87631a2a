"""How a command runs its judge: the mitigations wrapping it, how many judgments at once, the cache, progress,
resuming, and the dry run that sends nothing."""

from dataclasses import dataclass
from typing import Annotated

from mitigate.cli.options._declare import CommandOptions, option
from mitigate.constraints import Interval

PIPELINE = option(
    "pipeline",
    "--pipeline",
    help="mitigations wrapping the judge: pipeline text such as "
    "\"name(k=v) | name2\", or @file.json (a spec file such as 'mitigate search --out' writes)",
)
CONCURRENCY = option("concurrency", help="judgments in flight at once", accepts=(Interval(int, 1, None),))
CACHE = option("cache", help="cache LM calls on disk")
PROGRESS = option("progress", help="show progress bars")
RUN_DIR = option("run_dir", help="folder for the journal and results (resumable)")
RESTART = option("restart", help="discard an existing journal in --run-dir")
STOP_AFTER = option(
    "stop_after",
    help="stop the run after this many failures in a row that would repeat for every "
    "item (refused key or model, unreachable server ...); 0 never stops",
    accepts=(Interval(int, 0, None),),
)
ENGINE = option(
    "engine",
    help="where the judgments run: 'process' (this process) or 'ray' (Ray Data actors on a local cluster, or "
    "the one at --ray-address; needs the ray extra)",
)
RAY_ADDRESS = option("ray_address", help="the Ray cluster --engine ray joins (default: start a local one)")
WORKERS = option(
    "workers",
    help="with --engine ray: actors judging at once (each with --concurrency judgments in flight)",
    accepts=(Interval(int, 1, None),),
)
DRY_RUN = option(
    "dry_run",
    "--dry-run",
    help="print the exact requests (messages, constraint, temperature, n, logprobs, diff against the "
    "unmitigated prompt) for the first item of each entry, and make no LM call",
)

Cache = Annotated[bool, CACHE]
Progress = Annotated[bool, PROGRESS]
DryRun = Annotated[bool, DRY_RUN]


@dataclass(frozen=True)
class RunOptions(CommandOptions):
    """Judgments in flight at once, the on-disk cache of LM calls, and progress bars."""

    concurrency: Annotated[int, CONCURRENCY] = 4
    cache: Cache = True
    progress: Progress = True

    @property
    def lm_cache(self) -> bool:
        """Whether the judge LM caches its calls on disk: ``--cache``."""
        return self.cache
