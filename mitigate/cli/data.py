"""``mitigate data``: download the built-in benchmarks (pinned by SHA-256), list what is present, convert judge logs.

``data fetch`` exits 0 when every file is in place and verified, 1 when a download failed (the
error line names the URL to fetch by hand and where to save it), 2 when the command line was
refused. ``data convert`` turns an inspect-ai eval log or a promptfoo results file into recorded
judgments for ``mitigate compare --recorded``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from mitigate.cli.app import app
from mitigate.cli.errors import EXIT_FAILED, say_error
from mitigate.errors import ConfigError

data_app = typer.Typer(no_args_is_help=True, help="Download the built-in benchmarks (pinned by SHA-256), see "
                       "which are present, and convert harness judge logs into recorded judgments.")
app.add_typer(data_app, name="data")

_DATA_DIR_HELP = "data folder (default: $MITIGATE_DATA_DIR, else the folder mitigate reads, else ~/.local/share/mitigate/data)"


@data_app.command("list")
def data_list(
    name: Annotated[str | None, typer.Argument(help="only this benchmark (e.g. summeval, uss-sgd)")] = None,
    urls: Annotated[bool, typer.Option("--urls", help="print URL and destination of every missing or corrupt file")] = False,
    data_dir: Annotated[Path | None, typer.Option("--dir", help=_DATA_DIR_HELP)] = None,
    base_url: Annotated[str | None, typer.Option(help="fetch from this base URL instead of GitHub's raw host "
                                                 "(also $MITIGATE_DATA_URL)")] = None,
) -> None:
    """Say, per built-in benchmark, whether its files are present (SHA-256 verified), missing or corrupt."""
    from mitigate.data import fetch as fetching

    chosen = [fetching.source_for(name)] if name else list(fetching.sources().values())
    statuses = [fetching.status(s, data_dir, base_url=base_url) for s in chosen]
    typer.echo(f"data folder: {fetching.target_dir(data_dir)}", err=True)
    for st in statuses:
        typer.echo(st.line())
        if urls:
            for f in st.files:
                if f.state != "present":
                    where = f.url or "made from the downloaded files by 'mitigate data fetch'"
                    typer.echo(f"  {f.state}\t{where}\t{f.dest}")


@data_app.command("fetch")
def data_fetch(
    names: Annotated[list[str] | None, typer.Argument(help="benchmarks to download (e.g. summeval tmu-gfm)")] = None,
    all_: Annotated[bool, typer.Option("--all", help="download every built-in benchmark")] = False,
    data_dir: Annotated[Path | None, typer.Option("--dir", help=_DATA_DIR_HELP)] = None,
    base_url: Annotated[str | None, typer.Option(help="fetch from this base URL instead of GitHub's raw host "
                                                 "(also $MITIGATE_DATA_URL)")] = None,
    timeout: Annotated[float, typer.Option(help="seconds to wait for the server before giving up")] = 60.0,
) -> None:
    """Download benchmarks' public releases from their original repositories, each file checked by SHA-256.

    Exit 0 when every file is in place and verified; 1 when a download failed (offline: the error
    line names the URL to fetch by hand and where to save it; or a file failed its check and was
    deleted); 2 when the command line was refused (unknown name).
    """
    from mitigate.data import fetch as fetching

    if all_ == bool(names):
        raise ConfigError("expected benchmark names or --all (one of them); got "
                          + ("both" if all_ else "neither"))
    chosen = list(fetching.sources().values()) if all_ else [fetching.source_for(n) for n in names or []]
    folder = fetching.target_dir(data_dir)
    for source in dict.fromkeys(chosen):
        typer.echo(f"{source.name}: {source.repo}@{source.commit[:12]} -> {folder / source.name}", err=True)
        try:
            st = fetching.fetch(source, folder, base_url=base_url, timeout=timeout,
                                on_file=lambda path: typer.echo(f"  {path}", err=True))
        except fetching.DownloadError as exc:
            say_error(str(exc))
            raise typer.Exit(code=EXIT_FAILED) from exc
        typer.echo(st.line())


@data_app.command("convert")
def data_convert(
    file: Annotated[Path, typer.Argument(help="an inspect-ai eval log (.eval/.json) or a promptfoo results.json")],
    source: Annotated[str, typer.Option("--from", help="inspect or promptfoo")],
    out: Annotated[Path, typer.Option("--out", "-o", help="the recorded-judgments file to write (.jsonl or .csv)")],
    id_key: Annotated[str | None, typer.Option(help="inspect: the sample metadata key holding the item id; "
                                               "promptfoo: the test var holding it")] = None,
    criterion: Annotated[str | None, typer.Option(help="the criterion the judgments are on")] = None,
    judge: Annotated[str | None, typer.Option(help="inspect: a name for the judge (one scorer)")] = None,
) -> None:
    """Turn a harness's judge log into recorded judgments for 'mitigate compare --recorded'."""
    from mitigate.data.recorded import save_recorded

    if source == "inspect":
        from mitigate.adapters.inspect_ai import read_inspect_log

        runs = read_inspect_log(file, criterion=criterion, judge=judge, id_key=id_key)
    elif source == "promptfoo":
        from mitigate.adapters.promptfoo import read_promptfoo_results

        if judge is not None:
            raise ConfigError("expected --judge only with --from inspect; promptfoo judges are named by assertion")
        runs = read_promptfoo_results(file, id_var=id_key, criterion=criterion)
    else:
        raise ConfigError(f"expected --from inspect or promptfoo; got {source!r}")
    for run in runs.values():
        typer.echo(run.summary(), err=True)
    typer.echo(f"wrote {save_recorded(list(runs.values()), out)}", err=True)
