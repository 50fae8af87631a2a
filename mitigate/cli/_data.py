"""``mitigate data``: download the built-in benchmarks (pinned by SHA-256), list what is present, and convert
harness judge logs (inspect-ai, promptfoo) into recorded judgments."""

from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, ClassVar

import typer

from mitigate.cli._app import command, command_group
from mitigate.cli._errors import EXIT_FAILED, say_error
from mitigate.cli.options._backend import BASE_URL, TIMEOUT
from mitigate.cli.options._declare import CommandOptions, Override, argument, option
from mitigate.cli.options._results import OUT
from mitigate.cli.options._task import CRITERION, JUDGE
from mitigate.errors import ConfigError

data_app = command_group(
    "data",
    help="Download the built-in benchmarks (pinned by SHA-256), see which are present, "
    "and convert harness judge logs into recorded judgments.",
)

DATA_DIR = option(
    "data_dir",
    "--dir",
    help="data folder (default: $MITIGATE_DATA_DIR, else the folder mitigate reads, "
    "else ~/.local/share/mitigate/data)",
)
URLS = option("urls", "--urls", help="print URL and destination of every missing or corrupt file")
ALL = option("all_", "--all", help="download every built-in benchmark")
SOURCE = option("source", "--from", help="inspect or promptfoo")
ID_KEY = option(
    "id_key", help="inspect: the sample metadata key holding the item id; promptfoo: the test var holding it"
)

DataDir = Annotated[Path | None, DATA_DIR]
DataUrl = Annotated[
    str | None,
    BASE_URL,
    Override(help="fetch from this base URL instead of GitHub's raw host (also $MITIGATE_DATA_URL)"),
]


@dataclass(frozen=True)
class DataListOptions(CommandOptions):
    """``mitigate data list``: which built-in benchmarks are present."""

    COMMAND: ClassVar[str] = "data list"

    name: Annotated[str | None, argument("name", help="only this benchmark (e.g. summeval, uss-sgd)")] = None
    urls: Annotated[bool, URLS] = False
    data_dir: DataDir = None
    base_url: DataUrl = None


@dataclass(frozen=True)
class DataFetchOptions(CommandOptions):
    """``mitigate data fetch``: download benchmarks, each file checked by SHA-256."""

    COMMAND: ClassVar[str] = "data fetch"

    names: Annotated[
        list[str] | None, argument("names", help="benchmarks to download (e.g. summeval tmu-gfm)")
    ] = None
    all_: Annotated[bool, ALL] = False
    data_dir: DataDir = None
    base_url: DataUrl = None
    timeout: Annotated[float, TIMEOUT, Override(help="seconds to wait for the server before giving up")] = (
        60.0
    )


@dataclass(frozen=True)
class DataConvertOptions(CommandOptions):
    """``mitigate data convert``: a harness's judge log as recorded judgments."""

    COMMAND: ClassVar[str] = "data convert"

    file: Annotated[
        Path, argument("file", help="an inspect-ai eval log (.eval/.json) or a promptfoo results.json")
    ]
    source: Annotated[str, SOURCE]
    out: Annotated[Path, OUT, Override(help="the recorded-judgments file to write (.jsonl or .csv)")]
    id_key: Annotated[str | None, ID_KEY] = None
    criterion: Annotated[
        str | None, CRITERION, Override(flags=("--criterion",), help="the criterion the judgments are on")
    ] = None
    judge: Annotated[str | None, JUDGE] = None


@command("list", DataListOptions, config=False, plugins=False, group=data_app)
def data_list(options: DataListOptions) -> None:
    """Say, per built-in benchmark, whether its files are present (SHA-256 verified), missing or corrupt."""
    from mitigate.data import _fetch as fetching  # list and fetch need it, convert does not

    o = options
    chosen = [fetching.source_for(o.name)] if o.name else list(fetching.sources().values())
    statuses = [fetching.status(s, o.data_dir, base_url=o.base_url) for s in chosen]
    typer.echo(f"data folder: {fetching.target_dir(o.data_dir)}", err=True)
    for st in statuses:
        typer.echo(st.line())
        if o.urls:
            for f in st.files:
                if f.state != "present":
                    where = f.url or "made from the downloaded files by 'mitigate data fetch'"
                    typer.echo(f"  {f.state}\t{where}\t{f.dest}")


@command("fetch", DataFetchOptions, config=False, plugins=False, group=data_app)
def data_fetch(options: DataFetchOptions) -> None:
    """Download benchmarks' public releases from their original repositories, each file checked by SHA-256.

    Exit 0 when every file is in place and verified; 1 when a download failed (offline: the error
    line names the URL to fetch by hand and where to save it; or a file failed its check and was
    deleted); 2 when the command line was refused (unknown name).
    """
    from mitigate.data import _fetch as fetching

    o = options
    if o.all_ == bool(o.names):
        raise ConfigError(
            "expected benchmark names or --all (one of them); got " + ("both" if o.all_ else "neither")
        )
    chosen = list(fetching.sources().values()) if o.all_ else [fetching.source_for(n) for n in o.names or []]
    folder = fetching.target_dir(o.data_dir)
    for source in dict.fromkeys(chosen):
        typer.echo(f"{source.name}: {source.repo}@{source.commit[:12]} -> {folder / source.name}", err=True)
        try:
            st = fetching.fetch(
                source,
                folder,
                base_url=o.base_url,
                timeout=o.timeout,
                on_file=lambda path: typer.echo(f"  {path}", err=True),
            )
        except fetching.DownloadError as exc:
            say_error(str(exc))
            raise typer.Exit(code=EXIT_FAILED) from exc
        typer.echo(st.line())


@command("convert", DataConvertOptions, config=False, plugins=False, group=data_app)
def data_convert(options: DataConvertOptions) -> None:
    """Turn a harness's judge log into recorded judgments for 'mitigate compare --recorded'."""
    from mitigate.data import save_recorded

    o = options
    if o.source == "inspect":
        from mitigate.adapters.inspect_ai import read_inspect_log

        runs = read_inspect_log(o.file, criterion=o.criterion, judge=o.judge, id_key=o.id_key)
    elif o.source == "promptfoo":
        from mitigate.adapters.promptfoo import read_promptfoo_results

        if o.judge is not None:
            raise ConfigError(
                "expected --judge only with --from inspect; promptfoo judges are named by assertion"
            )
        runs = read_promptfoo_results(o.file, id_var=o.id_key, criterion=o.criterion)
    else:
        raise ConfigError(f"expected --from inspect or promptfoo; got {o.source!r}")
    for run in runs.values():
        typer.echo(run.summary(), err=True)
    typer.echo(f"wrote {save_recorded(list(runs.values()), o.out)}", err=True)
