"""``mitigate label``: the blind labelling page, its labels file, and the labels out to and back from
Label Studio and Argilla."""

from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any, ClassVar, Literal

import typer

from mitigate.cli._app import command
from mitigate.cli.options._declare import CommandOptions, Override, option
from mitigate.cli.options._results import OUT, PLAN, Seed
from mitigate.cli.options._task import BENCHMARK, CRITERION, DEFAULT_BENCHMARK, JUDGE, RECORDED, RELEASED
from mitigate.constraints import Interval
from mitigate.errors import ConfigError

SELECTION = option(
    "selection",
    "--selection",
    help="label the items an 'estimate --select' run chose (its --select-out file), in its order, with "
    "its weights",
)
PER_SYSTEM = option(
    "per_system",
    "--per-system",
    help="label a seeded random draw (--seed) of N unlabelled items per system (per system pair), shown "
    "in a random order; each label weighted by the system's unlabelled items / N",
    accepts=(Interval(int, 1, None),),
)
UNBLIND = option(
    "unblind",
    "--unblind",
    help="not blind: show each item's id, systems and judge value, and the agreement view while labelling",
)
LABELLER = option("labeller", help="the name recorded with each label (the page can change it)")
PORT = option(
    "port", help="the loopback port to serve on (0: a free one)", accepts=(Interval(int, 0, 65535),)
)
EXPORT = option(
    "export",
    help="write the labels file as jsonl (the benchmark format, labels added), csv, label-studio (tasks and "
    "a labelling config) or argilla (records) to --to, and exit",
)
TO = option("to", "--to", help="with --export: the file to write")
IMPORT = option(
    "import_",
    "--import",
    help="add the labels of a Label Studio JSON export or Argilla records (exported with --export) to the "
    "labels file, and exit",
)


@dataclass(frozen=True)
class LabelOptions(CommandOptions):
    """``mitigate label``: a blind labelling page on the loopback interface, writing a labels file."""

    COMMAND: ClassVar[str] = "label"
    HELP_FIRST: ClassVar[dict[str, tuple[str, ...]]] = {
        "What to label": ("benchmark", "criterion", "selection", "per_system", "seed", "out"),
        "The page": ("labeller", "unblind", "port", "recorded", "released", "plan"),
        "Other tools": ("export", "to", "import_"),
    }

    out: Annotated[
        Path,
        OUT,
        Override(
            help="the labels file (JSON lines; created from --selection or --per-system, resumed when it "
            "exists); 'mitigate estimate --labels' reads it"
        ),
    ] = Path("labels.jsonl")
    benchmark: Annotated[str, BENCHMARK] = DEFAULT_BENCHMARK
    criterion: Annotated[
        list[str] | None,
        CRITERION,
        Override(help="criterion to label; repeat for several (default: the first)"),
    ] = None
    selection: Annotated[Path | None, SELECTION] = None
    per_system: Annotated[int | None, PER_SYSTEM] = None
    seed: Annotated[Seed, Override(help="seed of the --per-system draw and of a pair's shown order")] = 0
    labeller: Annotated[str | None, LABELLER] = None
    unblind: Annotated[bool, UNBLIND] = False
    port: Annotated[int, PORT] = 0
    recorded: Annotated[
        Path | None, RECORDED, Override(help="the judge's recorded judgments, for the agreement view")
    ] = None
    judge: Annotated[str | None, JUDGE, Override(help="with --recorded: which judge of the file")] = None
    released: Annotated[str | None, RELEASED, Override(help="a released judge, for the agreement view")] = (
        None
    )
    plan: Annotated[
        float | None,
        PLAN,
        Override(help="the agreement view also says how many more labels each system needs for ±HALF_WIDTH"),
    ] = None
    export: Annotated[Literal["jsonl", "csv", "label-studio", "argilla"] | None, EXPORT] = None
    to: Annotated[Path | None, TO] = None
    import_: Annotated[Path | None, IMPORT] = None

    def check(self) -> None:
        """One way of choosing items; a destination with --export; one judge; not --export with --import."""
        if self.selection is not None and self.per_system is not None:
            raise ConfigError("expected one of --selection FILE and --per-system N; got both")
        if (self.export is None) != (self.to is None):
            raise ConfigError("expected --export FORMAT and --to FILE together; got one of them")
        if self.export is not None and self.import_ is not None:
            raise ConfigError("expected one of --export and --import at a time; got both")
        if self.recorded is not None and self.released is not None:
            raise ConfigError("expected one judge: --recorded FILE or --released NAME; got both")


def _plan(o: LabelOptions, bench: Any, criteria: list[str]) -> list[dict[str, Any]] | None:
    from mitigate.label import draw_per_system, read_selection

    if o.selection is not None:
        return read_selection(o.selection)
    return draw_per_system(bench, criteria, o.per_system, o.seed) if o.per_system is not None else None


@command("label", LabelOptions)
def label_cmd(options: LabelOptions) -> None:
    """Serve a blind labelling page on 127.0.0.1 and write each label to the labels file as it is given.

    Items come from an 'estimate --select' file (--selection) or a seeded draw per system (--per-system), in
    the order chosen, with the weights that keep 'mitigate estimate --labels FILE' unbiased. Keys: digits
    (or a, b, t for a pair) label, s skips, ← goes back, u undoes. A killed server loses nothing: run the same
    command again to resume. --export and --import trade the labels with Label Studio and Argilla.
    """
    import os

    from mitigate.cli._build import load_benchmark, replayed_run
    from mitigate.label import LabelServer, LabelSession, export_labels, import_labels, one_server

    names = options.criterion or []
    bench, first = load_benchmark(options.benchmark, names[0] if names else None)
    unknown = [c for c in names[1:] if c not in bench.criteria]
    if unknown:
        raise ConfigError(f"expected a criterion of {bench.name} {list(bench.criteria)}; got {unknown[0]!r}")
    criteria = list(dict.fromkeys([first, *names[1:]]))
    with one_server(options.out):
        session = LabelSession.open(
            options.out, bench, criteria, _plan(options, bench, criteria), seed=options.seed
        )
        if options.export is not None and options.to is not None:
            written = export_labels(session, options.export, options.to)
            typer.echo("wrote " + ", ".join(map(str, written)), err=True)
            return
        if options.import_ is not None:
            text = options.import_.read_text(encoding="utf-8") if options.import_.is_file() else ""
            fmt = "label-studio" if '"data"' in text and '"fields"' not in text else "argilla"
            count = import_labels(session, options.import_, fmt)  # type: ignore[arg-type]
            progress = session.progress(blind=False)
            typer.echo(
                f"added labels to {count} items from {options.import_} ({fmt}); {progress['done']} of "
                f"{progress['total']} labelled in {options.out}",
                err=True,
            )
            return
        labeller = options.labeller or os.environ.get("USER", "")
        server = LabelServer(
            session,
            blind=not options.unblind,
            judge=replayed_run(options.recorded, options.judge, options.released),
            labeller=labeller,
            port=options.port,
            plan=options.plan,
        )
        progress = session.progress(blind=True)
        typer.echo(
            f"labelling {progress['total']} items ({progress['left']} left) into {options.out}; open\n"
            f"  {server.url}\n(Ctrl-C stops; run the same command again to resume)",
            err=True,
        )
        try:
            server.serve_forever()
        except KeyboardInterrupt:
            typer.echo(f"stopped; {session.progress(blind=True)['done']} labelled in {options.out}", err=True)
