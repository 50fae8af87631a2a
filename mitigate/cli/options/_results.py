"""What a command measures and where it writes it: ``--out``, ``--json``, ``--plot``, the bootstrap and seed,
the pass threshold, the bias probes it adds, and the likelihood model behind BiasScore."""

from dataclasses import dataclass
from typing import Annotated

from mitigate.cli.options._declare import CommandOptions, option
from mitigate.constraints import Interval
from mitigate.errors import ConfigError

OUT = option(
    "out",
    "--out",
    "-o",
    help="also write one row per item (scores, verdicts, failures with raw text, flags, "
    "usage) to this file: JSON lines, or CSV when it ends in .csv",
)
N_BOOT = option(
    "n_boot", help="bootstrap resamples per interval (0: none)", accepts=(Interval(int, 0, None),)
)
SEED = option("seed", help="seed of the bootstrap and permutation tests")
THRESHOLD = option(
    "threshold",
    help="pass threshold: a score at or above it passes; reports the pass rate over the "
    "samples per item and overall, and the items whose samples straddle it",
)
REQUIRE_PASS_RATE = option(
    "require_pass_rate",
    "--require-pass-rate",
    help="with --threshold: the pass rate required; the gate passes only when the 95% interval's lower "
    "end reaches it (judge exits 1 otherwise)",
    accepts=(Interval(float, 0.0, 1.0, closed="right"),),
)
PROBES = option(
    "probes",
    "--probes",
    help="also run the bias battery over every pipeline entry: 'all' or probe names "
    "such as authority,bandwagon (see 'mitigate probe'); adds a 'Bias probes' table per entry",
)
REWRITER = option("rewriter", help="LM spec writing the LM-assisted probes' rewrites")
PROBE_TOLERANCE = option(
    "probe_tolerance",
    "--probe-tolerance",
    help="with --probes: score changes up to this size count as unchanged (0: CALM's robustness rate; set "
    "it for continuous scores such as --scoring expected)",
    accepts=(Interval(float, 0.0, None),),
)
JSON = option("json", "--json", help="print JSON instead of text")
PLAN = option(
    "plan",
    "--plan",
    help="also say how many labels each group needs for intervals of ±HALF_WIDTH, per method",
    accepts=(Interval(float, 0.0, None, closed="neither"),),
)
PLOT = option("plot", help="also write a PNG of the search beside --out")
LIKELIHOOD = option("likelihood", help="compute LS with the embedded model and report BiasScore")

Seed = Annotated[int, SEED]
Rewriter = Annotated[str | None, REWRITER]


@dataclass(frozen=True)
class StatsOptions(CommandOptions):
    """The bootstrap resamples of every interval, and the seed of the resamples and tests."""

    n_boot: Annotated[int, N_BOOT] = 1000
    seed: Seed = 0


@dataclass(frozen=True)
class ThresholdOptions(CommandOptions):
    """The pass threshold and the pass rate a gate requires (``--threshold``, ``--require-pass-rate``)."""

    threshold: Annotated[float | None, THRESHOLD] = None
    require_pass_rate: Annotated[float | None, REQUIRE_PASS_RATE] = None

    def check_group(self) -> None:
        """A finite threshold; a required pass rate only with a threshold."""
        if self.threshold is not None and self.threshold != self.threshold:
            raise ConfigError(f"expected --threshold as a number; got {self.threshold}")
        if self.require_pass_rate is not None and self.threshold is None:
            raise ConfigError(
                f"--require-pass-rate applies with --threshold; got --require-pass-rate "
                f"{self.require_pass_rate:g} without --threshold"
            )


@dataclass(frozen=True)
class ProbeBattery(CommandOptions):
    """The bias probes a command adds to its judges (``--probes``), their rewriter and tolerance."""

    probes: Annotated[str | None, PROBES] = None
    rewriter: Rewriter = None
    probe_tolerance: Annotated[float, PROBE_TOLERANCE] = 0.0

    def check_group(self) -> None:
        """``--rewriter`` and ``--probe-tolerance`` apply with ``--probes`` only."""
        for flag, value in (
            ("--rewriter", self.rewriter),
            ("--probe-tolerance", self.probe_tolerance or None),
        ):
            if value is not None and self.probes is None:
                raise ConfigError(f"{flag} applies with --probes; got {flag} {value!r} without --probes")
