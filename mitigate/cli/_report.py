"""``mitigate report``: re-render a comparison's report.md, plots and (``--html``) report.html."""

from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, ClassVar

import typer

from mitigate.cli._app import command
from mitigate.cli._files import read_text_file, writable_dir
from mitigate.cli.options._declare import CommandOptions, argument, option
from mitigate.errors import ConfigError
from mitigate.report import render_report


@dataclass(frozen=True)
class ReportOptions(CommandOptions):
    """``mitigate report``: re-render a comparison's report from its results.json."""

    COMMAND: ClassVar[str] = "report"

    folder: Annotated[Path, argument("folder", help="a folder written by 'mitigate compare'")]
    html: Annotated[
        bool,
        option("html", "--html", help="also rebuild report.html (self-contained, with the per-item view)"),
    ] = False


@command("report", ReportOptions)
def report_cmd(options: ReportOptions) -> None:
    """Re-render report.md and the plots of a comparison from its results.json (--html: report.html too)."""
    folder = options.folder
    if not folder.is_dir():
        raise ConfigError(
            f"expected a folder written by 'mitigate compare'; {folder} "
            f"{'is a file' if folder.exists() else 'does not exist'}",
            path=str(folder),
        )
    results = folder / "results.json"
    if results.is_file():
        read_text_file(results, "the results.json of the folder")
    writable_dir(folder, "the report folder")
    paths = render_report(folder, html=options.html)
    typer.echo("wrote " + ", ".join(str(p) for p in paths), err=True)
